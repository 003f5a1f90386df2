package geneve

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/port"
)

// Handing datagrams to the ports of other bridges.
//
// Open vSwitch has one datapath for all its bridges: its tnl_find maps a
// received packet to a tunnel port of whichever bridge, and the packet
// enters that bridge's pipeline. In govs each bridge has its own packet
// loops, so the port that reads a shared socket can only process the
// frames of its own bridge's ports (its RxGroup). A datagram for a port of
// another group is copied, as it came off the socket, into that port's
// inbox, and that port's own loop decapsulates and processes it.

// RxGroup is the set of Geneve ports whose frames one packet loop can
// process: the ports of one bridge. Ports without a group (the zero
// value, nil) form one group.
type RxGroup struct{ _ byte }

// SetRxGroup puts p in group g (nil: none). A bridge sets it before the
// port's first read.
func (p *Port) SetRxGroup(g *RxGroup) { p.group.Store(g) }

// inboxSlots is how many datagrams an inbox holds; a port whose inbox is
// full drops what comes next (counted in RxDropped, as a full socket
// queue would).
const inboxSlots = 256

// inbox is a port's queue of datagrams the reader of its shared socket
// handed over (deliver), read by the port's own loop (readInbox).
type inbox struct {
	mu sync.Mutex
	// fd is an eventfd signalled when the inbox stops being empty: the
	// port polls it while another port reads the socket (-1 once
	// closed).
	fd     int
	queued atomic.Int32 // len, read without the lock
	slots  []inboxSlot  // ring, allocated with the first datagram
	head   int
	len    int
}

// inboxSlot is one datagram as recvmmsg left it.
type inboxSlot struct {
	data   []byte
	trunc  bool // longer than the port's receive buffer
	name   unix.RawSockaddrInet6
	ctl    [rxCtlLen]byte
	ctlLen int
}

func (q *inbox) open() error {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return err
	}
	q.fd = fd
	return nil
}

func (q *inbox) close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	fd := q.fd
	q.fd = -1
	if fd < 0 {
		return nil
	}
	return unix.Close(fd)
}

// deliver queues datagram i of reader r's last read for p, which is in
// another group: it reports false when p's inbox is full (or p closed).
func (p *Port) deliver(r *Port, i int, data []byte) bool {
	q := &p.inbox
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fd < 0 || q.len == inboxSlots {
		return false
	}
	if q.slots == nil {
		q.slots = make([]inboxSlot, inboxSlots)
	}
	s := &q.slots[(q.head+q.len)%inboxSlots]
	if cap(s.data) < p.rxBufLen {
		s.data = make([]byte, p.rxBufLen)
	}
	n := copy(s.data[:p.rxBufLen], data)
	s.data, s.trunc = s.data[:n], n < len(data)
	s.name = r.rxNames[i]
	h := &r.rxHdrs[i].Hdr
	s.ctlLen = min(int(h.Controllen), rxCtlLen)
	copy(s.ctl[:s.ctlLen], r.rxCtl[i][:s.ctlLen])
	q.len++
	q.queued.Store(int32(q.len))
	if q.len == 1 {
		_ = port.SignalEventfd(q.fd)
	}
	return true
}

// readInbox moves up to want queued datagrams into b and p's receive
// headers as a socket read would leave them, and returns how many. The
// caller holds RxMu.
func (p *Port) readInbox(b *port.Batch, want int) int {
	q := &p.inbox
	var buf [8]byte
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fd >= 0 {
		_, _ = unix.Read(q.fd, buf[:]) // reset; drained below
	}
	n := 0
	for ; n < want && q.len > 0; n++ {
		s := &q.slots[q.head]
		dst := b.Buffer(n, p.rxBufLen)
		l := copy(dst, s.data)
		h := &p.rxHdrs[n]
		h.Len = uint32(l)
		h.Hdr.Flags = 0
		if s.trunc {
			h.Hdr.Flags = unix.MSG_TRUNC
		}
		p.rxNames[n] = s.name
		copy(p.rxCtl[n][:], s.ctl[:s.ctlLen])
		h.Hdr.SetControllen(s.ctlLen)
		q.head = (q.head + 1) % inboxSlots
		q.len--
	}
	q.queued.Store(int32(q.len))
	return n
}
