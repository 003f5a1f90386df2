package flowtable

import (
	"slices"
	"sync"
	"time"
)

// A Stage does a bundle's work while the controller is still sending it:
// the tables its adds make are built as the adds arrive, so that the
// commit, instead of inserting every rule under the write lock between
// commit request and reply, puts the built tables in place and publishes
// them. Open vSwitch inserts each flow at commit; this is where govs gets
// ahead of it.
//
// That shortcut is exact only where the adds fill tables that are empty
// at the point of the commit where the adds begin: tables empty before
// the bundle (an agent's first load, `ovs-ofctl --bundle add-flows` into
// a new bridge) or emptied by a delete of every flow at the bundle's
// start (ovn-controller's bundle on every reconnect). The commit checks
// that under the write lock (another connection may have added flows
// since); when it does not hold, or the bundle has a shape the stage does
// not cover (a flow-mod other than an add, or a group delete, after the
// first add; check_overlap), the commit inserts the staged rules one by
// one as before, with the same result.
//
// What the commit still does per add, in the bundle's order: check the
// groups and meters the flow names (an earlier group-mod of the bundle
// may have added them), give the flow its creation time and insertion
// order, and note its timeouts.
type Stage struct {
	p     *Pipeline
	n     int  // operations staged
	first int  // index of the first add, -1 before it
	off   bool // the bundle has a shape the stage does not cover
	// cleared are the tables a delete of every flow before the first
	// add empties.
	cleared [(NumTables + 63) / 64]uint64
	tables  [NumTables]*table // the staged tables, nil where nothing is added
	// twins are the same tables again, for the other side of the
	// pipeline (leftright.go), which then has nothing left to replay.
	// A stage past maxTwinRules drops them (noTwins): the other side
	// copies the tables after the commit instead (table.clone), off the
	// client's way.
	twins   [NumTables]*table
	noTwins bool
	rules   int        // flows in the staged tables
	adds    int        // adds staged (some replaced by later ones)
	results []OpResult // for the commit (takeResults)
	ops     []FlowOp   // the operations, for the commit (Ops)
	// check are the adds whose actions name groups or meters, in order:
	// the commit validates them where they come in the bundle.
	check []int32
	// ListRemoved asks the commit to list every flow a delete removes
	// (OpResult.Removed: flow monitors report them). Otherwise a delete
	// of every flow lists only those with send_flow_rem, and takes a
	// table that has none whole, without touching its rules (detaches).
	ListRemoved bool
}

// maxTwinRules is the most flows a stage builds twice (Stage.twins).
const maxTwinRules = 8192

// replacedSeq marks, in place of an insertion order (given at commit), a
// staged rule that a later add of its bundle replaced (same table, match
// and priority): it never reaches the tables.
const replacedSeq = ^uint64(0)

// NewStage returns a stage for a bundle about to be staged.
func (p *Pipeline) NewStage() *Stage { return &Stage{p: p, first: -1} }

// Add stages op, the next operation of the bundle. Every operation of
// the bundle goes through Add, in order (also those that will fail), so
// that the stage's indexes are the commit's. An add's rule (FlowOp.Rule)
// goes into the staged table: it belongs to the bundle from here on.
func (s *Stage) Add(op *FlowOp) {
	i := s.n
	s.n++
	// The commit's results, allocated as the bundle comes rather than
	// between commit request and reply. Doubling: append grows a long
	// slice by a quarter at a time, which copies a 100,000-add bundle's
	// operations and results about five times over (and leaves that much
	// garbage for the collector while the client is still sending).
	if len(s.ops) == cap(s.ops) {
		n := max(len(s.ops), 64)
		s.ops = slices.Grow(s.ops, n)
		s.results = slices.Grow(s.results, n)
	}
	s.results = append(s.results, OpResult{})
	s.ops = append(s.ops, *op)
	if s.off {
		return
	}
	switch k := op.Kind; {
	case k == OpAdd:
		s.adds++
		s.add(i, op.Rule)
	case k == OpGroupAdd || k == OpGroupModify:
		// Flows are not touched: the adds around them stay staged.
	case s.first >= 0:
		// A modify or delete (of flows, or a group's with its flows)
		// after the adds would change what they made.
		s.drop()
	case k == OpDelete && op.Filter != nil && op.Filter.selectsAll():
		if op.Filter.Table == 255 {
			for i := range s.cleared {
				s.cleared[i] = ^uint64(0)
			}
		} else if op.Filter.Table < NumTables {
			s.cleared[op.Filter.Table/64] |= 1 << (op.Filter.Table % 64)
		}
	}
}

func (s *Stage) add(i int, r *Rule) {
	if r == nil || r.Table >= NumTables || r.Flags&FlagCheckOverlap != 0 {
		s.drop() // an add the stage cannot build (or one that fails anyway)
		return
	}
	t := s.tables[r.Table]
	if t == nil {
		// Worth building only if the table will be empty where the adds
		// start: a bundle that adds to a full table (an agent's few
		// flows for a new pod) is committed rule by rule anyway.
		if s.cleared[r.Table/64]&(1<<(r.Table%64)) == 0 && !s.p.tableEmpty(r.Table) {
			s.drop()
			return
		}
		t = s.p.spareTable(r.Table)
		s.tables[r.Table] = t
		if !s.noTwins {
			s.twins[r.Table] = s.p.spareTable(r.Table)
		}
	}
	if s.first < 0 {
		s.first = i
	}
	if s.rules == maxTwinRules && !s.noTwins {
		s.noTwins, s.twins = true, [NumTables]*table{}
	}
	twin := s.twins[r.Table]
	// As addLocked: an add replaces the flow of the same match and
	// priority and takes over its counters. That flow is in r's
	// classifier (insertReplacing takes it out) or, with other actions,
	// in the other one.
	c, other := t.hard, t.soft
	if r.IsConjunctive() {
		c, other = t.soft, t.hard
	}
	old := other.findSame(r)
	if old != nil {
		other.remove(old)
	}
	if o := c.insertReplacing(r); o != nil {
		old = o
	}
	if old != nil {
		if twin != nil {
			twin.cls(old).remove(old)
		}
		s.rules--
		if r.Flags&FlagResetCounts == 0 {
			r.Stats = old.Stats
		}
		old.seq = replacedSeq
	}
	if twin != nil {
		twin.cls(r).insert(r)
	}
	s.rules++
	if namesGroupsOrMeters(r.Actions) {
		s.check = append(s.check, int32(i))
	}
}

// drop gives up the stage: the commit inserts rule by rule.
func (s *Stage) drop() {
	s.off = true
	s.tables, s.twins = [NumTables]*table{}, [NumTables]*table{}
	s.check = nil
}

// tableEmpty reports whether table id holds no flow, as walks see it now
// (without the write lock: a hint, the commit checks again).
func (p *Pipeline) tableEmpty(id uint8) bool {
	sd := p.enterWalk()
	t := sd.tables[id]
	empty := t == nil || t.hard.n+t.soft.n == 0
	p.leaveWalk(sd)
	return empty
}

// namesGroupsOrMeters reports whether acts hold an action the commit
// validates against the groups and meters (validateGroupsLocked,
// validateMetersLocked).
func namesGroupsOrMeters(acts []Action) bool {
	for _, a := range acts {
		switch a := a.(type) {
		case *Group, *Meter:
			return true
		case *Controller:
			if a.MeterID != 0 {
				return true
			}
		case *Clone:
			if namesGroupsOrMeters(a.Actions) {
				return true
			}
		case *WriteActions:
			if namesGroupsOrMeters(a.Actions) {
				return true
			}
		}
	}
	return false
}

// firstAdd is the index of the stage's first add if the stage covers the
// n operations being applied, else -1 (also for a nil stage).
func (s *Stage) firstAdd(n int) int {
	if s == nil || s.off || s.n != n {
		return -1
	}
	return s.first
}

// putStageLocked puts the stage's tables in place of the writer side's,
// at the point of the commit where the adds start, if those tables are
// empty there and the limits leave room for every staged flow (then no
// add can fail for room; otherwise the adds go in one by one, which finds
// the one that does). It reports whether it did.
func (p *Pipeline) putStageLocked(st *Stage, undo *[]undoStep) bool {
	cur := p.cur()
	l := &p.Limits
	if l.MaxFlows > 0 && p.nRules+st.rules > l.MaxFlows {
		return false
	}
	for id, t := range st.tables {
		if t == nil {
			continue
		}
		if old := cur.tables[id]; old != nil && old.hard.n+old.soft.n != 0 {
			return false
		}
		tableMax, set := l.TableFlows[uint8(id)]
		if !set {
			tableMax, set = l.MaxFlowsPerTable, l.MaxFlowsPerTable > 0
		}
		if set && t.hard.n+t.soft.n > tableMax {
			return false
		}
	}
	for id, t := range st.tables {
		if t == nil {
			continue
		}
		op := sideOp{put: st.twins[id], table: uint8(id)}
		if st.noTwins {
			op.put, op.clone = t, true
		}
		for _, tb := range []*table{t, st.twins[id]} {
			if tb == nil {
				continue
			}
			// Built before a change of the table's prefix fields: its
			// tries are rebuilt (no walk sees it yet).
			tb.setPrefixFields(p.prefixFor(uint8(id)))
			for _, c := range []*classifier{tb.hard, tb.soft} {
				c.batch = cur.batch
				if c.dormant > 0 {
					// Subtables of a spare table (spareTable) the
					// bundle did not use: dropped at the end of the write.
					cur.batch.dormant = append(cur.batch.dormant, c)
				}
			}
		}
		*undo = append(*undo, undoStep{kind: opPutTable, t: cur.tables[id], id: uint8(id), logAt: len(p.w.log)})
		cur.tables[id] = t
		p.w.log = append(p.w.log, op)
	}
	p.nRules += st.rules
	p.bumpLocked()
	return true
}

// unputTableLocked undoes putStageLocked for one table: the empty table
// it replaced is back, and the other side is not to copy the stage's.
func (p *Pipeline) unputTableLocked(u *undoStep) {
	cur := p.cur()
	t := cur.tables[u.id]
	p.nRules -= t.hard.n + t.soft.n
	for _, c := range []*classifier{t.hard, t.soft} {
		c.each(func(r *Rule) bool {
			delete(p.timed, r)
			return true
		})
	}
	cur.tables[u.id] = u.t
	p.w.log[u.logAt].noop = true // the other side keeps its table
}

// installedLocked does for a staged rule, now in the tables, what
// addLocked does for a rule it inserts.
func (p *Pipeline) installedLocked(r *Rule, now time.Time) {
	r.Stats.Created = now
	r.Stats.LastUsed.Store(now.UnixNano())
	p.seq++
	r.seq = p.seq
	p.noteTimeoutsLocked(r, now)
}

// Tables a stage replaced are kept for the next stage of the same table,
// empty but with their subtables, word lists and hash indexes: the next
// bundle that rebuilds the table (ovn-controller's on every reconnect
// sends the same flows) inserts into them as a delete-all followed by
// adds does in place, instead of allocating all of that again.

// maxSpareSlots bounds the hash index slots a spare table may keep, so
// that a big table replaced once does not pin its empty indexes.
const maxSpareSlots = 1 << 14

// spareTables are the kept tables (two per table id: one per side).
type spareTables struct {
	mu     sync.Mutex
	tables [NumTables][2]*table
}

// spareTable returns a kept table for table id, or a new one.
func (p *Pipeline) spareTable(id uint8) *table {
	sp := &p.spares
	sp.mu.Lock()
	defer sp.mu.Unlock()
	pf := p.prefixFor(id)
	for i, t := range sp.tables[id] {
		if t != nil {
			sp.tables[id][i] = nil
			t.setPrefixFields(pf) // empty: no tries to rebuild
			return t
		}
	}
	return newTable(nil, pf)
}

// keepSpareLocked keeps t, table id replaced by a stage's (p.mu held, t
// out of every side and no walk on it), if it is empty and small enough.
func (p *Pipeline) keepSpareLocked(id uint8, t *table) {
	if t == nil || t.hard.n+t.soft.n != 0 {
		return
	}
	slots := 0
	for _, c := range []*classifier{t.hard, t.soft} {
		for _, st := range c.byMask {
			slots += len(st.buckets.slots)
		}
	}
	if slots > maxSpareSlots {
		return
	}
	for _, c := range []*classifier{t.hard, t.soft} {
		// The batch's sweep would drop its empty subtables: they are
		// what the table is kept for. Stages use it without the lock.
		if i := slices.Index(p.batch.dormant, c); i >= 0 {
			p.batch.dormant = slices.Delete(p.batch.dormant, i, i+1)
		}
		c.batch, c.last = nil, nil
		c.dormant = len(c.byMask)
		clear(c.subtables)
		c.subtables = c.subtables[:0]
	}
	sp := &p.spares
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for i, x := range sp.tables[id] {
		if x == nil {
			sp.tables[id][i] = t
			return
		}
	}
}

// detaches reports whether a delete of every flow in a commit of s takes
// table t whole (detachTableLocked) rather than flow by flow: nobody
// needs the list of its flows. Then the commit touches none of the old
// flows' memory, which after minutes without a change is out of the
// caches (ovn-controller's bundle on reconnect deletes every flow).
func (s *Stage) detaches(t *table) bool {
	return s != nil && !s.ListRemoved && t.hard.flowRem+t.soft.flowRem == 0 && t.hard.n+t.soft.n > 0
}

// detachTableLocked empties table id of the writer's side by taking it
// out whole; the other side does the same when it catches up. Both old
// tables are emptied and kept as spares then, off the commit's way.
func (p *Pipeline) detachTableLocked(id uint8, undo *[]undoStep) {
	cur := p.cur()
	t := cur.tables[id]
	p.nRules -= t.hard.n + t.soft.n
	*undo = append(*undo, undoStep{kind: opDetachTable, t: t, id: id, logAt: len(p.w.log)})
	cur.tables[id] = nil
	p.w.log = append(p.w.log, sideOp{table: id}) // put nil: empty
	p.w.detached = append(p.w.detached, idTable{id, t})
}

// undetachTableLocked puts back a table detachTableLocked took out.
func (p *Pipeline) undetachTableLocked(u *undoStep) {
	t := u.t
	p.nRules += t.hard.n + t.soft.n
	p.cur().tables[u.id] = t
	p.w.log[u.logAt].noop = true
	if i := slices.Index(p.w.detached, idTable{u.id, t}); i >= 0 {
		p.w.detached = slices.Delete(p.w.detached, i, i+1)
	}
}

// recycleTableLocked empties t, a table out of both sides with no walk
// on it, and keeps it as a spare (catchUpLocked, with the batch on).
func (p *Pipeline) recycleTableLocked(id uint8, t *table) {
	if t == nil {
		return
	}
	t.hard.clear()
	t.soft.clear()
	p.keepSpareLocked(id, t)
}

// takeResults returns the results of a commit of n operations: the
// stage's, if it saw them all (once), else new ones.
func (s *Stage) takeResults(n int) []OpResult {
	if s == nil || len(s.results) != n {
		return make([]OpResult, n)
	}
	r := s.results
	s.results = nil
	return r
}

// Ops returns the operations staged, in order: what to apply at commit.
func (s *Stage) Ops() []FlowOp { return s.ops }

// clone copies t for the other side (leftright.go): the same rules in
// subtables, hash indexes and buckets of its own, in the same order, so
// that lookups on either side find the same rules. Called at catch-up:
// nothing changed t since it was put in place (the write that put it
// ended there, and the next write catches up first).
func (t *table) clone(batch *changeBatch) *table {
	return &table{hard: t.hard.clone(batch), soft: t.soft.clone(batch)}
}

func (c *classifier) clone(batch *changeBatch) *classifier {
	n := &classifier{byMask: make(map[Key]*subtable, len(c.subtables)), n: c.n, soft: c.soft,
		repeated: c.repeated, flowRem: c.flowRem, batch: batch, subtables: make([]*subtable, len(c.subtables)),
		prefix: c.prefix}
	for j := range c.tries {
		n.tries[j] = c.tries[j].clone()
	}
	chunk := make([]*Rule, c.n) // every bucket, carved from one array
	for i, st := range c.subtables {
		// The word lists never change after newSubtable: shared.
		ns := &subtable{mask: st.mask, words: st.words, maskw: st.maskw, last: st.last,
			stageIDs: st.stageIDs, prefixes: st.prefixes, maxPriority: st.maxPriority, nMax: st.nMax, n: st.n}
		// The stages' word lists are shared too; their counted hashes
		// (staged lookup, stages.go) are the rules', copied.
		ns.stages = make([]stageIndex, len(st.stages))
		for k, si := range st.stages {
			ns.stages[k] = stageIndex{words: si.words, upto: si.upto, hashes: si.hashes.clone()}
		}
		ns.buckets = hindex{slots: make([]hslot, len(st.buckets.slots)), n: st.buckets.n, shift: st.buckets.shift}
		for j, sl := range st.buckets.slots {
			if sl.rules != nil {
				k := copy(chunk, sl.rules)
				ns.buckets.slots[j] = hslot{hash: sl.hash, rules: chunk[:k:k]}
				chunk = chunk[k:]
			}
		}
		n.subtables[i] = ns
		n.byMask[st.mask] = ns
	}
	return n
}
