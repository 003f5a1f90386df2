package wire

import (
	"fmt"
)

// Flow-mod commands (OFPFC_*).
const (
	OFPFC_ADD           uint16 = 0
	OFPFC_MODIFY        uint16 = 1
	OFPFC_MODIFY_STRICT uint16 = 2
	OFPFC_DELETE        uint16 = 3
	OFPFC_DELETE_STRICT uint16 = 4
)

// Flow-mod flags (OFPFF_*, 1.1+ numbering; 1.0 has SEND_FLOW_REM=1,
// CHECK_OVERLAP=2, EMERG=4).
const (
	OFPFF_SEND_FLOW_REM uint16 = 1 << 0
	OFPFF_CHECK_OVERLAP uint16 = 1 << 1
	OFPFF_RESET_COUNTS  uint16 = 1 << 2
	OFPFF_NO_PKT_COUNTS uint16 = 1 << 3
	OFPFF_NO_BYT_COUNTS uint16 = 1 << 4
)

// Special values.
const (
	OFPTT_ALL     uint8  = 0xff
	OFPG_ANY      uint32 = 0xffffffff
	OFPG_ALL      uint32 = 0xfffffffc
	OFP_NO_BUFFER uint32 = 0xffffffff
	OFPM_ALL      uint32 = 0xffffffff
)

// FlowModFormat says which of the three flow-mod layouts a FlowMod uses.
type FlowModFormat uint8

const (
	// FlowModOF11 is ofp11_flow_mod (OpenFlow 1.3/1.5) with an OXM match
	// and instructions.
	FlowModOF11 FlowModFormat = iota
	// FlowModOF10 is OFPT10_FLOW_MOD with ofp10_match and actions.
	FlowModOF10
	// FlowModNX is NXT_FLOW_MOD (Nicira, any version) with an nx_match
	// and actions.
	FlowModNX
)

// FlowMod is a flow-mod in any of its three wire layouts.
//
// Command is the 16-bit command of OF1.0/NX; with NXT_FLOW_MOD_TABLE_ID
// enabled its high byte carries the table id (see NXTableID). In 1.1+ only
// the low 8 bits exist and the table is TableID. Port numbers are as on the
// wire (16-bit in 1.0/NX).
type FlowMod struct {
	Format       FlowModFormat
	Cookie       uint64
	CookieMask   uint64 // 1.1+ only
	TableID      uint8  // 1.1+ only
	Command      uint16
	IdleTimeout  uint16
	HardTimeout  uint16
	Priority     uint16
	BufferID     uint32
	OutPort      uint32
	OutGroup     uint32 // 1.1+ only
	Flags        uint16
	Importance   uint16        // 1.4+ only (padding in 1.3)
	Match10      Match10       // FlowModOF10
	Match        []MatchField  // FlowModNX (may include the "cookie" pseudo-field) and FlowModOF11
	Instructions []Instruction // FlowModOF11
	Actions      []Action      // FlowModOF10 and FlowModNX
}

// NXTableID splits an OF1.0/NX command into (command, table id) as OVS does
// when NXT_FLOW_MOD_TABLE_ID is enabled.
func (m *FlowMod) NXTableID() (command uint16, table uint8) {
	return m.Command & 0xff, uint8(m.Command >> 8)
}

func (m *FlowMod) MessageType(uint8) uint8 {
	if m.Format == FlowModNX {
		return OFPT_EXPERIMENTER
	}
	return OFPT_FLOW_MOD
}

func (m *FlowMod) EncodeBody(v uint8, b []byte) ([]byte, error) {
	var err error
	switch m.Format {
	case FlowModOF10:
		if v != OFP10 {
			return b, fmt.Errorf("OFPT10_FLOW_MOD in version %#x", v)
		}
		b = m.Match10.Append(b)
		b = put64(b, m.Cookie)
		b = put16(b, m.Command)
		b = put16(put16(put16(b, m.IdleTimeout), m.HardTimeout), m.Priority)
		b = put32(b, m.BufferID)
		b = put16(put16(b, uint16(m.OutPort)), m.Flags)
		return AppendActions(b, v, m.Actions)
	case FlowModNX:
		b = put32(put32(b, NX_VENDOR_ID), NXT_FLOW_MOD)
		b = put64(b, m.Cookie)
		b = put16(b, m.Command)
		b = put16(put16(put16(b, m.IdleTimeout), m.HardTimeout), m.Priority)
		b = put32(b, m.BufferID)
		b = put16(put16(b, uint16(m.OutPort)), m.Flags)
		lenAt := len(b)
		b = zeros(b, 8)
		var n int
		if b, n, err = AppendNXMatch(b, v, m.Match); err != nil {
			return b, err
		}
		b[lenAt], b[lenAt+1] = byte(n>>8), byte(n)
		return AppendActions(b, v, m.Actions)
	}
	if v == OFP10 {
		return b, fmt.Errorf("OpenFlow 1.1+ flow_mod in OpenFlow 1.0")
	}
	b = put64(put64(b, m.Cookie), m.CookieMask)
	b = append(b, m.TableID, byte(m.Command))
	b = put16(put16(put16(b, m.IdleTimeout), m.HardTimeout), m.Priority)
	b = put32(put32(put32(b, m.BufferID), m.OutPort), m.OutGroup)
	b = put16(b, m.Flags)
	if v >= OFP14 {
		b = put16(b, m.Importance)
	} else {
		b = put16(b, 0)
	}
	if b, err = AppendOXMMatch(b, v, m.Match); err != nil {
		return b, err
	}
	return AppendInstructions(b, v, m.Instructions)
}

func (d *Decoder) newFlowMod() *FlowMod {
	if d.pooled {
		return newIn(&d.flowMods)
	}
	return new(FlowMod)
}

// decodeFlowMod decodes OFPT_FLOW_MOD (1.0 or 1.1+ layout by version).
func (d *Decoder) decodeFlowMod(body []byte) (*FlowMod, error) {
	v := d.version
	m := d.newFlowMod()
	if v == OFP10 {
		if len(body) < 64 {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp10_flow_mod %d bytes, need 64", len(body))
		}
		m.Format = FlowModOF10
		m.Match10, _ = DecodeMatch10(body)
		p := body[40:]
		m.Cookie, m.Command = be64(p), be16(p[8:])
		m.IdleTimeout, m.HardTimeout, m.Priority = be16(p[10:]), be16(p[12:]), be16(p[14:])
		m.BufferID, m.OutPort, m.Flags = be32(p[16:]), uint32(be16(p[20:])), be16(p[22:])
		acts, err := d.DecodeActions(body[64:])
		if err != nil {
			return nil, err
		}
		m.Actions = acts
		return m, nil
	}
	if len(body) < 40 {
		return nil, errf(v, OFPBRC_BAD_LEN, "ofp11_flow_mod %d bytes, need at least 40", len(body))
	}
	m.Format = FlowModOF11
	m.Cookie, m.CookieMask = be64(body), be64(body[8:])
	m.TableID, m.Command = body[16], uint16(body[17])
	m.IdleTimeout, m.HardTimeout, m.Priority = be16(body[18:]), be16(body[20:]), be16(body[22:])
	m.BufferID, m.OutPort, m.OutGroup = be32(body[24:]), be32(body[28:]), be32(body[32:])
	m.Flags = be16(body[36:])
	if v >= OFP14 {
		m.Importance = be16(body[38:])
	}
	fields, n, err := d.DecodeOXMMatch(body[40:])
	if err != nil {
		return nil, err
	}
	m.Match = fields
	insts, err := d.DecodeInstructions(body[40+n:])
	if err != nil {
		return nil, err
	}
	m.Instructions = insts
	return m, nil
}

// decodeNXFlowMod decodes the body of NXT_FLOW_MOD after the 8-byte
// vendor/subtype header.
func (d *Decoder) decodeNXFlowMod(p []byte) (*FlowMod, error) {
	v := d.version
	if len(p) < 32 {
		return nil, errf(v, OFPBRC_BAD_LEN, "nx_flow_mod %d bytes, need 32", len(p))
	}
	m := d.newFlowMod()
	m.Format = FlowModNX
	m.Cookie, m.Command = be64(p), be16(p[8:])
	m.IdleTimeout, m.HardTimeout, m.Priority = be16(p[10:]), be16(p[12:]), be16(p[14:])
	m.BufferID, m.OutPort, m.Flags = be32(p[16:]), uint32(be16(p[20:])), be16(p[22:])
	matchLen := int(be16(p[24:]))
	fields, n, err := d.DecodeNXMatch(p[32:], matchLen, true)
	if err != nil {
		return nil, err
	}
	m.Match = fields
	acts, err := d.DecodeActions(p[32+n:])
	if err != nil {
		return nil, err
	}
	m.Actions = acts
	return m, nil
}
