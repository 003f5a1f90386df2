package ofproto

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// reclaimFlows is how many flows a dump or a delete must touch before
// govs hands the memory it freed back to the kernel.
//
// A pprof heap profile of the daemon after a 200,000-flow load and
// del-flows shows 18 MB live: nothing holds deleted flows or old dumps.
// The RSS that stayed was the Go heap's free pages: the collector lets
// the heap grow to twice the live flows before it runs, and returns free
// pages to the kernel only slowly. After a big dump (its garbage) or a
// big delete, a collection that returns them at once keeps RSS at what
// the flows use, as Open vSwitch's RSS is.
const reclaimFlows = 10000

// reclaimInterval spaces the collections when dumps or deletes follow
// each other.
const reclaimInterval = time.Second

var (
	reclaimPending atomic.Bool
	reclaimAgain   atomic.Bool
	// MemoryReclaims counts the collections a big dump or delete caused.
	MemoryReclaims atomic.Uint64
)

// reclaimMemory schedules a collection that returns free memory to the
// kernel, off the connection's goroutine. Requests while one runs or
// waits out the interval are merged into one more after it.
func reclaimMemory() {
	if !reclaimPending.CompareAndSwap(false, true) {
		reclaimAgain.Store(true)
		return
	}
	go func() {
		for {
			reclaimAgain.Store(false)
			debug.FreeOSMemory()
			// A big bundle's commit leaves the staging pace to this
			// collection (bundleControl): the heap is its live size now,
			// so the normal pace starts no collection of its own.
			releaseStagingGC()
			MemoryReclaims.Add(1)
			time.Sleep(reclaimInterval)
			if !reclaimAgain.Load() {
				break
			}
		}
		reclaimPending.Store(false)
		if reclaimAgain.Load() {
			reclaimMemory() // a request raced the end of the loop
		}
	}()
}

// reclaimCommitDelay is how long the reclaim after a big bundle's commit
// waits. The client has work of its own right after the commit reply
// (ovs-ofctl frees its ~100 MB of encoded requests and exits, an agent
// goes on with its next task): a collection of the whole heap and the
// return of its free pages at once would compete with it for the CPU
// (measured: the client's exit after the reply took 17-76 ms against 7
// without a switch's work beside it, on two shared cores).
const reclaimCommitDelay = 250 * time.Millisecond

// reclaimAfterCommit schedules reclaimMemory after a big bundle's commit.
func reclaimAfterCommit() { time.AfterFunc(reclaimCommitDelay, reclaimMemory) }

// While a big bundle is staged, the heap grows by what the bundle will
// install, nearly all of it live: a collection then frees little, and the
// collector's cycles (about eight for a 118k-flow bundle, each scanning
// the grown heap) cost switch CPU while the client waits. So the
// collector runs less often (stagingGCPercent) until the bundle is
// committed (for a big one, until the reclaim's collection after the
// commit) or discarded, or no add came for stagingGCIdle (a client gone
// without closing). The RSS a load leaves is what the reclaim after it
// (above) gives back, as before.
const (
	stagingGCPercent = 400
	stagingGCAfter   = 4096 // adds in one bundle
	stagingGCIdle    = time.Second
)

var stagingGC struct {
	mu    sync.Mutex
	on    bool
	prev  int // the percent to go back to
	timer *time.Timer
}

// holdStagingGC spaces the collections out while a big bundle is staged
// (called every so many adds, which keeps it from expiring).
func holdStagingGC() {
	g := &stagingGC
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.on {
		g.prev = debug.SetGCPercent(stagingGCPercent)
		if g.prev < 0 || g.prev >= stagingGCPercent {
			debug.SetGCPercent(g.prev) // off, or already as sparse
			return
		}
		g.on = true
	}
	if g.timer == nil {
		g.timer = time.AfterFunc(stagingGCIdle, releaseStagingGC)
	} else {
		g.timer.Reset(stagingGCIdle)
	}
}

// releaseStagingGC restores the collector's pace (a big bundle was
// committed or discarded, or its adds stopped).
func releaseStagingGC() {
	g := &stagingGC
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.on {
		debug.SetGCPercent(g.prev)
		g.on = false
	}
	if g.timer != nil {
		g.timer.Stop()
	}
}
