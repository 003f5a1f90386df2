package ofproto

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpact"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// modReq is one flow-mod or group-mod as received (directly or in a
// bundle), translated to a pipeline operation.
type modReq struct {
	h wire.Header
	// raw is the request as received (an error reply quotes it whole,
	// wire.ErrorMsgFor).
	raw []byte
	// flowMod is false for a group-mod; bufferID is a flow-mod's.
	flowMod  bool
	bufferID uint32
	op       flowtable.FlowOp
	// err is why the request cannot be applied (translation or
	// validation); it is reported when the request is applied, which for
	// a bundled one is at commit.
	err error
}

// newFlowModReq translates a decoded flow-mod. m may live in the
// connection's decoder memory: the result does not refer to it. An add is
// translated in the connection's scratch flow-mod and staged as the rule
// it becomes, so that a bundle of adds allocates one compact rule per
// message and nothing else of that size.
func (b *Bridge) newFlowModReq(c *Conn, h wire.Header, raw []byte, m *wire.FlowMod) modReq {
	req := modReq{h: h, raw: raw, flowMod: true, bufferID: m.BufferID}
	fm := &c.flowMod
	if uint8(m.Command) != uint8(wire.OFPFC_ADD) {
		// Modify and delete keep the translated flow (match, new actions).
		fm = new(translate.FlowMod)
	}
	if err := translate.FlowModFromWireInto(fm, m, c.Version(), b.p.TLV, c.State.FlowModTableID); err != nil {
		req.err = err
		return req
	}
	req.op, req.err = b.flowOp(c, fm)
	if req.err != nil {
		return req
	}
	switch {
	case req.op.Kind == flowtable.OpAdd:
		// Staged as the rule it becomes: a bundle of adds then holds
		// compact rules, not whole translated flow-mods, until commit.
		req.op.Rule, req.op.Flow = flowtable.NewRule(req.op.Flow), nil
	case fm == &c.flowMod:
		// Not an add after all (a command in the high byte without
		// NXT_FLOW_MOD_TABLE_ID): the scratch is not the request's to keep.
		own := new(translate.FlowMod)
		if err := translate.FlowModFromWireInto(own, m, c.Version(), b.p.TLV, c.State.FlowModTableID); err != nil {
			req.err = err
			return req
		}
		req.op, req.err = b.flowOp(c, own)
	}
	return req
}

// newGroupModReq translates a decoded group-mod.
func (b *Bridge) newGroupModReq(c *Conn, h wire.Header, raw []byte, m *wire.GroupMod) modReq {
	req := modReq{h: h, raw: raw}
	gm, err := translate.GroupModFromWire(m, c.Version(), b.p.TLV)
	if err != nil {
		req.err = err
		return req
	}
	switch gm.Command {
	case wire.OFPGC_ADD:
		req.op = flowtable.FlowOp{Kind: flowtable.OpGroupAdd, Group: gm.Group}
	case wire.OFPGC_MODIFY:
		req.op = flowtable.FlowOp{Kind: flowtable.OpGroupModify, Group: gm.Group}
	case wire.OFPGC_DELETE:
		req.op = flowtable.FlowOp{Kind: flowtable.OpGroupDelete, GroupID: gm.Group.ID}
	default:
		req.err = ofpErr(c, wire.OFPGMFC_BAD_COMMAND, "group command %d", gm.Command)
	}
	return req
}

// failedMod reports bundled message i's error: in a bundle commit the
// message that failed gets its own error first, then the commit fails
// with OFPBFC_MSG_FAILED, as Open vSwitch does.
func failedMod(c *Conn, h wire.Header, raw []byte, i int, err error) error {
	var oe *wire.OFPError
	if errors.As(err, &oe) {
		c.SendError(h, raw, oe)
	}
	return ofpErr(c, wire.OFPBFC_MSG_FAILED, "bundled message %d failed: %v", i, err)
}

// mods applies flow-mods and group-mods all or nothing (one atomic
// pipeline batch).
func (b *Bridge) mods(c *Conn, reqs []modReq, bundle *Bundle) error {
	failed := func(i int, err error) error {
		if bundle == nil {
			return err
		}
		return failedMod(c, reqs[i].h, reqs[i].raw, i, err)
	}
	var stage *flowtable.Stage
	var ops []flowtable.FlowOp
	if bundle != nil {
		stage = bundle.stage
		// Copied as they were staged (not between commit and reply).
		ops = stage.Ops()
	}
	if len(ops) != len(reqs) {
		ops = make([]flowtable.FlowOp, len(reqs))
		for i := range reqs {
			ops[i] = reqs[i].op
		}
	}
	for i := range reqs {
		if reqs[i].err != nil {
			return failed(i, reqs[i].err)
		}
	}
	results, err := b.p.ApplyStaged(ops, stage)
	if err != nil {
		i := 0
		var opErr *flowtable.OpError
		if errors.As(err, &opErr) {
			i = opErr.Index
		}
		if errors.Is(err, flowtable.ErrTableFull) || errors.Is(err, flowtable.ErrOutOfGroups) {
			b.logLimit(err)
		}
		if !reqs[i].flowMod {
			return failed(i, groupApplyError(c, err))
		}
		return failed(i, b.applyError(c, err))
	}
	removed := 0
	for _, res := range results {
		removed += len(res.Removed)
	}
	if b.hasMonitors() {
		for i, res := range results {
			reason := uint8(2) // OFPRR_DELETE
			if !reqs[i].flowMod {
				reason = 3 // OFPRR_GROUP_DELETE
			}
			var changes []flowChange
			if res.Added != nil {
				changes = append(changes, flowChange{event: wire.FlowUpdateAdded, rule: res.Added})
			}
			for _, r := range res.Changed {
				changes = append(changes, flowChange{event: wire.FlowUpdateModified, rule: r})
			}
			for _, r := range res.Removed {
				changes = append(changes, flowChange{event: wire.FlowUpdateDeleted, reason: reason, rule: r})
			}
			b.notifyMonitors(c, reqs[i].h.Xid, changes)
		}
	}
	if removed >= reclaimFlows {
		c.reclaim = true
	}
	for i, res := range results {
		reason := uint8(2) // OFPRR_DELETE
		if !reqs[i].flowMod {
			reason = 3 // OFPRR_GROUP_DELETE: the flows used a deleted group
		}
		for _, r := range res.Removed {
			if r.Flags&flowtable.FlagSendFlowRem != 0 {
				b.flowRemoved(r, reason)
			}
		}
		if !reqs[i].flowMod {
			continue
		}
		// OpenFlow 1.0: a modify that changes nothing adds the flow.
		if res.Modified == 0 && (ops[i].Kind == flowtable.OpModify || ops[i].Kind == flowtable.OpModifyStrict) &&
			c.Version() == wire.OFP10 && ops[i].Flow.Table != translate.TableAll {
			add := flowtable.FlowOp{Kind: flowtable.OpAdd, Flow: ops[i].Flow}
			if _, err := b.p.Apply([]flowtable.FlowOp{add}); err != nil {
				return b.applyError(c, err)
			}
		}
		if reqs[i].bufferID != wire.OFP_NO_BUFFER {
			// govs does not buffer packets (n_buffers=0): like OVS, say so.
			return ofpErr(c, wire.OFPBRC_BUFFER_UNKNOWN, "buffer %d", reqs[i].bufferID)
		}
	}
	return nil
}

// flowOp maps a translated flow-mod to a pipeline operation.
func (b *Bridge) flowOp(c *Conn, fm *translate.FlowMod) (flowtable.FlowOp, error) {
	f := &fm.Flow
	op := flowtable.FlowOp{Flow: f, ResetCounts: fm.ResetCounts, SetCookie: fm.ModifyCookie}
	switch fm.Command {
	case uint8(wire.OFPFC_ADD):
		if f.Table == translate.TableAll {
			return op, ofpErr(c, wire.OFPFMFC_BAD_TABLE_ID, "add to table 255")
		}
		op.Kind = flowtable.OpAdd
	case uint8(wire.OFPFC_MODIFY):
		op.Kind = flowtable.OpModify
	case uint8(wire.OFPFC_MODIFY_STRICT):
		op.Kind = flowtable.OpModifyStrict
	case uint8(wire.OFPFC_DELETE):
		op.Kind = flowtable.OpDelete
	case uint8(wire.OFPFC_DELETE_STRICT):
		op.Kind = flowtable.OpDeleteStrict
	default:
		return op, ofpErr(c, wire.OFPFMFC_BAD_COMMAND, "command %d", fm.Command)
	}
	if op.Kind != flowtable.OpAdd {
		op.Filter = &flowtable.FlowFilter{Table: f.Table, Match: f.Match, Priority: f.Priority,
			Cookie: fm.Cookie, CookieMask: fm.CookieMask, OutPort: fm.OutPort, OutGroup: fm.OutGroup}
	}
	if op.Kind == flowtable.OpAdd || op.Kind == flowtable.OpModify || op.Kind == flowtable.OpModifyStrict {
		if err := ofpact.Validate(f); err != nil {
			return op, validationError(c, err)
		}
	}
	return op, nil
}

// validationError maps a flow the model refuses to OVS's OpenFlow error.
func validationError(c *Conn, err error) error {
	ve, ok := err.(*flowtable.ValidationError)
	if !ok {
		return ofpErr(c, wire.OFPBAC_BAD_ARGUMENT, "%v", err)
	}
	sym := map[flowtable.ValidationKind]wire.ErrorCode{
		flowtable.BadInstructionOrder:  wire.OFPBIC_UNSUP_INST,
		flowtable.DuplicateInstruction: wire.OFPBIC_DUP_INST,
		flowtable.BadGotoTable:         wire.OFPBIC_BAD_TABLE_ID,
		flowtable.BadOutPort:           wire.OFPBAC_BAD_OUT_PORT,
		flowtable.MatchInconsistent:    wire.OFPBAC_MATCH_INCONSISTENT,
		flowtable.ReadOnlyField:        wire.OFPBAC_BAD_SET_ARGUMENT,
		flowtable.ConjunctionMixed:     wire.OFPBAC_BAD_ARGUMENT,
	}[ve.Kind]
	if sym == 0 {
		sym = wire.OFPBAC_BAD_ARGUMENT
	}
	return ofpErr(c, sym, "%s", ve.Msg)
}

// applyError maps a pipeline error to the OpenFlow error OVS sends.
func (b *Bridge) applyError(c *Conn, err error) error {
	var oe *wire.OFPError
	switch {
	case errors.As(err, &oe):
		return err
	case errors.Is(err, flowtable.ErrOverlap):
		return ofpErr(c, wire.OFPFMFC_OVERLAP, "%v", err)
	case errors.Is(err, flowtable.ErrUnknownGroup):
		return ofpErr(c, wire.OFPBAC_BAD_OUT_GROUP, "%v", err)
	case errors.Is(err, flowtable.ErrUnknownMeter):
		return ofpErr(c, wire.OFPMMFC_INVALID_METER, "%v", err)
	case errors.Is(err, flowtable.ErrBadTable):
		return ofpErr(c, wire.OFPFMFC_BAD_TABLE_ID, "%v", err)
	case errors.Is(err, flowtable.ErrTableFull):
		// OFPFMFC_ALL_TABLES_FULL on an OpenFlow 1.0 connection.
		return ofpErr(c, wire.OFPFMFC_TABLE_FULL, "%v", err)
	}
	return ofpErr(c, wire.OFPFMFC_UNKNOWN, "%v", err)
}

// flowRemoved sends OFPT_FLOW_REMOVED (reason OFPRR_*), or NXT_FLOW_REMOVED
// to OpenFlow 1.0 connections in the NXM flow format, to every connection
// whose async configuration asks for it.
func (b *Bridge) flowRemoved(r *flowtable.Rule, reason uint8) {
	for _, c := range b.connections() {
		if !c.receivesAsync(AsyncFlowRemoved, reason) {
			continue
		}
		rm := r.Match()
		match, err := translate.MatchToWire(&rm, c.Version(), b.p.TLV)
		if err != nil {
			continue
		}
		d := time.Since(r.Stats.Created)
		fr := &wire.FlowRemoved{Cookie: r.Cookie, Priority: r.Priority, Reason: reason, TableID: r.Table,
			DurationSec: uint32(d / time.Second), DurationNsec: msNsec(d),
			IdleTimeout: r.IdleTimeout, HardTimeout: r.HardTimeout,
			PacketCount: r.Stats.Packets.Load(), ByteCount: r.Stats.Bytes.Load(), Match: match}
		if c.Version() == wire.OFP10 {
			if c.State.FlowFormat != wire.NXFF_NXM {
				// The OpenFlow 1.0 flow format would need the flow's match
				// as an ofp10_match, which govs does not encode.
				continue
			}
			fr.NX = true // NXT_FLOW_REMOVED, as OVS sends to NXM connections
		}
		if err := c.Send(asyncXid, fr); err != nil {
			b.log.Debug("flow-removed not sent", zap.Error(err))
		}
	}
}

// flowFilterFromRequest builds the selection of a flow/aggregate stats request.
func (b *Bridge) flowFilterFromRequest(c *Conn, req *wire.FlowStatsRequest) (flowtable.FlowFilter, error) {
	ff := flowtable.AllFlows()
	ff.Table = req.TableID
	ff.Cookie, ff.CookieMask = req.Cookie, req.CookieMask
	ff.OutPort = portFromWire(c, req.OutPort)
	if c.Version() != wire.OFP10 && req.OutPort == wire.OFPP_ANY {
		ff.OutPort = flowtable.PortNone
	}
	ff.OutGroup = req.OutGroup
	if c.Version() == wire.OFP10 {
		ff.OutGroup = translate.GroupAny // OpenFlow 1.0 requests have no out_group
	}
	var err error
	if c.Version() == wire.OFP10 && len(req.Match) == 0 && req.Match10.Wildcards != 0 {
		ff.Match = translate.MatchFromMatch10(&req.Match10)
	} else {
		ff.Match, err = translate.MatchFromWireVersion(c.Version(), req.Match, b.p.TLV)
	}
	return ff, err
}

// flowStats answers a flow stats request (dump-flows), split into replies
// under 64 KB with the MORE flag.
func (b *Bridge) flowStats(c *Conn, h wire.Header, m *wire.Multipart) error {
	ff, err := b.flowFilterFromRequest(c, m.FlowRequest)
	if err != nil {
		return err
	}
	rules := b.p.Flows(&ff)
	now := time.Now()
	// Each part is translated as it is sent, into one reused slice, so a
	// dump holds its rules' pointers and a few parts, not the whole reply.
	var flows []wire.FlowStats
	if len(rules) >= reclaimFlows {
		c.reclaim = true
	}
	return sendSplit(c, h, m, len(rules), func(rep *wire.Multipart, lo, hi int) {
		flows = flows[:0]
		for _, r := range rules[lo:hi] {
			d := now.Sub(r.Stats.Created)
			fs := &translate.FlowStats{Flow: r.Flow(), DurationSec: uint32(d / time.Second), DurationNsec: msNsec(d),
				IdleAge: int(now.Sub(time.Unix(0, r.Stats.LastUsed.Load())) / time.Second), HardAge: int(d / time.Second),
				PacketCount: r.Stats.Packets.Load(), ByteCount: r.Stats.Bytes.Load()}
			w, err := translate.FlowStatsToWire(fs, c.Version(), b.p.TLV)
			if err != nil {
				b.log.Warn("flow not encodable in this version", zap.Error(err))
				continue
			}
			flows = append(flows, w)
		}
		rep.Flows = flows
	})
}

// sendSplit sends a multipart reply whose n items are set by fill, in as
// many messages as needed (OFPMPF_REPLY_MORE on all but the last). A few
// hundred items go in one message when they fit, as OVS fills each reply
// up to 64 KB (dump-tables is one reply, 254 tables); long replies go in
// parts of 64 items, halved when a part does not fit.
func sendSplit(c *Conn, h wire.Header, req *wire.Multipart, n int, fill func(rep *wire.Multipart, lo, hi int)) error {
	chunk := 64
	if n <= 256 {
		chunk = max(n, 1)
	}
	lo := 0
	for {
		if err := c.waitBacklog(c.opts.DumpBacklogBytes); err != nil {
			return err
		}
		hi := min(lo+chunk, n)
		rep := &wire.Multipart{Reply: true, Type: req.Type, Experimenter: req.Experimenter, ExpType: req.ExpType}
		fill(rep, lo, hi)
		if hi < n {
			rep.Flags = wire.OFPMPF_REPLY_MORE
		}
		err := c.SendNoFlush(h.Xid, rep)
		if err != nil && chunk > 1 {
			chunk /= 2 // too large for one message: use smaller pieces
			continue
		}
		if err != nil {
			return err
		}
		lo = hi
		if lo >= n {
			return c.Flush()
		}
	}
}

func (b *Bridge) aggregate(c *Conn, h wire.Header, m *wire.Multipart) error {
	ff, err := b.flowFilterFromRequest(c, m.FlowRequest)
	if err != nil {
		return err
	}
	agg := &wire.AggregateStats{}
	for _, r := range b.p.Flows(&ff) {
		agg.PacketCount += r.Stats.Packets.Load()
		agg.ByteCount += r.Stats.Bytes.Load()
		agg.FlowCount++
	}
	return c.Send(h.Xid, &wire.Multipart{Reply: true, Type: m.Type, Experimenter: m.Experimenter, ExpType: m.ExpType, Aggregate: agg})
}

// logLimit says, at most once a second, that a flow-mod or group-mod was
// refused by the pipeline's limits.
func (b *Bridge) logLimit(err error) {
	now := time.Now().UnixNano()
	last := b.lastLimitLog.Load()
	if now-last < int64(time.Second) || !b.lastLimitLog.CompareAndSwap(last, now) {
		return
	}
	b.log.Warn("flow-mod refused: limit reached", zap.Error(err), zap.Uint64("refused_total", b.p.LimitRefusals.Load()))
}

// groupApplyError maps a group-mod the pipeline refused to OVS's error.
func groupApplyError(c *Conn, err error) error {
	var oe *wire.OFPError
	switch {
	case errors.As(err, &oe):
		return err
	case errors.Is(err, flowtable.ErrGroupExists):
		return ofpErr(c, wire.OFPGMFC_GROUP_EXISTS, "%v", err)
	case errors.Is(err, flowtable.ErrUnknownGroup):
		return ofpErr(c, wire.OFPGMFC_UNKNOWN_GROUP, "%v", err)
	case errors.Is(err, flowtable.ErrOutOfGroups):
		return ofpErr(c, wire.OFPGMFC_OUT_OF_GROUPS, "%v", err)
	}
	return ofpErr(c, wire.OFPGMFC_INVALID_GROUP, "%v", err)
}

// requestedGroups returns the groups a group stats or group desc request
// selects: the one its group id names (OpenFlow 1.5 group desc, group
// stats, NXST_GROUP and NXST_GROUP_DESC carry one), or all of them for
// OFPG_ALL or a request without an id (1.3 group desc). A group that does
// not exist selects nothing: OVS replies with an empty reply.
func (b *Bridge) requestedGroups(m *wire.Multipart) []*flowtable.GroupEntry {
	gs := b.p.Groups()
	if m.Object == nil || m.Object.ID == wire.OFPG_ALL {
		return gs
	}
	for _, g := range gs {
		if g.ID == m.Object.ID {
			return []*flowtable.GroupEntry{g}
		}
	}
	return nil
}

func (b *Bridge) groupDescs(c *Conn, h wire.Header, m *wire.Multipart) error {
	var descs []wire.GroupDesc
	for _, g := range b.requestedGroups(m) {
		d, err := translate.GroupDescToWire(g, c.Version(), b.p.TLV)
		if err != nil {
			return err
		}
		descs = append(descs, d)
	}
	return sendSplit(c, h, m, len(descs), func(rep *wire.Multipart, lo, hi int) { rep.GroupDescs = descs[lo:hi] })
}

func (b *Bridge) groupStats(c *Conn, h wire.Header, m *wire.Multipart) error {
	var gs []wire.GroupStats
	for _, g := range b.requestedGroups(m) {
		s := wire.GroupStats{GroupID: g.ID, PacketCount: g.Packets.Load(), ByteCount: g.Bytes.Load()}
		for range g.Buckets {
			s.Buckets = append(s.Buckets, wire.BucketCounter{})
		}
		gs = append(gs, s)
	}
	return sendSplit(c, h, m, len(gs), func(rep *wire.Multipart, lo, hi int) { rep.Groups = gs[lo:hi] })
}

func (b *Bridge) packetOut(c *Conn, m *wire.PacketOut) error {
	if m.BufferID != wire.OFP_NO_BUFFER {
		return ofpErr(c, wire.OFPBRC_BUFFER_UNKNOWN, "buffer %d", m.BufferID)
	}
	acts, err := translate.ActionsFromWire(c.Version(), m.Actions, b.p.TLV)
	if err != nil {
		return err
	}
	if err := b.p.CheckGroups(&flowtable.Flow{Actions: acts}); err != nil {
		return ofpErr(c, wire.OFPBAC_BAD_OUT_GROUP, "%v", err)
	}
	inPort := portFromWire(c, m.InPort)
	var md *flowtable.Match
	if c.Version() == wire.OFP15 && len(m.Match) > 0 {
		match, err := translate.MatchFromWireVersion(c.Version(), m.Match, b.p.TLV)
		if err != nil {
			return err
		}
		if !match.PipelineOnly() {
			return ofpErr(c, wire.OFPBRC_PIPELINE_FIELDS_ONLY, "packet-out match has fields other than pipeline fields")
		}
		if v, mk := match.Uint64(flowtable.FieldInPort); mk != 0 {
			inPort = uint32(v)
		}
		rest := match
		rest.Clear(flowtable.FieldInPort)
		if !rest.IsCatchAll() {
			md = &match // metadata or registers besides in_port
		}
	}
	if pp, ok := b.dp.(PipelinePacketOut); ok && md != nil {
		err = pp.PacketOutPipeline(m.Data, inPort, md, acts)
	} else {
		err = b.dp.PacketOut(m.Data, inPort, acts)
	}
	if err != nil {
		var xe flowtable.XlateError
		if errors.As(err, &xe) {
			// A loop of groups or resubmits: OVS drops the packet and
			// answers OFPFMFC_UNKNOWN.
			return ofpErr(c, wire.OFPFMFC_UNKNOWN, "%v", err)
		}
		return ofpErr(c, wire.OFPBRC_BAD_PACKET, "%v", err)
	}
	return nil
}

// Run expires timed-out flows every second (sending flow-removed for those
// with send_flow_rem) until ctx ends.
func (b *Bridge) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			var changes []flowChange
			for _, e := range b.p.ExpireFlows(now) {
				if e.Rule.Flags&flowtable.FlagSendFlowRem != 0 {
					b.flowRemoved(e.Rule, e.Reason)
				}
				changes = append(changes, flowChange{event: wire.FlowUpdateDeleted, reason: e.Reason, rule: e.Rule})
			}
			b.notifyMonitors(nil, 0, changes)
			b.resumeMonitors()
		}
	}
}
