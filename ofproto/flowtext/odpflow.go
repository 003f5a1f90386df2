package flowtext

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// DatapathFlow prints a megaflow (its masked key and mask) as
// `ovs-appctl dpctl/dump-flows` prints a flow of the userspace datapath
// (odp_flow_format in OVS's lib/odp-util.c, not verbose): the attributes
// in the datapath's order, a fully wildcarded one left out, a field with
// an empty mask left out, a partly masked one as value/mask.
// recirc_id, in_port and packet_type are always exact in govs's cache.
func DatapathFlow(value, mask *flowtable.Key, port func(uint32) string) string {
	var attrs []string
	add := func(name string, parts ...string) {
		var kept []string
		for _, p := range parts {
			if p != "" {
				kept = append(kept, p)
			}
		}
		if len(kept) > 0 {
			attrs = append(attrs, name+"("+strings.Join(kept, ",")+")")
		}
	}
	f := func(fd *flowtable.Field) (uint64, uint64) { return fd.Uint64(value), fd.Uint64(mask) }

	// A packet that came from a tunnel (tun_dst or tun_ipv6_dst set): like
	// OVS's tun_key_to_attr, the addresses that are set, IPv4 before IPv6.
	v, m := f(flowtable.FieldTunDst)
	if v6 := flowtable.FieldTunIPv6Dst.Value(value); v != 0 || !ofptext.AllZero(v6) {
		id, idm := f(flowtable.FieldTunID)
		src, srcm := f(flowtable.FieldTunSrc)
		if src == 0 {
			srcm = 0
		}
		if v == 0 {
			m = 0
		}
		add("tunnel", odpHex64("tun_id", id, idm), odpIPv4("src", uint32(src), uint32(srcm)), odpIPv4("dst", uint32(v), uint32(m)),
			odpIPv6Set("ipv6_src", flowtable.FieldTunIPv6Src, value, mask), odpIPv6Set("ipv6_dst", flowtable.FieldTunIPv6Dst, value, mask))
	}
	if v, m := f(flowtable.FieldPktMark); m != 0 {
		add("skb_mark", odpHex32("", uint32(v), uint32(m)))
	}
	if v, m := f(flowtable.FieldCtState); m != 0 {
		add("ct_state", maskedFlags(ctStateNames, uint32(v), uint32(m)))
	}
	if v, m := f(flowtable.FieldCtZone); m != 0 {
		add("ct_zone", odpMasked(cHex(v), m, 0xffff))
	}
	if v, m := f(flowtable.FieldCtMark); m != 0 {
		add("ct_mark", odpHex32("", uint32(v), uint32(m)))
	}
	if v, m := flowtable.FieldCtLabel.Value(value), flowtable.FieldCtLabel.Value(mask); !ofptext.AllZero(m) {
		s := hexBytes(v)
		if !ofptext.AllOnes(m) {
			s += "/" + hexBytes(m)
		}
		add("ct_label", s)
	}
	add("recirc_id", cHex(uint64(value.RecircID())))
	if v, m := f(flowtable.FieldDpHash); m != 0 {
		add("dp_hash", odpHex32("", uint32(v), uint32(m)))
	}
	// A segment after a recirculation may not look at in_port: govs's
	// megaflow then matches every port, and OVS leaves a wildcarded
	// attribute out.
	if in := value.InPort(); flowtable.FieldInPort.Uint64(mask) != 0 {
		if port != nil {
			add("in_port", port(in))
		} else {
			add("in_port", fmt.Sprint(in))
		}
	}
	add("packet_type", "ns=0", "id=0")
	add("eth", odpEth("src", flowtable.FieldEthSrc, value, mask), odpEth("dst", flowtable.FieldEthDst, value, mask))
	// OVS's key has a vlan attribute only for a tagged frame.
	if v, m := f(flowtable.FieldVlanTCI); m != 0 && v&0x1000 != 0 {
		add("vlan", vlanTCI(uint16(v), uint16(m)))
	}
	et, etm := f(flowtable.FieldEthType)
	if etm != 0 {
		add("eth_type", odpMasked(fmt.Sprintf("0x%04x", et), etm, 0xffff))
	}
	if etm == 0 {
		return strings.Join(attrs, ",")
	}
	u8 := func(name string, fd *flowtable.Field, hex bool) string {
		v, m := f(fd)
		if m == 0 {
			return ""
		}
		s := fmt.Sprintf("%s=%d", name, v)
		if hex {
			s = name + "=" + cHex(v)
		}
		if m != 0xff {
			s += "/" + cHex(m)
		}
		return s
	}
	// OVS's megaflows of IP packets always match the fragment type; a
	// govs entry that does not look at it prints the packet's, as the
	// trace's megaflow does.
	frag := func() string {
		v, _ := f(flowtable.FieldIPFrag)
		switch {
		case v&2 != 0:
			return "frag=later"
		case v&1 != 0:
			return "frag=first"
		}
		return "frag=no"
	}
	switch et {
	case flowtable.EthTypeIPv4:
		src, srcm := f(flowtable.FieldIPv4Src)
		dst, dstm := f(flowtable.FieldIPv4Dst)
		add("ipv4", odpIPv4("src", uint32(src), uint32(srcm)), odpIPv4("dst", uint32(dst), uint32(dstm)),
			u8("proto", flowtable.FieldIPProto, false), u8("tos", flowtable.FieldNwTos, true), u8("ttl", flowtable.FieldIPTTL, false), frag())
	case flowtable.EthTypeIPv6:
		lbl, lblm := f(flowtable.FieldIPv6Label)
		label := ""
		if lblm != 0 {
			label = odpMasked("label="+cHex(lbl), lblm, 0xfffff)
		}
		add("ipv6", odpIPv6("src", flowtable.FieldIPv6Src, value, mask), odpIPv6("dst", flowtable.FieldIPv6Dst, value, mask), label,
			u8("proto", flowtable.FieldIPProto, false), u8("tclass", flowtable.FieldNwTos, true), u8("hlimit", flowtable.FieldIPTTL, false), frag())
	case flowtable.EthTypeARP:
		sip, sipm := f(flowtable.FieldArpSpa)
		tip, tipm := f(flowtable.FieldArpTpa)
		op, opm := f(flowtable.FieldArpOp)
		opS := ""
		if opm != 0 {
			opS = odpMasked(fmt.Sprintf("op=%d", op), opm, 0xffff)
		}
		add("arp", odpIPv4("sip", uint32(sip), uint32(sipm)), odpIPv4("tip", uint32(tip), uint32(tipm)), opS,
			odpEth("sha", flowtable.FieldArpSha, value, mask), odpEth("tha", flowtable.FieldArpTha, value, mask))
		return strings.Join(attrs, ",")
	default:
		return strings.Join(attrs, ",")
	}
	l4 := func(name string, fs, fd *flowtable.Field) {
		s, sm := f(fs)
		d, dm := f(fd)
		var a, b string
		if sm != 0 {
			a = odpMasked(fmt.Sprintf("src=%d", s), sm, 0xffff)
		}
		if dm != 0 {
			b = odpMasked(fmt.Sprintf("dst=%d", d), dm, 0xffff)
		}
		add(name, a, b)
	}
	switch value.NwProto() {
	case flowtable.IPProtoTCP:
		l4("tcp", flowtable.FieldTCPSrc, flowtable.FieldTCPDst)
		if v, m := f(flowtable.FieldTCPFlags); m != 0 {
			add("tcp_flags", maskedFlags(tcpFlagNames, uint32(v), uint32(m)))
		}
	case flowtable.IPProtoUDP:
		l4("udp", flowtable.FieldUDPSrc, flowtable.FieldUDPDst)
	case flowtable.IPProtoSCTP:
		l4("sctp", flowtable.FieldSCTPSrc, flowtable.FieldSCTPDst)
	case flowtable.IPProtoICMP:
		add("icmp", u8("type", flowtable.FieldICMPType, false), u8("code", flowtable.FieldICMPCode, false))
	case flowtable.IPProtoICMPv6:
		add("icmpv6", u8("type", flowtable.FieldICMPv6Type, false), u8("code", flowtable.FieldICMPv6Code, false))
		add("nd", odpIPv6("target", flowtable.FieldNdTarget, value, mask), odpEth("sll", flowtable.FieldNdSll, value, mask),
			odpEth("tll", flowtable.FieldNdTll, value, mask))
	}
	return strings.Join(attrs, ",")
}

// DatapathActions prints a megaflow's datapath operations as OVS's
// format_odp_actions: the set() actions that bring the packet to what
// the flow wrote before each output or ct(), ct(...) with recirc(N) when
// the packet is looked up again, the output ports; "drop" for none.
func DatapathActions(value *flowtable.Key, ops []flowtable.DPOp, port func(uint32) string) string {
	var t OVSTrace
	t.DatapathPort = port
	committed, cur := *value, *value
	var out []string
	push := uint16(0) // a pushed tag's TPID, printed with the TCI it leaves with
	for i := range ops {
		op := &ops[i]
		for w := 0; w < flowtable.KeyWords; w++ {
			if m := op.WMask.Word(w); m != 0 {
				cur.SetWord(w, cur.Word(w)&^m|op.Write.Word(w)&m)
			}
		}
		out = append(out, t.commitSets(&committed, &cur)...)
		if push != 0 {
			out = append(out, pushVLANAction(push, cur.VlanTCI()))
			push = 0
		}
		switch op.Kind {
		case flowtable.DPOutput:
			p := op.Port
			if op.InPort {
				p = value.InPort()
			}
			if p == flowtable.PortController {
				out = append(out, "userspace(controller)")
				continue
			}
			out = append(out, t.dpPort(p))
		case flowtable.DPCT:
			act := datapathCT(&flowtable.CT{}, &op.CT)
			if op.Table != flowtable.TableNone {
				act += ",recirc(" + cHex(uint64(flowtable.RecircID(op.Table))) + ")"
			}
			out = append(out, act)
		case flowtable.DPPushVLAN:
			push = op.VLANType // printed with the tag's final TCI
		case flowtable.DPPopVLAN:
			out = append(out, "pop_vlan")
		}
	}
	if len(out) == 0 {
		return "drop"
	}
	return strings.Join(out, ",")
}

// pushVLANAction is OVS's push_vlan datapath action for a tag with TCI
// tci (CFI set) and TPID tpid.
func pushVLANAction(tpid, tci uint16) string {
	s := "push_vlan("
	if tpid != flowtable.EthTypeVLAN {
		s += fmt.Sprintf("tpid=%#x,", tpid)
	}
	return s + fmt.Sprintf("vid=%d,pcp=%d)", tci&0xfff, tci>>13)
}

// cHex is C's %#x: "0" for zero, else 0x and the digits.
func cHex(v uint64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}

// odpMasked appends "/mask" (hexadecimal) to s when mask is not full.
func odpMasked(s string, mask, full uint64) string {
	if mask == full {
		return s
	}
	return s + "/" + cHex(mask)
}

func odpHex32(name string, v, m uint32) string {
	s := cHex(uint64(v))
	if name != "" {
		s = name + "=" + s
	}
	return odpMasked(s, uint64(m), 0xffffffff)
}

// odpHex64 is OVS's format_be64: the value always with 0x (tun_id=0x0),
// the mask as %#x.
func odpHex64(name string, v, m uint64) string {
	if m == 0 {
		return ""
	}
	return odpMasked(name+"=0x"+strconv.FormatUint(v, 16), m, ^uint64(0))
}

func odpIPv4(name string, v, m uint32) string {
	if m == 0 {
		return ""
	}
	s := name + "=" + ipv4String(v)
	if m != 0xffffffff {
		s += "/" + ipv4String(m)
	}
	return s
}

func ipv4String(v uint32) string {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return netip.AddrFrom4(b).String()
}

func odpIPv6(name string, fd *flowtable.Field, value, mask *flowtable.Key) string {
	m := fd.Value(mask)
	if ofptext.AllZero(m) {
		return ""
	}
	s := name + "=" + ofptext.IPv6String([16]byte(fd.Value(value)))
	if !ofptext.AllOnes(m) {
		s += "/" + ofptext.IPv6String([16]byte(m))
	}
	return s
}

// odpIPv6Set is odpIPv6 for an attribute OVS puts only when it is set.
func odpIPv6Set(name string, fd *flowtable.Field, value, mask *flowtable.Key) string {
	if ofptext.AllZero(fd.Value(value)) {
		return ""
	}
	return odpIPv6(name, fd, value, mask)
}

func odpEth(name string, fd *flowtable.Field, value, mask *flowtable.Key) string {
	m := fd.Value(mask)
	if ofptext.AllZero(m) {
		return ""
	}
	s := name + "=" + net.HardwareAddr(fd.Value(value)).String()
	if !ofptext.AllOnes(m) {
		s += "/" + net.HardwareAddr(m).String()
	}
	return s
}

// vlanTCI prints a vlan attribute as OVS's format_vlan_tci.
func vlanTCI(v, m uint16) string {
	var parts []string
	if vid := m & 0xfff; vid != 0 || v&0xfff != 0 {
		parts = append(parts, odpMasked(fmt.Sprintf("vid=%d", v&0xfff), uint64(vid), 0xfff))
	}
	if pcp := m >> 13; pcp != 0 || v>>13 != 0 {
		parts = append(parts, odpMasked(fmt.Sprintf("pcp=%d", v>>13), uint64(pcp), 7))
	}
	if v&0x1000 == 0 {
		parts = append(parts, "cfi=0")
	}
	return strings.Join(parts, ",")
}

// maskedFlags prints flags as OVS's format_flags_masked: each bit of
// the mask as +name or -name, lowest first (ct_state, tcp_flags).
func maskedFlags(names []string, v, m uint32) string {
	var b strings.Builder
	for i, name := range names {
		bit := uint32(1) << i
		if m&bit == 0 {
			continue
		}
		if v&bit != 0 {
			b.WriteByte('+')
		} else {
			b.WriteByte('-')
		}
		b.WriteString(name)
	}
	return b.String()
}

var (
	ctStateNames = []string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}
	tcpFlagNames = []string{"fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns"}
)

func hexBytes(b []byte) string {
	s := strings.TrimLeft(fmt.Sprintf("%x", b), "0")
	if s == "" {
		s = "0"
	}
	return "0x" + s
}
