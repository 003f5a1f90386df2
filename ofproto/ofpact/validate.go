package ofpact

import (
	"fmt"

	"github.com/govs-project/govs/flowtable"
)

// Checker is the context of an action's check: the flow it sits in.
type Checker struct {
	Flow *flowtable.Flow
	// InCT is true inside ct(exec(...)), the only place ct_mark and
	// ct_label may be written.
	InCT bool
}

// Validate checks the flow's actions against its table and match the way
// OVS does before accepting a flow (ofpacts_verify, ofpacts_check):
// instruction order, then each action's own check (goto_table forward
// only, output ports, field prerequisites of set_field and move, writable
// destinations, nested lists), then conjunction actions alone. Errors are
// *flowtable.ValidationError.
func Validate(fl *flowtable.Flow) error {
	rank := RankMeter - 1
	c := Checker{Flow: fl}
	for _, a := range fl.Actions {
		e := lookup(a)
		r := rankOf(a, e)
		if r != RankApply && r == rank {
			return invalid(flowtable.DuplicateInstruction, a.Name(), "duplicate instruction %s", r)
		}
		if r < rank {
			return invalid(flowtable.BadInstructionOrder, a.Name(), "instruction %s may not follow instruction %s", r, rank)
		}
		rank = r
		if e != nil && e.check != nil {
			if err := e.check(c, a); err != nil {
				return err
			}
		}
		c = c.after(a)
	}
	return checkConjunctionAlone(fl)
}

func (c Checker) check(a flowtable.Action) error {
	if e := lookup(a); e != nil && e.check != nil {
		return e.check(c, a)
	}
	return nil
}

// checkAll checks a nested action list (write_actions, ct exec).
func (c Checker) checkAll(acts []flowtable.Action) error {
	for _, a := range acts {
		if err := c.check(a); err != nil {
			return err
		}
		c = c.after(a)
	}
	return nil
}

func invalid(kind flowtable.ValidationKind, field, format string, args ...any) error {
	return &flowtable.ValidationError{Kind: kind, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// checkCTField refuses writes of ct_mark and ct_label outside ct(exec(...))
// (OVS ofpacts_verify_nested, field_requires_ct).
func (c Checker) checkCTField(f *flowtable.Field) error {
	if !c.InCT && (f == flowtable.FieldCtMark || f == flowtable.FieldCtLabel) {
		return invalid(flowtable.ReadOnlyField, f.Name, "cannot set CT fields outside of ct action")
	}
	return nil
}
