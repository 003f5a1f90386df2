package ofpact

// The instructions: goto_table, write_metadata, clear_actions,
// write_actions and meter (OFPIT_*). They are actions of the model's
// single list, as in OVS's ofpacts; in OpenFlow 1.0 goto_table and
// write_metadata travel as NX actions, in 1.5 meter is OFPAT_METER.

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		t, err := table(e, e.Value)
		if err != nil {
			return nil, err
		}
		return &flowtable.GotoTable{Table: t}, nil
	}, "goto_table")
	keywords(parseWriteMetadata, "write_metadata")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) { return &flowtable.ClearActions{}, nil }, "clear_actions")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		inner, err := p.ParseActions(e.Value, e.ValPos)
		if err != nil {
			return nil, err
		}
		return &flowtable.WriteActions{Actions: inner}, nil
	}, "write_actions")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		id, err := num(e, 32)
		if err != nil {
			return nil, err
		}
		return &flowtable.Meter{ID: uint32(id)}, nil
	}, "meter")

	register(Def[*flowtable.GotoTable]{
		Rank: RankGoto,
		Format: func(b *strings.Builder, a *flowtable.GotoTable, o *ofptext.PrintOptions) {
			if o.Ver() == ofptext.OF10 {
				// OpenFlow 1.0 has no instructions: ovs-ofctl sends resubmit(,T).
				fmt.Fprintf(b, "resubmit(,%d)", a.Table)
				return
			}
			fmt.Fprintf(b, "goto_table:%d", a.Table)
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.GotoTable) ([]wire.Action, error) {
			if t.version != wire.OFP10 {
				return nil, fmt.Errorf("goto_table is an instruction in OpenFlow 1.1+")
			}
			return append(out, &wire.ActionResubmit{InPort: wire.OFPP10_IN_PORT, Table: a.Table, Subtype: wire.NXAST_RESUBMIT_TABLE}), nil
		},
		Check: func(c Checker, a *flowtable.GotoTable) error {
			if a.Table <= c.Flow.Table {
				return invalid(flowtable.BadGotoTable, "goto_table", "goto_table:%d must go to a later table than %d", a.Table, c.Flow.Table)
			}
			return nil
		},
	})
	register(Def[*flowtable.WriteMetadata]{
		Rank: RankWriteMetadata,
		Format: func(b *strings.Builder, a *flowtable.WriteMetadata, o *ofptext.PrintOptions) {
			fmt.Fprintf(b, "write_metadata:%s", ofptext.CHex(a.Value))
			if a.Mask != ^uint64(0) {
				fmt.Fprintf(b, "/%s", ofptext.CHex(a.Mask))
			}
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.WriteMetadata) ([]wire.Action, error) {
			if t.version != wire.OFP10 {
				return nil, fmt.Errorf("write_metadata is an instruction in OpenFlow 1.1+")
			}
			return append(out, &wire.ActionWriteMetadata{Metadata: a.Value & a.Mask, Mask: a.Mask}), nil
		},
	})
	register(Def[*flowtable.ClearActions]{
		Rank: RankClear,
		Format: func(b *strings.Builder, a *flowtable.ClearActions, o *ofptext.PrintOptions) {
			b.WriteString("clear_actions")
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.ClearActions) ([]wire.Action, error) {
			return nil, fmt.Errorf("%s is an instruction, not encodable as an action in version %#x", a.Name(), t.version)
		},
	})
	register(Def[*flowtable.WriteActions]{
		Rank: RankWrite,
		Format: func(b *strings.Builder, a *flowtable.WriteActions, o *ofptext.PrintOptions) {
			b.WriteString("write_actions(")
			FormatActions(b, a.Actions, o)
			b.WriteByte(')')
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.WriteActions) ([]wire.Action, error) {
			return nil, fmt.Errorf("%s is an instruction, not encodable as an action in version %#x", a.Name(), t.version)
		},
		Check: func(c Checker, a *flowtable.WriteActions) error { return c.checkAll(a.Actions) },
	})
	register(Def[*flowtable.Meter]{
		Rank: RankMeter,
		Format: func(b *strings.Builder, a *flowtable.Meter, o *ofptext.PrintOptions) {
			fmt.Fprintf(b, "meter:%d", a.ID)
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Meter) ([]wire.Action, error) {
			if t.version < wire.OFP15 {
				return nil, fmt.Errorf("meter is an instruction before OpenFlow 1.5")
			}
			return append(out, &wire.ActionMeter{MeterID: a.ID}), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionWriteMetadata) (flowtable.Action, error) {
		return &flowtable.WriteMetadata{Value: a.Metadata & a.Mask, Mask: a.Mask}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionMeter) (flowtable.Action, error) {
		return &flowtable.Meter{ID: a.MeterID}, nil
	})
}

func parseWriteMetadata(p Parser, e ofptext.KV) (flowtable.Action, error) {
	vs, ms, hasMask := strings.Cut(e.Value, "/")
	v, err := ofptext.ParseNum(vs, 64)
	if err != nil {
		return nil, wrap(e, err)
	}
	m := ^uint64(0)
	if hasMask {
		if m, err = ofptext.ParseNum(ms, 64); err != nil {
			return nil, wrap(e, err)
		}
	}
	return &flowtable.WriteMetadata{Value: v & m, Mask: m}, nil
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
	t := Encoder{version: version, tlv: tlv}
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

// instructionOrder is the canonical order of instruction types.
var instructionOrder = [...]uint16{wire.OFPIT_METER, wire.OFPIT_APPLY_ACTIONS, wire.OFPIT_CLEAR_ACTIONS,
	wire.OFPIT_WRITE_ACTIONS, wire.OFPIT_WRITE_METADATA, wire.OFPIT_GOTO_TABLE}

func (t Decoder) instructions(insts []wire.Instruction) ([]flowtable.Action, error) {
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
