package ofproto_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/wire"
)

// BenchmarkDump100k answers a flow stats request (dump-flows) for 100,000
// flows over an in-memory connection (OpenFlow 1.3), reading every reply.
func BenchmarkDump100k(b *testing.B) {
	c, p := connectB(b, wire.OFP13)
	var sb strings.Builder
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&sb, "table=%d,priority=%d,ip,nw_src=10.%d.%d.%d actions=load:%#x->NXM_NX_REG1[],goto_table:%d\n",
			i%3, 100+i%50, i/65536, i/256%256, i%256, i, 10+i%3)
	}
	if err := flowtext.Load(p, sb.String(), nil); err != nil {
		b.Fatal(err)
	}
	// OFPMP_FLOW request: table all, out_port/group any, empty match.
	req := []byte{0, 1, 0, 0, 0, 0, 0, 0, 0xff, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	req = append(req, make([]byte, 16)...)    // cookie, cookie mask
	req = append(req, 0, 1, 0, 4, 0, 0, 0, 0) // empty OXM match
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Send(wire.OFPT_MULTIPART_REQUEST, 0x500, req); err != nil {
			b.Fatal(err)
		}
		for {
			h, body, err := c.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if h.Type != wire.OFPT_MULTIPART_REPLY {
				b.Fatalf("type %d", h.Type)
			}
			if binary.BigEndian.Uint16(body[2:])&1 == 0 {
				break
			}
		}
	}
}
