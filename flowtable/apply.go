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
	// Filter selects the flows a modify or delete acts on.
	Filter FlowFilter
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

// Apply runs flow-mods atomically, in order, under one lock: if one fails,
// every change made by the earlier ones is undone and nothing is visible to
// packets in between (OpenFlow atomic bundles). Readers see either the
// state before or the state after.
func (p *Pipeline) Apply(ops []FlowOp) ([]OpResult, error) {
	for i := range ops {
		if ops[i].Kind == OpAdd {
			if ops[i].Flow.Table >= NumTables {
				return nil, &OpError{i, ErrBadTable}
			}
			if err := p.validateGroups(ops[i].Flow); err != nil {
				return nil, &OpError{i, err}
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var undo []func()
	results := make([]OpResult, len(ops))
	fail := func(i int, err error) ([]OpResult, error) {
		for j := len(undo) - 1; j >= 0; j-- {
			undo[j]()
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
			t := p.table(f.Table)
			old := t.hard.find(&f.Match, f.Priority)
			if old == nil {
				old = t.soft.find(&f.Match, f.Priority)
			}
			r := p.addLocked(f)
			undo = append(undo, func() {
				t.cls(r).remove(r)
				p.nRules--
				if old != nil {
					t.cls(old).insert(old)
					p.nRules++
				}
			})
		case OpModify, OpModifyStrict:
			ff := op.Filter
			ff.Strict = op.Kind == OpModifyStrict
			p.forEachSelected(&ff, func(t *table, r *Rule) {
				oldFlow := r.Flow
				nf := *r.Flow
				nf.Actions = op.Flow.Actions
				if op.SetCookie {
					nf.Cookie = op.Flow.Cookie
				}
				t.cls(r).remove(r)
				r.Flow = &nf
				t.cls(r).insert(r)
				pk, by := r.Stats.Packets.Load(), r.Stats.Bytes.Load()
				if op.ResetCounts {
					r.Stats.Packets.Store(0)
					r.Stats.Bytes.Store(0)
				}
				results[i].Modified++
				undo = append(undo, func() {
					t.cls(r).remove(r)
					r.Flow = oldFlow
					t.cls(r).insert(r)
					r.Stats.Packets.Store(pk)
					r.Stats.Bytes.Store(by)
				})
			})
		case OpDelete, OpDeleteStrict:
			ff := op.Filter
			ff.Strict = op.Kind == OpDeleteStrict
			p.forEachSelected(&ff, func(t *table, r *Rule) {
				t.cls(r).remove(r)
				p.nRules--
				results[i].Removed = append(results[i].Removed, r)
				undo = append(undo, func() {
					t.cls(r).insert(r)
					p.nRules++
				})
			})
		}
	}
	p.Generation.Add(1)
	return results, nil
}
