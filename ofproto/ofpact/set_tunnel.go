package ofpact

// set_tunnel:ID and set_tunnel64:ID set tun_id (ovs-actions(7)). They are
// a set_field of tun_id that remembers its keyword: OpenFlow 1.0 carries
// them as NXAST_SET_TUNNEL (an id that fits in 32 bits, unless written
// set_tunnel64) or NXAST_SET_TUNNEL64, and OVS prints them back so; from
// 1.2 on OVS sends set_field:ID->tun_id and prints that (encode_SET_TUNNEL,
// format_SET_TUNNEL in lib/ofp-actions.c). They execute as the set_field.
//
//	NXAST_SET_TUNNEL:   type, len=16, vendor, subtype=2, pad (2), tun_id (4)
//	NXAST_SET_TUNNEL64: type, len=24, vendor, subtype=9, pad (6), tun_id (8)

import (
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

// The keyword a set_tunnel was written with (flowtable.SetField.Raw).
const (
	rawSetTunnel = rawFormBase + iota
	rawSetTunnel64
)

func init() {
	keywords(parseSetTunnel, "set_tunnel", "set_tunnel64")
	for _, raw := range []flowtable.SetFieldRaw{rawSetTunnel, rawSetTunnel64} {
		registerSetFieldForm(raw, setFieldForm{format: formatSetTunnel, encode: encodeSetTunnel})
	}
	fromWire(func(t Decoder, a *wire.ActionSetTunnel) (flowtable.Action, error) {
		raw := rawSetTunnel
		if a.Is64 {
			raw = rawSetTunnel64
		}
		return t.setFieldUint(flowtable.FieldTunID, a.TunID, raw), nil
	})
}

func parseSetTunnel(p Parser, e ofptext.KV) (flowtable.Action, error) {
	id, err := num(e, 64)
	if err != nil {
		return nil, err
	}
	raw := rawSetTunnel
	if strings.ToLower(e.Key) == "set_tunnel64" {
		raw = rawSetTunnel64
	}
	f := flowtable.FieldTunID
	val, mask := make([]byte, f.Bytes), make([]byte, f.Bytes)
	ofpfield.PutU64(val, id)
	ofpfield.FillFieldMask(f, mask)
	return &flowtable.SetField{Field: f, Value: val, Mask: mask, Raw: raw}, nil
}

// is64 reports whether a travels and prints as set_tunnel64: so written,
// or an id wider than 32 bits.
func is64(a *flowtable.SetField) (uint64, bool) {
	id := ofpfield.BytesU64(a.Value)
	return id, a.Raw == rawSetTunnel64 || id > 0xffffffff
}

func formatSetTunnel(b *strings.Builder, a *flowtable.SetField, o *ofptext.PrintOptions) bool {
	if o.Ver() != ofptext.OF10 {
		return false
	}
	id, wide := is64(a)
	b.WriteString("set_tunnel")
	if wide {
		b.WriteString("64")
	}
	b.WriteByte(':')
	b.WriteString(ofptext.CHex(id))
	return true
}

func encodeSetTunnel(t Encoder, out []wire.Action, a *flowtable.SetField) ([]wire.Action, bool) {
	if t.version != wire.OFP10 {
		return out, false
	}
	id, wide := is64(a)
	return append(out, &wire.ActionSetTunnel{TunID: id, Is64: wide}), true
}
