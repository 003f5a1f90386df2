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
	mac        atomic.Pointer[net.HardwareAddr] // as read at Open (SetIdentity), or as set since (SetHardwareAddr)
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
	// checkSocket (ring kinds): Wait looks at the socket's pending error now and then.
	checkSocket bool

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

	// For a kind opened with OpenRing: its binding, BusyPoll (0: off),
	// and, guarded by RxMu, whether frames stream in and the counts of
	// the current read.
	ring     Binding
	busyPoll time.Duration
	binds    atomic.Uint64 // SetRxFd calls (Binds)
	// watchFd is the receive descriptor for other goroutines (WatchFd);
	// -1 while unbound.
	watchFd atomic.Int32
	rxBusy  bool
	rxc     RxCounts

	// StatMu guards a kind's kernel counters and its socket as Stats
	// reads them (Bind runs with it held).
	StatMu sync.Mutex

	// sender is the kind's send path (SetTransmitter); Vnet: the port
	// exchanges a virtio_net_hdr with every frame (port.VnetWriter).
	sender Transmitter
	Vnet   bool
}

// Transmitter is a kind's send path: Base's WriteBatch and WriteBatchVnet
// call Transmit with TxMu held on an open, attached port. hdrs is nil
// for frames without offload metadata (a port with Vnet then sends each
// with an empty virtio_net_hdr).
type Transmitter interface {
	Transmit(frames [][]byte, hdrs []VnetHdr) (int, error)
}

// RxCounts accumulates one read's counters; the port adds them to its
// atomics once per batch rather than once per frame.
type RxCounts struct {
	Packets, Bytes, LengthErrors, Errors uint64
}

// Ring is the receive side of a kind that lends frames out of memory it
// shares with the kernel (an AF_PACKET ring, an AF_XDP UMEM); Base runs
// the reads (ReadRing, TryReadRing) around it.
type Ring interface {
	// Fill hands out the frames ready now into b.Frames[n:], without
	// blocking, counting into c; it returns the new n.
	Fill(b *Batch, n int, c *RxCounts) int
	// Held reports whether frames walked by Fill (handed out or
	// dropped) still wait for Recycle.
	Held() bool
	// Recycle gives walked frames back to the kernel.
	Recycle()
	// Ready reports whether a frame waits, for busy polling.
	Ready() bool
}

// Binding is a kind bound to a kernel interface through a Ring: Base
// opens, re-attaches and closes it.
type Binding interface {
	Ring
	Transmitter
	// Bind opens the sockets and rings on the interface called Name()
	// (at Open and again on re-attachment). The caller frees a partial
	// Bind with CloseSockets and FreeFrames.
	Bind() error
	// PollFd is the receive descriptor Bind opened.
	PollFd() int
	// CloseSockets frees what the kernel holds for the port.
	CloseSockets() error
	// FreeFrames unmaps the memory received frames sit in.
	FreeFrames() error
}

// livenessCheck is how often a sleeping reader with checkSocket looks at
// its socket's error.
const livenessCheck = time.Second

// reattachInterval paces the attempts to bind a detached port again.
const reattachInterval = 100 * time.Millisecond

// Init names the port; kind ("afpacket", "tap") prefixes its errors.
func (b *Base) Init(kind, name string, readTimeout time.Duration) {
	b.kind, b.name = kind, name
	b.WakeFd, b.netnsFd = -1, -1
	b.watchFd.Store(-1)
	b.Timeout = -1
	if readTimeout > 0 {
		b.Timeout = int(max(1, readTimeout.Milliseconds()))
	}
}

// OpenRing opens a kind bound to interface name through k (Bind), in the
// caller's network namespace, where it also re-attaches. busyPoll > 0
// turns busy polling on (see afpacket.Config.BusyPoll).
func (b *Base) OpenRing(kind, name string, readTimeout, busyPoll time.Duration, k Binding) error {
	b.Init(kind, name, readTimeout)
	b.ring, b.sender, b.busyPoll, b.checkSocket = k, k, max(busyPoll, 0), true
	err := b.KeepNetns()
	if err == nil {
		b.StatMu.Lock()
		err = k.Bind()
		b.StatMu.Unlock()
	}
	if err == nil {
		err = b.OpenWake(k.PollFd())
	}
	if err != nil {
		b.Discard(b.unbind)
	}
	return err
}

// unbind frees sockets and frame memory of a ring kind.
func (b *Base) unbind() error {
	b.watchFd.Store(-1)
	return errors.Join(b.ring.CloseSockets(), b.ring.FreeFrames())
}

// ReadRing is ReadBatch for a kind opened with OpenRing: it takes the
// frames ready in the ring, busy-polls while they stream in, and sleeps
// in poll(2) otherwise, until a frame, the read timeout or Close.
func (b *Base) ReadRing(batch *Batch) (int, error) {
	b.RxMu.Lock()
	defer b.RxMu.Unlock()
	if ok, err := b.startRing(batch, true); !ok {
		return 0, err
	}
	n := 0
	for {
		n = b.ring.Fill(batch, n, &b.rxc)
		if n > 0 {
			break
		}
		if b.ring.Held() {
			// Every frame walked was dropped: give them back and look
			// further before sleeping. This also keeps TPACKET_V2's
			// poll honest: it reports POLLIN while the slot before the
			// kernel's head is not TP_STATUS_KERNEL.
			b.ring.Recycle()
			continue
		}
		var sleep time.Time
		if b.busyPoll > 0 {
			if b.rxBusy && b.spin() {
				continue
			}
			sleep = time.Now()
		}
		ready, err := b.waitRing()
		if err != nil {
			b.CountRx(&b.rxc)
			return 0, err
		}
		if b.busyPoll > 0 {
			// A short sleep means frames are streaming in: watch the
			// ring for the next one rather than sleep again. A long one
			// (or a timeout) means sparse traffic, where spinning only
			// burns CPU.
			b.rxBusy = ready && time.Since(sleep) <= b.busyPoll
		}
		if !ready {
			break // read timeout
		}
	}
	b.CountRx(&b.rxc)
	return b.Lend(n), nil
}

// TryReadRing is port.Poller's TryReadBatch for a kind opened with
// OpenRing: the frames ready now, without waiting.
func (b *Base) TryReadRing(batch *Batch) (int, error) {
	b.RxMu.Lock()
	defer b.RxMu.Unlock()
	if ok, err := b.startRing(batch, false); !ok {
		return 0, err
	}
	n := b.ring.Fill(batch, 0, &b.rxc)
	for n == 0 && b.ring.Held() {
		// Every frame walked was dropped: give them back (which also
		// keeps poll(2) on the socket honest) and look further.
		b.ring.Recycle()
		n = b.ring.Fill(batch, 0, &b.rxc)
	}
	b.CountRx(&b.rxc)
	return b.Lend(n), nil
}

// startRing gives the last read's frames back and reports whether a read
// can go ahead: the port is open and attached, re-attaching it if its
// interface came back (a detached port sleeps a little when block is
// set). The caller holds RxMu.
func (b *Base) startRing(batch *Batch, block bool) (bool, error) {
	giveBack, err := b.StartRead(batch)
	if giveBack {
		b.ring.Recycle()
	}
	if err != nil {
		return false, err
	}
	if b.detached && !b.reattach() {
		return false, b.WaitDetached(block)
	}
	return true, nil
}

// spin watches the ring for up to busyPoll and reports whether a frame
// arrived. While the reader is not asleep in poll(2), the kernel writes
// frames without waking anyone. A miss clears rxBusy until a short sleep
// sets it again.
func (b *Base) spin() bool {
	start := time.Now()
	for i := 1; ; i++ {
		if b.ring.Ready() {
			return true
		}
		// Reading the clock costs more than looking at the ring.
		if i%32 == 0 && (time.Since(start) > b.busyPoll || b.closed.Load()) {
			b.rxBusy = false
			return false
		}
	}
}

// waitRing sleeps in poll(2) (Wait); it returns false on timeout. A
// socket error detaches the port if its interface was deleted.
func (b *Base) waitRing() (bool, error) {
	ev, err := b.Wait()
	if err == nil && ev&(unix.POLLERR|unix.POLLNVAL) != 0 {
		err = b.SocketError(int(b.RxPoll[0].Fd))
		if err == nil {
			err = b.Errorf("socket error (poll events %#x): %w", ev, unix.ENETDOWN)
		}
	}
	if err != nil {
		b.detachIfGone(err)
		return false, err
	}
	return ev != 0, nil
}

// CountRx adds the counts of a read to the counters and clears them.
func (b *Base) CountRx(c *RxCounts) {
	if c.Packets != 0 {
		b.Ctr.RxPackets.Add(c.Packets)
		b.Ctr.RxBytes.Add(c.Bytes)
	}
	if c.Errors != 0 {
		b.Ctr.RxErrors.Add(c.Errors)
		b.Ctr.RxLengthErrors.Add(c.LengthErrors)
	}
	*c = RxCounts{}
}

// Release implements port.Port: the loop gives the frames of the last
// read back (to the kernel, unless the port closed meanwhile).
func (b *Base) Release() {
	b.RxMu.Lock()
	if b.GiveBack() && b.ring != nil {
		b.ring.Recycle()
	}
	b.RxMu.Unlock()
}

// PollError implements port.Poller: the socket's pending error, which
// detaches a ring kind whose interface was deleted.
func (b *Base) PollError() error {
	if b.ring == nil {
		return nil
	}
	b.RxMu.Lock()
	defer b.RxMu.Unlock()
	if b.lent || b.detached || b.closed.Load() {
		return nil
	}
	err := b.SocketError(int(b.RxPoll[0].Fd))
	if err != nil {
		b.detachIfGone(err)
	}
	return err
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

// Discard frees what a kind whose Open failed acquired: release frees
// the kind's part, then Base closes its own.
func (b *Base) Discard(release func() error) {
	_ = release()
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
	b.binds.Add(1)
	b.watchFd.Store(int32(rxFd))
}

// WatchFd is the receive descriptor as SetRxFd last set it, -1 while the
// port is unbound or closed: safe to read from any goroutine (the port
// watchdog polls it), where a kind's PollFd is its reader's own. The
// number may be stale by the time it is used; poll(2) on it is harmless.
func (b *Base) WatchFd() int { return int(b.watchFd.Load()) }

// Binds counts the receive descriptors the port has had (SetRxFd): a
// poll set that keys ports by descriptor registers the port again when it
// changes, as a re-attached port may get its old descriptor number back
// for a new socket.
func (b *Base) Binds() uint64 { return b.binds.Load() }

// SetIdentity records the interface index, MAC and MTU the port opened
// with. On a re-attachment only the index changes: MAC and MTU stay as at
// Open (they size the port's rings, and other goroutines read them
// without a lock), and the MTU the port keeps is returned.
func (b *Base) SetIdentity(ifindex int, mac net.HardwareAddr, mtu int) int {
	b.ifindex.Store(int64(ifindex))
	if b.mtu == 0 {
		b.mac.Store(&mac)
		b.mtu = mtu
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

// HardwareAddr returns the interface MAC read at Open, or the one
// RecordHardwareAddr recorded since.
func (b *Base) HardwareAddr() net.HardwareAddr {
	if m := b.mac.Load(); m != nil {
		return *m
	}
	return nil
}

// RecordHardwareAddr records a MAC the kind set on the interface since it
// opened.
func (b *Base) RecordHardwareAddr(mac net.HardwareAddr) { b.mac.Store(&mac) }

// MTU returns the interface MTU read at Open.
func (b *Base) MTU() int { return b.mtu }

// Closed reports whether Close was called.
func (b *Base) Closed() bool { return b.closed.Load() }

// Stats returns the counters (kinds with kernel counters add theirs).
func (b *Base) Stats() Stats { return b.Ctr.Snapshot() }

// KernelStats returns the counters with the kernel's added: with StatMu
// held, poll (on an open port) folds the kernel's counters of the
// socket into the kind's fields, and add adds those to the snapshot.
func (b *Base) KernelStats(poll func(), add func(*Stats)) Stats {
	b.StatMu.Lock()
	defer b.StatMu.Unlock()
	if !b.closed.Load() {
		poll()
	}
	s := b.Ctr.Snapshot()
	add(&s)
	return s
}

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

// CloseRing is Close for a kind opened with OpenRing.
func (b *Base) CloseRing() error {
	return b.Close(b.ring.CloseSockets, b.ring.FreeFrames)
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
// error wrapping ErrClosed. With checkSocket set it wakes every
// livenessCheck to look at the socket's pending error, which it returns:
// an AF_XDP socket whose device is deleted never wakes poll(2).
func (b *Base) Wait() (int16, error) {
	if !b.checkSocket {
		return b.WaitTimeout(b.Timeout)
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

// WaitTimeout is Wait with a timeout of ms instead of the read timeout
// and without the socket check: for a kind whose reader waits for
// something else than its descriptor now and then (a Geneve port whose
// shared socket another port reads).
func (b *Base) WaitTimeout(ms int) (int16, error) {
	ev, err := PollRx(&b.RxPoll, ms, &b.closed)
	if err != nil {
		return 0, b.Errorf("%w", err)
	}
	return ev, nil
}

// WaitReady is Wait reporting whether the receive descriptor is ready
// (false on timeout).
func (b *Base) WaitReady() (bool, error) {
	ev, err := b.Wait()
	return ev != 0, err
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

// SetTransmitter sets the kind's send path.
func (b *Base) SetTransmitter(t Transmitter) { b.sender = t }

// WriteBatch implements port.Port through the kind's Transmitter.
func (b *Base) WriteBatch(frames [][]byte) (int, error) { return b.transmit(frames, nil) }

// VnetEnabled implements port.VnetWriter: whether the port exchanges a
// virtio_net_hdr with every frame.
func (b *Base) VnetEnabled() bool { return b.Vnet }

// WriteBatchVnet implements port.VnetWriter: frames[i] goes with hdrs[i].
func (b *Base) WriteBatchVnet(frames [][]byte, hdrs []VnetHdr) (int, error) {
	if err := CheckVnetBatch(b.Vnet, frames, hdrs); err != nil {
		return 0, b.Errorf("%w", err)
	}
	return b.transmit(frames, hdrs)
}

func (b *Base) transmit(frames [][]byte, hdrs []VnetHdr) (int, error) {
	b.TxMu.Lock()
	defer b.TxMu.Unlock()
	if ok, n, err := b.StartWrite(len(frames)); !ok {
		return n, err
	}
	return b.sender.Transmit(frames, hdrs)
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

// detachIfGone detaches the port when its interface was deleted (no
// interface of that name, or one with another index: deleted and created
// again), after a read failed with err. The caller holds RxMu and no
// frame is lent; the sockets and rings go (WakeFd stays).
func (b *Base) detachIfGone(err error) {
	if !errors.Is(err, unix.ENETDOWN) && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.ENXIO) {
		return
	}
	var idx int
	found := b.inNetns(func() (err error) { idx, err = b.currentIndex(); return err }) == nil
	if found && idx == b.Ifindex() {
		return // only down: the kernel keeps the binding
	}
	b.TxMu.Lock()
	_ = b.unbind() // the kernel objects of a device that is gone
	b.detached = true
	b.TxMu.Unlock()
	b.retryAt = time.Now().Add(reattachInterval)
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

// reattach tries to bind a detached port again, in the namespace it
// opened in, at most every reattachInterval. The caller holds RxMu. It
// reports whether the port is attached.
func (b *Base) reattach() bool {
	if time.Now().Before(b.retryAt) {
		return false
	}
	b.retryAt = time.Now().Add(reattachInterval)
	b.TxMu.Lock()
	defer b.TxMu.Unlock()
	b.StatMu.Lock()
	err := b.inNetns(b.ring.Bind)
	b.StatMu.Unlock()
	if err != nil {
		_ = b.unbind()
		return false
	}
	b.SetRxFd(b.ring.PollFd())
	b.detached = false
	return true
}

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
