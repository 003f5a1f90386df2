package ofproto_test

import (
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/wire"
)

// TestPacketIn2OVSPrint has Open vSwitch's own parser (ovs-ofctl
// ofp-print) decode the NXT_PACKET_IN2 govs sends a controller that asked
// for that format (ovn-controller's pinctrl): OVS's decoder takes 64-bit
// properties (the cookie) only with their 4 bytes of alignment padding
// and rejects the whole packet-in otherwise (OFPBPC_BAD_LEN).
func TestPacketIn2OVSPrint(t *testing.T) {
	ofctl, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		t.Fatalf("ovs-ofctl is required (apt-get install openvswitch-common): %v", err)
	}
	p := flowtable.NewPipeline()
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	c := connectTo(t, b, wire.OFP15)
	body, err := (&wire.NXSetPacketInFormat{Format: wire.NXPIF_NXT_PACKET_IN2}).EncodeBody(wire.OFP15, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Send(wire.OFPT_EXPERIMENTER, 1, body)
	c.Send(wire.OFPT_BARRIER_REQUEST, 2, nil)
	if h, _, err := c.Recv(); err != nil || h.Type != wire.OFPT_BARRIER_REPLY {
		t.Fatalf("barrier: type %d, %v", h.Type, err)
	}
	frame := make([]byte, 60)
	var key flowtable.Key
	go b.PacketIn(frame, 1, &flowtable.PacketIn{Reason: flowtable.ReasonAction, MaxLen: 0xffff, Table: 46,
		Cookie: 0x2a4bb670, UserData: []byte{0, 0, 0, 7, 0, 0, 0, 0, 0, 6, 'w', 'e', 'b', '8', '3'}}, &key)
	h, got, err := c.Recv()
	if err != nil {
		t.Fatal(err)
	}
	msg := append(h.Append(nil), got...)
	out, err := exec.Command(ofctl, "ofp-print", hex.EncodeToString(msg)).CombinedOutput()
	text := string(out)
	if err != nil || strings.Contains(text, "decode error") || strings.Contains(text, "OFPBPC_") {
		t.Fatalf("ovs-ofctl ofp-print: %v\n%s", err, text)
	}
	for _, want := range []string{"NXT_PACKET_IN2", "cookie=0x2a4bb670", "table_id=46", "userdata=00.00.00.07.00.00.00.00.00.06.77.65.62.38.33"} {
		if !strings.Contains(text, want) {
			t.Errorf("ofp-print lacks %q:\n%s", want, text)
		}
	}
}
