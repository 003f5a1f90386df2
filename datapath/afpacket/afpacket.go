// Package afpacket attaches the datapath to an existing Linux interface (a
// veth end, a NIC) with an AF_PACKET socket, the way OVS's netdev-linux
// "system" ports do in the userspace datapath. Frames are received through an
// mmap ring without copying and sent with sendmmsg (one system call per
// batch) or a PACKET_TX_RING.
//
// The receive ring is TPACKET_V2 by default: one slot per frame, handed over
// as soon as the frame is written, so a lone frame (a request/response
// exchange) is read at once, and a busy port still takes every ready slot
// per wakeup. TPACKET_V3 (Config.RingVersion) packs frames into blocks the
// kernel hands over when full or when the block timer fires, which costs a
// lone frame up to Config.BlockTimeout (at least 1 ms) of latency.
//
// A port is a tap (its socket bound to ETH_P_ALL: every frame, before tc)
// or, with Config.Upcall, receives only what the kernel fast path's tc
// program sends up with an upcall header (port.UpcallEthertype), which it
// strips, so the loop sees the same frames and metadata either way.
package afpacket

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

// Ring versions for Config.RingVersion, named after PACKET_VERSION.
const (
	TPacketV2 = 2 // per-frame slots: no added latency (the default)
	TPacketV3 = 3 // blocks of frames retired by a timer
)

// Config tunes a port. The zero value is a good default for a veth port.
type Config struct {
	// RingVersion selects the receive ring layout, TPacketV2 or
	// TPacketV3. 0 means TPacketV2.
	RingVersion int

	// FrameCount is the number of TPACKET_V2 frame slots (rounded up to
	// fill whole pages). Each slot holds one frame of up to the
	// interface MTU read at Open plus the Ethernet header and two VLAN
	// tags. Default 8192 (16 MiB for a 1500-byte MTU, as much as a
	// VnetHdr ring's 256 slots of 64 KiB). A smaller ring overflows while
	// the reader waits for a CPU: with 4 TCP streams on 2 CPUs, 2048
	// frames dropped 5% of them and 4096 still some; 8192 none.
	FrameCount int

	// BlockSize is the size of one TPACKET_V3 ring block in bytes, a
	// multiple of the page size. A block also bounds the largest frame the
	// ring can hold. Default 128 KiB. TPACKET_V3 only, like BlockCount
	// and BlockTimeout.
	BlockSize int
	// BlockCount is the number of blocks in the ring. Default 32 (4 MiB).
	BlockCount int
	// BlockTimeout is how long the kernel keeps a partly filled block
	// before handing it over anyway (retire_blk_tov). It is the latency a
	// lone frame can see. Default 1 ms, the smallest the kernel takes.
	BlockTimeout time.Duration
	// BusyPoll is how long a TPACKET_V2 ReadBatch keeps checking the ring
	// before it sleeps in poll(2) while frames stream in, that is when
	// the last sleep in poll(2) lasted at most BusyPoll or the last
	// busy-poll caught a frame. Under load the next frame almost always
	// lands within it, which saves the sleep and the kernel's cross-CPU
	// wakeup per frame (or per few frames) that a per-frame ring
	// otherwise costs: it keeps V2's streaming rate near V3's. Sparse
	// frames (request/response traffic, one frame per round trip) do not
	// trigger it, so an idle port sleeps at once; no frame is ever delayed
	// by it. Default 20 µs; negative turns it off.
	BusyPoll time.Duration
	// ReadTimeout makes ReadBatch return (0, nil) when nothing arrived for
	// that long, so the loop can do housekeeping. 0 blocks until frames
	// arrive or the port is closed.
	ReadTimeout time.Duration
	// NoPromisc leaves the interface out of promiscuous mode. A switch
	// port normally wants frames to every MAC, so promiscuous is default.
	NoPromisc bool
	// KeepVLANStripped leaves a VLAN tag the kernel stripped out of the
	// frame (it is still reported in port.Meta). By default it is put back
	// so the frame is exactly what was on the wire.
	KeepVLANStripped bool
	// TxBatch is the most frames one sendmmsg carries. Default 64.
	TxBatch int
	// TxRing sends through a PACKET_TX_RING (copy into shared slots, one
	// send(2) per batch) instead of sendmmsg. TxRingFrames slots, default
	// 256.
	TxRing       bool
	TxRingFrames int

	// VnetHdr exchanges a virtio_net_hdr with every frame
	// (PACKET_VNET_HDR), as OVS's userspace TSO does: the port then
	// receives TCP/UDP super-segments of up to 64 KiB with partial
	// checksums from senders with offloads on (port.Meta.Vnet), and
	// WriteBatchVnet hands such frames back to the kernel, which
	// segments them and finishes their checksums only if it must. The
	// receive ring then holds FrameCount (default 256) slots of 64 KiB.
	// Not with TxRing.
	VnetHdr bool

	// Upcall binds the socket to port.UpcallEthertype instead of
	// ETH_P_ALL: it receives only the frames the kernel fast path's tc
	// program sends up (see port.UpcallEthertype), after tc, instead of
	// tapping every frame before it. The port strips the upcall header
	// and hands out each frame and its port.Meta exactly as a tap would
	// have (KeepVLANStripped applies the same). Port.Tap turns the port
	// into a plain tap, for when the tc program cannot be attached.
	Upcall bool
}

const (
	defaultFrameCount   = 8192
	defaultVnetFrames   = 256
	defaultBlockSize    = 128 << 10
	defaultBlockCount   = 32
	defaultBlockTimeout = time.Millisecond
	defaultTxBatch      = 64
	defaultTxRingFrames = 256
	defaultBusyPoll     = 20 * time.Microsecond
	// nominalFrameSize only satisfies the ring request's consistency
	// check: TPACKET_V3 packs frames of any size into blocks.
	nominalFrameSize = 2048
	// txFullWait bounds one wait for socket buffer space in WriteBatch.
	txFullWait = 100 * time.Millisecond
)

// Port is an AF_PACKET port bound to one interface. It implements
// port.Port.
type Port struct {
	// Base: identity, counters, close and re-attach. RxMu guards the
	// receive ring, TxMu msgs/iovs and the TX ring.
	port.Base
	cfg Config

	fd int // AF_PACKET socket

	v3   bool      // cfg.RingVersion == TPacketV3: ring is used, else v2
	v2   frameRing // TPACKET_V2 receive ring
	ring ring      // TPACKET_V3 receive ring
	tx   txRing    // used when cfg.TxRing

	mmap     []byte // rx ring then tx ring, as mapped
	msgs     []mmsghdr
	iovs     []unix.Iovec
	vhdrs    [][port.VnetHdrLen]byte // TX headers, one per msgs slot (vnet only)
	txLens   []int                   // frame length of msgs[i], for byte counters
	maxFrame int

	kernelDrops uint64

	// upcall: the socket is bound to port.UpcallEthertype (Config.Upcall,
	// until Tap). The rings keep their own copy for the reader.
	upcall atomic.Bool
	// txAddr goes with every frame sent when txNamed (while upcall is
	// set): see setTxAddr. TxMu.
	txAddr  unix.RawSockaddrLinklayer
	txNamed bool
	// bound: Bind ran before (the next one re-attaches).
	bound bool
	// tapPending: Tap could not take RxMu (a reader asleep in poll(2)
	// holds it); the reader's next Fill leaves upcall mode.
	tapPending atomic.Bool
}

var (
	_ port.Port       = (*Port)(nil)
	_ port.VnetWriter = (*Port)(nil)
	_ port.Poller     = (*Port)(nil)
)

// Fill implements port.Ring: it hands out ready frames of the receive
// ring into b.Frames[n:] without blocking.
func (p *Port) Fill(b *port.Batch, n int, c *port.RxCounts) int {
	if p.tapPending.Load() {
		p.tapPending.Store(false)
		p.v2.opts.upcall, p.ring.opts.upcall = false, false
	}
	if p.v3 {
		return p.ring.fill(b, n, c)
	}
	return p.v2.fill(b, n, c)
}

// Held implements port.Ring: whether the last fill walked slots or blocks
// that still wait for release.
func (p *Port) Held() bool {
	if p.v3 {
		return p.ring.held()
	}
	return p.v2.held()
}

// Recycle implements port.Ring: walked slots or blocks go back to the
// kernel.
func (p *Port) Recycle() {
	if p.v3 {
		p.ring.release()
	} else {
		p.v2.release()
	}
}

// Ready implements port.Ring: whether the next TPACKET_V2 slot holds a
// frame (busy polling is for TPACKET_V2 only). The bridge's poll thread,
// the port's only reader, calls it without RxMu, also while the port is
// detached.
func (p *Port) Ready() bool { return p.v2.ready() }

// mmsghdr is struct mmsghdr for sendmmsg(2).
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// Open attaches to the interface called name in the caller's network
// namespace (the namespace of the OS thread, so a test may call it inside
// a namespace with runtime.LockOSThread + setns).
func Open(name string, cfg Config) (*Port, error) {
	if cfg.TxBatch <= 0 {
		cfg.TxBatch = defaultTxBatch
	}
	switch cfg.RingVersion {
	case 0, TPacketV2:
		cfg.RingVersion = TPacketV2
		if cfg.FrameCount == 0 {
			cfg.FrameCount = defaultFrameCount
			if cfg.VnetHdr {
				cfg.FrameCount = defaultVnetFrames
			}
		}
		if cfg.FrameCount < 1 {
			return nil, fmt.Errorf("afpacket %s: frame count %d must be at least 1", name, cfg.FrameCount)
		}
		if cfg.BusyPoll == 0 {
			cfg.BusyPoll = defaultBusyPoll
		}
	case TPacketV3:
		if cfg.BlockSize == 0 {
			cfg.BlockSize = defaultBlockSize
		}
		if cfg.BlockCount == 0 {
			cfg.BlockCount = defaultBlockCount
		}
		if cfg.BlockTimeout == 0 {
			cfg.BlockTimeout = defaultBlockTimeout
		}
		pageSize := unix.Getpagesize()
		if cfg.BlockSize <= 0 || cfg.BlockSize%pageSize != 0 || cfg.BlockSize%nominalFrameSize != 0 {
			return nil, fmt.Errorf("afpacket %s: block size %d must be a positive multiple of the page size %d and of %d",
				name, cfg.BlockSize, pageSize, nominalFrameSize)
		}
		if cfg.BlockCount < 1 {
			return nil, fmt.Errorf("afpacket %s: block count %d must be at least 1", name, cfg.BlockCount)
		}
	default:
		return nil, fmt.Errorf("afpacket %s: ring version %d: want %d (TPACKET_V2) or %d (TPACKET_V3)",
			name, cfg.RingVersion, TPacketV2, TPacketV3)
	}

	if cfg.VnetHdr && cfg.TxRing {
		return nil, fmt.Errorf("afpacket %s: VnetHdr does not work with TxRing", name)
	}

	p := &Port{cfg: cfg, fd: -1}
	p.upcall.Store(cfg.Upcall)
	busyPoll := cfg.BusyPoll
	if cfg.RingVersion == TPacketV3 {
		busyPoll = 0 // blocks are handed over whole: nothing to watch
	}
	if err := p.OpenRing("afpacket", name, cfg.ReadTimeout, busyPoll, p); err != nil {
		return nil, err
	}
	return p, nil
}

// Bind implements port.Binding: it sets up the socket and rings on the
// interface; on error the caller releases what was acquired.
func (p *Port) Bind() error {
	name, cfg := p.Name(), p.cfg
	pageSize := unix.Getpagesize()
	var err error
	var ifindex, mtu int
	var mac net.HardwareAddr

	// Protocol 0 receives nothing until bind, so no frame lands in the
	// plain socket queue before the ring exists.
	p.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("afpacket %s: socket: %w", name, err)
	}
	if ifindex, err = ifioctl.Index(p.fd, name); err != nil {
		return fmt.Errorf("afpacket: %w", err)
	}
	if mac, err = ifioctl.HardwareAddr(p.fd, name); err != nil {
		return fmt.Errorf("afpacket: %w", err)
	}
	if mtu, err = ifioctl.MTU(p.fd, name); err != nil {
		return fmt.Errorf("afpacket: %w", err)
	}
	p.maxFrame = port.MaxFrameLen(p.SetIdentity(ifindex, mac, mtu))

	version := unix.TPACKET_V3
	if cfg.RingVersion == TPacketV2 {
		version = unix.TPACKET_V2
	}
	if err := unix.SetsockoptInt(p.fd, unix.SOL_PACKET, unix.PACKET_VERSION, version); err != nil {
		return fmt.Errorf("afpacket %s: PACKET_VERSION TPACKET_V%d: %w", name, cfg.RingVersion, err)
	}
	// Frames this socket sends come back as PACKET_OUTGOING copies unless
	// told otherwise; the ring walk also skips them on older kernels.
	if err := unix.SetsockoptInt(p.fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil &&
		!errors.Is(err, unix.ENOPROTOOPT) {
		return fmt.Errorf("afpacket %s: PACKET_IGNORE_OUTGOING: %w", name, err)
	}
	if p.bound && p.upcall.Load() {
		// Bound again to a re-created interface: the tc program that
		// sends frames up was on the one that is gone (the bridge attaches
		// it when the port is added), so a socket bound for upcalls would
		// get nothing. The port goes on as a tap, in userspace.
		p.upcall.Store(false)
	}
	p.bound = true
	upcall := p.upcall.Load()
	rx := rxOpts{maxFrame: p.maxFrame, reinsertV: !cfg.KeepVLANStripped, vnet: cfg.VnetHdr, upcall: upcall}
	room := v2MacRoom
	if cfg.Upcall {
		// A frame sent up is longer by its header: a full-size one
		// must still fit its slot.
		room += port.UpcallHeaderMaxLen
	}
	maxRx := p.maxFrame
	if cfg.VnetHdr {
		// Before any ring: the kernel refuses it afterwards (EBUSY).
		if err := unix.SetsockoptInt(p.fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			return fmt.Errorf("afpacket %s: PACKET_VNET_HDR: %w", name, err)
		}
		room += port.VnetHdrLen
		maxRx = port.MaxGSOFrameLen
		p.Vnet = true
	}
	if cfg.TxRing {
		// Skip a malformed TX slot instead of stopping the whole ring.
		// The kernel takes this only before any ring exists.
		if err := unix.SetsockoptInt(p.fd, unix.SOL_PACKET, unix.PACKET_LOSS, 1); err != nil {
			return fmt.Errorf("afpacket %s: PACKET_LOSS: %w", name, err)
		}
	}
	var rxSize int
	if cfg.RingVersion == TPacketV2 {
		fs, bs, bn := slotGeometry(room, maxRx, cfg.FrameCount, pageSize)
		req := unix.TpacketReq{Block_size: uint32(bs), Block_nr: uint32(bn), Frame_size: uint32(fs), Frame_nr: uint32(bs / fs * bn)}
		if err := unix.SetsockoptTpacketReq(p.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
			return fmt.Errorf("afpacket %s: PACKET_RX_RING %d x %d-byte frames: %w", name, req.Frame_nr, fs, err)
		}
		rxSize = bs * bn
		p.v2 = frameRing{frameSize: fs, frameNr: int(req.Frame_nr), opts: rx,
			blockSize: bs, perBlock: bs / fs, sparse: bs%fs != 0}
	} else {
		req := unix.TpacketReq3{
			Block_size:     uint32(cfg.BlockSize),
			Block_nr:       uint32(cfg.BlockCount),
			Frame_size:     nominalFrameSize,
			Frame_nr:       uint32(cfg.BlockSize / nominalFrameSize * cfg.BlockCount),
			Retire_blk_tov: uint32(max(1, cfg.BlockTimeout.Milliseconds())),
		}
		if err := unix.SetsockoptTpacketReq3(p.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
			return fmt.Errorf("afpacket %s: PACKET_RX_RING %d x %d bytes: %w", name, cfg.BlockCount, cfg.BlockSize, err)
		}
		rxSize = cfg.BlockSize * cfg.BlockCount
		p.ring = ring{blockSize: cfg.BlockSize, blockNr: cfg.BlockCount, opts: rx}
		p.v3 = true
	}
	txSize := 0
	if cfg.TxRing {
		if cfg.TxRingFrames <= 0 {
			cfg.TxRingFrames = defaultTxRingFrames
		}
		p.tx = newTxRing(cfg.RingVersion, p.maxFrame, cfg.TxRingFrames, pageSize)
		// The TX request has the same fields in both versions; a V3 one
		// must leave the block timer and private area at zero.
		bn := p.tx.nr / p.tx.perBlock
		treq := unix.TpacketReq{Block_size: uint32(p.tx.blockSize), Block_nr: uint32(bn), Frame_size: uint32(p.tx.frameSize), Frame_nr: uint32(p.tx.nr)}
		var err error
		if cfg.RingVersion == TPacketV2 {
			err = unix.SetsockoptTpacketReq(p.fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &treq)
		} else {
			treq3 := unix.TpacketReq3{Block_size: treq.Block_size, Block_nr: treq.Block_nr, Frame_size: treq.Frame_size, Frame_nr: treq.Frame_nr}
			err = unix.SetsockoptTpacketReq3(p.fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &treq3)
		}
		if err != nil {
			return fmt.Errorf("afpacket %s: PACKET_TX_RING %d x %d bytes: %w", name, bn, p.tx.blockSize, err)
		}
		txSize = p.tx.blockSize * bn
	}
	// One mapping holds the RX ring followed by the TX ring.
	mem, err := unix.Mmap(p.fd, 0, rxSize+txSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("afpacket %s: mmap ring: %w", name, err)
	}
	if cfg.RingVersion == TPacketV2 {
		p.v2.mem = mem[:rxSize:rxSize]
	} else {
		p.ring.mem = mem[:rxSize:rxSize]
	}
	p.mmap = mem
	if cfg.TxRing {
		p.tx.mem = mem[rxSize:]
	}

	if !cfg.NoPromisc {
		// A membership, unlike IFF_PROMISC, is dropped by the kernel when
		// the socket closes, even if the process dies.
		mreq := unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_PROMISC}
		if err := unix.SetsockoptPacketMreq(p.fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
			return fmt.Errorf("afpacket %s: PACKET_MR_PROMISC: %w", name, err)
		}
	}
	if err := p.bindProtocol(upcall); err != nil {
		return err
	}

	// One iovec per frame, or two with the virtio_net_hdr in front.
	per := 1
	if p.Vnet {
		per = 2
		p.vhdrs = make([][port.VnetHdrLen]byte, cfg.TxBatch)
	}
	p.msgs = make([]mmsghdr, cfg.TxBatch)
	p.iovs = make([]unix.Iovec, per*cfg.TxBatch)
	p.txLens = make([]int, cfg.TxBatch)
	for i := range p.msgs {
		p.msgs[i].hdr.Iov = &p.iovs[per*i]
		p.msgs[i].hdr.SetIovlen(per)
		if p.Vnet {
			p.iovs[2*i].Base = &p.vhdrs[i][0]
			p.iovs[2*i].Len = port.VnetHdrLen
		}
	}
	p.setTxAddr(upcall)
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// deafProtocol is a protocol no Ethernet frame has (eth_type_trans gives
// an ethertype of at least 0x0600, ETH_P_802_3 or ETH_P_802_2): bound to
// it, the socket receives nothing. Binding protocol 0 would not do: the
// kernel reads it as "keep the bound protocol".
const deafProtocol = 0x05ff

// bindProtocol binds the socket to the port's interface and the
// protocol of its mode: port.UpcallEthertype, or every frame (ETH_P_ALL).
// Binding again is allowed with rings in place; the kernel unhooks the
// socket from the old protocol first and waits (synchronize_net) until no
// CPU still delivers a frame through that hook.
func (p *Port) bindProtocol(upcall bool) error {
	proto := uint16(unix.ETH_P_ALL)
	if upcall {
		proto = port.UpcallEthertype
	}
	return p.bind(proto)
}

func (p *Port) bind(proto uint16) error {
	sll := unix.SockaddrLinklayer{Protocol: htons(proto), Ifindex: p.Ifindex()}
	if err := unix.Bind(p.fd, &sll); err != nil {
		return p.Errorf("bind ifindex %d protocol %#04x: %w", sll.Ifindex, proto, err)
	}
	return nil
}

// setTxAddr sets the address every frame is sent to. A socket bound to
// port.UpcallEthertype must name one: without an address packet_snd (and
// tpacket_snd for the TX ring) takes skb->protocol from the bound
// protocol (po->num), so every frame would leave as 0x88b5, and a GSO
// super-segment with a virtio_net_hdr could not be segmented (no GSO
// handler for that protocol). With sll_protocol ETH_P_ALL, both set
// skb->protocol to it and packet_parse_headers then reads the real one
// from the frame's Ethernet header, as for a socket bound to ETH_P_ALL;
// the frame goes to the device sll_ifindex names, looked up per send
// (dev_get_by_index) instead of the socket's cached one. A tap sends
// without: the kernel already does what the address would say. The
// caller holds TxMu (or owns the port, in Bind).
func (p *Port) setTxAddr(upcall bool) {
	p.txAddr = unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: htons(unix.ETH_P_ALL), Ifindex: int32(p.Ifindex())}
	p.txNamed = upcall
	for i := range p.msgs {
		h := &p.msgs[i].hdr
		h.Name, h.Namelen = nil, 0
		if upcall {
			h.Name, h.Namelen = (*byte)(unsafe.Pointer(&p.txAddr)), unix.SizeofSockaddrLinklayer
		}
	}
}

// Upcall reports whether the socket is bound to port.UpcallEthertype
// (Config.Upcall and no Tap since).
func (p *Port) Upcall() bool { return p.upcall.Load() }

// Tap turns a port opened with Config.Upcall into a plain tap: its socket
// is bound to ETH_P_ALL on the same interface and receives every frame
// before tc, as without Config.Upcall; for when the kernel fast path's tc
// program cannot be attached. It stays a tap across re-attachment (as
// does a port in upcall mode: see Bind).
//
// Frames already in the ring from upcall mode still carry their header
// and are decoded: the socket is first bound to a protocol that receives
// nothing (the kernel waits until no frame is on its way into the ring),
// the frames in the ring then are counted, and the reader decodes that
// many more frames whose sll_protocol is 0x88b5 before it treats the rest
// as a tap's. A frame arriving while the socket is deaf (microseconds) is
// not received. The count needs the reader's lock (RxMu); a ReadBatch
// asleep in poll(2) holds it as long as no frame comes, which also means
// the ring holds none to decode: after tapRxWait Tap leaves the switch
// to the reader's next Fill. No write runs meanwhile (TxMu).
func (p *Port) Tap() error {
	p.TxMu.Lock()
	defer p.TxMu.Unlock()
	if !p.upcall.Load() {
		return nil
	}
	if p.Closed() {
		return p.Errorf("tap: %w", port.ErrClosed)
	}
	p.StatMu.Lock() // the socket, as Stats and Bind see it
	defer p.StatMu.Unlock()
	if p.fd < 0 {
		// Detached: the next Bind binds ETH_P_ALL.
		p.upcall.Store(false)
		return nil
	}
	if err := p.bind(deafProtocol); err != nil {
		return err
	}
	// TryLock only: the reader takes RxMu before TxMu (re-attachment).
	if p.tryLockRx(tapRxWait) {
		if p.v3 {
			p.ring.opts.upcallLeft = p.ring.framesLeft()
			p.ring.opts.upcall = false
		} else {
			p.v2.opts.upcallLeft = p.v2.framesLeft()
			p.v2.opts.upcall = false
		}
		p.RxMu.Unlock()
	} else {
		p.tapPending.Store(true)
	}
	p.upcall.Store(false)
	p.setTxAddr(false)
	return p.bindProtocol(false)
}

// tapRxWait bounds how long Tap tries to take the reader's lock: far
// longer than a Fill, which never blocks.
const tapRxWait = 20 * time.Millisecond

// tryLockRx takes RxMu if it comes free within d.
func (p *Port) tryLockRx(d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(time.Millisecond) {
		if p.RxMu.TryLock() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// ReadBatch implements port.Port (port.Base.ReadRing). Frames point into
// the ring.
func (p *Port) ReadBatch(b *port.Batch) (int, error) { return p.ReadRing(b) }

// TryReadBatch implements port.Poller (port.Base.TryReadRing): the frames
// ready in the ring now, without waiting.
func (p *Port) TryReadBatch(b *port.Batch) (int, error) { return p.TryReadRing(b) }

// PollFd implements port.Poller: the socket, readable when the ring has
// frames.
func (p *Port) PollFd() int { return p.fd }

// RxRingFrames is the number of frame slots of a TPACKET_V2 receive ring
// (Config.FrameCount, rounded up to whole pages); 0 for TPACKET_V3.
func (p *Port) RxRingFrames() int {
	if p.v3 {
		return 0
	}
	return p.v2.frameNr
}

// Transmit implements port.Transmitter (WriteBatch, WriteBatchVnet) with
// sendmmsg(2) on the bound socket, or through the TX ring when
// Config.TxRing is set. On a port with VnetHdr every frame goes with its
// virtio_net_hdr, an empty one for WriteBatch.
func (p *Port) Transmit(frames [][]byte, hdrs []port.VnetHdr) (int, error) {
	if p.tx.mem != nil {
		return p.writeRing(frames)
	}
	per := 1
	if p.Vnet {
		per = 2
	}
	done := 0
	for done < len(frames) {
		// Gather up to TxBatch valid frames; bad lengths are dropped here.
		k := 0
		var dropped uint64
		for done < len(frames) && k < len(p.msgs) {
			f := frames[done]
			var h port.VnetHdr
			if hdrs != nil {
				h = hdrs[done]
			}
			done++
			if !port.LengthOK(len(f), h.MaxLen(p.maxFrame)) {
				dropped++
				continue
			}
			if p.Vnet {
				h.Encode(p.vhdrs[k][:])
			}
			iov := &p.iovs[per*k+per-1]
			iov.Base = &f[0]
			iov.Len = uint64(len(f))
			p.txLens[k] = len(f)
			k++
		}
		if dropped != 0 {
			p.Ctr.TxDropped.Add(dropped)
		}
		sent, err := p.sendAll(k)
		if err != nil {
			// done counted frames up to the end of this chunk; the ones
			// from sent on were not transmitted.
			p.clearIovs(k)
			return done - (k - sent), err
		}
	}
	p.clearIovs(len(p.msgs))
	return done, nil
}

// clearIovs drops the references to the caller's frames so they can be
// garbage collected.
func (p *Port) clearIovs(k int) {
	per := 1
	if p.Vnet {
		per = 2 // the header iovecs point at p.vhdrs: keep them
	}
	for i := range min(k, len(p.msgs)) {
		p.iovs[per*i+per-1].Base = nil
	}
}

// sendAll transmits msgs[:k], waiting for buffer space if needed. Frames
// the kernel refuses individually (ENOBUFS, EMSGSIZE) are dropped and
// counted; other errors stop the batch. It returns how many of the k
// frames were handled.
func (p *Port) sendAll(k int) (int, error) {
	i := 0
	var pkts, bytes uint64
	defer func() {
		p.Ctr.TxPackets.Add(pkts)
		p.Ctr.TxBytes.Add(bytes)
	}()
	for i < k {
		// A raw system call: with MSG_DONTWAIT it never sleeps, so the
		// runtime need not know about it. Announcing it (Syscall6) lets
		// sysmon retake the P of a long one (delivering a batch into the
		// receivers' stacks takes tens of µs) and makes every return wake
		// sysmon from its deep sleep into 20 µs polling.
		r, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(p.fd),
			uintptr(unsafe.Pointer(&p.msgs[i])), uintptr(k-i), unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			for j := i; j < i+int(r); j++ {
				bytes += uint64(p.txLens[j])
			}
			pkts += uint64(r)
			i += int(r)
		case unix.EINTR:
		case unix.EAGAIN:
			if err := p.waitWritable(); err != nil {
				return i, err
			}
		case unix.ENOBUFS, unix.EMSGSIZE:
			// This frame cannot go now (no qdisc room, or longer than the
			// device takes); drop it like a full NIC queue would.
			p.Ctr.TxDropped.Add(1)
			i++
		default:
			p.Ctr.TxErrors.Add(uint64(k - i))
			return i, p.Errorf("sendmmsg: %w", errno)
		}
	}
	return i, nil
}

func (p *Port) waitWritable() error {
	fds := [2]unix.PollFd{
		{Fd: int32(p.fd), Events: unix.POLLOUT},
		{Fd: int32(p.WakeFd), Events: unix.POLLIN},
	}
	for {
		_, err := unix.Poll(fds[:], int(txFullWait.Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return p.Errorf("poll for write: %w", err)
		}
		if fds[1].Revents != 0 || p.Closed() {
			return p.Errorf("write: %w", port.ErrClosed)
		}
		return nil
	}
}

// Stats implements port.Port. RxDropped comes from PACKET_STATISTICS,
// which the kernel resets on every read, so it is accumulated here.
func (p *Port) Stats() port.Stats {
	return p.KernelStats(p.pollKernelStats, func(s *port.Stats) { s.RxDropped = p.kernelDrops })
}

// pollKernelStats folds the kernel's drop counter into kernelDrops. The
// caller holds statMu. The kernel answers with struct tpacket_stats for
// TPACKET_V2 and struct tpacket_stats_v3 for TPACKET_V3.
func (p *Port) pollKernelStats() {
	if p.cfg.RingVersion == TPacketV2 {
		var st unix.TpacketStats
		if getsockoptStats(p.fd, unsafe.Pointer(&st), unsafe.Sizeof(st)) {
			p.kernelDrops += uint64(st.Drops)
		}
		return
	}
	var st unix.TpacketStatsV3
	if getsockoptStats(p.fd, unsafe.Pointer(&st), unsafe.Sizeof(st)) {
		p.kernelDrops += uint64(st.Drops)
	}
}

// getsockoptStats reads PACKET_STATISTICS into the size bytes at st
// without allocating; it reports whether the kernel answered.
func getsockoptStats(fd int, st unsafe.Pointer, size uintptr) bool {
	l := uint32(size)
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS,
		uintptr(st), uintptr(unsafe.Pointer(&l)), 0)
	return errno == 0
}

// Close implements port.Port (port.Base.Close): the socket goes at once,
// the ring once the loop has given back the frames it holds.
func (p *Port) Close() error { return p.CloseRing() }

// CloseSockets implements port.Binding: it closes the socket, after a
// last look at its drop counter.
func (p *Port) CloseSockets() error {
	p.StatMu.Lock()
	defer p.StatMu.Unlock()
	if p.fd < 0 {
		return nil
	}
	p.pollKernelStats()
	// The ring's mapping keeps the socket alive until freeRing: make it
	// deaf now (no promiscuous membership, no protocol bound).
	if !p.cfg.NoPromisc {
		mreq := unix.PacketMreq{Ifindex: int32(p.Ifindex()), Type: unix.PACKET_MR_PROMISC}
		_ = unix.SetsockoptPacketMreq(p.fd, unix.SOL_PACKET, unix.PACKET_DROP_MEMBERSHIP, &mreq)
	}
	_ = unix.Bind(p.fd, &unix.SockaddrLinklayer{Protocol: 0, Ifindex: p.Ifindex()})
	return p.CloseFd(&p.fd, "socket")
}

// FreeFrames implements port.Binding: it unmaps the rings.
func (p *Port) FreeFrames() error {
	p.v2.mem, p.ring.mem, p.tx.mem = nil, nil, nil
	return p.Munmap(&p.mmap, "ring")
}
