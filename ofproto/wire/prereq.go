package wire

// prereqState tracks what the TLVs decoded so far establish, to check each
// field's prerequisites the way OVS's strict nx_pull_raw() does: a field is
// accepted only if earlier TLVs satisfy its prerequisites (order matters).
type prereqState struct {
	ethType            uint16
	hasEthType         bool
	nwProto            uint8
	hasNwProto         bool
	icmpType, icmpCode uint8
	hasICMPType        bool
	hasICMPCode        bool
	ctState, ctMask    uint32
	vlanPresent        bool
}

const (
	ethTypeIPv4   = 0x0800
	ethTypeARP    = 0x0806
	ethTypeRARP   = 0x8035
	ethTypeIPv6   = 0x86dd
	ethTypeMPLS   = 0x8847
	ethTypeMPLSMC = 0x8848
)

// exact reports whether mask is nil or all ones.
func exact(mask []byte) bool {
	for _, c := range mask {
		if c != 0xff {
			return false
		}
	}
	return true
}

func (p *prereqState) add(f *FieldInfo, v, m []byte) {
	switch f.Name {
	case "eth_type":
		if exact(m) {
			p.ethType, p.hasEthType = be16(v), true
		}
	case "nw_proto":
		if exact(m) {
			p.nwProto, p.hasNwProto = v[0], true
		}
	case "icmpv6_type", "icmp_type":
		if exact(m) {
			p.icmpType, p.hasICMPType = v[0], true
		}
	case "icmpv6_code", "icmp_code":
		if exact(m) {
			p.icmpCode, p.hasICMPCode = v[0], true
		}
	case "ct_state":
		p.ctState = be32(v)
		p.ctMask = 0xffffffff
		if m != nil {
			p.ctMask = be32(m)
		}
	case "vlan_vid", "vlan_tci", "dl_vlan":
		// The CFI/"present" bit (0x1000) must be matched as 1.
		if f.Name == "dl_vlan" {
			p.vlanPresent = true
		} else if v[0]&0x10 != 0 && (m == nil || m[0]&0x10 != 0) {
			p.vlanPresent = true
		}
	}
}

func (p *prereqState) isIP() bool {
	return p.hasEthType && (p.ethType == ethTypeIPv4 || p.ethType == ethTypeIPv6)
}

func (p *prereqState) ipProto(proto uint8) bool {
	return p.isIP() && p.hasNwProto && p.nwProto == proto
}

// ok implements mf_are_match_prereqs_ok for f given the state so far.
func (p *prereqState) ok(f *FieldInfo) bool {
	switch f.Prereq {
	case "none", "Ethernet", "":
		return true
	case "ARP":
		return p.hasEthType && (p.ethType == ethTypeARP || p.ethType == ethTypeRARP)
	case "IPv4":
		return p.hasEthType && p.ethType == ethTypeIPv4
	case "IPv6":
		return p.hasEthType && p.ethType == ethTypeIPv6
	case "IPv4/IPv6":
		return p.isIP()
	case "VLAN VID":
		return p.vlanPresent
	case "MPLS":
		return p.hasEthType && (p.ethType == ethTypeMPLS || p.ethType == ethTypeMPLSMC)
	case "TCP":
		return p.ipProto(6)
	case "UDP":
		return p.ipProto(17)
	case "SCTP":
		return p.ipProto(132)
	case "ICMPv4":
		return p.hasEthType && p.ethType == ethTypeIPv4 && p.hasNwProto && p.nwProto == 1
	case "ICMPv6":
		return p.hasEthType && p.ethType == ethTypeIPv6 && p.hasNwProto && p.nwProto == 58
	case "ND", "ND solicit", "ND advert":
		if !(p.hasEthType && p.ethType == ethTypeIPv6 && p.hasNwProto && p.nwProto == 58 && p.hasICMPType) {
			return false
		}
		if p.hasICMPCode && p.icmpCode != 0 {
			return false
		}
		switch f.Prereq {
		case "ND solicit":
			return p.icmpType == 135
		case "ND advert":
			return p.icmpType == 136
		}
		return p.icmpType == 135 || p.icmpType == 136
	case "CT":
		// is_ct_valid(): some bit implying a valid entry, or +trk with an
		// explicit -inv.
		const valid = 0x01 | 0x02 | 0x04 | 0x08 | 0x40 | 0x80 // new est rel rpl snat dnat
		const trk, inv = 0x20, 0x10
		return p.ctState&p.ctMask&valid != 0 ||
			(p.ctState&p.ctMask&trk != 0 && p.ctMask&inv != 0 && p.ctState&inv == 0)
	case "NSH":
		return p.hasEthType && p.ethType == 0x894f
	}
	return true
}
