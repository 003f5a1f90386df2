package flowtable

// ValidationKind says what is wrong with a flow's actions, so that the
// OpenFlow channel can answer with the error OVS sends for it. The checks
// themselves live with each action in ofproto/ofpact (ofpact.Validate).
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
