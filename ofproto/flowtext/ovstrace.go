package flowtext

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpact"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// OVSTrace runs `ovs-appctl ofproto/trace` on a pipeline and prints it as
// Open vSwitch 3.1 does (ofproto/ofproto-dpif-trace.c): the flow, the
// tables with the flow each matched and the actions it ran, the final
// flow, the megaflow and the datapath actions; then, for each ct(table=N)
// recirculation, a banner and the same for the resumed pass, with the
// ct_state --ct-next gives (default trk|new) and NAT simulated by the
// first address and port of the range.
type OVSTrace struct {
	Bridge string
	// CtNext are the --ct-next states, used by the recirculations in turn.
	CtNext []uint32
	// NextRecircID allocates the recirc_id of each recirculation (OVS's
	// ids grow from trace to trace).
	NextRecircID func() uint32
	// DatapathPort prints a port number in "Datapath actions" (nil: the
	// number).
	DatapathPort func(port uint32) string
	Options      *PrintOptions
}

// traceConntrack stands for the connection tracker in a trace: ct(table=N)
// resumes with the next --ct-next state (trk|new by default) in the ct()'s
// zone, NAT applied as OVS's trace simulates it; ct() without a table
// changes nothing (its state is discarded after it).
type traceConntrack struct {
	tr      *flowtable.Trace
	ctNext  []uint32
	reqs    map[int]flowtable.CTRequest // by the ct() action's event index
	states  map[int]ctResume
	pending int
}

type ctResume struct {
	state    uint32
	explicit bool // from --ct-next, not the default
	nat      *flowtable.NAT
	initial  flowtable.Key // the flow before NAT, for the banner
}

func (c *traceConntrack) Execute(pkt *flowtable.Packet, req *flowtable.CTRequest) {
	ev := len(c.tr.Events) - 1
	c.reqs[ev] = *req
	a, _ := c.tr.Events[ev].Action.(*flowtable.CT)
	if a == nil || a.Table == flowtable.TableNone {
		return
	}
	r := ctResume{state: flowtable.CtStateTrk | flowtable.CtStateNew, nat: req.NAT, initial: pkt.Key}
	if len(c.ctNext) > 0 {
		r.state, r.explicit = c.ctNext[0], true
		c.ctNext = c.ctNext[1:]
	}
	k := &pkt.Key
	k.SetCtState(r.state)
	k.SetCtZone(req.Zone)
	if n := req.NAT; n != nil && n.AddrMin.IsValid() {
		v4 := n.AddrMin.Is4()
		switch {
		case n.Flags&flowtable.NATSrc != 0 && v4:
			flowtable.FieldIPv4Src.SetValue(k, n.AddrMin.AsSlice())
		case n.Flags&flowtable.NATDst != 0 && v4:
			flowtable.FieldIPv4Dst.SetValue(k, n.AddrMin.AsSlice())
		case n.Flags&flowtable.NATSrc != 0:
			flowtable.FieldIPv6Src.SetValue(k, n.AddrMin.AsSlice())
		case n.Flags&flowtable.NATDst != 0:
			flowtable.FieldIPv6Dst.SetValue(k, n.AddrMin.AsSlice())
		}
		if n.PortMin != 0 {
			if n.Flags&(flowtable.NATSrc|flowtable.NATDst) != 0 {
				tpField(k, n.Flags&flowtable.NATDst != 0).SetUint64(k, uint64(n.PortMin))
			}
		}
	}
	c.states[ev] = r
}

// tpField is the transport port field (source or destination) of the
// key's protocol: OVS's tp_src/tp_dst.
func tpField(k *flowtable.Key, dst bool) *flowtable.Field {
	switch k.NwProto() {
	case flowtable.IPProtoUDP:
		if dst {
			return flowtable.FieldUDPDst
		}
		return flowtable.FieldUDPSrc
	case flowtable.IPProtoSCTP:
		if dst {
			return flowtable.FieldSCTPDst
		}
		return flowtable.FieldSCTPSrc
	}
	if dst {
		return flowtable.FieldTCPDst
	}
	return flowtable.FieldTCPSrc
}

// tracePass is one translation: the packet as received, or a resumed
// recirculation.
type tracePass struct {
	recirc  uint32
	start   flowtable.Key
	events  []flowtable.TraceEvent
	base    int // event depth of the pass's first table
	seg     int // megaflow segment
	resume  ctResume
	parent  *tracePass
	ctIndex map[int]*tracePass // child passes by the ct() event's index in events
	reqs    map[int]flowtable.CTRequest
}

// Run traces key (in_port and metadata set) through p.
func (t *OVSTrace) Run(p *flowtable.Pipeline, key flowtable.Key) (string, error) {
	var pkt flowtable.Packet
	frame := flowtable.BuildFrame(&key, 0)
	pkt.Key = key
	if err := pkt.Extract(frame); err != nil {
		return "", err
	}
	// The flow is what the user gave, zeros included (the frame built for
	// it has defaults such as ttl 64 that OVS's trace does not invent).
	pkt.Key = key
	start := pkt.Key
	var tr flowtable.Trace
	ct := &traceConntrack{tr: &tr, ctNext: t.CtNext, reqs: map[int]flowtable.CTRequest{}, states: map[int]ctResume{}}
	res := p.TraceRun(&pkt, ct, nil, &tr)

	// Split the walk into passes: the events under a ct(table=N) are the
	// recirculated pass, printed after the one that recirculated.
	root := &tracePass{start: start, base: 1}
	seg := 0
	var split func(ps *tracePass, evs []flowtable.TraceEvent, idx0 int)
	split = func(ps *tracePass, evs []flowtable.TraceEvent, idx0 int) {
		for i := 0; i < len(evs); i++ {
			e := evs[i]
			ps.events = append(ps.events, e)
			if req, ok := ct.reqs[idx0+i]; ok {
				if ps.reqs == nil {
					ps.reqs = map[int]flowtable.CTRequest{}
				}
				ps.reqs[len(ps.events)-1] = req
			}
			r, ok := ct.states[idx0+i]
			if !ok {
				continue
			}
			d := e.Depth
			j := i + 1
			for j < len(evs) && evs[j].Depth == d && evs[j].Kind == flowtable.TraceNote {
				j++ // govs's own "recirculating" note
			}
			k := j
			for k < len(evs) && evs[k].Depth > d {
				k++
			}
			seg++
			child := &tracePass{base: d + 1, seg: min(seg, flowtable.MaxSegments-1), resume: r, parent: ps}
			if j < k {
				child.start = evs[j].Before
			}
			if ps.ctIndex == nil {
				ps.ctIndex = map[int]*tracePass{}
			}
			ps.ctIndex[len(ps.events)-1] = child
			split(child, evs[j:k], idx0+j)
			i = k - 1
		}
	}
	split(root, tr.Events, 0)

	// Number and print the passes in OVS's order: a queue.
	queue := []*tracePass{root}
	var b strings.Builder
	for qi := 0; qi < len(queue); qi++ {
		ps := queue[qi]
		for _, ev := range sortedKeys(ps.ctIndex) {
			c := ps.ctIndex[ev]
			if t.NextRecircID != nil {
				c.recirc = t.NextRecircID()
			} else {
				c.recirc = uint32(len(queue))
			}
			queue = append(queue, c)
		}
		if qi > 0 {
			t.banner(&b, ps)
		}
		t.printPass(&b, ps, &res)
	}
	return b.String(), nil
}

func sortedKeys(m map[int]*tracePass) []int {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

func (t *OVSTrace) banner(b *strings.Builder, ps *tracePass) {
	b.WriteString("\n\n")
	b.WriteString(strings.Repeat("=", 79))
	fmt.Fprintf(b, "\nrecirc(%#x)", ps.recirc)
	if ps.resume.explicit {
		b.WriteString(" - resume conntrack with ct_state=")
		var s strings.Builder
		ofptext.FormatFlags(&s, uint64(ps.resume.state), ofptext.CtStateNames, '|')
		b.WriteString(s.String())
	} else {
		b.WriteString(" - resume conntrack with default ct_state=trk|new (use --ct-next to customize)")
	}
	b.WriteByte('\n')
	if n := ps.resume.nat; n != nil {
		b.WriteString("Replacing src/dst IP/ports to simulate NAT:\n Initial flow: ")
		ipFlow(b, &ps.resume.initial, n)
		b.WriteString(" Modified flow: ")
		ipFlow(b, &ps.start, n)
	}
	b.WriteString(strings.Repeat("=", 79))
	b.WriteString("\n\n")
}

func ipFlow(b *strings.Builder, k *flowtable.Key, n *flowtable.NAT) {
	switch {
	case n.AddrMin.Is4():
		fmt.Fprintf(b, "nw_src=%s,tp_src=%d,nw_dst=%s,tp_dst=%d", fieldText(flowtable.FieldIPv4Src, k), tpField(k, false).Uint64(k), fieldText(flowtable.FieldIPv4Dst, k), tpField(k, true).Uint64(k))
	case n.AddrMin.Is6():
		fmt.Fprintf(b, "ipv6_src=%s,tp_src=%d,ipv6_dst=%s,tp_dst=%d", fieldText(flowtable.FieldIPv6Src, k), tpField(k, false).Uint64(k), fieldText(flowtable.FieldIPv6Dst, k), tpField(k, true).Uint64(k))
	}
	b.WriteByte('\n')
}

func fieldText(f *flowtable.Field, k *flowtable.Key) string {
	return FieldValueString(f, f.Value(k), nil)
}

// traceNode is one line of OVS's trace tree (struct oftrace_node).
type traceNode struct {
	kind byte // 'b' bridge, 't' table, 'h' thaw, 'a' action, 'd' detail, 'w' warn, 'e' error
	text string
	subs []*traceNode
}

func (n *traceNode) add(kind byte, text string) *traceNode {
	c := &traceNode{kind: kind, text: text}
	n.subs = append(n.subs, c)
	return c
}

func terminal(kind byte) bool { return kind == 'a' || kind == 'd' || kind == 'w' || kind == 'e' }

// printNodes indents as oftrace_node_print_details: a node that is last
// in its list and not terminal (a table after goto/resubmit as the last
// action) stays at its parent's level, so tail calls do not nest.
func printNodes(b *strings.Builder, nodes []*traceNode, level int) {
	for i, n := range nodes {
		if n.kind == 'b' {
			b.WriteByte('\n')
		}
		more := 0
		if i < len(nodes)-1 || terminal(n.kind) {
			more = 1
		}
		ind := strings.Repeat(" ", (level+more)*4)
		b.WriteString(ind)
		switch n.kind {
		case 'd':
			b.WriteString(" -> " + n.text + "\n")
		case 'w':
			b.WriteString(" >> " + n.text + "\n")
		case 'e':
			b.WriteString(" >>>> " + n.text + " <<<<\n")
		case 'b':
			b.WriteString(n.text + "\n" + ind + strings.Repeat("-", len(n.text)) + "\n")
		default:
			b.WriteString(n.text + "\n")
		}
		printNodes(b, n.subs, level+2*more)
	}
}

// noteNode turns a govs pipeline note into OVS's wording, or "" for
// notes OVS has no line for.
func noteNode(msg string) (byte, string) {
	switch {
	case strings.HasPrefix(msg, "NORMAL: no learned MAC"):
		return 'd', "no learned MAC for destination, flooding"
	case strings.HasPrefix(msg, "NORMAL: forwarding to learned port"):
		return 'd', "forwarding to learned port"
	case strings.HasPrefix(msg, "NORMAL: learned port of"):
		return 'd', "learned port is input port, dropping"
	case strings.HasPrefix(msg, "ct: "), strings.HasPrefix(msg, "no match"), strings.HasPrefix(msg, "skipping output to input port"):
		return 0, ""
	case msg == "drop":
		return 'a', "drop"
	case strings.HasPrefix(msg, "over max translation depth"):
		return 'e', "Resubmit actions recursed over 64 times"
	}
	return 'w', msg
}

func (t *OVSTrace) printPass(b *strings.Builder, ps *tracePass, res *flowtable.Result) {
	o := t.Options
	start := ps.start
	if ps.recirc != 0 {
		flowtable.FieldRecircID.SetUint64(&start, uint64(ps.recirc))
	}
	b.WriteString("Flow: " + FlowString(&start, o) + "\n")

	root := &traceNode{kind: 'b', text: fmt.Sprintf("bridge(\"%s\")", t.Bridge)}
	if ps.parent != nil {
		th := root.add('h', "thaw")
		table := uint8(0)
		if len(ps.events) > 0 {
			table = ps.events[0].Table
		}
		th.add('h', fmt.Sprintf("Resuming from table %d", table))
	}
	lists := map[int]*traceNode{}
	cur := start
	var dp []string
	var branches []cplBranch
	committed := start
	for i, e := range ps.events {
		d := e.Depth - ps.base
		parent := root
		if d > 0 && lists[d-1] != nil {
			parent = lists[d-1]
		}
		switch e.Kind {
		case flowtable.TraceLookup:
			var n *traceNode
			if e.Rule == nil {
				n = parent.add('t', fmt.Sprintf("%2d. No match.", e.Table))
				n.add('a', "drop")
			} else {
				rm := e.Rule.Match()
				m := MatchString(&rm, flowtable.DefaultPriority, o)
				text := fmt.Sprintf("%2d. ", e.Table)
				if m != "" {
					text += m + ", "
				}
				text += fmt.Sprintf("priority %d", e.Rule.Priority)
				if e.Rule.Cookie != 0 {
					text += fmt.Sprintf(", cookie %#x", e.Rule.Cookie)
				}
				n = parent.add('t', text)
				if len(e.Rule.Actions) == 0 {
					n.add('a', "drop")
				}
			}
			lists[d] = n
		case flowtable.TraceAction:
			tn := lists[d]
			if tn == nil {
				tn = root
			}
			tn.add('a', ActionsString([]flowtable.Action{e.Action}, o))
			switch a := e.Action.(type) {
			case *flowtable.CT:
				dp = append(dp, t.commitSets(&committed, &cur)...)
				execs := 0
				if a.NAT != nil {
					tn.add('a', ofpact.NATString(a.NAT))
					execs++
				}
				for _, x := range a.Exec {
					tn.add('a', ActionsString([]flowtable.Action{x}, o))
					execs++
				}
				if execs == 0 {
					tn.add('a', "drop")
				}
				act := datapathCT(a, ps.req(i))
				if c := ps.ctIndex[i]; c != nil {
					tn.add('d', fmt.Sprintf("A clone of the packet is forked to recirculate. The forked pipeline will be resumed at table %d.", a.Table))
					act += fmt.Sprintf(",recirc(%#x)", c.recirc)
				}
				tn.add('d', "Sets the packet to an untracked state, and clears all the conntrack fields.")
				dp = append(dp, act)
				clearCtFields(&cur)
			case *flowtable.CTClear:
				clearCtFields(&cur)
			case *flowtable.OutputReg:
				// OVS names the port the register held.
				if i+1 < len(ps.events) && ps.events[i+1].Kind == flowtable.TraceOutput {
					tn.add('d', fmt.Sprintf("output port is %d", ps.events[i+1].Port))
				}
				keepCt(&cur, &e.After)
			case *flowtable.Meter:
				if e.Meter != nil {
					dp = append(dp, fmt.Sprintf("meter(%d)", e.Meter.Provider))
				}
				keepCt(&cur, &e.After)
			case *flowtable.StackPop:
				// OVS reports the popped value (xlate_report_subfield).
				if f := a.Dst.Field; !f.Wide() {
					v := f.Uint64(&e.After) >> a.Dst.Ofs
					if a.Dst.NBits < 64 {
						v &= 1<<a.Dst.NBits - 1
					}
					tn.add('d', fmt.Sprintf("%s is now %s", SubfieldString(a.Dst), hexOrZero(v)))
				}
				keepCt(&cur, &e.After)
			case *flowtable.Resubmit, *flowtable.GotoTable, *flowtable.Group:
			default:
				keepCt(&cur, &e.After)
			}
		case flowtable.TraceNote:
			tn := lists[d]
			if tn == nil {
				tn = root
			}
			if wa, ok := e.Action.(*flowtable.WriteActions); ok {
				// write_actions or clear_actions: the action set.
				if len(wa.Actions) == 0 {
					tn.add('d', e.Msg+" empty")
				} else {
					tn.add('d', e.Msg+": "+ActionsString(wa.Actions, o))
				}
				continue
			}
			if kind, text := noteNode(e.Msg); kind != 0 {
				tn.add(kind, text)
			}
		case flowtable.TraceActionSet:
			lists[d] = parent.add('t', "--. Executing action set:")
		case flowtable.TraceBranch:
			// check_pkt_larger: both branches' datapath actions go in
			// one check_pkt_len, each branch from the same flow.
			switch e.Msg {
			case "gt":
				dp = append(dp, t.commitSets(&committed, &cur)...)
				branches = append(branches, cplBranch{outer: dp, cur: cur, committed: committed})
				dp = nil
			case "le":
				br := &branches[len(branches)-1]
				br.gt, dp = dp, nil
				cur, committed = br.cur, br.committed
			default:
				br := branches[len(branches)-1]
				branches = branches[:len(branches)-1]
				dp = append(br.outer, fmt.Sprintf("check_pkt_len(size=%d,gt(%s),le(%s))", e.Port, dpList(br.gt), dpList(dp)))
				// The walk goes on with the flow from before the check.
				cur, committed = br.cur, br.committed
			}
		case flowtable.TraceOutput:
			if e.Port == flowtable.PortController {
				dp = append(dp, t.commitSets(&committed, &cur)...)
				dp = append(dp, t.controllerAction(&e))
				continue
			}
			dp = append(dp, t.commitSets(&committed, &cur)...)
			dp = append(dp, t.dpPort(e.Port))
		}
	}
	printNodes(b, []*traceNode{root}, 0)

	b.WriteString("\nFinal flow: ")
	if cur == start {
		b.WriteString("unchanged")
	} else {
		b.WriteString(FlowString(&cur, o))
	}
	b.WriteString("\nMegaflow: " + t.megaflow(&start, res, ps.seg) + "\n")
	b.WriteString("Datapath actions: " + dpList(dp))
}

// cplBranch is a check_pkt_larger being printed: the datapath actions
// before it, the flow its branches start from and its greater branch.
type cplBranch struct {
	outer, gt      []string
	cur, committed flowtable.Key
}

// dpList prints datapath actions as OVS's format_odp_actions: "drop"
// for none.
func dpList(dp []string) string {
	if len(dp) == 0 {
		return "drop"
	}
	return strings.Join(dp, ",")
}

// controllerAction prints a packet-in as the datapath action OVS's
// xlate_controller_action composes in a trace: a userspace action that
// is not sent (dont_send=1) with its own recirc_id, inside
// sample(...,actions(meter(N),...)) when a meter limits it.
func (t *OVSTrace) controllerAction(e *flowtable.TraceEvent) string {
	pi := e.PacketIn
	if pi == nil {
		return "userspace(controller)"
	}
	var recirc uint32
	if t.NextRecircID != nil {
		recirc = t.NextRecircID()
	}
	reason := pi.Reason
	if reason == flowtable.ReasonExplicitMiss {
		reason = 6 // OVS's OFPR_EXPLICIT_MISS
	}
	cookie := "0" // C's %#x
	if pi.Cookie != 0 {
		cookie = fmt.Sprintf("%#x", pi.Cookie)
	}
	a := fmt.Sprintf("userspace(pid=0,controller(reason=%d,dont_send=1,continuation=0,recirc_id=%d,rule_cookie=%s,controller_id=%d,max_len=%d))",
		reason, recirc, cookie, pi.ControllerID, pi.MaxLen)
	if e.Meter != nil {
		a = fmt.Sprintf("sample(sample=100.0%%,actions(meter(%d),%s))", e.Meter.Provider, a)
	}
	return a
}

// req is the conntrack request of the ct() at event i of the pass.
func (ps *tracePass) req(i int) *flowtable.CTRequest {
	if r, ok := ps.reqs[i]; ok {
		return &r
	}
	return nil
}

func (t *OVSTrace) dpPort(p uint32) string {
	if t.DatapathPort != nil {
		return t.DatapathPort(p)
	}
	return fmt.Sprint(p)
}

// datapathCT prints a ct() as the datapath action OVS composes: commit,
// zone, mark and labels with their masks, nat.
func datapathCT(a *flowtable.CT, req *flowtable.CTRequest) string {
	var parts []string
	r := flowtable.CTRequest{Zone: a.Zone, Commit: a.Commit, Force: a.Force, NAT: a.NAT}
	if req != nil {
		r = *req
	}
	switch {
	case r.Force:
		parts = append(parts, "force_commit")
	case r.Commit:
		parts = append(parts, "commit")
	}
	if r.Zone != 0 {
		parts = append(parts, fmt.Sprintf("zone=%d", r.Zone))
	}
	if r.SetMark {
		parts = append(parts, fmt.Sprintf("mark=%#x/%#x", r.Mark, r.MarkMask))
	}
	if r.SetLabel {
		parts = append(parts, "labels="+hex128(r.Label)+"/"+hex128(r.LabelMask))
	}
	switch r.Alg {
	case 21:
		parts = append(parts, "helper=ftp")
	case 69:
		parts = append(parts, "helper=tftp")
	}
	if r.NAT != nil {
		parts = append(parts, ofpact.NATString(r.NAT))
	}
	if len(parts) == 0 {
		return "ct"
	}
	return "ct(" + strings.Join(parts, ",") + ")"
}

func hex128(v [16]byte) string {
	s := strings.TrimLeft(fmt.Sprintf("%x", v[:]), "0")
	if s == "" {
		s = "0"
	}
	return "0x" + s
}

func clearCtFields(k *flowtable.Key) {
	for i := range k {
		k[i] &^= flowtable.CtFieldsMask[i]
	}
}

// keepCt sets cur to after, except for the conntrack fields: in OVS only
// ct() and ct_clear change them, and govs's ct() restores them.
func keepCt(cur, after *flowtable.Key) {
	recirc := flowtable.FieldRecircID.Uint64(cur)
	for i := range cur {
		m := flowtable.CtFieldsMask[i]
		cur[i] = after[i]&^m | cur[i]&m
	}
	flowtable.FieldRecircID.SetUint64(cur, recirc)
}

// FlowString prints a packet's flow as OVS's flow_format does ("Flow:"
// and "Final flow:" of a trace): every field the packet's protocols have,
// zeros included, and the metadata fields that are not zero; ct_state as
// flag names (new|trk).
func FlowString(k *flowtable.Key, o *PrintOptions) string {
	var m flowtable.Match
	m.Value = *k
	exact := func(fs ...*flowtable.Field) {
		for _, f := range fs {
			f.SetValue(&m.Mask, ofptext.OnesOf(f.Bytes))
		}
	}
	nonzero := func(fs ...*flowtable.Field) {
		for _, f := range fs {
			if !ofptext.AllZero(f.Value(k)) {
				exact(f)
			}
		}
	}
	nonzero(flowtable.FieldRecircID, flowtable.FieldDpHash, flowtable.FieldPktMark, flowtable.FieldCtState, flowtable.FieldCtZone,
		flowtable.FieldCtMark, flowtable.FieldCtLabel, flowtable.FieldMetadata, flowtable.FieldTunID, flowtable.FieldTunSrc,
		flowtable.FieldTunDst, flowtable.FieldTunIPv6Src, flowtable.FieldTunIPv6Dst, flowtable.FieldTunFlags)
	if k.TunDst() != 0 || k.TunIPv6Dst() != [16]byte{} {
		// A packet from a tunnel: OVS prints the addresses of both
		// families (tun_src=0.0.0.0,... over IPv6).
		exact(flowtable.FieldTunSrc, flowtable.FieldTunDst, flowtable.FieldTunIPv6Src, flowtable.FieldTunIPv6Dst)
	}
	if k.CtState()&flowtable.CtStateTrk != 0 && !ofptext.AllZero(flowtable.FieldCtNwProto.Value(k)) {
		exact(flowtable.FieldCtNwProto, flowtable.FieldCtTpSrc, flowtable.FieldCtTpDst)
		if k.EthType() == flowtable.EthTypeIPv6 {
			exact(flowtable.FieldCtIPv6Src, flowtable.FieldCtIPv6Dst)
		} else {
			exact(flowtable.FieldCtNwSrc, flowtable.FieldCtNwDst)
		}
	}
	for _, f := range flowtable.FieldReg {
		nonzero(f)
	}
	exact(flowtable.FieldInPort, flowtable.FieldVlanTCI, flowtable.FieldEthSrc, flowtable.FieldEthDst, flowtable.FieldEthType)
	switch k.EthType() {
	case flowtable.EthTypeIPv4, flowtable.EthTypeIPv6:
		if k.EthType() == flowtable.EthTypeIPv4 {
			exact(flowtable.FieldIPv4Src, flowtable.FieldIPv4Dst)
		} else {
			exact(flowtable.FieldIPv6Src, flowtable.FieldIPv6Dst, flowtable.FieldIPv6Label)
		}
		exact(flowtable.FieldIPProto, flowtable.FieldIPDSCP, flowtable.FieldIPECN, flowtable.FieldIPTTL, flowtable.FieldIPFrag)
		switch k.NwProto() {
		case flowtable.IPProtoTCP:
			exact(flowtable.FieldTCPSrc, flowtable.FieldTCPDst, flowtable.FieldTCPFlags)
		case flowtable.IPProtoUDP:
			exact(flowtable.FieldUDPSrc, flowtable.FieldUDPDst)
		case flowtable.IPProtoSCTP:
			exact(flowtable.FieldSCTPSrc, flowtable.FieldSCTPDst)
		case flowtable.IPProtoICMP:
			exact(flowtable.FieldICMPType, flowtable.FieldICMPCode)
		case flowtable.IPProtoICMPv6:
			exact(flowtable.FieldICMPv6Type, flowtable.FieldICMPv6Code)
		}
	case flowtable.EthTypeARP:
		exact(flowtable.FieldArpOp, flowtable.FieldArpSpa, flowtable.FieldArpTpa, flowtable.FieldArpSha, flowtable.FieldArpTha)
	}
	return withEth(&m, o)
}

// withEth prints a match as OVS's match_format does for flows and
// megaflows: "eth" (the packet type) appears when metadata precedes the
// protocol name, as in "recirc_id=0x1,ct_state=new|trk,eth,tcp,...".
func withEth(m *flowtable.Match, o *PrintOptions) string {
	var meta, rest flowtable.Match
	meta.Value, rest.Value = m.Value, m.Value
	metaFields := []*flowtable.Field{flowtable.FieldPktMark, flowtable.FieldRecircID, flowtable.FieldDpHash, flowtable.FieldConjID,
		flowtable.FieldActsetOutput, flowtable.FieldCtState, flowtable.FieldCtZone, flowtable.FieldCtMark, flowtable.FieldCtLabel,
		flowtable.FieldCtNwSrc, flowtable.FieldCtNwDst, flowtable.FieldCtIPv6Src, flowtable.FieldCtIPv6Dst, flowtable.FieldCtNwProto,
		flowtable.FieldCtTpSrc, flowtable.FieldCtTpDst}
	rest.Mask = m.Mask
	for _, f := range metaFields {
		f.SetValue(&meta.Mask, f.Value(&m.Mask))
		f.SetValue(&rest.Mask, make([]byte, f.Bytes))
	}
	a := MatchString(&meta, flowtable.DefaultPriority, o)
	b := MatchString(&rest, flowtable.DefaultPriority, o)
	switch {
	case a == "":
		return b
	case b == "":
		return a + ",eth"
	}
	return a + ",eth," + b
}

// megaflow prints the megaflow of a pass: govs's mask of its segment
// (what the flow cache would key the entry on), with recirc_id, and
// nw_frag for IP, which OVS's always have.
func (t *OVSTrace) megaflow(start *flowtable.Key, res *flowtable.Result, seg int) string {
	var m flowtable.Match
	m.Mask = res.Masks[seg]
	flowtable.FieldRecircID.SetUint64(&m.Mask, ^uint64(0))
	if et := start.EthType(); et == flowtable.EthTypeIPv4 || et == flowtable.EthTypeIPv6 {
		flowtable.FieldEthType.SetUint64(&m.Mask, ^uint64(0))
		flowtable.FieldIPFrag.SetUint64(&m.Mask, ^uint64(0))
	}
	m.Value = start.Masked(&m.Mask)
	return withEth(&m, t.Options)
}

// commitSets returns the set() actions that bring the datapath's packet
// (committed) to the flow (cur) before an output or ct(), as OVS's
// commit_odp_actions: Ethernet addresses, then IPv4/IPv6, then ports.
func (t *OVSTrace) commitSets(committed, cur *flowtable.Key) []string {
	var out []string
	group := func(name string, fs []*flowtable.Field, names []string) {
		var parts []string
		for i, f := range fs {
			a, b := f.Value(committed), f.Value(cur)
			if string(a) != string(b) {
				parts = append(parts, names[i]+"="+FieldValueString(f, b, nil))
				f.SetValue(committed, b)
			}
		}
		if len(parts) > 0 {
			out = append(out, "set("+name+"("+strings.Join(parts, ",")+"))")
		}
	}
	group("eth", []*flowtable.Field{flowtable.FieldEthSrc, flowtable.FieldEthDst}, []string{"src", "dst"})
	switch cur.EthType() {
	case flowtable.EthTypeIPv4:
		group("ipv4", []*flowtable.Field{flowtable.FieldIPv4Src, flowtable.FieldIPv4Dst, flowtable.FieldNwTos, flowtable.FieldIPTTL},
			[]string{"src", "dst", "tos", "ttl"})
	case flowtable.EthTypeIPv6:
		group("ipv6", []*flowtable.Field{flowtable.FieldIPv6Src, flowtable.FieldIPv6Dst, flowtable.FieldNwTos, flowtable.FieldIPTTL},
			[]string{"src", "dst", "tclass", "hlimit"})
	}
	switch cur.NwProto() {
	case flowtable.IPProtoTCP:
		group("tcp", []*flowtable.Field{flowtable.FieldTCPSrc, flowtable.FieldTCPDst}, []string{"src", "dst"})
	case flowtable.IPProtoUDP:
		group("udp", []*flowtable.Field{flowtable.FieldUDPSrc, flowtable.FieldUDPDst}, []string{"src", "dst"})
	}
	return out
}

// SplitDatapathActions splits a "Datapath actions:" list at the commas
// outside parentheses: "ct(commit,zone=1),recirc(0x1),2" has three.
func SplitDatapathActions(s string) []string { return ofptext.SplitTop(s) }

// hexOrZero prints v as OVS's "%#x" does: 0 without a prefix.
func hexOrZero(v uint64) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}
