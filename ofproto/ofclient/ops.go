package ofclient

import (
	"errors"
	"fmt"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// The operations below send what ovs-ofctl sends for the same command in
// the connection's version (PROTOCOL.md §3).

// nxFlowFormat puts an OpenFlow 1.0 connection in NXM mode, as ovs-ofctl
// does before any NX flow-mod or flow stats request (NXT_SET_FLOW_FORMAT +
// barrier). Later versions need nothing.
func (c *Conn) nxFlowFormat() error {
	if c.version != wire.OFP10 {
		return nil
	}
	if err := c.Transact(&wire.NXSetFlowFormat{Format: wire.NXFF_NXM}); err != nil {
		return fmt.Errorf("NXT_SET_FLOW_FORMAT(nxm): %w", err)
	}
	return nil
}

// EncodeFlowMods encodes flow-mods for the connection's version. In
// OpenFlow 1.0 (NXT_FLOW_MOD) the table id travels in the command's high
// byte only once NXT_FLOW_MOD_TABLE_ID is enabled; needTID says whether
// any flow-mod needs it (a table other than 0 and "all tables").
func EncodeFlowMods(fms []*translate.FlowMod, version uint8, tlv *flowtable.TLVMap) (msgs []wire.Message, needTID bool, err error) {
	for _, fm := range fms {
		if version == wire.OFP10 && fm.Flow.Table != 0 && fm.Flow.Table != translate.TableAll {
			needTID = true
		}
	}
	msgs = make([]wire.Message, len(fms))
	for i, fm := range fms {
		w, err := translate.FlowModToWire(fm, version, tlv)
		if err != nil {
			return nil, false, &TransactError{Index: i, Err: err}
		}
		if version == wire.OFP10 && !needTID {
			// Table 0 or every table: the plain 16-bit command.
			w.Command &= 0xff
		}
		msgs[i] = w
	}
	return msgs, needTID, nil
}

// FlowMods sends flow-mods: each one followed by a barrier (stopping at
// the first error), or all in one atomic, ordered bundle. Errors are
// *TransactError values whose Index is the failing flow-mod.
func (c *Conn) FlowMods(fms []*translate.FlowMod, tlv *flowtable.TLVMap, bundle bool) error {
	msgs, needTID, err := EncodeFlowMods(fms, c.version, tlv)
	if err != nil {
		return err
	}
	if err := c.nxFlowFormat(); err != nil {
		return err
	}
	if needTID {
		if err := c.Transact(&wire.NXFlowModTableID{Set: 1}); err != nil {
			return fmt.Errorf("NXT_FLOW_MOD_TABLE_ID: %w", err)
		}
	}
	if bundle {
		return c.Bundle(msgs...)
	}
	return c.Transact(msgs...)
}

// BucketAll is OFPG15_BUCKET_ALL.
const BucketAll = 0xffffffff

// GroupMods sends group-mods like FlowMods (NXT_GROUP_MOD in OpenFlow 1.0).
func (c *Conn) GroupMods(gms []*translate.GroupMod, tlv *flowtable.TLVMap, bundle bool) error {
	msgs := make([]wire.Message, len(gms))
	for i, gm := range gms {
		if gm.Command == wire.OFPGC_ADD || gm.Command == wire.OFPGC_MODIFY || gm.Command == wire.OFPGC_DELETE {
			// The 1.5 layout's command_bucket_id must be OFPG15_BUCKET_ALL
			// for whole-group commands (Open vSwitch rejects 0).
			x := *gm
			x.CommandBucketID = BucketAll
			gm = &x
		}
		w, err := translate.GroupModToWire(gm, c.version, tlv)
		if err != nil {
			return &TransactError{Index: i, Err: err}
		}
		msgs[i] = w
	}
	if bundle {
		return c.Bundle(msgs...)
	}
	return c.Transact(msgs...)
}

// FlowFilter selects flows for a flow stats request (dump-flows MATCH).
type FlowFilter struct {
	Table      uint8 // translate.TableAll for every table
	Match      flowtable.Match
	Cookie     uint64
	CookieMask uint64
	OutPort    uint32 // model numbering; flowtable.PortNone = any
	OutGroup   uint32 // translate.GroupAny = any
}

// AllFlows is the filter of a plain dump-flows.
func AllFlows() *FlowFilter {
	return &FlowFilter{Table: translate.TableAll, OutPort: flowtable.PortNone, OutGroup: translate.GroupAny}
}

// FlowStatsRequest encodes the flow stats request for f: NXST_FLOW in
// OpenFlow 1.0, OFPMP_FLOW (1.5: OFPMP_FLOW_DESC) otherwise.
func FlowStatsRequest(f *FlowFilter, version uint8, tlv *flowtable.TLVMap) (*wire.Multipart, error) {
	match, err := translate.MatchToWire(&f.Match, version, tlv)
	if err != nil {
		return nil, err
	}
	r := &wire.FlowStatsRequest{TableID: f.Table, OutGroup: f.OutGroup, Cookie: f.Cookie, CookieMask: f.CookieMask, Match: match}
	if version == wire.OFP10 {
		if f.CookieMask != 0 {
			return nil, errors.New("a cookie filter needs OpenFlow 1.3 or later (use -O OpenFlow13)")
		}
		r.OutPort = f.OutPort & 0xffff
		return &wire.Multipart{Type: wire.OFPMP_EXPERIMENTER, Experimenter: wire.NX_VENDOR_ID, ExpType: wire.NXST_FLOW, FlowRequest: r}, nil
	}
	r.OutPort = translate.PortToOFP11(f.OutPort)
	return &wire.Multipart{Type: wire.OFPMP_FLOW, FlowRequest: r}, nil
}

// FlowStatsReplies sends a flow stats request and returns the raw entries.
func (c *Conn) FlowStatsReplies(f *FlowFilter, tlv *flowtable.TLVMap) ([]wire.FlowStats, error) {
	req, err := FlowStatsRequest(f, c.version, tlv)
	if err != nil {
		return nil, err
	}
	if err := c.nxFlowFormat(); err != nil {
		return nil, err
	}
	parts, err := c.Multipart(req)
	if err != nil {
		return nil, err
	}
	var out []wire.FlowStats
	for _, p := range parts {
		out = append(out, p.Flows...)
	}
	return out, nil
}

// DumpFlows returns the flows f selects. tun_metadata fields are decoded
// with tlv; when that fails and tlv is nil, the switch's TLV table is
// fetched and decoding retried (ovs-ofctl needs no table for this because
// OVS sends the option length in the field; govs needs the mapping). The
// map used is returned, for printing.
func (c *Conn) DumpFlows(f *FlowFilter, tlv *flowtable.TLVMap) ([]*translate.FlowStats, *flowtable.TLVMap, error) {
	raw, err := c.FlowStatsReplies(f, tlv)
	if err != nil {
		return nil, tlv, err
	}
	out, err := flowStatsFromWire(raw, c.version, tlv)
	if err != nil && tlv == nil {
		t, _, terr := c.TLVTable()
		if terr != nil {
			return nil, tlv, err
		}
		out, err = flowStatsFromWire(raw, c.version, t)
		return out, t, err
	}
	return out, tlv, err
}

func flowStatsFromWire(raw []wire.FlowStats, version uint8, tlv *flowtable.TLVMap) ([]*translate.FlowStats, error) {
	out := make([]*translate.FlowStats, 0, len(raw))
	for i := range raw {
		fs, err := translate.FlowStatsFromWire(&raw[i], version, tlv)
		if err != nil {
			return nil, fmt.Errorf("flow %d of the reply: %w", i+1, err)
		}
		out = append(out, fs)
	}
	return out, nil
}

// DumpGroups returns the switch's group descriptions (all groups, or the
// one group id unless id is flowtable.GroupAllID): NXST_GROUP_DESC in
// OpenFlow 1.0, OFPMP_GROUP_DESC otherwise.
func (c *Conn) DumpGroups(id uint32, tlv *flowtable.TLVMap) ([]*flowtable.GroupEntry, error) {
	req := &wire.Multipart{Type: wire.OFPMP_GROUP_DESC}
	switch c.version {
	case wire.OFP10:
		req = &wire.Multipart{Type: wire.OFPMP_EXPERIMENTER, Experimenter: wire.NX_VENDOR_ID, ExpType: wire.NXST_GROUP_DESC,
			Object: &wire.ObjectRequest{ID: id}}
	case wire.OFP15:
		req.Object = &wire.ObjectRequest{ID: id}
	}
	parts, err := c.Multipart(req)
	if err != nil {
		return nil, err
	}
	var out []*flowtable.GroupEntry
	for _, p := range parts {
		for i := range p.GroupDescs {
			gd := &p.GroupDescs[i]
			if c.version == wire.OFP13 && id != flowtable.GroupAllID && gd.GroupID != id {
				continue // OpenFlow 1.3 has no per-group request.
			}
			// A description is a group-mod without the command.
			gm := &wire.GroupMod{NX: c.version == wire.OFP10, Command: wire.OFPGC_ADD, Type: gd.Type, GroupID: gd.GroupID,
				Buckets: gd.Buckets, Props: gd.Props}
			g, err := translate.GroupModFromWire(gm, c.version, tlv)
			if err != nil {
				return nil, fmt.Errorf("group %d of the reply: %w", gd.GroupID, err)
			}
			out = append(out, g.Group)
		}
	}
	return out, nil
}

// TLVTable asks for the switch's Geneve option table
// (NXT_TLV_TABLE_REQUEST) and returns it as a model map plus the raw reply.
func (c *Conn) TLVTable() (*flowtable.TLVMap, *wire.NXTLVTableReply, error) {
	rep, err := c.Request(&wire.NXTLVTableRequest{})
	if err != nil {
		return nil, nil, fmt.Errorf("NXT_TLV_TABLE_REQUEST: %w", err)
	}
	r, ok := rep.(*wire.NXTLVTableReply)
	if !ok {
		return nil, nil, fmt.Errorf("reply to NXT_TLV_TABLE_REQUEST is %T", rep)
	}
	t := flowtable.NewTLVMap()
	for _, m := range r.Maps {
		if err := t.Add(flowtable.TLVMapping{Class: m.OptClass, Type: m.OptType, Len: m.OptLen, Index: int(m.Index)}); err != nil {
			return nil, nil, fmt.Errorf("switch's TLV table: %w", err)
		}
	}
	return t, r, nil
}

// TLVTableMod sends NXT_TLV_TABLE_MOD (command NXTTMC_ADD=0, DELETE=1,
// CLEAR=2) followed by a barrier.
func (c *Conn) TLVTableMod(command uint16, ms []flowtable.TLVMapping) error {
	m := &wire.NXTLVTableMod{Command: command}
	for _, x := range ms {
		m.Maps = append(m.Maps, wire.NXTLVMap{OptClass: x.Class, OptType: x.Type, OptLen: x.Len, Index: uint16(x.Index)})
	}
	return c.Transact(m)
}

// Features sends FEATURES_REQUEST.
func (c *Conn) Features() (*wire.FeaturesReply, error) {
	rep, err := c.Request(&wire.FeaturesRequest{})
	if err != nil {
		return nil, err
	}
	f, ok := rep.(*wire.FeaturesReply)
	if !ok {
		return nil, fmt.Errorf("reply to FEATURES_REQUEST is %T", rep)
	}
	return f, nil
}

// Ports returns the switch's ports: from the features reply in OpenFlow
// 1.0, from OFPMP_PORT_DESC otherwise.
func (c *Conn) Ports() ([]wire.Port, error) {
	if c.version == wire.OFP10 {
		f, err := c.Features()
		if err != nil {
			return nil, err
		}
		return f.Ports, nil
	}
	req := &wire.Multipart{Type: wire.OFPMP_PORT_DESC}
	if c.version == wire.OFP15 {
		req.Object = &wire.ObjectRequest{ID: wire.OFPP_ANY}
	}
	parts, err := c.Multipart(req)
	if err != nil {
		return nil, err
	}
	var out []wire.Port
	for _, p := range parts {
		out = append(out, p.Ports...)
	}
	return out, nil
}

// Config sends GET_CONFIG_REQUEST.
func (c *Conn) Config() (*wire.SwitchConfig, error) {
	rep, err := c.Request(&wire.GetConfigRequest{})
	if err != nil {
		return nil, err
	}
	sc, ok := rep.(*wire.SwitchConfig)
	if !ok {
		return nil, fmt.Errorf("reply to GET_CONFIG_REQUEST is %T", rep)
	}
	return sc, nil
}

// PortStats returns port counters for port (wire numbering of the
// connection's version; OFPP_ANY / OFPP_NONE in 1.0 for all ports).
func (c *Conn) PortStats(port uint32) ([]wire.PortStats, error) {
	parts, err := c.Multipart(&wire.Multipart{Type: wire.OFPMP_PORT_STATS, Object: &wire.ObjectRequest{ID: port}})
	if err != nil {
		return nil, err
	}
	var out []wire.PortStats
	for _, p := range parts {
		out = append(out, p.PortStats...)
	}
	return out, nil
}

// TableStats returns OFPMP_TABLE (1.0: OFPST_TABLE).
func (c *Conn) TableStats() ([]wire.TableStats, error) {
	parts, err := c.Multipart(&wire.Multipart{Type: wire.OFPMP_TABLE})
	if err != nil {
		return nil, err
	}
	var out []wire.TableStats
	for _, p := range parts {
		out = append(out, p.Tables...)
	}
	return out, nil
}

// PacketOut sends a packet-out of frame from inPort (model numbering)
// with actions, followed by a barrier.
func (c *Conn) PacketOut(frame []byte, inPort uint32, actions []flowtable.Action, tlv *flowtable.TLVMap) error {
	acts, err := translate.ActionsToWire(c.version, actions, tlv)
	if err != nil {
		return err
	}
	po := &wire.PacketOut{BufferID: wire.OFP_NO_BUFFER, Actions: acts, Data: frame}
	switch c.version {
	case wire.OFP10:
		po.InPort = inPort
	case wire.OFP13:
		po.InPort = translate.PortToOFP11(inPort)
	default:
		// OpenFlow 1.5 carries in_port as an OXM match.
		var m flowtable.Match
		m.SetUint64(flowtable.FieldInPort, uint64(inPort))
		if po.Match, err = translate.MatchToWire(&m, c.version, tlv); err != nil {
			return err
		}
	}
	return c.Transact(po)
}
