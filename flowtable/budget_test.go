package flowtable_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/ofproto/flowtext"
)

const arpPkt = "in_port=1,arp,dl_src=00:00:00:00:00:01,dl_dst=ff:ff:ff:ff:ff:ff,arp_op=1,arp_spa=10.0.0.1,arp_tpa=10.0.0.2"

// actionsOf parses an action list.
func actionsOf(t *testing.T, s string) []flowtable.Action {
	t.Helper()
	fm, err := flowtext.ParseFlow("actions="+s, &flowtext.ParseOptions{})
	if err != nil {
		t.Fatalf("actions %q: %v", s, err)
	}
	return fm.Flow.Actions
}

// groupOf builds a group whose buckets each run one action list.
func groupOf(t *testing.T, id uint32, typ flowtable.GroupType, buckets ...string) *flowtable.GroupEntry {
	t.Helper()
	g := &flowtable.GroupEntry{ID: id, Type: typ}
	for i, b := range buckets {
		g.Buckets = append(g.Buckets, flowtable.Bucket{ID: uint32(i), Weight: 1, Actions: actionsOf(t, b)})
	}
	return g
}

// setGroups installs groups in two passes (first with no buckets, then
// the real ones), so that groups can name each other in loops, as OVS
// accepts (it does not check group chains for loops at group-mod time).
func setGroups(t *testing.T, p *flowtable.Pipeline, gs ...*flowtable.GroupEntry) {
	t.Helper()
	for _, g := range gs {
		if err := p.AddGroup(&flowtable.GroupEntry{ID: g.ID, Type: flowtable.GroupAll}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range gs {
		if err := p.ModifyGroup(g); err != nil {
			t.Fatalf("group %d: %v", g.ID, err)
		}
	}
}

// TestRecursionBudget: one budget per packet across resubmit, goto_table,
// groups (chains and loops) and ct recirculation, as OVS's (issue 15.2).
// Each loop used to overflow the goroutine stack and end the process.
func TestRecursionBudget(t *testing.T) {
	all, sel := flowtable.GroupAll, flowtable.GroupSelect
	var chain []string
	for i := 0; i < 62; i++ {
		chain = append(chain, fmt.Sprintf("table=%d actions=resubmit(,%d)", i, i+1))
	}
	chain = append(chain, "table=62 actions=output:2")
	// OVN's pipelines resubmit forward through 60-odd tables and then
	// some: like OVS (xlate_recursively's deepens), lookups in later
	// tables do not count against the depth of 64.
	var forward []string
	for i := 0; i < 120; i++ {
		forward = append(forward, fmt.Sprintf("table=%d actions=resubmit(,%d)", i, i+1))
	}
	forward = append(forward, "table=120 actions=output:2")
	cases := []struct {
		name      string
		flows     string
		groups    func(t *testing.T) []*flowtable.GroupEntry
		packetOut string // actions of a packet-out; empty: run the pipeline
		want      flowtable.XlateError
		outputs   int
	}{
		{name: "group reaching itself, packet-out", packetOut: "group:1", want: flowtable.XlateRecursionTooDeep,
			groups: func(t *testing.T) []*flowtable.GroupEntry {
				return []*flowtable.GroupEntry{groupOf(t, 1, all, "group:1")}
			}},
		{name: "group 1 -> 2 -> 1 hit by ARP", flows: "arp actions=group:1", want: flowtable.XlateRecursionTooDeep,
			groups: func(t *testing.T) []*flowtable.GroupEntry {
				return []*flowtable.GroupEntry{groupOf(t, 1, all, "group:2"), groupOf(t, 2, sel, "group:1")}
			}},
		{name: "group 1 -> 2 -> 1, packet-out", packetOut: "group:2", want: flowtable.XlateRecursionTooDeep,
			groups: func(t *testing.T) []*flowtable.GroupEntry {
				return []*flowtable.GroupEntry{groupOf(t, 1, flowtable.GroupIndirect, "group:2"), groupOf(t, 2, all, "group:1")}
			}},
		{name: "group and resubmit alternating", flows: "actions=group:1\ntable=1 actions=group:1", want: flowtable.XlateRecursionTooDeep,
			groups: func(t *testing.T) []*flowtable.GroupEntry {
				return []*flowtable.GroupEntry{groupOf(t, 1, all, "resubmit(,1)")}
			}},
		{name: "resubmit loop", flows: "actions=resubmit(,0)", want: flowtable.XlateRecursionTooDeep},
		{name: "resubmit loop, packet-out to TABLE", flows: "actions=resubmit(,0)", packetOut: "output:TABLE", want: flowtable.XlateRecursionTooDeep},
		{name: "goto_table chain then resubmit back", flows: "actions=goto_table:1\ntable=1 actions=resubmit(,0)", want: flowtable.XlateRecursionTooDeep},
		{name: "ct recirculation loop", flows: "ip actions=ct(table=0)", want: flowtable.XlateRecursionTooDeep},
		{name: "fan-out of groups past 4096 steps", flows: "arp actions=group:1", want: flowtable.XlateTooManyResubmits,
			groups: func(t *testing.T) []*flowtable.GroupEntry {
				var gs []*flowtable.GroupEntry
				for id := uint32(1); id <= 4; id++ {
					gs = append(gs, groupOf(t, id, all, strings.Split(strings.Repeat(fmt.Sprintf("group:%d;", id+1), 10), ";")[:10]...))
				}
				return append(gs, groupOf(t, 5, all, "drop"))
			}},
		{name: "63 nested lookups are within the budget", flows: strings.Join(chain, "\n"), want: flowtable.XlateOK, outputs: 1},
		{name: "120 forward resubmits are within the budget", flows: strings.Join(forward, "\n"), want: flowtable.XlateOK, outputs: 1},
		{name: "a chain of 3 groups is within the budget", flows: "arp actions=group:1", want: flowtable.XlateOK, outputs: 2,
			groups: func(t *testing.T) []*flowtable.GroupEntry {
				return []*flowtable.GroupEntry{groupOf(t, 1, all, "group:2", "output:3"), groupOf(t, 2, all, "group:3"), groupOf(t, 3, all, "output:2")}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := flowtable.NewPipeline()
			p.Conntrack = ctadapter.New()
			if c.groups != nil {
				setGroups(t, p, c.groups(t)...)
			}
			if c.flows != "" {
				if err := flowtext.Load(p, c.flows, nil); err != nil {
					t.Fatal(err)
				}
			}
			spec := arpPkt
			if strings.Contains(c.name, "ct ") {
				spec = tcpPkt
			}
			k, frame := packetSpec(t, p, spec)
			var pkt flowtable.Packet
			pkt.Key = k
			if err := pkt.Extract(frame); err != nil {
				t.Fatal(err)
			}
			sink := &captureSink{}
			var res flowtable.Result
			if c.packetOut != "" {
				res = p.Execute(&pkt, actionsOf(t, c.packetOut), sink, nil)
			} else {
				res = p.Run(&pkt, sink, nil)
			}
			if res.Error != c.want {
				t.Fatalf("translation error %v, want %v", res.Error, c.want)
			}
			if len(sink.out) != c.outputs {
				t.Errorf("%d outputs (%s), want %d", len(sink.out), ports(sink.out), c.outputs)
			}
			wantCount := uint64(0)
			if c.want != flowtable.XlateOK {
				wantCount = 1
			}
			if n := p.XlateErrors.Load(); n != wantCount {
				t.Errorf("XlateErrors %d, want %d", n, wantCount)
			}
		})
	}
}

// TestXlateErrorReportRateLimited: a loop hit by every packet is counted
// every time but reported (logged) at most once a second.
func TestXlateErrorReportRateLimited(t *testing.T) {
	p := pipelineOf(t, "actions=resubmit(,0)")
	now := time.Unix(1000, 0)
	p.Now = func() time.Time { return now }
	var reports []string
	p.OnXlateError = func(e flowtable.XlateError, k *flowtable.Key) {
		reports = append(reports, fmt.Sprintf("%v in_port=%d", e, k.InPort()))
	}
	for i := 0; i < 100; i++ {
		if i == 50 {
			now = now.Add(1500 * time.Millisecond)
		}
		walk(t, p, arpPkt, nil)
	}
	if n := p.XlateErrors.Load(); n != 100 {
		t.Errorf("XlateErrors %d, want 100", n)
	}
	want := "translation failed (Recursion too deep) in_port=1"
	if len(reports) != 2 || reports[0] != want {
		t.Errorf("reports %q, want two of %q", reports, want)
	}
}

// FuzzRecursionBudget builds random groups and flows that call each other
// (group chains and loops, resubmit, goto_table, ct recirculation) from the
// input and sends a packet and a packet-out through them: every walk must
// end, within the budget, without overflowing the stack.
func FuzzRecursionBudget(f *testing.F) {
	f.Add([]byte{0x11, 0x22, 0x33, 0x44, 0x55})
	f.Add([]byte{0xff, 0xfe, 0xfd, 0x00, 0x01, 0x02, 0x03, 0x80, 0x81})
	f.Add([]byte("group loops and resubmits"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64 {
			data = data[:64]
		}
		next := func() int {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return int(b)
		}
		// One action of each nesting kind, chosen by a byte.
		action := func() string {
			b := next()
			switch b % 6 {
			case 0:
				return fmt.Sprintf("group:%d", 1+b/6%4)
			case 1:
				return fmt.Sprintf("resubmit(,%d)", b/6%4)
			case 2:
				return "ct(table=" + fmt.Sprint(b/6%4) + ",zone=1)"
			case 3:
				return "output:2"
			case 4:
				return "load:5->NXM_NX_REG0[]"
			}
			return "note:00"
		}
		p := flowtable.NewPipeline()
		p.Conntrack = ctadapter.New()
		var groups []*flowtable.GroupEntry
		for id := uint32(1); id <= 4; id++ {
			var buckets []string
			for n := 1 + next()%3; n > 0; n-- {
				buckets = append(buckets, action()+","+action())
			}
			groups = append(groups, groupOf(t, id, []flowtable.GroupType{flowtable.GroupAll, flowtable.GroupSelect, flowtable.GroupIndirect}[next()%3], buckets...))
			if groups[len(groups)-1].Type == flowtable.GroupIndirect {
				groups[len(groups)-1].Buckets = groups[len(groups)-1].Buckets[:1]
			}
		}
		setGroups(t, p, groups...)
		var flows []string
		for table := 0; table < 4; table++ {
			acts := action() + "," + action()
			if table < 3 && next()%2 == 0 {
				acts += fmt.Sprintf(",goto_table:%d", table+1)
			}
			flows = append(flows, fmt.Sprintf("table=%d,priority=1 actions=%s", table, acts))
		}
		if err := flowtext.Load(p, strings.Join(flows, "\n"), nil); err != nil {
			t.Fatal(err)
		}
		k, frame := packetSpec(t, p, tcpPkt)
		for _, out := range []string{"", action()} {
			var pkt flowtable.Packet
			pkt.Key = k
			if err := pkt.Extract(append([]byte(nil), frame...)); err != nil {
				t.Fatal(err)
			}
			var res flowtable.Result
			if out == "" {
				res = p.Run(&pkt, nil, nil)
			} else {
				res = p.Execute(&pkt, actionsOf(t, out), nil, nil)
			}
			if res.Error != flowtable.XlateOK && p.XlateErrors.Load() == 0 {
				t.Fatalf("translation error %v not counted", res.Error)
			}
		}
	})
}
