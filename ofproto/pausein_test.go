package ofproto_test

import (
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/wire"
)

// TestPausedPacketInFormats: a paused packet-in reaches a controller that
// asked for NXT_PACKET_IN2 with its continuation and userdata, and one in
// the standard format as a plain OFPT_PACKET_IN (OVS encodes the
// continuation only in NXT_PACKET_IN2).
func TestPausedPacketInFormats(t *testing.T) {
	p := flowtable.NewPipeline()
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	std := connectTo(t, b, wire.OFP13)
	nx2 := connectTo(t, b, wire.OFP15)
	for _, c := range []*oftest.Client{std, nx2} {
		sendMsg(t, c, 1, &wire.SwitchConfig{MissSendLen: 0xffff})
	}
	sendMsg(t, nx2, 2, &wire.NXSetPacketInFormat{Format: wire.NXPIF_NXT_PACKET_IN2})
	sendMsg(t, nx2, 3, &wire.BarrierRequest{})
	waitXid(t, nx2, 3)
	sendMsg(t, std, 3, &wire.BarrierRequest{})
	waitXid(t, std, 3)
	cont := &flowtable.Continuation{Actions: []flowtable.Action{&flowtable.Output{Port: 2}}, Stack: [][]byte{{0, 0, 0, 1}}}
	b.PacketIn(make([]byte, 60), 1, &flowtable.PacketIn{Reason: 1, MaxLen: 0xffff, Pause: true, Cookie: 5,
		UserData: []byte{1, 2}, Continuation: cont}, &flowtable.Key{})

	m := recvMsg(t, std)
	if pi, ok := m.(*wire.PacketIn); !ok || pi.Cookie != 5 || len(pi.Data) != 60 {
		t.Errorf("standard-format controller got %T %+v, want an OFPT_PACKET_IN", m, m)
	}
	m = recvMsg(t, nx2)
	pi2, ok := m.(*wire.NXPacketIn2)
	if !ok {
		t.Fatalf("NXT_PACKET_IN2 controller got %T", m)
	}
	var types []uint16
	for _, p := range pi2.Props {
		types = append(types, p.Type)
	}
	want := []uint16{wire.NXPINT_PACKET, wire.NXPINT_TABLE_ID, wire.NXPINT_COOKIE, wire.NXPINT_REASON,
		wire.NXPINT_METADATA, wire.NXPINT_CONTINUATION, wire.NXPINT_USERDATA}
	if len(types) != len(want) {
		t.Fatalf("properties %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("properties %v, want %v", types, want)
		}
	}
}

func waitXid(t *testing.T, c *oftest.Client, xid uint32) {
	t.Helper()
	for {
		h, _, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if h.Type == wire.OFPT_ERROR {
			t.Fatalf("error for xid %d", h.Xid)
		}
		if h.Xid == xid {
			return
		}
	}
}

func recvMsg(t *testing.T, c *oftest.Client) wire.Message {
	t.Helper()
	h, body, err := c.Recv()
	if err != nil {
		t.Fatal(err)
	}
	m, err := wire.DecodeMessage(h, body)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sendMsg(t *testing.T, c *oftest.Client, xid uint32, m wire.Message) {
	t.Helper()
	b, err := wire.EncodeMessage(nil, c.Version, xid, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(b[1], xid, b[wire.HeaderLen:]); err != nil {
		t.Fatal(err)
	}
}
