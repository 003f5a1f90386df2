// Package afxdp attaches the datapath to a Linux interface with an AF_XDP
// socket, as OVS's userspace datapath does for ports of type=afxdp
// (Documentation/networking/af_xdp.rst; OVS "Using AF_XDP"). An XDP
// program on the interface redirects every frame of rx queue 0 into the
// socket; frames are received into and sent from a UMEM, a memory area
// this process owns and the kernel reads and writes, through four rings:
//
//	FillRing       we give the kernel free UMEM frames to receive into
//	RxRing         the kernel gives us received frames (address, length)
//	TxRing         we give the kernel frames to send
//	CompletionRing the kernel gives us back frames it has sent
//
// Received frames are handed to the loop in place in the UMEM and go back
// to the FillRing on the next read or Release; frames to send are copied
// into free UMEM frames.
//
// One socket serves queue 0 only, which is every frame of a veth (one rx
// queue unless created with more). On a multi-queue NIC the frames of
// the other queues are passed to the kernel stack by the program.
//
// On veth the kernel copies frames between the skb and the UMEM (XDP_COPY,
// in native or generic XDP mode); zero-copy needs driver support. Frames
// carry no offload metadata: the port does not implement port.VnetWriter,
// so the loop sends it plain frames with final checksums, and peers must
// not send it TCP super-segments (an XDP program sees at most one page).
package afxdp

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/port/ifioctl"
	"golang.org/x/sys/unix"
)

// Config tunes a port. The zero value is a good default for a veth port.
type Config struct {
	// Mode is options:xdp-mode; "" is ModeBestEffort.
	Mode Mode
	// FrameSize is the UMEM chunk size, 2048 or 4096 bytes. A received
	// frame starts XDP_PACKET_HEADROOM (256) bytes into its chunk, so a
	// chunk holds frames of up to FrameSize-256 bytes. Default 2048 when
	// MaxFrameLen(MTU) fits in that, else 4096.
	FrameSize int
	// RxFrames is the number of UMEM frames for receiving, which is also
	// the size of the FillRing and the RxRing; a power of two. Default
	// 8192 (16 MiB with 2 KiB frames), which rides out the senders'
	// bursts while the reader waits for a CPU (afpacket.Config.FrameCount).
	RxFrames int
	// TxFrames is the number of UMEM frames for sending, also the size of
	// the TxRing and the CompletionRing; a power of two. Default 2048.
	TxFrames int
	// NoNeedWakeup binds without XDP_USE_NEED_WAKEUP (OVS's
	// options:use-need-wakeup=false): every send then makes a system
	// call even when the kernel would not need one.
	NoNeedWakeup bool
	// BusyPoll is how long ReadBatch keeps checking the RxRing before it
	// sleeps in poll(2) while frames stream in, as afpacket.Config.BusyPoll.
	// Default 20 µs; negative turns it off.
	BusyPoll time.Duration
	// ReadTimeout makes ReadBatch return (0, nil) when nothing arrived for
	// that long. 0 blocks until frames arrive or the port is closed.
	ReadTimeout time.Duration
	// NoPromisc leaves the interface out of promiscuous mode. By default
	// the port holds a promiscuous membership (an AF_PACKET socket with
	// PACKET_MR_PROMISC), which the kernel drops when the process exits.
	NoPromisc bool
}

const (
	defaultRxFrames = 8192
	defaultFrames   = 2048 // TX
	defaultBusyPoll = 20 * time.Microsecond
	// queueID is the one rx queue a port serves.
	queueID = 0
	// txFullWait bounds the wait for a free TX frame or TxRing slot in
	// WriteBatch; frames that still find no room are dropped.
	txFullWait = 100 * time.Millisecond
	// bindBusyWait bounds the wait for a queue another socket is leaving.
	bindBusyWait = 2 * time.Second
)

// Port is an AF_XDP port bound to queue 0 of one interface. It implements
// port.Port and port.Poller.
type Port struct {
	// Base: identity, counters, close and re-attach. RxMu guards
	// FillRing, RxRing and held; TxMu TxRing, CompletionRing and txFree.
	port.Base
	cfg Config

	fd        int // AF_XDP socket
	promiscFd int // AF_PACKET socket holding the promiscuous membership

	prog     *xdpProgram
	mode     Mode // ModeNative or ModeGeneric: how the program is attached
	zeroCopy bool // bound with XDP_ZEROCOPY

	umem      []byte
	frameSize uint64
	fill      addrRing
	comp      addrRing
	rx        descRing
	tx        descRing
	ringMaps  [][]byte

	held   []uint64 // UMEM addresses of the frames of the last read
	txFree []uint64 // UMEM addresses of TX frames not in flight

	wakeup bool // bound with XDP_USE_NEED_WAKEUP

	maxFrame int
	xdpStats unix.XDPStatistics // last XDP_STATISTICS answer (cumulative)
}

var (
	_ port.Port   = (*Port)(nil)
	_ port.Poller = (*Port)(nil)
)

// Open attaches to queue 0 of the interface called name in the caller's
// network namespace (the namespace of the OS thread).
func Open(name string, cfg Config) (*Port, error) {
	mode, err := ParseMode(string(cfg.Mode))
	if err != nil {
		return nil, fmt.Errorf("afxdp %s: %w", name, err)
	}
	cfg.Mode = mode
	if cfg.RxFrames == 0 {
		cfg.RxFrames = defaultRxFrames
	}
	if cfg.TxFrames == 0 {
		cfg.TxFrames = defaultFrames
	}
	for _, c := range []struct {
		what string
		n    int
	}{{"rx frames", cfg.RxFrames}, {"tx frames", cfg.TxFrames}} {
		if c.n < 1 || c.n > 1<<20 || c.n&(c.n-1) != 0 {
			return nil, fmt.Errorf("afxdp %s: %s %d: want a power of two up to %d", name, c.what, c.n, 1<<20)
		}
	}
	if cfg.FrameSize != 0 && cfg.FrameSize != 2048 && cfg.FrameSize != 4096 {
		return nil, fmt.Errorf("afxdp %s: frame size %d: want 2048 or 4096", name, cfg.FrameSize)
	}
	if cfg.BusyPoll == 0 {
		cfg.BusyPoll = defaultBusyPoll
	}
	p := &Port{cfg: cfg, fd: -1, promiscFd: -1}
	if err := p.OpenRing("afxdp", name, cfg.ReadTimeout, cfg.BusyPoll, p); err != nil {
		return nil, err
	}
	return p, nil
}

// Bind implements port.Binding: it sets up UMEM, rings, socket and
// program on the interface; on error the caller releases what was
// acquired.
func (p *Port) Bind() error {
	name, cfg := p.Name(), p.cfg
	ifindex, mac, mtu, err := interfaceInfo(name)
	if err != nil {
		return fmt.Errorf("afxdp: %w", err)
	}
	mtu = p.SetIdentity(ifindex, mac, mtu)
	p.maxFrame = port.MaxFrameLen(mtu)
	p.frameSize = uint64(cfg.FrameSize)
	if p.frameSize == 0 {
		p.frameSize = 2048
		if p.maxFrame > 2048-unix.XDP_PACKET_HEADROOM {
			p.frameSize = 4096
		}
	}
	if room := int(p.frameSize) - unix.XDP_PACKET_HEADROOM; p.maxFrame > room {
		return fmt.Errorf("afxdp %s: MTU %d needs %d-byte frames, a %d-byte UMEM frame holds %d (no multi-buffer support)",
			name, mtu, p.maxFrame, p.frameSize, room)
	}

	p.fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EAFNOSUPPORT) {
			return fmt.Errorf("afxdp %s: socket: kernel without AF_XDP (CONFIG_XDP_SOCKETS): %w", name, err)
		}
		return fmt.Errorf("afxdp %s: socket: %w", name, err)
	}

	// UMEM: RX frames first, then TX frames.
	nrx, ntx := uint64(cfg.RxFrames), uint64(cfg.TxFrames)
	p.umem, err = unix.Mmap(-1, 0, int((nrx+ntx)*p.frameSize), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("afxdp %s: mmap UMEM of %d x %d bytes: %w", name, nrx+ntx, p.frameSize, err)
	}
	reg := unix.XDPUmemReg{
		Addr: uint64(uintptr(unsafe.Pointer(&p.umem[0]))),
		Len:  uint64(len(p.umem)),
		Size: uint32(p.frameSize),
	}
	if err := setsockopt(p.fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("afxdp %s: XDP_UMEM_REG %d x %d bytes: %w", name, nrx+ntx, p.frameSize, err)
	}
	for _, r := range []struct {
		opt  int
		what string
		size int
	}{
		{unix.XDP_UMEM_FILL_RING, "XDP_UMEM_FILL_RING", cfg.RxFrames},
		{unix.XDP_UMEM_COMPLETION_RING, "XDP_UMEM_COMPLETION_RING", cfg.TxFrames},
		{unix.XDP_RX_RING, "XDP_RX_RING", cfg.RxFrames},
		{unix.XDP_TX_RING, "XDP_TX_RING", cfg.TxFrames},
	} {
		if err := unix.SetsockoptInt(p.fd, unix.SOL_XDP, r.opt, r.size); err != nil {
			return fmt.Errorf("afxdp %s: %s of %d entries: %w", name, r.what, r.size, err)
		}
	}
	if err := p.mapRings(); err != nil {
		return err
	}

	flags := uint16(unix.XDP_COPY)
	if cfg.Mode == ModeNativeZeroCopy {
		flags = unix.XDP_ZEROCOPY
	}
	if !cfg.NoNeedWakeup {
		flags |= unix.XDP_USE_NEED_WAKEUP
		p.wakeup = true
	}
	// The program goes on first, so an interface that takes no XDP
	// program fails before the socket binds; until the XSKMAP entry exists
	// it passes every frame to the stack.
	if p.prog, err = loadProgram(ifindex, cfg.Mode, queueID+1); err != nil {
		return fmt.Errorf("afxdp %s: %w", name, err)
	}
	p.mode = p.prog.mode
	if err := p.bind(flags); err != nil {
		what := "copy mode"
		if flags&unix.XDP_ZEROCOPY != 0 {
			what = "zero-copy (driver without AF_XDP zero-copy support? try xdp-mode=native)"
		}
		return fmt.Errorf("afxdp %s: bind queue %d in %s: %w", name, queueID, what, err)
	}
	if opts, err := unix.GetsockoptInt(p.fd, unix.SOL_XDP, unix.XDP_OPTIONS); err == nil {
		p.zeroCopy = opts&unix.XDP_OPTIONS_ZEROCOPY != 0
	}
	// In copy mode one sendto sends at most 32 frames unless told more
	// (XDP_MAX_TX_SKB_BUDGET, Linux 6.17); older kernels keep 32, which
	// only costs more sendto calls.
	_ = unix.SetsockoptInt(p.fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, cfg.TxFrames)

	// Every RX frame starts in the FillRing, every TX frame is free.
	for i := range nrx {
		p.fill.addrs[p.fill.cachedProd&p.fill.mask] = i * p.frameSize
		p.fill.cachedProd++
	}
	p.fill.submit()
	p.held = make([]uint64, 0, cfg.RxFrames)
	p.txFree = make([]uint64, 0, cfg.TxFrames)
	for i := range ntx {
		p.txFree = append(p.txFree, (nrx+ntx-1-i)*p.frameSize)
	}
	if err := p.prog.register(queueID, p.fd); err != nil {
		return fmt.Errorf("afxdp %s: %w", name, err)
	}

	if !cfg.NoPromisc {
		if p.promiscFd, err = promiscuous(ifindex); err != nil {
			return fmt.Errorf("afxdp %s: %w", name, err)
		}
	}
	return nil
}

// bind binds the socket to the queue. A socket closed a moment ago may
// still hold the queue (bind fails with EBUSY): the kernel lets go of it
// from a work queue, some milliseconds later, so EBUSY is retried.
func (p *Port) bind(flags uint16) error {
	sa := unix.SockaddrXDP{Flags: flags, Ifindex: uint32(p.Ifindex()), QueueID: queueID}
	deadline := time.Now().Add(bindBusyWait)
	for {
		err := unix.Bind(p.fd, &sa)
		if err != unix.EBUSY || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mapRings maps the four rings at the offsets the kernel reports.
func (p *Port) mapRings() error {
	var off unix.XDPMmapOffsets
	if err := getsockopt(p.fd, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off)); err != nil {
		return p.Errorf("XDP_MMAP_OFFSETS: %w", err)
	}
	mapRing := func(what string, pgoff int64, o unix.XDPRingOffset, size int, entry uint64) ([]byte, error) {
		mem, err := unix.Mmap(p.fd, pgoff, ringMapLen(o, uint32(size), entry),
			unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return nil, p.Errorf("mmap %s: %w", what, err)
		}
		p.ringMaps = append(p.ringMaps, mem)
		return mem, nil
	}
	rx, tx := p.cfg.RxFrames, p.cfg.TxFrames
	mem, err := mapRing("FillRing", unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, rx, 8)
	if err != nil {
		return err
	}
	if p.fill, err = newAddrRing(mem, off.Fr, uint32(rx)); err != nil {
		return p.Errorf("FillRing: %w", err)
	}
	if mem, err = mapRing("CompletionRing", unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, tx, 8); err != nil {
		return err
	}
	if p.comp, err = newAddrRing(mem, off.Cr, uint32(tx)); err != nil {
		return p.Errorf("CompletionRing: %w", err)
	}
	if mem, err = mapRing("RxRing", unix.XDP_PGOFF_RX_RING, off.Rx, rx, xdpDescLen); err != nil {
		return err
	}
	if p.rx, err = newDescRing(mem, off.Rx, uint32(rx)); err != nil {
		return p.Errorf("RxRing: %w", err)
	}
	if mem, err = mapRing("TxRing", unix.XDP_PGOFF_TX_RING, off.Tx, tx, xdpDescLen); err != nil {
		return err
	}
	if p.tx, err = newDescRing(mem, off.Tx, uint32(tx)); err != nil {
		return p.Errorf("TxRing: %w", err)
	}
	return nil
}

// interfaceInfo reads index, MAC and MTU. AF_XDP sockets take no
// interface ioctls, so a control socket asks.
func interfaceInfo(name string) (ifindex int, mac net.HardwareAddr, mtu int, err error) {
	fd, err := ifioctl.ControlSocket()
	if err != nil {
		return 0, nil, 0, err
	}
	defer unix.Close(fd)
	if ifindex, err = ifioctl.Index(fd, name); err != nil {
		return 0, nil, 0, err
	}
	if mac, err = ifioctl.HardwareAddr(fd, name); err != nil {
		return 0, nil, 0, err
	}
	if mtu, err = ifioctl.MTU(fd, name); err != nil {
		return 0, nil, 0, err
	}
	return ifindex, mac, mtu, nil
}

// promiscuous opens an AF_PACKET socket that receives nothing (protocol
// 0, never bound) and only holds a PACKET_MR_PROMISC membership on
// ifindex: unlike setting IFF_PROMISC, it ends with the socket.
func promiscuous(ifindex int) (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("promiscuous mode: socket: %w", err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("promiscuous mode: PACKET_MR_PROMISC: %w", err)
	}
	return fd, nil
}

// setsockopt and getsockopt pass a struct at level SOL_XDP without
// allocating.
func setsockopt(fd, opt int, v unsafe.Pointer, size uintptr) error {
	_, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(v), size, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func getsockopt(fd, opt int, v unsafe.Pointer, size uintptr) error {
	l := uint32(size)
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(v), uintptr(unsafe.Pointer(&l)), 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// Mode reports how the XDP program is attached: ModeNative or
// ModeGeneric (what ModeBestEffort ended up with).
func (p *Port) Mode() Mode { return p.mode }

// ZeroCopy reports whether the socket is bound in zero-copy mode.
func (p *Port) ZeroCopy() bool { return p.zeroCopy }

// ReadBatch implements port.Port (port.Base.ReadRing). Frames point into
// the UMEM.
func (p *Port) ReadBatch(b *port.Batch) (int, error) { return p.ReadRing(b) }

// TryReadBatch implements port.Poller (port.Base.TryReadRing): the frames
// in the RxRing now, without waiting.
func (p *Port) TryReadBatch(b *port.Batch) (int, error) { return p.TryReadRing(b) }

// PollFd implements port.Poller: the AF_XDP socket, readable when the
// RxRing has frames.
func (p *Port) PollFd() int { return p.fd }

// Fill implements port.Ring: it takes frames from the RxRing into
// b.Frames[n:]. Their UMEM frames stay ours (in held) until Recycle puts
// them on the FillRing, so the RxRing slots are released at once.
func (p *Port) Fill(b *port.Batch, n int, c *port.RxCounts) int {
	avail := p.rx.avail()
	if avail == 0 {
		return n
	}
	for ; avail > 0 && n < len(b.Frames); avail-- {
		d := p.rx.descs[p.rx.cachedCons&p.rx.mask]
		p.rx.cachedCons++
		end := d.Addr + uint64(d.Len)
		if end > uint64(len(p.umem)) {
			c.Errors++ // not a UMEM frame: nothing to give back
			c.LengthErrors++
			continue
		}
		p.held = append(p.held, d.Addr)
		if !port.LengthOK(int(d.Len), p.maxFrame) {
			c.Errors++
			c.LengthErrors++
			continue
		}
		b.Frames[n] = p.umem[d.Addr:end:end]
		b.Meta[n] = port.Meta{}
		c.Packets++
		c.Bytes += uint64(d.Len)
		n++
	}
	p.rx.release()
	return n
}

// Held implements port.Ring: frames taken off the RxRing and not yet
// back on the FillRing.
func (p *Port) Held() bool { return len(p.held) != 0 }

// Ready implements port.Ring: whether the RxRing has a frame.
func (p *Port) Ready() bool { return p.rx.ready() }

// Recycle implements port.Ring: it puts the frames of the last read on
// the FillRing. The ring has room for every RX frame, so they always fit.
func (p *Port) Recycle() {
	if len(p.held) == 0 {
		return
	}
	k := min(int(p.fill.free(uint32(len(p.held)))), len(p.held))
	for _, addr := range p.held[:k] {
		// The kernel wants the start of the chunk.
		p.fill.addrs[p.fill.cachedProd&p.fill.mask] = addr &^ (p.frameSize - 1)
		p.fill.cachedProd++
	}
	p.fill.submit()
	p.held = p.held[:copy(p.held, p.held[k:])]
	if p.wakeup && p.fill.needWakeup() {
		// The driver stopped receiving for want of fill frames.
		// Raw: with MSG_DONTWAIT it never sleeps (see port.RawRead).
		unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(p.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	}
}

// Transmit implements port.Transmitter (WriteBatch): each frame is copied
// into a free TX frame of the UMEM and posted on the TxRing, then one
// sendto tells the kernel to send them. The port has no offload metadata.
func (p *Port) Transmit(frames [][]byte, _ []port.VnetHdr) (int, error) {
	p.reclaim()
	var pkts, bytes, dropped uint64
	defer func() {
		p.Ctr.TxPackets.Add(pkts)
		p.Ctr.TxBytes.Add(bytes)
		p.Ctr.TxDropped.Add(dropped)
	}()
	done := 0
	for done < len(frames) {
		room := min(int(p.tx.free(uint32(len(frames)-done))), len(p.txFree))
		if room == 0 {
			ok, err := p.waitTxRoom()
			if err != nil {
				p.Ctr.TxErrors.Add(uint64(len(frames) - done))
				return done, err
			}
			if !ok {
				// Still no room: drop the rest, as a full NIC queue would.
				dropped += uint64(len(frames) - done)
				return len(frames), nil
			}
			continue
		}
		k, kbytes := 0, uint64(0)
		for done < len(frames) && k < room {
			f := frames[done]
			done++
			if !port.LengthOK(len(f), p.maxFrame) {
				dropped++
				continue
			}
			addr := p.txFree[len(p.txFree)-1]
			p.txFree = p.txFree[:len(p.txFree)-1]
			copy(p.umem[addr:addr+uint64(len(f))], f)
			p.tx.descs[p.tx.cachedProd&p.tx.mask] = unix.XDPDesc{Addr: addr, Len: uint32(len(f))}
			p.tx.cachedProd++
			k++
			kbytes += uint64(len(f))
		}
		if k == 0 {
			continue
		}
		p.tx.submit()
		pkts += uint64(k)
		bytes += kbytes
		if err := p.kick(); err != nil {
			// The frames stay posted and may still go; count them as
			// errors, not as sent.
			pkts -= uint64(k)
			bytes -= kbytes
			p.Ctr.TxErrors.Add(uint64(k))
			return done - k, err
		}
	}
	return done, nil
}

// kick makes the kernel send what is on the TxRing (sendto), unless it
// said it does not need a wakeup. In copy mode the kernel sends during the
// call, a budget of frames at a time, so EAGAIN means "call again".
func (p *Port) kick() error {
	if p.wakeup && !p.tx.needWakeup() {
		return nil
	}
	var deadline time.Time
	for {
		before := atomic.LoadUint32(p.tx.consumer)
		// Raw: with MSG_DONTWAIT it never sleeps (see port.RawRead); in
		// copy mode it sends a budget of frames, which takes a while.
		_, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(p.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
		case unix.EBUSY:
			// The device dropped a frame it took off the TxRing
			// (NET_XMIT_DROP, e.g. the veth peer is down); the kernel
			// does not say which, so the byte count keeps it.
			p.Ctr.TxDropped.Add(1)
			p.Ctr.TxPackets.Add(^uint64(0))
		case unix.EAGAIN, unix.ENOBUFS:
			// More than one budget queued, or the device queue is busy.
			// Without progress, give the device time, but not forever:
			// what stays on the TxRing goes with the next kick.
			p.reclaim()
			if atomic.LoadUint32(p.tx.consumer) != before {
				deadline = time.Time{}
				continue
			}
			if deadline.IsZero() {
				deadline = time.Now().Add(txFullWait)
			} else if time.Now().After(deadline) || p.Closed() {
				return nil
			}
			p.pause()
		default:
			return p.Errorf("sendto (TX kick): %w", errno)
		}
	}
}

// reclaim takes the frames the kernel has sent off the CompletionRing.
func (p *Port) reclaim() {
	n := p.comp.avail()
	if n == 0 {
		return
	}
	for range n {
		addr := p.comp.addrs[p.comp.cachedCons&p.comp.mask]
		p.comp.cachedCons++
		p.txFree = append(p.txFree, addr&^(p.frameSize-1))
	}
	p.comp.release()
}

// waitTxRoom waits up to txFullWait for a TxRing slot and a free TX
// frame, kicking the kernel to send what is queued.
func (p *Port) waitTxRoom() (bool, error) {
	deadline := time.Now().Add(txFullWait)
	for {
		if err := p.kick(); err != nil {
			return false, err
		}
		p.reclaim()
		if len(p.txFree) > 0 && p.tx.free(1) > 0 {
			return true, nil
		}
		if time.Now().After(deadline) || p.Closed() {
			return false, nil
		}
		p.pause()
	}
}

// pause sleeps a little while the kernel works through the TxRing, waking
// early on Close.
func (p *Port) pause() {
	fds := [1]unix.PollFd{{Fd: int32(p.WakeFd), Events: unix.POLLIN}}
	unix.Poll(fds[:], 1)
}

// Stats implements port.Port. RxDropped is what the kernel could not put
// on the RxRing: XDP_STATISTICS rx_dropped (no frame on the FillRing)
// plus rx_ring_full. Descriptors the kernel found invalid count as errors.
func (p *Port) Stats() port.Stats {
	return p.KernelStats(p.pollKernelStats, func(s *port.Stats) {
		xs := &p.xdpStats
		s.RxDropped = xs.Rx_dropped + xs.Rx_ring_full
		s.RxErrors += xs.Rx_invalid_descs
		s.TxErrors += xs.Tx_invalid_descs
	})
}

// pollKernelStats reads XDP_STATISTICS (cumulative). The caller holds
// statMu.
func (p *Port) pollKernelStats() {
	var st unix.XDPStatistics
	if getsockopt(p.fd, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st)) == nil {
		p.xdpStats = st
	}
}

// Close implements port.Port (port.Base.Close): program, socket and
// rings go at once, the UMEM once the loop has given back the frames it
// holds.
func (p *Port) Close() error { return p.CloseRing() }

// CloseSockets implements port.Binding: it detaches the program and
// frees the socket and its rings, after a last look at the kernel's
// counters. The program goes first so no frame is redirected to a closing
// socket.
func (p *Port) CloseSockets() error {
	p.StatMu.Lock()
	defer p.StatMu.Unlock()
	var errs []error
	if p.fd >= 0 {
		p.pollKernelStats()
	}
	if p.prog != nil {
		if err := p.prog.close(); err != nil {
			errs = append(errs, p.Errorf("%w", err))
		}
		p.prog = nil
	}
	errs = append(errs, p.CloseFd(&p.fd, "socket"), p.CloseFd(&p.promiscFd, "promiscuous socket"))
	for i := range p.ringMaps {
		errs = append(errs, p.Munmap(&p.ringMaps[i], "ring"))
	}
	p.ringMaps = nil
	p.fill, p.comp, p.rx, p.tx = addrRing{}, addrRing{}, descRing{}, descRing{}
	return errors.Join(errs...)
}

// FreeFrames implements port.Binding: it unmaps the UMEM, after the
// socket the kernel pinned it for.
func (p *Port) FreeFrames() error { return p.Munmap(&p.umem, "UMEM") }
