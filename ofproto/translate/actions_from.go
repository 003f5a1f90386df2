package translate

import (
	"fmt"
	"net/netip"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/wire"
)

// ActionsFromWire translates an action list (OpenFlow 1.0 / NX flow-mod
// actions, an apply-actions or write-actions instruction, a group bucket,
// a packet-out) decoded in version into model actions.
func ActionsFromWire(version uint8, acts []wire.Action, tlv *flowtable.TLVMap) ([]flowtable.Action, error) {
	t := fromWire{version: version, tlv: tlv}
	return t.actions(acts)
}

// InstructionsFromWire translates OpenFlow 1.1+ instructions into one model
// action list. Like OVS (ofpacts_pull_openflow11_instructions) the result is
// in the canonical instruction order whatever the wire order: meter,
// apply-actions, clear-actions, write-actions, write-metadata, goto-table.
func InstructionsFromWire(version uint8, insts []wire.Instruction, tlv *flowtable.TLVMap) ([]flowtable.Action, error) {
	t := fromWire{version: version, tlv: tlv}
	return t.instructions(insts)
}

type fromWire struct {
	version uint8
	tlv     *flowtable.TLVMap
	pool    pool
}

func (t *fromWire) err(sym wire.ErrorCode, format string, args ...any) error {
	return ofpfield.Err(t.version, sym, format, args...)
}

// instructionOrder is the canonical order of instruction types.
var instructionOrder = [...]uint16{wire.OFPIT_METER, wire.OFPIT_APPLY_ACTIONS, wire.OFPIT_CLEAR_ACTIONS,
	wire.OFPIT_WRITE_ACTIONS, wire.OFPIT_WRITE_METADATA, wire.OFPIT_GOTO_TABLE}

func (t *fromWire) instructions(insts []wire.Instruction) ([]flowtable.Action, error) {
	n := 0
	for i := range insts {
		if insts[i].Type == wire.OFPIT_APPLY_ACTIONS {
			n += len(insts[i].Actions)
		} else {
			n++
		}
	}
	out := t.pool.actions(n)
	for _, typ := range instructionOrder {
		for i := range insts {
			in := &insts[i]
			if in.Type != typ {
				continue
			}
			switch typ {
			case wire.OFPIT_METER:
				out = append(out, &flowtable.Meter{ID: in.MeterID})
			case wire.OFPIT_APPLY_ACTIONS:
				var err error
				if out, err = t.appendActions(out, in.Actions); err != nil {
					return nil, fmt.Errorf("apply_actions: %w", err)
				}
			case wire.OFPIT_CLEAR_ACTIONS:
				out = append(out, &flowtable.ClearActions{})
			case wire.OFPIT_WRITE_ACTIONS:
				acts, err := t.actions(in.Actions)
				if err != nil {
					return nil, fmt.Errorf("write_actions: %w", err)
				}
				out = append(out, &flowtable.WriteActions{Actions: acts})
			case wire.OFPIT_WRITE_METADATA:
				out = append(out, &flowtable.WriteMetadata{Value: in.Metadata & in.MetadataMask, Mask: in.MetadataMask})
			case wire.OFPIT_GOTO_TABLE:
				out = append(out, &flowtable.GotoTable{Table: in.TableID})
			}
		}
	}
	for i := range insts {
		switch insts[i].Type {
		case wire.OFPIT_METER, wire.OFPIT_APPLY_ACTIONS, wire.OFPIT_CLEAR_ACTIONS,
			wire.OFPIT_WRITE_ACTIONS, wire.OFPIT_WRITE_METADATA, wire.OFPIT_GOTO_TABLE:
		default:
			return nil, t.err(wire.OFPBIC_UNKNOWN_INST, "instruction type %d", insts[i].Type)
		}
	}
	return out, nil
}

func (t *fromWire) actions(acts []wire.Action) ([]flowtable.Action, error) {
	return t.appendActions(t.pool.actions(len(acts)), acts)
}

func (t *fromWire) appendActions(out []flowtable.Action, acts []wire.Action) ([]flowtable.Action, error) {
	for i, a := range acts {
		m, err := t.action(a)
		if err != nil {
			return nil, fmt.Errorf("action %d (%s): %w", i, a.Name(t.version), err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
	return out, nil
}

// fieldRange turns a field reference of an action into a model subfield,
// resolving tun_metadataN through the TLV map.
func (t *fromWire) fieldRange(ref wire.FieldRef, ofs, nBits int) (flowtable.FieldRange, error) {
	f, err := ofpfield.ModelField(t.version, ref.Field, t.tlv, true)
	if err != nil {
		return flowtable.FieldRange{}, err
	}
	r := flowtable.FieldRange{Field: f, Ofs: ofs, NBits: nBits}
	if err := r.Validate(); err != nil {
		return r, t.err(wire.OFPBAC_BAD_SET_LEN, "%v", err)
	}
	return r, nil
}

// setField makes a model set-field from a full-width value and mask.
func (t *fromWire) setField(f *flowtable.Field, value, mask []byte, raw flowtable.SetFieldRaw) *flowtable.SetField {
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
func (t *fromWire) setFieldUint(f *flowtable.Field, value uint64, raw flowtable.SetFieldRaw) *flowtable.SetField {
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

func (t *fromWire) action(a wire.Action) (flowtable.Action, error) {
	v := t.version
	switch a := a.(type) {
	case *wire.ActionOutput:
		p, ok := ofpfield.PortFromWire(v, a.Port)
		if !ok {
			return nil, t.err(wire.OFPBAC_BAD_OUT_PORT, "output port %#x", a.Port)
		}
		if p == flowtable.PortController {
			return &flowtable.Controller{MaxLen: a.MaxLen, Reason: 1, Short: true}, nil
		}
		return &flowtable.Output{Port: p, MaxLen: a.MaxLen}, nil
	case *wire.ActionEnqueue:
		return &flowtable.Enqueue{Port: uint32(a.Port), Queue: a.QueueID}, nil
	case *wire.ActionSetDlAddr:
		if a.Dst {
			return t.setField(flowtable.FieldEthDst, a.MAC[:], nil, flowtable.RawModDlDst), nil
		}
		return t.setField(flowtable.FieldEthSrc, a.MAC[:], nil, flowtable.RawModDlSrc), nil
	case *wire.ActionSetNwSrc:
		return t.setFieldUint(flowtable.FieldIPv4Src, uint64(a.IPv4), flowtable.RawModNwSrc), nil
	case *wire.ActionSetNwDst:
		return t.setFieldUint(flowtable.FieldIPv4Dst, uint64(a.IPv4), flowtable.RawModNwDst), nil
	case *wire.ActionSetNwTos:
		if a.TOS&3 != 0 {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "mod_nw_tos %#x has ECN bits set", a.TOS)
		}
		return t.setFieldUint(flowtable.FieldIPDSCP, uint64(a.TOS>>2), flowtable.RawModNwTos), nil
	case *wire.ActionSetNwEcn:
		if a.ECN > 3 {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "mod_nw_ecn %d out of range", a.ECN)
		}
		return t.setFieldUint(flowtable.FieldIPECN, uint64(a.ECN), flowtable.RawModNwEcn), nil
	case *wire.ActionSetNwTTL:
		return t.setFieldUint(flowtable.FieldIPTTL, uint64(a.TTL), flowtable.RawModNwTTL), nil
	case *wire.ActionSetTpSrc:
		return t.setFieldUint(flowtable.FieldTCPSrc, uint64(a.Port), flowtable.RawModTpSrc), nil
	case *wire.ActionSetTpDst:
		return t.setFieldUint(flowtable.FieldTCPDst, uint64(a.Port), flowtable.RawModTpDst), nil
	case *wire.ActionSetVlanVID:
		if a.VID > flowtable.VlanVIDMask {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "VLAN VID %d out of range", a.VID)
		}
		return t.setFieldUint(flowtable.FieldVlanVID, uint64(a.VID)|flowtable.VlanCFI, flowtable.RawModVlanVid), nil
	case *wire.ActionSetVlanPCP:
		if a.PCP > 7 {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "VLAN PCP %d out of range", a.PCP)
		}
		return t.setFieldUint(flowtable.FieldVlanPCP, uint64(a.PCP), flowtable.RawModVlanPcp), nil
	case *wire.ActionPopVLAN:
		return &flowtable.PopVLAN{Strip: v == wire.OFP10}, nil
	case *wire.ActionPushVLAN:
		if a.EthType != flowtable.EthTypeVLAN && a.EthType != flowtable.EthTypeQinQ {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "push_vlan ethertype %#x", a.EthType)
		}
		return &flowtable.PushVLAN{EthType: a.EthType}, nil
	case *wire.ActionDecNwTTL:
		return &flowtable.DecTTL{}, nil
	case *wire.ActionDecTTLCntIDs:
		ids := append([]uint16{}, a.IDs...)
		return &flowtable.DecTTL{IDs: ids}, nil
	case *wire.ActionSetField:
		return t.setFieldTLV(&a.Field, flowtable.RawSetField)
	case *wire.ActionRegLoad2:
		return t.setFieldTLV(&a.Field, flowtable.RawLoad)
	case *wire.ActionRegLoad:
		f, err := ofpfield.ModelField(v, a.Dst.Field, t.tlv, true)
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
	case *wire.ActionMove:
		src, err := t.fieldRange(a.Src, int(a.SrcOfs), int(a.NBits))
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		dst, err := t.fieldRange(a.Dst, int(a.DstOfs), int(a.NBits))
		if err != nil {
			return nil, fmt.Errorf("destination: %w", err)
		}
		return &flowtable.Move{Src: src, Dst: dst}, nil
	case *wire.ActionResubmit:
		r := &flowtable.Resubmit{InPort: uint32(a.InPort), Table: a.Table, CT: a.WithCT}
		return r, nil
	case *wire.ActionNote:
		d := t.pool.byteSlice(len(a.Note))
		copy(d, a.Note)
		return &flowtable.Note{Data: d}, nil
	case *wire.ActionOutputReg:
		src, err := t.fieldRange(a.Src, int(a.Ofs), int(a.NBits))
		if err != nil {
			return nil, err
		}
		return &flowtable.OutputReg{Src: src, MaxLen: a.MaxLen}, nil
	case *wire.ActionLearn:
		return t.learn(a)
	case *wire.ActionExit:
		return &flowtable.Exit{}, nil
	case *wire.ActionCTClear:
		return &flowtable.CTClear{}, nil
	case *wire.ActionPopQueue:
		return &flowtable.PopQueue{}, nil
	case *wire.ActionSetQueue:
		return &flowtable.SetQueue{ID: a.QueueID}, nil
	case *wire.ActionGroup:
		return &flowtable.Group{ID: a.GroupID}, nil
	case *wire.ActionMeter:
		return &flowtable.Meter{ID: a.MeterID}, nil
	case *wire.ActionFinTimeout:
		return &flowtable.FinTimeout{IdleTimeout: a.IdleTimeout, HardTimeout: a.HardTimeout}, nil
	case *wire.ActionController:
		return &flowtable.Controller{MaxLen: a.MaxLen, ControllerID: a.ControllerID, Reason: a.Reason}, nil
	case *wire.ActionController2:
		p := a.Params()
		c := &flowtable.Controller{MaxLen: p.MaxLen, ControllerID: p.ControllerID, Reason: p.Reason, Pause: p.Pause}
		if p.MeterID != 0xffffffff { // NX_CTLR_NO_METER
			c.MeterID = p.MeterID
		}
		if len(p.Userdata) > 0 {
			c.UserData = append([]byte(nil), p.Userdata...)
		}
		return c, nil
	case *wire.ActionWriteMetadata:
		return &flowtable.WriteMetadata{Value: a.Metadata & a.Mask, Mask: a.Mask}, nil
	case *wire.ActionConjunction:
		return &flowtable.Conjunction{ID: a.ID, Clause: a.Clause + 1, NClauses: a.NClauses}, nil
	case *wire.ActionCT:
		return t.ct(a)
	case *wire.ActionNAT:
		return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "nat is only allowed inside ct()")
	case *wire.ActionSetTunnel:
		// set_tunnel/set_tunnel64 set tun_id; the model has no separate
		// action for them.
		return t.setFieldUint(flowtable.FieldTunID, a.TunID, flowtable.RawSetField), nil
	}
	return nil, t.err(wire.OFPBAC_BAD_TYPE, "action %s is not supported by govs", a.Name(v))
}

// setFieldTLV translates OFPAT_SET_FIELD / NXAST_REG_LOAD2.
func (t *fromWire) setFieldTLV(mf *wire.MatchField, raw flowtable.SetFieldRaw) (flowtable.Action, error) {
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

func (t *fromWire) ct(a *wire.ActionCT) (flowtable.Action, error) {
	ct := &flowtable.CT{
		Commit: a.Flags&wire.NX_CT_F_COMMIT != 0,
		Force:  a.Flags&wire.NX_CT_F_FORCE != 0,
		Table:  a.RecircTable,
		Alg:    a.Alg,
	}
	if a.ZoneSrc.Field != nil {
		r, err := t.fieldRange(a.ZoneSrc, int(a.ZoneOfs), int(a.ZoneNBits))
		if err != nil {
			return nil, fmt.Errorf("ct zone: %w", err)
		}
		ct.ZoneSrc = r
	} else {
		ct.Zone = a.ZoneImm
	}
	n := 0
	for _, na := range a.Actions {
		if _, ok := na.(*wire.ActionNAT); !ok {
			n++
		}
	}
	ct.Exec = t.pool.actions(n)
	for _, na := range a.Actions {
		if nat, ok := na.(*wire.ActionNAT); ok {
			if ct.NAT != nil {
				return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "ct: more than one nat")
			}
			ct.NAT = natFromWire(nat)
			continue
		}
		m, err := t.action(na)
		if err != nil {
			return nil, fmt.Errorf("ct nested action: %w", err)
		}
		// OVS allows only set-field of ct_mark/ct_label in ct(exec(...)).
		sf, ok := m.(*flowtable.SetField)
		if !ok || (sf.Field != flowtable.FieldCtMark && sf.Field != flowtable.FieldCtLabel) {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "ct: nested action %s is not allowed (only set-field of ct_mark or ct_label)", na.Name(t.version))
		}
		ct.Exec = append(ct.Exec, m)
	}
	return ct, nil
}

func natFromWire(a *wire.ActionNAT) *flowtable.NAT {
	n := &flowtable.NAT{}
	f := a.Flags
	if f&wire.NX_NAT_F_SRC != 0 {
		n.Flags |= flowtable.NATSrc
	}
	if f&wire.NX_NAT_F_DST != 0 {
		n.Flags |= flowtable.NATDst
	}
	if f&wire.NX_NAT_F_PERSISTENT != 0 {
		n.Flags |= flowtable.NATPersistent
	}
	if f&wire.NX_NAT_F_PROTO_HASH != 0 {
		n.Flags |= flowtable.NATHash
	}
	if f&wire.NX_NAT_F_PROTO_RANDOM != 0 {
		n.Flags |= flowtable.NATRandom
	}
	r := a.RangePresent
	switch {
	case r&wire.NX_NAT_RANGE_IPV4_MIN != 0:
		n.AddrMin = netip.AddrFrom4(a.IPv4Min)
		if r&wire.NX_NAT_RANGE_IPV4_MAX != 0 {
			n.AddrMax = netip.AddrFrom4(a.IPv4Max)
		}
	case r&wire.NX_NAT_RANGE_IPV6_MIN != 0:
		n.AddrMin = netip.AddrFrom16(a.IPv6Min)
		if r&wire.NX_NAT_RANGE_IPV6_MAX != 0 {
			n.AddrMax = netip.AddrFrom16(a.IPv6Max)
		}
	}
	if r&wire.NX_NAT_RANGE_PROTO_MIN != 0 {
		n.PortMin = a.ProtoMin
		if r&wire.NX_NAT_RANGE_PROTO_MAX != 0 {
			n.PortMax = a.ProtoMax
		}
	}
	return n
}

func (t *fromWire) learn(a *wire.ActionLearn) (flowtable.Action, error) {
	l := &flowtable.Learn{
		Table: a.TableID, Priority: a.Priority, IdleTimeout: a.IdleTimeout, HardTimeout: a.HardTimeout,
		FinIdle: a.FinIdleTimeout, FinHard: a.FinHardTimeout, Cookie: a.Cookie,
	}
	if a.Flags&wire.NX_LEARN_F_SEND_FLOW_REM != 0 {
		l.Flags |= flowtable.LearnSendFlowRem
	}
	if a.Flags&wire.NX_LEARN_F_DELETE_LEARNED != 0 {
		l.Flags |= flowtable.LearnDeleteLearned
	}
	l.Specs = make([]flowtable.LearnSpec, len(a.Specs))
	for i := range a.Specs {
		ws := &a.Specs[i]
		s := &l.Specs[i]
		s.NBits = int(ws.NBits)
		switch ws.Dst {
		case wire.NX_LEARN_DST_MATCH:
			s.Kind = flowtable.LearnMatch
		case wire.NX_LEARN_DST_LOAD:
			s.Kind = flowtable.LearnLoad
		default:
			s.Kind = flowtable.LearnOutput
		}
		if ws.SrcImm {
			// The wire immediate is 2*ceil(n/16) bytes; the model keeps
			// ceil(n/8) low-order bytes.
			nb := (s.NBits + 7) / 8
			if nb > len(ws.Imm) {
				return nil, t.err(wire.OFPBAC_BAD_LEN, "learn spec %d: short immediate", i)
			}
			s.Imm = append([]byte(nil), ws.Imm[len(ws.Imm)-nb:]...)
		} else {
			r, err := t.fieldRange(ws.Src, int(ws.SrcOfs), s.NBits)
			if err != nil {
				return nil, fmt.Errorf("learn spec %d source: %w", i, err)
			}
			s.Src = r
		}
		if s.Kind != flowtable.LearnOutput {
			r, err := t.fieldRange(ws.DstRef, int(ws.DstOfs), s.NBits)
			if err != nil {
				return nil, fmt.Errorf("learn spec %d destination: %w", i, err)
			}
			s.Dst = r
			if s.Kind == flowtable.LearnLoad && !r.Field.Writable {
				return nil, t.err(wire.OFPBAC_BAD_SET_ARGUMENT, "learn spec %d: %s is read-only", i, r.Field.Name)
			}
			s.ImmText = ws.SrcImm && s.Kind == flowtable.LearnMatch && r.IsWhole()
		}
	}
	return l, nil
}
