// Package flowtext reads and writes the ovs-ofctl flow syntax
// (ovs-fields(7), ovs-actions(7), ovs-ofctl(8)) for the govs flow model.
//
// Printing follows what `ovs-ofctl dump-flows --no-stats` prints for the
// same flows in a given OpenFlow version, because some actions travel
// differently per version and OVS prints them as they travelled (load: vs
// set_field:, mod_dl_dst: vs set_field:...->eth_dst, goto_table vs resubmit).
package flowtext

import (
	"fmt"
	"sort"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// FormatFlow prints a flow as `ovs-ofctl dump-flows --no-stats` does
// (without the leading space).
func FormatFlow(f *flowtable.Flow, o *PrintOptions) string {
	var b strings.Builder
	if f.Cookie != 0 {
		fmt.Fprintf(&b, "cookie=%#x, ", f.Cookie)
	}
	if f.Table != 0 {
		fmt.Fprintf(&b, "table=%d, ", f.Table)
	}
	if f.IdleTimeout != 0 {
		fmt.Fprintf(&b, "idle_timeout=%d, ", f.IdleTimeout)
	}
	if f.HardTimeout != 0 {
		fmt.Fprintf(&b, "hard_timeout=%d, ", f.HardTimeout)
	}
	if f.Flags != 0 {
		formatFlowFlags(&b, f.Flags)
	}
	if f.Importance != 0 {
		fmt.Fprintf(&b, "importance=%d, ", f.Importance)
	}
	n := b.Len()
	FormatMatch(&b, &f.Match, int(f.Priority), o)
	if b.Len() != n {
		b.WriteByte(' ')
	}
	b.WriteString("actions=")
	FormatActions(&b, f.Actions, o)
	return b.String()
}

func formatFlowFlags(b *strings.Builder, fl flowtable.FlowFlags) {
	names := []struct {
		f flowtable.FlowFlags
		n string
	}{
		{flowtable.FlagSendFlowRem, "send_flow_rem"},
		{flowtable.FlagCheckOverlap, "check_overlap"},
		{flowtable.FlagResetCounts, "reset_counts"},
		{flowtable.FlagNoPktCounts, "no_packet_counts"},
		{flowtable.FlagNoBytCounts, "no_byte_counts"},
	}
	for _, x := range names {
		if fl&x.f != 0 {
			b.WriteString(x.n)
			b.WriteString(" ")
		}
	}
}

// FormatMatch prints a match in OVS's canonical order (lib/match.c
// match_format); priority is printed unless it is the default.
func FormatMatch(b *strings.Builder, m *flowtable.Match, priority int, o *PrintOptions) {
	start := b.Len()
	if priority != flowtable.DefaultPriority {
		fmt.Fprintf(b, "priority=%d,", priority)
	}
	v, mk := &m.Value, &m.Mask
	u := func(f *flowtable.Field) (uint64, uint64) { return f.Uint64(v), f.Uint64(mk) }
	p := func(f *flowtable.Field) vm { return vm{f.Uint64(v), f.Uint64(mk)} }

	hexMaskedV(b, "pkt_mark", p(flowtable.FieldPktMark))
	if val, msk := u(flowtable.FieldRecircID); msk != 0 {
		hexMasked(b, "recirc_id", val, msk)
	}
	if val, msk := u(flowtable.FieldDpHash); msk != 0 {
		hexMasked(b, "dp_hash", val, msk)
	}
	if val, msk := u(flowtable.FieldConjID); msk != 0 {
		fmt.Fprintf(b, "conj_id=%d,", val)
	}
	if val, msk := u(flowtable.FieldActsetOutput); msk != 0 {
		b.WriteString("actset_output=")
		b.WriteString(ofptext.PortString(uint32(val), o))
		b.WriteByte(',')
	}
	if val, msk := u(flowtable.FieldCtState); msk != 0 {
		b.WriteString("ct_state=")
		if msk == 0xff || msk == 0xffffffff {
			if val == 0 {
				b.WriteString("0")
			} else {
				ofptext.FormatFlags(b, val, ofptext.CtStateNames, '|')
			}
		} else {
			ofptext.FormatFlagsMasked(b, val, msk, ofptext.CtStateNames, 0xff)
		}
		b.WriteByte(',')
	}
	if val, msk := u(flowtable.FieldCtZone); msk != 0 {
		uintMasked(b, "ct_zone", val, msk, 0xffff)
	}
	if val, msk := u(flowtable.FieldCtMark); msk != 0 {
		hexMasked(b, "ct_mark", val, msk)
	}
	if lv, lm := m.FieldValue(flowtable.FieldCtLabel); !ofptext.AllZero(lm) {
		b.WriteString("ct_label=")
		ofptext.PutHex(b, lv)
		if !ofptext.AllOnes(lm) {
			b.WriteByte('/')
			ofptext.PutHex(b, lm)
		}
		b.WriteByte(',')
	}
	ipMaskedV(b, "ct_nw_src", p(flowtable.FieldCtNwSrc))
	ipv6Masked(b, "ct_ipv6_src", m, flowtable.FieldCtIPv6Src)
	ipMaskedV(b, "ct_nw_dst", p(flowtable.FieldCtNwDst))
	ipv6Masked(b, "ct_ipv6_dst", m, flowtable.FieldCtIPv6Dst)
	if val, msk := u(flowtable.FieldCtNwProto); msk != 0 {
		fmt.Fprintf(b, "ct_nw_proto=%d,", val)
		be16MaskedV(b, "ct_tp_src", p(flowtable.FieldCtTpSrc))
		be16MaskedV(b, "ct_tp_dst", p(flowtable.FieldCtTpDst))
	}

	dlType, dlMask := u(flowtable.FieldEthType)
	proto, protoMask := u(flowtable.FieldIPProto)
	skipType, skipProto := false, false
	if dlMask != 0 {
		skipType = true
		switch dlType {
		case flowtable.EthTypeIPv4, flowtable.EthTypeIPv6:
			six := ""
			if dlType == flowtable.EthTypeIPv6 {
				six = "6"
			}
			name := ""
			if protoMask != 0 {
				skipProto = true
				switch proto {
				case flowtable.IPProtoICMP:
					if six == "" {
						name = "icmp"
					}
				case flowtable.IPProtoICMPv6:
					if six == "6" {
						name = "icmp6"
					}
				case flowtable.IPProtoTCP:
					name = "tcp" + six
				case flowtable.IPProtoUDP:
					name = "udp" + six
				case flowtable.IPProtoSCTP:
					name = "sctp" + six
				}
				if name == "" {
					skipProto = false
				}
			}
			if name == "" {
				name = "ip"
				if six != "" {
					name = "ipv6"
				}
			}
			b.WriteString(name)
			b.WriteByte(',')
		case flowtable.EthTypeARP:
			b.WriteString("arp,")
		case flowtable.EthTypeRARP:
			b.WriteString("rarp,")
		case flowtable.EthTypeMPLS:
			b.WriteString("mpls,")
		case 0x8848:
			b.WriteString("mplsm,")
		default:
			skipType = false
		}
	}
	for i := 0; i < 16; i++ {
		hexMaskedV(b, fmt.Sprintf("reg%d", i), p(flowtable.FieldReg[i]))
	}
	// Tunnel.
	if val, msk := u(flowtable.FieldTunID); msk != 0 {
		hexMasked(b, "tun_id", val, msk)
	}
	ipMaskedV(b, "tun_src", p(flowtable.FieldTunSrc))
	ipMaskedV(b, "tun_dst", p(flowtable.FieldTunDst))
	if val, msk := u(flowtable.FieldTunFlags); msk != 0 {
		b.WriteString("tun_flags=")
		ofptext.FormatFlagsMasked(b, val, msk, ofptext.TunFlagNames, 0x1)
		b.WriteByte(',')
	}
	formatTunMetadata(b, m, o)
	if val, msk := u(flowtable.FieldMetadata); msk != 0 {
		hexMasked(b, "metadata", val, msk)
	}
	if val, msk := u(flowtable.FieldInPort); msk != 0 {
		b.WriteString("in_port=")
		b.WriteString(ofptext.PortString(uint32(val), o))
		b.WriteByte(',')
	}
	if tci, tmask := u(flowtable.FieldVlanTCI); tmask != 0 {
		vidMask := tmask & flowtable.VlanVIDMask
		pcpMask := tmask & flowtable.VlanPCPMask
		cfi := tmask & flowtable.VlanCFI
		if cfi != 0 && tci&flowtable.VlanCFI != 0 &&
			(vidMask == 0 || vidMask == flowtable.VlanVIDMask) &&
			(pcpMask == 0 || pcpMask == flowtable.VlanPCPMask) &&
			(vidMask != 0 || pcpMask != 0) {
			if vidMask != 0 {
				fmt.Fprintf(b, "dl_vlan=%d,", tci&flowtable.VlanVIDMask)
			}
			if pcpMask != 0 {
				fmt.Fprintf(b, "dl_vlan_pcp=%d,", tci>>13)
			}
		} else if tmask == 0xffff {
			fmt.Fprintf(b, "vlan_tci=0x%04x,", tci)
		} else {
			fmt.Fprintf(b, "vlan_tci=0x%04x/0x%04x,", tci, tmask)
		}
	}
	ethMasked(b, "dl_src", m, flowtable.FieldEthSrc)
	ethMasked(b, "dl_dst", m, flowtable.FieldEthDst)
	if !skipType && dlMask != 0 {
		fmt.Fprintf(b, "dl_type=0x%04x,", dlType)
	}
	isARP := dlType == flowtable.EthTypeARP || dlType == flowtable.EthTypeRARP
	switch {
	case dlType == flowtable.EthTypeIPv6:
		ipv6Masked(b, "ipv6_src", m, flowtable.FieldIPv6Src)
		ipv6Masked(b, "ipv6_dst", m, flowtable.FieldIPv6Dst)
		if val, msk := u(flowtable.FieldIPv6Label); msk != 0 {
			if msk == 0xfffff {
				fmt.Fprintf(b, "ipv6_label=0x%05x,", val)
			} else {
				fmt.Fprintf(b, "ipv6_label=0x%05x/0x%05x,", val, msk)
			}
		}
		// ipv6_exthdr is not in OVS; printed like its other flag fields.
		if val, msk := u(flowtable.FieldIPv6ExtHdr); msk == 0x1ff {
			fmt.Fprintf(b, "ipv6_exthdr=%#x,", val)
		} else if msk != 0 {
			fmt.Fprintf(b, "ipv6_exthdr=%#x/%#x,", val, msk)
		}
	case isARP:
		ipMaskedV(b, "arp_spa", p(flowtable.FieldArpSpa))
		ipMaskedV(b, "arp_tpa", p(flowtable.FieldArpTpa))
	default:
		ipMaskedV(b, "nw_src", p(flowtable.FieldIPv4Src))
		ipMaskedV(b, "nw_dst", p(flowtable.FieldIPv4Dst))
	}
	if isARP {
		// arp_op has its own slot in govs; OVS prints it where nw_proto goes.
		if val, msk := u(flowtable.FieldArpOp); msk != 0 {
			fmt.Fprintf(b, "arp_op=%d,", val)
		}
	} else if !skipProto && protoMask != 0 {
		fmt.Fprintf(b, "nw_proto=%d,", proto)
	}
	if isARP {
		ethMasked(b, "arp_sha", m, flowtable.FieldArpSha)
		ethMasked(b, "arp_tha", m, flowtable.FieldArpTha)
	}
	tos, tosMask := flowtable.FieldNwTos.Uint64(v), flowtable.FieldNwTos.Uint64(mk)
	if tosMask&0xfc != 0 {
		fmt.Fprintf(b, "nw_tos=%d,", tos&0xfc)
	}
	if tosMask&0x03 != 0 {
		fmt.Fprintf(b, "nw_ecn=%d,", tos&0x03)
	}
	if flowtable.IsMPLS(uint16(dlType)) {
		// The top label stack entry, in OVS's match_format order.
		for _, f := range []*flowtable.Field{flowtable.FieldMPLSLabel, flowtable.FieldMPLSTC, flowtable.FieldMPLSTTL, flowtable.FieldMPLSBOS} {
			if val, msk := u(f); msk != 0 {
				fmt.Fprintf(b, "%s=%d,", f.Name, val)
			}
		}
	}
	if val, msk := u(flowtable.FieldIPTTL); msk != 0 {
		fmt.Fprintf(b, "nw_ttl=%d,", val)
	}
	if val, msk := u(flowtable.FieldIPFrag); msk != 0 {
		b.WriteString("nw_frag=")
		b.WriteString(ofptext.FragString(val, msk))
		b.WriteByte(',')
	}
	switch {
	case dlType == flowtable.EthTypeIPv4 && proto == flowtable.IPProtoICMP:
		be16MaskedV(b, "icmp_type", icmpSlot(p(tpSrc16)))
		be16MaskedV(b, "icmp_code", icmpSlot(p(tpDst16)))
	case dlType == flowtable.EthTypeIPv6 && proto == flowtable.IPProtoICMPv6:
		be16MaskedV(b, "icmp_type", icmpSlot(p(tpSrc16)))
		be16MaskedV(b, "icmp_code", icmpSlot(p(tpDst16)))
		ipv6Masked(b, "nd_target", m, flowtable.FieldNdTarget)
		ethMasked(b, "nd_sll", m, flowtable.FieldNdSll)
		ethMasked(b, "nd_tll", m, flowtable.FieldNdTll)
	default:
		be16MaskedV(b, "tp_src", p(tpSrc16))
		be16MaskedV(b, "tp_dst", p(tpDst16))
	}
	if (dlType == flowtable.EthTypeIPv4 || dlType == flowtable.EthTypeIPv6) && proto == flowtable.IPProtoTCP {
		if val, msk := u(flowtable.FieldTCPFlags); msk != 0 {
			b.WriteString("tcp_flags=")
			ofptext.FormatFlagsMasked(b, val, msk, ofptext.TCPFlagNames, 0xfff)
			b.WriteByte(',')
		}
	}
	if b.Len() > start {
		s := b.String()
		if s[len(s)-1] == ',' {
			trimLast(b)
		}
	}
}

// tpSrc16/tpDst16 view the whole 16-bit L4 port slots (icmp_type and
// icmp_code live in them), as OVS's flow->tp_src/tp_dst.
var (
	tpSrc16 = flowtable.FieldTCPSrc
	tpDst16 = flowtable.FieldTCPDst
)

// icmpSlot widens an icmp_type/icmp_code match (8 bits in govs) to the
// 16-bit port slot OVS prints it from.
func icmpSlot(x vm) vm {
	if x.m == 0xff {
		x.m = 0xffff
	}
	return x
}

// vm is a field's value and mask.
type vm struct{ v, m uint64 }

func hexMaskedV(b *strings.Builder, name string, x vm)  { hexMasked(b, name, x.v, x.m) }
func ipMaskedV(b *strings.Builder, name string, x vm)   { ipMasked(b, name, x.v, x.m) }
func be16MaskedV(b *strings.Builder, name string, x vm) { be16Masked(b, name, x.v, x.m) }

func trimLast(b *strings.Builder) {
	s := b.String()
	b.Reset()
	b.WriteString(s[:len(s)-1])
}

func formatTunMetadata(b *strings.Builder, m *flowtable.Match, o *PrintOptions) {
	if o == nil || o.TLV == nil {
		return
	}
	for _, mp := range o.TLV.Mappings() {
		f, err := o.TLV.Resolve(flowtable.FieldTunMetadataN[mp.Index])
		if err != nil || !m.Has(f) {
			continue
		}
		val, msk := m.FieldValue(f)
		fmt.Fprintf(b, "tun_metadata%d=", mp.Index)
		ofptext.PutHex(b, val)
		if !ofptext.AllOnes(msk) {
			b.WriteByte('/')
			ofptext.PutHex(b, msk)
		}
		b.WriteByte(',')
	}
}

// hexMasked is OVS format_uint32_masked / format_be64_masked: "%#x".
func hexMasked(b *strings.Builder, name string, val, msk uint64) {
	if msk == 0 {
		return
	}
	b.WriteString(name)
	b.WriteByte('=')
	b.WriteString(ofptext.CHex(val))
	if !isAllOnesWidth(name, msk) {
		b.WriteByte('/')
		b.WriteString(ofptext.CHex(msk))
	}
	b.WriteByte(',')
}

func isAllOnesWidth(name string, msk uint64) bool {
	switch name {
	case "metadata", "tun_id":
		return msk == ^uint64(0)
	}
	return msk == 0xffffffff
}

func uintMasked(b *strings.Builder, name string, val, msk, all uint64) {
	if msk == 0 {
		return
	}
	if msk == all {
		fmt.Fprintf(b, "%s=%d,", name, val)
	} else {
		fmt.Fprintf(b, "%s=0x%x/0x%x,", name, val, msk)
	}
}

func be16Masked(b *strings.Builder, name string, val, msk uint64) {
	uintMasked(b, name, val, msk, 0xffff)
}

func ipMasked(b *strings.Builder, name string, val, msk uint64) {
	if msk == 0 {
		return
	}
	b.WriteString(name)
	b.WriteByte('=')
	b.WriteString(ofptext.IPMaskedString(uint32(val), uint32(msk)))
	b.WriteByte(',')
}

func ipv6Masked(b *strings.Builder, name string, m *flowtable.Match, f *flowtable.Field) {
	val, msk := m.FieldValue(f)
	if ofptext.AllZero(msk) {
		return
	}
	b.WriteString(name)
	b.WriteByte('=')
	b.WriteString(ofptext.IPv6MaskedString(val, msk))
	b.WriteByte(',')
}

func ethMasked(b *strings.Builder, name string, m *flowtable.Match, f *flowtable.Field) {
	val, msk := m.FieldValue(f)
	if ofptext.AllZero(msk) {
		return
	}
	b.WriteString(name)
	b.WriteByte('=')
	b.WriteString(ofptext.EthMaskedString(val, msk))
	b.WriteByte(',')
}

// MatchString returns FormatMatch as a string.
func MatchString(m *flowtable.Match, priority int, o *PrintOptions) string {
	var b strings.Builder
	FormatMatch(&b, m, priority, o)
	return b.String()
}

// SortedFlowStrings formats flows and sorts the lines byte-wise, like
// `ovs-ofctl dump-flows ... | sort`.
func SortedFlowStrings(flows []*flowtable.Flow, o *PrintOptions) []string {
	out := make([]string, 0, len(flows))
	for _, f := range flows {
		out = append(out, " "+FormatFlow(f, o))
	}
	sort.Strings(out)
	return out
}
