package flowtext

import (
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// The lexical layer lives in ofproto/ofptext (shared with ofproto/ofpact);
// these names keep flowtext's API.
type (
	// Version is the OpenFlow version whose dump a printout imitates.
	Version = ofptext.Version
	// PrintOptions control printing.
	PrintOptions = ofptext.PrintOptions
	// Error is a flow text error with its position.
	Error = ofptext.Error
)

const (
	OF10 = ofptext.OF10
	OF13 = ofptext.OF13
	OF15 = ofptext.OF15
)

// ParseFieldValue parses "value[/mask]" for field f as ovs-ofctl does.
func ParseFieldValue(f *flowtable.Field, s string, ports map[string]uint32) (value, mask []byte, err error) {
	return ofptext.ParseFieldValue(f, s, ports)
}

// FieldValueString formats value[/mask] of f as OVS mf_format does.
func FieldValueString(f *flowtable.Field, value, mask []byte) string {
	return ofptext.FieldValueString(f, value, mask)
}

// SubfieldString prints NXM_NX_REG0[0..15] style subfields.
func SubfieldString(r flowtable.FieldRange) string { return ofptext.SubfieldString(r) }
