package flowtable

import "slices"

// The field stack (push/pop) and check_pkt_larger: translation state and
// packet properties that are not part of the key, so each says what a
// flow cache may keep.

// stackEntry is one pushed value: (NBits+7)/8 bytes, right-aligned, and
// the segment that pushed it.
type stackEntry struct {
	value []byte
	seg   int
}

// stackPush pushes the source subfield (nxm_execute_stack_push); the
// source joins the megaflow. The stack lives for the whole translation,
// across resubmits and recirculations, as OVS keeps it.
func (x *xlate) stackPush(a *StackPush) {
	x.orMaskRange(a.Src)
	x.stack = append(x.stack, stackEntry{value: readRangeBytes(&x.pkt.Key, a.Src), seg: x.seg})
}

// stackPop writes the top of the stack into the destination subfield
// (nxm_execute_stack_pop); popping an empty stack changes nothing and is
// reported, as OVS does.
func (x *xlate) stackPop(a *StackPop) {
	if len(x.stack) == 0 {
		x.note("pop: stack underflow")
		return
	}
	e := x.stack[len(x.stack)-1]
	x.stack = x.stack[:len(x.stack)-1]
	if e.seg != x.seg {
		// The value came from before a recirculation: the segment's start
		// key does not determine it.
		x.uncacheable("pop of a value pushed before recirculation")
	}
	val, mask := placeRange(a.Dst, e.value)
	setFieldMasked(&x.pkt.Key, a.Dst.Field, val, mask)
	if x.r != nil {
		x.r.wroteField(a.Dst.Field, mask)
	}
}

// checkPktLarger sets the 1-bit destination to whether the packet is
// longer than a.Len bytes. The length is not in the key, so a flow cache
// must not keep the segment (OVS sets SLOW_ACTION when its datapath lacks
// check_pkt_len).
func (x *xlate) checkPktLarger(a *CheckPktLarger) {
	x.uncacheable("check_pkt_larger: depends on the packet length")
	bit := byte(0)
	if len(x.pkt.Frame) > int(a.Len) {
		bit = 1
	}
	val, mask := placeRange(a.Dst, []byte{bit})
	setFieldMasked(&x.pkt.Key, a.Dst.Field, val, mask)
	if x.r != nil {
		x.r.wroteField(a.Dst.Field, mask)
	}
}

// otherBranch walks rest, the actions after a check_pkt_larger, with the
// result the packet did not get, for the counters only. OVS translates
// the actions that follow into both branches of the datapath's
// check_pkt_len, so every rule, table and group either branch reaches
// counts the packet; the walk here has no output, packet-in, conntrack,
// meter or learning, and a private copy of the packet (check_pkt_larger
// walks are never cached, so the copy is off the fast path).
// from is the packet as it reached the check_pkt_larger; tr, non-nil in
// a trace only, records the walk.
func (x *xlate) otherBranch(a *CheckPktLarger, rest []Action, from *Packet, tr *Trace) {
	pkt := *from
	pkt.Frame = append([]byte(nil), from.Frame...)
	g := *x
	g.pkt = &pkt
	g.sink, g.tr, g.r = nil, tr, nil
	g.ghost, g.exit = true, false
	g.learned, g.frozen, g.unroll, g.pause, g.freezing = nil, nil, nil, nil, false
	g.stack = slices.Clone(x.stack)
	g.actionSet = slices.Clone(x.actionSet)
	bit := byte(1)
	if len(from.Frame) > int(a.Len) {
		bit = 0
	}
	val, mask := placeRange(a.Dst, []byte{bit})
	setFieldMasked(&pkt.Key, a.Dst.Field, val, mask)
	g.execute(rest)
}

// traceBranches runs a check_pkt_larger (its trace event at ev) and the
// actions after it in a trace as OVS translates them: the greater branch,
// then the less-or-equal one, each between TraceBranch marks, the one
// the packet does not take walked as otherBranch does. The trace is off
// the packet path, so the copy of the packet here costs nothing there.
func (x *xlate) traceBranches(a *CheckPktLarger, rest []Action, ev int) {
	from := *x.pkt
	from.Frame = append([]byte(nil), x.pkt.Frame...)
	x.do(a)
	x.tr.Events[ev].After = x.pkt.Key
	larger := len(from.Frame) > int(a.Len)
	mark := func(msg string) {
		x.tr.Events = append(x.tr.Events, TraceEvent{Kind: TraceBranch, Depth: x.depth, Port: uint32(a.Len), Msg: msg})
	}
	mark("gt")
	if larger {
		x.execute(rest)
	} else {
		x.otherBranch(a, rest, &from, x.tr)
	}
	mark("le")
	if larger {
		x.otherBranch(a, rest, &from, x.tr)
	} else {
		x.execute(rest)
	}
	mark("")
}
