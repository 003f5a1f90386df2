package ofpact

// exit: stop the pipeline (NXAST_EXIT).

import (
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) { return &flowtable.Exit{}, nil }, "exit")
	register(Def[*flowtable.Exit]{
		Format: func(b *strings.Builder, a *flowtable.Exit, o *ofptext.PrintOptions) { b.WriteString("exit") },
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Exit) ([]wire.Action, error) {
			return append(out, &wire.ActionExit{}), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionExit) (flowtable.Action, error) { return &flowtable.Exit{}, nil })
}
