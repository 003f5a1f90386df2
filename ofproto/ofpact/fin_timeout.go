package ofpact

// fin_timeout(idle_timeout=N,hard_timeout=N): shorten the flow's timeouts
// on TCP FIN/RST (NXAST_FIN_TIMEOUT).

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(parseFinTimeout, "fin_timeout")
	register(Def[*flowtable.FinTimeout]{
		Format: func(b *strings.Builder, a *flowtable.FinTimeout, o *ofptext.PrintOptions) {
			b.WriteString("fin_timeout(")
			sep := ""
			if a.IdleTimeout != 0 {
				fmt.Fprintf(b, "idle_timeout=%d", a.IdleTimeout)
				sep = ","
			}
			if a.HardTimeout != 0 {
				fmt.Fprintf(b, "%shard_timeout=%d", sep, a.HardTimeout)
			}
			b.WriteByte(')')
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.FinTimeout) ([]wire.Action, error) {
			return append(out, &wire.ActionFinTimeout{IdleTimeout: a.IdleTimeout, HardTimeout: a.HardTimeout}), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionFinTimeout) (flowtable.Action, error) {
		return &flowtable.FinTimeout{IdleTimeout: a.IdleTimeout, HardTimeout: a.HardTimeout}, nil
	})
}

func parseFinTimeout(p Parser, e ofptext.KV) (flowtable.Action, error) {
	ft := &flowtable.FinTimeout{}
	for x := range ofptext.Elements(e.Value, e.ValPos) {
		v, err := ofptext.ParseNum(x.Value, 16)
		if err != nil {
			return nil, ofptext.ErrAt(x.ValPos, x.Key, "%v", err)
		}
		switch x.Key {
		case "idle_timeout":
			ft.IdleTimeout = uint16(v)
		case "hard_timeout":
			ft.HardTimeout = uint16(v)
		default:
			return nil, ofptext.ErrAt(x.KeyPos, x.Key, "unknown fin_timeout argument")
		}
	}
	return ft, nil
}
