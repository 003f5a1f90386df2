package ofproto

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/wire"
)

type streamDP struct{ p *flowtable.Pipeline }

func (f *streamDP) Name() string                                       { return "br-stream" }
func (f *streamDP) DatapathID() uint64                                 { return 1 }
func (f *streamDP) Pipeline() *flowtable.Pipeline                      { return f.p }
func (f *streamDP) Ports() []PortInfo                                  { return nil }
func (f *streamDP) SetPortConfig(no, config, mask uint32) error        { return nil }
func (f *streamDP) PacketOut([]byte, uint32, []flowtable.Action) error { return nil }

// TestDumpStreams (issue 15.7): a dump-flows reply is produced as the peer
// reads it. With a peer that reads nothing, the switch's backlog stays
// at the streaming bound plus a part, although the whole reply is many
// times that; once the peer reads, every flow arrives.
func TestDumpStreams(t *testing.T) {
	const nFlows = 20000
	const bound = 256 << 10
	p := flowtable.NewPipeline()
	var sb strings.Builder
	for i := range nFlows {
		fmt.Fprintf(&sb, "table=%d,priority=%d,ip,nw_src=10.%d.%d.%d actions=load:%#x->NXM_NX_REG1[],resubmit(,%d)\n",
			i%2, 100+i%50, i/65536, i/256%256, i%256, i, 10+i%2)
	}
	if err := flowtext.Load(p, sb.String(), nil); err != nil {
		t.Fatal(err)
	}
	b := NewBridge(&streamDP{p}, nil)
	dir := t.TempDir()
	ln, err := net.Listen("unix", dir+"/mgmt")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srvc := make(chan *Conn, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		c := NewConn(nc, b, ConnOptions{DumpBacklogBytes: bound})
		srvc <- c
		c.Serve(ctx)
	}()
	cli, err := oftest.Dial(dir+"/mgmt", wire.OFP13)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.NC.Close()
	srv := <-srvc
	// OFPMP_FLOW request: all tables, out_port/group any, empty match.
	req := []byte{0, 1, 0, 0, 0, 0, 0, 0, 0xff, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	req = append(req, make([]byte, 16)...)
	req = append(req, 0, 1, 0, 4, 0, 0, 0, 0)
	if err := cli.Send(wire.OFPT_MULTIPART_REQUEST, 0x500, req); err != nil {
		t.Fatal(err)
	}
	// Wait for the dump to start, then watch the backlog a while.
	maxBacklog := 0
	for end := time.Now().Add(10 * time.Second); maxBacklog == 0 && time.Now().Before(end); time.Sleep(time.Millisecond) {
		maxBacklog, _ = srv.Backlog()
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		n, _ := srv.Backlog()
		maxBacklog = max(maxBacklog, n)
	}
	if maxBacklog == 0 || maxBacklog > bound+2*wire.MaxMessageLen {
		t.Fatalf("backlog reached %d bytes with a streaming bound of %d", maxBacklog, bound)
	}
	flows, total := 0, 0
	for {
		h, body, err := cli.Recv()
		if err != nil {
			t.Fatalf("after %d flows: %v", flows, err)
		}
		if h.Type != wire.OFPT_MULTIPART_REPLY || h.Xid != 0x500 {
			t.Fatalf("message type %d xid %#x", h.Type, h.Xid)
		}
		total += int(h.Length)
		for rest := body[8:]; len(rest) >= 2; {
			n := int(binary.BigEndian.Uint16(rest))
			if n == 0 || n > len(rest) {
				t.Fatalf("bad flow stats length %d", n)
			}
			flows++
			rest = rest[n:]
		}
		if binary.BigEndian.Uint16(body[2:])&wire.OFPMPF_REPLY_MORE == 0 {
			break
		}
	}
	if flows != nFlows {
		t.Fatalf("dumped %d flows, want %d", flows, nFlows)
	}
	if total < 4*bound {
		t.Fatalf("the dump is only %d bytes: too small to show streaming", total)
	}
	t.Logf("dump of %d bytes, backlog at most %d", total, maxBacklog)
}
