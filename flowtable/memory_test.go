package flowtable

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestBulkChangesTrimMemory: loading, dumping and deleting 10,000 flows
// each schedule a memory trim once the pipeline is quiet (several in a
// row give one trim), repeated while it gives back much; changes of a few
// flows give none.
func TestBulkChangesTrimMemory(t *testing.T) {
	p := NewPipeline()
	var trims atomic.Int32
	var release atomic.Uint64 // what the next trim gives back
	p.trimmer.trim = func() uint64 { trims.Add(1); return release.Swap(0) }
	flows := func(n int) []*Flow {
		var fs []*Flow
		for i := 0; i < n; i++ {
			f := &Flow{Table: 1, Priority: 100}
			ipv4(&f.Match)
			f.Match.SetUint64(FieldIPv4Src, uint64(0x0a000000+i))
			fs = append(fs, f)
		}
		return fs
	}
	if err := p.AddFlows(flows(100)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(trimDelay + 300*time.Millisecond)
	if n := trims.Load(); n != 0 {
		t.Fatalf("100 flows added: %d trims, want 0", n)
	}
	p.DeleteFlows(&FlowFilter{Table: 255, OutPort: PortNone, OutGroup: 0xffffffff})
	if err := p.AddFlows(flows(bulkFlows)); err != nil {
		t.Fatal(err)
	}
	all := AllFlows()
	if n := len(p.Flows(&all)); n != bulkFlows {
		t.Fatalf("dump has %d flows", n)
	}
	time.Sleep(trimDelay + 300*time.Millisecond)
	if n := trims.Load(); n != 1 {
		t.Fatalf("bulk add then dump: %d trims, want 1", n)
	}
	if n := len(p.DeleteFlows(&all)); n != bulkFlows {
		t.Fatalf("deleted %d flows", n)
	}
	time.Sleep(trimDelay + 300*time.Millisecond)
	if n := trims.Load(); n != 2 {
		t.Fatalf("after the bulk delete: %d trims, want 2", n)
	}
	// A trim that gives back much is followed by another one.
	release.Store(trimMin)
	p.DeleteFlows(&all)
	if err := p.AddFlows(flows(bulkFlows)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2*trimDelay + 300*time.Millisecond)
	if n := trims.Load(); n != 4 {
		t.Fatalf("after a trim that released %d bytes: %d trims in all, want 4", trimMin, n)
	}
}
