package flowtable

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// Giving memory back after bulk changes.
//
// Loading, dumping or deleting a whole pipeline leaves hundreds of
// megabytes of freed heap (parsed flow-mods, dump replies, deleted rules)
// that Go's background scavenger returns to the OS only slowly, and no
// allocation follows to start a collection. Open vSwitch's RSS follows its
// flow count; so that govs's does too, an operation that touched at least
// bulkFlows flows starts a trim: once the pipeline has been quiet for
// trimDelay, a forced collection and scavenge (debug.FreeOSMemory), again
// every trimDelay while the last one still gave back at least trimMin
// bytes or found the heap grown or shrunk by as much (a dump's reply is
// built and sent for seconds after the pipeline handed out its rules). It runs outside the pipeline lock; its stop-the-world pauses
// are those of an ordinary collection.

const (
	bulkFlows = 10000
	trimDelay = time.Second
	trimMin   = 8 << 20
	trimMax   = 30 // trims per bulk change, at most
)

// trimmer debounces the memory trims of one pipeline.
type trimmer struct {
	mu      sync.Mutex
	timer   *time.Timer
	pending int    // trims left in the current round
	inuse   uint64 // heap in use after the last trim
	// trim gives memory back and returns how many bytes it released and
	// the heap in use after it (freeOSMemory; tests count calls).
	trim func() (released, inuse uint64)
}

// noteBulk records an operation over n flows.
func (p *Pipeline) noteBulk(n int) {
	if n < bulkFlows {
		return
	}
	t := &p.trimmer
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.trim == nil {
		t.trim = freeOSMemory
	}
	t.pending = trimMax
	if t.timer == nil {
		t.timer = time.AfterFunc(trimDelay, t.run)
		return
	}
	t.timer.Reset(trimDelay)
}

// run trims once and goes on while trims are worth it.
func (t *trimmer) run() {
	released, inuse := t.trim()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending--
	changed := max(inuse, t.inuse)-min(inuse, t.inuse) >= trimMin
	t.inuse = inuse
	if (released >= trimMin || changed) && t.pending > 0 {
		t.timer.Reset(trimDelay)
	}
}

// freeOSMemory returns freed heap to the OS; it reports how much it
// released and the heap in use after. It reads runtime/metrics rather
// than runtime.ReadMemStats, which stops the world (twice per trim, and
// packet loops with it).
func freeOSMemory() (released, inuse uint64) {
	before := heapMetrics()
	debug.FreeOSMemory()
	after := heapMetrics()
	if after[0] > before[0] {
		released = after[0] - before[0]
	}
	return released, after[1] + after[2]
}

// heapMetrics reads the heap's released bytes, and its object and
// unused bytes (together MemStats.HeapInuse).
func heapMetrics() [3]uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	return [3]uint64{s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()}
}
