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
)

// BundleTiming is one bundle the controller opened and the switch
// committed, timed where the tap saw it: Open and CommitRequest when the
// controller's messages reached the tap, CommitReply when the switch's
// answer did.
type BundleTiming struct {
	Adds                             int // OFPT_BUNDLE_ADD_MESSAGEs
	Open, CommitRequest, CommitReply time.Time
	// CPU is the CPU time the switch daemon used from the open request to
	// the commit reply (all its threads; 0 without a CPU source).
	CPU  time.Duration
	cpu0 time.Duration
}

// Total is the bundle's whole time: open request to commit reply (the
// switch parsing and staging every message, then committing).
func (b BundleTiming) Total() time.Duration { return b.CommitReply.Sub(b.Open) }

// Commit is the commit request to its reply.
func (b BundleTiming) Commit() time.Duration { return b.CommitReply.Sub(b.CommitRequest) }

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
		go t.pipe(c, s, func(typ uint8, body []byte) {
			if len(body) < 8 {
				return
			}
			id := binary.BigEndian.Uint32(body)
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
				if b := open[id]; b != nil {
					b.CommitRequest = time.Now()
				}
			case typ == ofptBundleAddMessage:
				if b := open[id]; b != nil {
					b.Adds++
				}
			}
		})
		go t.pipe(s, c, func(typ uint8, body []byte) {
			if typ != ofptBundleControl || len(body) < 8 || binary.BigEndian.Uint16(body[4:]) != ofpbctCommitReply {
				return
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
		})
	}
}

// pipe copies OpenFlow messages from src to dst, calling see on each
// (type and body) before forwarding it, and flushes whenever src has
// nothing more buffered.
func (t *OpenFlowTap) pipe(src, dst net.Conn, see func(typ uint8, body []byte)) {
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
		see(hdr[1], msg[8:])
		if _, err := w.Write(msg); err != nil {
			return
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
