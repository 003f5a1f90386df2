package flowtable

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// stageOps stages ops as a bundle does (adds as their rules, Stage.Add
// in order) and returns them with the stage.
func stageOps(p *Pipeline, ops []FlowOp) ([]FlowOp, *Stage) {
	st := p.NewStage()
	out := make([]FlowOp, len(ops))
	for i, op := range ops {
		if op.Kind == OpAdd && op.Flow != nil {
			op.Rule, op.Flow = NewRule(op.Flow), nil
		}
		out[i] = op
		st.Add(&out[i])
	}
	return out, st
}

// sflow is a flow of table t at priority prio matching in_port (0: any)
// and reg0 (0: any), with actions acts.
func sflow(t uint8, prio uint16, inPort, reg0 uint64, acts ...Action) *Flow {
	f := &Flow{Table: t, Priority: prio, Actions: acts}
	if inPort != 0 {
		f.Match.SetUint64(FieldInPort, inPort)
	}
	if reg0 != 0 {
		f.Match.SetUint64(FieldReg[0], reg0)
	}
	return f
}

func out(port uint32) Action  { return &Output{Port: port} }
func goTo(table uint8) Action { return &Resubmit{InPort: PortInPort, Table: table} }
func add(f *Flow) FlowOp      { return FlowOp{Kind: OpAdd, Flow: f} }
func groupAdd(id uint32, p uint32) FlowOp {
	return FlowOp{Kind: OpGroupAdd, Group: &GroupEntry{ID: id, Type: GroupAll, Buckets: []Bucket{{Actions: []Action{out(p)}}}}}
}

func deleteAll() FlowOp {
	ff := AllFlows()
	return FlowOp{Kind: OpDelete, Filter: &ff}
}

// pipelineState is the state of both sides of p once caught up: every flow of
// every table with its counters, the flows with timeouts, the groups, and
// the ports the probe packets (in_port 1..6 with reg0 0..2) go out of.
func pipelineState(p *Pipeline) string {
	p.catchUp()
	var b strings.Builder
	fmt.Fprintf(&b, "flows %d, timed %d\n", p.NumFlows(), len(p.timed))
	for i := range 2 {
		p.mu.Lock()
		sd := &p.sides[i]
		var lines []string
		for id, t := range sd.tables {
			if t == nil {
				continue
			}
			for _, c := range []*classifier{t.hard, t.soft} {
				c.each(func(r *Rule) bool {
					m := r.Match()
					lines = append(lines, fmt.Sprintf("table %d prio %d cookie %d in_port %d reg0 %d %+v packets %d created %v",
						id, r.Priority, r.Cookie, m.Value.InPort(), m.Value.Reg(0), r.Actions, r.Stats.Packets.Load(), !r.Stats.Created.IsZero()))
					return true
				})
			}
		}
		slices.Sort(lines)
		var groups []string
		for id, g := range sd.groups {
			groups = append(groups, fmt.Sprintf("group %d %+v", id, g.Buckets))
		}
		slices.Sort(groups)
		p.mu.Unlock()
		fmt.Fprintf(&b, "side %d flows:\n%s\n%s\n", i, strings.Join(lines, "\n"), strings.Join(groups, "\n"))
	}
	// The walks count packets, after both sides are listed.
	for i := range 2 {
		fmt.Fprintf(&b, "side %d walks:\n", i)
		old := p.active.Load()
		p.active.Store(uint32(i))
		for port := uint32(1); port <= 6; port++ {
			for reg := uint32(0); reg <= 2; reg++ {
				var s portsSink
				var pkt Packet
				pkt.Key.SetInPort(port)
				pkt.Key.SetReg(0, reg)
				p.Run(&pkt, &s, nil)
				fmt.Fprintf(&b, "in_port %d reg0 %d -> %v\n", port, reg, s.ports)
			}
		}
		p.active.Store(old)
	}
	return b.String()
}

// TestStagedCommitEqualsSequential: a bundle committed from its stage
// (the tables its adds make built while it was staged, put in place at
// commit) leaves the pipeline, on both sides, exactly as applying its
// operations one by one does, with the same error at the same index,
// including when another writer changed the tables between staging and
// commit; and the stage is used where it can be.
func TestStagedCommitEqualsSequential(t *testing.T) {
	setup := []FlowOp{
		groupAdd(1, 101),
		add(sflow(0, 10, 1, 0, out(1))),
		add(sflow(0, 10, 2, 0, goTo(1))),
		add(sflow(1, 5, 0, 0, &Group{ID: 1})),
	}
	// pipeline is a bundle's adds over tables 0..2: a flow replaced
	// within the bundle, equal-priority overlapping flows in different
	// subtables (the first added wins), a conjunction, a group.
	pipeline := []FlowOp{
		add(sflow(0, 20, 1, 0, out(11))),
		add(sflow(0, 20, 1, 0, out(12))), // replaces the one before
		add(sflow(0, 20, 0, 1, out(13))), // overlaps in_port=1 at equal priority
		add(sflow(0, 30, 3, 0, goTo(1))),
		add(sflow(0, 30, 4, 0, goTo(2))),
		add(sflow(1, 10, 3, 0, &Conjunction{ID: 7, Clause: 1, NClauses: 2})),
		add(sflow(1, 10, 0, 2, &Conjunction{ID: 7, Clause: 2, NClauses: 2})),
		add(&Flow{Table: 1, Priority: 10, Match: conjMatch(7), Actions: []Action{out(14)}}),
		add(sflow(1, 1, 0, 0, out(15))),
		add(sflow(2, 1, 0, 0, &Group{ID: 2})),
		add(&Flow{Table: 2, Priority: 9, IdleTimeout: 60, Actions: []Action{out(16)}}),
	}
	// across replaces flows of the same match and priority between a
	// table's conjunctive and other flows, both ways, and the same flow
	// twice in a row.
	across := []FlowOp{
		add(sflow(1, 10, 3, 0, out(31))),
		add(sflow(1, 10, 3, 0, &Conjunction{ID: 7, Clause: 1, NClauses: 2})), // replaces a plain flow
		add(sflow(1, 10, 0, 2, &Conjunction{ID: 7, Clause: 2, NClauses: 2})),
		add(&Flow{Table: 1, Priority: 10, Match: conjMatch(7), Actions: []Action{out(14)}}),
		add(sflow(1, 10, 0, 2, out(32))), // replaces a conjunctive flow
		add(sflow(1, 10, 0, 2, out(33))),
		add(sflow(1, 10, 3, 0, out(34))),
	}
	cat := func(parts ...[]FlowOp) []FlowOp { return slices.Concat(parts...) }
	badGroup := add(sflow(0, 40, 5, 0, &Group{ID: 77}))
	limited := func(p *Pipeline) { p.Limits.MaxFlowsPerTable = 3 }
	for _, tc := range []struct {
		name      string
		setup     []FlowOp
		bundle    []FlowOp
		meanwhile []FlowOp // another writer, after staging, before commit
		limits    func(*Pipeline)
		wantErr   int // index of the failing op, -1: none
		wantPut   bool
	}{
		{name: "empty tables", bundle: cat([]FlowOp{groupAdd(2, 102)}, pipeline), wantErr: -1, wantPut: true},
		{name: "replaced across conjunctive and other flows", bundle: across, wantErr: -1, wantPut: true},
		{name: "group add among the adds", bundle: cat(pipeline[:9], []FlowOp{groupAdd(2, 102)}, pipeline[9:]), wantErr: -1, wantPut: true},
		{name: "group add after the add naming it", bundle: cat(pipeline, []FlowOp{groupAdd(2, 102)}), wantErr: 9},
		{name: "delete all first", setup: setup, bundle: cat([]FlowOp{deleteAll(), {Kind: OpGroupDelete, GroupID: GroupAllID}, groupAdd(2, 102)}, pipeline),
			wantErr: -1, wantPut: true},
		{name: "full tables", setup: setup, bundle: cat([]FlowOp{groupAdd(2, 102)}, pipeline), wantErr: -1},
		{name: "another writer fills a staged table", bundle: cat([]FlowOp{groupAdd(2, 102)}, pipeline),
			meanwhile: []FlowOp{add(sflow(1, 10, 6, 0, out(21))), add(sflow(0, 20, 1, 0, out(22)))}, wantErr: -1},
		{name: "another writer adds before a delete all", setup: setup, bundle: cat([]FlowOp{deleteAll(), groupAdd(2, 102)}, pipeline),
			meanwhile: []FlowOp{add(sflow(2, 10, 6, 0, out(21)))}, wantErr: -1, wantPut: true},
		{name: "another writer removes a group the adds name", setup: setup, bundle: cat([]FlowOp{deleteAll()}, pipeline[:9], []FlowOp{add(sflow(2, 1, 0, 0, &Group{ID: 1}))}),
			meanwhile: []FlowOp{{Kind: OpGroupDelete, GroupID: 1}}, wantErr: 10},
		{name: "fails in the middle", setup: setup, bundle: cat([]FlowOp{deleteAll(), groupAdd(2, 102)}, pipeline[:5], []FlowOp{badGroup}, pipeline[5:]),
			wantErr: 7},
		{name: "fails after the adds", bundle: cat([]FlowOp{groupAdd(2, 102)}, pipeline, []FlowOp{groupAdd(2, 103)}), wantErr: 12},
		{name: "delete after the adds", setup: setup, bundle: cat([]FlowOp{deleteAll(), groupAdd(2, 102)}, pipeline, []FlowOp{deleteAll()}), wantErr: -1},
		{name: "table limit", bundle: cat([]FlowOp{groupAdd(2, 102)}, pipeline), limits: limited, wantErr: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got string
			for _, staged := range []bool{false, true} {
				p := NewPipeline()
				clock := time.Unix(1e9, 0)
				p.Now = func() time.Time { return clock }
				if tc.limits != nil {
					tc.limits(p)
				}
				if _, err := p.Apply(tc.setup); err != nil {
					t.Fatal(err)
				}
				ops, st := stageOps(p, tc.bundle)
				if _, err := p.Apply(tc.meanwhile); err != nil {
					t.Fatal(err)
				}
				var err error
				if staged {
					_, err = p.ApplyStaged(ops, st)
				} else {
					_, err = p.Apply(ops)
				}
				var oe *OpError
				switch {
				case tc.wantErr < 0 && err != nil:
					t.Fatalf("staged %v: %v", staged, err)
				case tc.wantErr >= 0 && (!errors.As(err, &oe) || oe.Index != tc.wantErr):
					t.Fatalf("staged %v: error %v, want one at op %d", staged, err, tc.wantErr)
				}
				if staged {
					got = pipelineState(p)
					put := false
					for id, tb := range st.tables {
						put = put || (tb != nil && (p.sides[0].tables[id] == tb || p.sides[1].tables[id] == tb))
					}
					if put != tc.wantPut {
						t.Errorf("stage's tables in place: %v, want %v", put, tc.wantPut)
					}
				} else {
					want = pipelineState(p)
				}
			}
			if got != want {
				t.Errorf("staged commit:\n%s\nops one by one:\n%s", got, want)
			}
		})
	}
}

// conjMatch matches conj_id id.
func conjMatch(id uint64) Match {
	var m Match
	m.SetUint64(FieldConjID, id)
	return m
}

// TestStagedReplaceSharesCounters: an add replaced by a later add of the
// same bundle gives the flow that stays its counters (as addLocked does),
// unless the later one resets them; and the replaced rule is installed
// nowhere.
func TestStagedReplaceSharesCounters(t *testing.T) {
	p := NewPipeline()
	reset := sflow(0, 5, 2, 0, out(4))
	reset.Flags |= FlagResetCounts
	ops, st := stageOps(p, []FlowOp{add(sflow(0, 5, 1, 0, out(1))), add(sflow(0, 5, 1, 0, out(2))),
		add(sflow(0, 5, 2, 0, out(3))), add(reset)})
	res, err := p.ApplyStaged(ops, st)
	if err != nil {
		t.Fatal(err)
	}
	if ops[1].Rule.Stats != ops[0].Rule.Stats {
		t.Error("the replacing add does not share the replaced add's counters")
	}
	if ops[3].Rule.Stats == ops[2].Rule.Stats {
		t.Error("the replacing add with reset_counts shares the replaced add's counters")
	}
	if res[0].Added != ops[0].Rule || res[1].Added != ops[1].Rule {
		t.Error("results do not name each add's rule")
	}
	if n := p.NumFlows(); n != 2 {
		t.Errorf("%d flows, want 2", n)
	}
	if rs := p.Flows(&FlowFilter{Table: 0, OutPort: PortNone, OutGroup: 0xffffffff}); len(rs) != 2 || slices.Contains(rs, ops[0].Rule) {
		t.Errorf("flows %v: want the two later adds only", rs)
	}
}

// TestStagedDeleteAllLists: a staged commit's delete of every flow lists
// every removed flow when asked (flow monitors), else at least those
// with send_flow_rem (flow-removed messages), taking the tables without
// any whole; either way the flows are gone from both sides.
func TestStagedDeleteAllLists(t *testing.T) {
	for _, list := range []bool{false, true} {
		p := NewPipeline()
		notify := sflow(0, 3, 3, 0, out(3))
		notify.Flags |= FlagSendFlowRem
		setup := []FlowOp{add(sflow(0, 1, 1, 0, out(1))), add(sflow(0, 2, 2, 0, out(2))), add(notify),
			add(sflow(1, 1, 1, 0, out(4))), add(sflow(1, 2, 2, 0, out(5)))}
		res, err := p.Apply(setup)
		if err != nil {
			t.Fatal(err)
		}
		ops, st := stageOps(p, []FlowOp{deleteAll(), add(sflow(0, 9, 0, 0, out(9)))})
		st.ListRemoved = list
		got, err := p.ApplyStaged(ops, st)
		if err != nil {
			t.Fatal(err)
		}
		want := []*Rule{res[0].Added, res[1].Added, res[2].Added} // table 0: has a send_flow_rem flow
		if list {
			want = append(want, res[3].Added, res[4].Added)
		}
		if len(got[0].Removed) != len(want) {
			t.Errorf("list %v: removed %d flows, want %d", list, len(got[0].Removed), len(want))
		}
		for _, r := range want {
			if !slices.Contains(got[0].Removed, r) {
				t.Errorf("list %v: %+v not among the removed", list, r.Actions)
			}
		}
		if state := pipelineState(p); !strings.Contains(state, "flows 1,") || strings.Count(state, "-> [9]") != 36 {
			t.Errorf("list %v: after the bundle:\n%s", list, state)
		}
	}
}

// TestStagingBesideWriters: bundles are staged and committed (the
// ovn-controller shape: delete every flow, then the same flows again,
// which reuses the spare tables) while another writer adds and deletes
// flows in another table and walks run; run with -race. Every commit's
// flows are all there after it, and both sides agree at the end.
func TestStagingBesideWriters(t *testing.T) {
	p := NewPipeline()
	done := make(chan struct{})
	var other []error
	go func() {
		defer close(done)
		for i := range 300 {
			f := sflow(7, 5, uint64(i%20+1), 0, out(70))
			if _, err := p.Apply([]FlowOp{add(f)}); err != nil {
				other = append(other, err)
			}
			if i%7 == 0 {
				ff := AllFlows()
				ff.Table = 7
				p.Apply([]FlowOp{{Kind: OpDelete, Filter: &ff}})
			}
			var s portsSink
			var pkt Packet
			pkt.Key.SetInPort(uint32(i%20 + 1))
			p.Run(&pkt, &s, nil)
		}
	}()
	bundle := []FlowOp{deleteAll()}
	for i := range 40 {
		bundle = append(bundle, add(sflow(uint8(i%4), uint16(i), uint64(i%20+1), uint64(i%3), out(uint32(i)), goTo(uint8(i%4+1)))))
	}
	for round := 0; ; round++ {
		ops, st := stageOps(p, bundle)
		if _, err := p.ApplyStaged(ops, st); err != nil {
			t.Fatal(err)
		}
		for j := 1; j < len(ops); j++ {
			r := ops[j].Rule
			m := r.Match()
			if rs := p.Flows(&FlowFilter{Table: r.Table, Match: m, Priority: r.Priority, Strict: true, OutPort: PortNone, OutGroup: 0xffffffff}); len(rs) != 1 || rs[0] != r {
				t.Fatalf("round %d: flow %d of the bundle not installed (%v)", round, j, rs)
			}
		}
		select {
		case <-done:
		default:
			continue
		}
		break
	}
	if len(other) > 0 {
		t.Fatal(other[0])
	}
	// Both sides hold the same flows and walk the same way.
	state := pipelineState(p)
	part := func(from, to string) string {
		_, rest, _ := strings.Cut(state, from)
		part, _, _ := strings.Cut(rest, to)
		return part
	}
	if part("side 0 flows:", "side 1 flows:") != part("side 1 flows:", "side 0 walks:") ||
		part("side 0 walks:", "side 1 walks:") != part("side 1 walks:", "\x00") {
		t.Errorf("the sides differ:\n%s", state)
	}
}

// TestStagedBigBundleCopiedAfter: a bundle past maxTwinRules builds its
// tables once; the other side copies them when it catches up, and ends
// the same as the side the commit wrote, and as the ops one by one.
func TestStagedBigBundleCopiedAfter(t *testing.T) {
	bundle := []FlowOp{deleteAll()}
	for i := range maxTwinRules + 1000 {
		bundle = append(bundle, add(sflow(uint8(i%3), uint16(i%7), uint64(i%6+1), uint64(i/6), out(uint32(i)), goTo(uint8(i%3+1)))))
	}
	bundle = append(bundle, add(sflow(0, 0, 1, 0, out(99999)))) // replaces the first
	var want, got string
	for _, staged := range []bool{false, true} {
		p := NewPipeline()
		clock := time.Unix(1e9, 0)
		p.Now = func() time.Time { return clock }
		if _, err := p.Apply([]FlowOp{add(sflow(0, 1, 2, 0, out(7)))}); err != nil {
			t.Fatal(err)
		}
		ops, st := stageOps(p, bundle)
		var err error
		if staged {
			if !st.noTwins {
				t.Fatalf("a stage of %d flows kept its twins", st.rules)
			}
			_, err = p.ApplyStaged(ops, st)
			got = pipelineState(p)
		} else {
			_, err = p.Apply(ops)
			want = pipelineState(p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if got != want {
		t.Errorf("staged commit:\n%.3000s\nops one by one:\n%.3000s", got, want)
	}
	if !strings.Contains(got, "-> [99999]") {
		t.Errorf("the replacing add is not walked:\n%.2000s", got)
	}
}
