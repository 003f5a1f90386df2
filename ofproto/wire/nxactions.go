package wire

import (
	"fmt"
)

// ActionResubmit is NXAST_RESUBMIT (InPort only, table 0xff),
// NXAST_RESUBMIT_TABLE or NXAST_RESUBMIT_TABLE_CT (WithCT). Subtype keeps
// the exact subtype decoded; when 0, Encode picks like OVS: RESUBMIT when
// the table is 0xff, no ct and in_port is not IN_PORT, else RESUBMIT_TABLE.
type ActionResubmit struct {
	InPort  uint16
	Table   uint8
	WithCT  bool
	Subtype uint16
}

func (a *ActionResubmit) raw() rawID {
	switch {
	case a.WithCT:
		return rawResubmitTableCT
	case a.Subtype == NXAST_RESUBMIT:
		return rawResubmit
	case a.Subtype == NXAST_RESUBMIT_TABLE:
		return rawResubmitTable
	case a.Table == 0xff && a.InPort != OFPP10_IN_PORT:
		return rawResubmit
	}
	return rawResubmitTable
}
func (a *ActionResubmit) Name(uint8) string { return rawName(a.raw()) }
func (a *ActionResubmit) appendTo(v uint8, b []byte) ([]byte, error) {
	id := a.raw()
	b, start, err := beginAction(b, id, v)
	if err != nil {
		return b, err
	}
	b = put16(b, a.InPort)
	if id != rawResubmit {
		b = append(b, a.Table)
	}
	return finishAction(b, start)
}

func decodeResubmit(d *Decoder, a []byte, def *rawDef) (Action, error) {
	id := d.rawOf(a)
	act := newIn(d.acts.resubmit())
	act.InPort = be16(a[10:])
	switch id {
	case rawResubmit:
		act.Table, act.Subtype = 0xff, NXAST_RESUBMIT
		return act, nil
	case rawResubmitTableCT:
		act.WithCT = true
		act.Subtype = NXAST_RESUBMIT_TABLE_CT
	default:
		act.Subtype = NXAST_RESUBMIT_TABLE
	}
	if a[13] != 0 || a[14] != 0 || a[15] != 0 {
		return nil, errf(d.version, OFPBAC_BAD_ARGUMENT, "%s: nonzero padding", def.name)
	}
	act.Table = a[12]
	return act, nil
}

// ActionNote is NXAST_NOTE. Note holds every byte after the subtype,
// including the zero padding OVS adds, so re-encoding is exact.
type ActionNote struct{ Note []byte }

func (a *ActionNote) Name(uint8) string { return "NXAST_NOTE" }
func (a *ActionNote) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawNote, v)
	if err != nil {
		return b, err
	}
	b = append(b, a.Note...)
	if len(b)-start < 16 {
		b = zeros(b, 16-(len(b)-start))
	}
	return finishAction(b, start)
}

func decodeNote(d *Decoder, a []byte, def *rawDef) (Action, error) {
	return &ActionNote{Note: a[10:]}, nil
}

// ActionMultipath is NXAST_MULTIPATH.
type ActionMultipath struct {
	Fields    uint16 // NX_HASH_FIELDS_*
	Basis     uint16
	Algorithm uint16 // NX_MP_ALG_*
	MaxLink   uint16
	Arg       uint32
	Dst       FieldRef
	Ofs       uint16
	NBits     uint16
}

func (a *ActionMultipath) Name(uint8) string { return "NXAST_MULTIPATH" }
func (a *ActionMultipath) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawMultipath, v)
	if err != nil {
		return b, err
	}
	b = put16(put16(b, a.Fields), a.Basis)
	b = zeros(b, 2)
	b = put16(put16(b, a.Algorithm), a.MaxLink)
	b = put32(b, a.Arg)
	b = zeros(b, 2)
	b = put16(b, a.Ofs<<6|(a.NBits-1))
	b = put32(b, a.Dst.header(v).Uint32())
	return finishAction(b, start)
}

func decodeMultipath(d *Decoder, a []byte, def *rawDef) (Action, error) {
	v := d.version
	act := &ActionMultipath{Fields: be16(a[10:]), Basis: be16(a[12:]), Algorithm: be16(a[16:]), MaxLink: be16(a[18:]), Arg: be32(a[20:])}
	on := be16(a[26:])
	act.Ofs, act.NBits = on>>6, on&0x3f+1
	dst, err := lookupRef32(v, be32(a[28:]))
	if err != nil {
		return nil, err
	}
	act.Dst = dst
	if act.Fields > 6 || act.Algorithm > 3 {
		return nil, errf(v, OFPBAC_BAD_ARGUMENT, "multipath fields %d / algorithm %d unsupported", act.Fields, act.Algorithm)
	}
	return act, checkSubfield(v, dst, int(act.Ofs), int(act.NBits), true)
}

// ActionOutputReg is NXAST_OUTPUT_REG (32-bit NXM source header) or, when
// Reg2 is set (or the source needs an experimenter header),
// NXAST_OUTPUT_REG2: output to the port in Src[Ofs..Ofs+NBits-1].
type ActionOutputReg struct {
	Src    FieldRef
	Ofs    uint16
	NBits  uint16
	MaxLen uint16
	Reg2   bool
}

func (a *ActionOutputReg) raw(v uint8) rawID {
	if a.Reg2 || a.Src.header(v).Class == OFPXMC_EXPERIMENTER {
		return rawOutputReg2
	}
	return rawOutputReg
}
func (a *ActionOutputReg) Name(v uint8) string { return rawName(a.raw(v)) }
func (a *ActionOutputReg) appendTo(v uint8, b []byte) ([]byte, error) {
	id := a.raw(v)
	b, start, err := beginAction(b, id, v)
	if err != nil {
		return b, err
	}
	b = put16(b, a.Ofs<<6|(a.NBits-1))
	if id == rawOutputReg {
		b = put32(b, a.Src.header(v).Uint32())
		b = put16(b, a.MaxLen)
		b = zeros(b, 6)
	} else {
		b = put16(b, a.MaxLen)
		b = a.Src.header(v).Append(b)
		if len(b)-start < 24 {
			b = zeros(b, 24-(len(b)-start))
		}
	}
	return finishAction(b, start)
}

func decodeOutputReg(d *Decoder, a []byte, def *rawDef) (Action, error) {
	v := d.version
	act := newIn(d.acts.outputReg())
	on := be16(a[10:])
	act.Ofs, act.NBits = on>>6, on&0x3f+1
	var err error
	if d.rawOf(a) == rawOutputReg {
		if !allZero(a[18:24]) {
			return nil, errf(v, OFPBAC_BAD_ARGUMENT, "output_reg: nonzero padding")
		}
		act.MaxLen = be16(a[16:])
		if act.Src, err = lookupRef32(v, be32(a[12:])); err != nil {
			return nil, err
		}
	} else {
		act.Reg2 = true
		act.MaxLen = be16(a[12:])
		var n int
		if act.Src, n, err = pullRef(v, a[14:]); err != nil {
			return nil, err
		}
		if !allZero(a[14+n:]) {
			return nil, errf(v, NXBRC_MUST_BE_ZERO, "output_reg2: nonzero padding")
		}
	}
	return act, checkSubfield(v, act.Src, int(act.Ofs), int(act.NBits), false)
}

// Learn spec header bits (nx_action_learn flow_mod_spec).
const (
	NX_LEARN_N_BITS_MASK   uint16 = 0x3ff
	NX_LEARN_SRC_FIELD     uint16 = 0 << 13
	NX_LEARN_SRC_IMMEDIATE uint16 = 1 << 13
	NX_LEARN_SRC_MASK      uint16 = 1 << 13
	NX_LEARN_DST_MATCH     uint16 = 0 << 11
	NX_LEARN_DST_LOAD      uint16 = 1 << 11
	NX_LEARN_DST_OUTPUT    uint16 = 2 << 11
	NX_LEARN_DST_RESERVED  uint16 = 3 << 11
	NX_LEARN_DST_MASK      uint16 = 3 << 11

	NX_LEARN_F_SEND_FLOW_REM  uint16 = 1 << 0
	NX_LEARN_F_DELETE_LEARNED uint16 = 1 << 1
)

// LearnSpec is one flow_mod_spec of NXAST_LEARN.
type LearnSpec struct {
	SrcImm bool   // immediate source (else a field)
	Dst    uint16 // NX_LEARN_DST_MATCH / LOAD / OUTPUT
	NBits  uint16
	Src    FieldRef
	SrcOfs uint16
	Imm    []byte // immediate value: 2*ceil(NBits/16) bytes, big-endian, as on the wire
	DstRef FieldRef
	DstOfs uint16
}

// ActionLearn is NXAST_LEARN.
type ActionLearn struct {
	IdleTimeout    uint16
	HardTimeout    uint16
	Priority       uint16
	Cookie         uint64
	Flags          uint16
	TableID        uint8
	FinIdleTimeout uint16
	FinHardTimeout uint16
	Specs          []LearnSpec
}

func (a *ActionLearn) Name(uint8) string { return "NXAST_LEARN" }
func (a *ActionLearn) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawLearn, v)
	if err != nil {
		return b, err
	}
	b = put16(put16(put16(b, a.IdleTimeout), a.HardTimeout), a.Priority)
	b = put64(b, a.Cookie)
	b = put16(b, a.Flags)
	b = append(b, a.TableID, 0)
	b = put16(put16(b, a.FinIdleTimeout), a.FinHardTimeout)
	for i := range a.Specs {
		s := &a.Specs[i]
		if s.NBits == 0 || s.NBits > NX_LEARN_N_BITS_MASK {
			return b, fmt.Errorf("learn spec %d: n_bits %d out of range", i, s.NBits)
		}
		h := s.NBits | s.Dst
		if s.SrcImm {
			h |= NX_LEARN_SRC_IMMEDIATE
		}
		b = put16(b, h)
		if s.SrcImm {
			want := 2 * ((int(s.NBits) + 15) / 16)
			if len(s.Imm) != want {
				return b, fmt.Errorf("learn spec %d: immediate is %d bytes, want %d", i, len(s.Imm), want)
			}
			b = append(b, s.Imm...)
		} else {
			b = put16(put32(b, s.Src.header(v).Uint32()), s.SrcOfs)
		}
		if s.Dst == NX_LEARN_DST_MATCH || s.Dst == NX_LEARN_DST_LOAD {
			b = put16(put32(b, s.DstRef.header(v).Uint32()), s.DstOfs)
		}
	}
	return finishAction(b, start)
}

func decodeLearn(d *Decoder, a []byte, def *rawDef) (Action, error) {
	v := d.version
	act := newIn(d.acts.learn())
	*act = ActionLearn{IdleTimeout: be16(a[10:]), HardTimeout: be16(a[12:]), Priority: be16(a[14:]), Cookie: be64(a[16:]),
		Flags: be16(a[24:]), TableID: a[26], FinIdleTimeout: be16(a[28:]), FinHardTimeout: be16(a[30:])}
	if a[27] != 0 {
		return nil, errf(v, OFPBAC_BAD_ARGUMENT, "learn: nonzero pad")
	}
	if act.TableID == 0xff {
		return nil, errf(v, OFPBAC_BAD_ARGUMENT, "learn: table 255")
	}
	if act.Flags&^(NX_LEARN_F_SEND_FLOW_REM|NX_LEARN_F_DELETE_LEARNED) != 0 {
		return nil, errf(v, OFPBAC_BAD_ARGUMENT, "learn: unknown flags %#x", act.Flags)
	}
	p := a[32:]
	// Count specs first so the slice is allocated once.
	n := 0
	for q := p; len(q) >= 2 && be16(q) != 0; n++ {
		h := be16(q)
		l := 2 + learnMinLen(h)
		if l > len(q) {
			n++
			break
		}
		q = q[l:]
	}
	act.Specs = sliceIn(d.acts.learnSpecs(), n)
	i := 0
	for len(p) >= 2 {
		h := be16(p)
		if h == 0 {
			break
		}
		s := &act.Specs[i]
		i++
		s.SrcImm = h&NX_LEARN_SRC_MASK != 0
		s.Dst = h & NX_LEARN_DST_MASK
		s.NBits = h & NX_LEARN_N_BITS_MASK
		if s.NBits == 0 { // as OVS's mf_check__ "zero bit field" (FuzzDecodeActions)
			return nil, errf(v, OFPBAC_BAD_SET_LEN, "learn: spec header %#x has n_bits 0", h)
		}
		if !(s.Dst == NX_LEARN_DST_MATCH || s.Dst == NX_LEARN_DST_LOAD || (s.Dst == NX_LEARN_DST_OUTPUT && !s.SrcImm)) {
			return nil, errf(v, OFPBAC_BAD_ARGUMENT, "learn: invalid src/dst combination in spec header %#x", h)
		}
		p = p[2:]
		if len(p) < learnMinLen(h) {
			return nil, errf(v, OFPBAC_BAD_LEN, "learn: spec overruns the action")
		}
		var err error
		if s.SrcImm {
			nb := 2 * ((int(s.NBits) + 15) / 16)
			s.Imm, p = p[:nb], p[nb:]
		} else {
			if s.Src, err = lookupRef32(v, be32(p)); err != nil {
				return nil, err
			}
			s.SrcOfs, p = be16(p[4:]), p[6:]
		}
		if s.Dst == NX_LEARN_DST_MATCH || s.Dst == NX_LEARN_DST_LOAD {
			if s.DstRef, err = lookupRef32(v, be32(p)); err != nil {
				return nil, err
			}
			s.DstOfs, p = be16(p[4:]), p[6:]
		}
	}
	act.Specs = act.Specs[:i]
	if !allZero(p) {
		return nil, errf(v, OFPBAC_BAD_ARGUMENT, "learn: nonzero bytes after the last spec")
	}
	return act, nil
}

func learnMinLen(h uint16) int {
	n := 0
	if h&NX_LEARN_SRC_MASK == NX_LEARN_SRC_FIELD {
		n += 6
	} else {
		n += 2 * ((int(h&NX_LEARN_N_BITS_MASK) + 15) / 16)
	}
	if d := h & NX_LEARN_DST_MASK; d == NX_LEARN_DST_MATCH || d == NX_LEARN_DST_LOAD {
		n += 6
	}
	return n
}

// ActionFinTimeout is NXAST_FIN_TIMEOUT.
type ActionFinTimeout struct{ IdleTimeout, HardTimeout uint16 }

func (a *ActionFinTimeout) Name(uint8) string { return "NXAST_FIN_TIMEOUT" }
func (a *ActionFinTimeout) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawFinTimeout, v)
	if err != nil {
		return b, err
	}
	b = put16(put16(b, a.IdleTimeout), a.HardTimeout)
	return finishAction(b, start)
}
func decodeFinTimeout(d *Decoder, a []byte, def *rawDef) (Action, error) {
	return &ActionFinTimeout{IdleTimeout: be16(a[10:]), HardTimeout: be16(a[12:])}, nil
}

// ActionController is NXAST_CONTROLLER.
type ActionController struct {
	MaxLen       uint16
	ControllerID uint16
	Reason       uint8
}

func (a *ActionController) Name(uint8) string { return "NXAST_CONTROLLER" }
func (a *ActionController) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawController, v)
	if err != nil {
		return b, err
	}
	b = put16(put16(b, a.MaxLen), a.ControllerID)
	b = append(b, a.Reason, 0)
	return finishAction(b, start)
}
func decodeController(d *Decoder, a []byte, def *rawDef) (Action, error) {
	return &ActionController{MaxLen: be16(a[10:]), ControllerID: be16(a[12:]), Reason: a[14]}, nil
}

// NXAST_CONTROLLER2 property types.
const (
	NXAC2PT_MAX_LEN       uint16 = 0
	NXAC2PT_CONTROLLER_ID uint16 = 1
	NXAC2PT_REASON        uint16 = 2
	NXAC2PT_USERDATA      uint16 = 3
	NXAC2PT_PAUSE         uint16 = 4
	NXAC2PT_METER_ID      uint16 = 5
)

// ActionController2 is NXAST_CONTROLLER2. Props keeps the properties in
// wire order (see Params for the decoded view).
type ActionController2 struct {
	Props []Property
}

// Controller2Params is the decoded view of NXAST_CONTROLLER2 with OVS's
// defaults (max_len 65535, reason OFPR_ACTION=1, meter none: OVS's
// NX_CTLR_NO_METER is 0).
type Controller2Params struct {
	MaxLen       uint16
	ControllerID uint16
	Reason       uint8
	Userdata     []byte
	Pause        bool
	MeterID      uint32
}

// Params returns the decoded parameters.
func (a *ActionController2) Params() Controller2Params {
	p := Controller2Params{MaxLen: 0xffff, Reason: 1}
	for _, pr := range a.Props {
		switch pr.Type {
		case NXAC2PT_MAX_LEN:
			p.MaxLen = be16(pr.Data)
		case NXAC2PT_CONTROLLER_ID:
			p.ControllerID = be16(pr.Data)
		case NXAC2PT_REASON:
			p.Reason = pr.Data[0]
		case NXAC2PT_USERDATA:
			p.Userdata = pr.Data
		case NXAC2PT_PAUSE:
			p.Pause = true
		case NXAC2PT_METER_ID:
			p.MeterID = be32(pr.Data)
		}
	}
	return p
}

func (a *ActionController2) Name(uint8) string { return "NXAST_CONTROLLER2" }
func (a *ActionController2) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawController2, v)
	if err != nil {
		return b, err
	}
	b = zeros(b, 6)
	if b, err = appendProps(b, a.Props); err != nil {
		return b, err
	}
	return finishAction(b, start)
}

func decodeController2(d *Decoder, a []byte, def *rawDef) (Action, error) {
	v := d.version
	if !allZero(a[10:16]) {
		return nil, errf(v, NXBRC_MUST_BE_ZERO, "controller2: nonzero pad")
	}
	props, err := decodeProps(v, a[16:])
	if err != nil {
		return nil, err
	}
	for _, p := range props {
		want := -1
		switch p.Type {
		case NXAC2PT_MAX_LEN, NXAC2PT_CONTROLLER_ID:
			want = 2
		case NXAC2PT_REASON:
			want = 1
		case NXAC2PT_METER_ID:
			want = 4
		case NXAC2PT_USERDATA, NXAC2PT_PAUSE:
		default:
			return nil, errf(v, OFPBPC_BAD_TYPE, "controller2: unknown property %d", p.Type)
		}
		// ofpprop_parse_u8/u16 accept any payload at least big enough;
		// u32 needs the exact size.
		if want >= 0 && (len(p.Data) < want || (want == 4 && len(p.Data) != 4)) {
			return nil, errf(v, OFPBPC_BAD_LEN, "controller2: property %d has %d bytes, want %d", p.Type, len(p.Data), want)
		}
	}
	return &ActionController2{Props: props}, nil
}

// ActionWriteMetadata is NXAST_WRITE_METADATA.
type ActionWriteMetadata struct{ Metadata, Mask uint64 }

func (a *ActionWriteMetadata) Name(uint8) string { return "NXAST_WRITE_METADATA" }
func (a *ActionWriteMetadata) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawWriteMetadata, v)
	if err != nil {
		return b, err
	}
	b = zeros(b, 6)
	b = put64(put64(b, a.Metadata), a.Mask)
	return finishAction(b, start)
}
func decodeWriteMetadata(d *Decoder, a []byte, def *rawDef) (Action, error) {
	if !allZero(a[10:16]) {
		return nil, errf(d.version, NXBRC_MUST_BE_ZERO, "write_metadata: nonzero pad")
	}
	return &ActionWriteMetadata{Metadata: be64(a[16:]), Mask: be64(a[24:])}, nil
}

// ActionStack is NXAST_STACK_PUSH or (Pop) NXAST_STACK_POP.
type ActionStack struct {
	Pop   bool
	Field FieldRef
	Ofs   uint16
	NBits uint16
}

func (a *ActionStack) raw() rawID {
	if a.Pop {
		return rawStackPop
	}
	return rawStackPush
}
func (a *ActionStack) Name(uint8) string { return rawName(a.raw()) }
func (a *ActionStack) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, a.raw(), v)
	if err != nil {
		return b, err
	}
	b = put16(b, a.Ofs)
	b = a.Field.header(v).Append(b)
	b = put16(b, a.NBits)
	if len(b)-start < 24 {
		b = zeros(b, 24-(len(b)-start))
	}
	return finishAction(b, start)
}
func decodeStack(d *Decoder, a []byte, def *rawDef) (Action, error) {
	v := d.version
	act := &ActionStack{Pop: d.rawOf(a) == rawStackPop, Ofs: be16(a[10:])}
	f, n, err := pullRef(v, a[12:])
	if err != nil {
		return nil, err
	}
	act.Field = f
	rest := a[12+n:]
	if len(rest) < 2 {
		return nil, errf(v, OFPBAC_BAD_LEN, "stack action: n_bits truncated")
	}
	act.NBits = be16(rest)
	if !allZero(rest[2:]) {
		return nil, errf(v, NXBRC_MUST_BE_ZERO, "stack action: nonzero padding")
	}
	return act, checkSubfield(v, f, int(act.Ofs), int(act.NBits), act.Pop)
}

// ActionSample is NXAST_SAMPLE.
type ActionSample struct {
	Probability    uint16
	CollectorSetID uint32
	ObsDomainID    uint32
	ObsPointID     uint32
}

func (a *ActionSample) Name(uint8) string { return "NXAST_SAMPLE" }
func (a *ActionSample) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawSample, v)
	if err != nil {
		return b, err
	}
	b = put16(b, a.Probability)
	b = put32(put32(put32(b, a.CollectorSetID), a.ObsDomainID), a.ObsPointID)
	return finishAction(b, start)
}
func decodeSample(d *Decoder, a []byte, def *rawDef) (Action, error) {
	act := &ActionSample{Probability: be16(a[10:]), CollectorSetID: be32(a[12:]), ObsDomainID: be32(a[16:]), ObsPointID: be32(a[20:])}
	if act.Probability == 0 {
		return nil, errf(d.version, OFPBAC_BAD_ARGUMENT, "sample: zero probability")
	}
	return act, nil
}

// ActionConjunction is NXAST_CONJUNCTION. Clause is 0-based on the wire
// (text "conjunction(id,1/2)" has Clause 0, NClauses 2).
type ActionConjunction struct {
	Clause   uint8
	NClauses uint8
	ID       uint32
}

func (a *ActionConjunction) Name(uint8) string { return "NXAST_CONJUNCTION" }
func (a *ActionConjunction) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawConjunction, v)
	if err != nil {
		return b, err
	}
	b = append(b, a.Clause, a.NClauses)
	b = put32(b, a.ID)
	return finishAction(b, start)
}
func decodeConjunction(d *Decoder, a []byte, def *rawDef) (Action, error) {
	act := newIn(d.acts.conjunction())
	*act = ActionConjunction{Clause: a[10], NClauses: a[11], ID: be32(a[12:])}
	if act.NClauses < 2 || act.NClauses > 64 || act.Clause >= act.NClauses {
		return nil, errf(d.version, NXBAC_BAD_CONJUNCTION, "conjunction clause %d of %d", act.Clause, act.NClauses)
	}
	return act, nil
}

// NXAST_CT flags.
const (
	NX_CT_F_COMMIT    uint16 = 1 << 0
	NX_CT_F_FORCE     uint16 = 1 << 1
	NX_CT_RECIRC_NONE uint8  = 0xff
)

// ActionCT is NXAST_CT with its nested actions. When ZoneSrc.Field is nil
// the zone is the immediate ZoneImm; otherwise it comes from
// ZoneSrc[ZoneOfs..ZoneOfs+15].
type ActionCT struct {
	Flags       uint16
	ZoneSrc     FieldRef
	ZoneImm     uint16
	ZoneOfs     uint16
	ZoneNBits   uint16
	RecircTable uint8
	Alg         uint16
	Actions     []Action
}

func (a *ActionCT) Name(uint8) string { return "NXAST_CT" }
func (a *ActionCT) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawCT, v)
	if err != nil {
		return b, err
	}
	b = put16(b, a.Flags)
	if a.ZoneSrc.Field != nil {
		b = put32(b, a.ZoneSrc.header(v).Uint32())
		b = put16(b, a.ZoneOfs<<6|(a.ZoneNBits-1))
	} else {
		b = put32(b, 0)
		b = put16(b, a.ZoneImm)
	}
	b = append(b, a.RecircTable, 0, 0, 0)
	b = put16(b, a.Alg)
	if b, err = AppendActions(b, v, a.Actions); err != nil {
		return b, err
	}
	return finishAction(b, start)
}

func decodeCT(d *Decoder, a []byte, def *rawDef) (Action, error) {
	v := d.version
	act := newIn(d.acts.ct())
	act.Flags = be16(a[10:])
	if act.Flags&NX_CT_F_FORCE != 0 && act.Flags&NX_CT_F_COMMIT == 0 {
		return nil, errf(v, OFPBAC_BAD_ARGUMENT, "ct: force without commit")
	}
	if zs := be32(a[12:]); zs != 0 {
		ref, err := lookupRef32(v, zs)
		if err != nil {
			return nil, err
		}
		on := be16(a[16:])
		act.ZoneSrc, act.ZoneOfs, act.ZoneNBits = ref, on>>6, on&0x3f+1
		if err := checkSubfield(v, ref, int(act.ZoneOfs), int(act.ZoneNBits), false); err != nil {
			return nil, err
		}
		if act.ZoneNBits != 16 {
			return nil, errf(v, OFPBAC_BAD_SET_LEN, "ct: zone n_bits %d, want 16", act.ZoneNBits)
		}
	} else {
		act.ZoneImm = be16(a[16:])
	}
	act.RecircTable = a[18]
	act.Alg = be16(a[22:])
	nested, err := d.DecodeActions(a[24:])
	if err != nil {
		return nil, fmt.Errorf("ct nested actions: %w", err)
	}
	act.Actions = nested
	if len(nested) > 0 && act.Flags&NX_CT_F_COMMIT == 0 {
		for _, n := range nested {
			if nat, ok := n.(*ActionNAT); !ok || nat.Flags != 0 || nat.RangePresent&(NX_NAT_RANGE_IPV4_MIN|NX_NAT_RANGE_IPV6_MIN) != 0 {
				return nil, errf(v, OFPBAC_BAD_ARGUMENT, "ct: actions other than a bare nat require commit")
			}
		}
	}
	return act, nil
}

// NXAST_NAT flags and range bits.
const (
	NX_NAT_F_SRC          uint16 = 1 << 0
	NX_NAT_F_DST          uint16 = 1 << 1
	NX_NAT_F_PERSISTENT   uint16 = 1 << 2
	NX_NAT_F_PROTO_HASH   uint16 = 1 << 3
	NX_NAT_F_PROTO_RANDOM uint16 = 1 << 4
	NX_NAT_F_MASK         uint16 = 0x1f

	NX_NAT_RANGE_IPV4_MIN  uint16 = 1 << 0
	NX_NAT_RANGE_IPV4_MAX  uint16 = 1 << 1
	NX_NAT_RANGE_IPV6_MIN  uint16 = 1 << 2
	NX_NAT_RANGE_IPV6_MAX  uint16 = 1 << 3
	NX_NAT_RANGE_PROTO_MIN uint16 = 1 << 4
	NX_NAT_RANGE_PROTO_MAX uint16 = 1 << 5
)

// ActionNAT is NXAST_NAT. RangePresent says which range members are on the
// wire (in the order ipv4 min, max / ipv6 min, max, proto min, max).
type ActionNAT struct {
	Flags        uint16
	RangePresent uint16
	IPv4Min      [4]byte
	IPv4Max      [4]byte
	IPv6Min      [16]byte
	IPv6Max      [16]byte
	ProtoMin     uint16
	ProtoMax     uint16
}

func (a *ActionNAT) Name(uint8) string { return "NXAST_NAT" }
func (a *ActionNAT) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawNAT, v)
	if err != nil {
		return b, err
	}
	b = zeros(b, 2)
	b = put16(put16(b, a.Flags), a.RangePresent)
	r := a.RangePresent
	if r&NX_NAT_RANGE_IPV4_MIN != 0 {
		b = append(b, a.IPv4Min[:]...)
		if r&NX_NAT_RANGE_IPV4_MAX != 0 {
			b = append(b, a.IPv4Max[:]...)
		}
	} else if r&NX_NAT_RANGE_IPV6_MIN != 0 {
		b = append(b, a.IPv6Min[:]...)
		if r&NX_NAT_RANGE_IPV6_MAX != 0 {
			b = append(b, a.IPv6Max[:]...)
		}
	}
	if r&NX_NAT_RANGE_PROTO_MIN != 0 {
		b = put16(b, a.ProtoMin)
		if r&NX_NAT_RANGE_PROTO_MAX != 0 {
			b = put16(b, a.ProtoMax)
		}
	}
	return finishAction(b, start)
}

// decodeNAT follows decode_NXAST_RAW_NAT(): flags must be known and
// consistent, and every announced range member must be present and sane.
func decodeNAT(d *Decoder, a []byte, def *rawDef) (Action, error) {
	v := d.version
	act := newIn(d.acts.nat())
	act.Flags, act.RangePresent = be16(a[12:]), be16(a[14:])
	f, r := act.Flags, act.RangePresent
	bad := func(why string) error { return errf(v, OFPBAC_BAD_ARGUMENT, "nat: %s", why) }
	if f&^NX_NAT_F_MASK != 0 || (f&NX_NAT_F_SRC != 0 && f&NX_NAT_F_DST != 0) ||
		(f&NX_NAT_F_PROTO_HASH != 0 && f&NX_NAT_F_PROTO_RANDOM != 0) {
		return nil, bad("invalid flags")
	}
	opts := a[16:]
	take := func(n int) ([]byte, bool) {
		if len(opts) < n {
			return nil, false
		}
		p := opts[:n]
		opts = opts[n:]
		return p, true
	}
	haveAddr := false
	switch {
	case r&NX_NAT_RANGE_IPV4_MIN != 0:
		if r&(NX_NAT_RANGE_IPV6_MIN|NX_NAT_RANGE_IPV6_MAX) != 0 {
			return nil, bad("both IPv4 and IPv6 ranges")
		}
		p, ok := take(4)
		if !ok || allZero(p) {
			return nil, bad("missing or zero ipv4 min")
		}
		copy(act.IPv4Min[:], p)
		haveAddr = true
		if r&NX_NAT_RANGE_IPV4_MAX != 0 {
			p, ok := take(4)
			if !ok || be32(p) < be32(act.IPv4Min[:]) {
				return nil, bad("missing or inverted ipv4 max")
			}
			copy(act.IPv4Max[:], p)
		}
	case r&NX_NAT_RANGE_IPV4_MAX != 0:
		return nil, bad("ipv4 max without min")
	case r&NX_NAT_RANGE_IPV6_MIN != 0:
		p, ok := take(16)
		if !ok || allZero(p) {
			return nil, bad("missing or zero ipv6 min")
		}
		copy(act.IPv6Min[:], p)
		haveAddr = true
		if r&NX_NAT_RANGE_IPV6_MAX != 0 {
			p, ok := take(16)
			if !ok || string(p) < string(act.IPv6Min[:]) {
				return nil, bad("missing or inverted ipv6 max")
			}
			copy(act.IPv6Max[:], p)
		}
	case r&NX_NAT_RANGE_IPV6_MAX != 0:
		return nil, bad("ipv6 max without min")
	}
	if r&NX_NAT_RANGE_PROTO_MIN != 0 {
		if !haveAddr {
			return nil, bad("port range without address range")
		}
		p, ok := take(2)
		if !ok || be16(p) == 0 {
			return nil, bad("missing or zero proto min")
		}
		act.ProtoMin = be16(p)
		if r&NX_NAT_RANGE_PROTO_MAX != 0 {
			p, ok := take(2)
			if !ok || be16(p) < act.ProtoMin {
				return nil, bad("missing or inverted proto max")
			}
			act.ProtoMax = be16(p)
		}
	} else if r&NX_NAT_RANGE_PROTO_MAX != 0 {
		return nil, bad("proto max without min")
	}
	return act, nil
}

// ActionDecTTLCntIDs is NXAST_DEC_TTL_CNT_IDS.
type ActionDecTTLCntIDs struct{ IDs []uint16 }

func (a *ActionDecTTLCntIDs) Name(uint8) string { return "NXAST_DEC_TTL_CNT_IDS" }
func (a *ActionDecTTLCntIDs) appendTo(v uint8, b []byte) ([]byte, error) {
	b, start, err := beginAction(b, rawDecTTLCntIDs, v)
	if err != nil {
		return b, err
	}
	b = put16(b, uint16(len(a.IDs)))
	b = zeros(b, 4)
	for _, id := range a.IDs {
		b = put16(b, id)
	}
	return finishAction(b, start)
}
func decodeCntIDs(d *Decoder, a []byte, def *rawDef) (Action, error) {
	v := d.version
	n := int(be16(a[10:]))
	if !allZero(a[12:16]) {
		return nil, errf(v, NXBRC_MUST_BE_ZERO, "dec_ttl_cnt_ids: nonzero pad")
	}
	if len(a)-16 < 2*n {
		return nil, errf(v, OFPBAC_BAD_LEN, "dec_ttl_cnt_ids: %d ids need %d bytes, have %d", n, 2*n, len(a)-16)
	}
	act := &ActionDecTTLCntIDs{IDs: make([]uint16, n)}
	for i := range act.IDs {
		act.IDs[i] = be16(a[16+2*i:])
	}
	return act, nil
}

// actionArenas pools the action structs of the hot path.
type actionArenas struct {
	on         bool
	outputs    arena[ActionOutput]
	setFields  arena[ActionSetField]
	regLoads   arena[ActionRegLoad]
	moves      arena[ActionMove]
	resubmits  arena[ActionResubmit]
	outputRegs arena[ActionOutputReg]
	learns     arena[ActionLearn]
	specs      arena[LearnSpec]
	conjs      arena[ActionConjunction]
	cts        arena[ActionCT]
	nats       arena[ActionNAT]
}

func (p *actionArenas) reset() {
	p.on = true
	p.outputs.reset()
	p.setFields.reset()
	p.regLoads.reset()
	p.moves.reset()
	p.resubmits.reset()
	p.outputRegs.reset()
	p.learns.reset()
	p.specs.reset()
	p.conjs.reset()
	p.cts.reset()
	p.nats.reset()
}

func pick[T any](on bool, a *arena[T]) *arena[T] {
	if on {
		return a
	}
	return nil
}

func (p *actionArenas) output() *arena[ActionOutput]           { return pick(p.on, &p.outputs) }
func (p *actionArenas) setField() *arena[ActionSetField]       { return pick(p.on, &p.setFields) }
func (p *actionArenas) regLoad() *arena[ActionRegLoad]         { return pick(p.on, &p.regLoads) }
func (p *actionArenas) move() *arena[ActionMove]               { return pick(p.on, &p.moves) }
func (p *actionArenas) resubmit() *arena[ActionResubmit]       { return pick(p.on, &p.resubmits) }
func (p *actionArenas) outputReg() *arena[ActionOutputReg]     { return pick(p.on, &p.outputRegs) }
func (p *actionArenas) learn() *arena[ActionLearn]             { return pick(p.on, &p.learns) }
func (p *actionArenas) learnSpecs() *arena[LearnSpec]          { return pick(p.on, &p.specs) }
func (p *actionArenas) conjunction() *arena[ActionConjunction] { return pick(p.on, &p.conjs) }
func (p *actionArenas) ct() *arena[ActionCT]                   { return pick(p.on, &p.cts) }
func (p *actionArenas) nat() *arena[ActionNAT]                 { return pick(p.on, &p.nats) }
