package wire

import (
	"fmt"
)

func rawName(id rawID) string {
	if id == rawNone {
		return "(not encodable in this version)"
	}
	return rawDefs[id].name
}

// appendArgAction encodes an integer-argument action.
func appendArgAction(b []byte, version uint8, id rawID, arg uint64) ([]byte, error) {
	if id == rawNone {
		return b, fmt.Errorf("action not encodable in OpenFlow version %#x", version)
	}
	e, ok := encFor(id, version)
	if !ok {
		return b, fmt.Errorf("%s cannot be encoded in OpenFlow version %#x", rawDefs[id].name, version)
	}
	off, width, total := argLayout(id, e)
	start := len(b)
	b = actionHeader(b, e, total)
	b = zeros(b, total-(len(b)-start))
	for i := 0; i < width; i++ {
		b[start+off+i] = byte(arg >> (8 * (width - 1 - i)))
	}
	return b, nil
}

func decodeArg(d *Decoder, a []byte, def *rawDef) (Action, error) {
	id := d.rawOf(a)
	e, _ := encFor(id, d.version)
	off, width, _ := argLayout(id, e)
	var arg uint64
	for i := 0; i < width; i++ {
		arg = arg<<8 | uint64(a[off+i])
	}
	act := newArgAction(d, id, arg)
	if act == nil {
		return nil, errf(d.version, OFPBAC_BAD_TYPE, "no decoder for %s", def.name)
	}
	return act, nil
}

// ActionSetTunnel is NXAST_SET_TUNNEL (32-bit tun_id) or, when Is64 is set
// or TunID does not fit in 32 bits, NXAST_SET_TUNNEL64.
type ActionSetTunnel struct {
	TunID uint64
	Is64  bool
}

func (a *ActionSetTunnel) raw() rawID {
	if a.Is64 || a.TunID > 0xffffffff {
		return rawSetTunnel64
	}
	return rawSetTunnel
}
func (a *ActionSetTunnel) Name(uint8) string { return rawName(a.raw()) }
func (a *ActionSetTunnel) appendTo(v uint8, b []byte) ([]byte, error) {
	return appendArgAction(b, v, a.raw(), a.TunID)
}

// Reserved port numbers (OpenFlow 1.1+; 1.0 uses the low 16 bits, e.g.
// OFPP_CONTROLLER = 0xfffd).
const (
	OFPP_MAX        uint32 = 0xffffff00
	OFPP_UNSET      uint32 = 0xfffffff7 // OF1.5 OFPP_UNSET
	OFPP_IN_PORT    uint32 = 0xfffffff8
	OFPP_TABLE      uint32 = 0xfffffff9
	OFPP_NORMAL     uint32 = 0xfffffffa
	OFPP_FLOOD      uint32 = 0xfffffffb
	OFPP_ALL        uint32 = 0xfffffffc
	OFPP_CONTROLLER uint32 = 0xfffffffd
	OFPP_LOCAL      uint32 = 0xfffffffe
	OFPP_ANY        uint32 = 0xffffffff

	OFPP10_MAX        uint16 = 0xff00
	OFPP10_IN_PORT    uint16 = 0xfff8
	OFPP10_TABLE      uint16 = 0xfff9
	OFPP10_NORMAL     uint16 = 0xfffa
	OFPP10_FLOOD      uint16 = 0xfffb
	OFPP10_ALL        uint16 = 0xfffc
	OFPP10_CONTROLLER uint16 = 0xfffd
	OFPP10_LOCAL      uint16 = 0xfffe
	OFPP10_NONE       uint16 = 0xffff
)

// validOFP11Port mirrors ofputil_port_from_ofp11(): ports between OFPP_MAX
// of 1.0 and the 1.1 reserved range cannot be represented.
func validOFP11Port(p uint32) bool { return p < 0xff00 || p >= OFPP_MAX }

// ActionOutput is OFPAT_OUTPUT. Port is the port number as on the wire in
// the version: 16-bit in 1.0 (e.g. 0xfffd for CONTROLLER), 32-bit in 1.1+.
type ActionOutput struct {
	Port   uint32
	MaxLen uint16
}

func (a *ActionOutput) Name(uint8) string { return "OFPAT_OUTPUT" }
func (a *ActionOutput) appendTo(v uint8, b []byte) ([]byte, error) {
	if v == OFP10 {
		if a.Port > 0xffff {
			return b, fmt.Errorf("output port %#x does not fit OpenFlow 1.0", a.Port)
		}
		b = put16(put16(b, OFPAT10_OUTPUT), 8)
		return put16(put16(b, uint16(a.Port)), a.MaxLen), nil
	}
	b = put16(put16(b, OFPAT_OUTPUT), 16)
	b = put16(put32(b, a.Port), a.MaxLen)
	return zeros(b, 6), nil
}

func decodeOutput(d *Decoder, a []byte, def *rawDef) (Action, error) {
	out := newIn(d.acts.output())
	if d.version == OFP10 {
		out.Port, out.MaxLen = uint32(be16(a[4:])), be16(a[6:])
		return out, nil
	}
	out.Port, out.MaxLen = be32(a[4:]), be16(a[8:])
	if !validOFP11Port(out.Port) {
		return nil, errf(d.version, OFPBAC_BAD_OUT_PORT, "output port %#x out of range", out.Port)
	}
	return out, nil
}

// ActionEnqueue is OFPAT10_ENQUEUE (OpenFlow 1.0 only).
type ActionEnqueue struct {
	Port    uint16
	QueueID uint32
}

func (a *ActionEnqueue) Name(uint8) string { return "OFPAT_ENQUEUE" }
func (a *ActionEnqueue) appendTo(v uint8, b []byte) ([]byte, error) {
	if v != OFP10 {
		return b, fmt.Errorf("OFPAT_ENQUEUE is OpenFlow 1.0 only")
	}
	b = put16(put16(b, OFPAT10_ENQUEUE), 16)
	b = zeros(put16(b, a.Port), 6)
	return put32(b, a.QueueID), nil
}

func decodeEnqueue(d *Decoder, a []byte, def *rawDef) (Action, error) {
	return &ActionEnqueue{Port: be16(a[4:]), QueueID: be32(a[12:])}, nil
}

// ActionSetDlAddr is OFPAT_SET_DL_SRC (Dst false) or OFPAT_SET_DL_DST.
type ActionSetDlAddr struct {
	Dst bool
	MAC [6]byte
}

func (a *ActionSetDlAddr) raw() rawID {
	if a.Dst {
		return rawSetDlDst
	}
	return rawSetDlSrc
}
func (a *ActionSetDlAddr) Name(uint8) string { return rawName(a.raw()) }
func (a *ActionSetDlAddr) appendTo(v uint8, b []byte) ([]byte, error) {
	e, ok := encFor(a.raw(), v)
	if !ok {
		return b, fmt.Errorf("set_dl_addr not encodable")
	}
	b = actionHeader(b, e, 16)
	b = append(b, a.MAC[:]...)
	return zeros(b, 6), nil
}

func decodeDlAddr(d *Decoder, a []byte, def *rawDef) (Action, error) {
	act := &ActionSetDlAddr{Dst: d.rawOf(a) == rawSetDlDst}
	copy(act.MAC[:], a[4:10])
	return act, nil
}

// FieldRef is an NXM/OXM header naming a field inside an action (reg_move,
// reg_load, output_reg, learn, ...). Header is the header as on the wire; if
// its Length is 0 when encoding, the field's default header for the version
// is used.
type FieldRef struct {
	Field  *FieldInfo
	Header OXMHeader
}

// RefTo returns a FieldRef for f with OVS's default header in version.
func RefTo(f *FieldInfo, version uint8) FieldRef {
	return FieldRef{Field: f, Header: HeaderFor(f, nil, version, false, 0)}
}

func (r FieldRef) header(version uint8) OXMHeader {
	if r.Header.Length == 0 && r.Field != nil {
		return HeaderFor(r.Field, nil, version, false, 0)
	}
	return r.Header
}

// Bits is the field width in bits (the maximum for variable-length fields).
func (r FieldRef) Bits() int {
	if r.Field == nil {
		return 0
	}
	return r.Field.Bytes * 8
}

// lookupRef32 resolves a 32-bit NXM header inside an action
// (mf_vl_mff_mf_from_nxm_header: unknown -> OFPBAC_BAD_SET_TYPE).
func lookupRef32(v uint8, h32 uint32) (FieldRef, error) {
	var raw [4]byte
	raw[0], raw[1], raw[2], raw[3] = byte(h32>>24), byte(h32>>16), byte(h32>>8), byte(h32)
	h, _ := parseOXMHeader(raw[:])
	if h.Class == OFPXMC_EXPERIMENTER {
		return FieldRef{}, errf(v, OFPBAC_BAD_SET_TYPE, "experimenter OXM header %#x cannot be used in a 32-bit header slot", h32)
	}
	f, _ := resolveHeader(h, false)
	if f == nil {
		return FieldRef{}, errf(v, OFPBAC_BAD_SET_TYPE, "unknown NXM header %#08x", h32)
	}
	return FieldRef{Field: f, Header: h}, nil
}

// pullRef reads a 4- or 8-byte header (nx_pull_header: truncated ->
// OFPBMC_BAD_LEN, unknown -> OFPBMC_BAD_FIELD, masked -> OFPBMC_BAD_MASK).
func pullRef(v uint8, b []byte) (FieldRef, int, error) {
	h, ok := parseOXMHeader(b)
	if !ok {
		return FieldRef{}, 0, errf(v, OFPBMC_BAD_LEN, "field header truncated")
	}
	f, _ := resolveHeader(h, false)
	if f == nil {
		return FieldRef{}, 0, errf(v, OFPBMC_BAD_FIELD, "unknown field header class %#x field %d", h.Class, h.Field)
	}
	if h.HasMask {
		return FieldRef{}, 0, errf(v, OFPBMC_BAD_MASK, "masked header for %s not allowed here", f.Name)
	}
	return FieldRef{Field: f, Header: h}, h.HeaderLen(), nil
}

// checkSubfield mirrors mf_check_src/mf_check_dst.
func checkSubfield(v uint8, r FieldRef, ofs, nBits int, dst bool) error {
	w := r.Bits()
	switch {
	case nBits == 0:
		return errf(v, OFPBAC_BAD_SET_LEN, "zero-bit subfield of %s", r.Field.Name)
	case ofs >= w:
		return errf(v, OFPBAC_BAD_SET_LEN, "bit offset %d exceeds %d-bit width of %s", ofs, w, r.Field.Name)
	case ofs+nBits > w:
		return errf(v, OFPBAC_BAD_SET_LEN, "bits %d..%d exceed %d-bit width of %s", ofs, ofs+nBits-1, w, r.Field.Name)
	case dst && !r.Field.Writable:
		return errf(v, OFPBAC_BAD_SET_ARGUMENT, "destination field %s is not writable", r.Field.Name)
	}
	return nil
}

// ActionSetField is OFPAT_SET_FIELD. Mask is only allowed in OpenFlow 1.5
// (OVS answers OFPBAC_BAD_SET_MASK for a masked set_field in 1.3).
type ActionSetField struct {
	Field MatchField
}

func (a *ActionSetField) Name(uint8) string { return "OFPAT_SET_FIELD" }
func (a *ActionSetField) appendTo(v uint8, b []byte) ([]byte, error) {
	id := rawSetField15
	if v == OFP13 {
		id = rawSetField12
		if a.Field.Mask != nil {
			return b, fmt.Errorf("masked set_field is not allowed in OpenFlow 1.3")
		}
	}
	b, start, err := beginAction(b, id, v)
	if err != nil {
		return b, err
	}
	if b, err = appendTLVs(b, v, []MatchField{a.Field}); err != nil {
		return b, err
	}
	return finishAction(b, start)
}

// ActionRegLoad2 is NXAST_REG_LOAD2 (an OXM entry, maskable; 1.0-1.4).
type ActionRegLoad2 struct {
	Field MatchField
}

func (a *ActionRegLoad2) Name(uint8) string { return "NXAST_REG_LOAD2" }
func (a *ActionRegLoad2) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawRegLoad2, v)
	if err != nil {
		return b, err
	}
	if b, err = appendTLVs(b, v, []MatchField{a.Field}); err != nil {
		return b, err
	}
	return finishAction(b, start)
}

// decodeSetField handles OFPAT_SET_FIELD (1.3: no mask; 1.5: mask) and
// NXAST_REG_LOAD2 following decode_ofpat_set_field().
func decodeSetField(d *Decoder, a []byte, def *rawDef) (Action, error) {
	v := d.version
	id := d.rawOf(a)
	off := 4
	if id == rawRegLoad2 {
		off = 10
	}
	b := a[off:]
	h, ok := parseOXMHeader(b)
	if !ok {
		return nil, errf(v, OFPBMC_BAD_LEN, "%s: OXM header truncated", def.name)
	}
	hl, pl := h.HeaderLen(), h.PayloadLen()
	f, code := resolveHeader(h, false)
	if f == nil {
		if g, _ := lookupCode(h.Class, h.Field, h.Experimenter); g != nil {
			return nil, errf(v, OFPBAC_BAD_SET_LEN, "%s: field %s with length %d", def.name, g.Name, h.Length)
		}
		return nil, errf(v, OFPBAC_BAD_SET_TYPE, "%s: unknown field class %#x field %d", def.name, h.Class, h.Field)
	}
	if hl+pl > len(b) {
		return nil, errf(v, OFPBMC_BAD_LEN, "%s: OXM payload truncated", def.name)
	}
	width := h.ValueLen()
	value := b[hl : hl+width]
	var mask []byte
	if h.HasMask {
		mask = b[hl+width : hl+2*width]
		for i := range value {
			if value[i]&^mask[i] != 0 {
				return nil, errf(v, OFPBMC_BAD_WILDCARDS, "%s: value has bits outside the mask", def.name)
			}
		}
		if id == rawSetField12 {
			return nil, errf(v, OFPBAC_BAD_SET_MASK, "masked set_field for %s not allowed in OpenFlow 1.3", f.Name)
		}
	}
	if !allZero(b[hl+pl:]) {
		return nil, errf(v, OFPBAC_BAD_SET_ARGUMENT, "%s: nonzero padding", def.name)
	}
	if id != rawRegLoad2 && f.Name == "in_port_oxm" {
		return nil, errf(v, OFPBAC_BAD_SET_ARGUMENT, "set_field may not set OXM_OF_IN_PORT")
	}
	if !f.Writable {
		return nil, errf(v, OFPBAC_BAD_SET_ARGUMENT, "destination field %s is not writable", f.Name)
	}
	if id != rawRegLoad2 && !valueValid(f, value) {
		return nil, errf(v, OFPBAC_BAD_SET_ARGUMENT, "invalid value for set_field %s", f.Name)
	}
	mf := MatchField{Field: f, Code: code, Value: value, Mask: mask}
	if id == rawRegLoad2 {
		return &ActionRegLoad2{Field: mf}, nil
	}
	act := newIn(d.acts.setField())
	act.Field = mf
	return act, nil
}

// ActionRegLoad is NXAST_REG_LOAD: load Value into Dst[Ofs..Ofs+NBits-1]
// (OpenFlow 1.0-1.4; 1.5 uses a masked set_field instead).
type ActionRegLoad struct {
	Dst   FieldRef
	Ofs   uint16
	NBits uint16
	Value uint64
}

func (a *ActionRegLoad) Name(uint8) string { return "NXAST_REG_LOAD" }
func (a *ActionRegLoad) appendTo(v uint8, b []byte) ([]byte, error) {
	if a.NBits == 0 || a.NBits > 64 || a.Ofs > 1023 {
		return b, fmt.Errorf("reg_load ofs %d n_bits %d out of range", a.Ofs, a.NBits)
	}
	b, start, err := beginAction(b, rawRegLoad, v)
	if err != nil {
		return b, err
	}
	b = put16(b, a.Ofs<<6|(a.NBits-1))
	b = put32(b, a.Dst.header(v).Uint32())
	b = put64(b, a.Value)
	return finishAction(b, start)
}

func decodeRegLoad(d *Decoder, a []byte, def *rawDef) (Action, error) {
	v := d.version
	ofsNBits := be16(a[10:])
	ofs, nBits := ofsNBits>>6, ofsNBits&0x3f+1
	dst, err := lookupRef32(v, be32(a[12:]))
	if err != nil {
		return nil, err
	}
	if err := checkSubfield(v, dst, int(ofs), int(nBits), true); err != nil {
		return nil, err
	}
	value := be64(a[16:])
	if nBits < 64 && value>>nBits != 0 {
		return nil, errf(v, OFPBAC_BAD_ARGUMENT, "reg_load value %#x wider than %d bits", value, nBits)
	}
	act := newIn(d.acts.regLoad())
	*act = ActionRegLoad{Dst: dst, Ofs: ofs, NBits: nBits, Value: value}
	return act, nil
}

// ActionMove copies NBits bits from Src[SrcOfs..] to Dst[DstOfs..]. It is
// NXAST_REG_MOVE in OpenFlow 1.0/1.3 and OFPAT_COPY_FIELD in 1.5.
type ActionMove struct {
	Src, Dst       FieldRef
	NBits          uint16
	SrcOfs, DstOfs uint16
}

func (a *ActionMove) raw(v uint8) rawID {
	if v == OFP15 {
		return rawCopyField15
	}
	return rawRegMove
}
func (a *ActionMove) Name(v uint8) string { return rawName(a.raw(v)) }
func (a *ActionMove) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, a.raw(v), v)
	if err != nil {
		return b, err
	}
	if v == OFP15 {
		// ofp15_action_copy_field: the 4-byte header is followed directly
		// by n_bits, offsets and 2 pad bytes.
		b = b[:start+4]
		b = put16(put16(put16(b, a.NBits), a.SrcOfs), a.DstOfs)
		b = zeros(b, 2)
	} else {
		b = put16(put16(put16(b, a.NBits), a.SrcOfs), a.DstOfs)
	}
	b = a.Src.header(v).Append(b)
	b = a.Dst.header(v).Append(b)
	return finishAction(b, start)
}

func decodeRegMove(d *Decoder, a []byte, def *rawDef) (Action, error) {
	v := d.version
	id := d.rawOf(a)
	var nBits, srcOfs, dstOfs uint16
	var rest []byte
	switch id {
	case rawRegMove:
		nBits, srcOfs, dstOfs, rest = be16(a[10:]), be16(a[12:]), be16(a[14:]), a[16:]
	case rawCopyField15:
		nBits, srcOfs, dstOfs, rest = be16(a[4:]), be16(a[6:]), be16(a[8:]), a[12:]
	default:
		return decodeRaw(d, a, def)
	}
	src, n, err := pullRef(v, rest)
	if err != nil {
		return nil, err
	}
	rest = rest[n:]
	dst, n, err := pullRef(v, rest)
	if err != nil {
		return nil, err
	}
	if !allZero(rest[n:]) {
		return nil, errf(v, NXBRC_MUST_BE_ZERO, "%s: nonzero padding", def.name)
	}
	if err := checkSubfield(v, src, int(srcOfs), int(nBits), false); err != nil {
		return nil, err
	}
	if err := checkSubfield(v, dst, int(dstOfs), int(nBits), true); err != nil {
		return nil, err
	}
	act := newIn(d.acts.move())
	*act = ActionMove{Src: src, Dst: dst, NBits: nBits, SrcOfs: srcOfs, DstOfs: dstOfs}
	return act, nil
}

// ActionRaw keeps an action this package validates (type and length) but
// does not decode further (bundle, learn2, sample2-4, clone, encap/decap,
// output_trunc, check_pkt_larger, delete_field, ONF copy_field). Data is
// the whole action including its header, so re-encoding is exact.
type ActionRaw struct {
	Vendor uint32
	Code   uint16
	Data   []byte
}

func (a *ActionRaw) Name(v uint8) string {
	if id, ok := rawLookup[lookupKey(vsBit(v), a.Vendor, a.Code)]; ok {
		return rawDefs[id].name
	}
	return fmt.Sprintf("action(vendor=%#x,type=%d)", a.Vendor, a.Code)
}
func (a *ActionRaw) appendTo(v uint8, b []byte) ([]byte, error) {
	if _, ok := rawLookup[lookupKey(vsBit(v), a.Vendor, a.Code)]; !ok {
		return b, fmt.Errorf("%s not valid in version %#x", a.Name(v), v)
	}
	return append(b, a.Data...), nil
}

func decodeRaw(d *Decoder, a []byte, def *rawDef) (Action, error) {
	r := &ActionRaw{Code: be16(a), Data: a}
	if r.Code == OFPAT_EXPERIMENTER {
		r.Vendor, r.Code = be32(a[4:]), be16(a[8:])
	}
	return r, nil
}
