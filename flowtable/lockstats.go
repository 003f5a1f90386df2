package flowtable

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"time"
)

// LockStats says how long packet walks waited for the pipeline's lock and
// how long flow-mods held it: a walk (an upcall of the datapath) can only
// wait while a writer holds the lock, so WriteHoldMax bounds the stall a
// flow-mod causes on the packet path. Cheap enough to be always on: an
// uncontended walk takes the lock with TryRLock and reads no clock.
type LockStats struct {
	// ReadWaits counts walks that found the lock taken (or wanted) by a
	// writer; ReadWaitMax is the longest such wait.
	ReadWaits   uint64
	ReadWaitMax time.Duration
	// WriteHolds counts write-lock holds by flow-mods (Apply) and flow
	// expiry; WriteHold is their total and WriteHoldMax the longest, and
	// WriteHoldLog2[i] counts holds of [2^i, 2^(i+1)) ns.
	WriteHolds    uint64
	WriteHold     time.Duration
	WriteHoldMax  time.Duration
	WriteHoldLog2 [lockBuckets]uint64
}

const lockBuckets = 40 // up to 2^40 ns, 18 minutes

// lockStats are the live counters behind LockStats.
type lockStats struct {
	readWaits, readWaitMax  atomic.Uint64
	holds, holdSum, holdMax atomic.Uint64
	holdLog2                [lockBuckets]atomic.Uint64
}

func atomicMax(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// rlock takes the read lock for a walk, timing the wait if there is one.
func (p *Pipeline) rlock() {
	if p.mu.TryRLock() {
		return
	}
	start := time.Now()
	p.mu.RLock()
	p.locks.readWaits.Add(1)
	atomicMax(&p.locks.readWaitMax, uint64(time.Since(start)))
}

// lockWrite takes the write lock and returns when it did. A writer queued
// in Lock stops new walks until it holds the lock, and on a busy machine
// the OS can keep its thread off the CPU for milliseconds after the last
// walk left: walks would wait all that time for a flow-mod that has not
// even started. So a writer first asks with TryLock between walks (they
// hold the lock for microseconds) and queues only after lockPoll. In
// BenchmarkScaleChurnDatapath (1,000 flow-mods/s, 6 runs each) the longest
// wait of a walk went from 1-143 ms (median 11) to 0.04-6 ms (median 1.2).
// (Walks polling too, rather than parking, made holds longer.)
func (p *Pipeline) lockWrite() time.Time {
	if !p.mu.TryLock() {
		start := time.Now()
		for i := 1; ; i++ {
			runtime.Gosched()
			if p.mu.TryLock() {
				break
			}
			if i%16 == 0 && time.Since(start) > lockPoll {
				p.mu.Lock()
				break
			}
		}
	}
	return time.Now()
}

// lockPoll bounds how long a writer asks for the lock before it queues,
// so that a stream of walks cannot starve it.
const lockPoll = 200 * time.Microsecond

// unlockWrite releases the write lock taken at held.
func (p *Pipeline) unlockWrite(held time.Time) {
	d := uint64(time.Since(held))
	p.mu.Unlock()
	s := &p.locks
	s.holds.Add(1)
	s.holdSum.Add(d)
	atomicMax(&s.holdMax, d)
	s.holdLog2[min(bits.Len64(d), lockBuckets)-1+boolInt(d == 0)].Add(1)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// LockStats returns the lock counters; reset also clears them, so that
// the maxima cover the next period only.
func (p *Pipeline) LockStats(reset bool) LockStats {
	s := &p.locks
	load := func(a *atomic.Uint64) uint64 {
		if reset {
			return a.Swap(0)
		}
		return a.Load()
	}
	out := LockStats{ReadWaits: load(&s.readWaits), ReadWaitMax: time.Duration(load(&s.readWaitMax)),
		WriteHolds: load(&s.holds), WriteHold: time.Duration(load(&s.holdSum)), WriteHoldMax: time.Duration(load(&s.holdMax))}
	for i := range s.holdLog2 {
		out.WriteHoldLog2[i] = load(&s.holdLog2[i])
	}
	return out
}

// WriteHoldQuantile returns an upper bound of the q-quantile of the write
// holds (the top of its power-of-two bucket), 0 without holds.
func (s *LockStats) WriteHoldQuantile(q float64) time.Duration {
	if s.WriteHolds == 0 {
		return 0
	}
	rank := uint64(q * float64(s.WriteHolds))
	var n uint64
	for i, c := range s.WriteHoldLog2 {
		n += c
		if n > rank {
			return min(time.Duration(1)<<(i+1), s.WriteHoldMax)
		}
	}
	return s.WriteHoldMax
}
