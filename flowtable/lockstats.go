package flowtable

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// LockStats says how long flow-mods held the pipeline's write lock and
// how long walks were held up by them. Walks take no lock (leftright.go):
// a walk is held up only when a writer publishes its change between the
// two loads with which the walk picks its side, and then only for that
// retry. A writer waits for the walks still on the side it replaced
// before it brings that side up to date (DrainMax).
type LockStats struct {
	// ReadWaits counts walks that had to pick their side again because a
	// writer published meanwhile; ReadWaitMax is the longest such wait.
	ReadWaits   uint64
	ReadWaitMax time.Duration
	// WriteHolds counts write-lock holds by flow-mods (Apply), flow
	// expiry, meter-mods and learn; WriteHold is their total and
	// WriteHoldMax the longest, and WriteHoldLog2[i] counts holds of
	// [2^i, 2^(i+1)) ns.
	WriteHolds    uint64
	WriteHold     time.Duration
	WriteHoldMax  time.Duration
	WriteHoldLog2 [lockBuckets]uint64
	// Drains counts writers that found walks still on the side they
	// were about to bring up to date; DrainMax is the longest they waited
	// for them to leave.
	Drains   uint64
	DrainMax time.Duration
}

const lockBuckets = 40 // up to 2^40 ns, 18 minutes

// lockStats are the live counters behind LockStats.
type lockStats struct {
	readWaits, readWaitMax  atomic.Uint64
	holds, holdSum, holdMax atomic.Uint64
	holdLog2                [lockBuckets]atomic.Uint64
	drains, drainMax        atomic.Uint64
}

func atomicMax(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// lockWrite takes the write lock (flow-mods, and control-plane readers
// with the read lock, wait for each other; walks never do) and returns
// when it did.
func (p *Pipeline) lockWrite() time.Time {
	p.mu.Lock()
	p.beginWriteLocked()
	return time.Now()
}

// unlockWrite publishes what the writer changed (leftright.go) and
// releases the write lock taken at held.
func (p *Pipeline) unlockWrite(held time.Time) {
	p.publishLocked()
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
		WriteHolds: load(&s.holds), WriteHold: time.Duration(load(&s.holdSum)), WriteHoldMax: time.Duration(load(&s.holdMax)),
		Drains: load(&s.drains), DrainMax: time.Duration(load(&s.drainMax))}
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
