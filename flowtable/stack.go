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

// checkPktLargerBranches runs a check_pkt_larger and the actions after it
// (rest) as Open vSwitch 3.1 translates them into the datapath's
// check_pkt_len (xlate_check_pkt_larger): the greater branch, then the
// less-or-equal one, each with the destination bit set accordingly and
// ending with its own run of the action set. The branch the packet takes
// runs on a copy of it; the other is walked for the counters only
// (otherBranch). As in OVS, the less-or-equal branch starts with an empty
// action set (the greater one's run emptied it) and the stack the greater
// one left. A pause in a branch is finished at the branch's end (the
// continuation holds the rest of the branch only). Afterwards the flow,
// stack and action set are as before the check_pkt_larger and the level
// that held it ends; the levels above go on unless the greater branch
// exited (OVS 3.1 restores the exit flag the greater branch left, so a
// pause or exit there also ends the walk for a packet that took the
// other branch). ev is the check_pkt_larger's trace event (-1: no
// trace). Packets through check_pkt_larger are never cached, so the
// copies here are off the fast path.
func (x *xlate) checkPktLargerBranches(a *CheckPktLarger, rest []Action, ev int) {
	x.uncacheable("check_pkt_larger: depends on the packet length")
	orig := x.pkt
	savedSet, savedStack := x.actionSet, x.stack
	savedCT := x.conntracked
	gtExit := false
	larger := len(orig.Frame) > int(a.Len)
	ghosts := !x.dry || x.tr != nil
	stack := savedStack
	if ev >= 0 {
		// The bit is written inside the branches only.
		x.tr.Events[ev].After = orig.Key
	}
	for _, gt := range []bool{true, false} {
		if x.tr != nil {
			msg := "le"
			if gt {
				msg = "gt"
			}
			x.tr.Events = append(x.tr.Events, TraceEvent{Kind: TraceBranch, Depth: x.depth, Port: uint32(a.Len), Msg: msg})
		}
		set := []Action(nil)
		if gt {
			set = slices.Clone(savedSet)
		}
		if gt != larger {
			if ghosts {
				var exit bool
				stack, exit = x.otherBranch(a, gt, rest, orig, set, stack)
				gtExit = gtExit || gt && exit
			}
			continue
		}
		pkt := *orig
		pkt.Frame = append([]byte(nil), orig.Frame...)
		pkt.lent = false
		setCheckBit(&pkt, a, gt)
		x.pkt, x.actionSet, x.stack = &pkt, set, slices.Clone(stack)
		dropped := x.meterDropped
		x.meterDropped = false
		x.traceEmptyBranch(rest)
		x.execute(rest)
		x.runActionSet(false)
		if x.freezing {
			x.finishFreezing(x.cookie) // finish_freezing at the branch's end
		}
		stack = x.stack
		// A meter drops the branch's copy of the packet in the datapath;
		// the translation goes on (only a translation exit counts).
		gtExit = gtExit || gt && x.exit && !x.meterDropped
		x.exit, x.conntracked, x.meterDropped = false, savedCT, dropped
	}
	if x.tr != nil {
		x.tr.Events = append(x.tr.Events, TraceEvent{Kind: TraceBranch, Depth: x.depth, Port: uint32(a.Len)})
	}
	x.pkt, x.actionSet, x.stack = orig, savedSet, savedStack
	x.exit, x.conntracked = gtExit, savedCT
}

// setCheckBit writes check_pkt_larger's result into its destination.
func setCheckBit(pkt *Packet, a *CheckPktLarger, larger bool) {
	bit := byte(0)
	if larger {
		bit = 1
	}
	val, mask := placeRange(a.Dst, []byte{bit})
	setFieldMasked(&pkt.Key, a.Dst.Field, val, mask)
}

// otherBranch walks rest, the actions after a check_pkt_larger, and then
// the action set, as the branch the packet does not take (gt: the
// greater one), for the counters (and a trace) only: no output,
// packet-in, conntrack, meter or learning, and a private copy of the
// packet as it reached the check_pkt_larger (from), of the action set
// (set) and of the stack. It returns the stack the walk left and whether
// it exited (a pause, exit, a dropping meter).
func (x *xlate) otherBranch(a *CheckPktLarger, gt bool, rest []Action, from *Packet, set []Action, stack []stackEntry) ([]stackEntry, bool) {
	pkt := *from
	pkt.Frame = append([]byte(nil), from.Frame...)
	pkt.lent = false
	g := *x
	g.pkt = &pkt
	g.sink, g.r = nil, nil
	g.ghost, g.exit = true, false
	g.learned, g.frozen, g.unroll, g.pause, g.freezing = nil, nil, nil, nil, false
	g.stack = slices.Clone(stack)
	g.actionSet = set
	setCheckBit(&pkt, a, gt)
	g.traceEmptyBranch(rest)
	g.execute(rest)
	g.runActionSet(false)
	return g.stack, g.exit
}

// traceEmptyBranch shows a branch with no actions as OVS does ("drop",
// do_xlate_actions of an empty list).
func (x *xlate) traceEmptyBranch(rest []Action) {
	if len(rest) == 0 && x.tr != nil {
		x.note("drop")
	}
}
