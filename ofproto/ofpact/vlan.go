package ofpact

// push_vlan, pop_vlan / strip_vlan (OFPAT_PUSH_VLAN, OFPAT_POP_VLAN,
// OFPAT10_STRIP_VLAN).

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		v, err := ofptext.ParseNum(e.Value, 16)
		if err != nil || (v != flowtable.EthTypeVLAN && v != flowtable.EthTypeQinQ) {
			return nil, bad(e, "%q: push_vlan takes 0x8100 or 0x88a8", e.Value)
		}
		return &flowtable.PushVLAN{EthType: uint16(v)}, nil
	}, "push_vlan")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) { return &flowtable.PopVLAN{}, nil }, "pop_vlan")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) { return &flowtable.PopVLAN{Strip: true}, nil }, "strip_vlan")
	register(Def[*flowtable.PushVLAN]{
		Format: func(b *strings.Builder, a *flowtable.PushVLAN, o *ofptext.PrintOptions) {
			fmt.Fprintf(b, "push_vlan:%#x", a.EthType)
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.PushVLAN) ([]wire.Action, error) {
			if t.version == wire.OFP10 {
				// encode_PUSH_VLAN: OpenFlow 1.0 pushes as a side effect of
				// set_vlan_vid/pcp, so nothing is sent.
				return out, nil
			}
			return append(out, &wire.ActionPushVLAN{EthType: a.EthType}), nil
		},
	})
	register(Def[*flowtable.PopVLAN]{
		Format: func(b *strings.Builder, a *flowtable.PopVLAN, o *ofptext.PrintOptions) {
			if a.Strip || o.Ver() == ofptext.OF10 {
				b.WriteString("strip_vlan")
			} else {
				b.WriteString("pop_vlan")
			}
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.PopVLAN) ([]wire.Action, error) {
			return append(out, &wire.ActionPopVLAN{}), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionPopVLAN) (flowtable.Action, error) {
		return &flowtable.PopVLAN{Strip: t.version == wire.OFP10}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionPushVLAN) (flowtable.Action, error) {
		if a.EthType != flowtable.EthTypeVLAN && a.EthType != flowtable.EthTypeQinQ {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "push_vlan ethertype %#x", a.EthType)
		}
		return &flowtable.PushVLAN{EthType: a.EthType}, nil
	})
}
