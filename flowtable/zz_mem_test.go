package flowtable_test

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/govs-project/govs/bench/antreagen"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

func TestZZMem(t *testing.T) {
	gen := antreagen.Generate(antreagen.Default())
	text := gen.Text()
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, text, nil); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	t.Logf("flows %d live heap %d MB, %d B/flow; sizeof Flow %d Rule %d", p.NumFlows(), (m1.HeapAlloc-m0.HeapAlloc)>>20, (m1.HeapAlloc-m0.HeapAlloc)/uint64(p.NumFlows()), unsafe.Sizeof(flowtable.Flow{}), unsafe.Sizeof(flowtable.Rule{}))
	runtime.KeepAlive(p)
}
