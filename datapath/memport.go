package datapath

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govs-project/govs/datapath/port"
)

// MemPortConfig describes an in-memory port.
type MemPortConfig struct {
	Name string
	MAC  net.HardwareAddr
	// MTU defaults to 1500.
	MTU int
	// RxQueue bounds the frames Inject may queue before it drops (counted
	// in RxDropped). Default 4096.
	RxQueue int
	// Record keeps a copy of every transmitted frame for Recv. Without it
	// transmitted frames are only counted (benchmarks).
	Record bool
	// PassBadLengths hands runts and oversized frames to the loop instead
	// of dropping them, so tests can check the loop's own guards.
	PassBadLengths bool
}

// MemPort is a port.Port without a kernel device: frames come from Inject
// (or an endless Replay) and transmitted frames are recorded or counted. It
// lets the packet loop be tested and benchmarked without system calls.
type MemPort struct {
	name     string
	mac      atomic.Pointer[net.HardwareAddr]
	mtu      int
	maxFrame int
	record   bool
	passBad  bool
	rxCap    int

	mu     sync.Mutex
	rxCond *sync.Cond // signalled when frames are queued or the port closes
	closed bool
	rxq    [][]byte // queued frames (owned copies)
	free   [][]byte // recycled frame buffers

	// replay, when set, is served cyclically until replayLeft frames.
	replay     [][]byte
	replayNext int
	replayLeft int

	txMu sync.Mutex
	txq  [][]byte
	// txSignal gets a token (never blocking) after every WriteBatch, so a
	// waiter wakes without polling.
	txSignal chan struct{}

	rxPackets, rxBytes, rxDropped, rxLengthErrors atomic.Uint64
	txPackets, txBytes, txDropped                 atomic.Uint64
}

var _ port.Port = (*MemPort)(nil)

// NewMemPort returns an open in-memory port.
func NewMemPort(cfg MemPortConfig) *MemPort {
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	if cfg.RxQueue == 0 {
		cfg.RxQueue = 4096
	}
	p := &MemPort{
		name: cfg.Name, mtu: cfg.MTU, maxFrame: port.MaxFrameLen(cfg.MTU),
		record: cfg.Record, passBad: cfg.PassBadLengths, rxCap: cfg.RxQueue,
		txSignal: make(chan struct{}, 1),
	}
	p.mac.Store(&cfg.MAC)
	p.rxCond = sync.NewCond(&p.mu)
	return p
}

// Name implements port.Port.
func (p *MemPort) Name() string { return p.name }

// Ifindex implements port.Port; a memory port has no kernel index.
func (p *MemPort) Ifindex() int { return 0 }

// HardwareAddr implements port.Port.
func (p *MemPort) HardwareAddr() net.HardwareAddr { return *p.mac.Load() }

// SetHardwareAddr changes the port's MAC, as tap.Port's does the device's.
func (p *MemPort) SetHardwareAddr(mac net.HardwareAddr) error {
	p.mac.Store(&mac)
	return nil
}

// MTU implements port.Port.
func (p *MemPort) MTU() int { return p.mtu }

// Inject queues copies of frames as if they had been received. It returns
// an error wrapping port.ErrClosed after Close; frames that do not fit the
// queue are dropped and counted in RxDropped.
func (p *MemPort) Inject(frames ...[]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("memport %s: inject: %w", p.name, port.ErrClosed)
	}
	for _, f := range frames {
		if len(p.rxq) >= p.rxCap {
			p.rxDropped.Add(1)
			continue
		}
		var buf []byte
		if n := len(p.free); n > 0 {
			buf, p.free = p.free[n-1][:0], p.free[:n-1]
		}
		p.rxq = append(p.rxq, append(buf, f...))
	}
	p.rxCond.Signal()
	return nil
}

// Replay makes ReadBatch return the given frames over and over, in order,
// until total frames were delivered; then it serves Inject's queue again.
// The frames are copied into the batch on every read (the loop rewrites
// them in place), so frames is never modified.
func (p *MemPort) Replay(frames [][]byte, total int) {
	p.mu.Lock()
	p.replay, p.replayNext, p.replayLeft = frames, 0, total
	p.rxCond.Signal()
	p.mu.Unlock()
}

// ReadBatch implements port.Port: it blocks until a frame is queued or
// the port closes. Frames are copied into b's buffers.
func (p *MemPort) ReadBatch(b *port.Batch) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && len(p.rxq) == 0 && (p.replayLeft == 0 || len(p.replay) == 0) {
		p.rxCond.Wait()
	}
	if p.closed {
		return 0, fmt.Errorf("memport %s: read: %w", p.name, port.ErrClosed)
	}
	n := 0
	var pkts, bytes uint64
	for n < len(b.Frames) {
		var f []byte
		switch {
		case p.replayLeft > 0 && len(p.replay) > 0:
			f = p.replay[p.replayNext]
			p.replayNext = (p.replayNext + 1) % len(p.replay)
			p.replayLeft--
		case len(p.rxq) > 0:
			f = p.rxq[0]
			// Shift instead of reslicing so the queue's backing array
			// is reused and never grows without bound.
			copy(p.rxq, p.rxq[1:])
			p.rxq[len(p.rxq)-1] = nil
			p.rxq = p.rxq[:len(p.rxq)-1]
			p.free = append(p.free, f)
		default:
			goto done
		}
		if !p.passBad && !port.LengthOK(len(f), p.maxFrame) {
			p.rxLengthErrors.Add(1)
			continue
		}
		buf := b.Buffer(n, len(f))
		copy(buf, f)
		b.Frames[n] = buf
		b.Meta[n] = port.Meta{}
		n++
		pkts++
		bytes += uint64(len(f))
	}
done:
	p.rxPackets.Add(pkts)
	p.rxBytes.Add(bytes)
	return n, nil
}

// Release implements port.Port; frames live in the batch's own buffers.
func (p *MemPort) Release() {}

// WriteBatch implements port.Port: frames of a bad length are dropped and
// counted, the others are recorded (Config.Record) or just counted.
func (p *MemPort) WriteBatch(frames [][]byte) (int, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return 0, fmt.Errorf("memport %s: write: %w", p.name, port.ErrClosed)
	}
	var pkts, bytes, dropped uint64
	for _, f := range frames {
		if !port.LengthOK(len(f), p.maxFrame) {
			dropped++
			continue
		}
		pkts++
		bytes += uint64(len(f))
	}
	if p.record {
		p.txMu.Lock()
		for _, f := range frames {
			if port.LengthOK(len(f), p.maxFrame) {
				p.txq = append(p.txq, append([]byte(nil), f...))
			}
		}
		p.txMu.Unlock()
	}
	p.txPackets.Add(pkts)
	p.txBytes.Add(bytes)
	p.txDropped.Add(dropped)
	select {
	case p.txSignal <- struct{}{}:
	default:
	}
	return len(frames), nil
}

// Recv returns the oldest recorded transmitted frame, waiting up to
// timeout; ok is false on timeout.
func (p *MemPort) Recv(timeout time.Duration) (frame []byte, ok bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.txMu.Lock()
		if len(p.txq) > 0 {
			f := p.txq[0]
			p.txq = p.txq[1:]
			p.txMu.Unlock()
			return f, true
		}
		p.txMu.Unlock()
		select {
		case <-p.txSignal:
		case <-deadline.C:
			return nil, false
		}
	}
}

// Sent returns and forgets every recorded transmitted frame.
func (p *MemPort) Sent() [][]byte {
	p.txMu.Lock()
	defer p.txMu.Unlock()
	q := p.txq
	p.txq = nil
	return q
}

// WaitTxPackets waits until TxPackets reaches n or timeout passes, and
// reports whether it did. It does not allocate while waiting, so
// benchmarks can use it.
func (p *MemPort) WaitTxPackets(n uint64, timeout time.Duration) bool {
	var deadline <-chan time.Time
	for p.txPackets.Load() < n {
		if deadline == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-p.txSignal:
		case <-deadline:
			return p.txPackets.Load() >= n
		}
	}
	return true
}

// Stats implements port.Port.
func (p *MemPort) Stats() port.Stats {
	le := p.rxLengthErrors.Load()
	return port.Stats{
		RxPackets:      p.rxPackets.Load(),
		RxBytes:        p.rxBytes.Load(),
		RxDropped:      p.rxDropped.Load(),
		RxErrors:       le,
		RxLengthErrors: le,
		TxPackets:      p.txPackets.Load(),
		TxBytes:        p.txBytes.Load(),
		TxDropped:      p.txDropped.Load(),
	}
}

// Close implements port.Port and wakes a blocked ReadBatch.
func (p *MemPort) Close() error {
	p.mu.Lock()
	p.closed = true
	p.rxCond.Broadcast()
	p.mu.Unlock()
	return nil
}
