package wire

import "fmt"

const (
	port10Len = 48
	port11Len = 64
)

// OFPPDPT_ETHERNET is the 1.4+ port description property for Ethernet.
const OFPPDPT_ETHERNET uint16 = 0

// Port is ofp_port: ofp10_phy_port (1.0), ofp11_port (1.3) or ofp14_port
// (1.5, properties). For 1.5, Props holds the properties as on the wire and
// is what Append writes; the Ethernet property is also decoded into the
// Curr..MaxSpeed members. If Props is nil a 1.5 encoding synthesizes the
// Ethernet property from those members.
type Port struct {
	PortNo     uint32 // 16-bit in 1.0
	HWAddr     [6]byte
	Name       [16]byte
	Config     uint32
	State      uint32
	Curr       uint32
	Advertised uint32
	Supported  uint32
	Peer       uint32
	CurrSpeed  uint32 // 1.1+
	MaxSpeed   uint32 // 1.1+
	Props      []Property
}

// NameString returns the port name without trailing NULs.
func (p *Port) NameString() string {
	n := 0
	for n < len(p.Name) && p.Name[n] != 0 {
		n++
	}
	return string(p.Name[:n])
}

// Append encodes the port for version.
func (p *Port) Append(v uint8, b []byte) ([]byte, error) {
	switch v {
	case OFP10:
		b = put16(b, uint16(p.PortNo))
		b = append(b, p.HWAddr[:]...)
		b = append(b, p.Name[:]...)
		for _, x := range []uint32{p.Config, p.State, p.Curr, p.Advertised, p.Supported, p.Peer} {
			b = put32(b, x)
		}
		return b, nil
	case OFP13:
		b = zeros(put32(b, p.PortNo), 4)
		b = zeros(append(b, p.HWAddr[:]...), 2)
		b = append(b, p.Name[:]...)
		for _, x := range []uint32{p.Config, p.State, p.Curr, p.Advertised, p.Supported, p.Peer, p.CurrSpeed, p.MaxSpeed} {
			b = put32(b, x)
		}
		return b, nil
	}
	start := len(b)
	b = zeros(put32(b, p.PortNo), 4)
	b = zeros(append(b, p.HWAddr[:]...), 2)
	b = append(b, p.Name[:]...)
	b = put32(put32(b, p.Config), p.State)
	props := p.Props
	if props == nil {
		eth := zeros(nil, 4)
		for _, x := range []uint32{p.Curr, p.Advertised, p.Supported, p.Peer, p.CurrSpeed, p.MaxSpeed} {
			eth = put32(eth, x)
		}
		props = []Property{{Type: OFPPDPT_ETHERNET, Data: eth}}
	}
	b, err := appendProps(b, props)
	if err != nil {
		return b, err
	}
	return b, setLen16(b, start+4, start)
}

// decodePort decodes one port and returns the bytes it used.
func decodePort(v uint8, b []byte) (Port, int, error) {
	var p Port
	switch v {
	case OFP10:
		if len(b) < port10Len {
			return p, 0, errf(v, OFPBRC_BAD_LEN, "ofp10_phy_port truncated")
		}
		p.PortNo = uint32(be16(b))
		copy(p.HWAddr[:], b[2:8])
		copy(p.Name[:], b[8:24])
		p.Config, p.State, p.Curr, p.Advertised, p.Supported, p.Peer = be32(b[24:]), be32(b[28:]), be32(b[32:]), be32(b[36:]), be32(b[40:]), be32(b[44:])
		return p, port10Len, nil
	case OFP13:
		if len(b) < port11Len {
			return p, 0, errf(v, OFPBRC_BAD_LEN, "ofp11_port truncated")
		}
		p.PortNo = be32(b)
		copy(p.HWAddr[:], b[8:14])
		copy(p.Name[:], b[16:32])
		q := b[32:]
		p.Config, p.State, p.Curr, p.Advertised = be32(q), be32(q[4:]), be32(q[8:]), be32(q[12:])
		p.Supported, p.Peer, p.CurrSpeed, p.MaxSpeed = be32(q[16:]), be32(q[20:]), be32(q[24:]), be32(q[28:])
		return p, port11Len, nil
	}
	if len(b) < 40 {
		return p, 0, errf(v, OFPBRC_BAD_LEN, "ofp14_port truncated")
	}
	n := int(be16(b[4:]))
	if n < 40 || n > len(b) {
		return p, 0, errf(v, OFPBRC_BAD_LEN, "ofp14_port length %d invalid", n)
	}
	p.PortNo = be32(b)
	copy(p.HWAddr[:], b[8:14])
	copy(p.Name[:], b[16:32])
	p.Config, p.State = be32(b[32:]), be32(b[36:])
	props, err := decodeProps(v, b[40:n])
	if err != nil {
		return p, 0, fmt.Errorf("port %d properties: %w", p.PortNo, err)
	}
	p.Props = props
	for _, pr := range props {
		if pr.Type == OFPPDPT_ETHERNET && len(pr.Data) >= 28 {
			q := pr.Data[4:]
			p.Curr, p.Advertised, p.Supported, p.Peer, p.CurrSpeed, p.MaxSpeed = be32(q), be32(q[4:]), be32(q[8:]), be32(q[12:]), be32(q[16:]), be32(q[20:])
		}
	}
	return p, n, nil
}

func decodePorts(v uint8, b []byte) ([]Port, error) {
	var out []Port
	for len(b) > 0 {
		p, n, err := decodePort(v, b)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
		b = b[n:]
	}
	return out, nil
}

// PortStatus is OFPT_PORT_STATUS (Reason OFPPR_ADD=0, DELETE=1, MODIFY=2).
type PortStatus struct {
	Reason uint8
	Port   Port
}

func (m *PortStatus) MessageType(uint8) uint8 { return OFPT_PORT_STATUS }
func (m *PortStatus) EncodeBody(v uint8, b []byte) ([]byte, error) {
	return m.Port.Append(v, zeros(append(b, m.Reason), 7))
}

func (d *Decoder) decodePortStatus(body []byte) (*PortStatus, error) {
	v := d.version
	if len(body) < 8 {
		return nil, errf(v, OFPBRC_BAD_LEN, "port status truncated")
	}
	p, n, err := decodePort(v, body[8:])
	if err != nil {
		return nil, err
	}
	if 8+n != len(body) {
		return nil, errf(v, OFPBRC_BAD_LEN, "port status has %d trailing bytes", len(body)-8-n)
	}
	return &PortStatus{Reason: body[0], Port: p}, nil
}

// PortMod is OFPT_PORT_MOD. Props are the 1.5 properties (Ethernet
// advertise property), Advertise is used in 1.0/1.3.
type PortMod struct {
	PortNo    uint32
	HWAddr    [6]byte
	Config    uint32
	Mask      uint32
	Advertise uint32
	Props     []Property
}

func (m *PortMod) MessageType(v uint8) uint8 {
	if v == OFP10 {
		return OFPT10_PORT_MOD
	}
	return OFPT_PORT_MOD
}

func (m *PortMod) EncodeBody(v uint8, b []byte) ([]byte, error) {
	if v == OFP10 {
		b = append(put16(b, uint16(m.PortNo)), m.HWAddr[:]...)
		b = put32(put32(put32(b, m.Config), m.Mask), m.Advertise)
		return zeros(b, 4), nil
	}
	b = zeros(put32(b, m.PortNo), 4)
	b = zeros(append(b, m.HWAddr[:]...), 2)
	b = put32(put32(b, m.Config), m.Mask)
	if v == OFP13 {
		return zeros(put32(b, m.Advertise), 4), nil
	}
	return appendProps(b, m.Props)
}

func (d *Decoder) decodePortMod(body []byte) (*PortMod, error) {
	v := d.version
	m := &PortMod{}
	switch v {
	case OFP10:
		if len(body) != 24 {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp10_port_mod %d bytes, want 24", len(body))
		}
		m.PortNo = uint32(be16(body))
		copy(m.HWAddr[:], body[2:8])
		m.Config, m.Mask, m.Advertise = be32(body[8:]), be32(body[12:]), be32(body[16:])
		return m, nil
	case OFP13:
		if len(body) != 32 {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp11_port_mod %d bytes, want 32", len(body))
		}
		m.Advertise = be32(body[24:])
	default:
		if len(body) < 24 {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp14_port_mod %d bytes, need 24", len(body))
		}
		props, err := decodeProps(v, body[24:])
		if err != nil {
			return nil, err
		}
		m.Props = props
	}
	m.PortNo = be32(body)
	copy(m.HWAddr[:], body[8:14])
	m.Config, m.Mask = be32(body[16:]), be32(body[20:])
	return m, nil
}

// TableMod is OFPT_TABLE_MOD (1.1+); Props are 1.4+ properties.
type TableMod struct {
	TableID uint8
	Config  uint32
	Props   []Property
}

func (m *TableMod) MessageType(uint8) uint8 { return OFPT_TABLE_MOD }
func (m *TableMod) EncodeBody(v uint8, b []byte) ([]byte, error) {
	b = put32(zeros(append(b, m.TableID), 3), m.Config)
	if v >= OFP14 {
		return appendProps(b, m.Props)
	}
	return b, nil
}

func (d *Decoder) decodeTableMod(body []byte) (*TableMod, error) {
	v := d.version
	if len(body) < 8 || (v < OFP14 && len(body) != 8) {
		return nil, errf(v, OFPBRC_BAD_LEN, "table mod %d bytes", len(body))
	}
	m := &TableMod{TableID: body[0], Config: be32(body[4:])}
	if v >= OFP14 {
		props, err := decodeProps(v, body[8:])
		m.Props = props
		return m, err
	}
	return m, nil
}
