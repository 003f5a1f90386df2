package port

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/port/ifioctl"
)

// Base is the part every kernel port kind (AF_PACKET, AF_XDP, TAP, Geneve)
// shares: the port's identity, its counters, the eventfd that wakes a
// blocked reader, and the lifecycle rules, the kind itself bringing only
// its socket or device:
//
//   - Frame ownership. The frames of a read are lent to the packet loop
//     until it gives them back (Release, or its next read). Close may come
//     from another goroutine while the loop still reads or has queued
//     them: it releases the sockets at once, but the memory the frames sit
//     in (an AF_PACKET ring, an AF_XDP UMEM) is freed only when the loop
//     gives them back, so the loop never reads unmapped memory.
//   - Re-attachment. When the interface a port is bound to is deleted, the
//     port detaches (it drops what it is asked to send and reads nothing)
//     and binds again once an interface of that name exists, as Open
//     vSwitch re-opens a netdev whose ifindex changed.
//
// The kind embeds a Base, calls Init in its constructor, holds RxMu in its
// reads and Release, TxMu in its writes, and closes with Close.
type Base struct {
	kind, name string
	mac        net.HardwareAddr // as read at Open: see SetIdentity
	mtu        int
	ifindex    atomic.Int64 // changes when the port re-attaches

	// Ctr are the port's counters (Stats).
	Ctr Counters

	// WakeFd is the eventfd Close writes to wake a blocked poll; RxPoll
	// polls the receive descriptor (the kind sets RxPoll[0]) and WakeFd;
	// Timeout is the read timeout in ms, -1 for none.
	WakeFd  int
	RxPoll  [2]unix.PollFd
	Timeout int
	// CheckSocket: Wait looks at the socket's pending error now and then.
	CheckSocket bool

	closed atomic.Bool
	// RxMu is held by reads, Release and Close: the receive side. TxMu
	// is held by writes and Close: the transmit side.
	RxMu, TxMu sync.Mutex

	// Guarded by RxMu: the loop still has the frames of the last read,
	// and what Close left for their return to free.
	lent       bool
	freeFrames func() error

	// detached: the interface went away; written with both RxMu and TxMu
	// held. retryAt (RxMu) paces the attempts to bind again.
	detached bool
	retryAt  time.Time
	// netnsFd is the network namespace the port opened in (-1: not
	// kept), where it re-attaches.
	netnsFd int
}

// livenessCheck is how often a sleeping reader with CheckSocket looks at
// its socket's error.
const livenessCheck = time.Second

// reattachInterval paces the attempts to bind a detached port again.
const reattachInterval = 100 * time.Millisecond

// Init names the port; kind ("afpacket", "tap") prefixes its errors.
func (b *Base) Init(kind, name string, readTimeout time.Duration) {
	b.kind, b.name = kind, name
	b.WakeFd, b.netnsFd = -1, -1
	b.Timeout = -1
	if readTimeout > 0 {
		b.Timeout = int(max(1, readTimeout.Milliseconds()))
	}
}

// OpenWake creates WakeFd and sets RxPoll to watch rxFd and it.
func (b *Base) OpenWake(rxFd int) error {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return b.Errorf("eventfd: %w", err)
	}
	b.WakeFd = fd
	b.SetRxFd(rxFd)
	return nil
}

// KeepNetns records the network namespace of the calling thread (where
// Open runs), for re-attaching the port there.
func (b *Base) KeepNetns() error {
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return b.Errorf("open network namespace: %w", err)
	}
	b.netnsFd = fd
	return nil
}

// inNetns runs fn on a thread in the port's network namespace. The
// thread is never unlocked: it ends with its goroutine, namespace and all.
func (b *Base) inNetns(fn func() error) error {
	if b.netnsFd < 0 {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(b.netnsFd, unix.CLONE_NEWNET); err != nil {
			errc <- b.Errorf("setns: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Discard closes what Base holds, for a kind whose Open failed.
func (b *Base) Discard() {
	_ = b.closeOwn()
}

// closeOwn closes WakeFd and the namespace.
func (b *Base) closeOwn() error {
	return errors.Join(b.CloseFd(&b.WakeFd, "eventfd"), b.CloseFd(&b.netnsFd, "network namespace"))
}

// SetRxFd sets the receive descriptor RxPoll watches.
func (b *Base) SetRxFd(rxFd int) {
	b.RxPoll = [2]unix.PollFd{
		{Fd: int32(rxFd), Events: unix.POLLIN},
		{Fd: int32(b.WakeFd), Events: unix.POLLIN},
	}
}

// SetIdentity records the interface index, MAC and MTU the port opened
// with. On a re-attachment only the index changes: MAC and MTU stay as at
// Open (they size the port's rings, and other goroutines read them
// without a lock), and the MTU the port keeps is returned.
func (b *Base) SetIdentity(ifindex int, mac net.HardwareAddr, mtu int) int {
	b.ifindex.Store(int64(ifindex))
	if b.mtu == 0 {
		b.mac, b.mtu = mac, mtu
	}
	return b.mtu
}

// Errorf is fmt.Errorf with the "kind name: " prefix of the port's errors.
func (b *Base) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s %s: %w", b.kind, b.name, fmt.Errorf(format, args...))
}

// Name returns the interface name.
func (b *Base) Name() string { return b.name }

// Ifindex returns the index of the interface the port is bound to.
func (b *Base) Ifindex() int { return int(b.ifindex.Load()) }

// HardwareAddr returns the interface MAC read at Open.
func (b *Base) HardwareAddr() net.HardwareAddr { return b.mac }

// MTU returns the interface MTU read at Open.
func (b *Base) MTU() int { return b.mtu }

// Closed reports whether Close was called.
func (b *Base) Closed() bool { return b.closed.Load() }

// Stats returns the counters (kinds with kernel counters add theirs).
func (b *Base) Stats() Stats { return b.Ctr.Snapshot() }

// StartRead begins a read; the caller holds RxMu. The frames of the last
// read are given back first: it reports giveBack when the kind must return
// them to the kernel (not on a closed port, whose frame memory is freed
// here instead if Close left that to the loop). Then the read fails on a
// closed port or a batch without slots.
func (b *Base) StartRead(batch *Batch) (giveBack bool, err error) {
	giveBack = b.GiveBack()
	if b.closed.Load() {
		return false, b.Errorf("read: %w", ErrClosed)
	}
	if len(batch.Frames) == 0 {
		return giveBack, b.Errorf("read: batch has no frame slots")
	}
	return giveBack, nil
}

// GiveBack records that the loop gave back the frames of its last read
// (Release); the caller holds RxMu. It reports whether the kind must
// return them to the kernel, which it must not once the port is closed.
func (b *Base) GiveBack() bool {
	b.lent = false
	if !b.closed.Load() {
		return !b.detached
	}
	if f := b.freeFrames; f != nil {
		b.freeFrames = nil
		_ = f() // munmap of a mapping we made: nothing to do about a failure
	}
	return false
}

// Lend records the frames a read hands to the loop; the caller holds
// RxMu. It returns n.
func (b *Base) Lend(n int) int {
	b.lent = n > 0
	return n
}

// Close is the close every kind shares: it marks the port closed, wakes a
// blocked reader, waits for reads and writes in progress, then calls
// release (sockets, devices) and closes WakeFd. freeFrames (may be nil)
// frees the memory received frames sit in: at once when the loop holds
// none of them, else when it gives them back.
func (b *Base) Close(release, freeFrames func() error) error {
	if b.closed.Swap(true) {
		return nil
	}
	if err := SignalEventfd(b.WakeFd); err != nil {
		return b.Errorf("wake reader: %w", err)
	}
	b.RxMu.Lock()
	defer b.RxMu.Unlock()
	b.TxMu.Lock()
	defer b.TxMu.Unlock()
	errs := []error{release(), b.closeOwn()}
	switch {
	case b.lent:
		b.freeFrames = freeFrames
	case freeFrames != nil:
		errs = append(errs, freeFrames())
	}
	return errors.Join(errs...)
}

// CloseFd closes *fd if open and sets it to -1.
func (b *Base) CloseFd(fd *int, what string) error {
	if *fd < 0 {
		return nil
	}
	err := unix.Close(*fd)
	*fd = -1
	if err != nil {
		return b.Errorf("close %s: %w", what, err)
	}
	return nil
}

// Munmap unmaps *mem if mapped and sets it to nil.
func (b *Base) Munmap(mem *[]byte, what string) error {
	if *mem == nil {
		return nil
	}
	err := unix.Munmap(*mem)
	*mem = nil
	if err != nil {
		return b.Errorf("munmap %s: %w", what, err)
	}
	return nil
}

// Wait polls RxPoll: the receive descriptor's events, 0 on timeout, or an
// error wrapping ErrClosed. With CheckSocket set it wakes every
// livenessCheck to look at the socket's pending error, which it returns:
// an AF_XDP socket whose device is deleted never wakes poll(2).
func (b *Base) Wait() (int16, error) {
	if !b.CheckSocket {
		ev, err := PollRx(&b.RxPoll, b.Timeout, &b.closed)
		if err != nil {
			return 0, b.Errorf("%w", err)
		}
		return ev, nil
	}
	var start time.Time
	if b.Timeout >= 0 {
		start = time.Now()
	}
	for {
		ms := int(livenessCheck.Milliseconds())
		if b.Timeout >= 0 {
			ms = max(0, min(ms, b.Timeout-int(time.Since(start).Milliseconds())))
		}
		ev, err := PollRx(&b.RxPoll, ms, &b.closed)
		if err != nil {
			return 0, b.Errorf("%w", err)
		}
		if ev != 0 {
			return ev, nil
		}
		if err := b.SocketError(int(b.RxPoll[0].Fd)); err != nil {
			return 0, err
		}
		if b.Timeout >= 0 && time.Since(start) >= time.Duration(b.Timeout)*time.Millisecond {
			return 0, nil
		}
	}
}

// SocketError returns the pending error of socket fd (SO_ERROR, which
// clears it), e.g. ENETDOWN after its interface went down or away.
func (b *Base) SocketError(fd int) error {
	serr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && serr != 0 {
		return b.Errorf("socket: %w", unix.Errno(serr))
	}
	return nil
}

// StartWrite begins a write of n frames; the caller holds TxMu. It
// reports whether the write goes ahead; if not, it returns what the write
// returns: an error on a closed port, and n on a detached one, whose
// frames are dropped and counted as on a link that is down.
func (b *Base) StartWrite(frames int) (ok bool, n int, err error) {
	if b.closed.Load() {
		return false, 0, b.Errorf("write: %w", ErrClosed)
	}
	if b.detached {
		b.Ctr.TxDropped.Add(uint64(frames))
		return false, frames, nil
	}
	return true, 0, nil
}

// Detached reports whether the port lost its interface; the caller holds
// RxMu or TxMu.
func (b *Base) Detached() bool { return b.detached }

// DetachIfGone detaches the port when its interface was deleted (no
// interface of that name, or one with another index: deleted and created
// again), after a read failed with err. The caller holds RxMu and no
// frame is lent; release frees the kind's sockets and rings (WakeFd
// stays). It reports whether the port detached.
func (b *Base) DetachIfGone(err error, release func() error) bool {
	if !errors.Is(err, unix.ENETDOWN) && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.ENXIO) {
		return false
	}
	var idx int
	found := b.inNetns(func() (err error) { idx, err = b.currentIndex(); return err }) == nil
	if found && idx == b.Ifindex() {
		return false // only down: the kernel keeps the binding
	}
	b.TxMu.Lock()
	_ = release() // the kernel objects of a device that is gone
	b.detached = true
	b.TxMu.Unlock()
	b.retryAt = time.Now().Add(reattachInterval)
	return true
}

// currentIndex is the index of the interface called name now.
func (b *Base) currentIndex() (int, error) {
	fd, err := ifioctl.ControlSocket()
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	return ifioctl.Index(fd, b.name)
}

// Reattach tries to bind a detached port again (at most every
// reattachInterval): open acquires the kind's sockets and rings for the
// interface of that name, release frees a partial open. The caller holds
// RxMu. It reports whether the port is attached.
func (b *Base) Reattach(open, release func() error) bool {
	if !b.detached {
		return true
	}
	if time.Now().Before(b.retryAt) {
		return false
	}
	b.retryAt = time.Now().Add(reattachInterval)
	b.TxMu.Lock()
	defer b.TxMu.Unlock()
	if err := b.inNetns(open); err != nil {
		_ = release()
		return false
	}
	b.detached = false
	return true
}

// Idle reports whether the port is open and attached and the loop holds
// none of its frames, so it may detach; the caller holds RxMu.
func (b *Base) Idle() bool { return !b.lent && !b.detached && !b.closed.Load() }

// PollError is port.Poller's PollError for kinds without socket errors.
func (b *Base) PollError() error { return nil }

// WaitDetached sleeps while the port is detached: until the next attempt
// to re-attach, the read timeout or Close. It returns an error wrapping
// ErrClosed once closed.
func (b *Base) WaitDetached(block bool) error {
	if !block {
		return nil
	}
	ms := int(time.Until(b.retryAt).Milliseconds()) + 1
	if b.Timeout >= 0 {
		ms = min(ms, b.Timeout)
	}
	fds := [1]unix.PollFd{{Fd: int32(b.WakeFd), Events: unix.POLLIN}}
	if _, err := unix.Poll(fds[:], max(ms, 0)); err != nil && err != unix.EINTR {
		return b.Errorf("poll: %w", err)
	}
	if b.closed.Load() || fds[0].Revents != 0 {
		return b.Errorf("read: %w", ErrClosed)
	}
	return nil
}
