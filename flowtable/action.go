package flowtable

import (
	"fmt"
	"net/netip"
)

// Action is one element of a flow's action list: an OpenFlow action or an
// instruction (goto_table, write_actions, clear_actions, write_metadata,
// meter), kept in one ordered list as OVS does with its ofpacts.
type Action interface {
	// Name is the keyword of the action in ovs-actions(7).
	Name() string
}

// FieldRange is a subfield: bits Ofs..Ofs+NBits-1 of Field, written
// NXM_NX_REG0[0..15] in flow text.
type FieldRange struct {
	Field *Field
	Ofs   int
	NBits int
}

// Whole returns the range covering all of f.
func Whole(f *Field) FieldRange { return FieldRange{Field: f, NBits: f.Bits} }

// IsWhole reports whether the range covers the entire field.
func (r FieldRange) IsWhole() bool { return r.Ofs == 0 && r.NBits == r.Field.Bits }

// Validate checks that the range lies within the field.
func (r FieldRange) Validate() error {
	if r.Field == nil {
		return fmt.Errorf("missing field")
	}
	if r.NBits <= 0 || r.Ofs < 0 || r.Ofs+r.NBits > r.Field.Bits {
		return fmt.Errorf("%s: bits %d..%d out of range for a %d-bit field", r.Field.Name, r.Ofs, r.Ofs+r.NBits-1, r.Field.Bits)
	}
	return nil
}

// SetFieldRaw records how a set-field action was written, because OVS
// prints (and encodes) it back the same way: load:, set_field: or one of
// the legacy mod_* actions.
type SetFieldRaw uint8

const (
	RawSetField SetFieldRaw = iota // set_field:V->F
	RawLoad                        // load:V->F[a..b]
	RawModDlSrc
	RawModDlDst
	RawModNwSrc
	RawModNwDst
	RawModNwTos
	RawModNwEcn
	RawModNwTTL
	RawModTpSrc
	RawModTpDst
	RawModVlanVid
	RawModVlanPcp
)

// Output sends the packet to a port (a number or a reserved port).
type Output struct {
	Port   uint32
	MaxLen uint16 // for CONTROLLER
}

// OutputReg sends the packet to the port held in a subfield
// (output:NXM_NX_REG1[]).
type OutputReg struct {
	Src    FieldRange
	MaxLen uint16
}

// Controller sends the packet to the controllers (controller(...)).
type Controller struct {
	MaxLen       uint16
	ControllerID uint16
	Reason       uint8 // OFPR_*: 0 no_match, 1 action (default), 2 invalid_ttl, ...
	UserData     []byte
	Pause        bool
	MeterID      uint32 // 0: none (NX_CTLR_NO_METER)
	// MeterBound: meter MeterID existed when the flow was added (set by
	// the pipeline; OVS's provider_meter_id).
	MeterBound bool
	// Short is true when written as plain CONTROLLER or CONTROLLER:n.
	Short bool
}

// Enqueue outputs to a queue of a port (enqueue:port:queue).
type Enqueue struct {
	Port  uint32
	Queue uint32
}

// Resubmit re-runs the lookup in Table with in_port replaced by InPort
// (PortInPort keeps it). Table 255 means the current table.
type Resubmit struct {
	InPort uint32
	Table  uint8
	CT     bool // resubmit(,T,ct): use the ct original tuple
}

// TableNone is the "no table" value of Resubmit.Table and CT.Table.
const TableNone = 255

// GotoTable is the goto_table instruction.
type GotoTable struct{ Table uint8 }

// WriteMetadata is the write_metadata instruction.
type WriteMetadata struct{ Value, Mask uint64 }

// ClearActions is the clear_actions instruction.
type ClearActions struct{}

// WriteActions is the write_actions instruction: actions added to the
// action set, executed when the pipeline ends.
type WriteActions struct{ Actions []Action }

// Meter is the meter instruction (OF1.5: action). Action marks one that
// came as an OpenFlow 1.5 OFPAT_METER inside apply-actions: OVS (as
// ofnet's `controller(...),meter:N`) lets it follow other actions there.
type Meter struct {
	ID     uint32
	Action bool
}

// SetField sets a field (or the Mask bits of it). It represents set_field,
// load and the mod_* actions; Raw says which was written.
type SetField struct {
	Field *Field
	Value []byte // big-endian, Field.Bytes wide, already masked
	Mask  []byte // big-endian, Field.Bytes wide
	Raw   SetFieldRaw
}

// Move copies a subfield to another (move:A[..]->B[..]).
type Move struct {
	Src, Dst FieldRange
}

// DecTTL decrements the IP TTL; if it reaches zero the packet goes to the
// controllers with reason invalid_ttl (to the listed controller ids).
type DecTTL struct {
	IDs []uint16
	// CntIDs: the action came as NXAST_DEC_TTL_CNT_IDS, which OVS keeps
	// (and prints as dec_ttl(...)) even with no ids, as ovn-controller
	// sends it.
	CntIDs bool
}

// SetMPLSTTL and friends are not modelled; push/pop VLAN are.

// PushVLAN pushes a VLAN header (push_vlan:0x8100).
type PushVLAN struct{ EthType uint16 }

// PopVLAN pops the outer VLAN header (pop_vlan / strip_vlan).
type PopVLAN struct{ Strip bool }

// NATFlags say what a nat() clause does.
type NATFlags uint16

const (
	NATSrc NATFlags = 1 << iota
	NATDst
	NATPersistent
	NATHash
	NATRandom
)

// NAT is the nat clause of ct(). With neither NATSrc nor NATDst it applies
// the connection's existing translation.
type NAT struct {
	Flags            NATFlags
	AddrMin, AddrMax netip.Addr // invalid when no address range
	PortMin, PortMax uint16     // 0 when no port range
}

// CT is the ct() action: send the packet through connection tracking.
type CT struct {
	Commit  bool
	Force   bool
	Zone    uint16     // immediate zone
	ZoneSrc FieldRange // zone from a field when ZoneSrc.Field != nil
	Table   uint8      // recirculate to this table; TableNone: continue without
	Alg     uint16     // ALG port (ftp=21, tftp=69)
	NAT     *NAT
	Exec    []Action // set_field/load of ct_mark and ct_label only
}

// CTClear clears the connection tracking state (ct_clear).
type CTClear struct{}

// Conjunction is a clause of a conjunctive match (conjunction(id,k/n)).
type Conjunction struct {
	ID       uint32
	Clause   uint8 // 1-based k
	NClauses uint8 // n
}

// Group sends the packet to a group (group:N).
type Group struct{ ID uint32 }

// Note is an annotation with no effect (note:xx.xx).
type Note struct{ Data []byte }

// Exit stops the pipeline (exit).
type Exit struct{}

// SetQueue sets the queue for output (set_queue:N).
type SetQueue struct{ ID uint32 }

// PopQueue restores the queue (pop_queue).
type PopQueue struct{}

// FinTimeout changes the timeouts of the flow on TCP FIN/RST.
type FinTimeout struct{ IdleTimeout, HardTimeout uint16 }

// Learn adds or changes a flow from the packet (learn(...)).
type Learn struct {
	Table       uint8
	Priority    uint16
	IdleTimeout uint16
	HardTimeout uint16
	FinIdle     uint16
	FinHard     uint16
	Cookie      uint64
	Flags       LearnFlags
	Limit       uint32
	ResultDst   FieldRange
	Specs       []LearnSpec
}

// LearnFlags are the learn() flags.
type LearnFlags uint16

const (
	LearnSendFlowRem   LearnFlags = 1
	LearnDeleteLearned LearnFlags = 2
	LearnWriteResult   LearnFlags = 4
)

// LearnSpecKind says what a learn spec produces.
type LearnSpecKind uint8

const (
	LearnMatch  LearnSpecKind = iota // a match field of the new flow
	LearnLoad                        // a load action of the new flow
	LearnOutput                      // an output action of the new flow
)

// LearnSpec is one element of learn(): the source (a subfield of the
// packet or an immediate) and the destination.
type LearnSpec struct {
	Kind  LearnSpecKind
	Src   FieldRange // when Imm is nil
	Imm   []byte     // immediate value, big-endian, (NBits+7)/8 bytes
	Dst   FieldRange // not for LearnOutput
	NBits int
	// ImmText is true when an immediate match was written field=value.
	ImmText bool
}

// StackPush pushes a subfield onto the translation's field stack
// (push:SRC[..], NXAST_STACK_PUSH).
type StackPush struct{ Src FieldRange }

// StackPop pops the top of the field stack into a subfield (pop:DST[..],
// NXAST_STACK_POP); the value is zero-extended or truncated to Dst.NBits.
type StackPop struct{ Dst FieldRange }

// CheckPktLarger sets the 1-bit Dst to 1 when the packet is longer than
// Len bytes, else to 0 (check_pkt_larger(Len)->DST, NXAST_CHECK_PKT_LARGER).
type CheckPktLarger struct {
	Len uint16
	Dst FieldRange
}

// Multipath, Bundle and Sample are parsed by OVS but not modelled here.

func (*Output) Name() string        { return "output" }
func (*OutputReg) Name() string     { return "output" }
func (*Controller) Name() string    { return "controller" }
func (*Enqueue) Name() string       { return "enqueue" }
func (*Resubmit) Name() string      { return "resubmit" }
func (*GotoTable) Name() string     { return "goto_table" }
func (*WriteMetadata) Name() string { return "write_metadata" }
func (*ClearActions) Name() string  { return "clear_actions" }
func (*WriteActions) Name() string  { return "write_actions" }
func (*Meter) Name() string         { return "meter" }
func (*SetField) Name() string      { return "set_field" }
func (*Move) Name() string          { return "move" }
func (*DecTTL) Name() string        { return "dec_ttl" }
func (*PushVLAN) Name() string      { return "push_vlan" }
func (*PopVLAN) Name() string       { return "pop_vlan" }
func (*CT) Name() string            { return "ct" }
func (*CTClear) Name() string       { return "ct_clear" }
func (*Conjunction) Name() string   { return "conjunction" }
func (*Group) Name() string         { return "group" }
func (*Note) Name() string          { return "note" }
func (*Exit) Name() string          { return "exit" }
func (*SetQueue) Name() string      { return "set_queue" }
func (*PopQueue) Name() string      { return "pop_queue" }
func (*FinTimeout) Name() string    { return "fin_timeout" }
func (*Learn) Name() string         { return "learn" }

func (*StackPush) Name() string      { return "push" }
func (*StackPop) Name() string       { return "pop" }
func (*CheckPktLarger) Name() string { return "check_pkt_larger" }

// FlowFlags are the OpenFlow flow-mod flags.
type FlowFlags uint16

const (
	FlagSendFlowRem  FlowFlags = 1 << 0
	FlagCheckOverlap FlowFlags = 1 << 1
	FlagResetCounts  FlowFlags = 1 << 2
	FlagNoPktCounts  FlowFlags = 1 << 3
	FlagNoBytCounts  FlowFlags = 1 << 4
)

// Flow is one flow entry: where it lives, what it matches, what it does.
type Flow struct {
	Table       uint8
	Priority    uint16
	Cookie      uint64
	IdleTimeout uint16
	HardTimeout uint16
	Importance  uint16
	Flags       FlowFlags
	Match       Match
	Actions     []Action
}

// DefaultPriority is the priority of a flow that does not say.
const DefaultPriority = 0x8000

// IsConjunctive reports whether the flow's actions are conjunction()
// clauses only (such a flow never matches by itself).
func (f *Flow) IsConjunctive() bool { return conjunctiveActions(f.Actions) }
