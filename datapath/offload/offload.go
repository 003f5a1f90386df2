// Package offload is govs's kernel fast path: an XDP program (a TCX one
// on veths and ports with offload metadata, whose sockets get what it
// sends up: bpf/offload.c, "tc path"), attached to the system (AF_PACKET) ports, that forwards the
// packets of established
// connections whose megaflow decision the Go datapath installed in a BPF
// hash map, by exact match (see docs/offload.md). The Go pipeline, conntrack
// and the megaflow cache stay the authority: a packet the map does not
// know, a TCP SYN/FIN/RST, and one packet per entry and second go on to
// userspace exactly as without the program.
//
// Memory the kernel owns never outlives its owner: programs are attached
// through bpf_links and the maps are freed with the Kernel; with a pin
// directory (pin.go) the owner is the datapath that directory names, and
// the state outlives the process for the next one to adopt.
package offload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/conntrack"
)

// Action flags (ACT_* in bpf/offload.c).
const (
	ActSetEth uint32 = 1 // write the Ethernet addresses
	ActDecTTL uint32 = 2 // decrement the IPv4 TTL
	ActNAT    uint32 = 4 // rewrite addresses and ports (conntrack's NAT)
	ActEncap  uint32 = 8 // put the frame in Geneve (Action.Encap)
	ActDecap  uint32 = 16
	// ActPeer: the output is a veth; the tc program delivers to its pod
	// end with bpf_redirect_peer (set by the Kernel at install).
	ActPeer uint32 = 32
	// VLAN (Action.VlanTPID, VlanTCI): push a tag on an untagged frame,
	// pop the frame's tag, both (replace the tag), or set the TCI of the
	// frame's tag.
	ActPushVLAN uint32 = 64
	ActPopVLAN  uint32 = 128
	ActSetVLAN  uint32 = 256

	actVLAN = ActPushVLAN | ActPopVLAN | ActSetVLAN
	// ActEncapCsum: with ActEncap, the outer UDP checksum (csum=true;
	// the tc program leaves super-segments to userspace).
	ActEncapCsum uint32 = 512
)

// CsumMax is the longest outer datagram the XDP program checksums
// (CSUM_MAX): a csum=true port with a larger MTU stays in userspace.
const CsumMax = 9216

// vlanLen is a VLAN header's length.
const vlanLen = 4

// Geneve as the program speaks it (bpf/offload.c): the IANA port only, at
// most TunOptionsMax option bytes matched or sent.
const (
	GenevePort    = 6081
	TunOptionsMax = 32
	geneveHdrLen  = 8
)

// FlowKey is the exact match of a kernel entry: ingress interface, Ethernet
// addresses, VLAN tag and the IPv4 5-tuple with the TTL.
type FlowKey struct {
	Ifindex        uint32
	EthSrc, EthDst [6]byte
	Src, Dst       netip.Addr // IPv4
	Proto          uint8      // unix.IPPROTO_TCP or unix.IPPROTO_UDP
	SrcPort        uint16
	DstPort        uint16
	TTL            uint8
	// VlanTCI is the key's vlan_tci: the outer tag's TCI with
	// flowtable.VlanCFI set, 0 for an untagged frame.
	VlanTCI uint16
	// Tun is the outer part of a Geneve datagram's key (Ethernet and
	// 5-tuple above are then its inner frame's, Ifindex the underlay
	// interface); zero for every other packet.
	Tun TunKey
	// CountAs is the port the kernel's packets count as received on in
	// PortStats (a tunnel port's PortID); 0: Ifindex. Not part of the match.
	CountAs uint32
}

// TunKey is what the program matches of a Geneve datagram besides its
// inner frame: the outer addresses and the whole Geneve header, so a
// datagram matches only if govs's tunnel port would have decoded it into
// the same tunnel metadata.
type TunKey struct {
	Src, Dst [4]byte // outer IPv4 source and destination
	VNI      uint32
	Flags    byte // Geneve header byte 1 (0x80 O bit, 0x40 C bit)
	OptLen   uint8
	Options  [TunOptionsMax]byte
	OuterDst [6]byte // the underlay interface's MAC
}

// Encap is the outer header the program puts in front of a frame for a
// Geneve tunnel port (the IANA port): Ethernet from EthSrc to
// EthDst (the kernel's next hop for Dst), outer IPv4 from Src to Dst with
// TTL and DF, UDP from SrcPort (the inner flow's hash, as the tunnel port
// computes it) and Header, the Geneve header with options as the tunnel
// port writes it. Frames whose outer packet exceeds MTU go to userspace
// (which drops them as the tunnel port does).
type Encap struct {
	EthSrc, EthDst [6]byte
	Src, Dst       netip.Addr
	SrcPort        uint16
	TTL            uint8
	MTU            uint16
	Header         []byte
	// Csum: the outer UDP checksum is computed (csum=true); the tc path
	// leaves super-segments to userspace.
	Csum bool
}

// PortID is the key of a port without an interface of its own (a tunnel
// port, by OpenFlow port number) in the kernel path's port counters.
func PortID(ofport uint32) uint32 { return 1<<31 | ofport }

// Action is what the program does with a matching packet.
type Action struct {
	OutIfindex     uint32
	Flags          uint32 // ActSetEth | ActDecTTL | ActNAT
	EthSrc, EthDst [6]byte
	// With ActNAT: the tuple the packet leaves with, as conntrack's NAT
	// of its connection made it (IPv4; TCP/UDP checksums are updated).
	NatSrc, NatDst         netip.Addr
	NatSrcPort, NatDstPort uint16
	// With ActEncap (OutIfindex is then the underlay interface).
	Encap *Encap
	// With ActPushVLAN: the tag's TPID; with ActPushVLAN or ActSetVLAN,
	// its TCI (as in the frame).
	VlanTPID, VlanTCI uint16
}

// txDelta is how many bytes longer the frames of an entry with action
// flags leave than they came (a VLAN tag pushed or popped).
func txDelta(flags uint32) int64 {
	switch flags & (ActPushVLAN | ActPopVLAN) {
	case ActPushVLAN:
		return vlanLen
	case ActPopVLAN:
		return -vlanLen
	}
	return 0
}

// Counters are an entry's kernel statistics.
type Counters struct {
	Packets, Bytes uint64
	LastUsed       int64 // CLOCK_MONOTONIC_COARSE ns of the last forwarded packet
}

// Kernel is the loaded program and its maps, shared by every port of a
// switch. Its methods are safe for concurrent use (each is a syscall on a
// map the kernel synchronizes).
type Kernel struct {
	objs  offloadObjects
	conns *ebpf.Map            // each entry's connection (connInfo); pinned only
	pins  *pins                // nil: nothing pinned
	spec  *ebpf.CollectionSpec // pinned only: for the hold program
	gen   uint64               // the generation in the map at load
	// veth: the attached interfaces that are veths (ifindex -> true),
	// outputs the tc program redirects to the peer of.
	veth sync.Map
}

// Load loads the program and maps into the kernel. It fails where the
// kernel has no BPF (or the process lacks CAP_BPF/CAP_NET_ADMIN). With a
// pin directory (PinDir) the maps are pinned there, and adopted with
// their entries and generation when a previous process left them
// (Adopted); without one they die with the Kernel.
func Load(pinDir string) (*Kernel, error) {
	k := &Kernel{gen: 1}
	spec, err := loadOffload()
	if err != nil {
		return nil, fmt.Errorf("load offload program: %w", err)
	}
	if pinDir == "" {
		err = spec.LoadAndAssign(&k.objs, nil)
	} else {
		err = k.loadPinned(spec, pinDir)
	}
	if err != nil {
		return nil, fmt.Errorf("load offload program: %w", err)
	}
	if k.Adopted() {
		if err := k.objs.Generation.Lookup(uint32(0), &k.gen); err != nil {
			k.Close()
			return nil, fmt.Errorf("read pinned offload generation: %w", err)
		}
		return k, nil
	}
	if err := k.objs.Generation.Put(uint32(0), k.gen); err != nil {
		k.Close()
		return nil, fmt.Errorf("set offload generation: %w", err)
	}
	return k, nil
}

// Close detaches nothing (links are the ports') and frees program and
// maps; the kernel drops them once the last link is gone. Pinned maps are
// unpinned first unless the Kernel is retained (Retain).
func (k *Kernel) Close() error {
	var err error
	if k.pins != nil && !k.retained() {
		err = k.unpin()
	}
	if k.conns != nil {
		k.conns.Close()
	}
	if k.pins != nil {
		k.pins.closeHoldLocked() // the links that run them keep them
	}
	return errors.Join(err, k.objs.Close())
}

// Attach attaches the program to the interface in generic (skb) mode: it
// runs before the packet taps, so a frame the program redirects never
// reaches the AF_PACKET socket and one it passes reaches only the socket.
// Generic mode because a native-mode redirect to a veth needs a program on
// that veth's peer, which lives in the pod. The program stays attached
// until the returned link is closed or the process exits; with pinning
// (Load with a directory), until the port is deleted, its pin removed or
// the datapath cleaned up, whatever becomes of the process. name is the
// port's name, the link's pin.
func (k *Kernel) Attach(ifindex int, name string) (io.Closer, error) {
	return k.attach(ifindex, name, linkXDP)
}

// AttachTC attaches the tc path to a port (a veth, or one whose frames
// carry offload metadata): the program at TCX ingress, which keeps
// super-segments and partial checksums whole and sends up every frame it
// does not forward (upcall in bpf/offload.c). The port's AF_PACKET socket
// must be bound to port.UpcallEthertype (afpacket.Config.Upcall), not be
// a tap: a tap would see every frame before tc ingress, those the
// program forwards too (docs/offload.md).
func (k *Kernel) AttachTC(ifindex int, name string) (io.Closer, error) {
	return k.attach(ifindex, name, linkTC)
}

// AttachUnderlay attaches the program to a Geneve underlay interface
// (name: the interface's, its link's pin) at TCX ingress, where it
// decapsulates the datagrams of entries with ActDecap (skb_decap in
// bpf/offload.c); the others go on to the kernel's UDP stack and the
// tunnel port's socket (govs_underlay_tc: no upcall, govs has no port
// there). TCX rather than generic XDP: the skb is kept as it came (generic XDP
// copies every non-linear skb or one with little headroom, as the
// datagrams the sending node's GSO cut from a super-segment are) and the
// pod gets it in the same pass (bpf_redirect_peer), which measured 0.69x
// the CPU per TCP segment (docs/offload.md, "Decapsulation on tc").
func (k *Kernel) AttachUnderlay(ifindex int, name string) (io.Closer, error) {
	return k.attach(ifindex, name, linkUnderlay)
}

// HaveTCX tells whether the kernel attaches TCX links (Linux 6.6):
// asked with an ifindex no interface has, which such a kernel refuses
// with ENODEV and an older one as an unknown attach type.
func (k *Kernel) HaveTCX() bool {
	l, err := link.AttachTCX(link.TCXOptions{Program: k.objs.GovsOffloadTc, Interface: math.MaxInt32, Attach: ebpf.AttachTCXIngress})
	if err == nil {
		l.Close()
	}
	return !errors.Is(err, ebpf.ErrNotSupported)
}

// linkKind is what a link attaches: XDP on a port, the tc path on a
// port, or decapsulation on a Geneve underlay (both TCX ingress).
type linkKind uint8

const (
	linkXDP linkKind = iota
	linkTC
	linkUnderlay
)

// tcx tells whether links of the kind are TCX ingress links (else XDP).
func (kd linkKind) tcx() bool { return kd != linkXDP }

// programs are the three programs, one per linkKind: the Kernel's, or
// the hold copies (Kernel.Hold).
type programs struct{ xdp, tc, underlay *ebpf.Program }

func (ps programs) of(kd linkKind) *ebpf.Program {
	switch kd {
	case linkTC:
		return ps.tc
	case linkUnderlay:
		return ps.underlay
	}
	return ps.xdp
}

func (ps programs) close() {
	ps.xdp.Close()
	ps.tc.Close()
	ps.underlay.Close()
}

func (k *Kernel) attach(ifindex int, name string, kd linkKind) (io.Closer, error) {
	k.veth.Store(uint32(ifindex), isVeth(ifindex))
	if k.pins != nil {
		return k.attachPinned(ifindex, name, kd)
	}
	l, err := k.attachLink(ifindex, kd, k.programs().of(kd))
	if err != nil {
		return nil, err
	}
	return &portLink{l: l, k: k, ifindex: ifindex}, nil
}

// programs are the Kernel's programs (with keepalives).
func (k *Kernel) programs() programs {
	return programs{xdp: k.objs.GovsOffload, tc: k.objs.GovsOffloadTc, underlay: k.objs.GovsUnderlayTc}
}

func (k *Kernel) attachLink(ifindex int, kd linkKind, prog *ebpf.Program) (link.Link, error) {
	var l link.Link
	var err error
	if kd.tcx() {
		l, err = link.AttachTCX(link.TCXOptions{Program: prog, Interface: ifindex, Attach: ebpf.AttachTCXIngress})
	} else {
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: link.XDPGenericMode})
	}
	if err != nil {
		return nil, fmt.Errorf("attach offload program to ifindex %d: %w", ifindex, err)
	}
	return l, nil
}

// isVeth tells whether the interface is a veth (ethtool's driver name).
func isVeth(ifindex int) bool {
	ifi, err := net.InterfaceByIndex(ifindex)
	if err != nil {
		return false
	}
	return IsVeth(ifi.Name)
}

// IsVeth tells whether the named interface is a veth (ethtool's driver
// name).
func IsVeth(name string) bool {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolDrvinfo(fd, name)
	return err == nil && unix.ByteSliceToString(info.Driver[:]) == "veth"
}

// KeepsOffloadsInHost tells whether frames sent on the interface reach
// another network stack of this kernel with their offload metadata
// (super-segments, partial checksums) still pending: a veth whose
// transmit checksumming is on. The tc path does not encapsulate through
// such an underlay: the datagram would reach the peer namespace's UDP
// socket (another node's userspace tunnel port) as one super-datagram
// with its inner checksums unfinished. Through a NIC, or a veth with
// checksumming off, the kernel segments and checksums before the frame
// leaves (validate_xmit_skb).
func KeepsOffloadsInHost(ifindex int) bool {
	if !isVeth(ifindex) {
		return false
	}
	ifi, err := net.InterfaceByIndex(ifindex)
	if err != nil {
		return true
	}
	on, err := ethtoolGet(ifi.Name, unix.ETHTOOL_GTXCSUM)
	return err != nil || on != 0
}

// ethtoolGet runs an ethtool "get" command that answers one value
// (struct ethtool_value) on the interface.
func ethtoolGet(name string, cmd uint32) (uint32, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	v := struct{ cmd, data uint32 }{cmd: cmd}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	copy(ifr.name[:], name)
	ifr.data = unsafe.Pointer(&v)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return 0, fmt.Errorf("ethtool %#x on %s: %w", cmd, name, e)
	}
	return v.data, nil
}

func (fk *FlowKey) kernel() (offloadFlowKey, error) {
	if !fk.Src.Is4() || !fk.Dst.Is4() {
		return offloadFlowKey{}, errors.New("offload: not an IPv4 flow")
	}
	s, d := fk.Src.As4(), fk.Dst.As4()
	if fk.Tun.OptLen > TunOptionsMax || fk.Tun.OptLen%4 != 0 {
		return offloadFlowKey{}, errors.New("offload: Geneve options too long")
	}
	var opts [TunOptionsMax / 4]uint32
	for i := range opts {
		opts[i] = nativeU32([4]byte(fk.Tun.Options[4*i:]))
	}
	return offloadFlowKey{
		Ifindex: fk.Ifindex,
		// Addresses and ports are in network order in the packet: keep
		// their bytes as they are in the host-order struct fields.
		Saddr:  nativeU32(s),
		Daddr:  nativeU32(d),
		Sport:  nativeU16(fk.SrcPort),
		Dport:  nativeU16(fk.DstPort),
		EthDst: fk.EthDst,
		EthSrc: fk.EthSrc,
		Proto:  fk.Proto,
		Ttl:    fk.TTL,
		TunSrc: nativeU32(fk.Tun.Src), TunDst: nativeU32(fk.Tun.Dst),
		VlanTci:   fk.VlanTCI,
		TunVni:    nativeU32([4]byte{byte(fk.Tun.VNI >> 16), byte(fk.Tun.VNI >> 8), byte(fk.Tun.VNI), 0}),
		TunFlags:  fk.Tun.Flags,
		TunOptLen: fk.Tun.OptLen,
		OuterDst:  fk.Tun.OuterDst,
		TunOpts:   opts,
	}, nil
}

// nativeU32 returns the uint32 whose in-memory bytes are b (the program is
// little-endian only: bpf2go -target bpfel).
func nativeU32(b [4]byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// nativeU16 returns the uint16 whose in-memory bytes are v in network order.
func nativeU16(v uint16) uint16 { return v>>8 | v<<8 }

// monotonicNow is the programs' clock, bpf_ktime_get_coarse_ns: the
// monotonic clock at the last tick (a timer tick's resolution is plenty
// for keepalives and idle times, and it costs no clock read per packet:
// bpf_ktime_get_ns was a sixth of the tc path's lookup). The same clock
// here, so that a time written at install is never ahead of the
// program's.
func monotonicNow() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC_COARSE, &ts)
	return uint64(ts.Nano())
}

// Install adds or replaces the entry for fk, valid in the current
// generation. Counters restart at zero: the caller reads them first when
// it replaces an entry.
func (k *Kernel) Install(fk FlowKey, a Action, gen uint64) error {
	key, err := fk.kernel()
	if err != nil {
		return err
	}
	return k.install(&key, a, gen, nil)
}

// install writes an entry and, pinned, its connection (none: a previous
// one is deleted, the entry cannot be adopted).
func (k *Kernel) install(key *offloadFlowKey, a Action, gen uint64, conn *conntrack.Entry) error {
	// last_pass = now: the packet that got the entry installed went through
	// userspace, the next keepalive is due in a second.
	v := offloadFlowAction{OutIfindex: a.OutIfindex, Flags: a.Flags &^ ActPeer, EthDst: a.EthDst, EthSrc: a.EthSrc, Gen: gen, LastPass: monotonicNow(),
		VlanTpid: nativeU16(a.VlanTPID), VlanTci: nativeU16(a.VlanTCI)}
	if veth, _ := k.veth.Load(a.OutIfindex); veth == true && a.Flags&ActEncap == 0 {
		v.Flags |= ActPeer
	}
	if a.Flags&ActNAT != 0 {
		if !a.NatSrc.Is4() || !a.NatDst.Is4() {
			return errors.New("install offload entry: NAT to a non-IPv4 address")
		}
		v.NatSaddr, v.NatDaddr = nativeU32(a.NatSrc.As4()), nativeU32(a.NatDst.As4())
		v.NatSport, v.NatDport = nativeU16(a.NatSrcPort), nativeU16(a.NatDstPort)
	}
	if a.Flags&ActEncap != 0 {
		if err := a.Encap.fill(&v); err != nil {
			return err
		}
		if a.Encap.Csum {
			if a.Encap.MTU > CsumMax {
				return fmt.Errorf("install offload entry: csum=true with an MTU of %d", a.Encap.MTU)
			}
			v.Flags |= ActEncapCsum
		}
	}
	if k.conns != nil {
		// The connection first: an entry a restart finds has one.
		if conn != nil {
			ci := connInfoOf(conn)
			if err := k.conns.Put(key, &ci); err != nil {
				return fmt.Errorf("install offload entry's connection: %w", err)
			}
		} else if err := k.conns.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("delete offload entry's connection: %w", err)
		}
	}
	if err := k.objs.Flows.Put(key, &v); err != nil {
		return fmt.Errorf("install offload entry: %w", err)
	}
	return nil
}

// fill writes e into the kernel action.
func (e *Encap) fill(v *offloadFlowAction) error {
	if e == nil || !e.Src.Is4() || !e.Dst.Is4() {
		return errors.New("install offload entry: encapsulation without IPv4 outer addresses")
	}
	if len(e.Header) < geneveHdrLen || len(e.Header) > geneveHdrLen+TunOptionsMax || len(e.Header)%4 != 0 {
		return fmt.Errorf("install offload entry: Geneve header of %d bytes", len(e.Header))
	}
	v.EncapSaddr, v.EncapDaddr = nativeU32(e.Src.As4()), nativeU32(e.Dst.As4())
	v.EncapSport, v.EncapDport = nativeU16(e.SrcPort), nativeU16(GenevePort)
	v.EncapMtu, v.EncapTtl, v.EncapHdrLen = e.MTU, e.TTL, uint8(len(e.Header))
	v.EncapDmac, v.EncapSmac = e.EthDst, e.EthSrc
	for i := 0; i < len(e.Header)/4; i++ {
		v.EncapHdr[i] = nativeU32([4]byte(e.Header[4*i:]))
	}
	return nil
}

// Delete removes fk's entry; a missing entry is no error.
func (k *Kernel) Delete(fk FlowKey) error {
	key, err := fk.kernel()
	if err != nil {
		return err
	}
	return k.delete(&key)
}

func (k *Kernel) delete(key *offloadFlowKey) error {
	if err := k.objs.Flows.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("delete offload entry: %w", err)
	}
	if k.conns != nil {
		if err := k.conns.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("delete offload entry's connection: %w", err)
		}
	}
	return nil
}

// lookupAndDelete deletes an entry and its connection record, reading
// the entry into v in the same system call (hash maps since Linux 5.14;
// an older kernel's error comes back, nothing deleted).
func (k *Kernel) lookupAndDelete(key *offloadFlowKey, v *offloadFlowAction) error {
	if err := k.objs.Flows.LookupAndDelete(key, v); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			k.deleteConn(key)
		}
		return err
	}
	k.deleteConn(key)
	return nil
}

// deleteConn deletes an entry's connection record, if pinned.
func (k *Kernel) deleteConn(key *offloadFlowKey) {
	if k.conns != nil {
		_ = k.conns.Delete(key) // missing: the entry had none
	}
}

// Lookup returns fk's counters, ok false without an entry.
func (k *Kernel) Lookup(fk FlowKey) (c Counters, ok bool, err error) {
	key, err := fk.kernel()
	if err != nil {
		return c, false, err
	}
	var v offloadFlowAction
	if err := k.objs.Flows.Lookup(&key, &v); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return c, false, nil
		}
		return c, false, fmt.Errorf("look up offload entry: %w", err)
	}
	return Counters{Packets: v.Packets, Bytes: v.Bytes, LastUsed: int64(v.LastUsed)}, true, nil
}

// SetGeneration makes every entry installed with another generation
// invalid at once (one array write the program reads per packet): the
// caller calls it before a changed pipeline can be used, and deletes the
// stale entries (Clear) later at leisure.
func (k *Kernel) SetGeneration(gen uint64) error {
	if err := k.objs.Generation.Put(uint32(0), gen); err != nil {
		return fmt.Errorf("set offload generation: %w", err)
	}
	return nil
}

// Clear deletes every entry.
func (k *Kernel) Clear() error {
	var key offloadFlowKey
	var keys []offloadFlowKey
	var v offloadFlowAction
	it := k.objs.Flows.Iterate()
	for it.Next(&key, &v) {
		keys = append(keys, key)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("list offload entries: %w", err)
	}
	for i := range keys {
		if err := k.delete(&keys[i]); err != nil {
			return err
		}
	}
	return nil
}

// Upcalls counts, over every CPU, the frames the tc program sent up to
// the ports' sockets and those lost on the way (a helper failed).
func (k *Kernel) Upcalls() (sent, lost uint64, err error) {
	var vs []offloadTcScratch
	if err := k.objs.Scratch.Lookup(uint32(0), &vs); err != nil {
		return 0, 0, fmt.Errorf("read tc path counters: %w", err)
	}
	for i := range vs {
		sent += vs[i].Upcalls
		lost += vs[i].UpcallErrors
	}
	return sent, lost, nil
}

// Len counts the entries (tests, dump-cache).
func (k *Kernel) Len() int {
	var key offloadFlowKey
	var v offloadFlowAction
	n := 0
	it := k.objs.Flows.Iterate()
	for it.Next(&key, &v) {
		n++
	}
	return n
}
