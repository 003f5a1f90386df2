package flowtable_test

import (
	"sync"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// TestTableStatsCountLookups: lookup_count grows for every lookup of a
// table, matched_count only when a flow matched (OpenFlow 1.3
// ofp_table_stats); a table miss without a miss flow counts a lookup and
// no match; per-loop counter sets are folded in.
func TestTableStatsCountLookups(t *testing.T) {
	p := loadSeed(t, `
table=0,priority=10,in_port=1 actions=goto_table:1
table=0,priority=10,in_port=2 actions=output:3
table=1,priority=10,ip actions=output:2
`)
	for _, tc := range []struct {
		spec string
		n    int
	}{
		{"in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2", 3},   // t0 match, t1 match
		{"in_port=1,arp,arp_spa=10.0.0.1,arp_tpa=10.0.0.2", 2}, // t0 match, t1 miss
		{"in_port=2,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2", 4},   // t0 match
		{"in_port=3,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2", 5},   // t0 miss
	} {
		for i := 0; i < tc.n; i++ {
			walk(t, p, tc.spec, nil)
		}
	}
	// A loop's own counters, written by its goroutine, read by TableStats.
	loop := p.NewTableCounters()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 1000; i++ {
			loop.AddLookups([]flowtable.TableLookup{{Table: 0, Matched: true}, {Table: 1, Matched: false}}, 2)
		}
	}()
	wg.Wait()
	st := p.TableStats()
	want := map[int]flowtable.TableStat{
		0: {Active: 2, Lookups: 14 + 2000, Matched: 9 + 2000},
		1: {Active: 1, Lookups: 5 + 2000, Matched: 3},
		2: {},
	}
	for id, w := range want {
		if st[id] != w {
			t.Errorf("table %d: got %+v, want %+v", id, st[id], w)
		}
	}
}

// BenchmarkTableStatsRead: reading the statistics (ofproto's
// OFPMP_TABLE) folds every loop's set.
func BenchmarkTableStatsRead(b *testing.B) {
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, "table=0,priority=1 actions=drop", nil); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		p.NewTableCounters()
	}
	for b.Loop() {
		p.TableStats()
	}
}

// TestReleaseTableCounters: a stopped loop's counters stay in the totals
// and leave the pipeline's list, so port churn does not grow it.
func TestReleaseTableCounters(t *testing.T) {
	p := loadSeed(t, "table=0,priority=10,in_port=1 actions=output:2\n")
	before := p.TableStats()[0].Lookups
	for i := 0; i < 100; i++ {
		c := p.NewTableCounters()
		c.AddLookups([]flowtable.TableLookup{{Table: 0, Matched: true}, {Table: 0}}, 3)
		p.ReleaseTableCounters(c)
	}
	st := p.TableStats()[0]
	if st.Lookups-before != 600 || st.Matched != 300 {
		t.Errorf("after releasing: lookups +%d matched %d, want +600 and 300", st.Lookups-before, st.Matched)
	}
	if n := p.NumTableCounterSets(); n != 0 {
		t.Errorf("%d counter sets kept after their loops stopped", n)
	}
}
