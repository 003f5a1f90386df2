package flowtable

import "sync/atomic"

// TableCounters are per-table lookup and match counts (OpenFlow table
// stats lookup_count and matched_count). A packet loop owns one set (its
// flow cache registers it with NewTableCounters) and is its only writer:
// an increment is a plain load and store, not a locked instruction, and
// no cache line bounces between cores. TableStats folds every set on read,
// as per-CPU counters are folded.
type TableCounters struct {
	// Misses rather than matches: a packet's lookups mostly match, so
	// the common case writes one counter.
	lookup, missed [NumTables]atomic.Uint64
	shared         bool // written by any goroutine: use atomic adds
}

// TableLookup is one table lookup of a recorded run, for a flow cache to
// count again on each hit.
type TableLookup struct {
	Table   uint8
	Matched bool
}

func (c *TableCounters) add(table uint8, matched bool, n uint64) {
	if c.shared {
		c.lookup[table].Add(n)
		if !matched {
			c.missed[table].Add(n)
		}
		return
	}
	c.lookup[table].Store(c.lookup[table].Load() + n)
	if !matched {
		c.missed[table].Store(c.missed[table].Load() + n)
	}
}

// AddLookups counts the lookups of a cached segment n more times (a flow
// cache calls it when it flushes an entry's hits).
func (c *TableCounters) AddLookups(ls []TableLookup, n uint64) {
	for _, l := range ls {
		c.add(l.Table, l.Matched, n)
	}
}

// NewTableCounters returns counters for one packet loop, counted in
// TableStats from now on. Only one goroutine may write them.
func (p *Pipeline) NewTableCounters() *TableCounters {
	c := &TableCounters{}
	p.countersMu.Lock()
	p.counters = append(p.counters, c)
	p.countersMu.Unlock()
	return c
}

// ReleaseTableCounters folds a stopped packet loop's counters into the
// pipeline's shared set and forgets them, so deleting and adding ports
// keeps neither memory nor work per read growing.
func (p *Pipeline) ReleaseTableCounters(c *TableCounters) {
	if c == nil {
		return
	}
	p.countersMu.Lock()
	defer p.countersMu.Unlock()
	for i, x := range p.counters {
		if x == c {
			p.counters = append(p.counters[:i], p.counters[i+1:]...)
			break
		}
	}
	for t := range c.lookup {
		if n := c.lookup[t].Load(); n != 0 {
			p.sharedCounters.lookup[t].Add(n)
		}
		if n := c.missed[t].Load(); n != 0 {
			p.sharedCounters.missed[t].Add(n)
		}
	}
}

// TableStat is one table's statistics.
type TableStat struct {
	Active  int // flows in the table
	Lookups uint64
	Matched uint64
}

// TableStats returns the statistics of every table.
func (p *Pipeline) TableStats() [NumTables]TableStat {
	var out [NumTables]TableStat
	p.mu.RLock()
	for id, t := range p.cur().tables {
		if t != nil {
			out[id].Active = t.hard.n + t.soft.n
		}
	}
	p.mu.RUnlock()
	// Held while summing, so a set released meanwhile (its counts moved
	// to the shared set) is counted exactly once.
	p.countersMu.Lock()
	defer p.countersMu.Unlock()
	sets := append([]*TableCounters{&p.sharedCounters}, p.counters...)
	for _, c := range sets {
		for id := range out {
			// Misses first: a lookup counted between the two loads then
			// cannot make matched exceed what was looked up.
			missed := c.missed[id].Load()
			out[id].Lookups += c.lookup[id].Load()
			out[id].Matched -= missed
		}
	}
	for id := range out {
		out[id].Matched += out[id].Lookups
	}
	return out
}

// countLookup counts one lookup in table id, and records it for the flow
// cache when the run is recorded.
func (x *xlate) countLookup(id uint8, matched bool) {
	if x.dry || x.counters == nil {
		return // a trace counts nothing
	}
	x.counters.add(id, matched, 1)
	if x.r != nil {
		s := x.r.seg()
		s.Lookups = append(s.Lookups, TableLookup{Table: id, Matched: matched})
	}
}

// NumTableCounterSets is how many packet loops' counter sets are live.
func (p *Pipeline) NumTableCounterSets() int {
	p.countersMu.Lock()
	defer p.countersMu.Unlock()
	return len(p.counters)
}
