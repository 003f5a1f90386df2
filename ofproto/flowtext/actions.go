package flowtext

import (
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpact"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// Actions live in ofproto/ofpact, one file per action; flowtext parses
// and prints them through its registry.

// parseActions parses an ovs-actions(7) list. base is the offset of s in
// the line, for error columns.
func parseActions(s string, base int, o *ParseOptions) ([]flowtable.Action, error) {
	return ofpact.Parser{Ports: o.Ports, TLV: o.TLV}.ParseActions(s, base)
}

// checkActions validates a flow's actions (ofpact.Validate, shared with
// the OpenFlow channel) and positions the error.
func checkActions(fl *flowtable.Flow, pos int) error {
	if err := ofpact.Validate(fl); err != nil {
		ve := err.(*flowtable.ValidationError)
		return ofptext.ErrAt(pos, ve.Field, "%s", ve.Msg)
	}
	return nil
}

// FormatActions prints an action list as OVS does (ofpacts_format).
func FormatActions(b *strings.Builder, acts []flowtable.Action, o *PrintOptions) {
	ofpact.FormatActions(b, acts, o)
}

// ActionsString returns FormatActions as a string.
func ActionsString(acts []flowtable.Action, o *PrintOptions) string {
	return ofpact.ActionsString(acts, o)
}
