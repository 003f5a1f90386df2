package ofproto

import (
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent reads the collector's percent.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestStagingGCPace: while a big bundle is staged the collector runs at
// stagingGCPercent; the commit (or discard) puts the previous pace back,
// for a big bundle the reclaim's collection after the commit does, and so
// does a bundle whose adds stop without either.
func TestStagingGCPace(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	holdStagingGC()
	holdStagingGC() // every so many adds: one hold
	if got := gcPercent(); got != stagingGCPercent {
		t.Fatalf("staging: GC percent %d, want %d", got, stagingGCPercent)
	}
	releaseStagingGC()
	if got := gcPercent(); got != 100 {
		t.Fatalf("after the commit: GC percent %d, want 100", got)
	}
	holdStagingGC()
	deadline := time.Now().Add(stagingGCIdle + 5*time.Second)
	for gcPercent() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("%v after the last add: GC percent %d, want 100", stagingGCIdle+5*time.Second, gcPercent())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A big bundle's commit leaves the pace to the reclaim's collection,
	// which restores it at once (well before stagingGCIdle).
	for reclaimPending.Load() { // an earlier reclaim's interval
		time.Sleep(10 * time.Millisecond)
	}
	holdStagingGC()
	n := MemoryReclaims.Load()
	reclaimMemory()
	for MemoryReclaims.Load() == n {
		time.Sleep(time.Millisecond)
	}
	if got := gcPercent(); got != 100 {
		t.Fatalf("after the reclaim's collection: GC percent %d, want 100", got)
	}
	debug.SetGCPercent(1000) // already sparser: left alone
	holdStagingGC()
	if got := gcPercent(); got != 1000 {
		t.Errorf("with GOGC=1000: GC percent %d during staging", got)
	}
	releaseStagingGC()
	if got := gcPercent(); got != 1000 {
		t.Errorf("with GOGC=1000: GC percent %d after", got)
	}
}

// TestReclaimAfterCommitWaits: the reclaim after a big bundle's commit
// leaves the client its moment first (reclaimCommitDelay), then runs.
func TestReclaimAfterCommitWaits(t *testing.T) {
	for reclaimPending.Load() { // an earlier reclaim's interval
		time.Sleep(10 * time.Millisecond)
	}
	n := MemoryReclaims.Load()
	start := time.Now()
	reclaimAfterCommit()
	for MemoryReclaims.Load() == n {
		if time.Since(start) > reclaimCommitDelay+5*time.Second {
			t.Fatal("no reclaim after the commit")
		}
		time.Sleep(time.Millisecond)
	}
	if d := time.Since(start); d < reclaimCommitDelay {
		t.Errorf("reclaimed %v after the commit, want at least %v", d, reclaimCommitDelay)
	}
}
