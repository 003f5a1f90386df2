package ofproto_test

import (
	"encoding/binary"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/wire"
)

// watch sends an OpenFlow 1.5 flow monitor request (all flows, the given
// flags) and returns the body of its reply.
func watch(t *testing.T, c *oftest.Client, flags uint16) []byte {
	t.Helper()
	body := []byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, byte(flags >> 8), byte(flags), 0xff, 0, 0, 1, 0, 4, 0, 0, 0, 0}
	if err := c.Send(wire.OFPT_MULTIPART_REQUEST, 0x60, append([]byte{0, 16, 0, 0, 0, 0, 0, 0}, body...)); err != nil {
		t.Fatal(err)
	}
	for {
		h, b, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if h.Xid == 0x60 {
			if h.Type != wire.OFPT_MULTIPART_REPLY {
				t.Fatalf("monitor request: message type %d %x", h.Type, b)
			}
			return b[8:]
		}
	}
}

// nextUpdate reads the next unsolicited flow monitor reply and returns
// its first update's event and, for an abbreviated one, the xid.
func nextUpdate(t *testing.T, c *oftest.Client) (event uint16, xid uint32) {
	t.Helper()
	for {
		h, b, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if h.Type == wire.OFPT_MULTIPART_REPLY && h.Xid == 0 && binary.BigEndian.Uint16(b) == wire.OFPMP_FLOW_MONITOR {
			u := b[8:]
			return binary.BigEndian.Uint16(u[2:]), binary.BigEndian.Uint32(u[4:])
		}
	}
}

// TestFlowMonitorOwnChanges: a monitor sees another connection's change
// in full and its own connection's change abbreviated to the request's
// xid (OFPFME_ABBREV), unless it asked for its own changes, as OVS does.
func TestFlowMonitorOwnChanges(t *testing.T) {
	p := flowtable.NewPipeline()
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	self := connectTo(t, b, wire.OFP15)
	other := connectTo(t, b, wire.OFP15)
	own := connectTo(t, b, wire.OFP15)
	const flags = 0x1f // initial, add, removed, modify, instructions
	if body := watch(t, self, flags); len(body) != 0 {
		t.Fatalf("initial updates of an empty table: %x", body)
	}
	watch(t, other, flags)
	watch(t, own, flags|0x40) // ONLY_OWN: "own" in ovs-ofctl's terms

	if err := self.Send(wire.OFPT_FLOW_MOD, 0x77, oftest.FlowMod13(nil, oftest.Output13(1))); err != nil {
		t.Fatal(err)
	}
	if ev, xid := nextUpdate(t, self); ev != 4 || xid != 0x77 { // OFPFME_ABBREV
		t.Errorf("own change: event %d xid %#x, want abbreviated with xid 0x77", ev, xid)
	}
	if ev, _ := nextUpdate(t, other); ev != 1 { // OFPFME_ADDED
		t.Errorf("other connection's monitor: event %d, want ADDED", ev)
	}
	if ev, _ := nextUpdate(t, own); ev != 1 {
		t.Errorf("monitor with own changes: event %d, want ADDED", ev)
	}
	// A new monitor gets the flow as an initial update.
	if body := watch(t, other, flags); len(body) < 8 || binary.BigEndian.Uint16(body[2:]) != 0 {
		t.Errorf("initial update: %x", body)
	}
}

// TestFlowMonitorPauseResume: a monitoring connection that does not read
// while flows change is paused once its backlog passes 128 KB
// (OFPFME_PAUSED), gets nothing more, and once it has read everything
// gets the flows added meanwhile and OFPFME_RESUMED: every flow is
// reported exactly once, as with OVS's flow control.
func TestFlowMonitorPauseResume(t *testing.T) {
	p := flowtable.NewPipeline()
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	go b.Run(t.Context()) // resumes paused monitors
	srv, cli := unixPair(t)
	mon := serveConnOpts(t, b, wire.OFP15, srv, cli, ofproto.ConnOptions{})
	watch(t, mon, 0x1f)
	other := connectTo(t, b, wire.OFP15)
	const n = 6000
	for i := range n {
		oxm := binary.BigEndian.AppendUint32([]byte{0x80, 0, 0, 4}, uint32(i+1)) // in_port=i+1
		if err := other.Send(wire.OFPT_FLOW_MOD, uint32(i), oftest.FlowMod13(oxm, oftest.Output13(1))); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Alive(); err != nil {
		t.Fatal(err)
	}
	added, paused, resumed := 0, false, false
	for !resumed {
		h, body, err := mon.Recv()
		if err != nil {
			t.Fatalf("after %d adds (paused %v): %v", added, paused, err)
		}
		if h.Type != wire.OFPT_MULTIPART_REPLY {
			continue
		}
		for u := body[8:]; len(u) >= 8; u = u[binary.BigEndian.Uint16(u):] {
			switch ev := binary.BigEndian.Uint16(u[2:]); ev {
			case 1:
				added++
			case 5:
				if paused {
					t.Fatal("paused twice")
				}
				paused = true
			case 6:
				resumed = true
			default:
				t.Fatalf("event %d", ev)
			}
		}
	}
	if !paused || added != n || p.NumFlows() != n {
		t.Fatalf("paused %v, %d flows reported added of %d (%d in the table)", paused, added, n, p.NumFlows())
	}
}
