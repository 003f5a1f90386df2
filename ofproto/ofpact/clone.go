package ofpact

// clone(ACTIONS): run the nested actions on a copy of the packet; the
// original continues with the actions after clone (NXAST_CLONE, in every
// OpenFlow version). ofproto/wire only checks its type and length
// (wire.ActionRaw); its body is read and written here:
//
//	type, len, vendor, subtype=42 (10 bytes), 6 bytes of zero padding,
//	then the nested actions.

import (
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

const cloneHeaderLen = 16

func init() {
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		inner, err := p.ParseActions(e.Value, e.ValPos)
		if err != nil {
			return nil, err
		}
		return &flowtable.Clone{Actions: inner}, nil
	}, "clone")
	register(Def[*flowtable.Clone]{
		Format: func(b *strings.Builder, a *flowtable.Clone, o *ofptext.PrintOptions) {
			b.WriteString("clone(")
			FormatActions(b, a.Actions, o)
			b.WriteByte(')')
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Clone) ([]wire.Action, error) {
			inner, err := t.appendActions(nil, a.Actions)
			if err != nil {
				return nil, err
			}
			body, err := wire.AppendActions(nil, t.version, inner)
			if err != nil {
				return nil, err
			}
			b := wire.AppendNXHeader(make([]byte, 0, cloneHeaderLen+len(body)), wire.NXAST_CLONE, cloneHeaderLen+len(body))
			b = append(b, make([]byte, cloneHeaderLen-len(b))...)
			b = append(b, body...)
			return append(out, &wire.ActionRaw{Vendor: wire.NX_VENDOR_ID, Code: wire.NXAST_CLONE, Data: b}), nil
		},
		Check: func(c Checker, a *flowtable.Clone) error { return c.checkAll(a.Actions) },
	})
	fromRaw(wire.NX_VENDOR_ID, wire.NXAST_CLONE, func(t Decoder, a *wire.ActionRaw) (flowtable.Action, error) {
		if len(a.Data) < cloneHeaderLen {
			return nil, t.err(wire.OFPBAC_BAD_LEN, "clone: %d bytes", len(a.Data))
		}
		for _, c := range a.Data[10:cloneHeaderLen] {
			if c != 0 {
				return nil, t.err(wire.NXBRC_MUST_BE_ZERO, "clone: nonzero padding")
			}
		}
		acts, err := wire.DecodeActions(t.version, a.Data[cloneHeaderLen:])
		if err != nil {
			return nil, err
		}
		inner, err := t.actions(acts)
		if err != nil {
			return nil, err
		}
		return &flowtable.Clone{Actions: inner}, nil
	})
}
