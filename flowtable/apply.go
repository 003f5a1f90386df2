package flowtable

import "fmt"

// FlowOpKind is a flow-mod command.
type FlowOpKind uint8

const (
	OpAdd FlowOpKind = iota
	OpModify
	OpModifyStrict
	OpDelete
	OpDeleteStrict
)

// FlowOp is one flow-mod, for Apply.
type FlowOp struct {
	Kind FlowOpKind
	// Flow is the flow to add, or the new actions (and flags) for modify.
	Flow *Flow
	// Filter selects the flows a modify or delete acts on (adds ignore
	// it). It is a pointer because a filter carries a whole match: a
	// bundle of adds would otherwise copy ~1 KB per operation for nothing.
	Filter *FlowFilter
	// ResetCounts: modify clears the counters of the flows it changes.
	ResetCounts bool
	// SetCookie: modify also replaces the cookie with Flow.Cookie
	// (OpenFlow 1.0 and Nicira flow-mods do; 1.1+ never change it).
	SetCookie bool
}

// OpResult reports what an operation did.
type OpResult struct {
	Removed  []*Rule // deleted flows (for flow-removed messages)
	Modified int
}

// OpError says which operation of a batch failed and why.
type OpError struct {
	Index int
	Err   error
}

func (e *OpError) Error() string { return fmt.Sprintf("flow-mod %d: %v", e.Index, e.Err) }
func (e *OpError) Unwrap() error { return e.Err }

// undoStep records how to revert one change of an Apply batch.
type undoStep struct {
	kind FlowOpKind // OpAdd, OpModify or OpDelete
	t    *table
	r    *Rule // the rule added, modified or removed
	// old is the rule an add replaced (nil if none).
	old *Rule
	// oldFlow, packets and bytes are a modified rule's state before.
	oldFlow        *Flow
	packets, bytes uint64
}

// Apply runs flow-mods atomically, in order, under one lock: if one fails,
// every change made by the earlier ones is undone and nothing is visible to
// packets in between (OpenFlow atomic bundles). Readers see either the
// state before or the state after.
func (p *Pipeline) Apply(ops []FlowOp) ([]OpResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range ops {
		if ops[i].Kind == OpAdd {
			if ops[i].Flow.Table >= NumTables {
				return nil, &OpError{i, ErrBadTable}
			}
			if err := p.validateGroupsLocked(ops[i].Flow); err != nil {
				return nil, &OpError{i, err}
			}
		} else if ops[i].Filter == nil {
			return nil, &OpError{i, fmt.Errorf("flow-mod kind %d without a filter", ops[i].Kind)}
		}
	}
	undo := make([]undoStep, 0, len(ops))
	results := make([]OpResult, len(ops))
	now := p.Now() // one creation time for the whole batch, as it is atomic
	fail := func(i int, err error) ([]OpResult, error) {
		for j := len(undo) - 1; j >= 0; j-- {
			p.undoLocked(&undo[j])
		}
		return nil, &OpError{i, err}
	}
	for i := range ops {
		op := &ops[i]
		switch op.Kind {
		case OpAdd:
			f := op.Flow
			if f.Flags&FlagCheckOverlap != 0 && p.overlapsLocked(f) {
				return fail(i, ErrOverlap)
			}
			r, old := p.addLocked(f, now)
			undo = append(undo, undoStep{kind: OpAdd, t: p.tables[f.Table], r: r, old: old})
		case OpModify, OpModifyStrict:
			ff := *op.Filter
			ff.Strict = op.Kind == OpModifyStrict
			p.forEachSelected(&ff, func(t *table, r *Rule) {
				step := undoStep{kind: OpModify, t: t, r: r, oldFlow: r.Flow,
					packets: r.Stats.Packets.Load(), bytes: r.Stats.Bytes.Load()}
				nf := *r.Flow
				nf.Actions = op.Flow.Actions
				if op.SetCookie {
					nf.Cookie = op.Flow.Cookie
				}
				t.cls(r).remove(r)
				r.Flow = &nf
				t.cls(r).insert(r)
				if op.ResetCounts {
					r.Stats.Packets.Store(0)
					r.Stats.Bytes.Store(0)
				}
				results[i].Modified++
				undo = append(undo, step)
			})
		case OpDelete, OpDeleteStrict:
			ff := *op.Filter
			ff.Strict = op.Kind == OpDeleteStrict
			p.forEachSelected(&ff, func(t *table, r *Rule) {
				t.cls(r).remove(r)
				p.nRules--
				results[i].Removed = append(results[i].Removed, r)
				undo = append(undo, undoStep{kind: OpDelete, t: t, r: r})
			})
		}
	}
	p.Generation.Add(1)
	return results, nil
}

// undoLocked reverts one step of a failed batch.
func (p *Pipeline) undoLocked(u *undoStep) {
	switch u.kind {
	case OpAdd:
		u.t.cls(u.r).remove(u.r)
		p.nRules--
		if u.old != nil {
			u.t.cls(u.old).insert(u.old)
			p.nRules++
		}
	case OpModify:
		u.t.cls(u.r).remove(u.r)
		u.r.Flow = u.oldFlow
		u.t.cls(u.r).insert(u.r)
		u.r.Stats.Packets.Store(u.packets)
		u.r.Stats.Bytes.Store(u.bytes)
	case OpDelete:
		u.t.cls(u.r).insert(u.r)
		p.nRules++
	}
}
