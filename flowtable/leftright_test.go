package flowtable

import (
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type portsSink struct{ ports []uint32 }

func (s *portsSink) Output(port uint32, _ *Packet)   { s.ports = append(s.ports, port) }
func (s *portsSink) PacketIn(_ *Packet, _ *PacketIn) {}

// batchOps is batch i of TestWalksSeeWholeBatches: table 0's flow is
// modified to output 3i, group 1 to output 3i+1, and table 2's flow is
// replaced by one that outputs 3i+2.
func batchOps(i uint32) []FlowOp {
	all := AllFlows()
	all.Table = 0
	t0 := &Flow{Actions: []Action{&Output{Port: 3 * i}, &Resubmit{InPort: PortInPort, Table: 1}}}
	g := &GroupEntry{ID: 1, Type: GroupAll, Buckets: []Bucket{{Actions: []Action{&Output{Port: 3*i + 1}, &Resubmit{InPort: PortInPort, Table: 2}}}}}
	t2 := &Flow{Table: 2, Priority: 10, Actions: []Action{&Output{Port: 3*i + 2}}}
	return []FlowOp{{Kind: OpModify, Flow: t0, Filter: &all}, {Kind: OpGroupModify, Group: g}, {Kind: OpAdd, Flow: t2}}
}

// TestWalksSeeWholeBatches: walks running beside a stream of flow-mod
// batches (each a modify, a group-mod and an add that replaces a flow)
// always see one whole batch, never parts of two, and never wait.
func TestWalksSeeWholeBatches(t *testing.T) {
	p := NewPipeline()
	if _, err := p.Apply([]FlowOp{{Kind: OpGroupAdd, Group: &GroupEntry{ID: 1, Type: GroupAll}}}); err != nil {
		t.Fatal(err)
	}
	setup := []FlowOp{
		{Kind: OpAdd, Flow: &Flow{Table: 0, Priority: 10}},
		{Kind: OpAdd, Flow: &Flow{Table: 1, Priority: 10, Actions: []Action{&Group{ID: 1}}}},
	}
	if _, err := p.Apply(append(setup, batchOps(0)...)); err != nil {
		t.Fatal(err)
	}
	const batches = 300
	var stop atomic.Bool
	var wg sync.WaitGroup
	var walks atomic.Int64
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s portsSink
			for !stop.Load() {
				s.ports = s.ports[:0]
				var pkt Packet
				pkt.Key.SetInPort(1 << 20) // no output port of the test
				p.Run(&pkt, &s, nil)
				walks.Add(1)
				if len(s.ports) != 3 || s.ports[0]%3 != 0 || s.ports[1] != s.ports[0]+1 || s.ports[2] != s.ports[0]+2 {
					t.Errorf("a walk saw outputs %v: parts of different batches", s.ports)
					return
				}
			}
		}()
	}
	// At least batches batches, and more until the walkers have run
	// beside them for a while (on a loaded machine they start late).
	last := uint32(0)
	for deadline := time.Now().Add(10 * time.Second); last < batches || (walks.Load() < 100 && time.Now().Before(deadline)); {
		last++
		if _, err := p.Apply(batchOps(last)); err != nil {
			t.Fatal(err)
		}
	}
	// After a batch returns, every new walk sees it.
	var s portsSink
	var pkt Packet
	pkt.Key.SetInPort(1 << 20) // no output port of the test
	p.Run(&pkt, &s, nil)
	if len(s.ports) != 3 || s.ports[0] != 3*last {
		t.Errorf("after the last batch a walk outputs %v, want %d first", s.ports, 3*last)
	}
	stop.Store(true)
	wg.Wait()
	if walks.Load() == 0 {
		t.Fatal("no walk ran")
	}
	if got := p.LockStats(false); got.WriteHolds < batches {
		t.Errorf("%d write holds for %d batches", got.WriteHolds, batches)
	}
}

// TestModifyKeepsCountsUnderWalks: a modify installs a new rule, and the
// packets walks count on the old one while it is still visible go to the
// flow all the same (they share counters).
func TestModifyKeepsCountsUnderWalks(t *testing.T) {
	p := NewPipeline()
	if err := p.AddFlow(&Flow{Priority: 1, Actions: []Action{&Output{Port: 1}}}); err != nil {
		t.Fatal(err)
	}
	const perWalker, walkers = 20000, 2
	var wg sync.WaitGroup
	for w := 0; w < walkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pkt Packet
			for i := 0; i < perWalker; i++ {
				p.Run(&pkt, nil, nil)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	ff := AllFlows()
	mods := 0
	for running := true; running; mods++ {
		select {
		case <-done:
			running = false
		default:
		}
		p.ModifyFlows(&ff, []Action{&Output{Port: uint32(2 + mods%2)}}, false)
		time.Sleep(50 * time.Microsecond)
	}
	rs := p.Flows(&ff)
	if len(rs) != 1 {
		t.Fatalf("%d flows", len(rs))
	}
	if got := rs[0].Stats.Packets.Load(); got != perWalker*walkers {
		t.Errorf("after %d modifies the flow counted %d packets, want %d", mods, got, perWalker*walkers)
	}
}

// TestFailedBatchPublishesNothingNew: a batch undone by its last
// operation leaves both sides as they were.
func TestFailedBatchPublishesNothingNew(t *testing.T) {
	p := NewPipeline()
	if err := p.AddFlow(&Flow{Priority: 1, Actions: []Action{&Output{Port: 1}}}); err != nil {
		t.Fatal(err)
	}
	ff := AllFlows()
	_, err := p.Apply([]FlowOp{
		{Kind: OpModify, Flow: &Flow{Actions: []Action{&Output{Port: 2}}}, Filter: &ff},
		{Kind: OpAdd, Flow: &Flow{Priority: 5, Actions: []Action{&Group{ID: 9}}}},
	})
	if err == nil {
		t.Fatal("an add using a missing group went in")
	}
	p.catchUp()
	for i := 0; i < 2; i++ { // walk both sides
		var s portsSink
		var pkt Packet
		p.Run(&pkt, &s, nil)
		if len(s.ports) != 1 || s.ports[0] != 1 {
			t.Fatalf("walk %d after a failed batch outputs %v, want [1]", i, s.ports)
		}
		p.active.Store(1 - p.active.Load())
	}
}

// TestReplacedSideCatchesUp: the side a write replaced gets the change
// soon after without another write, and at once after a bulk change.
func TestReplacedSideCatchesUp(t *testing.T) {
	p := NewPipeline()
	lag := func() (int, [2]int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		var n [2]int
		for i := range p.sides {
			if tb := p.sides[i].tables[0]; tb != nil {
				n[i] = tb.hard.n
			}
		}
		return len(p.w.log), n
	}
	if err := p.AddFlow(&Flow{Priority: 1, Actions: []Action{&Output{Port: 1}}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if pending, n := lag(); pending == 0 && n == [2]int{1, 1} {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("10 s after an add, %d changes pending, sides hold %v flows", pending, n)
		}
	}
	fs := make([]*Flow, bulkReplay+1)
	for i := range fs {
		fs[i] = &Flow{Priority: 2}
		fs[i].Match.SetUint64(FieldInPort, uint64(i+1))
	}
	if err := p.AddFlows(fs); err != nil {
		t.Fatal(err)
	}
	if pending, n := lag(); pending != 0 || n != [2]int{bulkReplay + 2, bulkReplay + 2} {
		t.Fatalf("after a bulk add, %d changes pending, sides hold %v flows", pending, n)
	}
}

// TestMeterIDsOncePerMeter: a meter's datapath id is taken once, not once
// per side, and is the same entry on both sides once the replaced side
// has caught up; a controller(meter_id) added right after its meter is
// bound on the side being written.
func TestMeterIDsOncePerMeter(t *testing.T) {
	p := NewPipeline()
	bands := []MeterBand{{Type: MeterBandDrop, Rate: 10}}
	for id := uint32(1); id <= 3; id++ {
		if err := p.AddMeter(&MeterEntry{ID: id, Flags: MeterPktps, Bands: bands}); err != nil {
			t.Fatal(err)
		}
		// A flow-mod between meter-mods: a write that catches the other
		// side up first.
		if err := p.AddFlow(&Flow{Priority: uint16(id), Actions: []Action{&Meter{ID: id}}}); err != nil {
			t.Fatal(err)
		}
	}
	p.DeleteMeter(2)
	if err := p.AddMeter(&MeterEntry{ID: 4, Flags: MeterPktps, Bands: bands}); err != nil {
		t.Fatal(err)
	}
	ctl := &Controller{Reason: ReasonAction, MeterID: 4}
	if err := p.AddFlow(&Flow{Priority: 9, Actions: []Action{ctl}}); err != nil {
		t.Fatal(err)
	}
	if !ctl.MeterBound {
		t.Error("controller(meter_id=4) added right after meter 4 is not bound")
	}
	p.catchUp()
	want := map[uint32]uint32{1: 0, 3: 2, 4: 1} // OVS's id_pool: the lowest freed id is reused
	for i := range p.sides {
		got := map[uint32]uint32{}
		for id, m := range p.sides[i].meters {
			got[id] = m.Provider
			if m != p.sides[1-i].meters[id] {
				t.Errorf("meter %d is a different entry on each side", id)
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("side %d: meter -> datapath id %v, want %v", i, got, want)
		}
	}
	if len(p.meterIDs.used) != 3 {
		t.Errorf("%d datapath meter ids in use for 3 meters", len(p.meterIDs.used))
	}
}
