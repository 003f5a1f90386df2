package wire

import "fmt"

// Multipart (1.0: stats) types.
const (
	OFPMP_DESC           uint16 = 0
	OFPMP_FLOW           uint16 = 1 // OFPMP_FLOW_DESC in 1.5
	OFPMP_AGGREGATE      uint16 = 2
	OFPMP_TABLE          uint16 = 3
	OFPMP_PORT_STATS     uint16 = 4
	OFPMP_QUEUE          uint16 = 5
	OFPMP_GROUP          uint16 = 6
	OFPMP_GROUP_DESC     uint16 = 7
	OFPMP_GROUP_FEATURES uint16 = 8
	OFPMP_METER          uint16 = 9
	OFPMP_METER_CONFIG   uint16 = 10
	OFPMP_METER_FEATURES uint16 = 11
	OFPMP_TABLE_FEATURES uint16 = 12
	OFPMP_PORT_DESC      uint16 = 13
	OFPMP_TABLE_DESC     uint16 = 14
	OFPMP_QUEUE_DESC     uint16 = 15
	OFPMP_FLOW_MONITOR   uint16 = 16
	OFPMP_FLOW_STATS     uint16 = 17 // 1.5
	OFPMP_EXPERIMENTER   uint16 = 0xffff

	OFPMPF_REQ_MORE   uint16 = 1
	OFPMPF_REPLY_MORE uint16 = 1

	// Nicira stats subtypes (OF1.0 vendor stats).
	NXST_FLOW       uint32 = 0
	NXST_AGGREGATE  uint32 = 1
	NXST_GROUP      uint32 = 7
	NXST_GROUP_DESC uint32 = 8
)

// FlowStatsRequest is the body of flow/aggregate requests in every layout:
// ofp10_flow_stats_request (Match10), nx_flow_stats_request (NXM Match),
// ofp11_flow_stats_request (OXM Match, cookie filter, out_group).
type FlowStatsRequest struct {
	TableID    uint8
	OutPort    uint32 // 16-bit in 1.0/NX
	OutGroup   uint32
	Cookie     uint64
	CookieMask uint64
	Match10    Match10
	Match      []MatchField
}

// FlowStats is one flow entry of a flow stats reply: nx_flow_stats (NX),
// ofp10_flow_stats (plain OF1.0 OFPST_FLOW, Match10 and Actions),
// ofp11_flow_stats (1.3) or ofp15_flow_desc (1.5, Stats holds the raw
// ofp_stats block including padding; see DecodeOXSStats).
type FlowStats struct {
	TableID      uint8
	DurationSec  uint32
	DurationNsec uint32
	Priority     uint16
	IdleTimeout  uint16
	HardTimeout  uint16
	Flags        uint16
	Importance   uint16
	IdleAge      uint16 // NX
	HardAge      uint16 // NX
	Cookie       uint64
	PacketCount  uint64
	ByteCount    uint64
	Match        []MatchField
	Match10      Match10 // OF1.0 ofp10_flow_stats
	Stats        []byte
	Instructions []Instruction
	Actions      []Action // NX and OF1.0
}

// DescStats is the OFPMP_DESC reply body.
type DescStats struct {
	MfrDesc, HwDesc, SwDesc [256]byte
	SerialNum               [32]byte
	DpDesc                  [256]byte
}

// GroupDesc is one group description (1.3 layout, or 1.5 layout used by
// 1.5 and NXST_GROUP_DESC).
type GroupDesc struct {
	Type    uint8
	GroupID uint32
	Buckets []Bucket
	Props   []Property
}

// Multipart is a multipart (stats) request or reply. Typed bodies are
// decoded for flow/aggregate requests, flow replies, desc, port desc and
// group desc replies; every other body is kept in Body. Experimenter/vendor
// multiparts have Type 0xffff and Experimenter/ExpType set (NXST_* in 1.0,
// ONFST_* in 1.3).
type Multipart struct {
	Reply        bool
	Type         uint16
	Flags        uint16
	Experimenter uint32
	ExpType      uint32

	FlowRequest *FlowStatsRequest
	Flows       []FlowStats
	Desc        *DescStats
	Ports       []Port
	GroupDescs  []GroupDesc

	// Typed bodies of multipart_stats.go and table_features.go; at most
	// one is set. Object is the one-object selector of port/queue/group/
	// meter stats, meter config and 1.5 port/group desc requests.
	Object        *ObjectRequest
	Tables        []TableStats
	PortStats     []PortStats
	Queues        []QueueStats
	Aggregate     *AggregateStats
	Groups        []GroupStats
	GroupFeatures *GroupFeatures
	Meters        []MeterStats
	MeterConfigs  []MeterConfig
	MeterFeatures *MeterFeatures
	TableFeatures []TableFeatures // request (set) or reply

	Body []byte
}

func (m *Multipart) MessageType(v uint8) uint8 {
	switch {
	case v == OFP10 && m.Reply:
		return OFPT10_STATS_REPLY
	case v == OFP10:
		return OFPT10_STATS_REQUEST
	case m.Reply:
		return OFPT_MULTIPART_REPLY
	}
	return OFPT_MULTIPART_REQUEST
}

func (m *Multipart) isNX() bool {
	return m.Type == OFPMP_EXPERIMENTER && m.Experimenter == NX_VENDOR_ID
}

func (m *Multipart) EncodeBody(v uint8, b []byte) ([]byte, error) {
	b = put16(put16(b, m.Type), m.Flags)
	if v != OFP10 {
		b = zeros(b, 4)
	}
	if m.Type == OFPMP_EXPERIMENTER {
		b = put32(put32(b, m.Experimenter), m.ExpType)
		if v == OFP10 {
			b = zeros(b, 4)
		}
	}
	var err error
	switch {
	case m.FlowRequest != nil:
		return appendFlowRequest(b, v, m.FlowRequest, m.isNX())
	case m.Flows != nil || (m.Reply && m.isFlowReply(v) && m.Body == nil):
		for i := range m.Flows {
			if b, err = appendFlowStats(b, v, &m.Flows[i], m.isNX()); err != nil {
				return b, err
			}
		}
		return b, nil
	case m.Desc != nil:
		d := m.Desc
		b = append(b, d.MfrDesc[:]...)
		b = append(b, d.HwDesc[:]...)
		b = append(b, d.SwDesc[:]...)
		b = append(b, d.SerialNum[:]...)
		return append(b, d.DpDesc[:]...), nil
	case m.Ports != nil:
		for i := range m.Ports {
			if b, err = m.Ports[i].Append(v, b); err != nil {
				return b, err
			}
		}
		return b, nil
	case m.GroupDescs != nil:
		for i := range m.GroupDescs {
			if b, err = appendGroupDesc(b, v, &m.GroupDescs[i], m.isNX()); err != nil {
				return b, err
			}
		}
		return b, nil
	case m.hasStatsBody():
		return m.encodeStatsBody(v, b)
	}
	return append(b, m.Body...), nil
}

func (m *Multipart) isFlowReply(v uint8) bool {
	if m.Type == OFPMP_EXPERIMENTER {
		return m.isNX() && m.ExpType == NXST_FLOW
	}
	return m.Type == OFPMP_FLOW
}

func (d *Decoder) decodeMultipartRequest(body []byte) (*Multipart, error) {
	return d.decodeMultipart(body, false)
}
func (d *Decoder) decodeMultipartReply(body []byte) (*Multipart, error) {
	return d.decodeMultipart(body, true)
}

func (d *Decoder) decodeMultipart(body []byte, reply bool) (*Multipart, error) {
	v := d.version
	hl := 8
	if v == OFP10 {
		hl = 4
	}
	if len(body) < hl {
		return nil, errf(v, OFPBRC_BAD_LEN, "multipart header truncated")
	}
	m := &Multipart{Reply: reply, Type: be16(body), Flags: be16(body[2:])}
	p := body[hl:]
	if m.Type == OFPMP_EXPERIMENTER {
		el := 8
		if v == OFP10 {
			el = 12
		}
		if len(p) < el {
			return nil, errf(v, OFPBRC_BAD_LEN, "experimenter multipart header truncated")
		}
		m.Experimenter, m.ExpType = be32(p), be32(p[4:])
		p = p[el:]
	}
	var err error
	nx := m.isNX()
	switch {
	case !reply && (m.Type == OFPMP_FLOW || m.Type == OFPMP_AGGREGATE || (nx && (m.ExpType == NXST_FLOW || m.ExpType == NXST_AGGREGATE))):
		m.FlowRequest, err = d.decodeFlowRequest(p, nx)
	case reply && m.isFlowReply(v):
		m.Flows, err = d.decodeFlowStats(p, nx)
		if m.Flows == nil && err == nil {
			m.Flows = []FlowStats{}
		}
	case reply && m.Type == OFPMP_DESC:
		if len(p) != 1056 {
			return nil, errf(v, OFPBRC_BAD_LEN, "desc reply %d bytes, want 1056", len(p))
		}
		ds := &DescStats{}
		copy(ds.MfrDesc[:], p)
		copy(ds.HwDesc[:], p[256:])
		copy(ds.SwDesc[:], p[512:])
		copy(ds.SerialNum[:], p[768:])
		copy(ds.DpDesc[:], p[800:])
		m.Desc = ds
	case reply && m.Type == OFPMP_PORT_DESC && v != OFP10:
		m.Ports, err = decodePorts(v, p)
		if m.Ports == nil && err == nil {
			m.Ports = []Port{}
		}
	case reply && (m.Type == OFPMP_GROUP_DESC && v != OFP10 || nx && m.ExpType == NXST_GROUP_DESC):
		m.GroupDescs, err = d.decodeGroupDescs(p, nx)
		if m.GroupDescs == nil && err == nil {
			m.GroupDescs = []GroupDesc{}
		}
	default:
		var typed bool
		if typed, err = d.decodeStatsBody(m, p); !typed {
			m.Body = p
		}
	}
	if err != nil {
		return nil, fmt.Errorf("multipart type %d: %w", m.Type, err)
	}
	return m, nil
}

func appendFlowRequest(b []byte, v uint8, r *FlowStatsRequest, nx bool) ([]byte, error) {
	switch {
	case nx:
		b = put16(b, uint16(r.OutPort))
		lenAt := len(b)
		b = zeros(append(put16(b, 0), r.TableID), 3)
		b, n, err := AppendNXMatch(b, v, r.Match)
		if err != nil {
			return b, err
		}
		b[lenAt], b[lenAt+1] = byte(n>>8), byte(n)
		return b, nil
	case v == OFP10:
		b = r.Match10.Append(b)
		return put16(append(b, r.TableID, 0), uint16(r.OutPort)), nil
	}
	b = zeros(append(b, r.TableID), 3)
	b = zeros(put32(put32(b, r.OutPort), r.OutGroup), 4)
	b = put64(put64(b, r.Cookie), r.CookieMask)
	return AppendOXMMatch(b, v, r.Match)
}

func (d *Decoder) decodeFlowRequest(p []byte, nx bool) (*FlowStatsRequest, error) {
	v := d.version
	r := &FlowStatsRequest{}
	switch {
	case nx:
		if len(p) < 8 {
			return nil, errf(v, OFPBRC_BAD_LEN, "nx_flow_stats_request truncated")
		}
		r.OutPort, r.TableID = uint32(be16(p)), p[4]
		fields, n, err := d.DecodeNXMatch(p[8:], int(be16(p[2:])), true)
		if err != nil {
			return nil, err
		}
		r.Match = fields
		return r, emptyBody(v, p[8+n:])
	case v == OFP10:
		if len(p) != 44 {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp10_flow_stats_request %d bytes, want 44", len(p))
		}
		r.Match10, _ = DecodeMatch10(p)
		r.TableID, r.OutPort = p[40], uint32(be16(p[42:]))
		return r, nil
	}
	if len(p) < 32 {
		return nil, errf(v, OFPBRC_BAD_LEN, "ofp11_flow_stats_request truncated")
	}
	r.TableID, r.OutPort, r.OutGroup = p[0], be32(p[4:]), be32(p[8:])
	r.Cookie, r.CookieMask = be64(p[16:]), be64(p[24:])
	fields, n, err := d.DecodeOXMMatch(p[32:])
	if err != nil {
		return nil, err
	}
	r.Match = fields
	return r, emptyBody(v, p[32+n:])
}

func appendFlowStats(b []byte, v uint8, f *FlowStats, nx bool) ([]byte, error) {
	start := len(b)
	var err error
	switch {
	case nx:
		b = zeros(append(put16(b, 0), f.TableID), 1)
		b = put32(put32(b, f.DurationSec), f.DurationNsec)
		b = put16(put16(put16(b, f.Priority), f.IdleTimeout), f.HardTimeout)
		lenAt := len(b)
		b = put16(put16(put16(b, 0), f.IdleAge), f.HardAge)
		b = put64(put64(put64(b, f.Cookie), f.PacketCount), f.ByteCount)
		var n int
		if b, n, err = AppendNXMatch(b, v, f.Match); err != nil {
			return b, err
		}
		b[lenAt], b[lenAt+1] = byte(n>>8), byte(n)
		b, err = AppendActions(b, v, f.Actions)
	case v == OFP10:
		b = appendFlowStats10(b, f)
		b, err = AppendActions(b, v, f.Actions)
	case v == OFP15:
		b = zeros(put16(b, 0), 2)
		b = zeros(append(b, f.TableID), 1)
		b = put16(put16(put16(b, f.Priority), f.IdleTimeout), f.HardTimeout)
		b = put16(put16(b, f.Flags), f.Importance)
		b = put64(b, f.Cookie)
		if b, err = AppendOXMMatch(b, v, f.Match); err != nil {
			return b, err
		}
		b = append(b, f.Stats...)
		b, err = AppendInstructions(b, v, f.Instructions)
	default:
		b = zeros(append(put16(b, 0), f.TableID), 1)
		b = put32(put32(b, f.DurationSec), f.DurationNsec)
		b = put16(put16(put16(put16(b, f.Priority), f.IdleTimeout), f.HardTimeout), f.Flags)
		b = zeros(b, 4)
		b = put64(put64(put64(b, f.Cookie), f.PacketCount), f.ByteCount)
		if b, err = AppendOXMMatch(b, v, f.Match); err != nil {
			return b, err
		}
		b, err = AppendInstructions(b, v, f.Instructions)
	}
	if err != nil {
		return b, err
	}
	return b, setLen16(b, start, start)
}

func (d *Decoder) decodeFlowStats(p []byte, nx bool) ([]FlowStats, error) {
	v := d.version
	var out []FlowStats
	for len(p) > 0 {
		if len(p) < 2 {
			return nil, errf(v, OFPBRC_BAD_LEN, "flow stats entry truncated")
		}
		n := int(be16(p))
		minLen := 56 // ofp11_flow_stats + empty match
		switch {
		case nx:
			minLen = 48
		case v == OFP10:
			minLen = flowStats10Len
		case v == OFP15:
			minLen = 32
		}
		if n < minLen || n > len(p) {
			return nil, errf(v, OFPBRC_BAD_LEN, "flow stats entry length %d invalid", n)
		}
		e := p[:n]
		var f FlowStats
		var err error
		switch {
		case nx:
			f.TableID, f.DurationSec, f.DurationNsec = e[2], be32(e[4:]), be32(e[8:])
			f.Priority, f.IdleTimeout, f.HardTimeout = be16(e[12:]), be16(e[14:]), be16(e[16:])
			f.IdleAge, f.HardAge = be16(e[20:]), be16(e[22:])
			f.Cookie, f.PacketCount, f.ByteCount = be64(e[24:]), be64(e[32:]), be64(e[40:])
			var ml int
			if f.Match, ml, err = d.DecodeNXMatch(e[48:], int(be16(e[18:])), false); err != nil {
				return nil, err
			}
			if f.Actions, err = d.DecodeActions(e[48+ml:]); err != nil {
				return nil, err
			}
		case v == OFP10:
			decodeFlowStats10(e, &f)
			if f.Actions, err = d.DecodeActions(e[flowStats10Len:]); err != nil {
				return nil, err
			}
		case v == OFP15:
			f.TableID, f.Priority, f.IdleTimeout, f.HardTimeout = e[4], be16(e[6:]), be16(e[8:]), be16(e[10:])
			f.Flags, f.Importance, f.Cookie = be16(e[12:]), be16(e[14:]), be64(e[16:])
			var ml int
			if f.Match, ml, err = d.DecodeOXMMatch(e[24:]); err != nil {
				return nil, err
			}
			q := e[24+ml:]
			if len(q) < 4 {
				return nil, errf(v, OFPBRC_BAD_LEN, "flow desc: ofp_stats truncated")
			}
			sl := (int(be16(q[2:])) + 7) &^ 7
			if sl < 4 || sl > len(q) {
				return nil, errf(v, OFPBRC_BAD_LEN, "flow desc: ofp_stats length invalid")
			}
			f.Stats = q[:sl]
			if f.Instructions, err = d.DecodeInstructions(q[sl:]); err != nil {
				return nil, err
			}
		default:
			f.TableID, f.DurationSec, f.DurationNsec = e[2], be32(e[4:]), be32(e[8:])
			f.Priority, f.IdleTimeout, f.HardTimeout, f.Flags = be16(e[12:]), be16(e[14:]), be16(e[16:]), be16(e[18:])
			f.Cookie, f.PacketCount, f.ByteCount = be64(e[24:]), be64(e[32:]), be64(e[40:])
			var ml int
			if f.Match, ml, err = d.DecodeOXMMatch(e[48:]); err != nil {
				return nil, err
			}
			if f.Instructions, err = d.DecodeInstructions(e[48+ml:]); err != nil {
				return nil, err
			}
		}
		out = append(out, f)
		p = p[n:]
	}
	return out, nil
}

func appendGroupDesc(b []byte, v uint8, g *GroupDesc, nx bool) ([]byte, error) {
	start := len(b)
	b = put32(zeros(append(put16(b, 0), g.Type), 1), g.GroupID)
	var err error
	if v == OFP13 && !nx {
		b, err = appendBuckets11(b, v, g.Buckets)
	} else {
		lenAt := len(b)
		b = zeros(b, 8)
		bs := len(b)
		if b, err = appendBuckets15(b, v, g.Buckets); err != nil {
			return b, err
		}
		if err = setLen16(b, lenAt, bs); err != nil {
			return b, err
		}
		b, err = appendProps(b, g.Props)
	}
	if err != nil {
		return b, err
	}
	return b, setLen16(b, start, start)
}

func (d *Decoder) decodeGroupDescs(p []byte, nx bool) ([]GroupDesc, error) {
	v := d.version
	var out []GroupDesc
	for len(p) > 0 {
		if len(p) < 8 {
			return nil, errf(v, OFPBRC_BAD_LEN, "group desc truncated")
		}
		n := int(be16(p))
		if n < 8 || n > len(p) {
			return nil, errf(v, OFPBRC_BAD_LEN, "group desc length %d invalid", n)
		}
		g := GroupDesc{Type: p[2], GroupID: be32(p[4:])}
		var err error
		if v == OFP13 && !nx {
			g.Buckets, err = d.decodeBuckets11(p[8:n])
		} else {
			if n < 16 {
				return nil, errf(v, OFPBRC_BAD_LEN, "group desc 1.5 truncated")
			}
			bl := int(be16(p[8:]))
			if 16+bl > n {
				return nil, errf(v, OFPBRC_BAD_LEN, "group desc bucket list overruns entry")
			}
			if g.Buckets, err = d.decodeBuckets15(p[16 : 16+bl]); err == nil {
				g.Props, err = decodeProps(v, p[16+bl:n])
			}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, g)
		p = p[n:]
	}
	return out, nil
}
