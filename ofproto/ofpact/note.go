package ofpact

// note:xx.xx: an annotation with no effect (NXAST_NOTE).

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(parseNote, "note")
	register(Def[*flowtable.Note]{
		Format: func(b *strings.Builder, a *flowtable.Note, o *ofptext.PrintOptions) {
			b.WriteString("note:")
			for i, c := range a.Data {
				if i > 0 {
					b.WriteByte('.')
				}
				fmt.Fprintf(b, "%02x", c)
			}
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Note) ([]wire.Action, error) {
			return append(out, &wire.ActionNote{Note: a.Data}), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionNote) (flowtable.Action, error) {
		d := t.pool.byteSlice(len(a.Note))
		copy(d, a.Note)
		return &flowtable.Note{Data: d}, nil
	})
}

func parseNote(p Parser, e ofptext.KV) (flowtable.Action, error) {
	var data []byte
	for _, x := range strings.FieldsFunc(e.Value, func(r rune) bool { return r == '.' }) {
		for len(x) > 0 {
			n := min(2, len(x))
			b, err := strconv.ParseUint(x[:n], 16, 8)
			if err != nil {
				return nil, bad(e, "%q: invalid hex in note", e.Value)
			}
			data = append(data, byte(b))
			x = x[n:]
		}
	}
	return &flowtable.Note{Data: data}, nil
}
