package conntrack

import (
	"sync"
	"time"
)

// Expiry.
//
// Lookups treat a connection whose expiration time has passed as gone, so
// timeouts are exact whatever the sweeper does; the sweeper only gives the
// memory and the limit counts back. Each shard has a hashed timing wheel of
// wheelSlots lists, one per tick (Config.SweepTick, 250ms by default). A
// connection sits in the slot of the tick of its expiration as it was when it
// was last placed; packets only move the expiration time (an atomic store),
// never the list. When the sweeper reaches a slot it frees the connections
// that have expired and moves the others to the slot of their current
// expiration. The work per sweep is proportional to the connections whose
// (old) deadline came up, never a pass over every connection, and each lock
// hold is bounded by sweepBudget.
//
// A connection whose timeout got shorter (established -> closing) stays in
// its old slot until the wheel comes around (at most wheelSlots ticks, 64 s
// by default) and is freed then: it is invisible to lookups in between.
const (
	wheelSlots  = 256
	sweepBudget = 1024
	sweepBatch  = 128
)

func (s *shard) slotOf(exp, tick int64) uint16 {
	return uint16(uint64(exp/tick) % wheelSlots)
}

// wheelLink puts c (local index idx) at the head of slot sl. Caller holds s.mu.
func (s *shard) wheelLink(idx uint32, c *conn, sl uint16) {
	head := s.wheel[sl]
	c.wslot = sl
	c.prev = 0
	c.next = head
	if head != 0 {
		s.local(head).prev = idx
	}
	s.wheel[sl] = idx
}

// wheelUnlink removes c (local index idx) from its slot list, moving the
// sweep cursor past it if it points there. Caller holds s.mu.
func (s *shard) wheelUnlink(idx uint32, c *conn) {
	if c.wslot == noSlot {
		return
	}
	if s.cursor == idx {
		s.cursor = c.next
		if s.cursor == 0 {
			s.cursorEnd = true
		}
	}
	if c.prev != 0 {
		s.local(c.prev).next = c.next
	} else {
		s.wheel[c.wslot] = c.next
	}
	if c.next != 0 {
		s.local(c.next).prev = c.prev
	}
	c.wslot = noSlot
	c.next, c.prev = 0, 0
}

type victim struct{ ref, gen uint32 }

// Sweep frees connections that expired at or before now and returns how many
// it freed. It is incremental: call it periodically (the background sweeper
// started by StartSweeper does, every SweepTick).
func (t *Tracker) Sweep(now int64) int {
	freed := 0
	var batch [sweepBatch]victim
	for i := range t.shards {
		for {
			n, more := t.sweepShard(i, now, batch[:0])
			freed += t.freeVictims(n, now)
			if !more {
				break
			}
		}
	}
	return freed
}

// sweepShard walks the wheel slots of shard i whose tick has fully elapsed,
// collecting expired connections (at most len(cap(batch))) and re-filing the
// others. more reports that it stopped early.
func (t *Tracker) sweepShard(i int, now int64, batch []victim) (_ []victim, more bool) {
	s := &t.shards[i]
	tick := t.tick
	nowTick := now / tick // ticks < nowTick have fully elapsed
	budget := sweepBudget
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ticking || nowTick-s.tick > wheelSlots+1 {
		s.ticking = true
		// First sweep, or a long pause: visit every slot once.
		s.tick = nowTick - wheelSlots - 1
		s.cursor, s.cursorEnd = 0, false
	}
	for s.tick+1 < nowTick {
		cur := s.tick + 1
		sl := uint16(uint64(cur) % wheelSlots)
		// Resume where the last call stopped in this slot: entries before
		// the cursor were examined and stay (due a turn of the wheel later).
		idx := s.wheel[sl]
		if s.cursor != 0 || s.cursorEnd {
			idx = s.cursor
		}
		for idx != 0 {
			if budget == 0 || len(batch) == cap(batch) {
				s.cursor, s.cursorEnd = idx, false
				return batch, true
			}
			budget--
			c := s.local(idx)
			next := c.next
			exp := c.exp.Load()
			switch {
			case exp <= now:
				s.wheelUnlink(idx, c)
				batch = append(batch, victim{mkRef(i, idx), c.gen})
			case s.slotOf(exp, tick) != sl:
				s.wheelUnlink(idx, c)
				s.wheelLink(idx, c, s.slotOf(exp, tick))
			}
			idx = next
		}
		s.cursor, s.cursorEnd = 0, false
		s.tick = cur
	}
	return batch, false
}

// freeVictims frees the collected connections that are still expired; one
// refreshed in the meantime goes back on the wheel.
func (t *Tracker) freeVictims(vs []victim, now int64) int {
	n := 0
	for _, v := range vs {
		c, a, b, ok := t.lockConn(v.ref, v.gen)
		if !ok {
			continue
		}
		if exp := c.exp.Load(); exp > now {
			s := &t.shards[a]
			if c.wslot == noSlot {
				s.wheelLink(v.ref&refMask, c, s.slotOf(exp, t.tick))
			}
			t.unlockPair(a, b)
			continue
		}
		t.freeConn(v.ref, c)
		t.unlockPair(a, b)
		n++
	}
	return n
}

// StartSweeper runs Sweep every SweepTick on a goroutine until stop is
// called. stop waits for the goroutine to end.
func (t *Tracker) StartSweeper() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(time.Duration(t.tick))
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				t.Sweep(t.clock())
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}
