package ofproto_test

import (
	"net"
	"testing"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/wire"
)

// TestFailOpen (issue 15.5): a standalone bridge whose controller went
// away switches as NORMAL once three probe intervals passed without one,
// above the controller's flows (here a drop-all), and hands back to the
// flows when a controller connects again, as OVS's fail-open does.
func TestFailOpen(t *testing.T) {
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, "priority=65535 actions=drop", nil); err != nil {
		t.Fatal(err)
	}
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	const probe = 200 * time.Millisecond
	ctx := t.Context()
	go b.RunFailOpen(ctx, probe)

	k, err := flowtext.ParsePacket("in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2", nil)
	if err != nil {
		t.Fatal(err)
	}
	frame := flowtable.BuildFrame(&k, 0)
	switched := func() bool {
		var pkt flowtable.Packet
		pkt.Key = k
		if err := pkt.Extract(frame); err != nil {
			t.Fatal(err)
		}
		var tr flowtable.Trace
		p.Run(&pkt, &countSink{}, &tr)
		for _, e := range tr.Events {
			if e.Kind == flowtable.TraceLookup {
				return false // went through table 0's flows
			}
		}
		return true
	}

	connectCtl := func() (closeIt func()) {
		srv, cli := net.Pipe()
		c := serveConnOpts(t, b, wire.OFP13, srv, cli, ofproto.ConnOptions{}) // a controller, not a service connection
		if err := c.Alive(); err != nil {
			t.Fatal(err)
		}
		return func() { cli.Close() }
	}
	closeCtl := connectCtl()
	time.Sleep(5 * probe)
	if switched() {
		t.Fatal("fail-open with a controller connected")
	}
	closeCtl()
	start := time.Now()
	waitFor(t, "fail-open", switched)
	if d := time.Since(start); d < probe { // 3 intervals nominally; a busy machine delays the ticks
		t.Errorf("fail-open after %v, before three probe intervals", d)
	}
	connectCtl()
	waitFor(t, "the flows back in charge", func() bool { return !switched() })
}

type countSink struct{ outputs, packetIns int }

func (s *countSink) Output(uint32, *flowtable.Packet)                { s.outputs++ }
func (s *countSink) PacketIn(*flowtable.Packet, *flowtable.PacketIn) { s.packetIns++ }
