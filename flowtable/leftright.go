package flowtable

import (
	"maps"
	"runtime"
	"sync/atomic"
	"time"
)

// Walks never wait for flow-mods. The pipeline keeps two copies of what a
// walk reads (a side: the tables' classifiers, the groups and the meters),
// sharing the rules themselves, and runs the left-right scheme: walks read
// the active side without a lock; a writer (under p.mu) changes the other
// side and publishes it with one atomic store. The side it replaced gets
// the same inserts and removals replayed later, once the walks that were
// on it have left: at the next write, or from a timer soon after (at once
// after a bulk change, so that deleted flows do not stay alive). A walk
// therefore sees the tables either entirely before or entirely after a
// flow-mod batch (an atomic bundle included), and no writer, however long
// (a 119k-flow bundle), ever holds it up: the writer pays, twice, for the
// change it makes, and almost never waits for a walk.
//
// Rules are immutable while a side can see them: a modify installs a copy
// of the rule with the new actions (sharing its counters), so a walk on the
// old side keeps running the old actions. Group and meter maps are copied
// on the first change of a write and shared by both sides afterwards.
//
// The flow cache: Generation is bumped after the new side is published, so
// a decision cached under the new generation was made on the new side.

// side is one copy of what a walk reads.
type side struct {
	tables [NumTables]*table
	groups map[uint32]*GroupEntry
	meters map[uint32]*MeterEntry
	batch  *changeBatch // the pipeline's, for the classifiers (classifier.go)
	p      *Pipeline    // for the tables' prefix fields
}

func (s *side) table(id uint8) *table {
	t := s.tables[id]
	if t == nil {
		t = newTable(s.batch, s.p.prefixFor(id))
		s.tables[id] = t
	}
	return t
}

// sideOp is a change of the writer's side, replayed on the other: an
// insert or a removal of r, (clear) every rule of one classifier of a
// table removed at once, or (r nil, neither) table replaced by put, the
// twin of a bundle's staged table (stage.go; nil: by an empty table) or,
// with clone, a copy of the staged table itself.
type sideOp struct {
	r      *Rule
	put    *table
	insert bool
	clear  bool
	table  uint8
	soft   bool
	noop   bool // undone: nothing to replay
	clone  bool // put is the writer's table itself: the other side copies it
}

// readerCount counts the walks on one side, on a cache line of its own.
type readerCount struct {
	n atomic.Int64
	_ [56]byte
}

// writeState is what writers track (guarded by p.mu).
type writeState struct {
	// latest is the side with the latest state: the one being written
	// during a write, the active one otherwise.
	latest uint32
	// log is what the other side lacks (replayed by catchUpLocked).
	log []sideOp
	// cleared counts the rules the log's clears removed: with the log's
	// length, the size of the change.
	cleared int
	// detached are the writer's tables a delete of every flow took out
	// whole (stage.go), emptied and kept when the other side catches up.
	detached                 []idTable
	groupsOwned, metersOwned bool // the writer's side has its own copy of the map
	mapsChanged, bump        bool
	timer                    *time.Timer
}

// idTable is a table and its id.
type idTable struct {
	id uint8
	t  *table
}

// catchUpDelay is how long a replaced side may lag when no other write
// comes: enough for the walks on it to have left.
const catchUpDelay = 5 * time.Millisecond

// bulkReplay is the size of a change replayed at once rather than later.
const bulkReplay = 4096

// cur is the side with the latest state, which writers change and
// control-plane readers (dumps, stats, under p.mu) read; walks read the
// active side (enterWalk).
func (p *Pipeline) cur() *side { return &p.sides[p.w.latest] }

// enterWalk registers a walk on the active side and returns it; the walk
// calls leaveWalk with it when done. It never blocks: it retries only if a
// writer published the other side between its two loads.
func (p *Pipeline) enterWalk() *side {
	i := p.active.Load()
	p.readers[i].n.Add(1)
	if p.active.Load() == i {
		return &p.sides[i]
	}
	start := time.Now()
	for {
		p.readers[i].n.Add(-1)
		i = p.active.Load()
		p.readers[i].n.Add(1)
		if p.active.Load() == i {
			break
		}
	}
	p.locks.readWaits.Add(1)
	atomicMax(&p.locks.readWaitMax, uint64(time.Since(start)))
	return &p.sides[i]
}

func (p *Pipeline) leaveWalk(s *side) {
	i := 0
	if s == &p.sides[1] {
		i = 1
	}
	p.readers[i].n.Add(-1)
}

// insertRule and removeRule change the writer's side (p.mu held) and
// log the change for the other.
func (p *Pipeline) insertRule(t *table, r *Rule) {
	t.cls(r).insert(r)
	p.w.log = append(p.w.log, sideOp{r: r, insert: true})
}

func (p *Pipeline) removeRule(t *table, r *Rule) {
	t.cls(r).remove(r)
	p.w.log = append(p.w.log, sideOp{r: r})
}

// clearRules empties c, the hard or soft classifier of table id of the
// writer's side, in one go (p.mu held), and logs it for the other side,
// where it is replayed the same way.
func (p *Pipeline) clearRules(id uint8, c *classifier) {
	if c.n == 0 {
		return
	}
	p.w.cleared += c.n
	c.clear()
	p.w.log = append(p.w.log, sideOp{clear: true, table: id, soft: c.soft})
}

// writeGroups returns the writer's group map, copied first if the other
// side shares it.
func (p *Pipeline) writeGroups() map[uint32]*GroupEntry {
	s := p.cur()
	if !p.w.groupsOwned {
		s.groups = maps.Clone(s.groups)
		p.w.groupsOwned = true
	}
	p.w.mapsChanged = true
	return s.groups
}

// writeMeters is writeGroups for the meters.
func (p *Pipeline) writeMeters() map[uint32]*MeterEntry {
	s := p.cur()
	if !p.w.metersOwned {
		s.meters = maps.Clone(s.meters)
		if s.meters == nil {
			s.meters = map[uint32]*MeterEntry{}
		}
		p.w.metersOwned = true
	}
	p.w.mapsChanged = true
	return s.meters
}

// bumpLocked asks for a generation bump once the change is published.
func (p *Pipeline) bumpLocked() { p.w.bump = true }

// beginWriteLocked prepares the inactive side for a writer: brought up to
// date, it becomes the latest.
func (p *Pipeline) beginWriteLocked() {
	p.catchUpLocked()
	p.w.latest = 1 - p.active.Load()
}

// publishLocked makes the writer's side the one walks read and bumps the
// generation if asked. The replaced side is replayed later.
func (p *Pipeline) publishLocked() {
	w := &p.w
	if len(w.log) > 0 || w.mapsChanged {
		p.active.Store(w.latest)
		w.mapsChanged = false
		switch {
		case len(w.log)+w.cleared > bulkReplay:
			defer p.catchUpLocked() // after the bump: the walks see the change first
		case w.timer == nil:
			w.timer = time.AfterFunc(catchUpDelay, p.catchUp)
		default:
			w.timer.Reset(catchUpDelay)
		}
	} else {
		w.latest = p.active.Load() // nothing changed: both sides are the same
	}
	if w.bump {
		w.bump = false
		p.BumpGeneration()
	}
}

// catchUp replays what the inactive side lacks.
func (p *Pipeline) catchUp() {
	p.mu.Lock()
	p.catchUpLocked()
	p.mu.Unlock()
}

// catchUpLocked waits for the walks on the inactive side to leave (they
// have mostly long gone) and replays on it the changes of the active one.
func (p *Pipeline) catchUpLocked() {
	w := &p.w
	if len(w.log) == 0 && !w.groupsOwned && !w.metersOwned && len(w.detached) == 0 {
		return
	}
	a := p.active.Load()
	p.drain(1 - a)
	s, n := &p.sides[1-a], &p.sides[a]
	// The replay is a batch too (classifier.go): the subtables a
	// delete-all empties are there for the adds that follow it.
	if !p.batch.on {
		p.batch.on = true
		defer p.batch.sweep()
	}
	for _, op := range w.log {
		switch {
		case op.noop:
		case op.clear:
			if t := s.tables[op.table]; t != nil {
				if op.soft {
					t.soft.clear()
				} else {
					t.hard.clear()
				}
			}
		case op.r == nil:
			old := s.tables[op.table]
			s.tables[op.table] = op.put // nil: empty, made again on use
			if op.clone {
				s.tables[op.table] = op.put.clone(s.batch)
			}
			p.recycleTableLocked(op.table, old)
		case op.insert:
			s.table(op.r.Table).cls(op.r).insert(op.r)
		default:
			s.table(op.r.Table).cls(op.r).remove(op.r)
		}
	}
	for _, d := range w.detached {
		p.recycleTableLocked(d.id, d.t)
	}
	clear(w.detached)
	w.detached = w.detached[:0]
	s.groups, s.meters = n.groups, n.meters
	if cap(w.log) > bulkReplay {
		w.log = nil // a bulk change's log: do not keep it
	} else {
		clear(w.log)
		w.log = w.log[:0]
	}
	w.cleared = 0
	w.groupsOwned, w.metersOwned = false, false
	w.latest = a
}

// drain waits until no walk is on side i: yielding first (walks take
// microseconds), then sleeping, as a walk can be off the CPU for longer.
func (p *Pipeline) drain(i uint32) {
	c := &p.readers[i].n
	if c.Load() == 0 {
		return
	}
	start := time.Now()
	for spins := 0; c.Load() != 0; spins++ {
		if spins < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
	p.locks.drains.Add(1)
	atomicMax(&p.locks.drainMax, uint64(time.Since(start)))
}
