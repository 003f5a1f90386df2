package ofpact

// group:N: send the packet to a group (OFPAT_GROUP; NXAST_GROUP in 1.0).

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		id, err := num(e, 32)
		if err != nil {
			return nil, err
		}
		return &flowtable.Group{ID: uint32(id)}, nil
	}, "group")
	register(Def[*flowtable.Group]{
		Format: func(b *strings.Builder, a *flowtable.Group, o *ofptext.PrintOptions) {
			fmt.Fprintf(b, "group:%d", a.ID)
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Group) ([]wire.Action, error) {
			return append(out, &wire.ActionGroup{GroupID: a.ID}), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionGroup) (flowtable.Action, error) {
		return &flowtable.Group{ID: a.GroupID}, nil
	})
}
