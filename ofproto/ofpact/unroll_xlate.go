package ofpact

// unroll_xlate: the table and cookie a continuation's frozen actions
// restore (OVS OFPACT_UNROLL_XLATE). It is never in a flow and never on
// the wire as an action; ovs-ofctl prints it inside continuation.actions.

import (
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
)

func init() {
	register(Def[*flowtable.UnrollXlate]{
		Format: func(b *strings.Builder, a *flowtable.UnrollXlate, o *ofptext.PrintOptions) {
			b.WriteString("unroll_xlate(table=")
			b.WriteString(strconv.Itoa(int(a.Table)))
			b.WriteString(", cookie=")
			b.WriteString(strconv.FormatUint(a.Cookie, 10))
			b.WriteByte(')')
		},
	})
}
