package flowtable

import (
	"runtime/debug"
	"sync"
	"time"
)

// Giving memory back after bulk changes.
//
// Loading, dumping or deleting a whole pipeline leaves hundreds of
// megabytes of freed heap (parsed flow-mods, replies, deleted rules) that
// Go's background scavenger returns to the OS only slowly, and no
// allocation follows to start a collection. Open vSwitch's RSS follows its
// flow count; so that govs's does too, an operation that touched at least
// bulkFlows flows schedules one forced collection and scavenge
// (debug.FreeOSMemory) once the pipeline has been quiet for trimDelay. It
// runs outside the pipeline lock; its stop-the-world pauses are those of
// an ordinary collection.

const (
	bulkFlows = 10000
	trimDelay = time.Second
)

// trimmer debounces the memory trims of one pipeline.
type trimmer struct {
	mu    sync.Mutex
	timer *time.Timer
	// trim gives memory back (debug.FreeOSMemory; tests count calls).
	trim func()
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
		t.trim = debug.FreeOSMemory
	}
	if t.timer == nil {
		t.timer = time.AfterFunc(trimDelay, func() { t.trim() })
		return
	}
	t.timer.Reset(trimDelay)
}
