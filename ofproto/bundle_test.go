package ofproto_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// bundleClient drives bundles over an in-process OpenFlow 1.5 connection.
type bundleClient struct {
	t *testing.T
	c *oftest.Client
	p *flowtable.Pipeline
}

func newBundleClient(t *testing.T) *bundleClient {
	c, p := connect(t, wire.OFP15)
	return &bundleClient{t, c, p}
}

// flowMod encodes a flow in ovs-ofctl syntax as a 1.5 flow-mod with command.
func (bc *bundleClient) flowMod(flow string, command uint8) wire.Message {
	fm, err := flowtext.ParseFlow(flow, nil)
	if err != nil {
		bc.t.Fatal(err)
	}
	w, err := translate.FlowModToWire(&translate.FlowMod{Flow: fm.Flow, Command: uint8(wire.OFPFC_ADD),
		BufferID: wire.OFP_NO_BUFFER, OutPort: flowtable.PortNone, OutGroup: translate.GroupAny}, wire.OFP15, bc.p.TLV)
	if err != nil {
		bc.t.Fatal(err)
	}
	// Set the command after encoding, so that invalid ones reach the wire.
	w.Command = uint16(command)
	return w
}

func (bc *bundleClient) groupMod(group string) wire.Message {
	return bc.groupModCommand(group, wire.OFPGC_ADD)
}

func (bc *bundleClient) groupModCommand(group string, command uint16) wire.Message {
	g, err := flowtext.ParseGroup(group, nil)
	if err != nil {
		bc.t.Fatal(err)
	}
	w, err := translate.GroupModToWire(&translate.GroupMod{Command: command, Group: g}, wire.OFP15, bc.p.TLV)
	if err != nil {
		bc.t.Fatal(err)
	}
	return w
}

// add sends a bundle-add of m with xid and returns the inner message's bytes.
func (bc *bundleClient) add(xid uint32, m wire.Message) []byte {
	add := &wire.BundleAdd{BundleID: 1, Flags: wire.OFPBF_ATOMIC, InnerHeader: wire.Header{Version: wire.OFP15, Xid: xid}, Inner: m}
	body, err := add.EncodeBody(wire.OFP15, nil)
	if err != nil {
		bc.t.Fatal(err)
	}
	if err := bc.c.Send(wire.OFPT_BUNDLE_ADD_MESSAGE, xid, body); err != nil {
		bc.t.Fatal(err)
	}
	inner, err := wire.EncodeMessage(nil, wire.OFP15, xid, m)
	if err != nil {
		bc.t.Fatal(err)
	}
	return inner
}

func (bc *bundleClient) control(xid uint32, typ uint16) {
	body, err := (&wire.BundleControl{BundleID: 1, Type: typ, Flags: wire.OFPBF_ATOMIC}).EncodeBody(wire.OFP15, nil)
	if err != nil {
		bc.t.Fatal(err)
	}
	if err := bc.c.Send(wire.OFPT_BUNDLE_CONTROL, xid, body); err != nil {
		bc.t.Fatal(err)
	}
}

// recv returns the next message and its decoded body.
func (bc *bundleClient) recv() (wire.Header, wire.Message) {
	h, body, err := bc.c.Recv()
	if err != nil {
		bc.t.Fatal(err)
	}
	m, err := wire.DecodeMessage(h, body)
	if err != nil {
		bc.t.Fatal(err)
	}
	return h, m
}

// TestBundleCommitInOrder: flow-mods and a group-mod in one bundle are
// applied in their order, so a flow may use a group added before it.
func TestBundleCommitInOrder(t *testing.T) {
	bc := newBundleClient(t)
	bc.add(10, bc.flowMod("table=1,priority=5,ip actions=drop", uint8(wire.OFPFC_ADD)))
	bc.add(11, bc.groupMod("group_id=7,type=all,bucket=output:1"))
	bc.add(12, bc.flowMod("table=1,priority=6,ip actions=group:7", uint8(wire.OFPFC_ADD)))
	bc.add(13, bc.flowMod("table=1,priority=5,ip actions=output:2", uint8(wire.OFPFC_MODIFY_STRICT)))
	bc.control(14, wire.OFPBCT_COMMIT_REQUEST)
	h, m := bc.recv()
	if bcm, ok := m.(*wire.BundleControl); !ok || h.Xid != 14 || bcm.Type != wire.OFPBCT_COMMIT_REPLY {
		t.Fatalf("got %T %+v xid %d, want the commit reply", m, m, h.Xid)
	}
	got := strings.Join(flowtext.DumpFlows(bc.p, nil), "\n")
	want := " table=1, priority=5,ip actions=output:2\n table=1, priority=6,ip actions=group:7"
	if got != want {
		t.Errorf("flows after the commit:\n%s\nwant\n%s", got, want)
	}
}

// TestBundleAddsKeepOwnActions: the connection translates every add in
// one scratch flow-mod, whose inline memory holds action lists and
// set-field bytes (also those inside clone and ct's exec); each staged
// rule must keep actions of its own, not the next add's.
func TestBundleAddsKeepOwnActions(t *testing.T) {
	bc := newBundleClient(t)
	var want []string
	for i := 1; i <= 4; i++ {
		flow := fmt.Sprintf("table=2, priority=%d,ip actions=set_field:0x%x->reg1,clone(set_field:10.0.0.%d->ip_dst,output:%d),"+
			"ct(commit,zone=%d,exec(set_field:0x%x->ct_mark)),note:%02x.00.00.00.00.00,output:%d", i, i, i, i, i, i, i, i)
		bc.add(uint32(20+i), bc.flowMod(flow, uint8(wire.OFPFC_ADD)))
		want = append(want, " "+flow)
	}
	bc.control(30, wire.OFPBCT_COMMIT_REQUEST)
	if h, m := bc.recv(); h.Xid != 30 {
		t.Fatalf("got %T %+v xid %d, want the commit reply", m, m, h.Xid)
	}
	got := flowtext.DumpFlows(bc.p, nil)
	slices.Sort(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("flows after the commit:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestBundleCommitFailure: a bundled flow-mod the switch refuses fails the
// commit, after an error for that message (its xid, its bytes quoted) and
// before OFPBFC_MSG_FAILED for the commit; nothing of the bundle is
// applied. A refusal found by the translation (a bad command) and one
// found by the pipeline (a missing group) are both reported at commit.
func TestBundleCommitFailure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bad       string // the refused flow
		command   uint8
		typ, code uint16
	}{
		{"bad command", "table=2,priority=9,ip actions=drop", 7, 5, 6},                             // OFPFMFC_BAD_COMMAND
		{"missing group", "table=2,priority=9,ip actions=group:4242", uint8(wire.OFPFC_ADD), 2, 9}, // OFPBAC_BAD_OUT_GROUP
	} {
		t.Run(tc.name, func(t *testing.T) {
			bc := newBundleClient(t)
			bad := bc.flowMod(tc.bad, tc.command)
			bc.add(20, bc.flowMod("table=2,priority=1,ip actions=drop", uint8(wire.OFPFC_ADD)))
			inner := bc.add(21, bad)
			bc.add(22, bc.flowMod("table=2,priority=3,ip actions=drop", uint8(wire.OFPFC_ADD)))
			// Adding is silent: errors wait for the commit.
			bc.control(23, wire.OFPBCT_COMMIT_REQUEST)
			h, m := bc.recv()
			em, ok := m.(*wire.ErrorMsg)
			if !ok || h.Xid != 21 || em.Type != tc.typ || em.Code != tc.code {
				t.Fatalf("got %T %+v xid %d, want error %d/%d for xid 21", m, m, h.Xid, tc.typ, tc.code)
			}
			if !bytes.Equal(em.Data, inner) {
				t.Errorf("error quotes %x, want the whole bundled message %x", em.Data, inner)
			}
			h, m = bc.recv()
			em, ok = m.(*wire.ErrorMsg)
			if !ok || h.Xid != 23 || em.Type != 17 || em.Code != 13 { // OFPBFC_MSG_FAILED
				t.Fatalf("got %T %+v xid %d, want OFPBFC_MSG_FAILED for the commit", m, m, h.Xid)
			}
			if n := bc.p.NumFlows(); n != 0 {
				t.Errorf("failed bundle left %d flows", n)
			}
			if err := bc.c.Alive(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestBundleGroupModsAtomic: group-mods are part of the atomic batch. A
// bundle whose last message fails leaves no group it added and no flow,
// and a bundle that deleted a group (with the flows using it) before
// failing leaves both in place.
func TestBundleGroupModsAtomic(t *testing.T) {
	for _, tc := range []struct {
		name      string
		setup     func(bc *bundleClient)
		msgs      func(bc *bundleClient) []wire.Message
		typ, code uint16 // the failing (last) message's error
		flows     int    // flows left
		groups    []uint32
	}{
		{
			name: "duplicate group after a group and a flow using it",
			msgs: func(bc *bundleClient) []wire.Message {
				return []wire.Message{
					bc.groupMod("group_id=7,type=all,bucket=output:1"),
					bc.flowMod("table=1,priority=6,ip actions=group:7", uint8(wire.OFPFC_ADD)),
					bc.groupMod("group_id=7,type=all,bucket=output:2"),
				}
			},
			typ: 6, code: 0, // OFPGMFC_GROUP_EXISTS
		},
		{
			name: "flow using a group deleted earlier in the bundle",
			setup: func(bc *bundleClient) {
				g, err := flowtext.ParseGroup("group_id=5,type=all,bucket=output:1", nil)
				if err != nil {
					bc.t.Fatal(err)
				}
				if err := bc.p.AddGroup(g); err != nil {
					bc.t.Fatal(err)
				}
				if err := flowtext.Load(bc.p, "table=3,priority=1,ip actions=group:5", nil); err != nil {
					bc.t.Fatal(err)
				}
			},
			msgs: func(bc *bundleClient) []wire.Message {
				return []wire.Message{
					bc.groupModCommand("group_id=5,type=all", wire.OFPGC_DELETE),
					bc.flowMod("table=1,priority=6,ip actions=group:5", uint8(wire.OFPFC_ADD)),
				}
			},
			typ: 2, code: 9, // OFPBAC_BAD_OUT_GROUP
			flows: 1, groups: []uint32{5},
		},
		{
			name: "modify of a missing group",
			msgs: func(bc *bundleClient) []wire.Message {
				return []wire.Message{
					bc.flowMod("table=1,priority=6,ip actions=drop", uint8(wire.OFPFC_ADD)),
					bc.groupModCommand("group_id=9,type=all,bucket=output:1", wire.OFPGC_MODIFY),
				}
			},
			typ: 6, code: 8, // OFPGMFC_UNKNOWN_GROUP
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bc := newBundleClient(t)
			if tc.setup != nil {
				tc.setup(bc)
			}
			msgs := tc.msgs(bc)
			var last []byte
			for i, m := range msgs {
				last = bc.add(uint32(30+i), m)
			}
			lastXid := uint32(30 + len(msgs) - 1)
			bc.control(99, wire.OFPBCT_COMMIT_REQUEST)
			h, m := bc.recv()
			em, ok := m.(*wire.ErrorMsg)
			if !ok || h.Xid != lastXid || em.Type != tc.typ || em.Code != tc.code {
				t.Fatalf("got %T %+v xid %d, want error %d/%d for xid %d", m, m, h.Xid, tc.typ, tc.code, lastXid)
			}
			if !bytes.Equal(em.Data, last[:min(len(last), wire.ErrorDataLen)]) {
				t.Errorf("error quotes %x, want the failing message", em.Data)
			}
			h, m = bc.recv()
			if em, ok := m.(*wire.ErrorMsg); !ok || h.Xid != 99 || em.Type != 17 || em.Code != 13 {
				t.Fatalf("got %T %+v xid %d, want OFPBFC_MSG_FAILED for the commit", m, m, h.Xid)
			}
			if n := bc.p.NumFlows(); n != tc.flows {
				t.Errorf("%d flows after the failed commit, want %d", n, tc.flows)
			}
			var ids []uint32
			for _, g := range bc.p.Groups() {
				ids = append(ids, g.ID)
			}
			if !slices.Equal(ids, tc.groups) {
				t.Errorf("groups %v after the failed commit, want %v", ids, tc.groups)
			}
		})
	}
}
