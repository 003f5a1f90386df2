package flowtable

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"sync"
	"time"
)

// Conntrack is what the pipeline needs from a connection tracker. The
// conntrack package implements it (through a small adapter), so this
// package stays free of conntrack internals.
type Conntrack interface {
	// Execute runs ct() on pkt. It must set pkt.Key's ct_state, ct_zone,
	// ct_mark, ct_label and original-tuple fields; for NAT it rewrites
	// pkt.Frame and calls pkt.Rebase. req is only valid during the call
	// (the pipeline reuses it).
	Execute(pkt *Packet, req *CTRequest)
}

// ConntrackFlusher is a Conntrack that can forget a zone's connections
// (NXT_CT_FLUSH_ZONE, `ovs-ofctl ct-flush-zone`). It returns how many.
type ConntrackFlusher interface {
	Conntrack
	FlushZone(zone uint16) int
}

// ConntrackClock is a Conntrack whose clock a packet loop can read once
// per batch and hand to every packet of it (Packet.CtNow), rather than
// have each ct() read the clock: connection timeouts do not need a finer
// time than a batch's, and reading the clock is a good part of a cached
// ct() in a VM.
type ConntrackClock interface {
	Conntrack
	Now() int64
}

// CTRequest is a resolved ct() action.
type CTRequest struct {
	Zone      uint16
	Commit    bool
	Force     bool
	Alg       uint16
	SetMark   bool
	Mark      uint32
	MarkMask  uint32
	SetLabel  bool
	Label     [16]byte
	LabelMask [16]byte
	NAT       *NAT
}

// Sink receives what the pipeline decides to do with a packet. Frames are
// committed (all header changes written) before each call and are only
// valid during it, unless the sink calls Packet.Lend: then the pipeline
// leaves those bytes as they are (later changes go to a copy), and they
// stay valid as long as the memory the packet was extracted from.
type Sink interface {
	Output(port uint32, pkt *Packet)
	PacketIn(pkt *Packet, pi *PacketIn)
}

// PacketIn describes a packet sent to the controllers.
type PacketIn struct {
	Reason       uint8 // OFPR_*: 0 no_match, 1 action, 2 invalid_ttl
	Table        uint8
	Cookie       uint64
	MaxLen       uint16
	ControllerID uint16
	UserData     []byte
	Pause        bool
	// Continuation is set for a controller(pause) packet-in: what
	// NXT_RESUME needs to carry on.
	Continuation *Continuation
}

// Packet-in reasons.
const (
	ReasonNoMatch    = 0
	ReasonAction     = 1
	ReasonInvalidTTL = 2
	// ReasonExplicitMiss is an output to CONTROLLER by a table-miss flow
	// (priority 0, empty match): OFPR_NO_MATCH from OpenFlow 1.3 on,
	// OFPR_ACTION before (OVS OFPR_EXPLICIT_MISS). It is not a wire value.
	ReasonExplicitMiss = 0xfe
)

// TraceEventKind says what a trace event records.
type TraceEventKind uint8

const (
	TraceLookup TraceEventKind = iota // a table lookup (Rule nil: miss)
	TraceAction                       // an action executed
	TraceNote                         // a remark (resubmit depth, drop reason, ...)
	TraceOutput                       // a packet output to a port
	// TraceBranch starts a branch of check_pkt_larger in a trace (Msg
	// "gt" or "le"; OVS translates both) or, Msg "", ends the second.
	TraceBranch
	// TraceActionSet starts the run of the action set (its actions
	// follow at the same depth).
	TraceActionSet
)

// TraceEvent is one step of a packet walk.
type TraceEvent struct {
	Kind   TraceEventKind
	Depth  int
	Table  uint8
	Rule   *Rule
	Action Action
	Before Key // the key before the action (TraceAction)
	After  Key // the key after the action (TraceAction)
	Port   uint32
	Msg    string
	// PacketIn is what a TraceOutput to the controller sends; Meter is
	// the meter it or a meter action (TraceAction) goes through, if any.
	PacketIn *PacketIn
	Meter    *MeterEntry
}

// Trace collects the events of one packet walk (ovs-appctl ofproto/trace).
type Trace struct {
	Events []TraceEvent
	Final  Key
}

// Result summarizes a pipeline run.
type Result struct {
	Outputs   int
	PacketIns int
	// Masks[i] is the set of key bits the decisions of segment i depended
	// on (the megaflow mask of OVS). Segment 0 is the packet as received;
	// each ct(table=N) recirculation starts a new segment, looked up again
	// with its new ct state. Segments past len(Masks) share the last mask.
	Masks [MaxSegments]Key
	// Segments is the number of segments the packet went through.
	Segments int
	// Error is set when the translation ran out of its recursion budget
	// (as OVS's xlate error): the walk stopped there and the packet is
	// dropped from that point on.
	Error XlateError
}

// XlateError says why a translation stopped early (OVS enum xlate_error).
type XlateError uint8

const (
	XlateOK XlateError = iota
	// XlateRecursionTooDeep: resubmit, goto_table, group and ct(table=)
	// nesting went past Pipeline.MaxResubmitDepth (OVS MAX_DEPTH, 64).
	XlateRecursionTooDeep
	// XlateTooManyResubmits: the packet looked up tables or ran groups
	// more than MaxResubmits times in all (OVS MAX_RESUBMITS).
	XlateTooManyResubmits
)

// Error makes an XlateError usable as an error: "translation failed
// (Recursion too deep)", the words of ofproto/trace.
func (e XlateError) Error() string { return "translation failed (" + e.String() + ")" }

func (e XlateError) String() string {
	switch e {
	case XlateOK:
		return "OK"
	case XlateRecursionTooDeep:
		return "Recursion too deep"
	case XlateTooManyResubmits:
		return "Too many resubmits"
	}
	return fmt.Sprintf("xlate error %d", uint8(e))
}

// MaxResubmits bounds the table lookups and group executions one packet
// may do in all, nested or not (OVS MAX_RESUBMITS = MAX_DEPTH * MAX_DEPTH):
// a group of two buckets that each reach the group again stays within the
// depth but would otherwise take 2^64 steps.
const MaxResubmits = 64 * 64

// MaxSegments is the number of recirculation segments whose masks a Result
// keeps apart.
const MaxSegments = 4

// Mask returns the megaflow mask of the first segment.
func (r *Result) Mask() *Key { return &r.Masks[0] }

type xlate struct {
	p         *Pipeline
	s         *side // the side of the pipeline the walk reads (leftright.go)
	pkt       *Packet
	sink      Sink
	tr        *Trace
	depth     int    // nesting of lookups and groups (the trace's indentation)
	deep      int    // the part of depth that counts against MaxResubmitDepth
	resubmits int    // table lookups and group runs so far (MaxResubmits)
	res       Result // returned by value: a pointer to a Result would escape with x's other pointers
	actionSet []Action
	learned   []*Flow
	exit      bool
	seg       int // the current segment: x.res.Masks[seg] is its megaflow mask
	table     uint8
	cookie    uint64
	miss      bool      // the running flow is its table's table-miss flow
	r         *recorder // nil unless a flow cache records this run
	// dry is a trace (ofproto/trace) run: no counters, no learning, and
	// ct() through traceCT instead of the tracker.
	dry      bool
	traceCT  Conntrack
	stack    []stackEntry
	counters *TableCounters
	tries    trieCtx // the current table lookup's (prefix.go)
	// Freezing at controller(pause) (continuation.go): the pause, the
	// actions frozen so far and the last UnrollXlate among them.
	freezing bool
	pause    *Controller
	frozen   []Action
	unroll   *UnrollXlate
	// conntracked: the walk is inside a ct(table=N) recirculation, or
	// resumed one (OVS ctx->conntracked), so a pause keeps the ct state.
	conntracked bool
	// tunnelMask is the megaflow part of a packet from a tunnel (see
	// maskTunnel), nil for other packets.
	tunnelMask *Key
	// packetOut: output to TABLE runs the pipeline (packet-out only).
	packetOut bool
	// ghost: the walk of check_pkt_larger's other branch, for the
	// counters only (stack.go otherBranch).
	ghost bool
	// meterDropped: a meter band dropped the packet (exit set at run
	// time, not by the translation: a check_pkt_larger branch's drop
	// ends that branch only).
	meterDropped bool
}

var seed = maphash.MakeSeed()

// Run sends pkt through the pipeline from table 0. pkt must have been
// extracted (Packet.Extract) with its in_port set. tr may be nil.
func (p *Pipeline) Run(pkt *Packet, sink Sink, tr *Trace) Result {
	return p.RunFrom(pkt, 0, sink, tr)
}

// RunFrom is Run starting at table (packet-out to TABLE, resume).
func (p *Pipeline) RunFrom(pkt *Packet, table uint8, sink Sink, tr *Trace) Result {
	return p.run(pkt, table, sink, tr, nil)
}

func (p *Pipeline) run(pkt *Packet, table uint8, sink Sink, tr *Trace, r *recorder) Result {
	x := xlate{p: p, pkt: pkt, sink: sink, tr: tr, r: r, counters: &p.sharedCounters}
	if pkt.Counters != nil {
		x.counters = pkt.Counters
	} else if r != nil && r.rec.Counters != nil {
		x.counters = r.rec.Counters
	}
	x.begin()
	x.s = p.enterWalk()
	// A pause reports the cookie of the flow the walk started with (OVS
	// keeps the first rule's cookie in the translation context).
	cookie := uint64(0)
	if table == 0 && p.FailOpen.Load() {
		// OVS's fail-open flow: hidden, above every flow of table 0.
		x.execute(failOpenActions)
	} else if r := x.runTable(table); r != nil {
		cookie = r.Cookie
	}
	x.finish(cookie)
	p.leaveWalk(x.s)
	if tr != nil && x.res.Outputs+x.res.PacketIns == 0 {
		tr.Final = pkt.Key
	}
	for _, f := range x.learned {
		p.addLearned(f)
	}
	if r != nil {
		x.finishRecording()
	}
	return x.res
}

// finishRecording gives each recorded segment its megaflow mask.
func (x *xlate) finishRecording() {
	for i := range x.r.rec.Segments {
		s := &x.r.rec.Segments[i]
		if i >= MaxSegments {
			s.Cacheable, s.Why = false, "too many recirculations"
			continue
		}
		s.Mask = x.res.Masks[i]
		FieldRecircID.SetUint64(&s.Mask, ^uint64(0))
		s.Start = s.Start.Masked(&s.Mask)
	}
}

func (p *Pipeline) addLearned(f *Flow) {
	defer p.unlockWrite(p.lockWrite())
	r := newRule(f)
	if p.roomForLocked(r) != nil {
		return // counted in LimitRefusals; OVS also drops such a learn
	}
	p.addLocked(r, p.Now())
}

func (x *xlate) note(format string, args ...any) {
	if x.tr != nil {
		x.tr.Events = append(x.tr.Events, TraceEvent{Kind: TraceNote, Depth: x.depth, Msg: fmt.Sprintf(format, args...)})
	}
}

func (x *xlate) orMask(f *Field) {
	if f.Wide() {
		m := f.slotMask()
		x.mask().Or(&m)
		return
	}
	// Setting the field to all ones in the mask sets exactly its bits of
	// the slot, without building and ORing a whole key (a third of a walk).
	f.SetUint64(x.mask(), f.lowMask())
}

// mask returns the megaflow mask of the current segment. (It is an index,
// not a pointer kept in x, so that x and its Result stay on the stack.)
func (x *xlate) mask() *Key { return &x.res.Masks[x.seg] }

// tunnelMask4 and tunnelMask6 are the tunnel fields every megaflow of a
// packet received from a tunnel matches exactly, as in OVS's megaflows:
// tun_id (Geneve always has a key) and the outer addresses of the
// underlay's family.
var (
	tunnelMask4 = fieldsMask(FieldTunID, FieldTunSrc, FieldTunDst)
	tunnelMask6 = fieldsMask(FieldTunID, FieldTunIPv6Src, FieldTunIPv6Dst)
)

func fieldsMask(fs ...*Field) Key {
	var m Match
	for _, f := range fs {
		m.Set(f, make([]byte, f.Bytes), nil)
	}
	return m.Mask
}

// begin starts a walk's first segment; a packet from a tunnel gets its
// tunnel mask.
func (x *xlate) begin() {
	x.res.Segments = 1
	switch {
	case x.pkt.Key.TunDst() != 0:
		x.tunnelMask = &tunnelMask4
	case x.pkt.Key.TunIPv6Dst() != [16]byte{}:
		x.tunnelMask = &tunnelMask6
	}
	x.maskTunnel()
}

// maskTunnel adds the tunnel mask to the current segment's megaflow when
// the packet came from a tunnel: a cached flow then never serves another
// peer's packets, and dpif/dump-flows shows tunnel(...) as OVS does.
func (x *xlate) maskTunnel() {
	if x.tunnelMask != nil {
		x.mask().Or(x.tunnelMask)
	}
}

// lookup finds the best rule in table t for the packet, with conjunctive
// match semantics (ovs-fields(7) "Conjunctive Match Fields").
func (x *xlate) lookup(id uint8) *Rule {
	t := x.s.tables[id]
	if t == nil {
		return nil
	}
	return t.lookupTries(&x.pkt.Key, x.mask(), &x.tries)
}

// enter takes one step of the packet's recursion budget for a table
// lookup or a group; false means the budget is spent: the translation
// stops and the packet is dropped, as OVS's xlate_resubmit_resource_check.
// As in OVS's xlate_recursively, only steps that could loop deepen: a
// resubmit to the same or an earlier table, and a group; a pipeline that
// moves forward through its tables (OVN's runs 60-odd deep) does not. A
// true return must be paired with x.leave(deepens).
func (x *xlate) enter(deepens bool) bool {
	switch {
	case x.res.Error != XlateOK:
		return false
	case deepens && x.deep >= x.p.MaxResubmitDepth:
		x.fail(XlateRecursionTooDeep, "over max translation depth %d", x.p.MaxResubmitDepth)
		return false
	case x.resubmits >= MaxResubmits:
		x.fail(XlateTooManyResubmits, "over %d resubmit actions", MaxResubmits)
		return false
	}
	x.depth++
	if deepens {
		x.deep++
	}
	x.resubmits++
	return true
}

// leave undoes enter.
func (x *xlate) leave(deepens bool) {
	x.depth--
	if deepens {
		x.deep--
	}
}

func (x *xlate) fail(e XlateError, format string, arg int) {
	x.note(format+", dropping", arg)
	x.res.Error = e
	x.exit = true
	x.uncacheable(e.String())
	if !x.ghost {
		x.p.countXlateError(e, &x.pkt.Key)
	}
}

// runTable looks the packet up in table id and runs the actions of the
// rule it finds, which it returns.
func (x *xlate) runTable(id uint8) *Rule {
	deepens := x.depth > 0 && id <= x.table
	if !x.enter(deepens) {
		return nil
	}
	defer x.leave(deepens)
	r := x.lookup(id)
	x.countLookup(id, r != nil)
	if x.tr != nil {
		x.tr.Events = append(x.tr.Events, TraceEvent{Kind: TraceLookup, Depth: x.depth, Table: id, Rule: r, Before: x.pkt.Key})
	}
	if r == nil {
		// OpenFlow 1.3 table miss without a miss flow: drop.
		x.note("no match: drop")
		return nil
	}
	if !x.dry {
		r.Stats.Packets.Add(1)
		r.Stats.Bytes.Add(uint64(len(x.pkt.Frame)))
	}
	if x.r != nil {
		s := x.r.seg()
		s.Rules = append(s.Rules, r)
	}
	savedTable, savedCookie, savedMiss := x.table, x.cookie, x.miss
	x.table, x.cookie, x.miss = id, r.Cookie, r.IsTableMiss()
	x.execute(r.Actions)
	x.table, x.cookie, x.miss = savedTable, savedCookie, savedMiss
	return r
}

func (x *xlate) execute(acts []Action) {
	for i, a := range acts {
		if x.exit {
			if x.freezing {
				// A pause below: what this level had left resumes later.
				x.freezeUnroll(acts[i:])
			}
			return
		}
		ev := -1
		if x.tr != nil {
			ev = len(x.tr.Events)
			x.tr.Events = append(x.tr.Events, TraceEvent{Kind: TraceAction, Depth: x.depth, Action: a, Before: x.pkt.Key})
		}
		if c, ok := a.(*CheckPktLarger); ok && !x.ghost {
			x.checkPktLargerBranches(c, acts[i+1:], ev)
			return
		}
		x.do(a)
		if ev >= 0 {
			// Nested lookups (resubmit, goto, ct) show their own changes.
			x.tr.Events[ev].After = x.tr.Events[ev].Before
			if !isNesting(a) {
				x.tr.Events[ev].After = x.pkt.Key
			}
		}
		if x.freezing && len(x.frozen) == 0 && x.freezeAfter(acts, i) {
			return
		}
	}
}

// freezeAfter starts the frozen actions with those after acts[i], where
// the walk paused (the end of OVS's do_xlate_actions loop). A resubmit or
// goto_table that paused deeper is not run again: the next turn of the
// loop freezes what follows it (false: this level is not done).
func (x *xlate) freezeAfter(acts []Action, i int) bool {
	switch a := acts[i].(type) {
	case *Resubmit, *GotoTable:
		return false
	case *Output:
		if a.Port == PortTable {
			return false
		}
	case *Controller:
		i++
	}
	x.freezeUnroll(acts[i:])
	return true
}

func (x *xlate) do(a Action) {
	k := &x.pkt.Key
	switch a := a.(type) {
	case *Output:
		x.output(a.Port, a.MaxLen)
	case *OutputReg:
		x.orMaskRange(a.Src)
		x.output(uint32(readRange(k, a.Src)), a.MaxLen)
	case *Controller:
		if x.ghost {
			// OVS freezes the other branch at a pause; nothing reaches
			// a controller from it.
			x.exit = a.Pause
			return
		}
		if a.Pause {
			x.pauseAt(a)
			return
		}
		meter := uint32(0)
		if a.MeterBound {
			meter = a.MeterID
		}
		x.packetIn(&PacketIn{Reason: a.Reason, MaxLen: a.MaxLen, ControllerID: a.ControllerID, UserData: a.UserData}, meter)
	case *Enqueue:
		x.output(a.Port, 0)
	case *Resubmit:
		table := a.Table
		if table == TableNone {
			table = x.table
		}
		savedPort := k.InPort()
		if a.InPort != PortInPort {
			k.SetInPort(a.InPort)
		}
		x.runTable(table)
		k.SetInPort(savedPort)
	case *GotoTable:
		x.runTable(a.Table)
	case *WriteMetadata:
		m := k.Metadata()
		FieldMetadata.SetUint64(k, m&^a.Mask|a.Value&a.Mask)
		if x.r != nil {
			var w Key
			FieldMetadata.SetUint64(&w, a.Mask)
			x.r.wrote(&w)
		}
	case *ClearActions:
		if x.tr != nil {
			x.traceActionSet("was")
		}
		x.actionSet = x.actionSet[:0]
	case *WriteActions:
		x.actionSet = mergeActionSet(x.actionSet, a.Actions)
		if x.tr != nil {
			x.traceActionSet("is")
		}
	case *Meter:
		// A packet a band drops goes no further: no later action, no
		// action set. A flow cache cannot replay a meter (yet): the
		// packets of a metered flow take the slow path.
		if x.ghost {
			return
		}
		if x.dry {
			// A trace runs no meter; it names the meter's datapath id.
			if x.tr != nil {
				x.tr.Events[len(x.tr.Events)-1].Meter = x.s.meters[a.ID]
			}
			return
		}
		if x.r != nil {
			x.r.uncacheable("meter")
		}
		if !runMeter(x.s, a.ID, x.p.Now().UnixMilli(), len(x.pkt.Frame)) {
			x.exit, x.meterDropped = true, true
			x.actionSet = x.actionSet[:0]
		}
	case *SetField:
		setFieldMasked(k, a.Field, a.Value, a.Mask)
		if x.r != nil {
			x.r.wroteField(a.Field, a.Mask)
		}
	case *Move:
		x.orMaskRange(a.Src)
		v := readRangeBytes(k, a.Src)
		writeRangeBytes(k, a.Dst, v)
		if x.r != nil {
			_, m := placeRange(a.Dst, v)
			x.r.wroteField(a.Dst.Field, m)
		}
	case *DecTTL:
		if !k.IsIPAny() {
			return
		}
		x.orMask(FieldIPTTL)
		ttl := k.NwTTL()
		if x.ttlExpired("dec_ttl", uint64(ttl)) {
			return
		}
		k.setU8(offNwTTL, ttl-1)
		if x.r != nil {
			x.r.wroteField(FieldIPTTL, []byte{0xff})
		}
	case *Clone:
		x.uncacheable("clone")
		x.clone(a.Actions)
	case *CopyTTL:
		x.uncacheable("copy_ttl") // reads or writes the IP header under the label, not in the key
		x.copyTTL(a.In)
	case *PushMPLS:
		x.uncacheable("push_mpls")
		x.pushMPLS(a.EthType)
	case *PopMPLS:
		x.uncacheable("pop_mpls")
		x.popMPLS(a.EthType)
	case *SetMPLSTTL:
		x.setMPLSField(FieldMPLSTTL, uint64(a.TTL))
	case *DecMPLSTTL:
		x.decMPLSTTL()
	case *SetMPLSLabel:
		x.setMPLSField(FieldMPLSLabel, uint64(a.Label))
	case *SetMPLSTC:
		x.setMPLSField(FieldMPLSTC, uint64(a.TC))
	case *PushVLAN:
		x.pushVLAN(a.EthType)
	case *PopVLAN:
		x.popVLAN()
	case *CT:
		x.conntrack(a)
	case *CTClear:
		clearCt(k)
		if x.r != nil {
			x.r.wrote(&CtFieldsMask)
		}
	case *Conjunction:
		// Never executed: conjunctive flows do not match by themselves.
	case *Group:
		x.uncacheable("group")
		x.group(a.ID)
	case *Note, *SetQueue, *PopQueue, *FinTimeout:
		// No effect on forwarding.
	case *Exit:
		x.exit = true
	case *UnrollXlate:
		x.table, x.cookie = a.Table, a.Cookie
		x.note("restored state: table=%d, cookie=%#x", a.Table, a.Cookie)
	case *Learn:
		x.uncacheable("learn")
		if f := x.learn(a); f != nil {
			x.learned = append(x.learned, f)
		}
	case *StackPush:
		x.stackPush(a)
	case *StackPop:
		x.stackPop(a)
	case *CheckPktLarger:
		x.checkPktLarger(a)
	}
}

// uncacheable marks the current segment as one a flow cache must not keep.
func (x *xlate) uncacheable(why string) {
	if x.r != nil {
		x.r.uncacheable(why)
	}
}

func isNesting(a Action) bool {
	switch a.(type) {
	case *Resubmit, *GotoTable, *CT, *Group, *Clone:
		return true
	}
	return false
}

func (x *xlate) orMaskRange(r FieldRange) {
	if r.Field != nil && r.Field.Resolved() {
		x.orMask(r.Field)
	}
}

func (x *xlate) output(port uint32, maxLen uint16) {
	k := &x.pkt.Key
	in := k.InPort()
	switch port {
	case PortInPort:
		x.emitPort(in, true)
	case PortNormal:
		x.normal()
	case PortFlood, PortAll:
		x.flood(port)
	case PortController:
		x.packetIn(&PacketIn{Reason: ReasonAction, MaxLen: maxLen}, 0)
	case PortTable:
		if !x.packetOut {
			x.note("output to TABLE is only valid in packet-out")
			return
		}
		x.note("output to TABLE: running the pipeline from table 0 with in_port %d", in)
		x.runTable(0)
	case PortNone:
		x.note("output to port NONE: drop")
	default:
		x.orMask(FieldInPort)
		if port == in {
			x.note("skipping output to input port %d", port)
			return
		}
		x.emit(port)
	}
}

func (x *xlate) emit(port uint32) { x.emitPort(port, false) }

// emitPort sends the packet to port; viaInPort says the flow said IN_PORT.
func (x *xlate) emitPort(port uint32, viaInPort bool) {
	if x.r != nil {
		x.r.op(DPOp{Kind: DPOutput, Port: port, InPort: viaInPort}, &x.pkt.Key)
	}
	x.pkt.Commit()
	x.res.Outputs++
	if x.tr != nil {
		x.tr.Final = x.pkt.Key
		x.tr.Events = append(x.tr.Events, TraceEvent{Kind: TraceOutput, Depth: x.depth, Port: port})
	}
	if x.sink != nil {
		x.sink.Output(port, x.pkt)
	}
}

// packetIn sends the packet to the controllers through meter (0: the
// "controller" meter, if there is one), as OVS's xlate_controller_action
// composes clone(meter(N),userspace(...)): a packet the meter drops is
// not sent, and the actions after it run either way. A pause is never
// metered (OVS's freezing sends its userspace action bare).
func (x *xlate) packetIn(pi *PacketIn, meter uint32) {
	if meter == 0 {
		meter = MeterControllerID
	}
	// A meter that does not exist (or no longer: OVS's datapath passes
	// packets through a deleted meter) lets the packet-in through. x.s is
	// the side the walk reads.
	m := x.s.meters[meter]
	if m != nil && !x.dry && !m.admit(x.p.Now().UnixMilli(), len(x.pkt.Frame)) {
		x.uncacheable("meter")
		x.note("packet-in dropped by meter %d", int(meter))
		return
	}
	pi.Table, pi.Cookie = x.table, x.cookie
	if pi.Reason == ReasonAction && x.miss {
		pi.Reason = ReasonExplicitMiss
	}
	x.emitPacketIn(pi, m)
}

// emitPacketIn sends the packet to the controllers as pi says, through
// meter m (nil: none), which a trace names.
func (x *xlate) emitPacketIn(pi *PacketIn, m *MeterEntry) {
	x.uncacheable("packet-in")
	x.pkt.Commit()
	x.res.PacketIns++
	if x.tr != nil {
		x.tr.Final = x.pkt.Key
		x.tr.Events = append(x.tr.Events, TraceEvent{Kind: TraceOutput, Depth: x.depth, Port: PortController,
			Msg: fmt.Sprintf("packet-in reason=%d table=%d cookie=%#x", pi.Reason, pi.Table, pi.Cookie), PacketIn: pi, Meter: m})
	}
	if x.sink != nil {
		x.sink.PacketIn(x.pkt, pi)
	}
}

func (x *xlate) ports() []uint32 {
	if x.p.Ports == nil {
		return nil
	}
	return x.p.Ports.PortNumbers()
}

func (x *xlate) flood(which uint32) {
	ps := x.ports()
	if ps == nil {
		x.emit(which) // no port list: the sink sees the reserved port
		return
	}
	x.orMask(FieldInPort)
	in := x.pkt.Key.InPort()
	for _, p := range ps {
		if p != in {
			x.emit(p)
		}
	}
}

// normal is the NORMAL action: a MAC-learning L2 switch per VLAN.
//
// A flow cache may keep its decision (the megaflow has in_port, the MACs
// and the VLAN) while the MAC table's generation stays and the destination
// entry it used has not aged; a hit learns the source again, as OVS's
// revalidators do for cached NORMAL flows.
func (x *xlate) normal() {
	k := &x.pkt.Key
	x.orMask(FieldInPort)
	x.orMask(FieldEthSrc)
	x.orMask(FieldEthDst)
	x.orMask(FieldVlanTCI)
	in := k.InPort()
	vid := k.VlanTCI() & VlanVIDMask
	vlan, ok := x.normalInput(in, vid)
	if !ok {
		return
	}
	dst := k.EthDst()
	if reservedMulticast(dst) {
		x.note("NORMAL: packet has reserved destination MAC %x, dropping", dst)
		return
	}
	now := x.p.Now()
	// The generation before the table is read: any later change makes
	// the recorded decision stale.
	gen := x.p.MACs.Gen()
	learn := MACLearn{VLAN: vlan, MAC: k.EthSrc(), Port: in}
	if !x.dry && !x.ghost {
		x.p.MACs.Learn(vlan, learn.MAC, learn.Port, now)
	}
	var expires time.Time
	defer func() {
		if x.r != nil {
			x.r.usesMACs(gen, expires, learn)
		}
	}()
	if dst[0]&1 == 0 {
		port, exp, ok := x.p.MACs.LookupExpiry(vlan, dst, now)
		if ok {
			expires = exp
			if port == in {
				x.note("NORMAL: learned port of %x is the input port, dropping", dst)
				return
			}
			x.note("NORMAL: forwarding to learned port %d", port)
			x.normalOutput(port, vlan, vid)
			return
		}
	}
	x.note("NORMAL: no learned MAC for destination, flooding")
	ps := x.ports()
	if ps == nil {
		x.emit(PortFlood) // no port list: the sink sees the reserved port
		return
	}
	for _, p := range ps {
		if p != in && x.portVLAN(p).carries(vlan) {
			x.normalOutput(p, vlan, vid)
		}
	}
}

func (x *xlate) group(id uint32) {
	g := x.s.groups[id]
	if g == nil {
		x.note("group %d does not exist: drop", id)
		return
	}
	// A group's buckets may name groups again (chains, and loops that
	// OVS accepts at group-mod time): they share the packet's budget.
	if !x.enter(true) {
		return
	}
	defer x.leave(true)
	// An output to CONTROLLER in a bucket is OFPR_GROUP (OFPR_ACTION
	// before OpenFlow 1.4), also when a table-miss flow named the group.
	savedMiss := x.miss
	x.miss = false
	defer func() { x.miss = savedMiss }()
	if !x.dry {
		g.Packets.Add(1)
		g.Bytes.Add(uint64(len(x.pkt.Frame)))
	}
	switch g.Type {
	case GroupAll:
		saved := x.pkt.Key
		for i := range g.Buckets {
			x.pkt.Key = saved
			x.bucket(g.Buckets[i].Actions)
		}
		x.pkt.Key = saved
	case GroupIndirect:
		if len(g.Buckets) > 0 {
			x.bucket(g.Buckets[0].Actions)
		}
	case GroupFastFailover:
		if len(g.Buckets) > 0 {
			x.bucket(g.Buckets[0].Actions)
		}
	case GroupSelect:
		if b := x.selectBucket(g); b != nil {
			saved := x.pkt.Key
			x.bucket(b.Actions)
			if !x.exit {
				x.pkt.Key = saved
			}
		}
	}
}

// bucket runs a group bucket's actions. A pause in a bucket ends there,
// as in OVS's xlate_group_bucket: its continuation holds the rest of the
// bucket, and the walk goes on after the group with the packet as it was.
func (x *xlate) bucket(acts []Action) {
	x.execute(acts)
	if x.freezing {
		x.finishFreezing(x.cookie)
		x.exit = false
	}
}

// selectBucket picks a bucket as Open vSwitch's default selection method
// does: a symmetric hash of the L2-L4 fields (flow_hash_symmetric_l4:
// Ethernet addresses, VLAN, ethertype, IP addresses, protocol, ports;
// also ARP's protocol addresses, which OVS leaves out, so ARP between
// many hosts spreads too), then the bucket at that hash's place along the buckets' weights, so
// traffic spreads in proportion to the weights whichever of those fields
// vary (OVS's highest-random-weight choice favours heavy buckets more than
// their weight says).
func (x *xlate) selectBucket(g *GroupEntry) *Bucket {
	k := &x.pkt.Key
	var buf [32]byte
	for i := 0; i < 6; i++ {
		buf[i] = k[offEthSrc+i] ^ k[offEthDst+i]
	}
	x.orMask(FieldEthSrc)
	x.orMask(FieldEthDst)
	x.orMask(FieldVlanTCI)
	x.orMask(FieldEthType)
	binary.BigEndian.PutUint16(buf[6:], k.VlanTCI()&VlanVIDMask)
	binary.BigEndian.PutUint16(buf[8:], k.EthType())
	n := 10
	switch {
	case k.EthType() == EthTypeIPv4:
		x.orMask(FieldIPv4Src)
		x.orMask(FieldIPv4Dst)
		binary.BigEndian.PutUint32(buf[n:], k.NwSrc()^k.NwDst())
		n += 4
	case k.EthType() == EthTypeIPv6:
		x.orMask(FieldIPv6Src)
		x.orMask(FieldIPv6Dst)
		for i := 0; i < 16; i++ {
			buf[n+i] = k[offIPv6Src+i] ^ k[offIPv6Dst+i]
		}
		n += 16
	case k.EthType() == EthTypeARP || k.EthType() == EthTypeRARP:
		x.orMask(FieldArpSpa)
		x.orMask(FieldArpTpa)
		binary.BigEndian.PutUint32(buf[n:], k.NwSrc()^k.NwDst())
		n += 4
	}
	if k.IsIPAny() {
		x.orMask(FieldIPProto)
		buf[n] = k.NwProto()
		n++
		if p := k.NwProto(); p == IPProtoTCP || p == IPProtoUDP || p == IPProtoSCTP {
			x.orMask(FieldTCPSrc)
			x.orMask(FieldTCPDst)
			binary.BigEndian.PutUint16(buf[n:], k.TpSrc()^k.TpDst())
			n += 2
		}
	}
	var total uint64
	for i := range g.Buckets {
		total += uint64(g.Buckets[i].Weight)
	}
	if total == 0 {
		return nil
	}
	h := maphash.Bytes(seed, buf[:n]) % total
	for i := range g.Buckets {
		w := uint64(g.Buckets[i].Weight)
		if h < w {
			return &g.Buckets[i]
		}
		h -= w
	}
	return &g.Buckets[len(g.Buckets)-1]
}

// ctRequests recycles ct() requests: a request handed to the Conntrack
// interface escapes, so a fresh one would be a heap allocation per packet.
var ctRequests = sync.Pool{New: func() any { return new(CTRequest) }}

func (x *xlate) conntrack(a *CT) {
	k := &x.pkt.Key
	if x.ghost {
		// No connection is looked up or committed for the branch the
		// packet does not take; ct(table=N) freezes it, as in OVS.
		clearCt(k)
		x.exit = a.Table != TableNone
		return
	}
	req := ctRequests.Get().(*CTRequest)
	defer ctRequests.Put(req)
	*req = CTRequest{Zone: a.Zone, Commit: a.Commit, Force: a.Force, Alg: a.Alg, NAT: a.NAT}
	if a.ZoneSrc.Field != nil {
		x.orMaskRange(a.ZoneSrc)
		req.Zone = uint16(readRange(k, a.ZoneSrc))
	}
	for _, e := range a.Exec {
		var field *Field
		var value, mask []byte
		switch e := e.(type) {
		case *SetField:
			field, value, mask = e.Field, e.Value, e.Mask
		case *Move:
			// The source is read now, from the packet as it reaches ct():
			// it joins the megaflow, so a cached ct op carries the same
			// mark for every packet of the megaflow.
			x.orMaskRange(e.Src)
			field = e.Dst.Field
			value, mask = placeRange(e.Dst, readRangeBytes(k, e.Src))
		default:
			continue
		}
		switch field {
		case FieldCtMark:
			req.SetMark = true
			m, v := uint32(bytesToU64(mask)), uint32(bytesToU64(value))
			req.Mark = req.Mark&^m | v&m
			req.MarkMask |= m
		case FieldCtLabel:
			req.SetLabel = true
			for i := 0; i < 16; i++ {
				req.Label[i] = req.Label[i]&^mask[i] | value[i]&mask[i]
				req.LabelMask[i] |= mask[i]
			}
		}
	}
	// The 5-tuple conntrack reads is not part of the megaflow: a cached
	// segment runs conntrack again on every packet.
	if x.r != nil {
		x.r.op(DPOp{Kind: DPCT, CT: *req, Table: a.Table}, k)
	}
	saved := *x.pkt
	x.pkt.Commit()
	if x.traceCT != nil {
		x.traceCT.Execute(x.pkt, req)
	} else if x.p.Conntrack != nil {
		x.p.Conntrack.Execute(x.pkt, req)
	} else {
		clearCt(k)
		k.SetCtState(CtStateTrk | CtStateInv)
		k.SetCtZone(req.Zone)
		x.note("ct: no connection tracker configured, packet is +trk+inv")
	}
	if a.Table == TableNone {
		// Without table= the packet keeps its old ct state (ovs-actions(7)).
		copy(k[offCtZone:offCtTpDst+2], saved.Key[offCtZone:offCtTpDst+2])
		return
	}
	x.note("ct: recirculating to table %d with ct_state=%#x", a.Table, k.CtState())
	savedSeg := x.seg
	if x.res.Segments < MaxSegments {
		x.seg = x.res.Segments
	}
	x.res.Segments++
	x.maskTunnel()
	var savedRec recorder
	if x.r != nil {
		savedRec = *x.r
		k.SetRecircID(RecircID(a.Table))
		x.r.rec.Segments = append(x.r.rec.Segments, Segment{Start: *k, Cacheable: true})
		x.r.cur = len(x.r.rec.Segments) - 1
		x.r.wmask = Key{}
	}
	savedConntracked := x.conntracked
	x.conntracked = true
	r := x.runTable(a.Table)
	if x.freezing {
		// In OVS the recirculation is a translation of its own: a pause
		// there freezes only it, with its first flow's cookie, and the
		// actions after ct() go on.
		cookie := uint64(0)
		if r != nil {
			cookie = r.Cookie
		}
		x.finishFreezing(cookie)
		x.exit = false
	}
	x.conntracked = savedConntracked
	x.seg = savedSeg
	if x.r != nil {
		x.r.cur, x.r.wmask = savedRec.cur, savedRec.wmask
		x.r.after = append(x.r.after, savedRec.cur)
	}
	// The rest of the action list continues with the state before ct().
	x.pkt.Key, x.pkt.base = saved.Key, saved.base
}

// CtFieldsMask covers the ct_* fields of the key.
var CtFieldsMask = func() Key {
	var m Key
	for i := range m {
		m[i] = 0xff
	}
	clearCt(&m)
	for i := range m {
		m[i] = ^m[i]
	}
	return m
}()

func clearCt(k *Key) {
	for i := offCtZone; i < offCtTpDst+2; i++ {
		k[i] = 0
	}
	k[offCtNwProto] = 0
	for i := offCtIPv6Src; i < offCtIPv6Dst+16; i++ {
		k[i] = 0
	}
}

// pushVLAN and popVLAN change the frame's layout, not only key fields: a
// recording keeps them as datapath operations (DPPushVLAN, DPPopVLAN) in
// their place among the outputs, and the tag they leave as a write of
// vlan_tci, so a cached replay restores the key as the pipeline left it.
func (x *xlate) pushVLAN(ethType uint16) {
	if len(x.pkt.Frame) < 14 {
		return
	}
	x.orMask(FieldVlanTCI) // the new tag copies the outer one's TCI
	if x.r != nil {
		x.r.op(DPOp{Kind: DPPushVLAN, VLANType: ethType}, &x.pkt.Key)
	}
	x.pkt.PushVLAN(ethType)
	if x.r != nil {
		x.r.wroteField(FieldVlanTCI, []byte{0xff, 0xff})
	}
}

func (x *xlate) popVLAN() {
	x.orMask(FieldVlanTCI) // pops only a tagged frame
	if x.pkt.Key.VlanTCI()&VlanCFI == 0 || len(x.pkt.Frame) < 18 {
		return
	}
	if x.r != nil {
		x.r.op(DPOp{Kind: DPPopVLAN}, &x.pkt.Key)
	}
	x.pkt.PopVLAN()
	if x.r != nil {
		x.r.wroteField(FieldVlanTCI, []byte{0xff, 0xff})
	}
}

// learn builds the flow a learn() action adds.
func (x *xlate) learn(l *Learn) *Flow {
	k := &x.pkt.Key
	f := &Flow{Table: l.Table, Priority: l.Priority, Cookie: l.Cookie,
		IdleTimeout: l.IdleTimeout, HardTimeout: l.HardTimeout}
	for _, s := range l.Specs {
		var v []byte
		if s.Imm != nil {
			v = s.Imm
		} else {
			x.orMaskRange(s.Src)
			v = readRangeBytes(k, s.Src)
		}
		switch s.Kind {
		case LearnMatch:
			val, mask := placeRange(s.Dst, v)
			cur, curMask := f.Match.FieldValue(s.Dst.Field)
			for i := range val {
				val[i] = cur[i]&^mask[i] | val[i]&mask[i]
				mask[i] |= curMask[i]
			}
			f.Match.Set(s.Dst.Field, val, mask)
		case LearnLoad:
			val, mask := placeRange(s.Dst, v)
			f.Actions = append(f.Actions, &SetField{Field: s.Dst.Field, Value: val, Mask: mask, Raw: RawLoad})
		case LearnOutput:
			f.Actions = append(f.Actions, &Output{Port: uint32(bytesToU64(v))})
		}
	}
	return f
}

// Bit-range helpers over the key. A range's value is big-endian bytes of
// (NBits+7)/8, right-aligned.

func readRange(k *Key, r FieldRange) uint64 {
	if !r.Field.Wide() && r.NBits <= 64 {
		v := r.Field.Uint64(k) >> uint(r.Ofs)
		if r.NBits < 64 {
			v &= 1<<uint(r.NBits) - 1
		}
		return v
	}
	return bytesToU64(readRangeBytes(k, r))
}

func readRangeBytes(k *Key, r FieldRange) []byte {
	full := r.Field.Value(k)
	out := make([]byte, (r.NBits+7)/8)
	for i := 0; i < r.NBits; i++ {
		if getBit(full, r.Ofs+i) {
			setBit(out, i)
		}
	}
	return out
}

func writeRangeBytes(k *Key, r FieldRange, v []byte) {
	val, mask := placeRange(r, v)
	setFieldMasked(k, r.Field, val, mask)
}

// placeRange positions an (NBits)-bit value at r.Ofs within the field.
func placeRange(r FieldRange, v []byte) (val, mask []byte) {
	n := r.Field.Bytes
	val, mask = make([]byte, n), make([]byte, n)
	for i := 0; i < r.NBits; i++ {
		setBit(mask, r.Ofs+i)
		if getBit(v, i) {
			setBit(val, r.Ofs+i)
		}
	}
	return val, mask
}

func getBit(b []byte, i int) bool {
	idx := len(b) - 1 - i/8
	return idx >= 0 && b[idx]&(1<<uint(i%8)) != 0
}

func setBit(b []byte, i int) {
	idx := len(b) - 1 - i/8
	if idx >= 0 {
		b[idx] |= 1 << uint(i%8)
	}
}

// setFieldMasked sets the mask bits of field f to value.
func setFieldMasked(k *Key, f *Field, value, mask []byte) {
	if !f.Wide() {
		m, v := bytesToU64(mask), bytesToU64(value)
		cur := f.Uint64(k)
		f.SetUint64(k, cur&^m|v&m)
		return
	}
	cur := k[f.Off : f.Off+f.Size]
	for i := range cur {
		cur[i] = cur[i]&^mask[i] | value[i]&mask[i]
	}
}

// sortActionSet orders an action set for execution (OpenFlow 1.3 §5.10).
func sortActionSet(acts []Action) []Action {
	rank := func(a Action) int {
		switch a.(type) {
		case *CT, *CTClear:
			return 0
		case *PopVLAN, *PopMPLS:
			return 1
		case *PushMPLS:
			return 2
		case *PushVLAN:
			return 3
		case *DecTTL, *DecMPLSTTL:
			return 4
		case *SetField, *Move, *SetMPLSTTL, *SetMPLSLabel, *SetMPLSTC:
			return 5
		case *SetQueue:
			return 6
		case *Group:
			return 7
		case *Output, *OutputReg, *Controller, *Enqueue:
			return 8
		}
		return 5
	}
	// A stable insertion sort: the set holds a few actions, and
	// sort.SliceStable would box the slice, which makes the whole
	// translation state (and its Result) escape to the heap on every
	// packet, action set or not.
	for i := 1; i < len(acts); i++ {
		for j := i; j > 0 && rank(acts[j]) < rank(acts[j-1]); j-- {
			acts[j], acts[j-1] = acts[j-1], acts[j]
		}
	}
	return acts
}

// mergeActionSet adds acts to the set: one action of each kind, set-fields
// one per field (OpenFlow write_actions semantics).
func mergeActionSet(set, acts []Action) []Action {
	for _, a := range acts {
		replaced := false
		for i, s := range set {
			if sameSetSlot(s, a) {
				set[i] = a
				replaced = true
				break
			}
		}
		if !replaced {
			set = append(set, a)
		}
	}
	return set
}

func sameSetSlot(a, b Action) bool {
	if sa, ok := a.(*SetField); ok {
		sb, ok := b.(*SetField)
		return ok && sa.Field == sb.Field
	}
	return a.Name() == b.Name()
}
