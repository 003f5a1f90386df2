package appctl

import (
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/ofproto/flowtext"
)

const seedServiceWalk = "tcp,in_port=49,dl_src=be:2c:bf:e4:ec:c5,dl_dst=4e:99:08:c1:53:be,nw_src=10.222.1.48,nw_ttl=64," +
	"nw_dst=10.104.65.133,tp_src=56670,tp_dst=80"

func worker1(t testing.TB) *flowtable.Pipeline {
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, seeds.Worker1, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// BenchmarkTraceSeedWalk: ofproto/trace of seed 001 §8 (frontend ->
// backendsvc:80, three passes) through worker 1's pipeline, parse to
// printed text; issue 18 asks for <= 1 ms.
func BenchmarkTraceSeedWalk(b *testing.B) {
	p := worker1(b)
	r := TraceRequest{Bridge: "br-int", Flow: seedServiceWalk}
	var id uint32
	next := func(n uint32) uint32 { id += n; return id }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := TracePipeline(p, "br-int", nil, r, next); err != nil {
			b.Fatal(err)
		}
	}
}

// TestTraceLeavesNoTrace: a trace changes no counter, learns nothing and
// commits no connection (OVS's trace has no side effects either).
func TestTraceLeavesNoTrace(t *testing.T) {
	p := worker1(t)
	var id uint32
	out, err := TracePipeline(p, "br-int", nil, TraceRequest{Bridge: "br-int", Flow: seedServiceWalk}, func(n uint32) uint32 { id += n; return id })
	if err != nil || !strings.Contains(out, "Datapath actions: 2") {
		t.Fatalf("trace: %v\n%s", err, out)
	}
	all := flowtable.AllFlows()
	for _, r := range p.Flows(&all) {
		if r.Stats.Packets.Load() != 0 {
			t.Errorf("trace counted on %v", r.Flow())
		}
	}
	for id, st := range p.TableStats() {
		if st.Lookups != 0 {
			t.Errorf("trace counted %d lookups in table %d", st.Lookups, id)
		}
	}
}
