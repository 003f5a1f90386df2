package ofproto

import (
	"slices"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/wire"
)

// bundleControl handles bundle open/close/commit/discard (ONF extension
// 2300 in OpenFlow 1.3, OFPT_BUNDLE_CONTROL in 1.5).
func (b *Bridge) bundleControl(c *Conn, h wire.Header, m *wire.BundleControl) error {
	if c.State.Bundles == nil {
		c.State.Bundles = map[uint32]*Bundle{}
	}
	reply := func(t uint16) error {
		// Open vSwitch's replies carry no flags, whatever the request's.
		return c.Send(h.Xid, &wire.BundleControl{ONF: m.ONF, BundleID: m.BundleID, Type: t})
	}
	bd := c.State.Bundles[m.BundleID]
	switch m.Type {
	case wire.OFPBCT_OPEN_REQUEST:
		if bd != nil {
			return ofpErr(c, wire.OFPBFC_BAD_ID, "bundle %d already open", m.BundleID)
		}
		if m.Flags&^(wire.OFPBF_ATOMIC|wire.OFPBF_ORDERED) != 0 {
			return ofpErr(c, wire.OFPBFC_BAD_FLAGS, "flags %#x", m.Flags)
		}
		c.State.Bundles[m.BundleID] = c.newBundle(b.p, m.BundleID, m.Flags)
		return reply(wire.OFPBCT_OPEN_REPLY)
	case wire.OFPBCT_CLOSE_REQUEST:
		if bd == nil {
			return ofpErr(c, wire.OFPBFC_BAD_ID, "no bundle %d", m.BundleID)
		}
		if bd.Closed {
			return ofpErr(c, wire.OFPBFC_BUNDLE_CLOSED, "bundle %d already closed", m.BundleID)
		}
		bd.Closed = true
		return reply(wire.OFPBCT_CLOSE_REPLY)
	case wire.OFPBCT_COMMIT_REQUEST:
		if bd == nil {
			return ofpErr(c, wire.OFPBFC_BAD_ID, "no bundle %d", m.BundleID)
		}
		delete(c.State.Bundles, m.BundleID)
		err := b.commitBundle(c, bd)
		switch n := len(bd.mods); {
		case n >= reclaimFlows:
			// The bundle's translations are garbage now: the reclaim a
			// moment after the reply returns them. Its collection also
			// restores the collector's pace; doing that here would start
			// a collection of the whole grown heap at once, beside the
			// commit, and the reclaim would run another one after it.
			reclaimAfterCommit()
		case n >= stagingGCAfter:
			releaseStagingGC()
		}
		c.recycle(bd)
		if err != nil {
			return err
		}
		return reply(wire.OFPBCT_COMMIT_REPLY)
	case wire.OFPBCT_DISCARD_REQUEST:
		if bd == nil {
			return ofpErr(c, wire.OFPBFC_BAD_ID, "no bundle %d", m.BundleID)
		}
		delete(c.State.Bundles, m.BundleID)
		if len(bd.mods) >= stagingGCAfter {
			releaseStagingGC()
		}
		c.recycle(bd)
		return reply(wire.OFPBCT_DISCARD_REPLY)
	}
	return ofpErr(c, wire.OFPBFC_BAD_TYPE, "bundle control type %d", m.Type)
}

// bundleAdd queues a message in an open bundle (flow-mods, group-mods and
// port-mods). A flow-mod is translated right away, from the connection's
// decoder memory, so that the commit only has to apply it; an error of
// the translation is kept and reported at commit, where the other
// validation errors of bundled messages are reported too.
func (b *Bridge) bundleAdd(c *Conn, h wire.Header, raw []byte, m *wire.BundleAdd) error {
	if c.State.Bundles == nil {
		c.State.Bundles = map[uint32]*Bundle{}
	}
	bd := c.State.Bundles[m.BundleID]
	if bd == nil {
		// OVS opens a bundle implicitly on the first add.
		bd = c.newBundle(b.p, m.BundleID, m.Flags)
		c.State.Bundles[m.BundleID] = bd
	}
	if bd.Closed {
		return ofpErr(c, wire.OFPBFC_BUNDLE_CLOSED, "bundle %d is closed", m.BundleID)
	}
	switch m.Inner.(type) {
	case *wire.FlowMod, *wire.GroupMod, *wire.PortMod:
	default:
		return ofpErr(c, wire.OFPBFC_MSG_UNSUP, "message %T cannot be bundled", m.Inner)
	}
	if m.InnerHeader.Xid != h.Xid {
		return ofpErr(c, wire.OFPBFC_MSG_BAD_XID, "inner xid %#x differs from %#x", m.InnerHeader.Xid, h.Xid)
	}
	// The inner message ends where the trailing padding and properties start.
	end := len(raw) - len(m.Trailing)
	raw = raw[end-int(m.InnerHeader.Length) : end] // the inner message
	if len(bd.mods) == cap(bd.mods) {
		// Doubling: append grows a long slice by a quarter at a time,
		// which copies a 100,000-message bundle's requests five times.
		bd.mods = slices.Grow(bd.mods, max(len(bd.mods), 64))
	}
	if n := len(bd.mods); n >= stagingGCAfter && n%1024 == 0 {
		holdStagingGC()
	}
	switch inner := m.Inner.(type) {
	case *wire.FlowMod:
		bd.mods = append(bd.mods, b.newFlowModReq(c, m.InnerHeader, bd.quote(raw), inner))
		bd.stage.Add(&bd.mods[len(bd.mods)-1].op)
	case *wire.GroupMod:
		bd.mods = append(bd.mods, b.newGroupModReq(c, m.InnerHeader, bd.quote(raw), inner))
		bd.stage.Add(&bd.mods[len(bd.mods)-1].op)
	case *wire.PortMod:
		pm := *inner
		pm.Props = nil // not used; they would refer to the connection's buffer
		bd.portMods = append(bd.portMods, bundledPortMod{after: len(bd.mods), h: m.InnerHeader, raw: bd.quote(raw), m: pm})
	}
	return nil
}

// maxSpareMods is the longest request list a connection keeps for its
// next bundle: a controller that reinstalls its tables in bundles of a
// few thousand messages (ovn-controller on every reconnect) reuses the
// same memory, while one 100,000-flow bundle does not pin its list.
const maxSpareMods = 4096

// newBundle opens a bundle with the memory of the connection's last one
// and a stage of p to build its tables as its adds come (flowtable.Stage).
func (c *Conn) newBundle(p *flowtable.Pipeline, id uint32, flags uint16) *Bundle {
	bd := &Bundle{ID: id, Flags: flags, mods: c.spareMods, quoted: c.spareQuoted, stage: p.NewStage()}
	c.spareMods, c.spareQuoted = nil, nil
	return bd
}

// recycle keeps a finished bundle's request list and quote chunk for the
// next one. Nothing refers to them any more: the commit applied the
// requests (a staged rule is the pipeline's now) and encoded its error
// replies.
func (c *Conn) recycle(bd *Bundle) {
	if cap(bd.mods) <= maxSpareMods {
		clear(bd.mods) // no rule or flow stays reachable from here
		c.spareMods = bd.mods[:0]
	}
	c.spareQuoted = bd.quoted[:0] // the last chunk (of 64 KB) quote filled
	bd.mods, bd.quoted, bd.portMods, bd.stage = nil, nil, nil, nil
}

// quote keeps the part of a bundled message an error reply would quote, in
// memory of the bundle's own (chunks shared by many messages).
func (bd *Bundle) quote(msg []byte) []byte {
	n := min(len(msg), wire.ErrorDataLen)
	if cap(bd.quoted)-len(bd.quoted) < n {
		bd.quoted = make([]byte, 0, 64*1024)
	}
	start := len(bd.quoted)
	bd.quoted = append(bd.quoted, msg[:n]...)
	return bd.quoted[start:len(bd.quoted):len(bd.quoted)]
}

// commitBundle applies a bundle all or nothing: its port-mods are checked
// first, then every flow-mod and group-mod goes in one atomic pipeline
// batch (which also satisfies non-atomic bundles), then the port-mods are
// carried out. A bad port-mod fails the commit before anything changes,
// even when a message before it would have failed too (then OVS names
// that one).
func (b *Bridge) commitBundle(c *Conn, bd *Bundle) error {
	for i := range bd.portMods {
		pm := &bd.portMods[i]
		if _, err := b.checkPortMod(c, &pm.m); err != nil {
			return failedMod(c, pm.h, pm.raw, pm.after+i, err)
		}
	}
	// Flow monitors report every flow a delete removes; without them
	// the commit may take an emptied table whole (flowtable.Stage).
	bd.stage.ListRemoved = b.hasMonitors()
	if err := b.mods(c, bd.mods, bd); err != nil {
		return err
	}
	for i := range bd.portMods {
		pm := &bd.portMods[i]
		if err := b.portMod(c, &pm.m); err != nil {
			// The port went away since the check.
			return failedMod(c, pm.h, pm.raw, pm.after+i, err)
		}
	}
	return nil
}
