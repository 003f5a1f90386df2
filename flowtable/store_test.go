package flowtable_test

import (
	"runtime"
	"testing"

	"github.com/govs-project/govs/bench/antreagen"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// TestStoreBytesPerFlow bounds the live heap a generated Antrea node's
// flows take once installed (rules, sparse matches, actions, classifier
// indexes; the parsed text is dropped): Open vSwitch 3.1 holds such a
// node at ~1.4 KB per flow of RSS; govs measured ~260 B per flow.
func TestStoreBytesPerFlow(t *testing.T) {
	gen := antreagen.Generate(antreagen.Config{Seed: 5, Pods: 300, Policies: 600, Services: 150, Endpoints: 3, RemoteNodes: 30})
	text := gen.Text()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, text, nil); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := p.NumFlows()
	perFlow := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / int64(n)
	t.Logf("%d flows: %d B of live heap per flow", n, perFlow)
	if perFlow > 450 {
		t.Errorf("%d B per flow, want ≤ 450", perFlow)
	}
	runtime.KeepAlive(p)
}
