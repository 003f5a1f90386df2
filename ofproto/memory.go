package ofproto

import (
	"runtime/debug"
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
