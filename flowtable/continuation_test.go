package flowtable_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/ofpact"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// pauseSink keeps outputs and packet-ins, with the key each packet-in had.
type pauseSink struct {
	out []captured
	pis []pausedIn
}

type pausedIn struct {
	pi  flowtable.PacketIn
	key flowtable.Key
}

func (s *pauseSink) Output(port uint32, pkt *flowtable.Packet) {
	s.out = append(s.out, captured{port, slices.Clone(pkt.Frame)})
}

func (s *pauseSink) PacketIn(pkt *flowtable.Packet, pi *flowtable.PacketIn) {
	s.pis = append(s.pis, pausedIn{*pi, pkt.Key})
}

func contActions(acts []flowtable.Action) string {
	return ofpact.ActionsString(acts, &ofptext.PrintOptions{Version: 4})
}

func outPorts(out []captured) []uint32 {
	var ps []uint32
	for _, o := range out {
		ps = append(ps, o.port)
	}
	return ps
}

// runSpec runs the packet spec describes through p.
func runSpec(t *testing.T, p *flowtable.Pipeline, spec string) ([]byte, *pauseSink) {
	t.Helper()
	k, frame := packetSpec(t, p, spec)
	var pkt flowtable.Packet
	pkt.Key = k
	if err := pkt.Extract(slices.Clone(frame)); err != nil {
		t.Fatal(err)
	}
	sink := &pauseSink{}
	p.Run(&pkt, sink, nil)
	return frame, sink
}

// resume runs a paused packet-in's continuation on the packet it carried,
// with its metadata, as NXT_RESUME does.
func resume(t *testing.T, p *flowtable.Pipeline, frame []byte, pin pausedIn) *pauseSink {
	t.Helper()
	var pkt flowtable.Packet
	pkt.Key = pin.key
	if err := pkt.Extract(slices.Clone(frame)); err != nil {
		t.Fatal(err)
	}
	sink := &pauseSink{}
	p.Resume(&pkt, pin.pi.Continuation, sink, nil)
	return sink
}

// TestPauseResume follows OVS 3.1 on the same flows (what
// `ovs-ofctl monitor br0 resume` printed for them): the continuation
// holds what every level had left, with unroll_xlate before the actions
// that report table and cookie, the action set and the stack; the
// packet-in says table 0 and the first flow's cookie; resuming outputs
// what the walk had left and the action set.
func TestPauseResume(t *testing.T) {
	p := loadSeed(t, `
table=0 in_port=1 cookie=0x7 actions=set_field:1->reg1,push:NXM_NX_REG1[],write_actions(output:3),goto_table:1
table=1 cookie=0x9 actions=set_field:5->reg2,controller(pause,userdata=01.02),set_field:6->reg3,resubmit(,2),output:2
table=2 cookie=0x22 actions=goto_table:3
table=3 actions=pop:NXM_NX_REG4[],controller
`)
	frame, sink := runSpec(t, p, "in_port=1,icmp,nw_src=192.168.0.1,nw_dst=192.168.0.2")
	if len(sink.out) != 0 || len(sink.pis) != 1 {
		t.Fatalf("outputs %v, packet-ins %d: want only the paused packet-in", outPorts(sink.out), len(sink.pis))
	}
	pin := sink.pis[0]
	c := pin.pi.Continuation
	if c == nil || !pin.pi.Pause || pin.pi.Table != 0 || pin.pi.Cookie != 0x7 || string(pin.pi.UserData) != "\x01\x02" {
		t.Fatalf("packet-in %+v: want a paused one, table 0, cookie 0x7, userdata 01.02", pin.pi)
	}
	if got, want := contActions(c.Actions), "set_field:0x6->reg3,resubmit(,2),unroll_xlate(table=1, cookie=9),output:2"; got != want {
		t.Errorf("frozen actions\n got %s\nwant %s", got, want)
	}
	if got := contActions(c.ActionSet); got != "output:3" {
		t.Errorf("action set %s, want output:3", got)
	}
	if len(c.Stack) != 1 || string(c.Stack[0]) != "\x00\x00\x00\x01" || c.Conntracked {
		t.Errorf("stack %x conntracked %v, want [00000001] false", c.Stack, c.Conntracked)
	}
	if r1, r2 := flowtable.FieldReg[1].Uint64(&pin.key), flowtable.FieldReg[2].Uint64(&pin.key); r1 != 1 || r2 != 5 {
		t.Errorf("paused with reg1=%d reg2=%d, want 1 and 5", r1, r2)
	}

	res := resume(t, p, frame, pin)
	if got := outPorts(res.out); !slices.Equal(got, []uint32{2, 3}) {
		t.Errorf("resumed outputs %v, want [2 3] (output:2, then the action set)", got)
	}
	if len(res.pis) != 1 {
		t.Fatalf("resumed packet-ins %d, want table 3's", len(res.pis))
	}
	pi, key := res.pis[0].pi, res.pis[0].key
	if pi.Table != 3 || pi.Cookie != 0 || pi.Continuation != nil {
		t.Errorf("table 3 packet-in %+v", pi)
	}
	if r3, r4 := flowtable.FieldReg[3].Uint64(&key), flowtable.FieldReg[4].Uint64(&key); r3 != 6 || r4 != 1 {
		t.Errorf("reg3=%d reg4=%d after resume, want 6 and the popped 1", r3, r4)
	}
}

// TestPauseResumeChain pauses several times in nested resubmits (OVS's
// "continuation - resubmit" case): resuming every pause in turn outputs
// each port once, in order, whatever table each pause was in, and the
// relative resubmit keeps its table.
func TestPauseResumeChain(t *testing.T) {
	flows := `
table=0 in_port=1 actions=pause,2,pause,resubmit(,1),pause,10,pause
table=1 in_port=1 actions=pause,3,pause,resubmit(,2),pause,9,pause
table=2 in_port=1 actions=pause,4,pause,resubmit(,3),pause,8,pause
table=3 in_port=1 actions=pause,5,pause,resubmit:55,pause,7,pause
table=3 in_port=55 actions=pause,6,pause
`
	flows = strings.ReplaceAll(flows, "pause", "controller(pause)")
	p := loadSeed(t, flows)
	frame, sink := runSpec(t, p, "in_port=1,icmp,nw_src=192.168.0.1,nw_dst=192.168.0.2")
	var out []uint32
	pauses := 0
	for len(sink.pis) > 0 {
		if len(sink.pis) != 1 || sink.pis[0].pi.Continuation == nil {
			t.Fatalf("after %d pauses: %d packet-ins, want one paused", pauses, len(sink.pis))
		}
		out = append(out, outPorts(sink.out)...)
		pauses++
		if pauses > 40 {
			t.Fatal("pauses do not end")
		}
		sink = resume(t, p, frame, sink.pis[0])
	}
	out = append(out, outPorts(sink.out)...)
	if want := []uint32{2, 3, 4, 5, 6, 7, 8, 9, 10}; !slices.Equal(out, want) {
		t.Errorf("outputs %v, want %v", out, want)
	}
	if pauses != 18 {
		t.Errorf("%d pauses, want 18 (one per controller(pause))", pauses)
	}
}

// TestPauseInGroupAndClone: a pause in a group bucket freezes only the
// bucket, and the walk goes on after the group; a pause in a clone ends
// the walk (OVS xlate_group_bucket, clone_xlate_actions).
func TestPauseInGroupAndClone(t *testing.T) {
	p := flowtable.NewPipeline()
	if err := p.AddGroup(&flowtable.GroupEntry{ID: 1, Type: flowtable.GroupAll, Buckets: []flowtable.Bucket{
		{Actions: []flowtable.Action{&flowtable.Controller{MaxLen: 0xffff, Reason: 1, Pause: true}, &flowtable.Output{Port: 2}}},
		{Actions: []flowtable.Action{&flowtable.Output{Port: 3}}},
	}}); err != nil {
		t.Fatal(err)
	}
	if err := flowtext.Load(p, `
table=0 in_port=1 actions=group:1,output:4
table=0 in_port=2 actions=clone(set_field:5->reg1,controller(pause),output:3),output:4
`, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec        string
		out, resume []uint32
		frozen      string
	}{
		{"in_port=1,icmp", []uint32{3, 4}, []uint32{2}, "unroll_xlate(table=0, cookie=0),output:2"},
		{"in_port=2,icmp", nil, []uint32{3}, "unroll_xlate(table=0, cookie=0),output:3"},
	} {
		frame, sink := runSpec(t, p, tc.spec)
		if got := outPorts(sink.out); !slices.Equal(got, tc.out) || len(sink.pis) != 1 {
			t.Fatalf("%s: outputs %v packet-ins %d, want %v and 1", tc.spec, got, len(sink.pis), tc.out)
		}
		if got := contActions(sink.pis[0].pi.Continuation.Actions); got != tc.frozen {
			t.Errorf("%s: frozen %s, want %s", tc.spec, got, tc.frozen)
		}
		if got := outPorts(resume(t, p, frame, sink.pis[0]).out); !slices.Equal(got, tc.resume) {
			t.Errorf("%s: resumed outputs %v, want %v", tc.spec, got, tc.resume)
		}
	}
}

// TestPauseAfterConntrack: a pause after ct(table=N) keeps the ct state
// (conntracked) and freezes only the recirculated walk; the actions after
// ct() go on at once.
func TestPauseAfterConntrack(t *testing.T) {
	p := loadSeed(t, `
table=0 in_port=1 icmp actions=ct(table=1),output:4
table=1 icmp actions=controller(pause),resubmit(,2)
table=2 in_port=1 icmp ct_state=+trk+new actions=output:2
`)
	frame, sink := runSpec(t, p, "in_port=1,icmp,nw_src=192.168.0.1,nw_dst=192.168.0.2,icmp_type=8")
	if got := outPorts(sink.out); !slices.Equal(got, []uint32{4}) || len(sink.pis) != 1 {
		t.Fatalf("outputs %v, packet-ins %d: want [4] and the paused one", got, len(sink.pis))
	}
	pin := sink.pis[0]
	if !pin.pi.Continuation.Conntracked || pin.key.CtState()&flowtable.CtStateTrk == 0 {
		t.Fatalf("continuation conntracked %v ct_state %#x", pin.pi.Continuation.Conntracked, pin.key.CtState())
	}
	if got := outPorts(resume(t, p, frame, pin).out); !slices.Equal(got, []uint32{2}) {
		t.Errorf("resumed outputs %v, want [2] (ct_state=+trk+new kept)", got)
	}
	// Without the conntracked flag the ct state does not count.
	pin.pi.Continuation.Conntracked = false
	if got := outPorts(resume(t, p, frame, pin).out); len(got) != 0 {
		t.Errorf("resumed without conntracked: outputs %v, want none", got)
	}
}
