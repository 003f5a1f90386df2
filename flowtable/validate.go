package flowtable

import "fmt"

// ValidationKind says what is wrong with a flow's actions, so that the
// OpenFlow channel can answer with the error OVS sends for it.
type ValidationKind uint8

const (
	BadInstructionOrder  ValidationKind = iota + 1 // OFPBIC_UNSUP_INST
	DuplicateInstruction                           // OFPBIC_DUP_INST
	BadGotoTable                                   // OFPBIC_BAD_TABLE_ID
	BadOutPort                                     // OFPBAC_BAD_OUT_PORT
	MatchInconsistent                              // OFPBAC_MATCH_INCONSISTENT
	ReadOnlyField                                  // OFPBAC_BAD_SET_ARGUMENT
	ConjunctionMixed                               // OFPBAC_BAD_ARGUMENT
)

// ValidationError is a flow whose actions OVS would refuse.
type ValidationError struct {
	Kind  ValidationKind
	Field string // the action or field at fault
	Msg   string
}

func (e *ValidationError) Error() string { return e.Msg }

func invalid(kind ValidationKind, field, format string, args ...any) error {
	return &ValidationError{Kind: kind, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// instructionRank orders instructions as OpenFlow requires (OVS
// ofpacts_verify): meter, apply-actions, clear, write, write_metadata,
// goto_table.
func instructionRank(a Action) int {
	switch a.(type) {
	case *Meter:
		return 0
	case *ClearActions:
		return 2
	case *WriteActions:
		return 3
	case *WriteMetadata:
		return 4
	case *GotoTable:
		return 5
	}
	return 1
}

var instructionNames = []string{"meter", "apply_actions", "clear_actions", "write_actions", "write_metadata", "goto_table"}

// Validate checks the flow's actions against its table and match the way
// OVS does before accepting a flow (ofpacts_verify, ofpacts_check):
// instruction order, goto_table forward only, output ports, field
// prerequisites of set_field and move, writable destinations, and
// conjunction actions alone.
func (fl *Flow) Validate() error {
	rank := -1
	conj := 0
	for _, a := range fl.Actions {
		r := instructionRank(a)
		if r != 1 && r == rank {
			return invalid(DuplicateInstruction, a.Name(), "duplicate instruction %s", instructionNames[r])
		}
		if r < rank {
			return invalid(BadInstructionOrder, a.Name(), "instruction %s may not follow instruction %s", instructionNames[r], instructionNames[rank])
		}
		rank = r
		switch a := a.(type) {
		case *Conjunction:
			conj++
		case *GotoTable:
			if a.Table <= fl.Table {
				return invalid(BadGotoTable, "goto_table", "goto_table:%d must go to a later table than %d", a.Table, fl.Table)
			}
		}
		if err := fl.checkAction(a); err != nil {
			return err
		}
	}
	if conj > 0 {
		for _, a := range fl.Actions {
			switch a.(type) {
			case *Conjunction, *Note:
			default:
				return invalid(ConjunctionMixed, "conjunction", "\"conjunction\" actions may be used along with \"note\" but not any other kind of action (such as the \"%s\" action used here)", a.Name())
			}
		}
	}
	return nil
}

func (fl *Flow) checkAction(a Action) error {
	m := &fl.Match
	switch a := a.(type) {
	case *SetField:
		if !m.PrereqOK(a.Field.Prereq) && !prereqOKAlias(m, a.Field) {
			return invalid(MatchInconsistent, a.Field.Name, "set_field %s lacks correct prerequisites (needs %s in the match)", a.Field.Name, a.Field.Prereq)
		}
		if !a.Field.Writable {
			return invalid(ReadOnlyField, a.Field.Name, "%s is read-only", a.Field.Name)
		}
	case *Move:
		if !m.PrereqOK(a.Src.Field.Prereq) {
			return invalid(MatchInconsistent, a.Src.Field.Name, "move: source %s lacks correct prerequisites (needs %s in the match)", a.Src.Field.Name, a.Src.Field.Prereq)
		}
		if !m.PrereqOK(a.Dst.Field.Prereq) {
			return invalid(MatchInconsistent, a.Dst.Field.Name, "move: destination %s lacks correct prerequisites (needs %s in the match)", a.Dst.Field.Name, a.Dst.Field.Prereq)
		}
		if !a.Dst.Field.Writable {
			return invalid(ReadOnlyField, a.Dst.Field.Name, "move: destination %s is read-only", a.Dst.Field.Name)
		}
	case *Output:
		if a.Port >= PortMax && a.Port < PortInPort {
			return invalid(BadOutPort, "output", "%d: invalid output port", a.Port)
		}
	case *WriteActions:
		for _, x := range a.Actions {
			if err := fl.checkAction(x); err != nil {
				return err
			}
		}
	case *CT:
		for _, x := range a.Exec {
			if err := fl.checkAction(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// prereqOKAlias accepts set_field on tcp_src/udp_src views of the same
// slot (mod_tp_src on a UDP flow).
func prereqOKAlias(m *Match, f *Field) bool {
	switch f {
	case FieldTCPSrc, FieldTCPDst:
		return m.PrereqOK(PrereqL4)
	}
	return false
}
