package ofpact

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
	t := Encoder{version: version, tlv: tlv}
	return t.appendActions(make([]wire.Action, 0, len(acts)), acts)
}

// Encoder turns model actions into wire actions for one OpenFlow version
// (and the TLV map, for tun_metadataN). It is passed by value: encoders
// run through the registry.
type Encoder struct {
	version uint8
	tlv     *flowtable.TLVMap
}

func (t Encoder) appendActions(out []wire.Action, acts []flowtable.Action) ([]wire.Action, error) {
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
func (t Encoder) nxRef(f *flowtable.Field) (wire.FieldRef, error) {
	return t.ref(f, 0)
}

// ref builds a field reference with the code OVS uses in version (0: the
// oldest code, as in NX actions).
func (t Encoder) ref(f *flowtable.Field, version uint8) (wire.FieldRef, error) {
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
func (t Encoder) matchField(f *flowtable.Field, value, mask []byte) (wire.MatchField, error) {
	w, err := ofpfield.WireField(t.version, f)
	if err != nil {
		return wire.MatchField{}, err
	}
	if ofpfield.FullMask(f, mask) {
		mask = nil
	}
	return wire.MatchField{Field: w, Value: value, Mask: mask}, nil
}

func (t Encoder) appendAction(out []wire.Action, a flowtable.Action) ([]wire.Action, error) {
	if e := lookup(a); e != nil && e.encode != nil {
		return e.encode(t, out, a)
	}
	return nil, fmt.Errorf("action %s cannot be encoded", a.Name())
}
