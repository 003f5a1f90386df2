package ofproto

import (
	"sync"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// Flow monitors (OVS ofmonitor, "ovs-ofctl monitor BRIDGE watch:"): a
// connection asks with NXST_FLOW_MONITOR (1.0), ONFST_FLOW_MONITOR (1.3)
// or OFPMP_FLOW_MONITOR (1.4+) to be told about the flows a filter selects: the current ones at
// once, then every add, modify and delete, as unsolicited replies with
// xid 0. A change the monitoring connection made itself is abbreviated
// to the xid of its request unless the monitor asked for "own" changes.

// flowMonitor is one monitor of a connection.
type flowMonitor struct {
	id     uint32
	flags  uint16 // NXFMF_*
	table  uint8  // 255: all
	filter flowtable.FlowFilter
}

func (m *flowMonitor) selects(r *flowtable.Rule) bool {
	return (m.table == 255 || r.Table == m.table) && m.filter.Selects(r)
}

// connMonitors are a connection's monitors; changes made on other
// connections and by flow expiry read them concurrently.
type connMonitors struct {
	mu   sync.Mutex
	list []flowMonitor
	// paused: the connection's backlog passed monitorPauseBytes, so
	// updates wait: the changes it would have seen are kept (flow ->
	// its last event) and sent when it resumes.
	paused bool
	// pending is keyed by the flow's counters, which a flow keeps
	// across modifies (each installs a new *Rule).
	pending map[*flowtable.RuleStats]flowChange
}

// monitorPauseBytes is the backlog at which OVS pauses a connection's
// flow monitors (NXT_FLOW_MONITOR_PAUSED), 128 KB.
const monitorPauseBytes = 128 << 10

func (cm *connMonitors) snapshot() []flowMonitor {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.list
}

// monitorReply is an empty flow monitor reply to req.
func monitorReply(c *Conn, req *wire.Multipart) *wire.Multipart {
	return &wire.Multipart{Reply: true, Type: req.Type, Experimenter: req.Experimenter, ExpType: req.ExpType}
}

// flowMonitorRequest adds the request's monitors and answers with the
// flows they select now (for those that ask for the initial flows).
func (b *Bridge) flowMonitorRequest(c *Conn, h wire.Header, m *wire.Multipart) error {
	reqs, err := wire.DecodeFlowMonitorRequests(c.Version(), m.Body)
	if err != nil {
		return err
	}
	var mons []flowMonitor
	for _, r := range reqs {
		ff := flowtable.AllFlows()
		ff.OutPort = portFromWire(c, r.OutPort)
		if r.OutPort == wire.OFPP_ANY || c.Version() == wire.OFP10 && r.OutPort == uint32(wire.OFPP10_NONE) {
			ff.OutPort = flowtable.PortNone
		}
		ff.OutGroup = r.OutGroup
		if c.Version() == wire.OFP10 {
			ff.OutGroup = translate.GroupAny
		}
		if ff.Match, err = translate.MatchFromWireVersion(c.Version(), r.Match, b.p.TLV); err != nil {
			return err
		}
		mons = append(mons, flowMonitor{id: r.ID, flags: r.Flags, table: r.TableID, filter: ff})
	}
	c.monitors.mu.Lock()
	c.monitors.list = append(append([]flowMonitor(nil), c.monitors.list...), mons...)
	c.monitors.mu.Unlock()

	var updates []wire.FlowUpdate
	for i := range mons {
		if mons[i].flags&wire.NXFMF_INITIAL == 0 {
			continue
		}
		ff := mons[i].filter
		ff.Table = mons[i].table
		for _, r := range b.p.Flows(&ff) {
			if u, ok := b.flowUpdate(c, &mons[i], wire.FlowUpdateInitial, 0, r); ok {
				updates = append(updates, u)
			}
		}
	}
	return sendUpdates(c, h.Xid, m, updates)
}

// flowUpdate builds the update of r for monitor mon.
func (b *Bridge) flowUpdate(c *Conn, mon *flowMonitor, event int, reason uint8, r *flowtable.Rule) (wire.FlowUpdate, bool) {
	f := *r.Flow()
	if mon.flags&wire.NXFMF_ACTIONS == 0 {
		f.Actions = nil
	}
	w, err := translate.FlowStatsToWire(&translate.FlowStats{Flow: &f}, c.Version(), b.p.TLV)
	if err != nil {
		return wire.FlowUpdate{}, false
	}
	return wire.FlowUpdate{Event: event, Reason: reason, Flow: w}, true
}

// sendUpdates sends flow updates as flow monitor replies of about 64 KB.
func sendUpdates(c *Conn, xid uint32, req *wire.Multipart, updates []wire.FlowUpdate) error {
	var body []byte
	flush := func(more bool) error {
		rep := monitorReply(c, req)
		rep.Body = body
		if more {
			rep.Flags = wire.OFPMPF_REPLY_MORE
		}
		body = nil
		return c.Send(xid, rep)
	}
	for i := range updates {
		var err error
		if body, err = wire.AppendFlowUpdate(body, c.Version(), &updates[i]); err != nil {
			return err
		}
		if len(body) > 60000 && i < len(updates)-1 {
			if err := flush(xid != 0); err != nil {
				return err
			}
		}
	}
	if xid == 0 && len(body) == 0 {
		return nil
	}
	return flush(false)
}

// flowChange is one change for the monitors.
type flowChange struct {
	event  int // wire.FlowUpdateAdded, Deleted or Modified
	reason uint8
	rule   *flowtable.Rule
}

// notifyMonitors tells every monitor that selects a changed flow.
// origin and xid name the request that made the changes (nil for
// expiry): its own monitors get one abbreviated update instead, unless
// they asked for their own changes.
func (b *Bridge) notifyMonitors(origin *Conn, xid uint32, changes []flowChange) {
	if len(changes) == 0 {
		return
	}
	for _, c := range b.connections() {
		mons := c.monitors.snapshot()
		if len(mons) == 0 || c.monitors.hold(mons, changes) {
			continue
		}
		var updates []wire.FlowUpdate
		abbreviated := false
		for _, ch := range changes {
			for i := range mons {
				mon := &mons[i]
				want := map[int]uint16{wire.FlowUpdateAdded: wire.NXFMF_ADD, wire.FlowUpdateDeleted: wire.NXFMF_DELETE,
					wire.FlowUpdateModified: wire.NXFMF_MODIFY}[ch.event]
				if mon.flags&want == 0 || !mon.selects(ch.rule) {
					continue
				}
				if c == origin && mon.flags&wire.NXFMF_OWN == 0 {
					if !abbreviated {
						updates = append(updates, wire.FlowUpdate{Event: wire.FlowUpdateAbbrev, Xid: xid})
						abbreviated = true
					}
					break
				}
				if u, ok := b.flowUpdate(c, mon, ch.event, ch.reason, ch.rule); ok {
					updates = append(updates, u)
				}
				break // one update per flow, whatever monitors select it
			}
		}
		if len(updates) > 0 {
			sendUpdates(c, 0, monitorUpdateReq(c), updates)
			if n, _ := c.Backlog(); n > monitorPauseBytes {
				c.monitors.mu.Lock()
				c.monitors.paused = true
				c.monitors.mu.Unlock()
				sendFlowControl(c, false)
			}
		}
	}
}

func monitorUpdateReq(c *Conn) *wire.Multipart {
	switch c.Version() {
	case wire.OFP10:
		return &wire.Multipart{Type: wire.OFPMP_EXPERIMENTER, Experimenter: wire.NX_VENDOR_ID, ExpType: wire.NXST_FLOW_MONITOR}
	case wire.OFP13:
		return &wire.Multipart{Type: wire.OFPMP_EXPERIMENTER, Experimenter: wire.ONF_VENDOR_ID, ExpType: wire.ONFST_FLOW_MONITOR}
	}
	return &wire.Multipart{Type: wire.OFPMP_FLOW_MONITOR}
}

// sendFlowControl tells c its monitors paused or resumed.
func sendFlowControl(c *Conn, resumed bool) {
	if c.Version() < wire.OFP14 {
		c.Send(0, &wire.NXFlowMonitorPaused{Resumed: resumed})
		return
	}
	ev := wire.FlowUpdatePaused
	if resumed {
		ev = wire.FlowUpdateResumed
	}
	sendUpdates(c, 0, monitorUpdateReq(c), []wire.FlowUpdate{{Event: ev}})
}

// hold keeps the changes a paused connection's monitors select and
// reports whether it is paused.
func (cm *connMonitors) hold(mons []flowMonitor, changes []flowChange) bool {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if !cm.paused {
		return false
	}
	for _, ch := range changes {
		for i := range mons {
			if mons[i].selects(ch.rule) {
				if cm.pending == nil {
					cm.pending = map[*flowtable.RuleStats]flowChange{}
				}
				if old, ok := cm.pending[ch.rule.Stats]; ok && old.event == wire.FlowUpdateAdded && ch.event == wire.FlowUpdateDeleted {
					delete(cm.pending, ch.rule.Stats) // came and went while paused
				} else {
					cm.pending[ch.rule.Stats] = ch
				}
				break
			}
		}
	}
	return true
}

// resumeMonitors resumes the paused monitors whose connection drained
// its backlog, as OVS does: the flows changed meanwhile are sent (added
// or modified ones as ADDED with their current state, deleted ones as
// DELETED), then RESUMED.
func (b *Bridge) resumeMonitors() {
	for _, c := range b.connections() {
		c.monitors.mu.Lock()
		if n, _ := c.Backlog(); !c.monitors.paused || n > 0 {
			c.monitors.mu.Unlock()
			continue
		}
		pending := c.monitors.pending
		c.monitors.paused, c.monitors.pending = false, nil
		mons := c.monitors.list
		c.monitors.mu.Unlock()
		var updates []wire.FlowUpdate
		for _, ch := range pending {
			ev := ch.event
			if ev == wire.FlowUpdateModified {
				ev = wire.FlowUpdateAdded
			}
			for i := range mons {
				if mons[i].selects(ch.rule) {
					if u, ok := b.flowUpdate(c, &mons[i], ev, ch.reason, ch.rule); ok {
						updates = append(updates, u)
					}
					break
				}
			}
		}
		sendUpdates(c, 0, monitorUpdateReq(c), updates)
		sendFlowControl(c, true)
	}
}

// hasMonitors reports whether any connection monitors flows, so that
// changes are only collected when someone listens.
func (b *Bridge) hasMonitors() bool {
	for _, c := range b.connections() {
		if len(c.monitors.snapshot()) > 0 {
			return true
		}
	}
	return false
}
