package translate

import (
	"fmt"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/wire"
)

// ActionsToWire encodes model actions as an OpenFlow action list for
// version (what goes in an OpenFlow 1.0 / NX flow-mod, an apply-actions
// instruction, a bucket or a packet-out), choosing the encoding OVS's
// encode_* functions choose. Instructions have no action form in 1.1+
// (use InstructionsToWire); in 1.0 goto_table travels as
// resubmit(,T) and write_metadata as NXAST_WRITE_METADATA like OVS does.
func ActionsToWire(version uint8, acts []flowtable.Action, tlv *flowtable.TLVMap) ([]wire.Action, error) {
	t := toWire{version: version, tlv: tlv}
	return t.appendActions(make([]wire.Action, 0, len(acts)), acts)
}

// InstructionsToWire encodes a model action list as OpenFlow 1.1+
// instructions: runs of plain actions become one apply-actions, and
// meter (1.3), clear_actions, write_actions, write_metadata and goto_table
// their own instruction, in the canonical order. An empty list (drop)
// gives no instruction at all, as OVS sends it.
func InstructionsToWire(version uint8, acts []flowtable.Action, tlv *flowtable.TLVMap) ([]wire.Instruction, error) {
	if version == wire.OFP10 {
		return nil, fmt.Errorf("OpenFlow 1.0 has no instructions")
	}
	t := toWire{version: version, tlv: tlv}
	var out []wire.Instruction
	var apply []wire.Action
	haveApply := false
	var err error
	for i, a := range acts {
		switch a := a.(type) {
		case *flowtable.Meter:
			if version >= wire.OFP15 {
				apply = append(apply, &wire.ActionMeter{MeterID: a.ID})
				haveApply = true
				continue
			}
			out = append(out, wire.Instruction{Type: wire.OFPIT_METER, MeterID: a.ID})
		case *flowtable.ClearActions:
			out = append(out, wire.Instruction{Type: wire.OFPIT_CLEAR_ACTIONS})
		case *flowtable.WriteActions:
			w, err := t.appendActions(nil, a.Actions)
			if err != nil {
				return nil, fmt.Errorf("write_actions: %w", err)
			}
			out = append(out, wire.Instruction{Type: wire.OFPIT_WRITE_ACTIONS, Actions: w})
		case *flowtable.WriteMetadata:
			out = append(out, wire.Instruction{Type: wire.OFPIT_WRITE_METADATA, Metadata: a.Value & a.Mask, MetadataMask: a.Mask})
		case *flowtable.GotoTable:
			out = append(out, wire.Instruction{Type: wire.OFPIT_GOTO_TABLE, TableID: a.Table})
		default:
			if apply, err = t.appendAction(apply, a); err != nil {
				return nil, fmt.Errorf("action %d (%s): %w", i, a.Name(), err)
			}
			haveApply = true
		}
	}
	if haveApply && len(apply) > 0 {
		out = append(out, wire.Instruction{Type: wire.OFPIT_APPLY_ACTIONS, Actions: apply})
	}
	// Canonical order (OVS ofpacts_verify insists on it on the way in).
	rank := func(typ uint16) int {
		for i, t := range instructionOrder {
			if t == typ {
				return i
			}
		}
		return len(instructionOrder)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && rank(out[j].Type) < rank(out[j-1].Type); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	for i := 1; i < len(out); i++ {
		if out[i].Type == out[i-1].Type {
			return nil, wire.NewError(version, wire.OFPBIC_DUP_INST)
		}
	}
	return out, nil
}

type toWire struct {
	version uint8
	tlv     *flowtable.TLVMap
}

func (t *toWire) appendActions(out []wire.Action, acts []flowtable.Action) ([]wire.Action, error) {
	var err error
	for i, a := range acts {
		if out, err = t.appendAction(out, a); err != nil {
			return nil, fmt.Errorf("action %d (%s): %w", i, a.Name(), err)
		}
	}
	return out, nil
}

// nxRef is the header OVS puts in NX actions' field slots
// (nxm_header_from_mff: the field's oldest code, NXM when it has one), with
// the mapped length for tun_metadataN.
func (t *toWire) nxRef(f *flowtable.Field) (wire.FieldRef, error) {
	return t.ref(f, 0)
}

// ref builds a field reference with the code OVS uses in version (0: the
// oldest code, as in NX actions).
func (t *toWire) ref(f *flowtable.Field, version uint8) (wire.FieldRef, error) {
	f, err := ofpfield.ResolveModel(t.version, f, t.tlv)
	if err != nil {
		return wire.FieldRef{}, err
	}
	w, err := ofpfield.WireField(t.version, f)
	if err != nil {
		return wire.FieldRef{}, err
	}
	n := 0
	if w.Variable {
		n = f.Bytes
	}
	c := w.CodeFor(version)
	if version == 0 {
		if c = w.NXMCode(); c == nil {
			c = w.CodeFor(t.version)
		}
	}
	return wire.FieldRef{Field: w, Header: wire.HeaderFor(w, c, t.version, false, n)}, nil
}

// matchField builds a set_field TLV for f from full-width value/mask
// (mask nil when it covers the whole field).
func (t *toWire) matchField(f *flowtable.Field, value, mask []byte) (wire.MatchField, error) {
	w, err := ofpfield.WireField(t.version, f)
	if err != nil {
		return wire.MatchField{}, err
	}
	if ofpfield.FullMask(f, mask) {
		mask = nil
	}
	return wire.MatchField{Field: w, Value: value, Mask: mask}, nil
}

func (t *toWire) appendAction(out []wire.Action, a flowtable.Action) ([]wire.Action, error) {
	v := t.version
	switch a := a.(type) {
	case *flowtable.Output:
		return append(out, &wire.ActionOutput{Port: ofpfield.PortToWire(v, a.Port), MaxLen: a.MaxLen}), nil
	case *flowtable.Controller:
		switch {
		case a.Short && a.Reason == 1 && a.ControllerID == 0 && len(a.UserData) == 0 && !a.Pause && a.MeterID == 0:
			// CONTROLLER:n is an output to the controller port.
			return append(out, &wire.ActionOutput{Port: ofpfield.PortToWire(v, flowtable.PortController), MaxLen: a.MaxLen}), nil
		case len(a.UserData) == 0 && !a.Pause && a.MeterID == 0:
			return append(out, &wire.ActionController{MaxLen: a.MaxLen, ControllerID: a.ControllerID, Reason: a.Reason}), nil
		}
		return append(out, controller2(a)), nil
	case *flowtable.OutputReg:
		ref, err := t.nxRef(a.Src.Field)
		if err != nil {
			return nil, err
		}
		return append(out, &wire.ActionOutputReg{Src: ref, Ofs: uint16(a.Src.Ofs), NBits: uint16(a.Src.NBits), MaxLen: a.MaxLen}), nil
	case *flowtable.Enqueue:
		if v == wire.OFP10 {
			return append(out, &wire.ActionEnqueue{Port: uint16(a.Port), QueueID: a.Queue}), nil
		}
		// encode_ENQUEUE for 1.1+: set_queue, output, pop_queue.
		return append(out, &wire.ActionSetQueue{QueueID: a.Queue},
			&wire.ActionOutput{Port: ofpfield.PortToOFP11(a.Port), MaxLen: 0xffff}, &wire.ActionPopQueue{}), nil
	case *flowtable.Resubmit:
		return append(out, &wire.ActionResubmit{InPort: uint16(a.InPort), Table: a.Table, WithCT: a.CT}), nil
	case *flowtable.GotoTable:
		if v != wire.OFP10 {
			return nil, fmt.Errorf("goto_table is an instruction in OpenFlow 1.1+")
		}
		return append(out, &wire.ActionResubmit{InPort: wire.OFPP10_IN_PORT, Table: a.Table, Subtype: wire.NXAST_RESUBMIT_TABLE}), nil
	case *flowtable.WriteMetadata:
		if v != wire.OFP10 {
			return nil, fmt.Errorf("write_metadata is an instruction in OpenFlow 1.1+")
		}
		return append(out, &wire.ActionWriteMetadata{Metadata: a.Value & a.Mask, Mask: a.Mask}), nil
	case *flowtable.ClearActions, *flowtable.WriteActions:
		return nil, fmt.Errorf("%s is an instruction, not encodable as an action in version %#x", a.Name(), v)
	case *flowtable.Meter:
		if v < wire.OFP15 {
			return nil, fmt.Errorf("meter is an instruction before OpenFlow 1.5")
		}
		return append(out, &wire.ActionMeter{MeterID: a.ID}), nil
	case *flowtable.SetField:
		return t.setField(out, a)
	case *flowtable.Move:
		src, err := t.ref(a.Src.Field, moveRefVersion(v))
		if err != nil {
			return nil, err
		}
		dst, err := t.ref(a.Dst.Field, moveRefVersion(v))
		if err != nil {
			return nil, err
		}
		return append(out, &wire.ActionMove{Src: src, Dst: dst, NBits: uint16(a.Src.NBits), SrcOfs: uint16(a.Src.Ofs), DstOfs: uint16(a.Dst.Ofs)}), nil
	case *flowtable.DecTTL:
		if len(a.IDs) == 0 {
			return append(out, &wire.ActionDecNwTTL{}), nil
		}
		return append(out, &wire.ActionDecTTLCntIDs{IDs: a.IDs}), nil
	case *flowtable.PushVLAN:
		if v == wire.OFP10 {
			// encode_PUSH_VLAN: OpenFlow 1.0 pushes as a side effect of
			// set_vlan_vid/pcp, so nothing is sent.
			return out, nil
		}
		return append(out, &wire.ActionPushVLAN{EthType: a.EthType}), nil
	case *flowtable.PopVLAN:
		return append(out, &wire.ActionPopVLAN{}), nil
	case *flowtable.CT:
		return t.ct(out, a)
	case *flowtable.CTClear:
		return append(out, &wire.ActionCTClear{}), nil
	case *flowtable.Conjunction:
		if a.Clause == 0 {
			return nil, fmt.Errorf("conjunction clause is 1-based")
		}
		return append(out, &wire.ActionConjunction{Clause: a.Clause - 1, NClauses: a.NClauses, ID: a.ID}), nil
	case *flowtable.Group:
		return append(out, &wire.ActionGroup{GroupID: a.ID}), nil
	case *flowtable.Note:
		return append(out, &wire.ActionNote{Note: a.Data}), nil
	case *flowtable.Exit:
		return append(out, &wire.ActionExit{}), nil
	case *flowtable.SetQueue:
		return append(out, &wire.ActionSetQueue{QueueID: a.ID}), nil
	case *flowtable.PopQueue:
		return append(out, &wire.ActionPopQueue{}), nil
	case *flowtable.FinTimeout:
		return append(out, &wire.ActionFinTimeout{IdleTimeout: a.IdleTimeout, HardTimeout: a.HardTimeout}), nil
	case *flowtable.Learn:
		l, err := t.learn(a)
		if err != nil {
			return nil, err
		}
		return append(out, l), nil
	}
	return nil, fmt.Errorf("action %s cannot be encoded", a.Name())
}

// moveRefVersion: NXAST_REG_MOVE carries NXM headers (version 0 = oldest
// code); OFPAT_COPY_FIELD in 1.5 the version's OXM headers.
func moveRefVersion(v uint8) uint8 {
	if v >= wire.OFP15 {
		return v
	}
	return 0
}

func controller2(a *flowtable.Controller) *wire.ActionController2 {
	var props []wire.Property
	if a.MaxLen != 0xffff {
		props = append(props, wire.Property{Type: wire.NXAC2PT_MAX_LEN, Data: []byte{byte(a.MaxLen >> 8), byte(a.MaxLen)}})
	}
	if a.ControllerID != 0 {
		props = append(props, wire.Property{Type: wire.NXAC2PT_CONTROLLER_ID, Data: []byte{byte(a.ControllerID >> 8), byte(a.ControllerID)}})
	}
	if a.Reason != 1 {
		props = append(props, wire.Property{Type: wire.NXAC2PT_REASON, Data: []byte{a.Reason}})
	}
	if len(a.UserData) > 0 {
		props = append(props, wire.Property{Type: wire.NXAC2PT_USERDATA, Data: a.UserData})
	}
	if a.Pause {
		props = append(props, wire.Property{Type: wire.NXAC2PT_PAUSE})
	}
	if a.MeterID != 0 {
		m := a.MeterID
		props = append(props, wire.Property{Type: wire.NXAC2PT_METER_ID, Data: []byte{byte(m >> 24), byte(m >> 16), byte(m >> 8), byte(m)}})
	}
	return &wire.ActionController2{Props: props}
}

// setField follows encode_SET_FIELD and the legacy encoders: 1.5 always
// OFPAT_SET_FIELD (masked when partial); before 1.5 a load stays
// NXAST_REG_LOAD; 1.0 uses the OpenFlow 1.0 actions where one exists;
// 1.3 uses OFPAT_SET_FIELD for whole fields and NXAST_REG_LOAD otherwise.
func (t *toWire) setField(out []wire.Action, a *flowtable.SetField) ([]wire.Action, error) {
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
func (t *toWire) regLoad(out []wire.Action, f *flowtable.Field, value, mask []byte) ([]wire.Action, error) {
	ref, err := t.nxRef(f)
	if err != nil {
		return nil, err
	}
	if ref.Field.NXMCode() == nil {
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
	n := 0
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
		n++
		ofs = end
	}
	if n == 0 {
		return nil, fmt.Errorf("load into %s with an empty mask", f.Name)
	}
	return out, nil
}

func (t *toWire) ct(out []wire.Action, a *flowtable.CT) ([]wire.Action, error) {
	ct := &wire.ActionCT{RecircTable: a.Table, Alg: a.Alg}
	if a.Commit {
		ct.Flags |= wire.NX_CT_F_COMMIT
	}
	if a.Force {
		ct.Flags |= wire.NX_CT_F_FORCE | wire.NX_CT_F_COMMIT
	}
	if a.ZoneSrc.Field != nil {
		ref, err := t.nxRef(a.ZoneSrc.Field)
		if err != nil {
			return nil, fmt.Errorf("ct zone: %w", err)
		}
		ct.ZoneSrc, ct.ZoneOfs, ct.ZoneNBits = ref, uint16(a.ZoneSrc.Ofs), uint16(a.ZoneSrc.NBits)
	} else {
		ct.ZoneImm = a.Zone
	}
	if a.NAT != nil {
		ct.Actions = append(ct.Actions, natToWire(a.NAT))
	}
	var err error
	if ct.Actions, err = t.appendActions(ct.Actions, a.Exec); err != nil {
		return nil, fmt.Errorf("ct exec: %w", err)
	}
	return append(out, ct), nil
}

func natToWire(n *flowtable.NAT) *wire.ActionNAT {
	a := &wire.ActionNAT{}
	if n.Flags&flowtable.NATSrc != 0 {
		a.Flags |= wire.NX_NAT_F_SRC
	}
	if n.Flags&flowtable.NATDst != 0 {
		a.Flags |= wire.NX_NAT_F_DST
	}
	if n.Flags&flowtable.NATPersistent != 0 {
		a.Flags |= wire.NX_NAT_F_PERSISTENT
	}
	if n.Flags&flowtable.NATHash != 0 {
		a.Flags |= wire.NX_NAT_F_PROTO_HASH
	}
	if n.Flags&flowtable.NATRandom != 0 {
		a.Flags |= wire.NX_NAT_F_PROTO_RANDOM
	}
	if n.AddrMin.IsValid() {
		hasMax := n.AddrMax.IsValid() && n.AddrMax != n.AddrMin
		if n.AddrMin.Is4() {
			a.RangePresent |= wire.NX_NAT_RANGE_IPV4_MIN
			a.IPv4Min = n.AddrMin.As4()
			if hasMax {
				a.RangePresent |= wire.NX_NAT_RANGE_IPV4_MAX
				a.IPv4Max = n.AddrMax.As4()
			}
		} else {
			a.RangePresent |= wire.NX_NAT_RANGE_IPV6_MIN
			a.IPv6Min = n.AddrMin.As16()
			if hasMax {
				a.RangePresent |= wire.NX_NAT_RANGE_IPV6_MAX
				a.IPv6Max = n.AddrMax.As16()
			}
		}
	}
	if n.PortMin != 0 {
		a.RangePresent |= wire.NX_NAT_RANGE_PROTO_MIN
		a.ProtoMin = n.PortMin
		if n.PortMax != 0 && n.PortMax != n.PortMin {
			a.RangePresent |= wire.NX_NAT_RANGE_PROTO_MAX
			a.ProtoMax = n.PortMax
		}
	}
	return a
}

func (t *toWire) learn(l *flowtable.Learn) (*wire.ActionLearn, error) {
	if l.Limit != 0 || l.Flags&flowtable.LearnWriteResult != 0 {
		return nil, fmt.Errorf("learn with limit or result_dst needs NXAST_LEARN2, which the wire codec does not model")
	}
	a := &wire.ActionLearn{IdleTimeout: l.IdleTimeout, HardTimeout: l.HardTimeout, Priority: l.Priority,
		Cookie: l.Cookie, TableID: l.Table, FinIdleTimeout: l.FinIdle, FinHardTimeout: l.FinHard}
	if l.Flags&flowtable.LearnSendFlowRem != 0 {
		a.Flags |= wire.NX_LEARN_F_SEND_FLOW_REM
	}
	if l.Flags&flowtable.LearnDeleteLearned != 0 {
		a.Flags |= wire.NX_LEARN_F_DELETE_LEARNED
	}
	a.Specs = make([]wire.LearnSpec, len(l.Specs))
	for i := range l.Specs {
		s := &l.Specs[i]
		ws := &a.Specs[i]
		ws.NBits = uint16(s.NBits)
		switch s.Kind {
		case flowtable.LearnMatch:
			ws.Dst = wire.NX_LEARN_DST_MATCH
		case flowtable.LearnLoad:
			ws.Dst = wire.NX_LEARN_DST_LOAD
		default:
			ws.Dst = wire.NX_LEARN_DST_OUTPUT
		}
		if s.Imm != nil {
			ws.SrcImm = true
			nb := 2 * ((s.NBits + 15) / 16)
			ws.Imm = make([]byte, nb)
			src := s.Imm
			if len(src) > nb {
				src = src[len(src)-nb:]
			}
			copy(ws.Imm[nb-len(src):], src)
		} else {
			ref, err := t.nxRef(s.Src.Field)
			if err != nil {
				return nil, fmt.Errorf("learn spec %d source: %w", i, err)
			}
			ws.Src, ws.SrcOfs = ref, uint16(s.Src.Ofs)
		}
		if s.Kind != flowtable.LearnOutput {
			ref, err := t.nxRef(s.Dst.Field)
			if err != nil {
				return nil, fmt.Errorf("learn spec %d destination: %w", i, err)
			}
			ws.DstRef, ws.DstOfs = ref, uint16(s.Dst.Ofs)
		}
	}
	return a, nil
}
