package flowtable

import (
	"errors"
	"fmt"
)

// FlowOpKind is a flow-mod command.
type FlowOpKind uint8

const (
	OpAdd FlowOpKind = iota
	OpModify
	OpModifyStrict
	OpDelete
	OpDeleteStrict
	// Group-mods, so a bundle mixing them with flow-mods is atomic too.
	OpGroupAdd    // add Group; ErrGroupExists if its id is taken
	OpGroupModify // replace the group with Group's id; ErrUnknownGroup if none
	OpGroupDelete // delete group GroupID (GroupAllID: all) and the flows that use it
)

// ErrGroupExists is an OpGroupAdd for a group id in use.
var ErrGroupExists = errors.New("group already exists")

// FlowOp is one flow-mod, for Apply.
type FlowOp struct {
	Kind FlowOpKind
	// Flow is the flow to add, or the new actions (and flags) for modify.
	Flow *Flow
	// Rule is, for an add, the flow already made into the rule it
	// installs (NewRule), in place of Flow, which may then be nil. A
	// bundle stages its adds this way: a rule keeps only the words its
	// match uses, where a Flow carries the whole 832-byte match, so
	// 100,000 staged adds hold ~60 MB less until the commit (and the
	// collector scans that much less while they wait). A rule is
	// installed at most once.
	Rule *Rule
	// Filter selects the flows a modify or delete acts on (adds ignore
	// it). It is a pointer because a filter carries a whole match: a
	// bundle of adds would otherwise copy ~1 KB per operation for nothing.
	Filter *FlowFilter
	// ResetCounts: modify clears the counters of the flows it changes.
	ResetCounts bool
	// SetCookie: modify also replaces the cookie with Flow.Cookie
	// (OpenFlow 1.0 and Nicira flow-mods do; 1.1+ never change it).
	SetCookie bool

	// Group is the group an OpGroupAdd or OpGroupModify installs;
	// GroupID the one an OpGroupDelete removes.
	Group   *GroupEntry
	GroupID uint32
}

// table is the table an add goes to.
func (op *FlowOp) table() uint8 {
	if op.Rule != nil {
		return op.Rule.Table
	}
	return op.Flow.Table
}

// OpResult reports what an operation did.
type OpResult struct {
	Removed  []*Rule // deleted flows (for flow-removed messages)
	Modified int
	// Added is the flow an add installed; Changed the flows a modify
	// changed (both for flow monitors).
	Added   *Rule
	Changed []*Rule
}

// isGroupOp reports whether k is a group-mod.
func isGroupOp(k FlowOpKind) bool { return k >= OpGroupAdd }

// OpError says which operation of a batch failed and why.
type OpError struct {
	Index int
	Err   error
}

func (e *OpError) Error() string { return fmt.Sprintf("flow-mod %d: %v", e.Index, e.Err) }
func (e *OpError) Unwrap() error { return e.Err }

// undoStep records how to revert one change of an Apply batch.
type undoStep struct {
	kind FlowOpKind // OpAdd, OpModify, OpDelete or a group kind
	t    *table
	r    *Rule // the rule added, modified or removed
	// old is the rule an add replaced (nil if none), or the rule a modify
	// replaced with r.
	old *Rule
	// packets and bytes are a modified rule's counters before.
	packets, bytes uint64
	// group is the group an OpGroupAdd added (to remove), or the one an
	// OpGroupModify replaced or an OpGroupDelete removed (to put back).
	group *GroupEntry
	// id and logAt are, for opPutTable, the table a stage's table
	// replaced (t, empty or nil) and where the side log has the change.
	id    uint8
	logAt int
}

// opPutTable is the undo step of a stage's table put in place,
// opDetachTable of a table a delete of every flow took whole.
const (
	opPutTable FlowOpKind = 255 - iota
	opDetachTable
)

// Apply runs flow-mods atomically, in order, under one lock: if one fails,
// every change made by the earlier ones is undone and nothing is visible to
// packets in between (OpenFlow atomic bundles). Readers see either the
// state before or the state after.
func (p *Pipeline) Apply(ops []FlowOp) ([]OpResult, error) { return p.ApplyStaged(ops, nil) }

// ApplyStaged is Apply of a bundle whose operations went through st
// (NewStage, Stage.Add) as they were staged: where the stage applies, the
// adds' tables are put in place whole (stage.go). st may be nil.
func (p *Pipeline) ApplyStaged(ops []FlowOp, st *Stage) ([]OpResult, error) {
	defer p.unlockWrite(p.lockWrite())
	p.batch.on = true
	defer p.batch.sweep()
	deletes := false
	for i := range ops {
		switch k := ops[i].Kind; {
		case k == OpAdd:
			if ops[i].Flow == nil && ops[i].Rule == nil {
				return nil, &OpError{i, errors.New("add without a flow")}
			}
			if ops[i].table() >= NumTables {
				return nil, &OpError{i, ErrBadTable}
			}
		case k == OpGroupAdd || k == OpGroupModify:
			if ops[i].Group == nil {
				return nil, &OpError{i, fmt.Errorf("group-mod kind %d without a group", k)}
			}
			if err := validateGroup(ops[i].Group); err != nil {
				return nil, &OpError{i, err}
			}
		case isGroupOp(k):
			deletes = deletes || k == OpGroupDelete
		case ops[i].Filter == nil:
			return nil, &OpError{i, fmt.Errorf("flow-mod kind %d without a filter", k)}
		default:
			deletes = deletes || k == OpDelete || k == OpDeleteStrict
		}
	}
	n := len(ops)
	if st.firstAdd(len(ops)) >= 0 {
		// Staged adds mostly need no undo step each (putStageLocked).
		n -= st.adds
	}
	if deletes && (st == nil || st.ListRemoved) {
		// Room for deleting every flow (ovn-controller's bundles start
		// with a delete-all): the undo log is not copied as it grows.
		// (A stage's commit takes most emptied tables whole.)
		n += p.nRules
	}
	undo := make([]undoStep, 0, n+8)
	results := st.takeResults(len(ops))
	now := p.Now() // one creation time for the whole batch, as it is atomic
	fail := func(i int, err error) ([]OpResult, error) {
		for j := len(undo) - 1; j >= 0; j-- {
			p.undoLocked(&undo[j])
		}
		return nil, &OpError{i, err}
	}
	var staged Flow // an add's flow rebuilt from its staged Rule
	// built: the stage's tables are in place, its adds only need their
	// checks and bookkeeping; check is where its next checked add is.
	built, check := false, 0
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case OpAdd:
			if i == st.firstAdd(len(ops)) {
				built = p.putStageLocked(st, &undo)
			}
			if built {
				r := op.Rule
				if check < len(st.check) && int(st.check[check]) == i {
					check++
					if err := p.validateGroupsLocked(r.Actions); err != nil {
						return fail(i, err)
					}
					if err := p.validateMetersLocked(r.Actions); err != nil {
						return fail(i, err)
					}
				}
				results[i].Added = r
				if r.seq != replacedSeq {
					p.installedLocked(r, now)
				}
				break
			}
			r := op.Rule
			if r == nil {
				r = newRule(op.Flow)
			}
			// Checked in order: an earlier group-mod of the batch may
			// have added or removed a group the flow uses.
			if err := p.validateGroupsLocked(r.Actions); err != nil {
				return fail(i, err)
			}
			if err := p.validateMetersLocked(r.Actions); err != nil {
				return fail(i, err)
			}
			if r.Flags&FlagCheckOverlap != 0 {
				// The whole match is needed: a staged add's is rebuilt.
				f := op.Flow
				if f == nil {
					r.flowInto(&staged)
					f = &staged
				}
				if p.overlapsLocked(f) {
					return fail(i, ErrOverlap)
				}
			}
			if err := p.roomForLocked(r); err != nil {
				return fail(i, err)
			}
			r, old := p.addLocked(r, now)
			results[i].Added = r
			undo = append(undo, undoStep{kind: OpAdd, t: p.cur().tables[r.Table], r: r, old: old})
		case OpModify, OpModifyStrict:
			if err := p.validateMetersLocked(op.Flow.Actions); err != nil {
				return fail(i, err)
			}
			ff := *op.Filter
			ff.Strict = op.Kind == OpModifyStrict
			p.forEachSelected(&ff, func(t *table, r *Rule) {
				// Walks on the other side may be running r: it stays as
				// it is and a copy with the new actions takes its place.
				cookie := r.Cookie
				if op.SetCookie {
					cookie = op.Flow.Cookie
				}
				nr := r.withActions(detachActions(op.Flow.Actions), cookie)
				step := undoStep{kind: OpModify, t: t, r: nr, old: r,
					packets: r.Stats.Packets.Load(), bytes: r.Stats.Bytes.Load()}
				p.removeRule(t, r)
				p.insertRule(t, nr)
				p.moveTimed(r, nr)
				if op.ResetCounts {
					nr.Stats.Packets.Store(0)
					nr.Stats.Bytes.Store(0)
				}
				results[i].Modified++
				results[i].Changed = append(results[i].Changed, nr)
				undo = append(undo, step)
			})
		case OpDelete, OpDeleteStrict:
			ff := *op.Filter
			ff.Strict = op.Kind == OpDeleteStrict
			if ff.selectsAll() {
				// Every flow of the tables: each classifier is emptied at
				// once, its subtables kept for the adds that follow.
				for id, t := range p.cur().tables {
					if t == nil || (ff.Table != 255 && id != int(ff.Table)) {
						continue
					}
					if st.detaches(t) {
						p.detachTableLocked(uint8(id), &undo)
						continue
					}
					for _, c := range []*classifier{t.hard, t.soft} {
						c.each(func(r *Rule) bool {
							results[i].Removed = append(results[i].Removed, r)
							undo = append(undo, undoStep{kind: OpDelete, t: t, r: r})
							return true
						})
						p.nRules -= c.n
						p.clearRules(uint8(id), c)
					}
				}
				break
			}
			p.forEachSelected(&ff, func(t *table, r *Rule) {
				p.removeRule(t, r)
				p.nRules--
				results[i].Removed = append(results[i].Removed, r)
				undo = append(undo, undoStep{kind: OpDelete, t: t, r: r})
			})
		case OpGroupAdd:
			g := op.Group
			groups := p.cur().groups
			if _, ok := groups[g.ID]; ok {
				return fail(i, fmt.Errorf("group %d: %w", g.ID, ErrGroupExists))
			}
			if m := p.Limits.MaxGroups; m > 0 && len(groups) >= m {
				p.LimitRefusals.Add(1)
				return fail(i, fmt.Errorf("group %d: %d groups: %w", g.ID, len(groups), ErrOutOfGroups))
			}
			p.writeGroups()[g.ID] = g
			undo = append(undo, undoStep{kind: OpGroupAdd, group: g})
		case OpGroupModify:
			g := op.Group
			old, ok := p.cur().groups[g.ID]
			if !ok {
				return fail(i, fmt.Errorf("group %d: %w", g.ID, ErrUnknownGroup))
			}
			p.writeGroups()[g.ID] = g
			undo = append(undo, undoStep{kind: OpGroupModify, group: old})
		case OpGroupDelete:
			var gone []uint32
			groups := p.cur().groups
			drop := func(id uint32, g *GroupEntry) {
				delete(p.writeGroups(), id)
				gone = append(gone, id)
				undo = append(undo, undoStep{kind: OpGroupDelete, group: g})
			}
			if op.GroupID == GroupAllID {
				for id, g := range groups {
					drop(id, g)
				}
			} else if g, ok := groups[op.GroupID]; ok {
				drop(op.GroupID, g)
			}
			// As OpenFlow requires, the flows that use a deleted group
			// go with it.
			for _, id := range gone {
				ff := AllFlows()
				ff.OutGroup = id
				p.forEachSelected(&ff, func(t *table, r *Rule) {
					p.removeRule(t, r)
					p.nRules--
					results[i].Removed = append(results[i].Removed, r)
					undo = append(undo, undoStep{kind: OpDelete, t: t, r: r})
				})
			}
		}
	}
	p.bumpLocked()
	if built {
		for j := range undo {
			if u := &undo[j]; u.kind == opPutTable {
				p.keepSpareLocked(u.id, u.t)
			}
		}
	}
	n = len(ops)
	for i := range results {
		n += len(results[i].Removed)
	}
	p.noteBulk(n)
	return results, nil
}

// undoLocked reverts one step of a failed batch.
func (p *Pipeline) undoLocked(u *undoStep) {
	switch u.kind {
	case OpAdd:
		p.removeRule(u.t, u.r)
		p.nRules--
		delete(p.timed, u.r) // a flow rolled back never times out
		if u.old != nil {
			p.insertRule(u.t, u.old)
			p.nRules++
		}
	case OpModify:
		p.removeRule(u.t, u.r)
		p.insertRule(u.t, u.old)
		p.moveTimed(u.r, u.old)
		u.old.Stats.Packets.Store(u.packets)
		u.old.Stats.Bytes.Store(u.bytes)
	case OpDelete:
		p.insertRule(u.t, u.r)
		p.nRules++
	case opPutTable:
		p.unputTableLocked(u)
	case opDetachTable:
		p.undetachTableLocked(u)
	case OpGroupAdd:
		delete(p.writeGroups(), u.group.ID)
	case OpGroupModify, OpGroupDelete:
		p.writeGroups()[u.group.ID] = u.group
	}
}

// moveTimed gives to's timeout tracking to from's replacement to.
func (p *Pipeline) moveTimed(from, to *Rule) {
	if ts, ok := p.timed[from]; ok {
		delete(p.timed, from)
		p.timed[to] = ts
	}
}
