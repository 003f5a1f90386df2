package wire

// Flow monitor (OVS "ovs-ofctl monitor BRIDGE watch:"): NXST_FLOW_MONITOR
// in OpenFlow 1.0 (nx_flow_monitor_request, nx_flow_update_*) and
// OFPMP_FLOW_MONITOR in 1.4+ (ofp14_flow_monitor_request,
// ofp_flow_update_*). The bodies travel in a Multipart's Body.

// NXST_FLOW_MONITOR is the Nicira stats subtype of the flow monitor;
// ONFST_FLOW_MONITOR the ONF extension's in OpenFlow 1.3 (NX requests
// and updates with OXM matches and instructions).
const (
	NXST_FLOW_MONITOR  uint32 = 2
	ONFST_FLOW_MONITOR uint32 = 1870
)

// Flow monitor flags in NX numbering (NXFMF_*); 1.4+ requests are
// converted to them.
const (
	NXFMF_INITIAL = 1 << 0
	NXFMF_ADD     = 1 << 1
	NXFMF_DELETE  = 1 << 2
	NXFMF_MODIFY  = 1 << 3
	NXFMF_ACTIONS = 1 << 4
	NXFMF_OWN     = 1 << 5
)

// OpenFlow 1.4 flags (OFPFMF14_*): the same first five bits; "own" is
// ONLY_OWN (NO_ABBREV is not supported by OVS).
const (
	ofpfmf14NoAbbrev = 1 << 5
	ofpfmf14OnlyOwn  = 1 << 6
)

// FlowMonitorRequest is one monitor of a flow monitor request.
type FlowMonitorRequest struct {
	ID       uint32
	Flags    uint16 // NXFMF_*
	OutPort  uint32 // wire value (16-bit in 1.0)
	OutGroup uint32
	TableID  uint8
	Match    []MatchField
}

// DecodeFlowMonitorRequests decodes the body of a flow monitor request.
func DecodeFlowMonitorRequests(version uint8, body []byte) ([]FlowMonitorRequest, error) {
	d := Decoder{version: version}
	var out []FlowMonitorRequest
	for len(body) > 0 {
		var r FlowMonitorRequest
		if version == OFP13 {
			// onf_flow_monitor_request: id, flags (NXFMF_*), match_len,
			// out_port, table_id, zeros[3], then an ofp_match.
			if len(body) < 16 {
				return nil, errf(version, OFPBRC_BAD_LEN, "onf_flow_monitor_request of %d bytes, want at least 16", len(body))
			}
			r.ID, r.Flags, r.OutPort, r.TableID = be32(body), be16(body[4:]), be32(body[8:]), body[12]
			if r.Flags&^(NXFMF_INITIAL|NXFMF_ADD|NXFMF_DELETE|NXFMF_MODIFY|NXFMF_ACTIONS|NXFMF_OWN) != 0 {
				return nil, errf(version, OFPMOFC_BAD_FLAGS, "flow monitor flags %#x", r.Flags)
			}
			r.OutGroup = OFPG_ANY
			fields, n, err := d.DecodeOXMMatch(body[16:])
			if err != nil {
				return nil, err
			}
			r.Match = append([]MatchField(nil), fields...)
			body = body[16+n:]
		} else if version == OFP10 {
			if len(body) < 16 {
				return nil, errf(version, OFPBRC_BAD_LEN, "nx_flow_monitor_request of %d bytes, want at least 16", len(body))
			}
			r.ID, r.Flags, r.OutPort = be32(body), be16(body[4:]), uint32(be16(body[6:]))
			matchLen := int(be16(body[8:]))
			r.TableID = body[10]
			if r.Flags&^(NXFMF_INITIAL|NXFMF_ADD|NXFMF_DELETE|NXFMF_MODIFY|NXFMF_ACTIONS|NXFMF_OWN) != 0 {
				return nil, errf(version, OFPMOFC_BAD_FLAGS, "flow monitor flags %#x", r.Flags)
			}
			fields, n, err := d.DecodeNXMatch(body[16:], matchLen, false)
			if err != nil {
				return nil, err
			}
			r.Match = append([]MatchField(nil), fields...)
			body = body[16+n:]
		} else {
			if len(body) < 16 {
				return nil, errf(version, OFPBRC_BAD_LEN, "ofp14_flow_monitor_request of %d bytes, want at least 16", len(body))
			}
			r.ID, r.OutPort, r.OutGroup = be32(body), be32(body[4:]), be32(body[8:])
			flags := be16(body[12:])
			r.TableID = body[14]
			if command := body[15]; command != 0 { // OFPFMC_ADD only, as OVS
				return nil, errf(version, OFPMOFC_BAD_COMMAND, "flow monitor command %d", command)
			}
			if flags&^(0x1f|ofpfmf14OnlyOwn) != 0 {
				return nil, errf(version, OFPMOFC_BAD_FLAGS, "flow monitor flags %#x", flags)
			}
			r.Flags = flags & 0x1f
			if flags&ofpfmf14OnlyOwn != 0 {
				r.Flags |= NXFMF_OWN
			}
			fields, n, err := d.DecodeOXMMatch(body[16:])
			if err != nil {
				return nil, err
			}
			r.Match = append([]MatchField(nil), fields...)
			body = body[16+n:]
		}
		out = append(out, r)
	}
	return out, nil
}

// Flow update events, in the model's terms; each version numbers them
// its own way (flowUpdateEvent).
const (
	FlowUpdateInitial = iota
	FlowUpdateAdded
	FlowUpdateDeleted
	FlowUpdateModified
	FlowUpdateAbbrev
)

// flowUpdateEvent is the wire event: NXFME_* in 1.0 and 1.3's ONF
// extension (an initial flow is ADDED there), OFPFME_* in 1.4+.
func flowUpdateEvent(version uint8, e int) uint16 {
	if version < OFP14 {
		return [...]uint16{0, 0, 1, 2, 3}[e]
	}
	return [...]uint16{0, 1, 2, 3, 4}[e]
}

// FlowUpdate is one update of a flow monitor reply: a flow (with its
// actions when asked) or, for an abbreviated one, the xid of the
// request that made the change.
type FlowUpdate struct {
	Event  int
	Reason uint8 // OFPRR_* of a deleted flow
	Xid    uint32
	Flow   FlowStats // table, priority, timeouts, cookie, match, actions or instructions
}

// AppendFlowUpdate appends u to a flow monitor reply body.
func AppendFlowUpdate(b []byte, version uint8, u *FlowUpdate) ([]byte, error) {
	start := len(b)
	if u.Event == FlowUpdatePaused || u.Event == FlowUpdateResumed { // 1.4+ ofp_flow_update_paused
		return zeros(put16(put16(b, 8), uint16(u.Event)), 4), nil
	}
	ev := flowUpdateEvent(version, u.Event)
	if u.Event == FlowUpdateAbbrev {
		return put32(put16(put16(b, 8), ev), u.Xid), nil
	}
	f := &u.Flow
	var err error
	if version < OFP14 {
		b = put16(put16(put16(b, 0), ev), uint16(u.Reason))
		b = put16(put16(put16(b, f.Priority), f.IdleTimeout), f.HardTimeout)
		lenAt := len(b)
		b = append(put16(b, 0), f.TableID, 0)
		b = put64(b, f.Cookie)
		if version == OFP13 {
			// match_len is the ofp_match's own length (header included).
			at := len(b)
			if b, err = AppendOXMMatch(b, version, f.Match); err != nil {
				return b, err
			}
			b[lenAt], b[lenAt+1] = b[at+2], b[at+3]
			if b, err = AppendInstructions(b, version, f.Instructions); err != nil {
				return b, err
			}
		} else {
			var n int
			if b, n, err = AppendNXMatch(b, version, f.Match); err != nil {
				return b, err
			}
			b[lenAt], b[lenAt+1] = byte(n>>8), byte(n)
			if b, err = AppendActions(b, version, f.Actions); err != nil {
				return b, err
			}
		}
	} else {
		b = put16(put16(b, 0), ev)
		b = append(b, f.TableID, u.Reason)
		b = put16(put16(put16(b, f.IdleTimeout), f.HardTimeout), f.Priority)
		b = put64(zeros(b, 4), f.Cookie)
		if b, err = AppendOXMMatch(b, version, f.Match); err != nil {
			return b, err
		}
		if b, err = AppendInstructions(b, version, f.Instructions); err != nil {
			return b, err
		}
	}
	b = pad8(b, start)
	return b, setLen16(b, start, start)
}

// Flow monitor flow control: OpenFlow 1.0 sends NXT_FLOW_MONITOR_PAUSED
// and NXT_FLOW_MONITOR_RESUMED messages (1.3: the ONF extension's
// ONFT_FLOW_MONITOR_PAUSED and RESUMED), 1.4+ updates of these events.
const (
	nxtFlowMonitorPaused  uint32 = 22
	nxtFlowMonitorResumed uint32 = 23
	onftFlowMonitorPaused uint32 = 1871

	FlowUpdatePaused  = 5 // OFPFME_PAUSED
	FlowUpdateResumed = 6 // OFPFME_RESUMED
)

// NXFlowMonitorPaused is NXT_FLOW_MONITOR_PAUSED or, with Resumed,
// NXT_FLOW_MONITOR_RESUMED (no body).
type NXFlowMonitorPaused struct{ Resumed bool }

func (m *NXFlowMonitorPaused) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *NXFlowMonitorPaused) EncodeBody(v uint8, b []byte) ([]byte, error) {
	resumed := uint32(0)
	if m.Resumed {
		resumed = 1
	}
	if v == OFP13 {
		return put32(put32(b, ONF_VENDOR_ID), onftFlowMonitorPaused+resumed), nil
	}
	return nxHeader(b, nxtFlowMonitorPaused+resumed), nil
}
