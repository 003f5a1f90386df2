package flowtext

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// matchField is one entry of the match printer: a field printed as name
// by print when its prerequisite when holds (nil: always). The field's
// identity (width, bits) is its flowtable.Field; the value printers are
// ofptext's.
type matchField struct {
	name  string           // as OVS prints it; "" is field.Name
	field *flowtable.Field // nil for entries that print no single field
	when  func(c *matchCtx) bool
	print func(c *matchCtx, e *matchField)
}

// matchFields are the fields in the order OVS's match_format (lib/match.c)
// prints them, which is not the order of the flow key. Prerequisites
// follow the match's dl_type and nw_proto as OVS's do.
var matchFields = buildMatchFields()

func buildMatchFields() []matchField {
	fs := []matchField{
		{field: flowtable.FieldPktMark, print: printHex},
		{field: flowtable.FieldRecircID, print: printHex},
		{field: flowtable.FieldDpHash, print: printHex},
		{field: flowtable.FieldConjID, print: printDecimal},
		{field: flowtable.FieldActsetOutput, print: printPort},
		{field: flowtable.FieldCtState, print: printCtState},
		{field: flowtable.FieldCtZone, print: printBE16},
		{field: flowtable.FieldCtMark, print: printHex},
		{field: flowtable.FieldCtLabel, print: printWideHex},
		{field: flowtable.FieldCtNwSrc, print: printIPv4},
		{field: flowtable.FieldCtIPv6Src, print: printIPv6},
		{field: flowtable.FieldCtNwDst, print: printIPv4},
		{field: flowtable.FieldCtIPv6Dst, print: printIPv6},
		{field: flowtable.FieldCtNwProto, print: printDecimal},
		{field: flowtable.FieldCtTpSrc, when: ctProto, print: printBE16},
		{field: flowtable.FieldCtTpDst, when: ctProto, print: printBE16},
		{name: "protocol", print: printProtocol}, // ip, tcp6, arp...: dl_type and nw_proto in one word
	}
	for _, r := range flowtable.FieldReg {
		fs = append(fs, matchField{field: r, print: printHex})
	}
	return append(fs, []matchField{
		{field: flowtable.FieldTunID, print: printHex},
		{field: flowtable.FieldTunSrc, print: printIPv4},
		{field: flowtable.FieldTunDst, print: printIPv4},
		{field: flowtable.FieldTunIPv6Src, print: printIPv6},
		{field: flowtable.FieldTunIPv6Dst, print: printIPv6},
		{field: flowtable.FieldTunFlags, print: printTunFlags},
		{name: "tun_metadata", print: printTunMetadata},
		{field: flowtable.FieldMetadata, print: printHex},
		{field: flowtable.FieldInPort, print: printPort},
		{field: flowtable.FieldVlanTCI, print: printVlanTCI},
		{name: "dl_src", field: flowtable.FieldEthSrc, print: printEthernet},
		{name: "dl_dst", field: flowtable.FieldEthDst, print: printEthernet},
		{name: "dl_type", field: flowtable.FieldEthType, print: printDlType},
		{field: flowtable.FieldIPv6Src, when: isIPv6, print: printIPv6},
		{field: flowtable.FieldIPv6Dst, when: isIPv6, print: printIPv6},
		{field: flowtable.FieldIPv6Label, when: isIPv6, print: printHexAs("0x%05x", 0xfffff)},
		{field: flowtable.FieldIPv6ExtHdr, when: isIPv6, print: printHexAs("%#x", 0x1ff)},
		{field: flowtable.FieldArpSpa, when: isARP, print: printIPv4},
		{field: flowtable.FieldArpTpa, when: isARP, print: printIPv4},
		{name: "nw_src", field: flowtable.FieldIPv4Src, when: isOtherL3, print: printIPv4},
		{name: "nw_dst", field: flowtable.FieldIPv4Dst, when: isOtherL3, print: printIPv4},
		// arp_op has its own slot in govs; OVS prints it where nw_proto goes.
		{field: flowtable.FieldArpOp, when: isARP, print: printDecimal},
		{field: flowtable.FieldIPProto, when: notARP, print: printNwProto},
		{field: flowtable.FieldArpSha, when: isARP, print: printEthernet},
		{field: flowtable.FieldArpTha, when: isARP, print: printEthernet},
		{field: flowtable.FieldNwTos, print: printTosBits(0xfc)},
		{name: "nw_ecn", field: flowtable.FieldNwTos, print: printTosBits(0x03)},
		// The top label stack entry.
		{field: flowtable.FieldMPLSLabel, when: isMPLS, print: printDecimal},
		{field: flowtable.FieldMPLSTC, when: isMPLS, print: printDecimal},
		{field: flowtable.FieldMPLSTTL, when: isMPLS, print: printDecimal},
		{field: flowtable.FieldMPLSBOS, when: isMPLS, print: printDecimal},
		{field: flowtable.FieldIPTTL, print: printDecimal},
		{name: "nw_frag", field: flowtable.FieldIPFrag, print: printFrag},
		// icmp_type and icmp_code live in the 16-bit L4 port slots, which
		// OVS prints them from (flow->tp_src/tp_dst).
		{name: "icmp_type", field: flowtable.FieldTCPSrc, when: isICMP, print: printICMP},
		{name: "icmp_code", field: flowtable.FieldTCPDst, when: isICMP, print: printICMP},
		{field: flowtable.FieldNdTarget, when: isICMPv6, print: printIPv6},
		{field: flowtable.FieldNdSll, when: isICMPv6, print: printEthernet},
		{field: flowtable.FieldNdTll, when: isICMPv6, print: printEthernet},
		{name: "tp_src", field: flowtable.FieldTCPSrc, when: notICMP, print: printBE16},
		{name: "tp_dst", field: flowtable.FieldTCPDst, when: notICMP, print: printBE16},
		{field: flowtable.FieldTCPFlags, when: isTCP, print: printTCPFlags},
	}...)
}

func init() {
	for i := range matchFields {
		if e := &matchFields[i]; e.name == "" {
			e.name = e.field.Name
		}
	}
}

// matchCtx is one FormatMatch call: the match, and what its dl_type and
// nw_proto decide.
type matchCtx struct {
	b *strings.Builder
	m *flowtable.Match
	o *PrintOptions

	dlType, proto uint64
	// typeShown, protoShown: the protocol word (ip, tcp6, arp...) stood
	// for dl_type or nw_proto, which are then not printed again.
	typeShown, protoShown bool
}

// u returns f's value and mask.
func (c *matchCtx) u(f *flowtable.Field) (uint64, uint64) {
	return f.Uint64(&c.m.Value), f.Uint64(&c.m.Mask)
}

// The prerequisites.
func ctProto(c *matchCtx) bool {
	_, msk := c.u(flowtable.FieldCtNwProto)
	return msk != 0
}
func isIPv6(c *matchCtx) bool { return c.dlType == flowtable.EthTypeIPv6 }
func isARP(c *matchCtx) bool {
	return c.dlType == flowtable.EthTypeARP || c.dlType == flowtable.EthTypeRARP
}
func notARP(c *matchCtx) bool    { return !isARP(c) }
func isOtherL3(c *matchCtx) bool { return !isIPv6(c) && !isARP(c) }
func isMPLS(c *matchCtx) bool    { return flowtable.IsMPLS(uint16(c.dlType)) }
func isICMPv4(c *matchCtx) bool {
	return c.dlType == flowtable.EthTypeIPv4 && c.proto == flowtable.IPProtoICMP
}
func isICMPv6(c *matchCtx) bool { return isIPv6(c) && c.proto == flowtable.IPProtoICMPv6 }
func isICMP(c *matchCtx) bool   { return isICMPv4(c) || isICMPv6(c) }
func notICMP(c *matchCtx) bool  { return !isICMP(c) }
func isTCP(c *matchCtx) bool {
	return (c.dlType == flowtable.EthTypeIPv4 || isIPv6(c)) && c.proto == flowtable.IPProtoTCP
}

// The printers, each OVS's for that kind of field; a field whose mask is
// zero prints nothing.

// printHex is format_uint32_masked / format_be64_masked: %#x, the mask
// left out when all the field's bits are set.
func printHex(c *matchCtx, e *matchField) {
	val, msk := c.u(e.field)
	all := uint64(0xffffffff)
	if e.field.Bits == 64 {
		all = ^uint64(0)
	}
	if msk == 0 {
		return
	}
	c.b.WriteString(e.name)
	c.b.WriteByte('=')
	c.b.WriteString(ofptext.CHex(val))
	if msk != all {
		c.b.WriteByte('/')
		c.b.WriteString(ofptext.CHex(msk))
	}
	c.b.WriteByte(',')
}

// printDecimal prints the value of a field matched at all, in decimal.
func printDecimal(c *matchCtx, e *matchField) {
	if val, msk := c.u(e.field); msk != 0 {
		fmt.Fprintf(c.b, "%s=%d,", e.name, val)
	}
}

// printBE16 is format_be16_masked: decimal when exact, else hex/hex.
func printBE16(c *matchCtx, e *matchField) {
	val, msk := c.u(e.field)
	be16Masked(c, e.name, val, msk)
}

func be16Masked(c *matchCtx, name string, val, msk uint64) {
	switch {
	case msk == 0xffff:
		fmt.Fprintf(c.b, "%s=%d,", name, val)
	case msk != 0:
		fmt.Fprintf(c.b, "%s=0x%x/0x%x,", name, val, msk)
	}
}

// printICMP widens an icmp_type/icmp_code match (8 bits in govs) to the
// 16-bit port slot OVS prints it from.
func printICMP(c *matchCtx, e *matchField) {
	val, msk := c.u(e.field)
	if msk == 0xff {
		msk = 0xffff
	}
	be16Masked(c, e.name, val, msk)
}

func printPort(c *matchCtx, e *matchField) {
	if val, msk := c.u(e.field); msk != 0 {
		c.print(e.name, ofptext.PortString(uint32(val), c.o))
	}
}

// printIPv4 is format_ip_netmask: a prefix length where the mask is one.
func printIPv4(c *matchCtx, e *matchField) {
	if val, msk := c.u(e.field); msk != 0 {
		c.print(e.name, ofptext.IPMaskedString(uint32(val), uint32(msk)))
	}
}

func printIPv6(c *matchCtx, e *matchField) {
	if val, msk := c.m.FieldValue(e.field); !ofptext.AllZero(msk) {
		c.print(e.name, ofptext.IPv6MaskedString(val, msk))
	}
}

func printEthernet(c *matchCtx, e *matchField) {
	if val, msk := c.m.FieldValue(e.field); !ofptext.AllZero(msk) {
		c.print(e.name, ofptext.EthMaskedString(val, msk))
	}
}

// print writes name=value,.
func (c *matchCtx) print(name, value string) {
	c.b.WriteString(name)
	c.b.WriteByte('=')
	c.b.WriteString(value)
	c.b.WriteByte(',')
}

// printWideHex prints a field wider than 64 bits (ct_label,
// tun_metadataN) in hex.
func printWideHex(c *matchCtx, e *matchField) { wideHex(c, e.name, e.field) }

func wideHex(c *matchCtx, name string, f *flowtable.Field) {
	val, msk := c.m.FieldValue(f)
	if ofptext.AllZero(msk) {
		return
	}
	c.b.WriteString(name)
	c.b.WriteByte('=')
	ofptext.PutHex(c.b, val)
	if !ofptext.AllOnes(msk) {
		c.b.WriteByte('/')
		ofptext.PutHex(c.b, msk)
	}
	c.b.WriteByte(',')
}

// printFlags prints a flags field by names, as format_flags_masked.
func printFlags(c *matchCtx, e *matchField, names []ofptext.FlagName, maxMask uint64) {
	if val, msk := c.u(e.field); msk != 0 {
		c.b.WriteString(e.name)
		c.b.WriteByte('=')
		ofptext.FormatFlagsMasked(c.b, val, msk, names, maxMask)
		c.b.WriteByte(',')
	}
}

// printTunFlags: OVS compares the mask with all tunnel flags (FLOW_TNL_F_MASK,
// the private df/csum/key too), which a match on the one public bit never
// equals, so it always prints +oam/-oam.
func printTunFlags(c *matchCtx, e *matchField) { printFlags(c, e, ofptext.TunFlagNames, 0xf) }

func printTCPFlags(c *matchCtx, e *matchField) { printFlags(c, e, ofptext.TCPFlagNames, 0xfff) }

// printCtState: an exact ct_state is its flags joined by '|' (0 when
// none), a masked one +flag-flag.
func printCtState(c *matchCtx, e *matchField) {
	val, msk := c.u(e.field)
	if msk == 0 {
		return
	}
	if msk != 0xff && msk != 0xffffffff {
		printFlags(c, e, ofptext.CtStateNames, 0xff)
		return
	}
	c.b.WriteString(e.name)
	c.b.WriteByte('=')
	if val == 0 {
		c.b.WriteString("0")
	} else {
		ofptext.FormatFlags(c.b, val, ofptext.CtStateNames, '|')
	}
	c.b.WriteByte(',')
}

func printFrag(c *matchCtx, e *matchField) {
	if val, msk := c.u(e.field); msk != 0 {
		c.print(e.name, ofptext.FragString(val, msk))
	}
}

// printTosBits prints the bits of nw_tos in bits (DSCP as nw_tos, ECN
// as nw_ecn), as OVS splits the one byte.
func printTosBits(bits uint64) func(c *matchCtx, e *matchField) {
	return func(c *matchCtx, e *matchField) {
		if tos, msk := c.u(e.field); msk&bits != 0 {
			fmt.Fprintf(c.b, "%s=%d,", e.name, tos&bits)
		}
	}
}

func printNwProto(c *matchCtx, e *matchField) {
	if !c.protoShown {
		printDecimal(c, e)
	}
}

func printDlType(c *matchCtx, e *matchField) {
	if val, msk := c.u(e.field); !c.typeShown && msk != 0 {
		fmt.Fprintf(c.b, "%s=0x%04x,", e.name, val)
	}
}

// printHexAs prints a field in hex with verb, the mask left out when it
// is all: ipv6_label as OVS (0x%05x), ipv6_exthdr (not in OVS) like its
// other flag fields (%#x).
func printHexAs(verb string, all uint64) func(c *matchCtx, e *matchField) {
	return func(c *matchCtx, e *matchField) {
		switch val, msk := c.u(e.field); {
		case msk == all:
			fmt.Fprintf(c.b, "%s="+verb+",", e.name, val)
		case msk != 0:
			fmt.Fprintf(c.b, "%s="+verb+"/"+verb+",", e.name, val, msk)
		}
	}
}

// printVlanTCI prints dl_vlan/dl_vlan_pcp where they say all the match
// does (the CFI bit set, VID and PCP each wholly matched or not at all),
// else vlan_tci.
func printVlanTCI(c *matchCtx, e *matchField) {
	tci, tmask := c.u(e.field)
	if tmask == 0 {
		return
	}
	vidMask := tmask & flowtable.VlanVIDMask
	pcpMask := tmask & flowtable.VlanPCPMask
	switch {
	case tmask&flowtable.VlanCFI != 0 && tci&flowtable.VlanCFI != 0 &&
		(vidMask == 0 || vidMask == flowtable.VlanVIDMask) &&
		(pcpMask == 0 || pcpMask == flowtable.VlanPCPMask) &&
		(vidMask != 0 || pcpMask != 0):
		if vidMask != 0 {
			fmt.Fprintf(c.b, "dl_vlan=%d,", tci&flowtable.VlanVIDMask)
		}
		if pcpMask != 0 {
			fmt.Fprintf(c.b, "dl_vlan_pcp=%d,", tci>>13)
		}
	case tmask == 0xffff:
		fmt.Fprintf(c.b, "%s=0x%04x,", e.name, tci)
	default:
		fmt.Fprintf(c.b, "%s=0x%04x/0x%04x,", e.name, tci, tmask)
	}
}

// protocolWords are the words OVS prints for a dl_type and nw_proto
// together (tcp6), or for a dl_type alone (proto -1), first match wins.
var protocolWords = []struct {
	dlType uint64
	proto  int
	word   string
}{
	{flowtable.EthTypeIPv4, flowtable.IPProtoICMP, "icmp"},
	{flowtable.EthTypeIPv4, flowtable.IPProtoTCP, "tcp"},
	{flowtable.EthTypeIPv4, flowtable.IPProtoUDP, "udp"},
	{flowtable.EthTypeIPv4, flowtable.IPProtoSCTP, "sctp"},
	{flowtable.EthTypeIPv6, flowtable.IPProtoICMPv6, "icmp6"},
	{flowtable.EthTypeIPv6, flowtable.IPProtoTCP, "tcp6"},
	{flowtable.EthTypeIPv6, flowtable.IPProtoUDP, "udp6"},
	{flowtable.EthTypeIPv6, flowtable.IPProtoSCTP, "sctp6"},
	{flowtable.EthTypeIPv4, -1, "ip"},
	{flowtable.EthTypeIPv6, -1, "ipv6"},
	{flowtable.EthTypeARP, -1, "arp"},
	{flowtable.EthTypeRARP, -1, "rarp"},
	{flowtable.EthTypeMPLS, -1, "mpls"},
	{0x8848, -1, "mplsm"},
}

// printProtocol prints the one word OVS uses for a matched dl_type, with
// the nw_proto when it has a name (tcp, udp6, icmp...), and records what
// the word stood for.
func printProtocol(c *matchCtx, _ *matchField) {
	if _, msk := c.u(flowtable.FieldEthType); msk == 0 {
		return
	}
	_, protoMask := c.u(flowtable.FieldIPProto)
	for _, w := range protocolWords {
		if w.dlType == c.dlType && (w.proto < 0 || protoMask != 0 && uint64(w.proto) == c.proto) {
			c.typeShown, c.protoShown = true, w.proto >= 0
			c.b.WriteString(w.word)
			c.b.WriteByte(',')
			return
		}
	}
}

// printTunMetadata prints the tun_metadataN the TLV map maps, in the
// map's order.
func printTunMetadata(c *matchCtx, _ *matchField) {
	if c.o == nil || c.o.TLV == nil {
		return
	}
	for _, mp := range c.o.TLV.Mappings() {
		f, err := c.o.TLV.Resolve(flowtable.FieldTunMetadataN[mp.Index])
		if err != nil || !c.m.Has(f) {
			continue
		}
		wideHex(c, fmt.Sprintf("tun_metadata%d", mp.Index), f)
	}
}
