package ofpact

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

// set_field, load and the legacy mod_* / set_vlan_* actions: one model
// action (flowtable.SetField) that remembers how it was written (Raw),
// because OVS encodes and prints it back that way. On the wire:
// OFPAT_SET_FIELD (1.2+; masked in 1.5), NXAST_REG_LOAD / NXAST_REG_LOAD2,
// the OpenFlow 1.0 set actions, OFPAT_SET_NW_TTL, NXAST_SET_TUNNEL(64).

func init() {
	keywords(parseSetField, "set_field")
	keywords(parseLoad, "load")
	keywords(parseModDl, "mod_dl_src", "mod_dl_dst")
	keywords(parseModNw, "mod_nw_src", "mod_nw_dst")
	keywords(parseModNwTos, "mod_nw_tos")
	keywords(parseModNwEcn, "mod_nw_ecn")
	keywords(parseModNwTTL, "mod_nw_ttl")
	keywords(parseModTp, "mod_tp_src", "mod_tp_dst")
	keywords(parseModVlanVid, "mod_vlan_vid", "set_vlan_vid")
	keywords(parseModVlanPcp, "mod_vlan_pcp", "set_vlan_pcp")
	register(Def[*flowtable.SetField]{
		Format: formatSetField,
		Encode: func(t Encoder, out []wire.Action, a *flowtable.SetField) ([]wire.Action, error) {
			return t.setField(out, a)
		},
		Check: checkSetField,
	})
	fromWire(func(t Decoder, a *wire.ActionSetDlAddr) (flowtable.Action, error) {
		if a.Dst {
			return t.setField(flowtable.FieldEthDst, a.MAC[:], nil, flowtable.RawModDlDst), nil
		}
		return t.setField(flowtable.FieldEthSrc, a.MAC[:], nil, flowtable.RawModDlSrc), nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetNwSrc) (flowtable.Action, error) {
		return t.setFieldUint(flowtable.FieldIPv4Src, uint64(a.IPv4), flowtable.RawModNwSrc), nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetNwDst) (flowtable.Action, error) {
		return t.setFieldUint(flowtable.FieldIPv4Dst, uint64(a.IPv4), flowtable.RawModNwDst), nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetNwTos) (flowtable.Action, error) {
		if a.TOS&3 != 0 {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "mod_nw_tos %#x has ECN bits set", a.TOS)
		}
		return t.setFieldUint(flowtable.FieldIPDSCP, uint64(a.TOS>>2), flowtable.RawModNwTos), nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetNwEcn) (flowtable.Action, error) {
		if a.ECN > 3 {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "mod_nw_ecn %d out of range", a.ECN)
		}
		return t.setFieldUint(flowtable.FieldIPECN, uint64(a.ECN), flowtable.RawModNwEcn), nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetNwTTL) (flowtable.Action, error) {
		return t.setFieldUint(flowtable.FieldIPTTL, uint64(a.TTL), flowtable.RawModNwTTL), nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetTpSrc) (flowtable.Action, error) {
		return t.setFieldUint(flowtable.FieldTCPSrc, uint64(a.Port), flowtable.RawModTpSrc), nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetTpDst) (flowtable.Action, error) {
		return t.setFieldUint(flowtable.FieldTCPDst, uint64(a.Port), flowtable.RawModTpDst), nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetVlanVID) (flowtable.Action, error) {
		if a.VID > flowtable.VlanVIDMask {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "VLAN VID %d out of range", a.VID)
		}
		return t.setFieldUint(flowtable.FieldVlanVID, uint64(a.VID)|flowtable.VlanCFI, flowtable.RawModVlanVid), nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetVlanPCP) (flowtable.Action, error) {
		if a.PCP > 7 {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "VLAN PCP %d out of range", a.PCP)
		}
		return t.setFieldUint(flowtable.FieldVlanPCP, uint64(a.PCP), flowtable.RawModVlanPcp), nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetField) (flowtable.Action, error) {
		return t.setFieldTLV(&a.Field, flowtable.RawSetField)
	})
	fromWire(func(t Decoder, a *wire.ActionRegLoad2) (flowtable.Action, error) {
		return t.setFieldTLV(&a.Field, flowtable.RawLoad)
	})
	fromWire(decodeRegLoad)
}

// setFieldForm is a way of writing a set-field that is an action of its
// own in some OpenFlow versions (set_tunnel in 1.0), owned by that
// action's file: its Raw value is rawFormBase or above (flowtable never
// looks at Raw; the values below are the model's). format and encode
// report false where the form is a plain set_field, which then prints
// and travels as one.
type setFieldForm struct {
	format func(b *strings.Builder, a *flowtable.SetField, o *ofptext.PrintOptions) bool
	encode func(t Encoder, out []wire.Action, a *flowtable.SetField) ([]wire.Action, bool)
}

const rawFormBase flowtable.SetFieldRaw = 128

var setFieldForms [256 - int(rawFormBase)]*setFieldForm

// registerSetFieldForm registers form as the Raw value raw.
func registerSetFieldForm(raw flowtable.SetFieldRaw, form setFieldForm) {
	if raw < rawFormBase || setFieldForms[raw-rawFormBase] != nil {
		panic(fmt.Sprintf("ofpact: set-field form %d taken or below %d", raw, rawFormBase))
	}
	setFieldForms[raw-rawFormBase] = &form
}

// formOf is a's registered form, or nil.
func formOf(a *flowtable.SetField) *setFieldForm {
	if a.Raw < rawFormBase {
		return nil
	}
	return setFieldForms[a.Raw-rawFormBase]
}

func parseModDl(p Parser, e ofptext.KV) (flowtable.Action, error) {
	mac, err := ofptext.ParseMAC(e.Value)
	if err != nil {
		return nil, wrap(e, err)
	}
	f, raw := flowtable.FieldEthSrc, flowtable.RawModDlSrc
	if strings.ToLower(e.Key) == "mod_dl_dst" {
		f, raw = flowtable.FieldEthDst, flowtable.RawModDlDst
	}
	return &flowtable.SetField{Field: f, Value: mac, Mask: ofptext.OnesOf(6), Raw: raw}, nil
}

func parseModNw(p Parser, e ofptext.KV) (flowtable.Action, error) {
	a, err := netip.ParseAddr(e.Value)
	if err != nil || !a.Is4() {
		return nil, bad(e, "%q: invalid IP address", e.Value)
	}
	f, raw := flowtable.FieldIPv4Src, flowtable.RawModNwSrc
	if strings.ToLower(e.Key) == "mod_nw_dst" {
		f, raw = flowtable.FieldIPv4Dst, flowtable.RawModNwDst
	}
	return &flowtable.SetField{Field: f, Value: a.AsSlice(), Mask: ofptext.OnesOf(4), Raw: raw}, nil
}

func parseModNwTos(p Parser, e ofptext.KV) (flowtable.Action, error) {
	v, err := ofptext.ParseNum(e.Value, 8)
	if err != nil || v&3 != 0 {
		return nil, bad(e, "%q: invalid TOS (the low 2 bits must be zero)", e.Value)
	}
	return &flowtable.SetField{Field: flowtable.FieldIPDSCP, Value: []byte{byte(v >> 2)}, Mask: []byte{0x3f}, Raw: flowtable.RawModNwTos}, nil
}

func parseModNwEcn(p Parser, e ofptext.KV) (flowtable.Action, error) {
	v, err := ofptext.ParseNum(e.Value, 8)
	if err != nil || v > 3 {
		return nil, bad(e, "%q: invalid ECN", e.Value)
	}
	return &flowtable.SetField{Field: flowtable.FieldIPECN, Value: []byte{byte(v)}, Mask: []byte{3}, Raw: flowtable.RawModNwEcn}, nil
}

func parseModNwTTL(p Parser, e ofptext.KV) (flowtable.Action, error) {
	v, err := num(e, 8)
	if err != nil {
		return nil, err
	}
	return &flowtable.SetField{Field: flowtable.FieldIPTTL, Value: []byte{byte(v)}, Mask: []byte{0xff}, Raw: flowtable.RawModNwTTL}, nil
}

func parseModTp(p Parser, e ofptext.KV) (flowtable.Action, error) {
	v, err := num(e, 16)
	if err != nil {
		return nil, err
	}
	f, raw := flowtable.FieldTCPSrc, flowtable.RawModTpSrc
	if strings.ToLower(e.Key) == "mod_tp_dst" {
		f, raw = flowtable.FieldTCPDst, flowtable.RawModTpDst
	}
	return &flowtable.SetField{Field: f, Value: ofptext.U64Bytes(v, 2), Mask: ofptext.OnesOf(2), Raw: raw}, nil
}

func parseModVlanVid(p Parser, e ofptext.KV) (flowtable.Action, error) {
	v, err := ofptext.ParseNum(e.Value, 16)
	if err != nil || v > 0xfff {
		return nil, bad(e, "%q: invalid VLAN VID", e.Value)
	}
	return &flowtable.SetField{Field: flowtable.FieldVlanVID, Value: ofptext.U64Bytes(v|flowtable.VlanCFI, 2), Mask: ofptext.U64Bytes(0x1fff, 2), Raw: flowtable.RawModVlanVid}, nil
}

func parseModVlanPcp(p Parser, e ofptext.KV) (flowtable.Action, error) {
	v, err := ofptext.ParseNum(e.Value, 8)
	if err != nil || v > 7 {
		return nil, bad(e, "%q: invalid VLAN PCP", e.Value)
	}
	return &flowtable.SetField{Field: flowtable.FieldVlanPCP, Value: []byte{byte(v)}, Mask: []byte{7}, Raw: flowtable.RawModVlanPcp}, nil
}

// checkSetField: the destination's prerequisites must be in the match and
// the field writable (ofpact_check_set_field).
func checkSetField(c Checker, a *flowtable.SetField) error {
	m := &c.Flow.Match
	if !m.PrereqOK(a.Field.Prereq) && !prereqOKAlias(m, a.Field) {
		return invalid(flowtable.MatchInconsistent, a.Field.Name, "set_field %s lacks correct prerequisites (needs %s in the match)", a.Field.Name, a.Field.Prereq)
	}
	if !a.Field.Writable {
		return invalid(flowtable.ReadOnlyField, a.Field.Name, "%s is read-only", a.Field.Name)
	}
	return c.checkCTField(a.Field)
}

// prereqOKAlias accepts set_field on tcp_src/udp_src views of the same
// slot (mod_tp_src on a UDP flow).
func prereqOKAlias(m *flowtable.Match, f *flowtable.Field) bool {
	switch f {
	case flowtable.FieldTCPSrc, flowtable.FieldTCPDst:
		return m.PrereqOK(flowtable.PrereqL4)
	}
	return false
}

func decodeRegLoad(t Decoder, a *wire.ActionRegLoad) (flowtable.Action, error) {
	f, err := ofpfield.ModelField(t.version, a.Dst.Field, t.tlv, true)
	if err != nil {
		return nil, err
	}
	r := flowtable.FieldRange{Field: f, Ofs: int(a.Ofs), NBits: int(a.NBits)}
	if err := r.Validate(); err != nil {
		return nil, t.err(wire.OFPBAC_BAD_SET_LEN, "%v", err)
	}
	if !f.Writable {
		return nil, t.err(wire.OFPBAC_BAD_SET_ARGUMENT, "%s is read-only", f.Name)
	}
	buf := t.pool.byteSlice(2 * f.Bytes)
	val, mk := buf[:f.Bytes:f.Bytes], buf[f.Bytes:]
	if !f.Wide() {
		ofpfield.PutU64(val, a.Value<<uint(r.Ofs))
		ofpfield.PutU64(mk, ofpfield.LowMask(r.NBits)<<uint(r.Ofs))
	} else {
		var imm [8]byte
		ofpfield.PutU64(imm[:], a.Value)
		placeBits(val, mk, r.Ofs, r.NBits, imm[:])
	}
	return &flowtable.SetField{Field: f, Value: val, Mask: mk, Raw: flowtable.RawLoad}, nil
}

func parseSetField(p Parser, e ofptext.KV) (flowtable.Action, error) {
	val := e.Value
	vs, name, ok := strings.Cut(val, "->")
	if !ok {
		return nil, bad(e, "%q: missing `->'", val)
	}
	if name == "" {
		return nil, bad(e, "%q: missing field name following `->'", val)
	}
	f := flowtable.FieldByName(name)
	if f == nil {
		f = flowtable.FieldByNXM(strings.TrimSuffix(name, "[]"))
	}
	if f == nil {
		return nil, bad(e, "%s is not a valid OXM field name", name)
	}
	f, err := p.TLV.Resolve(f)
	if err != nil {
		return nil, wrap(e, err)
	}
	if !f.Writable {
		return nil, bad(e, "%s is read-only", f.Name)
	}
	v, m, err := ofptext.ParseFieldValue(f, vs, p.Ports)
	if err != nil {
		return nil, wrap(e, err)
	}
	if m == nil {
		m = fullMask(f)
	}
	return &flowtable.SetField{Field: f, Value: v, Mask: m, Raw: flowtable.RawSetField}, nil
}

// fullMask returns the all-bits mask of f (only its Bits significant bits).
func fullMask(f *flowtable.Field) []byte {
	if f.Wide() {
		return ofptext.OnesOf(f.Bytes)
	}
	all := uint64(1)<<uint(f.Bits) - 1
	if f.Bits >= 64 {
		all = ^uint64(0)
	}
	return ofptext.U64Bytes(all, f.Bytes)
}

// parseLoad parses load:VALUE->DST[ofs..end] into a masked set-field.
func parseLoad(p Parser, e ofptext.KV) (flowtable.Action, error) {
	val := e.Value
	vs, ds, ok := strings.Cut(val, "->")
	if !ok {
		return nil, bad(e, "%q: missing `->'", val)
	}
	dst, err := ofptext.ParseSubfield(ds, p.TLV)
	if err != nil {
		return nil, wrap(e, err)
	}
	if !dst.Field.Writable {
		return nil, bad(e, "%s is read-only", dst.Field.Name)
	}
	imm, err := ofptext.ParseIntBytes(vs, (dst.NBits+7)/8)
	if err != nil {
		return nil, bad(e, "%s: value does not fit in %d bits", vs, dst.NBits)
	}
	if dst.NBits%8 != 0 && imm[0]>>uint(dst.NBits%8) != 0 {
		return nil, bad(e, "%s: value does not fit in %d bits", vs, dst.NBits)
	}
	value, mask := placeRange(dst, imm)
	return &flowtable.SetField{Field: dst.Field, Value: value, Mask: mask, Raw: flowtable.RawLoad}, nil
}

// placeRange shifts an immediate of r.NBits bits into position r.Ofs of a
// value of the field's width, and returns the value and the mask of the
// range.
func placeRange(r flowtable.FieldRange, imm []byte) (value, mask []byte) {
	n := r.Field.Bytes
	value, mask = make([]byte, n), make([]byte, n)
	placeBits(value, mask, r.Ofs, r.NBits, imm)
	return value, mask
}

// legacyRaw returns the OpenFlow 1.0 action that a full-field set-field of
// f travels as, if any.
func legacyRaw(f *flowtable.Field) (string, bool) {
	switch f {
	case flowtable.FieldEthSrc:
		return "mod_dl_src", true
	case flowtable.FieldEthDst:
		return "mod_dl_dst", true
	case flowtable.FieldIPv4Src:
		return "mod_nw_src", true
	case flowtable.FieldIPv4Dst:
		return "mod_nw_dst", true
	case flowtable.FieldNwTos, flowtable.FieldIPDSCP:
		return "mod_nw_tos", true
	case flowtable.FieldTCPSrc, flowtable.FieldUDPSrc:
		return "mod_tp_src", true
	case flowtable.FieldTCPDst, flowtable.FieldUDPDst:
		return "mod_tp_dst", true
	}
	return "", false
}

// encodesToNothing tells whether a is a set-field with an all-zero mask
// in a version before OpenFlow 1.5: it goes as NXAST_REG_LOAD, one per
// run of mask bits (set_field_to_nxast), so as no action at all, and
// OVS's printout of it (ovs-ofctl parse-flow, dump-flows) leaves it out.
// OpenFlow 1.5 sends it as a masked OFPAT_SET_FIELD.
func encodesToNothing(a flowtable.Action, o *ofptext.PrintOptions) bool {
	sf, ok := a.(*flowtable.SetField)
	return ok && o.Ver() < ofptext.OF15 && formOf(sf) == nil && !sf.Field.IsTunMetadata() &&
		sf.Mask != nil && ofptext.AllZero(sf.Mask)
}

// formatSetField prints a set-field action the way it comes back from an
// OVS switch in the given version (lib/ofp-actions.c encode_SET_FIELD and
// format_SET_FIELD).
func formatSetField(b *strings.Builder, a *flowtable.SetField, o *ofptext.PrintOptions) {
	if f := formOf(a); f != nil && f.format(b, a, o) {
		return
	}
	if a.Field.IsTunMetadata() {
		// A variable-length field travels as NXAST_REG_LOAD2 or
		// OFPAT_SET_FIELD, never NXAST_REG_LOAD: OVS prints set_field even
		// for a load it was given as text.
		formatSetFieldSyntax(b, a)
		return
	}
	v := o.Ver()
	full := ofptext.AllOnes(a.Mask) || ofptext.IsFullFieldMask(a.Field, a.Mask)
	switch {
	case v >= ofptext.OF15:
		formatSetFieldSyntax(b, a)
	case a.Raw == flowtable.RawLoad:
		formatLoad(b, a)
	case v == ofptext.OF10 && full:
		if name, ok := legacyRaw(a.Field); ok {
			formatLegacy(b, name, a)
			return
		}
		formatLoad(b, a)
	case v == ofptext.OF10:
		formatLoad(b, a)
	case full:
		formatSetFieldSyntax(b, a)
	default:
		formatLoad(b, a)
	}
}

func formatLegacy(b *strings.Builder, name string, a *flowtable.SetField) {
	b.WriteString(name)
	b.WriteByte(':')
	switch a.Field.Format {
	case flowtable.FmtEthernet:
		b.WriteString(ofptext.EthString(a.Value))
	case flowtable.FmtIPv4:
		b.WriteString(ofptext.IPString(uint32(ofptext.BytesU64(a.Value))))
	default:
		val := ofptext.BytesU64(a.Value)
		if a.Field == flowtable.FieldIPDSCP {
			val <<= 2
		}
		b.WriteString(strconv.FormatUint(val, 10))
	}
}

// formatLoad prints load:V->F[a..b] segments: one per contiguous run of
// mask bits (OVS next_load_segment).
func formatLoad(b *strings.Builder, a *flowtable.SetField) {
	f := a.Field
	nbits := f.Bits
	first := true
	bit := func(buf []byte, i int) bool { // i counts from the LSB
		byteIdx := len(buf) - 1 - i/8
		return byteIdx >= 0 && buf[byteIdx]&(1<<uint(i%8)) != 0
	}
	for ofs := 0; ofs < nbits; {
		if !bit(a.Mask, ofs) {
			ofs++
			continue
		}
		end := ofs
		for end < nbits && bit(a.Mask, end) && end-ofs < 64 {
			end++
		}
		var val uint64
		for i := end - 1; i >= ofs; i-- {
			val <<= 1
			if bit(a.Value, i) {
				val |= 1
			}
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString("load:")
		b.WriteString(ofptext.CHex(val))
		b.WriteString("->")
		b.WriteString(ofptext.SubfieldString(flowtable.FieldRange{Field: f, Ofs: ofs, NBits: end - ofs}))
		ofs = end
	}
	if first {
		// An all-zero mask loads nothing (FormatActions leaves such an
		// action out, as OVS does); not to print nothing at all here.
		b.WriteString("load:0->" + ofptext.SubfieldString(flowtable.Whole(f)))
	}
}

// formatSetFieldSyntax prints set_field:VALUE[/MASK]->name (mf_format).
func formatSetFieldSyntax(b *strings.Builder, a *flowtable.SetField) {
	b.WriteString("set_field:")
	mask := a.Mask
	if ofptext.IsFullFieldMask(a.Field, mask) {
		mask = nil
	}
	b.WriteString(ofptext.FieldValueString(a.Field, a.Value, mask))
	b.WriteString("->")
	b.WriteString(a.Field.Name)
}

// setField follows encode_SET_FIELD and the legacy encoders: 1.5 always
// OFPAT_SET_FIELD (masked when partial); before 1.5 a load stays
// NXAST_REG_LOAD; 1.0 uses the OpenFlow 1.0 actions where one exists;
// 1.3 uses OFPAT_SET_FIELD for whole fields and NXAST_REG_LOAD otherwise.
func (t Encoder) setField(out []wire.Action, a *flowtable.SetField) ([]wire.Action, error) {
	if f := formOf(a); f != nil {
		if out, ok := f.encode(t, out, a); ok {
			return out, nil
		}
	}
	v := t.version
	f, err := ofpfield.ResolveModel(v, a.Field, t.tlv)
	if err != nil {
		return nil, err
	}
	if len(a.Value) != f.Bytes || (a.Mask != nil && len(a.Mask) != f.Bytes) {
		return nil, fmt.Errorf("set_field %s: value/mask width %d/%d, want %d", f.Name, len(a.Value), len(a.Mask), f.Bytes)
	}
	isFull := ofpfield.FullMask(f, a.Mask)
	if a.Raw == flowtable.RawModNwTTL && v != wire.OFP10 {
		return append(out, &wire.ActionSetNwTTL{TTL: a.Value[0]}), nil
	}
	if v >= wire.OFP15 {
		mf, err := t.matchField(f, a.Value, a.Mask)
		if err != nil {
			return nil, err
		}
		return append(out, &wire.ActionSetField{Field: mf}), nil
	}
	if a.Raw == flowtable.RawLoad || !isFull {
		return t.regLoad(out, f, a.Value, a.Mask)
	}
	if v == wire.OFP10 {
		if leg := legacy10(f, a.Value); leg != nil {
			return append(out, leg...), nil
		}
		return t.regLoad(out, f, a.Value, a.Mask)
	}
	mf, err := t.matchField(f, a.Value, nil)
	if err != nil {
		return nil, err
	}
	return append(out, &wire.ActionSetField{Field: mf}), nil
}

// legacy10 returns the OpenFlow 1.0 actions for a whole-field set
// (set_field_to_legacy_openflow), or nil when there is none.
func legacy10(f *flowtable.Field, value []byte) []wire.Action {
	switch f {
	case flowtable.FieldEthSrc, flowtable.FieldEthDst:
		a := &wire.ActionSetDlAddr{Dst: f == flowtable.FieldEthDst}
		copy(a.MAC[:], value)
		return []wire.Action{a}
	case flowtable.FieldIPv4Src:
		return []wire.Action{&wire.ActionSetNwSrc{IPv4: uint32(ofpfield.BytesU64(value))}}
	case flowtable.FieldIPv4Dst:
		return []wire.Action{&wire.ActionSetNwDst{IPv4: uint32(ofpfield.BytesU64(value))}}
	case flowtable.FieldIPDSCP:
		return []wire.Action{&wire.ActionSetNwTos{TOS: value[0] << 2}}
	case flowtable.FieldNwTos:
		return []wire.Action{&wire.ActionSetNwTos{TOS: value[0] &^ 3}}
	case flowtable.FieldTCPSrc, flowtable.FieldUDPSrc, flowtable.FieldSCTPSrc:
		return []wire.Action{&wire.ActionSetTpSrc{Port: uint16(ofpfield.BytesU64(value))}}
	case flowtable.FieldTCPDst, flowtable.FieldUDPDst, flowtable.FieldSCTPDst:
		return []wire.Action{&wire.ActionSetTpDst{Port: uint16(ofpfield.BytesU64(value))}}
	case flowtable.FieldVlanVID:
		vid := uint16(ofpfield.BytesU64(value))
		if vid&flowtable.VlanCFI == 0 {
			return []wire.Action{&wire.ActionPopVLAN{}}
		}
		return []wire.Action{&wire.ActionSetVlanVID{VID: vid & flowtable.VlanVIDMask}}
	case flowtable.FieldVlanPCP:
		return []wire.Action{&wire.ActionSetVlanPCP{PCP: value[0] & 7}}
	case flowtable.FieldVlanTCI:
		tci := uint16(ofpfield.BytesU64(value))
		if tci&flowtable.VlanCFI == 0 {
			return []wire.Action{&wire.ActionPopVLAN{}}
		}
		return []wire.Action{&wire.ActionSetVlanVID{VID: tci & flowtable.VlanVIDMask}, &wire.ActionSetVlanPCP{PCP: uint8(tci >> 13)}}
	}
	return nil
}

// regLoad is set_field_to_nxast: one NXAST_REG_LOAD per contiguous run of
// mask bits (at most 64 bits each), or NXAST_REG_LOAD2 with a masked TLV
// when the field has no NXM header.
func (t Encoder) regLoad(out []wire.Action, f *flowtable.Field, value, mask []byte) ([]wire.Action, error) {
	ref, err := t.nxRef(f)
	if err != nil {
		return nil, err
	}
	// NXAST_REG_LOAD takes any 32-bit header, OXM ones too (OVS's
	// set_field_to_nxast): only an experimenter OXM or a variable-length
	// field needs NXAST_REG_LOAD2.
	if ref.Header.Class == 0xffff || ref.Field.Variable {
		mf, err := t.matchField(f, value, mask)
		if err != nil {
			return nil, err
		}
		return append(out, &wire.ActionRegLoad2{Field: mf}), nil
	}
	if mask == nil {
		mask = make([]byte, f.Bytes)
		ofpfield.FillFieldMask(f, mask)
	}
	bit := func(buf []byte, i int) bool {
		idx := len(buf) - 1 - i/8
		return idx >= 0 && buf[idx]&(1<<uint(i%8)) != 0
	}
	for ofs := 0; ofs < f.Bits; {
		if !bit(mask, ofs) {
			ofs++
			continue
		}
		end := ofs
		for end < f.Bits && bit(mask, end) && end-ofs < 64 {
			end++
		}
		var val uint64
		for i := end - 1; i >= ofs; i-- {
			val <<= 1
			if bit(value, i) {
				val |= 1
			}
		}
		out = append(out, &wire.ActionRegLoad{Dst: ref, Ofs: uint16(ofs), NBits: uint16(end - ofs), Value: val})
		ofs = end
	}
	// An all-zero mask writes nothing and goes as no action at all, as in
	// OVS (set_field_to_nxast; FormatActions leaves it out too).
	return out, nil
}

// setField makes a model set-field from a full-width value and mask.
func (t Decoder) setField(f *flowtable.Field, value, mask []byte, raw flowtable.SetFieldRaw) *flowtable.SetField {
	v := t.pool.byteSlice(2 * f.Bytes)
	val, mk := v[:f.Bytes:f.Bytes], v[f.Bytes:]
	copy(val[f.Bytes-min(len(value), f.Bytes):], value[max(0, len(value)-f.Bytes):])
	if mask == nil {
		ofpfield.FillFieldMask(f, mk)
	} else {
		copy(mk[f.Bytes-min(len(mask), f.Bytes):], mask[max(0, len(mask)-f.Bytes):])
	}
	for i := range val {
		val[i] &= mk[i]
	}
	return &flowtable.SetField{Field: f, Value: val, Mask: mk, Raw: raw}
}

// setFieldUint is setField for an integer value under the field's full mask.
func (t Decoder) setFieldUint(f *flowtable.Field, value uint64, raw flowtable.SetFieldRaw) *flowtable.SetField {
	v := t.pool.byteSlice(2 * f.Bytes)
	val, mk := v[:f.Bytes:f.Bytes], v[f.Bytes:]
	ofpfield.FillFieldMask(f, mk)
	ofpfield.PutU64(val, value&ofpfield.LowMask(f.Bits))
	return &flowtable.SetField{Field: f, Value: val, Mask: mk, Raw: raw}
}

// placeBits writes the nBits low bits of imm (big-endian) at bit offset ofs
// of value and sets the same bits in mask (both f.Bytes wide).
func placeBits(value, mask []byte, ofs, nBits int, imm []byte) {
	n := len(value)
	for i := 0; i < nBits; i++ {
		src := len(imm) - 1 - i/8
		on := src >= 0 && imm[src]&(1<<uint(i%8)) != 0
		pos := ofs + i
		dst := n - 1 - pos/8
		mask[dst] |= 1 << uint(pos%8)
		if on {
			value[dst] |= 1 << uint(pos%8)
		}
	}
}

// setFieldTLV translates OFPAT_SET_FIELD / NXAST_REG_LOAD2.
func (t Decoder) setFieldTLV(mf *wire.MatchField, raw flowtable.SetFieldRaw) (flowtable.Action, error) {
	v := t.version
	switch mf.Field {
	case ofpfield.WireInPortOX:
		// Only reachable through reg_load2 (wire rejects set_field of it).
		p, ok := ofpfield.PortFromOFP11(uint32(ofpfield.BytesU64(mf.Value)))
		if !ok {
			return nil, t.err(wire.OFPBAC_BAD_SET_ARGUMENT, "in_port %#x out of range", ofpfield.BytesU64(mf.Value))
		}
		return t.setFieldUint(flowtable.FieldInPort, uint64(p), raw), nil
	case ofpfield.WireNwTos:
		// NXM_OF_IP_TOS sets the DSCP bits only.
		sf := t.setField(flowtable.FieldNwTos, mf.Value, mf.Mask, raw)
		sf.Mask[0] &= 0xfc
		sf.Value[0] &= 0xfc
		return sf, nil
	}
	f, err := ofpfield.ModelField(v, mf.Field, t.tlv, true)
	if err != nil {
		return nil, err
	}
	if !f.Writable {
		return nil, t.err(wire.OFPBAC_BAD_SET_ARGUMENT, "%s is read-only", f.Name)
	}
	if len(mf.Value) > f.Bytes && !f.IsTunMetadata() {
		return nil, t.err(wire.OFPBAC_BAD_SET_LEN, "%s: %d-byte value", f.Name, len(mf.Value))
	}
	if f.IsTunMetadata() && len(mf.Value) > f.Bytes {
		for _, c := range mf.Value[:len(mf.Value)-f.Bytes] {
			if c != 0 {
				return nil, t.err(wire.OFPBAC_BAD_SET_LEN, "%s: %d-byte value exceeds the %d-byte option", f.Name, len(mf.Value), f.Bytes)
			}
		}
	}
	sf := t.setField(f, mf.Value, mf.Mask, raw)
	if f.IsTunMetadata() && mf.Mask == nil && len(mf.Value) < f.Bytes {
		// A shorter value sets the whole option, zero-extended.
		ofpfield.FillFieldMask(f, sf.Mask)
	}
	return sf, nil
}
