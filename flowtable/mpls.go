package flowtable

import "encoding/binary"

// MPLS, as Open vSwitch's userspace datapath does it: the key holds the
// top label stack entry (mpls_label, mpls_tc, mpls_bos, mpls_ttl); the
// headers below an MPLS label are not parsed, so an MPLS packet has no L3
// fields and the entry shares its slot with ipv6_label, which only IPv6
// packets have. push_mpls and pop_mpls rewrite the frame and parse it
// again: after the last pop the L3 headers are back in the key.

// EthTypeMPLSMcast is the multicast MPLS ethertype (mplsm).
const EthTypeMPLSMcast = 0x8848

// offMPLS is the top label stack entry, as on the wire:
// label(20) tc(3) bos(1) ttl(8).
const offMPLS = offIPv6Label

// IsMPLS reports whether an ethertype is MPLS unicast or multicast.
func IsMPLS(ethType uint16) bool { return ethType == EthTypeMPLS || ethType == EthTypeMPLSMcast }

// MPLSLSE returns the top label stack entry.
func (k *Key) MPLSLSE() uint32 { return k.u32(offMPLS) }

// PushMPLS pushes an MPLS label stack entry (push_mpls:ETHERTYPE).
type PushMPLS struct{ EthType uint16 }

// PopMPLS pops the top MPLS label; EthType becomes the frame's ethertype
// (pop_mpls:ETHERTYPE).
type PopMPLS struct{ EthType uint16 }

// SetMPLSTTL sets the top label's TTL (set_mpls_ttl(TTL)).
type SetMPLSTTL struct{ TTL uint8 }

// DecMPLSTTL decrements the top label's TTL; at zero the packet goes to
// the controller with reason invalid_ttl (dec_mpls_ttl).
type DecMPLSTTL struct{}

// SetMPLSLabel sets the top label (set_mpls_label(LABEL), OpenFlow 1.1's
// OFPAT_SET_MPLS_LABEL; a set_field in 1.2+).
type SetMPLSLabel struct{ Label uint32 }

// SetMPLSTC sets the top label's traffic class (set_mpls_tc(TC)).
type SetMPLSTC struct{ TC uint8 }

func (*PushMPLS) Name() string     { return "push_mpls" }
func (*PopMPLS) Name() string      { return "pop_mpls" }
func (*SetMPLSTTL) Name() string   { return "set_mpls_ttl" }
func (*DecMPLSTTL) Name() string   { return "dec_mpls_ttl" }
func (*SetMPLSLabel) Name() string { return "set_mpls_label" }
func (*SetMPLSTC) Name() string    { return "set_mpls_tc" }

// l25 returns the offset of the L2.5 position: after the Ethernet header
// and its VLAN tag, where MPLS labels go.
func (p *Packet) l25() int {
	if p.Key.VlanTCI()&VlanCFI != 0 {
		return 18
	}
	return 14
}

// pushMPLS inserts a label stack entry as OVS's flow_push_mpls builds it:
// a copy of the top entry (bottom of stack cleared) on an MPLS packet,
// else label 0, the traffic class from the IP DSCP and the IP TTL (0
// without IP), bottom of stack.
func (x *xlate) pushMPLS(ethType uint16) {
	p := x.pkt
	if len(p.Frame) < 14 {
		return
	}
	k := &p.Key
	var lse uint32
	switch {
	case IsMPLS(k.EthType()):
		x.orMask(FieldMPLSTTL)
		x.orMask(FieldMPLSLabel)
		x.orMask(FieldMPLSTC)
		lse = k.MPLSLSE() &^ (1 << 8)
	case k.IsIPAny():
		x.orMask(FieldNwTos)
		x.orMask(FieldIPTTL)
		tc := uint32(k.u8(offNwTos)>>2) & 7
		ttl := uint32(k.NwTTL())
		if ttl == 0 {
			ttl = 64
		}
		lse = tc<<9 | 1<<8 | ttl
	default:
		lse = 1 << 8 // TTL 0, as the OpenFlow switch test suite expects
	}
	p.Commit()
	p.Unshare()
	at := p.l25()
	f := append(p.Frame, 0, 0, 0, 0) // may reallocate: outside the hot path
	copy(f[at+4:], f[at:len(f)-4])
	binary.BigEndian.PutUint16(f[at-2:], ethType)
	binary.BigEndian.PutUint32(f[at:], lse)
	p.Frame = f
	if p.Offload.Active() {
		p.Offload.CsumStart += 4
	}
	p.Rebase()
}

// popMPLS removes the top label and sets the ethertype; after the bottom
// of the stack the L3 headers are parsed again.
func (x *xlate) popMPLS(ethType uint16) {
	p := x.pkt
	if !IsMPLS(p.Key.EthType()) {
		return
	}
	at := p.l25()
	if len(p.Frame) < at+4 {
		return
	}
	p.Commit()
	p.Unshare()
	f := p.Frame
	copy(f[at:], f[at+4:])
	p.Frame = f[:len(f)-4]
	binary.BigEndian.PutUint16(p.Frame[at-2:], ethType)
	if p.Offload.Active() {
		p.Offload.CsumStart -= 4
	}
	p.Rebase() // parse the rewritten frame again, metadata kept
	if !IsMPLS(ethType) {
		p.trimToIP()
	}
}

// setMPLSTTL, decMPLSTTL, setMPLSLabel and setMPLSTC change the top
// label in the key; Commit writes it.
func (x *xlate) setMPLSField(f *Field, v uint64) {
	if !IsMPLS(x.pkt.Key.EthType()) {
		return
	}
	f.SetUint64(&x.pkt.Key, v)
	if x.r != nil {
		var w Key
		f.SetUint64(&w, ^uint64(0))
		x.r.wrote(&w)
	}
}

func (x *xlate) decMPLSTTL() {
	k := &x.pkt.Key
	if !IsMPLS(k.EthType()) {
		return
	}
	x.orMask(FieldMPLSTTL)
	ttl := FieldMPLSTTL.Uint64(k)
	if x.ttlExpired("dec_mpls_ttl", ttl) {
		return
	}
	x.setMPLSField(FieldMPLSTTL, ttl-1)
}

// ttlExpired reports whether a TTL of ttl cannot be decremented; then the
// packet goes to the controller with reason invalid_ttl and its actions
// end.
func (x *xlate) ttlExpired(action string, ttl uint64) bool {
	if ttl > 1 {
		return false
	}
	x.note("%s: TTL %d expired, sending to controller (invalid_ttl)", action, ttl)
	x.packetIn(&PacketIn{Reason: ReasonInvalidTTL, MaxLen: 0xffff}, 0)
	x.exit = true
	return true
}

// commitMPLS writes the top label stack entry.
func (p *Packet) commitMPLS() {
	at := p.l25()
	if len(p.Frame) >= at+4 && headerChanged(&p.Key, &p.base, offMPLS, 4) {
		binary.BigEndian.PutUint32(p.Frame[at:], p.Key.MPLSLSE())
	}
}

// Clone runs its actions on a copy of the packet; the original continues
// unchanged with the actions after it (clone(...), NXAST_CLONE).
type Clone struct{ Actions []Action }

func (*Clone) Name() string { return "clone" }

// clone runs acts on a copy of the packet (frame, key, action set) and
// then puts the original back, as OVS's compose_clone does; an exit inside
// ends only the clone.
func (x *xlate) clone(acts []Action) {
	p := x.pkt
	p.Commit()
	saved := *p
	saved.Frame = append([]byte(nil), p.Frame...) // not on the cached path: clone is not cached
	saved.lent = false
	nSet := len(x.actionSet)
	x.execute(acts)
	if x.freezing {
		// A pause in a clone ends there (OVS clone_xlate_actions), and
		// the walk stops after the clone.
		x.finishFreezing(x.cookie)
	} else {
		x.exit = false
	}
	x.actionSet = x.actionSet[:nSet]
	*p = saved
}

// CopyTTL copies the TTL between the top MPLS label and the IP header
// under it: outwards (copy_ttl_out, IP to MPLS) or inwards (copy_ttl_in).
// OpenFlow 1.1+ OFPAT_COPY_TTL_OUT/IN; Open vSwitch does not have them.
type CopyTTL struct{ In bool }

func (*CopyTTL) Name() string { return "copy_ttl" }

// innerIP returns the IP header right under the top label (nil unless the
// top label is the bottom of the stack and an IPv4 or IPv6 header follows)
// and the offset of its TTL.
func (p *Packet) innerIP() (ip []byte, ttlAt int) {
	k := &p.Key
	if !IsMPLS(k.EthType()) || k.MPLSLSE()&(1<<8) == 0 {
		return nil, 0
	}
	at := p.l25() + 4
	if len(p.Frame) < at+40 && !(len(p.Frame) >= at+20 && p.Frame[at]>>4 == 4) {
		return nil, 0
	}
	switch p.Frame[at] >> 4 {
	case 4:
		return p.Frame[at:], 8
	case 6:
		return p.Frame[at:], 7
	}
	return nil, 0
}

func (x *xlate) copyTTL(in bool) {
	p := x.pkt
	ip, ttlAt := p.innerIP()
	if ip == nil {
		return
	}
	if !in {
		x.setMPLSField(FieldMPLSTTL, uint64(ip[ttlAt]))
		return
	}
	p.Commit()
	p.Unshare()
	ip, _ = p.innerIP()
	ttl := uint8(FieldMPLSTTL.Uint64(&p.Key))
	if ttlAt == 8 { // IPv4: the header checksum follows
		old := binary.BigEndian.Uint16(ip[8:])
		ip[8] = ttl
		binary.BigEndian.PutUint16(ip[10:], csumUpdate16(binary.BigEndian.Uint16(ip[10:]), old, binary.BigEndian.Uint16(ip[8:])))
	} else {
		ip[7] = ttl
	}
}

// trimToIP re-pads the frame after the last pop: the Ethernet padding of
// the short frame that carried the label stack is dropped at the IP
// packet's end, and a frame now below the Ethernet minimum (60 bytes
// without the FCS) is padded with zeros to it, as an IP sender's would be.
func (p *Packet) trimToIP() {
	if p.L3 < 0 {
		return
	}
	if end := p.l4End(); end < len(p.Frame) && end >= p.L3+20 {
		p.Frame = p.Frame[:end]
	}
	for len(p.Frame) < minEthernetFrame {
		p.Frame = append(p.Frame, 0)
	}
}

// minEthernetFrame is the shortest Ethernet frame without its FCS.
const minEthernetFrame = 60
