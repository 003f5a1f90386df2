package geneve

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/tunnel"
)

// Receiving for several ports on one UDP port.
//
// The kernel lets one socket bind a local address and UDP port, yet a node
// with several tunnels (ovn-controller makes one port per remote chassis,
// each with a fixed remote_ip) has several Geneve ports on UDP 6081. As in
// Open vSwitch, where one datapath port (genev_sys_6081) receives for all
// of them and ofproto maps each packet to its OpenFlow port by its tunnel
// header (ofproto/tunnel.c, tnl_find), every port with the same network
// namespace, UDP port and local_ip shares one receiver: one socket, read by
// one of the ports (the reader), and a table that says which port each
// datagram is for.

// KeyOption is options:in_key or options:out_key (or options:key, which
// sets both): flow (the zero value), or a fixed VNI.
type KeyOption struct {
	Fixed bool
	VNI   uint32
}

// String formats k as in the Interface options.
func (k KeyOption) String() string {
	if !k.Fixed {
		return "flow"
	}
	return fmt.Sprint(k.VNI)
}

// addr is an underlay address, IPv4 or IPv6, in the form a dual-stack
// socket reports a sender: IPv6, with IPv4 as v4-mapped (::ffff:a.b.c.d).
// It is kept in two words, as netip.Addr, so that the packet path compares
// it in registers. The zero value is no address (remote_ip=flow, no
// local_ip).
type addr struct{ hi, lo uint64 }

func addrFrom16(a *[16]byte) addr {
	return addr{binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])}
}

func addrFrom4(a *[4]byte) addr {
	return addr{0, 0xffff<<32 | uint64(binary.BigEndian.Uint32(a[:]))}
}

// addrOf returns a as an addr; an invalid or unspecified a is zero.
func addrOf(a netip.Addr) addr {
	if !a.IsValid() || a.IsUnspecified() {
		return addr{}
	}
	b := a.As16()
	return addrFrom16(&b)
}

func (a addr) String() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], a.hi)
	binary.BigEndian.PutUint64(b[8:], a.lo)
	return netip.AddrFrom16(b).Unmap().String()
}

// sourceAddr returns the sender of a datagram, which an AF_INET socket
// reports as a sockaddr_in and an AF_INET6 one as a sockaddr_in6 (IPv4
// senders v4-mapped on a dual-stack socket).
func sourceAddr(name *unix.RawSockaddrInet6) addr {
	if name.Family == unix.AF_INET {
		return addrFrom4(&(*unix.RawSockaddrInet4)(unsafe.Pointer(name)).Addr)
	}
	return addrFrom16(&name.Addr)
}

// match is how a port claims received packets, OVS's struct tnl_match for
// Geneve: the VNI (unless key=flow), the outer source (its remote_ip,
// unless remote_ip=flow; IPv4 or IPv6) and the outer destination (its
// local_ip; unset: any; local_ip=flow: any, tried after unset). The
// receiver's key already fixes the UDP port and namespace.
type match struct {
	vni       uint32 // in_key; 0 when keyFlow
	remote    addr   // zero: remote_ip=flow
	local     addr   // zero: any local address (unset or local_ip=flow)
	keyFlow   bool
	localFlow bool // local_ip=flow
}

func (m match) String() string {
	s := "remote_ip=flow"
	if m.remote != (addr{}) {
		s = "remote_ip=" + m.remote.String()
	}
	switch {
	case m.localFlow:
		s += " local_ip=flow"
	case m.local != (addr{}):
		s += " local_ip=" + m.local.String()
	}
	return s + " in_key=" + KeyOption{Fixed: !m.keyFlow, VNI: m.vni}.String()
}

// localKind is how a port matches the outer destination, in the order
// tnl_find tries them (its enum ip_src_type: IP_SRC_CFG, IP_SRC_ANY,
// IP_SRC_FLOW).
type localKind uint8

const (
	localCfg  localKind = iota // local_ip=IP: the destination must be IP
	localAny                   // no local_ip: any destination
	localFlow                  // local_ip=flow: any, left to the flows
)

func (m match) localKind() localKind {
	switch {
	case m.localFlow:
		return localFlow
	case m.local != (addr{}):
		return localCfg
	}
	return localAny
}

// class is the ports of one kind of match (which fields are fixed), in the
// order tnl_find tries them, by the fields of their match that vary within
// the class (zero when not fixed).
type class struct {
	kind  classKind
	ports map[classKey]*Port
}

type classKind struct {
	keyFlow, remoteFlow bool
	local               localKind
}

type classKey struct {
	remote, local addr
	vni           uint32
}

// classOrder is tnl_find's order, its twelve tnl_match_maps: fixed in_key
// before key=flow, then fixed remote_ip before remote_ip=flow, then
// local_ip=IP before no local_ip before local_ip=flow.
var classOrder = func() (o [12]classKind) {
	i := 0
	for _, keyFlow := range [2]bool{false, true} {
		for _, remoteFlow := range [2]bool{false, true} {
			for _, local := range [3]localKind{localCfg, localAny, localFlow} {
				o[i] = classKind{keyFlow, remoteFlow, local}
				i++
			}
		}
	}
	return o
}()

func (m match) class() classKind {
	return classKind{keyFlow: m.keyFlow, remoteFlow: m.remote == addr{}, local: m.localKind()}
}

// table is an immutable snapshot of a receiver's ports, rebuilt when a
// port comes or goes, so the packet path reads it without a lock.
type table struct {
	classes []class // the non-empty ones, in classOrder
	only    *Port   // the single port, when there is one
	// all is the single port when it takes every datagram of the
	// socket to allAt (any address, or its local_ip), whatever its source and VNI
	// (key=flow, remote_ip=flow: Antrea's), which then needs no lookup.
	all   *Port
	allAt dstMatch
}

// dstMatch is an outer destination in the form the packet path compares
// it in: any, an IPv4 address as tunnel.Metadata holds it, or IPv6.
type dstMatch struct {
	kind dstKind
	dst4 uint32
	dst  addr
}

type dstKind uint8

const (
	dstAny dstKind = iota
	dstV4
	dstV6
)

// misses reports whether the destination of m (as parseControl left it)
// is not d's; d is not dstAny.
func (d *dstMatch) misses(m *tunnel.Metadata) bool {
	if d.kind == dstV4 {
		return m.IPv6 || m.Dst != d.dst4
	}
	return destAddr(m) != d.dst
}

func dstMatchOf(a addr) dstMatch {
	switch {
	case a == (addr{}):
		return dstMatch{}
	case a.hi == 0 && a.lo>>32 == 0xffff:
		return dstMatch{kind: dstV4, dst4: uint32(a.lo), dst: a}
	}
	return dstMatch{kind: dstV6, dst: a}
}

// newTable indexes ports, which have distinct matches (join checks).
func newTable(ports []*Port) *table {
	t := &table{}
	if len(ports) == 1 {
		t.only = ports[0]
		if m := t.only.match; m.keyFlow && m.remote == (addr{}) {
			t.all, t.allAt = t.only, dstMatchOf(m.local)
		}
	}
	for _, o := range classOrder {
		c := class{kind: o}
		for _, p := range ports {
			if p.match.class() == o {
				if c.ports == nil {
					c.ports = map[classKey]*Port{}
				}
				c.ports[classKey{remote: p.match.remote, local: p.match.local, vni: p.match.vni}] = p
			}
		}
		if c.ports != nil {
			t.classes = append(t.classes, c)
		}
	}
	return t
}

// lookup returns the port a datagram from src to dst with VNI vni is for,
// or nil (Open vSwitch drops it: "receive tunnel port not found").
func (t *table) lookup(src, dst addr, vni uint32) *Port {
	if p := t.only; p != nil {
		if p.match.claims(src, dst, vni) {
			return p
		}
		return nil
	}
	for i := range t.classes {
		c := &t.classes[i]
		var k classKey
		if !c.kind.keyFlow {
			k.vni = vni
		}
		if !c.kind.remoteFlow {
			k.remote = src
		}
		if c.kind.local == localCfg {
			k.local = dst
		}
		if p := c.ports[k]; p != nil {
			return p
		}
	}
	return nil
}

// claims reports whether a datagram from src to dst with VNI vni matches m.
func (m match) claims(src, dst addr, vni uint32) bool {
	return (m.keyFlow || m.vni == vni) && (m.remote == addr{} || m.remote == src) && (m.local == addr{} || m.local == dst)
}

// receiverKey identifies a shared socket: the network namespace (device
// and inode of its nsfs file) and the UDP port. As Open vSwitch's
// userspace tunnels take the datagrams of the port for every address of
// the host (lib/tnl-ports.c) and match local_ip in tnl_find, the socket
// listens on every address, dual-stack (see openRx), and the table
// matches the outer destination.
type receiverKey struct {
	nsDev, nsIno uint64
	port         uint16
}

// receiver is the socket shared by the ports with one receiverKey.
type receiver struct {
	key receiverKey
	fd  int
	v6  bool // an IPv6 socket: receives from IPv6 peers

	// Guarded by receivers.mu.
	ports []*Port // in the order they opened

	tbl atomic.Pointer[table]
	// reader is the port that reads the socket (the first port still
	// open); the others wait for their turn.
	reader atomic.Pointer[Port]
	// drops is the socket's drop count (SO_MEMINFO) the ports' RxDropped
	// already have; full says the last read took a whole batch (the
	// queue may be overflowing). Only the reader touches them.
	drops uint32
	full  bool
}

// receivers are the open receivers of the process.
var receivers struct {
	mu sync.Mutex
	m  map[receiverKey]*receiver
}

// netnsID identifies the calling thread's network namespace.
func netnsID() (dev, ino uint64, err error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return 0, 0, err
	}
	return st.Dev, st.Ino, nil
}

// join adds p to the receiver of its namespace and UDP port, opening the
// socket with the first port (see admits for the ports it refuses).
func (p *Port) join() error {
	dev, ino, err := netnsID()
	if err != nil {
		return p.Errorf("network namespace: %w", err)
	}
	key := receiverKey{nsDev: dev, nsIno: ino, port: p.dstPort}
	receivers.mu.Lock()
	defer receivers.mu.Unlock()
	r := receivers.m[key]
	if r == nil {
		fd, v6, err := p.openRx()
		if err != nil {
			return err
		}
		r = &receiver{key: key, fd: fd, v6: v6}
	}
	if err := r.admits(p); err != nil {
		if len(r.ports) == 0 {
			unix.Close(r.fd) // the socket just opened
		}
		return err
	}
	if len(r.ports) == 0 {
		if receivers.m == nil {
			receivers.m = map[receiverKey]*receiver{}
		}
		receivers.m[key] = r
	}
	r.ports = append(r.ports, p)
	r.tbl.Store(newTable(r.ports))
	r.reader.CompareAndSwap(nil, p)
	p.rx = r
	return nil
}

// admits checks that p can join r: its match is new (Open vSwitch refuses
// a tunnel "with same config as port" another, with EEXIST) and r receives from its
// remote_ip's family.
func (r *receiver) admits(p *Port) error {
	for _, q := range r.ports {
		if q.match == p.match {
			return p.Errorf("same config as port %s (%s): %w", q.Name(), p.match, unix.EEXIST)
		}
	}
	if (p.remote6 != [16]byte{} || p.local6 != [16]byte{}) && !r.v6 {
		return p.Errorf("no IPv6 receive socket for %s (IPv6 is off in the kernel)", p.match)
	}
	return nil
}

// leave removes p from its receiver; the next port takes over the reading,
// and the last one closes the socket. p.rx stays set (a PMD thread may
// still ask PollFd).
func (p *Port) leave() error {
	r := p.rx
	if r == nil {
		return nil
	}
	receivers.mu.Lock()
	defer receivers.mu.Unlock()
	i := slices.Index(r.ports, p)
	if i < 0 {
		return nil // left already
	}
	r.ports = slices.Delete(r.ports, i, i+1)
	if len(r.ports) == 0 {
		delete(receivers.m, r.key)
		r.reader.Store(nil)
		fd := r.fd
		r.fd = -1
		return p.CloseFd(&fd, "UDP socket")
	}
	r.tbl.Store(newTable(r.ports))
	r.reader.CompareAndSwap(p, r.ports[0])
	return nil
}
