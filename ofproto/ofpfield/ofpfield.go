// Package ofpfield links the flow model's fields and port numbers to their
// OpenFlow wire forms (ofproto/wire): the field registries matched by
// ovs-fields(7) name, tun_metadataN resolution through the TLV map, port
// numbering per version, and the OVS error a translation fails with.
//
// It sits below ofproto/translate (matches, flow-mods, groups) and
// ofproto/ofpact (actions), which both translate fields.
package ofpfield

import (
	"fmt"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/wire"
)

// Err builds the OVS error sym for version with a detail message.
func Err(version uint8, sym wire.ErrorCode, format string, args ...any) *wire.OFPError {
	e := wire.NewError(version, sym)
	e.Detail = fmt.Sprintf(format, args...)
	return e
}

// The two field registries use the same ovs-fields(7) names; these tables
// link them once at start-up. wireToModel is indexed by wire FieldInfo
// index; tun_metadataN entries point at the unresolved model field (the TLV
// map gives the location).
var (
	wireToModel  []*flowtable.Field
	modelToWire  = map[*flowtable.Field]*wire.FieldInfo{}
	tunMDWire    [64]*wire.FieldInfo
	WireInPort   = wire.FieldByName("in_port")
	WireInPortOX = wire.FieldByName("in_port_oxm")
	WireActset   = wire.FieldByName("actset_output")
	WireNwTos    = wire.FieldByName("nw_tos")
)

func init() {
	wireToModel = make([]*flowtable.Field, wire.NumFields())
	for i := range wireToModel {
		w := wire.FieldAt(i)
		f := flowtable.FieldByName(w.Name)
		if f == nil || f.Name != w.Name {
			continue
		}
		wireToModel[i] = f
		modelToWire[f] = w
		if f.IsTunMetadata() {
			tunMDWire[f.TunMetadata-1] = w
		}
	}
	for _, n := range []string{"in_port", "in_port_oxm", "actset_output", "nw_tos"} {
		if wire.FieldByName(n) == nil || flowtable.FieldByName(n) == nil {
			panic("translate: field " + n + " missing from a registry")
		}
	}
}

// ModelField returns the model field for a wire field, resolving
// tun_metadataN through the TLV map. Unknown fields are OFPBMC_BAD_FIELD
// (in matches) or OFPBAC_BAD_SET_TYPE (in actions), as OVS answers for
// fields it does not know; an unmapped tun_metadataN is
// NXFMFC_INVALID_TLV_FIELD (mf_vl_mff_invalid in OVS).
func ModelField(version uint8, w *wire.FieldInfo, tlv *flowtable.TLVMap, inAction bool) (*flowtable.Field, error) {
	var f *flowtable.Field
	if w != nil && w.Index() >= 0 && w.Index() < len(wireToModel) {
		f = wireToModel[w.Index()]
	}
	if f == nil {
		name := "<nil>"
		if w != nil {
			name = w.Name
		}
		if inAction {
			return nil, Err(version, wire.OFPBAC_BAD_SET_TYPE, "field %s is not supported", name)
		}
		return nil, Err(version, wire.OFPBMC_BAD_FIELD, "field %s is not supported", name)
	}
	if f.IsTunMetadata() {
		r, err := tlv.Resolve(f)
		if err != nil {
			return nil, Err(version, wire.NXFMFC_INVALID_TLV_FIELD, "%v", err)
		}
		return r, nil
	}
	return f, nil
}

// WireField returns the wire field of a model field (resolved tun_metadata
// copies included).
func WireField(version uint8, f *flowtable.Field) (*wire.FieldInfo, error) {
	if f == nil {
		return nil, fmt.Errorf("missing field")
	}
	if f.IsTunMetadata() {
		if w := tunMDWire[f.TunMetadata-1]; w != nil {
			return w, nil
		}
	} else if w := modelToWire[f]; w != nil {
		return w, nil
	}
	return nil, fmt.Errorf("field %s has no OpenFlow encoding", f.Name)
}

// ResolveModel resolves tun_metadataN through the TLV map for encoding; an
// unmapped one cannot be encoded with a length.
func ResolveModel(version uint8, f *flowtable.Field, tlv *flowtable.TLVMap) (*flowtable.Field, error) {
	if f == nil || !f.IsTunMetadata() || f.Resolved() {
		return f, nil
	}
	r, err := tlv.Resolve(f)
	if err != nil {
		return nil, Err(version, wire.NXFMFC_INVALID_TLV_FIELD, "%v", err)
	}
	return r, nil
}

// PortFromOFP11 converts an OpenFlow 1.1+ port number to the model's 16-bit
// numbering (ofputil_port_from_ofp11): ports below 0xff00 are unchanged,
// the reserved 0xffffff00.. range maps to 0xff00..; anything else cannot
// be represented.
func PortFromOFP11(p uint32) (uint32, bool) {
	switch {
	case p < flowtable.PortMax:
		return p, true
	case p >= wire.OFPP_MAX:
		return p - 0xffff0000, true
	}
	return 0, false
}

// PortToOFP11 converts a model port number to OpenFlow 1.1+
// (ofputil_port_to_ofp11).
func PortToOFP11(p uint32) uint32 {
	if p < flowtable.PortMax {
		return p
	}
	return p + 0xffff0000
}

// PortFromWire converts a port as it travels in version to the model.
func PortFromWire(version uint8, p uint32) (uint32, bool) {
	if version == wire.OFP10 {
		return p & 0xffff, p <= 0xffff
	}
	return PortFromOFP11(p)
}

// PortToWire converts a model port to version's numbering.
func PortToWire(version uint8, p uint32) uint32 {
	if version == wire.OFP10 {
		return p
	}
	return PortToOFP11(p)
}

// BytesU64 reads a big-endian value of up to 8 bytes.
func BytesU64(b []byte) uint64 {
	var x uint64
	for _, c := range b {
		x = x<<8 | uint64(c)
	}
	return x
}

// PutU64 writes v big-endian into b (all of b).
func PutU64(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// LowMask is a mask of the n low bits.
func LowMask(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(n) - 1
}

// Ones is an all-ones mask source for wide fields (no allocation).
var Ones [flowtable.TunMetadataSize]byte

func init() {
	for i := range Ones {
		Ones[i] = 0xff
	}
}

// FillFieldMask writes the mask of all of f's bits (what the flow text
// parser uses for an unmasked set_field).
func FillFieldMask(f *flowtable.Field, mk []byte) {
	if f.Wide() {
		copy(mk, Ones[:len(mk)])
		return
	}
	PutU64(mk, LowMask(f.Bits))
}

// full reports whether mask covers every bit of f.
func FullMask(f *flowtable.Field, mask []byte) bool {
	if mask == nil {
		return true
	}
	if !f.Wide() {
		return BytesU64(mask)&LowMask(f.Bits) == LowMask(f.Bits)
	}
	for _, c := range mask {
		if c != 0xff {
			return false
		}
	}
	return true
}
