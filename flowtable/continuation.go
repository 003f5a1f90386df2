package flowtable

import "slices"

// Continuations: controller(pause) freezes the packet's translation and
// NXT_RESUME thaws it (ovs-actions(7) "controller", OVS's "freezing" in
// ofproto-dpif-xlate.c). As in OVS, the action that pauses sets exit and
// freezing; each level of the walk, as it unwinds, appends the actions it
// had left (goto_table as a resubmit, write_metadata as a set_field), and
// an UnrollXlate before an action that reports its table and cookie. The
// frozen actions, action set, stack and ct state go to the controller in
// the packet-in; the controller sends them back to resume. A pause is
// rare: nothing here runs for a packet that does not pause.

// Continuation is a translation frozen at controller(pause): what the
// packet-in carries (NXPINT_CONTINUATION) and NXT_RESUME brings back.
type Continuation struct {
	// Actions are the actions left when the translation froze, innermost
	// first, with UnrollXlate markers (OVS NXCPT_TABLE_ID/COOKIE/ACTIONS).
	Actions []Action
	// ActionSet is the OpenFlow 1.1+ action set (NXCPT_ACTION_SET).
	ActionSet []Action
	// Stack is the push/pop stack, bottom first (NXCPT_STACK).
	Stack [][]byte
	// Conntracked says the packet went through ct() with a recirculation
	// before the pause, so its ct_* fields stay (NXCPT_CONNTRACKED).
	Conntracked bool
}

// UnrollXlate restores the table and cookie a frozen action reports in a
// packet-in (OVS OFPACT_UNROLL_XLATE). It exists only inside a
// Continuation's actions and is never part of a flow.
type UnrollXlate struct {
	Table  uint8
	Cookie uint64
}

// Name implements Action.
func (*UnrollXlate) Name() string { return "unroll_xlate" }

// CookieNone is the cookie of a translation that did not start from a
// flow (a packet-out or a resume), OVS's OVS_BE64_MAX: a packet-in with
// it carries no cookie property.
const CookieNone = ^uint64(0)

// pauseAt freezes the translation at a controller(pause) action.
func (x *xlate) pauseAt(a *Controller) {
	x.pause = a
	x.freezing = true
	x.exit = true
}

// freezePutUnroll appends an UnrollXlate for the current table and
// cookie unless the last one says the same (freeze_put_unroll_xlate).
func (x *xlate) freezePutUnroll() {
	if u := x.unroll; u != nil && u.Table == x.table && u.Cookie == x.cookie {
		return
	}
	x.unroll = &UnrollXlate{Table: x.table, Cookie: x.cookie}
	x.frozen = append(x.frozen, x.unroll)
}

// freezeUnroll appends the actions a level of the walk had left to the
// frozen actions (freeze_unroll_actions).
func (x *xlate) freezeUnroll(acts []Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case *Output, *OutputReg, *Group, *Controller, *DecMPLSTTL, *DecTTL:
			// These may send a packet-in, which names table and cookie.
			x.freezePutUnroll()
		case *Resubmit:
			if a.Table == TableNone {
				x.freezePutUnroll() // relative to the current table
			}
		case *GotoTable:
			// An instruction: resumed as the action it amounts to.
			x.frozen = append(x.frozen, &Resubmit{InPort: PortInPort, Table: a.Table})
			continue
		case *WriteMetadata:
			v, m := make([]byte, 8), make([]byte, 8)
			putU64(v, a.Value&a.Mask)
			putU64(m, a.Mask)
			// Travels as OVS encodes a masked set_field it made itself
			// (load: before OpenFlow 1.5).
			x.frozen = append(x.frozen, &SetField{Field: FieldMetadata, Value: v, Mask: m, Raw: RawLoad})
			continue
		case *Note, *Conjunction:
			continue
		}
		x.frozen = append(x.frozen, a)
	}
}

// finishFreezing sends the paused packet to the controllers with its
// continuation and ends the freeze (finish_freezing). OVS reports table 0
// (the frozen state's table) and the cookie of the flow at the level
// where the freeze ends. A trace (dry run) sends nothing, as OVS's
// ofproto/trace.
func (x *xlate) finishFreezing(cookie uint64) {
	c := &Continuation{Actions: x.frozen, Conntracked: x.conntracked}
	if len(x.actionSet) > 0 {
		c.ActionSet = append([]Action(nil), x.actionSet...)
	}
	for _, e := range x.stack {
		c.Stack = append(c.Stack, e.value)
	}
	a := x.pause
	x.freezing, x.pause, x.frozen, x.unroll = false, nil, nil, nil
	if x.dry {
		if x.tr != nil {
			x.tr.Final = x.pkt.Key
		}
		return
	}
	x.emitPacketIn(&PacketIn{Reason: a.Reason, MaxLen: a.MaxLen, ControllerID: a.ControllerID,
		UserData: a.UserData, Pause: true, Cookie: cookie, Continuation: c}, nil)
}

// finish ends a translation at its top level: the action set runs unless
// the packet paused (then it travels in the continuation), and a pause in
// the action set itself is finished too.
func (x *xlate) finish(cookie uint64) {
	x.runActionSet(true)
	if x.freezing {
		x.finishFreezing(cookie)
	}
}

// runActionSet runs and empties the action set (xlate_action_set) unless
// the walk paused or exited. A trace shows it under "Executing action
// set", under the flow whose actions ran last (OVS adds it to the
// current trace list, which at the top level is still the first
// table's: top adds that level). Only a trace nests it: depth also
// decides which lookups deepen the recursion budget (runTable).
func (x *xlate) runActionSet(top bool) {
	if x.freezing || x.exit || len(x.actionSet) == 0 {
		return
	}
	set := sortActionSet(x.actionSet)
	x.actionSet = x.actionSet[:0:0]
	saved := x.depth
	if x.tr != nil {
		x.depth++
		if top {
			x.depth++
		}
		x.tr.Events = append(x.tr.Events, TraceEvent{Kind: TraceActionSet, Depth: x.depth})
	}
	x.execute(set)
	x.depth = saved
}

// traceActionSet shows the action set in a trace after write_actions
// (verb "is") or before clear_actions ("was"), in execution order, as
// OVS's xlate_report_action_set.
func (x *xlate) traceActionSet(verb string) {
	set := sortActionSet(slices.Clone(x.actionSet))
	x.tr.Events = append(x.tr.Events, TraceEvent{Kind: TraceNote, Depth: x.depth, Msg: "action set " + verb, Action: &WriteActions{Actions: set}})
}

// Resume continues a translation frozen at controller(pause) (OVS
// xlate_resume): pkt holds the packet the controller sent back, extracted,
// with the metadata of its NXT_RESUME (in_port, registers, tunnel, ct
// fields). The ct fields count only if the continuation says the packet
// was conntracked. The walk starts in table 0 with the cookie of no flow;
// the continuation's UnrollXlate actions restore the rest.
func (p *Pipeline) Resume(pkt *Packet, c *Continuation, sink Sink, tr *Trace) Result {
	x := p.newControllerXlate(pkt, sink, tr)
	x.conntracked = c.Conntracked
	if !c.Conntracked {
		clearCt(&pkt.Key)
	}
	for _, v := range c.Stack {
		x.stack = append(x.stack, stackEntry{value: v})
	}
	x.actionSet = mergeActionSet(nil, c.ActionSet)
	return p.runActions(&x, c.Actions)
}

// newControllerXlate starts the translation of a packet a controller sent
// (packet-out, resume): no flow, so the cookie of none.
func (p *Pipeline) newControllerXlate(pkt *Packet, sink Sink, tr *Trace) xlate {
	x := xlate{p: p, pkt: pkt, sink: sink, tr: tr, cookie: CookieNone, counters: &p.sharedCounters}
	if pkt.Counters != nil {
		x.counters = pkt.Counters
	}
	x.begin()
	return x
}

// runActions runs acts as the top level of x's walk, then the action set
// (or the pause's packet-in), and installs what the walk learned.
func (p *Pipeline) runActions(x *xlate, acts []Action) Result {
	x.s = p.enterWalk()
	x.execute(acts)
	x.finish(x.cookie)
	p.leaveWalk(x.s)
	if x.tr != nil && x.res.Outputs+x.res.PacketIns == 0 {
		x.tr.Final = x.pkt.Key
	}
	for _, f := range x.learned {
		p.addLearned(f)
	}
	return x.res
}

func putU64(b []byte, v uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}

// resumeMetadata lists the fields a resume restores from its metadata
// (OVS frozen_metadata_to_flow and pkt_metadata_from_flow). A function:
// the registers are registered by an init.
func resumeMetadata() []*Field {
	fs := []*Field{FieldInPort, FieldTunID, FieldTunSrc, FieldTunDst, FieldTunIPv6Src, FieldTunIPv6Dst, FieldMetadata, FieldPktMark,
		FieldCtState, FieldCtZone, FieldCtMark, FieldCtLabel, FieldCtNwProto, FieldCtNwSrc, FieldCtNwDst,
		FieldCtIPv6Src, FieldCtIPv6Dst, FieldCtTpSrc, FieldCtTpDst}
	return append(fs, FieldReg[:]...)
}

// SetMetadata sets the packet metadata fields m matches (a packet-in's
// or NXT_RESUME's metadata) in k; header fields of m are left out.
func (k *Key) SetMetadata(m *Match) {
	for _, f := range resumeMetadata() {
		if v, mask := m.FieldValue(f); !allZeroBytes(mask) {
			setFieldMasked(k, f, v, mask)
		}
	}
}

func allZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
