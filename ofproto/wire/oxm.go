package wire

import (
	"fmt"
)

// MatchField is one NXM/OXM TLV of a match. Value and Mask alias the decoded
// buffer. Mask is nil for an unmasked TLV (hasmask=0). Code is the exact
// code point found on the wire (e.g. NXM_OF_ETH_SRC vs OXM_OF_ETH_SRC); when
// encoding, a nil Code means "the code OVS uses for this field in this
// version" (FieldInfo.CodeFor).
type MatchField struct {
	Field *FieldInfo
	Code  *FieldCode
	Value []byte
	Mask  []byte
}

// OFPMT_* match types of struct ofp_match (1.1+).
const (
	OFPMT_STANDARD uint16 = 0
	OFPMT_OXM      uint16 = 1
)

// invalidBits lists, per field, value bits that OVS rejects in matches with
// OFPBMC_BAD_VALUE (mf_is_value_valid).
var invalidBits = map[string][]byte{
	"nw_tos":      {0x03},
	"ip_dscp":     {0xc0},
	"nw_ecn":      {0xfc},
	"ip_frag":     {0xfc},
	"tcp_flags":   {0xf0, 0x00},
	"arp_op":      {0xff, 0x00},
	"dl_vlan":     {0xf0, 0x00},
	"vlan_vid":    {0xe0, 0x00},
	"dl_vlan_pcp": {0xf8},
	"vlan_pcp":    {0xf8},
	"ipv6_label":  {0xff, 0xf0, 0x00, 0x00},
	"mpls_label":  {0xff, 0xf0, 0x00, 0x00},
	"mpls_tc":     {0xf8},
	"mpls_bos":    {0xfe},
	"tun_flags":   {0xff, 0xfe},
	"ct_state":    {0xff, 0xff, 0xff, 0x00},
	"nsh_spi":     {0xff, 0x00, 0x00, 0x00},
	"ipv6_exthdr": {0xfe, 0x00},
}

var fieldInvalid []([]byte)

func init() {
	fieldInvalid = make([][]byte, len(allFields))
	for name, bits := range invalidBits {
		if f := FieldByName(name); f != nil && len(bits) == f.Bytes {
			fieldInvalid[f.index] = bits
		}
	}
}

// valueValid reports mf_is_value_valid for the fields the table covers.
func valueValid(f *FieldInfo, v []byte) bool {
	if f.index < 0 {
		return true
	}
	if inv := fieldInvalid[f.index]; inv != nil {
		for i := range inv {
			if v[i]&inv[i] != 0 {
				return false
			}
		}
		return true
	}
	switch f.Name {
	case "in_port_oxm", "actset_output":
		p := be32(v)
		return p < 0xff00 || p >= 0xffffff00
	case "nsh_ttl":
		return v[0] <= 63
	case "nsh_mdtype":
		return v[0] == 1 || v[0] == 2
	}
	return true
}

// maskValid implements mf_is_mask_valid: non-maskable fields accept only an
// exact (all-ones) or all-wildcard (all-zeros) mask.
func maskValid(f *FieldInfo, m []byte) bool {
	if f.Maskable || m == nil {
		return true
	}
	ones, zero := true, true
	for _, c := range m {
		if c != 0xff {
			ones = false
		}
		if c != 0 {
			zero = false
		}
	}
	return ones || zero
}

// fieldSet is a bitmap of field indexes, for duplicate detection without
// allocation.
type fieldSet [4]uint64

func (s *fieldSet) testAndSet(i int) bool {
	if i < 0 {
		i = 255 // pseudo-fields (cookie) share the last slot
	}
	w, b := i/64, uint(i%64)
	if s[w]&(1<<b) != 0 {
		return true
	}
	s[w] |= 1 << b
	return false
}

// countTLVs counts the TLVs in b without validating them (for sizing).
func countTLVs(b []byte) int {
	n := 0
	for len(b) >= 4 {
		h, ok := parseOXMHeader(b)
		if !ok {
			return n + 1
		}
		l := h.HeaderLen() + h.PayloadLen()
		if l > len(b) {
			return n + 1
		}
		b = b[l:]
		n++
	}
	if len(b) > 0 {
		n++
	}
	return n
}

// decodeTLVs decodes an NXM/OXM TLV list exactly (no padding) following
// nx_pull_raw() in strict mode. allowCookie accepts NXM_NX_COOKIE(_W)
// (NXT_FLOW_MOD and NX stats requests).
func (d *Decoder) decodeTLVs(b []byte, allowCookie bool) ([]MatchField, error) {
	v := d.version
	out := sliceIn(d.fieldArena(), countTLVs(b))
	var seen fieldSet
	var pre prereqState
	n := 0
	for off := 0; off < len(b); {
		h, ok := parseOXMHeader(b[off:])
		if !ok {
			return nil, errf(v, OFPBMC_BAD_LEN, "partial %d-byte OXM entry at offset %d", len(b)-off, off)
		}
		hl, pl := h.HeaderLen(), h.PayloadLen()
		if off+hl+pl > len(b) {
			return nil, errf(v, OFPBMC_BAD_LEN, "OXM %#x:%d at offset %d calls for %d-byte payload, only %d bytes follow", h.Class, h.Field, off, pl, len(b)-off-hl)
		}
		payload := b[off+hl : off+hl+pl]
		f, code := resolveHeader(h, allowCookie)
		width := h.ValueLen()
		var value, mask []byte
		value = payload[:width]
		if h.HasMask {
			mask = payload[width : 2*width]
			for i := 0; i < width; i++ {
				if value[i]&^mask[i] != 0 {
					return nil, errf(v, OFPBMC_BAD_WILDCARDS, "OXM %#x:%d has 1-bits in value for wildcarded bits", h.Class, h.Field)
				}
			}
		}
		if f == nil {
			return nil, errf(v, OFPBMC_BAD_FIELD, "unknown OXM/NXM field class %#x field %d experimenter %#x length %d", h.Class, h.Field, h.Experimenter, h.Length)
		}
		if !maskValid(f, mask) {
			return nil, errf(v, OFPBMC_BAD_MASK, "bad mask for non-maskable field %s", f.Name)
		}
		if !valueValid(f, value) {
			return nil, errf(v, OFPBMC_BAD_VALUE, "bad value for field %s", f.Name)
		}
		if !pre.ok(f) {
			return nil, errf(v, OFPBMC_BAD_PREREQ, "prerequisite %q of field %s not met by the preceding fields", f.Prereq, f.Name)
		}
		if seen.testAndSet(f.index) {
			return nil, errf(v, OFPBMC_DUP_FIELD, "field %s appears twice", f.Name)
		}
		pre.add(f, value, mask)
		out[n] = MatchField{Field: f, Code: code, Value: value, Mask: mask}
		n++
		off += hl + pl
	}
	return out[:n], nil
}

// appendTLVs encodes fields as a TLV list (no padding).
func appendTLVs(b []byte, version uint8, fields []MatchField) ([]byte, error) {
	for i := range fields {
		mf := &fields[i]
		if mf.Field == nil {
			return b, fmt.Errorf("match field %d has no FieldInfo", i)
		}
		f := mf.Field
		n := len(mf.Value)
		if n == 0 || n > 255 || (!f.Variable && n != f.Bytes) || (f.Variable && n > f.Bytes) {
			return b, fmt.Errorf("field %s: value length %d invalid (want %d)", f.Name, n, f.Bytes)
		}
		if mf.Mask != nil && len(mf.Mask) != n {
			return b, fmt.Errorf("field %s: mask length %d differs from value length %d", f.Name, len(mf.Mask), n)
		}
		want := n
		if mf.Mask != nil {
			want *= 2
		}
		h := HeaderFor(f, mf.Code, version, mf.Mask != nil, n)
		if h.PayloadLen() != want {
			return b, fmt.Errorf("field %s: encoded length overflows", f.Name)
		}
		b = h.Append(b)
		b = append(b, mf.Value...)
		b = append(b, mf.Mask...)
	}
	return b, nil
}

// DecodeNXMatch decodes an nx_match of matchLen bytes at the start of b,
// as found in NXT_FLOW_MOD / NXST_FLOW (the TLVs, then zero padding to a
// multiple of 8, which is consumed). It returns the fields and the number of
// bytes consumed (matchLen rounded up to 8). NXM_NX_COOKIE is accepted when
// allowCookie is set and returned as a field named "cookie".
func (d *Decoder) DecodeNXMatch(b []byte, matchLen int, allowCookie bool) ([]MatchField, int, error) {
	padded := (matchLen + 7) &^ 7
	if padded > len(b) {
		return nil, 0, errf(d.version, OFPBMC_BAD_LEN, "nx_match length %d, rounded up to a multiple of 8, is longer than the %d bytes left", matchLen, len(b))
	}
	fields, err := d.decodeTLVs(b[:matchLen], allowCookie)
	return fields, padded, err
}

// AppendNXMatch appends fields as an nx_match padded to 8 bytes and returns
// the unpadded match length (to store in the message's match_len).
func AppendNXMatch(b []byte, version uint8, fields []MatchField) ([]byte, int, error) {
	start := len(b)
	b, err := appendTLVs(b, version, fields)
	if err != nil {
		return b, 0, err
	}
	n := len(b) - start
	return pad8(b, start), n, nil
}

// DecodeOXMMatch decodes a struct ofp_match of type OFPMT_OXM (OpenFlow
// 1.2+) at the start of b, including its padding, and returns the fields and
// the bytes consumed.
func (d *Decoder) DecodeOXMMatch(b []byte) ([]MatchField, int, error) {
	v := d.version
	if len(b) < 4 {
		return nil, 0, errf(v, OFPBMC_BAD_LEN, "ofp_match header truncated (%d bytes)", len(b))
	}
	typ, length := be16(b), int(be16(b[2:]))
	if length < 4 {
		return nil, 0, errf(v, OFPBMC_BAD_LEN, "ofp_match length %d below 4", length)
	}
	if typ != OFPMT_OXM {
		return nil, 0, errf(v, OFPBMC_BAD_TYPE, "ofp_match type %d is not OFPMT_OXM", typ)
	}
	padded := (length + 7) &^ 7
	if padded > len(b) {
		return nil, 0, errf(v, OFPBMC_BAD_LEN, "oxm length %d, rounded up to a multiple of 8, is longer than the %d bytes left", length, len(b))
	}
	fields, err := d.decodeTLVs(b[4:length], false)
	return fields, padded, err
}

// AppendOXMMatch appends a struct ofp_match (type OXM) with padding.
func AppendOXMMatch(b []byte, version uint8, fields []MatchField) ([]byte, error) {
	start := len(b)
	b = put16(b, OFPMT_OXM)
	b = put16(b, 0)
	b, err := appendTLVs(b, version, fields)
	if err != nil {
		return b, err
	}
	if err := setLen16(b, start+2, start); err != nil {
		return b, err
	}
	return pad8(b, start), nil
}

// DecodeMatch decodes a standalone OXM TLV list (no ofp_match header, no
// padding) in version; it is what fuzzing and tests use.
func DecodeMatch(version uint8, b []byte) ([]MatchField, error) {
	d := Decoder{version: version}
	return d.decodeTLVs(b, false)
}

// AppendMatchTLVs encodes fields as a bare TLV list.
func AppendMatchTLVs(b []byte, version uint8, fields []MatchField) ([]byte, error) {
	return appendTLVs(b, version, fields)
}
