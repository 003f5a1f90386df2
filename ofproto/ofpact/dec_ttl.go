package ofpact

// dec_ttl, dec_ttl(id,...): decrement the IP TTL (OFPAT_DEC_NW_TTL,
// NXAST_DEC_TTL in 1.0, NXAST_DEC_TTL_CNT_IDS).

import (
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(parseDecTTL, "dec_ttl")
	register(Def[*flowtable.DecTTL]{
		Format: func(b *strings.Builder, a *flowtable.DecTTL, o *ofptext.PrintOptions) {
			b.WriteString("dec_ttl")
			if len(a.IDs) > 0 {
				b.WriteByte('(')
				for i, id := range a.IDs {
					if i > 0 {
						b.WriteByte(',')
					}
					b.WriteString(strconv.Itoa(int(id)))
				}
				b.WriteByte(')')
			}
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.DecTTL) ([]wire.Action, error) {
			if len(a.IDs) == 0 {
				return append(out, &wire.ActionDecNwTTL{}), nil
			}
			return append(out, &wire.ActionDecTTLCntIDs{IDs: a.IDs}), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionDecNwTTL) (flowtable.Action, error) { return &flowtable.DecTTL{}, nil })
	fromWire(func(t Decoder, a *wire.ActionDecTTLCntIDs) (flowtable.Action, error) {
		ids := append([]uint16{}, a.IDs...)
		return &flowtable.DecTTL{IDs: ids}, nil
	})
}

func parseDecTTL(p Parser, e ofptext.KV) (flowtable.Action, error) {
	d := &flowtable.DecTTL{}
	if e.Delim == '(' {
		for _, x := range strings.Split(e.Value, ",") {
			id, err := ofptext.ParseNum(strings.TrimSpace(x), 16)
			if err != nil {
				return nil, wrap(e, err)
			}
			d.IDs = append(d.IDs, uint16(id))
		}
		if len(d.IDs) == 0 {
			return nil, bad(e, "dec_ttl_cnt_ids: expected at least one controller id")
		}
	}
	return d, nil
}
