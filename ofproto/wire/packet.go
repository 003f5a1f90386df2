package wire

// PacketIn is OFPT_PACKET_IN. 1.0 uses InPort (16-bit) and no match;
// 1.3/1.5 carry TableID, Cookie and an OXM Match (in_port etc.).
type PacketIn struct {
	BufferID uint32
	TotalLen uint16
	InPort   uint16 // 1.0
	Reason   uint8
	TableID  uint8  // 1.1+
	Cookie   uint64 // 1.3+
	Match    []MatchField
	Data     []byte
}

func (m *PacketIn) MessageType(uint8) uint8 { return OFPT_PACKET_IN }
func (m *PacketIn) EncodeBody(v uint8, b []byte) ([]byte, error) {
	b = put16(put32(b, m.BufferID), m.TotalLen)
	if v == OFP10 {
		b = append(put16(b, m.InPort), m.Reason, 0)
		return append(b, m.Data...), nil
	}
	b = put64(append(b, m.Reason, m.TableID), m.Cookie)
	b, err := AppendOXMMatch(b, v, m.Match)
	if err != nil {
		return b, err
	}
	return append(zeros(b, 2), m.Data...), nil
}

func (d *Decoder) decodePacketIn(body []byte) (*PacketIn, error) {
	v := d.version
	if v == OFP10 {
		if len(body) < 10 {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp10_packet_in truncated")
		}
		return &PacketIn{BufferID: be32(body), TotalLen: be16(body[4:]), InPort: be16(body[6:]), Reason: body[8], Data: body[10:]}, nil
	}
	if len(body) < 16 {
		return nil, errf(v, OFPBRC_BAD_LEN, "packet_in truncated")
	}
	m := &PacketIn{BufferID: be32(body), TotalLen: be16(body[4:]), Reason: body[6], TableID: body[7], Cookie: be64(body[8:])}
	fields, n, err := d.DecodeOXMMatch(body[16:])
	if err != nil {
		return nil, err
	}
	m.Match = fields
	rest := body[16+n:]
	if len(rest) < 2 {
		return nil, errf(v, OFPBRC_BAD_LEN, "packet_in: missing pad before data")
	}
	m.Data = rest[2:]
	return m, nil
}

// NXT_PACKET_IN2 property types (NXPINT_*).
const (
	NXPINT_PACKET       uint16 = 0
	NXPINT_FULL_LEN     uint16 = 1
	NXPINT_BUFFER_ID    uint16 = 2
	NXPINT_TABLE_ID     uint16 = 3
	NXPINT_COOKIE       uint16 = 4
	NXPINT_REASON       uint16 = 5
	NXPINT_METADATA     uint16 = 6
	NXPINT_USERDATA     uint16 = 7
	NXPINT_CONTINUATION uint16 = 8
)

// NXPacketIn2 is NXT_PACKET_IN2, a list of NXPINT_* properties in wire
// order (NXPINT_METADATA holds OXM TLVs; decode them with DecodeMatch).
type NXPacketIn2 struct{ Props []Property }

func (m *NXPacketIn2) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *NXPacketIn2) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	return appendProps(nxHeader(b, NXT_PACKET_IN2), m.Props)
}

// PacketOut is OFPT_PACKET_OUT. 1.0 and 1.3 carry InPort (16-bit in 1.0);
// 1.5 carries a Match instead (in_port and pipeline fields).
type PacketOut struct {
	BufferID uint32
	InPort   uint32
	Match    []MatchField // 1.5
	Actions  []Action
	Data     []byte
}

func (m *PacketOut) MessageType(uint8) uint8 { return OFPT_PACKET_OUT }
func (m *PacketOut) EncodeBody(v uint8, b []byte) ([]byte, error) {
	b = put32(b, m.BufferID)
	var lenAt int
	var err error
	switch v {
	case OFP10:
		b = put16(b, uint16(m.InPort))
		lenAt = len(b)
		b = put16(b, 0)
	case OFP13:
		b = put32(b, m.InPort)
		lenAt = len(b)
		b = zeros(b, 8)
	default:
		lenAt = len(b)
		b = zeros(b, 4)
		if b, err = AppendOXMMatch(b, v, m.Match); err != nil {
			return b, err
		}
	}
	start := len(b)
	if b, err = AppendActions(b, v, m.Actions); err != nil {
		return b, err
	}
	if err := setLen16(b, lenAt, start); err != nil {
		return b, err
	}
	return append(b, m.Data...), nil
}

func (d *Decoder) decodePacketOut(body []byte) (*PacketOut, error) {
	v := d.version
	m := &PacketOut{}
	var actLen int
	var rest []byte
	switch v {
	case OFP10:
		if len(body) < 8 {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp10_packet_out truncated")
		}
		m.BufferID, m.InPort, actLen, rest = be32(body), uint32(be16(body[4:])), int(be16(body[6:])), body[8:]
	case OFP13:
		if len(body) < 16 {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp11_packet_out truncated")
		}
		m.BufferID, m.InPort, actLen, rest = be32(body), be32(body[4:]), int(be16(body[8:])), body[16:]
	default:
		if len(body) < 8 {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp15_packet_out truncated")
		}
		m.BufferID, actLen = be32(body), int(be16(body[4:]))
		fields, n, err := d.DecodeOXMMatch(body[8:])
		if err != nil {
			return nil, err
		}
		m.Match, rest = fields, body[8+n:]
	}
	if actLen > len(rest) {
		return nil, errf(v, OFPBRC_BAD_LEN, "packet_out actions_len %d exceeds the %d bytes left", actLen, len(rest))
	}
	acts, err := d.DecodeActions(rest[:actLen])
	if err != nil {
		return nil, err
	}
	m.Actions, m.Data = acts, rest[actLen:]
	return m, nil
}

// FlowRemoved is OFPT_FLOW_REMOVED. 1.0 uses Match10; 1.3 uses Match and
// the duration/counter members; 1.5 uses Match and Stats (ofp_stats, raw).
// NX is NXT_FLOW_REMOVED, what OpenFlow 1.0 connections that chose the NXM
// flow format get: Match as an nx_match, no hard timeout.
type FlowRemoved struct {
	NX           bool
	Cookie       uint64
	Priority     uint16
	Reason       uint8
	TableID      uint8
	DurationSec  uint32
	DurationNsec uint32
	IdleTimeout  uint16
	HardTimeout  uint16
	PacketCount  uint64
	ByteCount    uint64
	Match10      Match10
	Match        []MatchField
	Stats        []byte // 1.5 ofp_stats including its header and padding
}

func (m *FlowRemoved) MessageType(uint8) uint8 {
	if m.NX {
		return OFPT_EXPERIMENTER
	}
	return OFPT_FLOW_REMOVED
}

func (m *FlowRemoved) EncodeBody(v uint8, b []byte) ([]byte, error) {
	if m.NX {
		// struct nx_flow_removed, whose table_id is the table plus one.
		b = put16(put64(nxHeader(b, NXT_FLOW_REMOVED), m.Cookie), m.Priority)
		b = put32(put32(append(b, m.Reason, m.TableID+1), m.DurationSec), m.DurationNsec)
		b = put16(b, m.IdleTimeout)
		lenAt := len(b)
		b = put64(put64(zeros(b, 2), m.PacketCount), m.ByteCount)
		b, n, err := AppendNXMatch(b, v, m.Match)
		b[lenAt], b[lenAt+1] = byte(n>>8), byte(n)
		return b, err
	}
	switch v {
	case OFP10:
		b = m.Match10.Append(b)
		b = put16(put64(b, m.Cookie), m.Priority)
		b = put32(put32(append(b, m.Reason, 0), m.DurationSec), m.DurationNsec)
		b = zeros(put16(b, m.IdleTimeout), 2)
		return put64(put64(b, m.PacketCount), m.ByteCount), nil
	case OFP13:
		b = put16(put64(b, m.Cookie), m.Priority)
		b = put32(put32(append(b, m.Reason, m.TableID), m.DurationSec), m.DurationNsec)
		b = put16(put16(b, m.IdleTimeout), m.HardTimeout)
		b = put64(put64(b, m.PacketCount), m.ByteCount)
		return AppendOXMMatch(b, v, m.Match)
	}
	b = put16(put64(b, m.Cookie), m.Priority)
	b = put16(put16(append(b, m.Reason, m.TableID), m.IdleTimeout), m.HardTimeout)
	b, err := AppendOXMMatch(b, v, m.Match)
	if err != nil {
		return b, err
	}
	return append(b, m.Stats...), nil
}

// decodeNXFlowRemoved decodes the body of NXT_FLOW_REMOVED after the
// experimenter header.
func (d *Decoder) decodeNXFlowRemoved(p []byte) (*FlowRemoved, error) {
	v := d.version
	if len(p) < 40 {
		return nil, errf(v, OFPBRC_BAD_LEN, "nx_flow_removed %d bytes, need 40", len(p))
	}
	m := &FlowRemoved{NX: true, Cookie: be64(p), Priority: be16(p[8:]), Reason: p[10], TableID: p[11] - 1,
		DurationSec: be32(p[12:]), DurationNsec: be32(p[16:]), IdleTimeout: be16(p[20:]),
		PacketCount: be64(p[24:]), ByteCount: be64(p[32:])}
	fields, n, err := d.DecodeNXMatch(p[40:], int(be16(p[22:])), false)
	if err != nil {
		return nil, err
	}
	m.Match = fields
	return m, emptyBody(v, p[40+n:])
}

func (d *Decoder) decodeFlowRemoved(body []byte) (*FlowRemoved, error) {
	v := d.version
	m := &FlowRemoved{}
	switch v {
	case OFP10:
		if len(body) != 80 {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp10_flow_removed %d bytes, want 80", len(body))
		}
		m.Match10, _ = DecodeMatch10(body)
		p := body[40:]
		m.Cookie, m.Priority, m.Reason = be64(p), be16(p[8:]), p[10]
		m.DurationSec, m.DurationNsec, m.IdleTimeout = be32(p[12:]), be32(p[16:]), be16(p[20:])
		m.PacketCount, m.ByteCount = be64(p[24:]), be64(p[32:])
		return m, nil
	case OFP13:
		if len(body) < 40 {
			return nil, errf(v, OFPBRC_BAD_LEN, "flow_removed truncated")
		}
		m.Cookie, m.Priority, m.Reason, m.TableID = be64(body), be16(body[8:]), body[10], body[11]
		m.DurationSec, m.DurationNsec = be32(body[12:]), be32(body[16:])
		m.IdleTimeout, m.HardTimeout = be16(body[20:]), be16(body[22:])
		m.PacketCount, m.ByteCount = be64(body[24:]), be64(body[32:])
		fields, n, err := d.DecodeOXMMatch(body[40:])
		if err != nil {
			return nil, err
		}
		m.Match = fields
		return m, emptyBody(v, body[40+n:])
	}
	if len(body) < 16 {
		return nil, errf(v, OFPBRC_BAD_LEN, "ofp15_flow_removed truncated")
	}
	m.Cookie, m.Priority, m.Reason, m.TableID = be64(body), be16(body[8:]), body[10], body[11]
	m.IdleTimeout, m.HardTimeout = be16(body[12:]), be16(body[14:])
	fields, n, err := d.DecodeOXMMatch(body[16:])
	if err != nil {
		return nil, err
	}
	m.Match, m.Stats = fields, body[16+n:]
	return m, nil
}
