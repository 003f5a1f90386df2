package ofpact

import (
	"fmt"
	"reflect"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/wire"
)

// ActionsFromWire translates an action list (OpenFlow 1.0 / NX flow-mod
// actions, an apply-actions or write-actions instruction, a group bucket,
// a packet-out) decoded in version into model actions.
func ActionsFromWire(version uint8, acts []wire.Action, tlv *flowtable.TLVMap) ([]flowtable.Action, error) {
	t := Decoder{version: version, tlv: tlv}
	return t.actions(acts)
}

// InstructionsFromWire translates OpenFlow 1.1+ instructions into one model
// action list. Like OVS (ofpacts_pull_openflow11_instructions) the result is
// in the canonical instruction order whatever the wire order: meter,
// apply-actions, clear-actions, write-actions, write-metadata, goto-table.
func InstructionsFromWire(version uint8, insts []wire.Instruction, tlv *flowtable.TLVMap) ([]flowtable.Action, error) {
	t := Decoder{version: version, tlv: tlv}
	return t.instructions(insts)
}

// Decoder turns wire actions decoded in one OpenFlow version into model
// actions, taking slices from its pool.
type Decoder struct {
	version uint8
	tlv     *flowtable.TLVMap
	pool    *Pool
}

func (t Decoder) err(sym wire.ErrorCode, format string, args ...any) error {
	return ofpfield.Err(t.version, sym, format, args...)
}

func (t Decoder) actions(acts []wire.Action) ([]flowtable.Action, error) {
	return t.appendActions(t.pool.actions(len(acts)), acts)
}

func (t Decoder) appendActions(out []flowtable.Action, acts []wire.Action) ([]flowtable.Action, error) {
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
func (t Decoder) fieldRange(ref wire.FieldRef, ofs, nBits int) (flowtable.FieldRange, error) {
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

func (t Decoder) action(a wire.Action) (flowtable.Action, error) {
	if decode := byWire[reflect.TypeOf(a)]; decode != nil {
		return decode(t, a)
	}
	if r, ok := a.(*wire.ActionRaw); ok {
		if decode := byRawCode[uint64(r.Vendor)<<16|uint64(r.Code)]; decode != nil {
			return decode(t, r)
		}
	}
	return nil, t.err(wire.OFPBAC_BAD_TYPE, "action %s is not supported by govs", a.Name(t.version))
}

// NewDecoder returns a decoder for version that takes its slices from
// pool while they last (nil: the heap). A Decoder is passed by value: the
// registry's functions would make a pointer to it escape.
func NewDecoder(version uint8, tlv *flowtable.TLVMap, pool *Pool) Decoder {
	return Decoder{version: version, tlv: tlv, pool: pool}
}

// Actions translates an action list.
func (t Decoder) Actions(acts []wire.Action) ([]flowtable.Action, error) { return t.actions(acts) }

// Instructions translates OpenFlow 1.1+ instructions (see
// InstructionsFromWire).
func (t Decoder) Instructions(insts []wire.Instruction) ([]flowtable.Action, error) {
	return t.instructions(insts)
}
