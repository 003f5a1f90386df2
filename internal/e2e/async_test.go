package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/internal/ovstest"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// asyncProp is one ofp_async_config_prop_reasons property.
func asyncProp(typ uint16, mask uint32) wire.Property {
	return wire.Property{Type: typ, Data: binary.BigEndian.AppendUint32(nil, mask)}
}

// TestAsyncConfigLikeOVS sends the same async-config requests to govs and
// to Open vSwitch over their management sockets: both keep the same
// configuration (the GET_ASYNC replies are the same bytes), and both
// refuse the same bad requests with the same error.
func TestAsyncConfigLikeOVS(t *testing.T) {
	n := startNode(t)
	n.mustRun("add-br", "br-int")
	o := ovstest.Start(t, ovstest.Options{})
	targets := []string{filepath.Join(n.rundir, "br-int.mgmt"), strings.TrimPrefix(o.Target(), "unix:")}
	steps := []struct {
		name    string
		version uint8
		set     []wire.Message // applied in order before GET_ASYNC (1.3 and 1.5)
	}{
		{"1.3 defaults", wire.OFP13, nil},
		{"1.5 defaults", wire.OFP15, nil},
		{"1.3 set-async", wire.OFP13, []wire.Message{&wire.AsyncConfig{
			PacketInMask: [2]uint32{0x5, 0x2}, PortStatusMask: [2]uint32{0x1, 0x6}, FlowRemovedMask: [2]uint32{0x3f, 0x8}}}},
		{"1.3 set-async with reasons 1.3 does not know", wire.OFP13, []wire.Message{&wire.AsyncConfig{
			PacketInMask: [2]uint32{0xff, 0xffffffff}, PortStatusMask: [2]uint32{0xff, 0}, FlowRemovedMask: [2]uint32{0xffff, 0}}}},
		{"1.3 NXT_SET_ASYNC_CONFIG", wire.OFP13, []wire.Message{&wire.AsyncConfig{NX: true,
			PacketInMask: [2]uint32{0x2, 0x1}, PortStatusMask: [2]uint32{0x4, 0x4}, FlowRemovedMask: [2]uint32{0x1, 0x2}}}},
		{"1.5 properties", wire.OFP15, []wire.Message{
			&wire.AsyncConfig{Props: []wire.Property{asyncProp(1, 0x3f), asyncProp(2, 0x1), asyncProp(7, 0x7)}},
			&wire.AsyncConfig{Props: []wire.Property{asyncProp(1, 0x4), asyncProp(8, 0x18)}}}},
		{"1.5 NXT_SET_ASYNC_CONFIG", wire.OFP15, []wire.Message{&wire.AsyncConfig{NX: true,
			PacketInMask: [2]uint32{0x3f, 0}, PortStatusMask: [2]uint32{0, 0x7}, FlowRemovedMask: [2]uint32{0x3f, 0}}}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			var replies [2][]byte
			for i, path := range targets {
				c, err := oftest.Dial(path, st.version)
				if err != nil {
					t.Fatal(err)
				}
				defer c.NC.Close()
				for j, m := range st.set {
					sendMsg(t, c, uint32(0x100+j), m)
				}
				sendMsg(t, c, 0x200, &wire.GetAsyncRequest{})
				for {
					h, body, err := c.Recv()
					if err != nil {
						t.Fatal(err)
					}
					if h.Type == wire.OFPT_ERROR {
						t.Fatalf("%s: error %x for xid %#x", path, body, h.Xid)
					}
					if h.Xid == 0x200 {
						replies[i] = body
						break
					}
				}
			}
			if !bytes.Equal(replies[0], replies[1]) {
				t.Errorf("GET_ASYNC replies differ:\ngovs %x\nOVS  %x", replies[0], replies[1])
			}
		})
	}

	bad := []struct {
		name  string
		props []wire.Property
	}{
		{"reason unknown to the version", []wire.Property{asyncProp(5, 1<<6)}},
		{"unknown property type", []wire.Property{asyncProp(12, 1)}},
		{"value of 8 bytes", []wire.Property{{Type: 1, Data: make([]byte, 8)}}},
		{"experimenter property", []wire.Property{{Type: 0xffff, Data: []byte{0, 0, 0x23, 0x20, 0, 0, 0, 1, 0, 0, 0, 0}}}},
		{"experimenter 0", []wire.Property{{Type: 0xfffe, Data: []byte{0, 0, 0, 0, 0, 0, 0, 1}}}},
		{"good then bad", []wire.Property{asyncProp(3, 0), asyncProp(5, 1<<7)}},
	}
	for _, b := range bad {
		t.Run("1.5 "+b.name, func(t *testing.T) {
			var got [2]string
			for i, path := range targets {
				c, err := oftest.Dial(path, wire.OFP15)
				if err != nil {
					t.Fatal(err)
				}
				defer c.NC.Close()
				sendMsg(t, c, 0x300, &wire.AsyncConfig{Props: b.props})
				typ, code, err := c.Error(0x300)
				if err != nil {
					t.Fatal(err)
				}
				got[i] = fmt.Sprintf("%d/%d", typ, code)
				if err := c.Alive(); err != nil {
					t.Errorf("%s: connection dead after the bad request: %v", path, err)
				}
			}
			if got[0] != got[1] {
				t.Errorf("govs answered %s, Open vSwitch %s", got[0], got[1])
			}
		})
	}
}

// sendMsg encodes m in the client's version and sends it with xid.
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

// TestNXFlowRemovedLikeOVS: an OpenFlow 1.0 connection in the NXM flow
// format that deletes a flow with send_flow_rem gets the same
// NXT_FLOW_REMOVED from govs and from Open vSwitch (durations aside).
func TestNXFlowRemovedLikeOVS(t *testing.T) {
	n := startNode(t)
	n.mustRun("add-br", "br-int")
	o := ovstest.Start(t, ovstest.Options{})
	targets := []string{filepath.Join(n.rundir, "br-int.mgmt"), strings.TrimPrefix(o.Target(), "unix:")}
	flowMod := func(flow string, command uint8) wire.Message {
		fm, err := flowtext.ParseFlow(flow, nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := translate.FlowModToWire(&translate.FlowMod{Flow: fm.Flow, Command: command, BufferID: wire.OFP_NO_BUFFER,
			OutPort: flowtable.PortNone, OutGroup: translate.GroupAny}, wire.OFP10, flowtable.NewTLVMap())
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	var got [2][]byte
	for i, path := range targets {
		c, err := oftest.Dial(path, wire.OFP10)
		if err != nil {
			t.Fatal(err)
		}
		defer c.NC.Close()
		// The management socket is a service connection: OVS sends it
		// asynchronous messages only once it sets a miss_send_len.
		sendMsg(t, c, 1, &wire.SwitchConfig{MissSendLen: 128})
		sendMsg(t, c, 2, &wire.NXSetFlowFormat{Format: wire.NXFF_NXM})
		sendMsg(t, c, 3, &wire.NXFlowModTableID{Set: 1})
		sendMsg(t, c, 4, flowMod("table=3,priority=7,idle_timeout=60,cookie=0x42,tcp,nw_src=10.0.0.1,tp_dst=80,send_flow_rem actions=drop", uint8(wire.OFPFC_ADD)))
		sendMsg(t, c, 5, flowMod("table=3,priority=7,tcp,nw_src=10.0.0.1,tp_dst=80 actions=drop", uint8(wire.OFPFC_DELETE_STRICT)))
		for got[i] == nil {
			h, body, err := c.Recv()
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if h.Type == wire.OFPT_ERROR {
				t.Fatalf("%s: error %x for xid %d", path, body, h.Xid)
			}
			if len(body) >= 48 && h.Type == wire.OFPT10_VENDOR && binary.BigEndian.Uint32(body[4:]) == wire.NXT_FLOW_REMOVED {
				clear(body[20:28]) // duration_sec, duration_nsec
				got[i] = body
			}
		}
	}
	if !bytes.Equal(got[0], got[1]) {
		t.Errorf("NXT_FLOW_REMOVED differs (durations zeroed):\ngovs %x\nOVS  %x", got[0], got[1])
	}
}
