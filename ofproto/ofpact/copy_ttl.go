package ofpact

// copy_ttl_out, copy_ttl_in: copy the TTL from the IP header under the top
// MPLS label to the label, or back (OFPAT_COPY_TTL_OUT/IN, OpenFlow 1.1+
// only; Open vSwitch does not implement them, so it has no text for them
// either: these names follow the OpenFlow action names).

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) { return &flowtable.CopyTTL{}, nil }, "copy_ttl_out")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) { return &flowtable.CopyTTL{In: true}, nil }, "copy_ttl_in")
	register(Def[*flowtable.CopyTTL]{
		Format: func(b *strings.Builder, a *flowtable.CopyTTL, o *ofptext.PrintOptions) {
			if a.In {
				b.WriteString("copy_ttl_in")
			} else {
				b.WriteString("copy_ttl_out")
			}
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.CopyTTL) ([]wire.Action, error) {
			if t.version == wire.OFP10 {
				return nil, fmt.Errorf("%s has no OpenFlow 1.0 encoding", a.Name())
			}
			return append(out, &wire.ActionCopyTTL{In: a.In}), nil
		},
		Check: func(c Checker, a *flowtable.CopyTTL) error { return c.needMPLS("copy_ttl") },
	})
	fromWire(func(t Decoder, a *wire.ActionCopyTTL) (flowtable.Action, error) {
		return &flowtable.CopyTTL{In: a.In}, nil
	})
}
