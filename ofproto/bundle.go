package ofproto

import (
	"github.com/govs-project/govs/ofproto/wire"
)

// bundleControl handles bundle open/close/commit/discard (ONF extension
// 2300 in OpenFlow 1.3, OFPT_BUNDLE_CONTROL in 1.5).
func (b *Bridge) bundleControl(c *Conn, h wire.Header, m *wire.BundleControl) error {
	if c.State.Bundles == nil {
		c.State.Bundles = map[uint32]*Bundle{}
	}
	reply := func(t uint16) error {
		return c.Send(h.Xid, &wire.BundleControl{ONF: m.ONF, BundleID: m.BundleID, Type: t, Flags: m.Flags})
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
		c.State.Bundles[m.BundleID] = &Bundle{ID: m.BundleID, Flags: m.Flags}
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
		if err := b.commitBundle(c, bd); err != nil {
			return err
		}
		return reply(wire.OFPBCT_COMMIT_REPLY)
	case wire.OFPBCT_DISCARD_REQUEST:
		if bd == nil {
			return ofpErr(c, wire.OFPBFC_BAD_ID, "no bundle %d", m.BundleID)
		}
		delete(c.State.Bundles, m.BundleID)
		return reply(wire.OFPBCT_DISCARD_REPLY)
	}
	return ofpErr(c, wire.OFPBFC_BAD_TYPE, "bundle control type %d", m.Type)
}

// bundleAdd queues a message in an open bundle (flow-mods and group-mods).
func (b *Bridge) bundleAdd(c *Conn, h wire.Header, raw []byte, m *wire.BundleAdd) error {
	if c.State.Bundles == nil {
		c.State.Bundles = map[uint32]*Bundle{}
	}
	bd := c.State.Bundles[m.BundleID]
	if bd == nil {
		// OVS opens a bundle implicitly on the first add.
		bd = &Bundle{ID: m.BundleID, Flags: m.Flags}
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
	// The decoder's memory is reused for the next message: keep a copy of
	// the inner message by decoding it again from a private buffer.
	inner := append([]byte(nil), raw[len(raw)-int(m.InnerHeader.Length)-len(m.Trailing):]...)
	ih, body, _, err := wire.SplitMessage(inner)
	if err != nil {
		return ofpErr(c, wire.OFPBFC_MSG_BAD_LEN, "%v", err)
	}
	msg, err := wire.DecodeMessage(ih, body)
	if err != nil {
		return err
	}
	bd.Messages = append(bd.Messages, BundleMessage{Header: ih, Raw: inner, Msg: msg})
	return nil
}

// commitBundle applies a bundle's messages: every flow-mod in one atomic
// pipeline batch (all or nothing, which also satisfies non-atomic bundles).
func (b *Bridge) commitBundle(c *Conn, bd *Bundle) error {
	var reqs []flowModReq
	flushFlows := func() error {
		if len(reqs) == 0 {
			return nil
		}
		err := b.flowMods(c, reqs, true)
		reqs = reqs[:0]
		return err
	}
	for _, bm := range bd.Messages {
		switch m := bm.Msg.(type) {
		case *wire.FlowMod:
			reqs = append(reqs, flowModReq{bm.Header, bm.Raw, m})
		case *wire.GroupMod:
			if err := flushFlows(); err != nil {
				return err
			}
			if err := b.groupMod(c, m); err != nil {
				return err
			}
		case *wire.PortMod:
			if err := flushFlows(); err != nil {
				return err
			}
			if err := b.portMod(c, m); err != nil {
				return err
			}
		}
	}
	return flushFlows()
}
