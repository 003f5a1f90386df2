// Package geneve is the Geneve vport of the datapath: a port.Port that
// carries inner Ethernet frames in Geneve over the kernel's UDP stack
// (recvmmsg on a UDP socket, sendmmsg on a raw IPv4 socket), with the
// header codec and option mapping of package tunnel. OVS's counterpart is
// the flow-based geneve netdev of the userspace datapath.
package geneve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/tunnel"
	"golang.org/x/sys/unix"
)

// Config describes a Geneve vport, in the terms of the OVS Interface
// options of type=geneve (ovs-vswitchd.conf.db(5)).
type Config struct {
	// Name is the port name (e.g. "antrea-tun0"); default
	// "genev_sys_<Port>", the kernel vport's name.
	Name string
	// LocalIP is options:local_ip, the underlay address packets are sent
	// from and received on. Unset: receive on every address and send from
	// the source address of the kernel's route to each destination.
	LocalIP netip.Addr
	// Port is options:dst_port, the UDP port listened on and sent to;
	// 0 means 6081.
	Port uint16
	// RemoteIP is options:remote_ip=IP, the fixed peer. Unset means
	// remote_ip=flow: each packet goes to the tun_dst of its flow key.
	RemoteIP netip.Addr
	// Csum is options:csum=true: outer UDP checksums are computed on
	// transmit. OVS's default (false) sends 0, "no checksum" for IPv4.
	Csum bool
	// UnderlayMTU is the IP MTU of the underlay path. 0: the MTU of the
	// interface that holds LocalIP, or 1500.
	UnderlayMTU int
	// TTL of the outer IPv4 header; 0 means 64 (OVS's default).
	TTL uint8
	// ReadTimeout makes ReadBatch return (0, nil) when nothing arrived for
	// that long; 0 blocks until a datagram arrives or the port is closed.
	ReadTimeout time.Duration
	// BatchSize is the most datagrams one recvmmsg/sendmmsg moves; 0 means 64.
	BatchSize int
	// TLV is the bridge's TLV map for tun_metadataN (nil: none). Update it
	// with SetTLVMap after add-tlv-map/del-tlv-map.
	TLV *flowtable.TLVMap
}

// Stats are the port counters plus the tunnel-specific reasons for drops.
type Stats struct {
	port.Stats
	// RxHeaderErrors are datagrams dropped for a bad Geneve header (also
	// in RxErrors): truncated, version != 0, non-Ethernet payload, bad
	// option lengths, unknown critical options.
	RxHeaderErrors uint64
	// TxMTUDrops are frames that did not fit the underlay MTU once
	// encapsulated (also in TxDropped).
	TxMTUDrops uint64
	// TxNoDst are frames dropped because remote_ip=flow and tun_dst was
	// 0 (also in TxDropped).
	TxNoDst uint64
}

// Port is a Geneve vport: frames written to it leave encapsulated in
// UDP/IPv4 towards tun_dst (or the fixed remote), datagrams received on the
// Geneve UDP port are decapsulated into frames plus Metadata.
//
// Receive uses a UDP socket bound to LocalIP:Port (the kernel validates the
// outer IP and UDP headers and checksums, reassembles fragments and answers
// nothing else on the port). Transmit uses a send-only raw IPv4 socket
// (IPPROTO_RAW, which never receives), because the UDP source port must carry
// the inner flow's hash for ECMP/RSS, as OVS and the kernel's geneve driver
// do, and a bound UDP socket can only send from its own port. Both are
// batched with recvmmsg/sendmmsg.
//
// It implements port.Port; WriteBatch sends with a zero key (VNI 0, no
// options) and so needs a fixed RemoteIP. The pipeline uses WriteTunnel.
type Port struct {
	port.Base // name, counters, close; frames are in the batch's buffers

	local    [4]byte
	dstPort  uint16
	remote   [4]byte // zero: remote_ip=flow
	csum     bool
	ttl      uint8
	mtu      int // underlay IP MTU
	rxBufLen int
	batch    int

	rxFd, txFd int
	opts       atomic.Pointer[tunnel.OptionMap]

	// Guarded by RxMu.
	rxHdrs   []unix.Mmsghdr
	rxIov    []unix.Iovec
	rxNames  []unix.RawSockaddrInet4
	rxCtl    [][rxCtlLen]byte
	rxMD     []tunnel.Metadata
	rxOvfl   uint32 // last SO_RXQ_OVFL count
	rxOvflOK bool

	// Guarded by TxMu.
	txHdrs  []unix.Mmsghdr
	txIov   []unix.Iovec
	txNames []unix.RawSockaddrInet4
	txBufs  [][]byte
	txFrame []int // frame index of each prepared slot
	txInner []int // inner frame length of each prepared slot

	// routeFd is a UDP socket connected to a destination to learn the
	// kernel's source address for it (csum without local_ip); srcs caches
	// the answers. Guarded by TxMu.
	routeFd int
	srcs    map[[4]byte]routeSrc

	rxHeaderErrors, txMTUDrops, txNoDst atomic.Uint64
}

// routeSrc is the source address the kernel's routing picked for one
// destination, looked up again after srcTTL (routes and addresses change).
type routeSrc struct {
	src   [4]byte // zero: no route at the last lookup
	until int64   // unix nanoseconds
}

// srcTTL bounds how long a looked-up source address is used.
const srcTTL = time.Second

var _ port.Port = (*Port)(nil)

// rxCtlLen fits an IP_PKTINFO and an SO_RXQ_OVFL control message.
const rxCtlLen = 64

// Open creates the port's sockets in the caller's network namespace (that
// of the OS thread).
func Open(cfg Config) (*Port, error) {
	p := &Port{rxFd: -1, txFd: -1, routeFd: -1}
	if err := p.open(cfg); err != nil {
		p.Discard(p.release)
		return nil, err
	}
	return p, nil
}

func (p *Port) open(cfg Config) error {
	p.dstPort = cfg.Port
	if p.dstPort == 0 {
		p.dstPort = tunnel.DefaultPort
	}
	name := cfg.Name
	if name == "" {
		name = fmt.Sprintf("genev_sys_%d", p.dstPort)
	}
	p.Init("tunnel", name, cfg.ReadTimeout)
	if cfg.LocalIP.IsValid() {
		if !cfg.LocalIP.Is4() {
			return p.Errorf("local_ip %s: only IPv4 underlays are supported", cfg.LocalIP)
		}
		p.local = cfg.LocalIP.As4()
	}
	if cfg.RemoteIP.IsValid() {
		if !cfg.RemoteIP.Is4() || cfg.RemoteIP.IsUnspecified() {
			return p.Errorf("remote_ip %s: want a unicast IPv4 address", cfg.RemoteIP)
		}
		p.remote = cfg.RemoteIP.As4()
	}
	p.csum = cfg.Csum
	p.ttl = cfg.TTL
	if p.ttl == 0 {
		p.ttl = 64
	}
	p.batch = cfg.BatchSize
	if p.batch <= 0 {
		p.batch = 64
	}
	p.mtu = cfg.UnderlayMTU
	if p.mtu == 0 {
		p.mtu = interfaceMTU(cfg.LocalIP)
	}
	if p.mtu < tunnel.OuterOverhead+tunnel.EthHeaderLen {
		return p.Errorf("underlay MTU %d cannot carry an Ethernet frame", p.mtu)
	}
	// The largest UDP payload that fits the MTU, plus one byte so that a
	// longer (reassembled) datagram shows up as MSG_TRUNC.
	p.rxBufLen = p.mtu - tunnel.IPv4HeaderLen - tunnel.UDPHeaderLen + 1
	om, err := tunnel.NewOptionMap(cfg.TLV)
	if err != nil {
		return p.Errorf("%w", err)
	}
	p.opts.Store(om)

	if err := p.openRx(); err != nil {
		return err
	}
	if err := p.openTx(); err != nil {
		return err
	}
	if p.csum && p.local == [4]byte{} {
		// The UDP checksum covers the source address, which the kernel
		// would otherwise only fill in after we computed it (OVN's
		// tunnels: csum=true, no local_ip).
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
		if err != nil {
			return p.Errorf("route lookup socket: %w", err)
		}
		p.routeFd = fd
		p.srcs = map[[4]byte]routeSrc{}
	}
	if err := p.OpenWake(p.rxFd); err != nil {
		return err
	}

	p.rxHdrs = make([]unix.Mmsghdr, p.batch)
	p.rxIov = make([]unix.Iovec, p.batch)
	p.rxNames = make([]unix.RawSockaddrInet4, p.batch)
	p.rxCtl = make([][rxCtlLen]byte, p.batch)
	p.rxMD = make([]tunnel.Metadata, p.batch)
	p.txHdrs = make([]unix.Mmsghdr, p.batch)
	p.txIov = make([]unix.Iovec, p.batch)
	p.txNames = make([]unix.RawSockaddrInet4, p.batch)
	p.txBufs = make([][]byte, p.batch)
	p.txFrame = make([]int, p.batch)
	p.txInner = make([]int, p.batch)
	for i := range p.txBufs {
		p.txBufs[i] = make([]byte, p.mtu)
		p.txIov[i].Base = &p.txBufs[i][0]
		p.txNames[i].Family = unix.AF_INET
		h := &p.txHdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&p.txNames[i]))
		h.Namelen = unix.SizeofSockaddrInet4
		h.Iov = &p.txIov[i]
		h.SetIovlen(1)
	}
	return nil
}

// interfaceMTU returns the MTU of the interface that has addr, or 1500.
func interfaceMTU(addr netip.Addr) int {
	if !addr.IsValid() || addr.IsUnspecified() {
		return 1500
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return 1500
	}
	for _, ifi := range ifs {
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == addr {
					return ifi.MTU
				}
			}
		}
	}
	return 1500
}

func (p *Port) openRx() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return p.Errorf("UDP socket: %w", err)
	}
	p.rxFd = fd
	// IP_PKTINFO tells the outer destination (tun_dst) when bound to any
	// address; SO_RXQ_OVFL reports datagrams the socket queue dropped.
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_PKTINFO, 1); err != nil {
		return p.Errorf("IP_PKTINFO: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1); err != nil {
		return p.Errorf("SO_RXQ_OVFL: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: p.local, Port: int(p.dstPort)}); err != nil {
		return p.Errorf("bind %s:%d: %w", netip.AddrFrom4(p.local), p.dstPort, err)
	}
	return nil
}

func (p *Port) openTx() error {
	// IPPROTO_RAW implies IP_HDRINCL: we write the outer IPv4 header; the
	// kernel fills its checksum, total length, and the ID and source
	// address when we leave them 0.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return p.Errorf("raw IPv4 socket: %w", err)
	}
	p.txFd = fd
	return nil
}

// Name returns the port name.

// Ifindex is 0: the vport is not a kernel interface.
func (p *Port) Ifindex() int { return 0 }

// HardwareAddr is nil: a Geneve vport has no MAC.
func (p *Port) HardwareAddr() net.HardwareAddr { return nil }

// MTU returns the inner L3 MTU without options: the underlay MTU minus
// outer IPv4, UDP, Geneve and the inner Ethernet header (1450 for 1500).
func (p *Port) MTU() int { return p.mtu - tunnel.OuterOverhead - tunnel.EthHeaderLen }

// UnderlayMTU returns the underlay IP MTU the port checks against.
func (p *Port) UnderlayMTU() int { return p.mtu }

// Outer is the part of the port's configuration that shapes the outer
// headers it sends (the kernel fast path builds the same ones).
type Outer struct {
	Local, Remote [4]byte // zero: unset (remote_ip=flow)
	DstPort       uint16
	Csum          bool
	TTL           uint8
	MTU           int // underlay IP MTU
}

// Outer returns the port's outer header configuration.
func (p *Port) Outer() Outer {
	return Outer{Local: p.local, Remote: p.remote, DstPort: p.dstPort, Csum: p.csum, TTL: p.ttl, MTU: p.mtu}
}

// SetTLVMap recompiles the option map after the bridge's TLV map changed.
// Frames in flight finish with the old map.
func (p *Port) SetTLVMap(tlv *flowtable.TLVMap) error {
	om, err := tunnel.NewOptionMap(tlv)
	if err != nil {
		return p.Errorf("%w", err)
	}
	p.opts.Store(om)
	return nil
}

// OptionMap returns the compiled TLV map the port uses.
func (p *Port) OptionMap() *tunnel.OptionMap { return p.opts.Load() }

// FillKey writes md into k with the port's current TLV map (see FillKey).
func (p *Port) FillKey(md *tunnel.Metadata, k *flowtable.Key) error {
	return tunnel.FillKey(md, k, p.opts.Load())
}

// Metadata returns the tunnel metadata of frame i of the last ReadBatch.
func (p *Port) Metadata(i int) *tunnel.Metadata { return &p.rxMD[i] }

// ReadBatch implements port.Port; the tunnel metadata of frame i is
// Metadata(i) until the next read.
func (p *Port) ReadBatch(b *port.Batch) (int, error) {
	return p.ReadTunnelBatch(b, p.rxMD)
}

// ReadTunnelBatch is ReadBatch with the metadata of frame i in md[i]. It
// reads at most min(b.Cap(), len(md), BatchSize) datagrams. The inner frames
// and md's Options live in b's buffers until b is read into again.
// Datagrams with a bad Geneve header, option lengths that differ from the
// TLV map, or unknown critical options are dropped and counted.
func (p *Port) ReadTunnelBatch(b *port.Batch, md []tunnel.Metadata) (int, error) {
	return p.readTunnel(b, md, true)
}

// TryReadBatch implements port.Poller: the datagrams waiting now, without
// blocking, so a bridge's PMD thread can serve the tunnel port too.
func (p *Port) TryReadBatch(b *port.Batch) (int, error) {
	return p.readTunnel(b, p.rxMD, false)
}

// PollFd implements port.Poller: the UDP socket.
func (p *Port) PollFd() int { return p.rxFd }

func (p *Port) readTunnel(b *port.Batch, md []tunnel.Metadata, block bool) (int, error) {
	p.RxMu.Lock()
	defer p.RxMu.Unlock()
	if _, err := p.StartRead(b); err != nil {
		return 0, err
	}
	want := min(len(b.Frames), len(md), p.batch)
	if want == 0 {
		return 0, nil
	}
	for i := 0; i < want; i++ {
		buf := b.Buffer(i, p.rxBufLen)
		p.rxIov[i].Base = &buf[0]
		p.rxIov[i].SetLen(len(buf))
		h := &p.rxHdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&p.rxNames[i]))
		h.Namelen = unix.SizeofSockaddrInet4
		h.Iov = &p.rxIov[i]
		h.SetIovlen(1)
		h.Control = &p.rxCtl[i][0]
		h.SetControllen(rxCtlLen)
		h.Flags = 0
		p.rxHdrs[i].Len = 0
	}
	for {
		// Raw: with MSG_DONTWAIT it never sleeps (see port.RawRead).
		r, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(p.rxFd), uintptr(unsafe.Pointer(&p.rxHdrs[0])), uintptr(want), unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			return p.Lend(p.decapBatch(b, md, int(r))), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if !block {
				return 0, nil
			}
			ready, err := p.WaitReady()
			if err != nil || !ready {
				return 0, err
			}
		default:
			p.Ctr.RxErrors.Add(1)
			return 0, p.Errorf("recvmmsg: %w", e)
		}
	}
}

// decapBatch turns the got received datagrams into frames, dropping and
// counting the bad ones, and returns how many frames it produced.
func (p *Port) decapBatch(b *port.Batch, md []tunnel.Metadata, got int) int {
	om := p.opts.Load()
	n := 0
	var c port.RxCounts
	var hdrErrs uint64
	for i := 0; i < got; i++ {
		h := &p.rxHdrs[i]
		dst, ifindex := p.parseControl(&h.Hdr, &p.rxCtl[i])
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			c.LengthErrors++
			continue
		}
		m := &md[n]
		inner, err := tunnel.Decap(b.Buffer(i, p.rxBufLen)[:h.Len], m)
		if err == nil {
			err = om.Check(m)
		}
		if err != nil {
			hdrErrs++
			continue
		}
		name := &p.rxNames[i]
		m.Src = binary.BigEndian.Uint32(name.Addr[:])
		m.SrcPort = ntohs(name.Port)
		m.Dst = binary.BigEndian.Uint32(dst[:])
		m.DstPort = p.dstPort
		m.Ifindex = ifindex
		b.Frames[n] = inner
		b.Meta[n] = port.Meta{}
		n++
		c.Packets++
		c.Bytes += uint64(len(inner))
	}
	c.Errors = c.LengthErrors + hdrErrs
	if hdrErrs != 0 {
		p.rxHeaderErrors.Add(hdrErrs)
	}
	p.CountRx(&c)
	return n
}

// parseControl walks the control messages of one datagram: it returns the
// outer destination address (IP_PKTINFO; the bound address otherwise) and
// the interface it arrived on (IP_PKTINFO; 0 otherwise), and records the
// socket's drop counter (SO_RXQ_OVFL).
func (p *Port) parseControl(h *unix.Msghdr, ctl *[rxCtlLen]byte) (dst [4]byte, ifindex int) {
	dst = p.local
	c := ctl[:min(int(h.Controllen), rxCtlLen)]
	for len(c) >= unix.SizeofCmsghdr {
		cm := (*unix.Cmsghdr)(unsafe.Pointer(&c[0]))
		l := int(cm.Len)
		if l < unix.SizeofCmsghdr || l > len(c) {
			break
		}
		data := c[unix.CmsgLen(0):l]
		switch {
		case cm.Level == unix.IPPROTO_IP && cm.Type == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
			info := (*unix.Inet4Pktinfo)(unsafe.Pointer(&data[0]))
			dst, ifindex = info.Addr, int(info.Ifindex)
		case cm.Level == unix.SOL_SOCKET && cm.Type == unix.SO_RXQ_OVFL && len(data) >= 4:
			ovfl := binary.NativeEndian.Uint32(data)
			if p.rxOvflOK {
				p.Ctr.RxDropped.Add(uint64(ovfl - p.rxOvfl))
			} else {
				p.Ctr.RxDropped.Add(uint64(ovfl))
			}
			p.rxOvfl, p.rxOvflOK = ovfl, true
		}
		c = c[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(c)):]
	}
	return dst, ifindex
}

// WriteBatch implements port.Port: it sends every frame with VNI 0 and no
// options to the fixed remote_ip (with remote_ip=flow every frame is dropped
// for lack of a destination; use WriteTunnel).
func (p *Port) WriteBatch(frames [][]byte) (int, error) {
	return p.WriteTunnel(frames, nil)
}

var zeroKey flowtable.Key

// WriteTunnel encapsulates frames[i] for flow key keys[i] (tun_id, tun_dst,
// tun_flags, tun_metadataN; a nil keys or keys[i] means a zero key) and
// sends them in order. The destination is the fixed remote_ip or tun_dst.
// Frames that are runts, do not fit the underlay MTU once encapsulated, or
// have no destination are skipped and counted in TxDropped; they still count
// as handled in n, so n < len(frames) means a real error that err describes.
func (p *Port) WriteTunnel(frames [][]byte, keys []*flowtable.Key) (int, error) {
	p.TxMu.Lock()
	defer p.TxMu.Unlock()
	if ok, n, err := p.StartWrite(len(frames)); !ok {
		return n, err
	}
	if keys != nil && len(keys) != len(frames) {
		return 0, p.Errorf("write: %d frames but %d keys", len(frames), len(keys))
	}
	om := p.opts.Load()
	i := 0
	for i < len(frames) {
		// Encapsulate up to one batch of frames into the send slots.
		slots := 0
		for ; i < len(frames) && slots < p.batch; i++ {
			k := &zeroKey
			if keys != nil && keys[i] != nil {
				k = keys[i]
			}
			if p.prepare(slots, frames[i], k, om) {
				p.txFrame[slots] = i
				slots++
			}
		}
		if n, err := p.send(slots); err != nil {
			return n, err
		}
	}
	return len(frames), nil
}

// prepare builds the outer IPv4 + UDP + Geneve packet for one frame into
// send slot s; false means the frame was dropped (and counted).
func (p *Port) prepare(s int, frame []byte, k *flowtable.Key, om *tunnel.OptionMap) bool {
	dst := p.remote
	if dst == [4]byte{} {
		binary.BigEndian.PutUint32(dst[:], k.TunDst())
		if dst == [4]byte{} {
			p.txNoDst.Add(1)
			p.Ctr.TxDropped.Add(1)
			return false
		}
	}
	optLen, err := om.OptionsLen(k)
	if err != nil || len(frame) < tunnel.EthHeaderLen {
		p.Ctr.TxDropped.Add(1)
		return false
	}
	total := tunnel.OuterOverhead + optLen + len(frame)
	if total > p.mtu {
		p.txMTUDrops.Add(1)
		p.Ctr.TxDropped.Add(1)
		return false
	}
	buf := p.txBufs[s]
	pkt, sport, err := tunnel.Encap(buf[tunnel.IPv4HeaderLen+tunnel.UDPHeaderLen:tunnel.IPv4HeaderLen+tunnel.UDPHeaderLen], frame, k, om)
	if err != nil {
		p.Ctr.TxDropped.Add(1)
		return false
	}
	udpLen := tunnel.UDPHeaderLen + len(pkt)
	ip := buf[:tunnel.IPv4HeaderLen]
	ip[0] = 0x45 // version 4, 5 words
	ip[1] = 0    // TOS
	binary.BigEndian.PutUint16(ip[2:], uint16(tunnel.IPv4HeaderLen+udpLen))
	binary.BigEndian.PutUint16(ip[4:], 0)      // ID: the kernel picks one
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF, as OVS's default df_default=true
	ip[8] = p.ttl
	ip[9] = unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(ip[10:], 0) // the kernel computes it
	src := p.local                         // 0: the kernel picks the route's source
	if p.routeFd >= 0 {
		src = p.sourceFor(dst)
	}
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	udp := buf[tunnel.IPv4HeaderLen : tunnel.IPv4HeaderLen+udpLen]
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], p.dstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen))
	binary.BigEndian.PutUint16(udp[6:], 0)
	if p.csum && src != [4]byte{} {
		binary.BigEndian.PutUint16(udp[6:], udpChecksum(src, dst, udp))
	}
	p.txIov[s].SetLen(tunnel.IPv4HeaderLen + udpLen)
	p.txNames[s].Addr = dst
	p.txInner[s] = len(frame)
	return true
}

// sourceFor returns the source address of the kernel's route to dst, as
// the raw socket would fill it in; zero when there is no route (the
// datagram then leaves without a checksum, if the kernel can send it).
// Lookups are cached for srcTTL, so the packet path allocates only when
// one expires.
func (p *Port) sourceFor(dst [4]byte) [4]byte {
	now := time.Now().UnixNano()
	if r, ok := p.srcs[dst]; ok && now < r.until {
		return r.src
	}
	var src [4]byte
	if err := unix.Connect(p.routeFd, &unix.SockaddrInet4{Addr: dst, Port: int(p.dstPort)}); err == nil {
		if sa, err := unix.Getsockname(p.routeFd); err == nil {
			if in4, ok := sa.(*unix.SockaddrInet4); ok {
				src = in4.Addr
			}
		}
	}
	if len(p.srcs) > 4096 {
		clear(p.srcs) // remote_ip=flow towards very many peers
	}
	p.srcs[dst] = routeSrc{src: src, until: now + int64(srcTTL)}
	return src
}

// send transmits the prepared slots [0, slots), retrying after partial
// sends. Per-message errors the kernel reports for one datagram (no route,
// no buffer space, too big, filtered) drop that datagram; any other error
// is returned with the index of the first frame not handled.
func (p *Port) send(slots int) (int, error) {
	done := 0
	for done < slots {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(p.txFd), uintptr(unsafe.Pointer(&p.txHdrs[done])), uintptr(slots-done), 0, 0, 0)
		switch e {
		case 0:
			for j := done; j < done+int(r); j++ {
				p.Ctr.TxPackets.Add(1)
				p.Ctr.TxBytes.Add(uint64(p.txInner[j]))
			}
			done += int(r)
		case unix.EINTR:
		case unix.ENOBUFS, unix.EAGAIN, unix.ENETUNREACH, unix.EHOSTUNREACH, unix.EMSGSIZE, unix.EPERM, unix.EINVAL:
			p.Ctr.TxDropped.Add(1)
			done++
		default:
			p.Ctr.TxErrors.Add(uint64(slots - done))
			return p.txFrame[done], p.Errorf("sendmmsg to %s: %w", netip.AddrFrom4(p.txNames[done].Addr), e)
		}
	}
	return 0, nil
}

// udpChecksum computes the UDP checksum over the IPv4 pseudo-header and
// the UDP datagram (whose checksum field is 0); 0 is sent as 0xffff.
func udpChecksum(src, dst [4]byte, udp []byte) uint16 {
	s := uint64(binary.BigEndian.Uint16(src[:])) + uint64(binary.BigEndian.Uint16(src[2:])) +
		uint64(binary.BigEndian.Uint16(dst[:])) + uint64(binary.BigEndian.Uint16(dst[2:])) +
		unix.IPPROTO_UDP + uint64(len(udp))
	b := udp
	for len(b) >= 8 {
		v := binary.BigEndian.Uint64(b)
		s += v>>48 + v>>32&0xffff + v>>16&0xffff + v&0xffff
		b = b[8:]
	}
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	c := ^uint16(s)
	if c == 0 {
		c = 0xffff
	}
	return c
}

func ntohs(v uint16) uint16 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], v)
	return binary.BigEndian.Uint16(b[:])
}

// Stats implements port.Port.
func (p *Port) Stats() port.Stats { return p.TunnelStats().Stats }

// TunnelStats returns the port counters with the tunnel drop reasons.
func (p *Port) TunnelStats() Stats {
	return Stats{
		Stats:          p.Ctr.Snapshot(),
		RxHeaderErrors: p.rxHeaderErrors.Load(),
		TxMTUDrops:     p.txMTUDrops.Load(),
		TxNoDst:        p.txNoDst.Load(),
	}
}

// Close implements port.Port (port.Base.Close).
func (p *Port) Close() error { return p.Base.Close(p.release, nil) }

func (p *Port) release() error {
	return errors.Join(p.CloseFd(&p.rxFd, "UDP socket"), p.CloseFd(&p.txFd, "raw socket"),
		p.CloseFd(&p.routeFd, "route lookup socket"))
}
