package flowtable

import (
	"runtime"
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
	p.trimmer.trim = func() (uint64, uint64) { trims.Add(1); return release.Swap(0), 0 }
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

// TestRuleDetachesActions: a rule keeps no slice of the flow-mod's
// buffers (action list, set-field bytes, ct exec list): changing them
// after the add leaves the rule as it was.
func TestRuleDetachesActions(t *testing.T) {
	buf := []byte{0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff}
	list := []Action{
		&SetField{Field: FieldReg[1], Value: buf[:4], Mask: buf[4:]},
		&CT{Commit: true, Table: TableNone, Exec: []Action{&SetField{Field: FieldCtMark, Value: buf[:4], Mask: buf[4:]}}},
		&Note{Data: buf[:2]},
	}
	f := &Flow{Table: 3, Priority: 10, Actions: list}
	r := newRule(f)
	for i := range buf {
		buf[i] = 0xaa
	}
	list[0] = &Output{Port: 9}
	sf, ok := r.Actions[0].(*SetField)
	if !ok || sf.Value[3] != 7 || sf.Mask[0] != 0xff {
		t.Fatalf("rule's set_field changed with the flow-mod's buffer: %#v", r.Actions[0])
	}
	exec := r.Actions[1].(*CT).Exec[0].(*SetField)
	if exec.Value[3] != 7 {
		t.Errorf("rule's ct exec set_field changed with the flow-mod's buffer: %v", exec.Value)
	}
	if n := r.Actions[2].(*Note); n.Data[0] != 0 {
		t.Errorf("rule's note changed with the flow-mod's buffer: %v", n.Data)
	}
}

// TestFreeOSMemoryReports: the trim's figures are those of MemStats.
func TestFreeOSMemoryReports(t *testing.T) {
	garbage := make([][]byte, 0, 512)
	for i := 0; i < 512; i++ {
		garbage = append(garbage, make([]byte, 64<<10))
	}
	garbage = nil
	released, inuse := freeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if released == 0 {
		t.Errorf("32 MB of garbage, nothing released")
	}
	if inuse == 0 || inuse > 2*ms.HeapInuse+8<<20 || ms.HeapInuse > 2*inuse+8<<20 {
		t.Errorf("heap in use %d, MemStats says %d", inuse, ms.HeapInuse)
	}
}
