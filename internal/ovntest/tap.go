package ovntest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// OpenFlow 1.4+ bundle messages as the tap reads them (OpenFlow 1.5.1
// §7.3.9: ofp_bundle_ctrl_msg is bundle_id(4) type(2) flags(2)).
const (
	ofptBundleControl    = 33
	ofptBundleAddMessage = 34
	ofpbctOpenRequest    = 0
	ofpbctCommitRequest  = 4
	ofpbctCommitReply    = 5
	ofptBarrierRequest   = 20
	ofptBarrierReply     = 21
	// tapBarrierXid marks the tap's own barrier requests (ovn-controller
	// numbers its requests from 1 upward).
	tapBarrierXid = 0x7a9b0000
)

// BundleTiming is one bundle the controller opened and the switch
// committed, timed where the tap saw it: Open when the controller's open
// request reached the tap, Staged when the switch answered the barrier
// the tap sends ahead of the commit request (every add is read and
// staged then), CommitRequest when the tap forwarded the commit request,
// CommitReply when the switch's answer reached the tap.
type BundleTiming struct {
	Adds                                     int // OFPT_BUNDLE_ADD_MESSAGEs
	Open, Staged, CommitRequest, CommitReply time.Time
	// CPU is the CPU time the switch daemon used from the open request to
	// the commit reply (all its threads; 0 without a CPU source).
	CPU  time.Duration
	cpu0 time.Duration
}

// Total is the bundle's whole time: open request to commit reply (the
// switch parsing and staging every message, then committing).
func (b BundleTiming) Total() time.Duration { return b.CommitReply.Sub(b.Open) }

// Commit is the commit phase alone: the commit request, sent once the
// switch has staged every add, to its reply (where Open vSwitch inserts
// the flows into its classifier and replaces the old ones).
func (b BundleTiming) Commit() time.Duration { return b.CommitReply.Sub(b.CommitRequest) }

// Staging is the open request until every add was staged.
func (b BundleTiming) Staging() time.Duration { return b.Staged.Sub(b.Open) }

// OpenFlowTap sits between ovn-controller and the switch's br-int.mgmt
// socket, forwards every message unchanged and times the bundles, so the
// same measurement applies to any switch daemon.
type OpenFlowTap struct {
	ln     net.Listener
	target string
	// cpu, if set, returns the switch daemon's CPU time so far.
	cpu func() time.Duration

	mu      sync.Mutex
	conns   []net.Conn
	bundles []BundleTiming
}

// newOpenFlowTap listens on path and forwards to the unix socket target.
func newOpenFlowTap(path, target string) (*OpenFlowTap, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("openflow tap: %w", err)
	}
	t := &OpenFlowTap{ln: ln, target: target}
	go t.accept()
	return t, nil
}

func (t *OpenFlowTap) accept() {
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("unix", t.target)
		if err != nil {
			c.Close()
			continue
		}
		t.mu.Lock()
		t.conns = append(t.conns, c, s)
		t.mu.Unlock()
		open := map[uint32]*BundleTiming{}
		var mu sync.Mutex // open is shared by both directions
		staged := make(chan time.Time, 1)
		var barriers uint32
		go t.pipe(c, s, func(hdr, body []byte, w *bufio.Writer) bool {
			if len(body) < 8 {
				return true
			}
			typ, id := hdr[1], binary.BigEndian.Uint32(body)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case typ == ofptBundleControl && binary.BigEndian.Uint16(body[4:]) == ofpbctOpenRequest:
				b := &BundleTiming{Open: time.Now()}
				if t.cpu != nil {
					b.cpu0 = t.cpu()
				}
				open[id] = b
			case typ == ofptBundleControl && binary.BigEndian.Uint16(body[4:]) == ofpbctCommitRequest:
				b := open[id]
				if b == nil {
					break
				}
				// A barrier first: the switch answers it once it has read
				// and staged every add, so that the commit request is
				// timed alone, not behind adds the switch has yet to read.
				barriers++
				barrier := make([]byte, 8)
				barrier[0], barrier[1] = hdr[0], ofptBarrierRequest
				binary.BigEndian.PutUint16(barrier[2:], 8)
				binary.BigEndian.PutUint32(barrier[4:], tapBarrierXid+barriers)
				if _, err := w.Write(barrier); err != nil || w.Flush() != nil {
					return true
				}
				mu.Unlock() // the replies' direction takes it
				var at time.Time
				select {
				case at = <-staged:
				case <-time.After(30 * time.Second):
				}
				mu.Lock()
				b.Staged, b.CommitRequest = at, time.Now()
			case typ == ofptBundleAddMessage:
				if b := open[id]; b != nil {
					b.Adds++
				}
			}
			return true
		})
		go t.pipe(s, c, func(hdr, body []byte, _ *bufio.Writer) bool {
			typ := hdr[1]
			if typ == ofptBarrierReply && binary.BigEndian.Uint32(hdr[4:])&0xffff0000 == tapBarrierXid {
				select {
				case staged <- time.Now():
				default:
				}
				return false // the tap's own
			}
			if typ != ofptBundleControl || len(body) < 8 || binary.BigEndian.Uint16(body[4:]) != ofpbctCommitReply {
				return true
			}
			now := time.Now()
			id := binary.BigEndian.Uint32(body)
			mu.Lock()
			b := open[id]
			delete(open, id)
			mu.Unlock()
			if b != nil && !b.CommitRequest.IsZero() {
				b.CommitReply = now
				if t.cpu != nil {
					b.CPU = t.cpu() - b.cpu0
				}
				t.mu.Lock()
				t.bundles = append(t.bundles, *b)
				t.mu.Unlock()
			}
			return true
		})
	}
}

// pipe copies OpenFlow messages from src to dst, calling see on each
// (header and body, with dst's writer for messages of the tap's own)
// and forwarding it unless see says no; it flushes whenever src has
// nothing more buffered.
func (t *OpenFlowTap) pipe(src, dst net.Conn, see func(hdr, body []byte, w *bufio.Writer) bool) {
	defer src.Close()
	defer dst.Close()
	r := bufio.NewReaderSize(src, 1<<16)
	w := bufio.NewWriterSize(dst, 1<<16)
	hdr := make([]byte, 8)
	var msg []byte
	for {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(hdr[2:]))
		if n < 8 {
			return
		}
		msg = append(msg[:0], hdr...)
		msg = append(msg, make([]byte, n-8)...)
		if _, err := io.ReadFull(r, msg[8:]); err != nil {
			return
		}
		if see(hdr, msg[8:], w) {
			if _, err := w.Write(msg); err != nil {
				return
			}
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// Bundles returns the bundles committed so far, in order.
func (t *OpenFlowTap) Bundles() []BundleTiming {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]BundleTiming(nil), t.bundles...)
}

// Reconnect drops every proxied connection: ovn-controller reconnects and
// installs its whole flow table again (delete all, every flow, in one
// bundle).
func (t *OpenFlowTap) Reconnect() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.conns {
		c.Close()
	}
	t.conns = nil
}

// Close stops the tap.
func (t *OpenFlowTap) Close() error {
	t.Reconnect()
	err := t.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// processCPU returns the CPU time (on-CPU nanoseconds of
// /proc/PID/task/*/schedstat) the threads of the process in pidfile have
// used so far.
func processCPU(pidfile string) func() time.Duration {
	return func() time.Duration {
		b, err := os.ReadFile(pidfile)
		if err != nil {
			return 0
		}
		tasks, _ := filepath.Glob("/proc/" + strings.TrimSpace(string(b)) + "/task/*/schedstat")
		var sum time.Duration
		for _, f := range tasks {
			st, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			first, _, _ := strings.Cut(string(st), " ")
			ns, _ := strconv.ParseInt(first, 10, 64)
			sum += time.Duration(ns)
		}
		return sum
	}
}

// Median returns the median of ds (0 for none).
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
