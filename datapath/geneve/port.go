// Package geneve is the Geneve vport of the datapath: a port.Port that
// carries inner Ethernet frames in Geneve over the kernel's UDP stack
// (recvmmsg on a UDP socket, sendmmsg on a raw IPv4 socket), with the
// header codec and option mapping of package tunnel. OVS's counterpart is
// the flow-based geneve netdev of the userspace datapath. The underlay is
// IPv4 or IPv6 (tun_dst or tun_ipv6_dst), as with OVS.
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
	// LocalIP is options:local_ip, the underlay address (IPv4 or IPv6)
	// packets are sent from and received on. Unset: receive on every
	// address and send from the source address of the kernel's route to
	// each destination.
	LocalIP netip.Addr
	// LocalFlow is options:local_ip=flow (LocalIP unset, RemoteIP unset):
	// an IPv4 packet leaves from the tun_src of its flow key (when set and
	// an address of this host), as OVS's native tunnels do; received
	// packets match whatever their destination, after the ports with a
	// fixed or no local_ip.
	LocalFlow bool
	// Port is options:dst_port, the UDP port listened on and sent to;
	// 0 means 6081.
	Port uint16
	// RemoteIP is options:remote_ip=IP, the fixed peer (IPv4 or IPv6).
	// Unset means remote_ip=flow: each packet goes to the tun_dst of its
	// flow key or, when that is 0, to its tun_ipv6_dst.
	RemoteIP netip.Addr
	// InKey is options:in_key (or key): flow, the zero value, receives
	// every VNI into tun_id; a fixed VNI receives only packets with it.
	InKey KeyOption
	// OutKey is options:out_key (or key): flow, the zero value, sends the
	// flow's tun_id; a fixed VNI is sent on every packet.
	OutKey KeyOption
	// Csum is options:csum=true: outer UDP checksums are computed on
	// transmit. OVS's default (false) sends 0, "no checksum" for IPv4;
	// over IPv6 the checksum is always computed, as OVS's userspace
	// tunnels do (RFC 8200 makes it mandatory).
	Csum bool
	// UnderlayMTU is the IP MTU of the underlay path. 0: the MTU of the
	// interface that holds LocalIP, or 1500.
	UnderlayMTU int
	// TTL of the outer IPv4 header (hop limit of IPv6); 0 means 64 (OVS's
	// default).
	TTL uint8
	// ReadTimeout makes ReadBatch return (0, nil) when nothing arrived for
	// that long; 0 blocks until a datagram arrives or the port is closed.
	ReadTimeout time.Duration
	// BatchSize is the most datagrams one recvmmsg/sendmmsg moves; 0 means 64.
	BatchSize int
	// SocketBuffer is the receive socket's buffer in bytes as passed to
	// SO_RCVBUFFORCE (the kernel doubles it for its bookkeeping); 0 means
	// DefaultSocketBuffer. The ports sharing a socket get the first one's.
	SocketBuffer int
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
	// TxNoDst are frames dropped because remote_ip=flow and tun_dst and
	// tun_ipv6_dst were 0, or tun_ipv6_dst was set on a port that cannot
	// send IPv6 (also in TxDropped).
	TxNoDst uint64
	// TxNoSrc are frames dropped because the port's local_ip, or the
	// tun_src of a local_ip=flow port, is not an address of this host
	// (also in TxDropped): OVS's "native tunnel routing failed".
	TxNoSrc uint64
	// RxNoPort are datagrams this port read from the shared socket that
	// no port sharing it claims (also in RxDropped): Open vSwitch's
	// "receive tunnel port not found".
	RxNoPort uint64
}

// Port is a Geneve vport: frames written to it leave encapsulated in
// UDP/IPv4 towards tun_dst or UDP/IPv6 towards tun_ipv6_dst (or the fixed
// remote), datagrams received on the Geneve UDP port are decapsulated into
// frames plus Metadata.
//
// Receive uses a dual-stack UDP socket on Port of every address (the kernel
// validates the outer IP and UDP headers and checksums, reassembles
// fragments and answers nothing else on the port), which every port with
// the same namespace and UDP port shares (see receiver): the port that
// reads it hands out frames for the ports of its group (its bridge), RxPort
// tells which, and hands the others' to their inboxes (see RxGroup). Transmit
// uses send-only raw sockets (IPPROTO_RAW, which never receives), one per
// family, because the UDP source port must carry the inner flow's hash for
// ECMP/RSS, as OVS and the kernel's geneve driver do, and a bound UDP socket
// can only send from its own port. Both are batched with recvmmsg/sendmmsg.
//
// It implements port.Port; WriteBatch sends with a zero key (VNI 0, no
// options) and so needs a fixed RemoteIP. The pipeline uses WriteTunnel.
type Port struct {
	port.Base // name, counters, close; frames are in the batch's buffers

	local    [4]byte
	local6   [16]byte // options:local_ip when it is IPv6
	dstPort  uint16
	remote   [4]byte  // zero: remote_ip=flow (or an IPv6 remote)
	remote6  [16]byte // options:remote_ip when it is IPv6
	csum     bool
	ttl      uint8
	mtu      int // underlay IP MTU
	rxBufLen int
	batch    int
	sockBuf  int // Config.SocketBuffer

	match  match     // the packets it receives
	outKey KeyOption // the VNI it sends
	// outKeyOnly is the zero key with tun_id out_key, for WriteBatch.
	outKeyOnly flowtable.Key
	rx         *receiver // the shared socket, from Open on
	group      atomic.Pointer[RxGroup]
	inbox      inbox // datagrams for p that a port of another group read

	txFd  int
	tx6Fd int // raw IPv6 socket; -1 when the port carries IPv4 only
	opts  atomic.Pointer[tunnel.OptionMap]

	// Guarded by RxMu.
	rxHdrs  []unix.Mmsghdr
	rxIov   []unix.Iovec
	rxNames []unix.RawSockaddrInet6 // room for either family
	rxCtl   [][rxCtlLen]byte
	rxMD    []tunnel.Metadata
	rxPort  []*Port // the port each frame of the last read is for

	// Guarded by TxMu.
	txHdrs   []unix.Mmsghdr
	txIov    []unix.Iovec
	txNames  []unix.RawSockaddrInet4
	txNames6 []unix.RawSockaddrInet6
	txBufs   [][]byte
	txFrame  []int // frame index of each prepared slot
	txInner  []int // inner frame length of each prepared slot

	// routeFd is a UDP socket connected to a destination to learn the
	// kernel's source address for it (csum without local_ip); srcs caches
	// the answers. Guarded by TxMu.
	routeFd int
	srcs    map[[4]byte]routeSrc
	// routeFd6 and srcs6 do the same for IPv6, whose raw socket never
	// fills in the source: used whenever local_ip is not an IPv6 address.
	routeFd6 int
	srcs6    map[[16]byte]routeSrc6
	// localRes asks the kernel whether local_ip, or a tun_src of a
	// local_ip=flow port, is this host's; OVS sends from no other
	// address. locals caches the answers for tun_src (isLocal),
	// localUntil and localOK the one for local_ip (localIPUp). Guarded
	// by TxMu.
	localRes   *Resolver
	locals     map[[4]byte]routeSrc
	localUntil int64
	localOK    bool

	rxHeaderErrors, rxNoPort, txMTUDrops, txNoDst, txNoSrc atomic.Uint64
}

// routeSrc is the source address the kernel's routing picked for one
// destination, looked up again after srcTTL (routes and addresses change).
type routeSrc struct {
	src   [4]byte // zero: no route at the last lookup
	until int64   // unix nanoseconds
}

// routeSrc6 is routeSrc for an IPv6 destination.
type routeSrc6 struct {
	src   [16]byte
	until int64
}

// srcTTL bounds how long a looked-up source address is used.
const srcTTL = time.Second

var _ port.Port = (*Port)(nil)

// rxCtlLen fits an IP_PKTINFO or IPV6_PKTINFO control message.
const rxCtlLen = 64

// Open creates the port's sockets in the caller's network namespace (that
// of the OS thread).
func Open(cfg Config) (*Port, error) {
	p := &Port{txFd: -1, tx6Fd: -1, routeFd: -1, routeFd6: -1}
	p.inbox.fd = -1
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
	local, remote := cfg.LocalIP.Unmap(), cfg.RemoteIP.Unmap()
	if local.IsValid() {
		if local.Is4() {
			p.local = local.As4()
		} else {
			p.local6 = local.As16()
		}
	}
	if remote.IsValid() {
		if remote.IsUnspecified() || remote.IsMulticast() || remote.Zone() != "" {
			return p.Errorf("remote_ip %s: want a unicast IPv4 or IPv6 address", cfg.RemoteIP)
		}
		if local.IsValid() && !local.IsUnspecified() && local.Is4() != remote.Is4() {
			return p.Errorf("remote_ip %s and local_ip %s: not the same address family", remote, local)
		}
		if remote.Is4() {
			p.remote = remote.As4()
		} else {
			p.remote6 = remote.As16()
		}
	}
	if cfg.LocalFlow && (local.IsValid() || remote.IsValid()) {
		return p.Errorf("local_ip=flow needs remote_ip=flow and no local_ip address")
	}
	if cfg.InKey.VNI >= 1<<24 || cfg.OutKey.VNI >= 1<<24 {
		return p.Errorf("key %s/%s: a VNI has 24 bits", cfg.InKey, cfg.OutKey)
	}
	p.match = match{remote: addrOf(remote), local: addrOf(local), keyFlow: !cfg.InKey.Fixed, vni: cfg.InKey.VNI, localFlow: cfg.LocalFlow}
	if p.match.keyFlow {
		p.match.vni = 0
	}
	p.outKey = cfg.OutKey
	flowtable.FieldTunID.SetUint64(&p.outKeyOnly, uint64(p.outKey.VNI))
	p.csum = cfg.Csum
	p.ttl = cfg.TTL
	if p.ttl == 0 {
		p.ttl = 64
	}
	p.sockBuf = cfg.SocketBuffer
	p.batch = cfg.BatchSize
	if p.batch <= 0 {
		p.batch = 64
	}
	p.mtu = cfg.UnderlayMTU
	if p.mtu == 0 {
		p.mtu = interfaceMTU(cfg.LocalIP)
	}
	if p.mtu < tunnel.OuterOverhead6+tunnel.EthHeaderLen {
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

	if err := p.openTx(); err != nil {
		return err
	}
	if p.match.localFlow || p.local != [4]byte{} || p.local6 != [16]byte{} {
		r, err := NewResolver()
		if err != nil {
			return p.Errorf("local_ip: %w", err)
		}
		p.localRes = r
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
	if p.tx6Fd >= 0 && p.local6 == [16]byte{} {
		fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
		if err != nil {
			return p.Errorf("IPv6 route lookup socket: %w", err)
		}
		p.routeFd6 = fd
		p.srcs6 = map[[16]byte]routeSrc6{}
	}
	if err := p.inbox.open(); err != nil {
		return p.Errorf("inbox eventfd: %w", err)
	}
	if err := p.join(); err != nil {
		return err
	}
	if err := p.OpenWake(p.rx.fd); err != nil {
		return err
	}

	p.rxHdrs = make([]unix.Mmsghdr, p.batch)
	p.rxIov = make([]unix.Iovec, p.batch)
	p.rxNames = make([]unix.RawSockaddrInet6, p.batch)
	p.rxCtl = make([][rxCtlLen]byte, p.batch)
	p.rxMD = make([]tunnel.Metadata, p.batch)
	p.rxPort = make([]*Port, p.batch)
	p.txHdrs = make([]unix.Mmsghdr, p.batch)
	p.txIov = make([]unix.Iovec, p.batch)
	p.txNames = make([]unix.RawSockaddrInet4, p.batch)
	p.txNames6 = make([]unix.RawSockaddrInet6, p.batch)
	p.txBufs = make([][]byte, p.batch)
	p.txFrame = make([]int, p.batch)
	p.txInner = make([]int, p.batch)
	for i := range p.txBufs {
		p.txBufs[i] = make([]byte, p.mtu)
		p.txIov[i].Base = &p.txBufs[i][0]
		p.txNames[i].Family = unix.AF_INET
		p.txNames6[i].Family = unix.AF_INET6
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

// DefaultSocketBuffer is the receive socket's default buffer. A TCP
// super-segment the sending node cut into 45 datagrams arrives as one
// burst, and a few of them in a row overflowed the kernel's default
// (net.core.rmem_default, 208 KiB: some 90 datagrams) before the port
// loop's next recvmmsg: a quarter of a TCP stream's segments were dropped
// and retransmitted. 4 MiB (8 MiB of skb memory) took the drops to 0 in
// the two-node test; 1 MiB still dropped 3%. Memory is only used while
// datagrams wait.
const DefaultSocketBuffer = 4 << 20

// setSocketBuffer sizes the receive socket's buffer: SO_RCVBUFFORCE (as
// Open vSwitch sizes its netlink sockets, and wireguard-go its UDP
// sockets), which needs CAP_NET_ADMIN, else SO_RCVBUF, which the kernel
// caps at net.core.rmem_max. Neither failing is fatal: the port works
// with the default buffer, only drops bursts sooner (counted in
// RxDropped).
func setSocketBuffer(fd, size int) {
	if size <= 0 {
		size = DefaultSocketBuffer
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, size)
	}
}

// openRx opens the receive socket of a new receiver: dual-stack IPv6 on
// every address (IPv4 arrives as v4-mapped addresses), so that the ports
// sharing it serve peers and local addresses of both families, whatever
// their local_ip (the table matches it against the destination IP_PKTINFO
// and IPV6_PKTINFO report). Without IPv6 in the kernel it falls back to
// IPv4 only; v6 tells which it got.
func (p *Port) openRx() (fd int, v6 bool, err error) {
	fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err == nil {
		setSocketBuffer(fd, p.sockBuf)
		if err := p.setupRx6(fd); err != nil {
			unix.Close(fd)
			return -1, false, err
		}
		return fd, true, nil
	}
	fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return -1, false, p.Errorf("UDP socket: %w", err)
	}
	setSocketBuffer(fd, p.sockBuf)
	err = p.setRxOptions(fd, unix.IPPROTO_IP, unix.IP_PKTINFO, 1, "IP_PKTINFO")
	if err == nil {
		if e := unix.Bind(fd, &unix.SockaddrInet4{Port: int(p.dstPort)}); e != nil {
			err = p.Errorf("bind 0.0.0.0:%d: %w", p.dstPort, e)
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, false, err
	}
	return fd, false, nil
}

// setupRx6 sets up and binds the dual-stack receive socket fd.
func (p *Port) setupRx6(fd int) error {
	// UDP_NO_CHECK6_RX: accept a zero UDP checksum over IPv6 as OVS's
	// userspace tunnels do (RFC 6935 allows it for tunnels); a nonzero
	// one is still verified by the kernel. IPv4 datagrams on a
	// dual-stack socket carry IPv4 control messages (IP_PKTINFO).
	if err := p.setRxOptions(fd, unix.IPPROTO_IP, unix.IP_PKTINFO, 1, "IP_PKTINFO",
		unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0, "IPV6_V6ONLY",
		unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1, "IPV6_RECVPKTINFO",
		unix.IPPROTO_UDP, unix.UDP_NO_CHECK6_RX, 1, "UDP_NO_CHECK6_RX"); err != nil {
		return err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet6{Port: int(p.dstPort)}); err != nil {
		return p.Errorf("bind [::]:%d: %w", p.dstPort, err)
	}
	return nil
}

// setRxOptions sets the given (level, option, value, name) integer socket
// options on the receive socket fd. IP_PKTINFO and IPV6_RECVPKTINFO tell
// the outer destination (tun_dst, tun_ipv6_dst) when bound to any address.
//
// Not SO_RXQ_OVFL: the kernel copies its count to the control message
// straight from the skb's control block, and hardened usercopy
// (CONFIG_HARDENED_USERCOPY) allows that only for skbs of
// skbuff_head_cache. A TCP segment a generic XDP program (another node's
// kernel fast path) turned into a Geneve datagram is still its TCP fclone
// skb: once the socket has dropped a datagram, receiving such an skb hits
// BUG() in usercopy_abort and the kernel kills the reading thread inside
// recvmmsg, taking the Go M with the port loop's goroutine (holding RxMu)
// with it: the port never reads again. The drops are read with SO_MEMINFO
// instead (readDrops).
func (p *Port) setRxOptions(fd int, opts ...any) error {
	for i := 0; i+3 < len(opts); i += 4 {
		if err := unix.SetsockoptInt(fd, opts[i].(int), opts[i+1].(int), opts[i+2].(int)); err != nil {
			return p.Errorf("%s: %w", opts[i+3], err)
		}
	}
	return nil
}

// openTx opens the raw sockets: IPv4, and IPv6 for a port that may send
// over IPv6 (an IPv6 remote_ip, or remote_ip=flow without an IPv4
// local_ip). Without IPv6 in the kernel a remote_ip=flow port without
// local_ip sends over IPv4 only, as its receive socket is IPv4 only.
func (p *Port) openTx() error {
	// IPPROTO_RAW implies IP_HDRINCL: we write the outer IPv4 header; the
	// kernel fills its checksum, total length, and the ID and source
	// address when we leave them 0.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return p.Errorf("raw IPv4 socket: %w", err)
	}
	p.txFd = fd
	flow := p.remote == [4]byte{} && p.remote6 == [16]byte{}
	dual := p.local == [4]byte{} && p.local6 == [16]byte{}
	if p.remote6 == [16]byte{} && (!flow || p.local != [4]byte{}) {
		return nil // an IPv4 port
	}
	// IPPROTO_RAW over IPv6 implies IPV6_HDRINCL: we write the whole IPv6
	// header, source included. IPV6_DONTFRAG: never fragment locally, as
	// the DF bit of the IPv4 path.
	fd, err = unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		if flow && dual {
			return nil // no IPv6 in the kernel: IPv4 only, as the receive socket
		}
		return p.Errorf("raw IPv6 socket: %w", err)
	}
	p.tx6Fd = fd
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_DONTFRAG, 1); err != nil {
		return p.Errorf("IPV6_DONTFRAG: %w", err)
	}
	return nil
}

// Name returns the port name.

// Ifindex is 0: the vport is not a kernel interface.
func (p *Port) Ifindex() int { return 0 }

// HardwareAddr is nil: a Geneve vport has no MAC.
func (p *Port) HardwareAddr() net.HardwareAddr { return nil }

// MTU returns the inner L3 MTU without options: the underlay MTU minus
// outer IPv4, UDP, Geneve and the inner Ethernet header (1450 for 1500),
// or with an outer IPv6 header for a port whose local or remote address is
// IPv6 (1430).
func (p *Port) MTU() int {
	if p.local6 != [16]byte{} || p.remote6 != [16]byte{} {
		return p.mtu - tunnel.OuterOverhead6 - tunnel.EthHeaderLen
	}
	return p.mtu - tunnel.OuterOverhead - tunnel.EthHeaderLen
}

// UnderlayMTU returns the underlay IP MTU the port checks against.
func (p *Port) UnderlayMTU() int { return p.mtu }

// Outer is the part of the port's configuration that shapes the outer
// headers it sends (the kernel fast path builds the same ones).
type Outer struct {
	Local, Remote [4]byte // zero: unset (remote_ip=flow)
	LocalFlow     bool    // local_ip=flow: the source is the flow's tun_src
	DstPort       uint16
	Csum          bool
	TTL           uint8
	MTU           int // underlay IP MTU
}

// Outer returns the port's outer header configuration.
func (p *Port) Outer() Outer {
	return Outer{Local: p.local, LocalFlow: p.match.localFlow, Remote: p.remote, DstPort: p.dstPort, Csum: p.csum, TTL: p.ttl, MTU: p.mtu}
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

// RxPort returns the port frame i of the last ReadBatch was received for:
// p itself or another port sharing its socket (see receiver).
func (p *Port) RxPort(i int) *Port { return p.rxPort[i] }

// ReadBatch implements port.Port; the tunnel metadata of frame i is
// Metadata(i) until the next read.
func (p *Port) ReadBatch(b *port.Batch) (int, error) {
	return p.ReadTunnelBatch(b, p.rxMD)
}

// ReadTunnelBatch is ReadBatch with the metadata of frame i in md[i]. It
// reads at most min(b.Cap(), len(md), BatchSize) datagrams. When other
// ports share the socket, only one of them reads it at a time and its
// frames are for any port of its group (RxPort); the others read what it
// handed to their inboxes until it closes and one of them takes over.
// The inner frames and md's Options live in b's buffers until b is read
// into again.
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

// PollFd implements port.Poller: the UDP socket, or, while another port
// reads it, the inbox's eventfd.
func (p *Port) PollFd() int {
	if r := p.rx; r != nil && r.reader.Load() == p {
		return r.fd
	}
	return p.inbox.fd
}

// turnCheck is how often a port that does not read the shared socket
// looks whether it became the reader.
const turnCheck = 100 * time.Millisecond

// waitTurn waits, up to the read timeout, while another port reads the
// shared socket and nothing is in p's inbox; it reports whether p is the
// reader. The caller holds RxMu.
func (p *Port) waitTurn(block bool) (bool, error) {
	r := p.rx
	if r.reader.Load() == p {
		p.RxPoll[0].Fd = int32(r.fd)
		return true, nil
	}
	// The inbox and the wake eventfd: Close ends the wait.
	p.RxPoll[0].Fd = int32(p.inbox.fd)
	var waited time.Duration
	for block && p.inbox.queued.Load() == 0 && (p.Timeout < 0 || waited < time.Duration(p.Timeout)*time.Millisecond) {
		d := turnCheck
		if p.Timeout >= 0 {
			d = min(d, time.Duration(p.Timeout)*time.Millisecond-waited)
		}
		if _, err := p.WaitTimeout(int(max(1, d.Milliseconds()))); err != nil {
			return false, err
		}
		waited += d
		if r.reader.Load() == p {
			p.RxPoll[0].Fd = int32(r.fd)
			return true, nil
		}
	}
	return false, nil
}

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
	if p.inbox.queued.Load() != 0 {
		return p.Lend(p.decapBatch(b, md, p.readInbox(b, want))), nil
	}
	if reader, err := p.waitTurn(block); !reader || err != nil {
		if err == nil && p.inbox.queued.Load() != 0 {
			return p.Lend(p.decapBatch(b, md, p.readInbox(b, want))), nil
		}
		return 0, err
	}
	fd := p.rx.fd
	for i := 0; i < want; i++ {
		buf := b.Buffer(i, p.rxBufLen)
		p.rxIov[i].Base = &buf[0]
		p.rxIov[i].SetLen(len(buf))
		h := &p.rxHdrs[i].Hdr
		h.Name = (*byte)(unsafe.Pointer(&p.rxNames[i]))
		h.Namelen = unix.SizeofSockaddrInet6
		h.Iov = &p.rxIov[i]
		h.SetIovlen(1)
		h.Control = &p.rxCtl[i][0]
		h.SetControllen(rxCtlLen)
		h.Flags = 0
		p.rxHdrs[i].Len = 0
	}
	for {
		// Raw: with MSG_DONTWAIT it never sleeps (see port.RawRead).
		r, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&p.rxHdrs[0])), uintptr(want), unix.MSG_DONTWAIT, 0, 0)
		switch e {
		case 0:
			// The queue only overflows when reads take whole batches:
			// the drops are read then, and once more when it empties.
			if int(r) == want || p.rx.full {
				p.readDrops(fd)
			}
			p.rx.full = int(r) == want
			return p.Lend(p.decapBatch(b, md, int(r))), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if p.rx.full {
				p.readDrops(fd)
				p.rx.full = false
			}
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
// counting the bad ones and those no port claims, and returns how many
// frames it produced. Each frame is counted on the port it is for; a
// datagram for a port of another group goes to that port's inbox.
func (p *Port) decapBatch(b *port.Batch, md []tunnel.Metadata, got int) int {
	om := p.opts.Load()
	tbl := p.rx.tbl.Load()
	group := p.group.Load()
	all, allAt := tbl.all, tbl.allAt
	n := 0
	var c port.RxCounts
	var hdrErrs, noPort uint64
	// The datagrams of a batch mostly come from one peer: the last
	// lookup is kept.
	var lastSrc, lastDst addr
	var lastDst4, lastVNI uint32
	var lastV6, lastForeign bool
	var lastTo *Port
	if all != nil && all != p && all.group.Load() != group {
		all = nil // another bridge's port: the lookup hands it over
	}
	// The frames for other ports are counted on them run by run.
	var other *Port
	var oc port.RxCounts
	for i := 0; i < got; i++ {
		h := &p.rxHdrs[i]
		m := &md[n]
		p.parseControl(&h.Hdr, &p.rxCtl[i], m)
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			c.LengthErrors++
			continue
		}
		dgram := b.Buffer(i, p.rxBufLen)[:h.Len]
		inner, err := tunnel.Decap(dgram, m)
		if err != nil {
			hdrErrs++
			continue
		}
		name := &p.rxNames[i]
		if om.Check(m) != nil {
			// With this bridge's TLV map: a datagram for another
			// bridge's port is judged by that port's loop.
			if !p.handOver(tbl, i, dgram, m, group) {
				hdrErrs++
			}
			continue
		}
		// A lone flow-based port (Antrea's) takes everything (to its
		// local_ip).
		to := all
		if to == nil {
			// The destination compared as the metadata holds it: an
			// IPv4 one in one word.
			src := sourceAddr(name)
			if lastTo == nil || src != lastSrc || m.VNI != lastVNI || m.Dst != lastDst4 || m.IPv6 != lastV6 || m.IPv6 && destAddr(m) != lastDst {
				dst := destAddr(m)
				lastTo = tbl.lookup(src, dst, m.VNI)
				lastSrc, lastDst, lastDst4, lastV6, lastVNI = src, dst, m.Dst, m.IPv6, m.VNI
				// lastForeign: the port is another bridge's.
				lastForeign = lastTo != nil && lastTo != p && lastTo.group.Load() != group
			}
			if to = lastTo; to == nil {
				noPort++
				continue
			}
			if lastForeign {
				// Its loop decapsulates it again, with its bridge's
				// TLV map.
				if !to.deliver(p, i, dgram) {
					to.Ctr.RxDropped.Add(1)
				}
				continue
			}
		} else if allAt.kind != dstAny && allAt.misses(m) {
			noPort++
			continue
		}
		setSource(m, name)
		m.DstPort = p.dstPort
		b.Frames[n] = inner
		b.Meta[n] = port.Meta{}
		p.rxPort[n] = to
		n++
		if to == p {
			c.Packets++
			c.Bytes += uint64(len(inner))
		} else {
			if to != other {
				other.addRx(&oc)
				other = to
			}
			oc.Packets++
			oc.Bytes += uint64(len(inner))
		}
	}
	other.addRx(&oc)
	c.Errors = c.LengthErrors + hdrErrs
	if hdrErrs != 0 {
		p.rxHeaderErrors.Add(hdrErrs)
	}
	if noPort != 0 {
		p.rxNoPort.Add(noPort)
		p.Ctr.RxDropped.Add(noPort)
	}
	p.CountRx(&c)
	return n
}

// handOver gives datagram i of the last read, which the port's options
// check refused, to its port when that is of another group than group,
// and reports whether it did.
func (p *Port) handOver(tbl *table, i int, dgram []byte, m *tunnel.Metadata, group *RxGroup) bool {
	to := tbl.all
	if to == nil {
		to = tbl.lookup(sourceAddr(&p.rxNames[i]), destAddr(m), m.VNI)
	} else if tbl.allAt.kind != dstAny && tbl.allAt.misses(m) {
		to = nil
	}
	if to == nil || to == p || to.group.Load() == group {
		return false
	}
	if !to.deliver(p, i, dgram) {
		to.Ctr.RxDropped.Add(1)
	}
	return true
}

// destAddr is the outer destination of a datagram, as parseControl left
// it in m.
func destAddr(m *tunnel.Metadata) addr {
	if m.IPv6 {
		return addrFrom16(&m.Dst6)
	}
	return addr{0, 0xffff<<32 | uint64(m.Dst)}
}

// addRx adds the received frames c (of a read by another port) to p's
// counters and clears c.
func (p *Port) addRx(c *port.RxCounts) {
	if p != nil && c.Packets != 0 {
		p.Ctr.RxPackets.Add(c.Packets)
		p.Ctr.RxBytes.Add(c.Bytes)
	}
	*c = port.RxCounts{}
}

// setSource fills the outer source address and port of m from the
// datagram's sender: an IPv4 address for AF_INET or a v4-mapped AF_INET6
// sender, tun_ipv6_src otherwise; the sender decides the family. It runs
// after parseControl, which set the destination.
func setSource(m *tunnel.Metadata, name *unix.RawSockaddrInet6) {
	m.SrcPort = ntohs(name.Port)
	switch {
	case name.Family == unix.AF_INET:
		m.Src = binary.BigEndian.Uint32((*unix.RawSockaddrInet4)(unsafe.Pointer(name)).Addr[:])
		m.IPv6 = false
	case isV4Mapped(&name.Addr):
		m.Src = binary.BigEndian.Uint32(name.Addr[12:])
		m.IPv6 = false
	default:
		m.Src, m.Dst = 0, 0
		m.Src6 = name.Addr
		m.IPv6 = true
	}
}

func isV4Mapped(a *[16]byte) bool {
	return [12]byte(a[:12]) == [12]byte{10: 0xff, 11: 0xff}
}

// parseControl walks the control messages of one datagram: it sets the
// outer destination address of m (IP_PKTINFO or IPV6_PKTINFO; 0 without
// them) and its family and the interface it arrived on
// (Ifindex, 0 when unknown).
func (p *Port) parseControl(h *unix.Msghdr, ctl *[rxCtlLen]byte, m *tunnel.Metadata) {
	m.Dst, m.Ifindex, m.IPv6 = 0, 0, false
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
			m.Dst = binary.BigEndian.Uint32(info.Addr[:])
			m.Ifindex = int(info.Ifindex)
			m.IPv6 = false
		case cm.Level == unix.IPPROTO_IPV6 && cm.Type == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
			info := (*unix.Inet6Pktinfo)(unsafe.Pointer(&data[0]))
			if isV4Mapped(&info.Addr) {
				m.Dst = binary.BigEndian.Uint32(info.Addr[12:])
				m.IPv6 = false
			} else {
				m.Dst, m.Dst6, m.IPv6 = 0, info.Addr, true
			}
			m.Ifindex = int(info.Ifindex)
		}
		c = c[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(c)):]
	}
}

// readDrops adds the datagrams the socket queue dropped since the last
// look (SO_MEMINFO's SK_MEMINFO_DROPS, the socket's sk_drops) to the
// reader's RxDropped. The count is the socket's: the receiver keeps it,
// so that the next reader goes on from it.
func (p *Port) readDrops(fd int) {
	var mi [unix.SK_MEMINFO_VARS]uint32
	l := uint32(unsafe.Sizeof(mi))
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_MEMINFO,
		uintptr(unsafe.Pointer(&mi[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 || l < (unix.SK_MEMINFO_DROPS+1)*4 {
		return
	}
	r := p.rx
	if d := mi[unix.SK_MEMINFO_DROPS]; d != r.drops {
		p.Ctr.RxDropped.Add(uint64(d - r.drops))
		r.drops = d
	}
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
	if p.localRes != nil && !p.match.localFlow && !p.localIPUp() {
		p.txNoSrc.Add(uint64(len(frames)))
		p.Ctr.TxDropped.Add(uint64(len(frames)))
		return len(frames), nil
	}
	om := p.opts.Load()
	i := 0
	for i < len(frames) {
		// Encapsulate up to one batch of frames of one underlay family
		// into the send slots.
		slots, fd := 0, p.txFd
		for ; i < len(frames) && slots < p.batch; i++ {
			k := &zeroKey
			if keys != nil && keys[i] != nil {
				k = keys[i]
			}
			k = p.withOutKey(k)
			dst, dst6, ok := p.destination(k)
			if !ok {
				continue
			}
			if ffd := p.familyFd(dst6 != nil); slots > 0 && ffd != fd {
				break // the other family: send what we have first
			} else {
				fd = ffd
			}
			if dst6 != nil {
				ok = p.prepare6(slots, frames[i], k, om, dst6)
			} else {
				ok = p.prepare(slots, frames[i], k, om, dst)
			}
			if ok {
				p.txFrame[slots] = i
				slots++
			}
		}
		if n, err := p.send(fd, slots); err != nil {
			return n, err
		}
	}
	return len(frames), nil
}

// withOutKey returns k with tun_id set to a fixed out_key: every packet
// leaves with VNI N. k is the caller's copy, changed in place, or zeroKey,
// whose VNI is 0, replaced by outKeyOnly.
func (p *Port) withOutKey(k *flowtable.Key) *flowtable.Key {
	if !p.outKey.Fixed || k.TunID() == uint64(p.outKey.VNI) {
		return k
	}
	if k == &zeroKey {
		return &p.outKeyOnly
	}
	flowtable.FieldTunID.SetUint64(k, uint64(p.outKey.VNI))
	return k
}

// familyFd returns the raw socket for IPv6 or IPv4.
func (p *Port) familyFd(v6 bool) int {
	if v6 {
		return p.tx6Fd
	}
	return p.txFd
}

// destination returns where a frame with key k goes, as OVS decides it:
// the fixed remote_ip, else tun_dst when set, else tun_ipv6_dst (dst6
// non-nil for IPv6). false means the frame was dropped (and counted): no
// destination, or an IPv6 one on a port without IPv6.
func (p *Port) destination(k *flowtable.Key) (dst [4]byte, dst6 *[16]byte, ok bool) {
	switch {
	case p.remote != [4]byte{}:
		return p.remote, nil, true
	case p.remote6 != [16]byte{}:
		return dst, &p.remote6, true
	}
	binary.BigEndian.PutUint32(dst[:], k.TunDst())
	if dst != [4]byte{} {
		return dst, nil, true
	}
	if p.tx6Fd >= 0 {
		d := (*[16]byte)(k[flowtable.FieldTunIPv6Dst.Off:])
		if *d != [16]byte{} {
			return dst, d, true
		}
	}
	p.txNoDst.Add(1)
	p.Ctr.TxDropped.Add(1)
	return dst, nil, false
}

// encap checks frame against the underlay MTU with an outer header of
// outer bytes and writes UDP payload (Geneve header, options, frame) into
// send slot s after room for the outer IP and UDP headers; it returns the
// slot's buffer and the UDP length, or false when the frame was dropped
// (and counted).
func (p *Port) encap(s int, frame []byte, k *flowtable.Key, om *tunnel.OptionMap, ipLen int) ([]byte, uint16, int, bool) {
	optLen, err := om.OptionsLen(k)
	if err != nil || len(frame) < tunnel.EthHeaderLen {
		p.Ctr.TxDropped.Add(1)
		return nil, 0, 0, false
	}
	if ipLen+tunnel.UDPHeaderLen+tunnel.HeaderLen+optLen+len(frame) > p.mtu {
		p.txMTUDrops.Add(1)
		p.Ctr.TxDropped.Add(1)
		return nil, 0, 0, false
	}
	buf := p.txBufs[s]
	pkt, sport, err := tunnel.Encap(buf[ipLen+tunnel.UDPHeaderLen:ipLen+tunnel.UDPHeaderLen], frame, k, om)
	if err != nil {
		p.Ctr.TxDropped.Add(1)
		return nil, 0, 0, false
	}
	p.txInner[s] = len(frame)
	return buf, sport, tunnel.UDPHeaderLen + len(pkt), true
}

// putUDP writes the UDP header with the checksum field 0.
func (p *Port) putUDP(udp []byte, sport uint16) {
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], p.dstPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(len(udp)))
	binary.BigEndian.PutUint16(udp[6:], 0)
}

// prepare builds the outer IPv4 + UDP + Geneve packet for one frame into
// send slot s; false means the frame was dropped (and counted).
func (p *Port) prepare(s int, frame []byte, k *flowtable.Key, om *tunnel.OptionMap, dst [4]byte) bool {
	src := p.local // 0: the kernel picks the route's source
	switch {
	case p.match.localFlow && k.TunSrc() != 0:
		// local_ip=flow: the flow's tun_src, which OVS's route lookup
		// (ovs_router_lookup) takes only when it is a local address.
		binary.BigEndian.PutUint32(src[:], k.TunSrc())
		if !p.isLocal(src) {
			p.txNoSrc.Add(1)
			p.Ctr.TxDropped.Add(1)
			return false
		}
	case p.routeFd >= 0:
		src = p.sourceFor(dst)
	}
	buf, sport, udpLen, ok := p.encap(s, frame, k, om, tunnel.IPv4HeaderLen)
	if !ok {
		return false
	}
	ip := buf[:tunnel.IPv4HeaderLen]
	ip[0] = 0x45 // version 4, 5 words
	ip[1] = 0    // TOS
	binary.BigEndian.PutUint16(ip[2:], uint16(tunnel.IPv4HeaderLen+udpLen))
	binary.BigEndian.PutUint16(ip[4:], 0)      // ID: the kernel picks one
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF, as OVS's default df_default=true
	ip[8] = p.ttl
	ip[9] = unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(ip[10:], 0) // the kernel computes it
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	udp := buf[tunnel.IPv4HeaderLen : tunnel.IPv4HeaderLen+udpLen]
	p.putUDP(udp, sport)
	if p.csum && src != [4]byte{} {
		binary.BigEndian.PutUint16(udp[6:], udpChecksum(sum16(0, src[:])+sum16(0, dst[:]), udp))
	}
	p.txIov[s].SetLen(tunnel.IPv4HeaderLen + udpLen)
	p.txNames[s].Addr = dst
	h := &p.txHdrs[s].Hdr
	h.Name = (*byte)(unsafe.Pointer(&p.txNames[s]))
	h.Namelen = unix.SizeofSockaddrInet4
	return true
}

// prepare6 builds the outer IPv6 + UDP + Geneve packet for one frame into
// send slot s, as prepare does for IPv4. The source is local_ip or that of
// the kernel's route to dst; the UDP checksum is always computed.
func (p *Port) prepare6(s int, frame []byte, k *flowtable.Key, om *tunnel.OptionMap, dst *[16]byte) bool {
	src := p.local6
	if src == [16]byte{} {
		if src = p.sourceFor6(dst); src == [16]byte{} {
			p.Ctr.TxDropped.Add(1) // no route: the kernel could not send it either
			return false
		}
	}
	buf, sport, udpLen, ok := p.encap(s, frame, k, om, tunnel.IPv6HeaderLen)
	if !ok {
		return false
	}
	ip := buf[:tunnel.IPv6HeaderLen]
	binary.BigEndian.PutUint32(ip[0:], 6<<28) // version 6, traffic class 0, flow label 0
	binary.BigEndian.PutUint16(ip[4:], uint16(udpLen))
	ip[6] = unix.IPPROTO_UDP
	ip[7] = p.ttl
	copy(ip[8:24], src[:])
	copy(ip[24:40], dst[:])
	udp := buf[tunnel.IPv6HeaderLen : tunnel.IPv6HeaderLen+udpLen]
	p.putUDP(udp, sport)
	binary.BigEndian.PutUint16(udp[6:], udpChecksum(sum16(0, ip[8:40]), udp))
	p.txIov[s].SetLen(tunnel.IPv6HeaderLen + udpLen)
	p.txNames6[s].Addr = *dst
	h := &p.txHdrs[s].Hdr
	h.Name = (*byte)(unsafe.Pointer(&p.txNames6[s]))
	h.Namelen = unix.SizeofSockaddrInet6
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

// sourceFor6 is sourceFor for IPv6, whose raw socket never picks a source.
func (p *Port) sourceFor6(dst *[16]byte) [16]byte {
	now := time.Now().UnixNano()
	if r, ok := p.srcs6[*dst]; ok && now < r.until {
		return r.src
	}
	var src [16]byte
	if err := unix.Connect(p.routeFd6, &unix.SockaddrInet6{Addr: *dst, Port: int(p.dstPort)}); err == nil {
		if sa, err := unix.Getsockname(p.routeFd6); err == nil {
			if in6, ok := sa.(*unix.SockaddrInet6); ok {
				src = in6.Addr
			}
		}
	}
	if len(p.srcs6) > 4096 {
		clear(p.srcs6)
	}
	p.srcs6[*dst] = routeSrc6{src: src, until: now + int64(srcTTL)}
	return src
}

// localIPUp reports whether the port's local_ip is an address of this
// host now (the answer is kept for srcTTL): OVS sends from local_ip only
// then ("native tunnel routing failed" otherwise), where the raw socket
// would send from an address nobody here has.
func (p *Port) localIPUp() bool {
	now := time.Now().UnixNano()
	if now < p.localUntil {
		return p.localOK
	}
	local := netip.AddrFrom4(p.local)
	if p.local6 != [16]byte{} {
		local = netip.AddrFrom16(p.local6)
	}
	ok, err := p.localRes.IsLocal(local)
	p.localOK, p.localUntil = ok && err == nil, now+int64(srcTTL)
	return p.localOK
}

// isLocal reports whether src is an address of this host (of the port's
// namespace). Answers are cached for srcTTL, as sourceFor's.
func (p *Port) isLocal(src [4]byte) bool {
	now := time.Now().UnixNano()
	if r, ok := p.locals[src]; ok && now < r.until {
		return r.src == src
	}
	r := routeSrc{until: now + int64(srcTTL)}
	if ok, err := p.localRes.IsLocal(netip.AddrFrom4(src)); ok && err == nil {
		r.src = src
	}
	if p.locals == nil || len(p.locals) > 4096 {
		p.locals = map[[4]byte]routeSrc{}
	}
	p.locals[src] = r
	return r.src == src
}

// send transmits the prepared slots [0, slots), retrying after partial
// sends. Per-message errors the kernel reports for one datagram (no route,
// no buffer space, too big, filtered) drop that datagram; any other error
// is returned with the index of the first frame not handled.
func (p *Port) send(fd, slots int) (int, error) {
	done := 0
	for done < slots {
		r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&p.txHdrs[done])), uintptr(slots-done), 0, 0, 0)
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
			dst := netip.AddrFrom4(p.txNames[done].Addr)
			if fd != p.txFd {
				dst = netip.AddrFrom16(p.txNames6[done].Addr)
			}
			return p.txFrame[done], p.Errorf("sendmmsg to %s: %w", dst, e)
		}
	}
	return 0, nil
}

// udpChecksum computes the UDP checksum over the pseudo-header, whose
// addresses sum to addrs (sum16 of source and destination, IPv4 or IPv6),
// and the UDP datagram (whose checksum field is 0); 0 is sent as 0xffff.
func udpChecksum(addrs uint64, udp []byte) uint16 {
	s := sum16(addrs+unix.IPPROTO_UDP+uint64(len(udp)), udp)
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	c := ^uint16(s)
	if c == 0 {
		c = 0xffff
	}
	return c
}

// sum16 adds the big-endian 16-bit words of b (a last odd byte padded with
// zero) to s, unfolded.
func sum16(s uint64, b []byte) uint64 {
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
	return s
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
		TxNoSrc:        p.txNoSrc.Load(),
		RxNoPort:       p.rxNoPort.Load(),
	}
}

// Close implements port.Port (port.Base.Close).
func (p *Port) Close() error { return p.Base.Close(p.release, nil) }

func (p *Port) release() error {
	var resErr error
	if p.localRes != nil {
		resErr = p.localRes.Close()
	}
	return errors.Join(resErr, p.leave(), p.inbox.close(), p.CloseFd(&p.txFd, "raw socket"),
		p.CloseFd(&p.tx6Fd, "raw IPv6 socket"), p.CloseFd(&p.routeFd, "route lookup socket"),
		p.CloseFd(&p.routeFd6, "IPv6 route lookup socket"))
}
