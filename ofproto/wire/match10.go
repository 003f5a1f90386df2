package wire

// OFPFW10_* wildcard bits of the OpenFlow 1.0 ofp_match.
const (
	OFPFW10_IN_PORT      uint32 = 1 << 0
	OFPFW10_DL_VLAN      uint32 = 1 << 1
	OFPFW10_DL_SRC       uint32 = 1 << 2
	OFPFW10_DL_DST       uint32 = 1 << 3
	OFPFW10_DL_TYPE      uint32 = 1 << 4
	OFPFW10_NW_PROTO     uint32 = 1 << 5
	OFPFW10_TP_SRC       uint32 = 1 << 6
	OFPFW10_TP_DST       uint32 = 1 << 7
	OFPFW10_NW_SRC_SHIFT        = 8
	OFPFW10_NW_SRC_MASK  uint32 = 0x3f << 8
	OFPFW10_NW_DST_SHIFT        = 14
	OFPFW10_NW_DST_MASK  uint32 = 0x3f << 14
	OFPFW10_DL_VLAN_PCP  uint32 = 1 << 20
	OFPFW10_NW_TOS       uint32 = 1 << 21
	OFPFW10_ALL          uint32 = (1 << 22) - 1
)

// Match10Len is sizeof(struct ofp10_match).
const Match10Len = 40

// Match10 is the OpenFlow 1.0 struct ofp10_match, kept exactly as on the
// wire (values under wildcarded bits are preserved for exact re-encoding).
type Match10 struct {
	Wildcards uint32
	InPort    uint16
	DlSrc     [6]byte
	DlDst     [6]byte
	DlVlan    uint16
	DlVlanPCP uint8
	DlType    uint16
	NwTos     uint8
	NwProto   uint8
	NwSrc     uint32
	NwDst     uint32
	TpSrc     uint16
	TpDst     uint16
}

// NwSrcPrefix returns the CIDR prefix length the wildcards leave on nw_src
// (0 = fully wildcarded).
func (m *Match10) NwSrcPrefix() int {
	return prefixFromWild((m.Wildcards & OFPFW10_NW_SRC_MASK) >> OFPFW10_NW_SRC_SHIFT)
}

// NwDstPrefix is NwSrcPrefix for nw_dst.
func (m *Match10) NwDstPrefix() int {
	return prefixFromWild((m.Wildcards & OFPFW10_NW_DST_MASK) >> OFPFW10_NW_DST_SHIFT)
}

func prefixFromWild(w uint32) int {
	if w >= 32 {
		return 0
	}
	return 32 - int(w)
}

// Append encodes the 40-byte match.
func (m *Match10) Append(b []byte) []byte {
	b = put32(b, m.Wildcards)
	b = put16(b, m.InPort)
	b = append(b, m.DlSrc[:]...)
	b = append(b, m.DlDst[:]...)
	b = put16(b, m.DlVlan)
	b = append(b, m.DlVlanPCP, 0)
	b = put16(b, m.DlType)
	b = append(b, m.NwTos, m.NwProto, 0, 0)
	b = put32(put32(b, m.NwSrc), m.NwDst)
	return put16(put16(b, m.TpSrc), m.TpDst)
}

// DecodeMatch10 decodes a 40-byte ofp10_match.
func DecodeMatch10(b []byte) (Match10, error) {
	if len(b) < Match10Len {
		return Match10{}, errf(OFP10, OFPBRC_BAD_LEN, "ofp10_match needs 40 bytes, have %d", len(b))
	}
	m := Match10{Wildcards: be32(b), InPort: be16(b[4:]), DlVlan: be16(b[18:]), DlVlanPCP: b[20], DlType: be16(b[22:]),
		NwTos: b[24], NwProto: b[25], NwSrc: be32(b[28:]), NwDst: be32(b[32:]), TpSrc: be16(b[36:]), TpDst: be16(b[38:])}
	copy(m.DlSrc[:], b[6:12])
	copy(m.DlDst[:], b[12:18])
	return m, nil
}
