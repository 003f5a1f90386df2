package wire

// EchoRequest is OFPT_ECHO_REQUEST; Data is echoed back in the reply.
type EchoRequest struct{ Data []byte }

// EchoReply is OFPT_ECHO_REPLY.
type EchoReply struct{ Data []byte }

func (m *EchoRequest) MessageType(uint8) uint8 { return OFPT_ECHO_REQUEST }
func (m *EchoRequest) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	return append(b, m.Data...), nil
}
func (m *EchoReply) MessageType(uint8) uint8 { return OFPT_ECHO_REPLY }
func (m *EchoReply) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	return append(b, m.Data...), nil
}

// BarrierRequest is OFPT_BARRIER_REQUEST (type 18 in 1.0, 20 in 1.1+).
type BarrierRequest struct{}

// BarrierReply is OFPT_BARRIER_REPLY (type 19 in 1.0, 21 in 1.1+).
type BarrierReply struct{}

func (m *BarrierRequest) MessageType(v uint8) uint8 {
	if v == OFP10 {
		return OFPT10_BARRIER_REQUEST
	}
	return OFPT_BARRIER_REQUEST
}
func (m *BarrierRequest) EncodeBody(_ uint8, b []byte) ([]byte, error) { return b, nil }
func (m *BarrierReply) MessageType(v uint8) uint8 {
	if v == OFP10 {
		return OFPT10_BARRIER_REPLY
	}
	return OFPT_BARRIER_REPLY
}
func (m *BarrierReply) EncodeBody(_ uint8, b []byte) ([]byte, error) { return b, nil }

// FeaturesRequest is OFPT_FEATURES_REQUEST.
type FeaturesRequest struct{}

func (m *FeaturesRequest) MessageType(uint8) uint8                      { return OFPT_FEATURES_REQUEST }
func (m *FeaturesRequest) EncodeBody(_ uint8, b []byte) ([]byte, error) { return b, nil }

// OFPC_* capabilities.
const (
	OFPC_FLOW_STATS   uint32 = 1 << 0
	OFPC_TABLE_STATS  uint32 = 1 << 1
	OFPC_PORT_STATS   uint32 = 1 << 2
	OFPC_GROUP_STATS  uint32 = 1 << 3 // 1.1+ (OFPC10_STP in 1.0)
	OFPC_IP_REASM     uint32 = 1 << 5
	OFPC_QUEUE_STATS  uint32 = 1 << 6
	OFPC_ARP_MATCH_IP uint32 = 1 << 7 // 1.0 only
	OFPC_PORT_BLOCKED uint32 = 1 << 8
)

// FeaturesReply is OFPT_FEATURES_REPLY (ofp_switch_features). OpenFlow 1.0
// carries Actions and the Ports list; 1.3+ carries AuxiliaryID and Reserved
// instead and ports come from OFPMP_PORT_DESC.
type FeaturesReply struct {
	DatapathID   uint64
	NBuffers     uint32
	NTables      uint8
	AuxiliaryID  uint8 // 1.3+
	Capabilities uint32
	Actions      uint32 // 1.0: supported OFPAT10 bitmap
	Reserved     uint32 // 1.3+
	Ports        []Port // 1.0 only
}

func (m *FeaturesReply) MessageType(uint8) uint8 { return OFPT_FEATURES_REPLY }

func (m *FeaturesReply) EncodeBody(v uint8, b []byte) ([]byte, error) {
	b = put64(b, m.DatapathID)
	b = put32(b, m.NBuffers)
	b = append(b, m.NTables)
	if v == OFP10 {
		b = append(b, 0, 0, 0)
		b = put32(b, m.Capabilities)
		b = put32(b, m.Actions)
		for i := range m.Ports {
			var err error
			if b, err = m.Ports[i].Append(v, b); err != nil {
				return b, err
			}
		}
		return b, nil
	}
	b = append(b, m.AuxiliaryID, 0, 0)
	b = put32(b, m.Capabilities)
	b = put32(b, m.Reserved)
	return b, nil
}

func (d *Decoder) decodeFeaturesReply(body []byte) (*FeaturesReply, error) {
	v := d.version
	if len(body) < 24 {
		return nil, errf(v, OFPBRC_BAD_LEN, "features reply %d bytes, need 24", len(body))
	}
	m := &FeaturesReply{DatapathID: be64(body), NBuffers: be32(body[8:]), NTables: body[12], Capabilities: be32(body[16:])}
	if v != OFP10 {
		m.AuxiliaryID = body[13]
		m.Reserved = be32(body[20:])
		return m, emptyBody(v, body[24:])
	}
	m.Actions = be32(body[20:])
	rest := body[24:]
	if len(rest)%port10Len != 0 {
		return nil, errf(v, OFPBRC_BAD_LEN, "features reply port list %d bytes is not a multiple of %d", len(rest), port10Len)
	}
	for len(rest) > 0 {
		p, n, err := decodePort(v, rest)
		if err != nil {
			return nil, err
		}
		m.Ports = append(m.Ports, p)
		rest = rest[n:]
	}
	return m, nil
}

// OFPC_FRAG_* switch config flags.
const (
	OFPC_FRAG_NORMAL               uint16 = 0
	OFPC_FRAG_DROP                 uint16 = 1
	OFPC_FRAG_REASM                uint16 = 2
	OFPC_FRAG_NX_MATCH             uint16 = 3
	OFPC_INVALID_TTL_TO_CONTROLLER uint16 = 1 << 2
)

// GetConfigRequest is OFPT_GET_CONFIG_REQUEST.
type GetConfigRequest struct{}

func (m *GetConfigRequest) MessageType(uint8) uint8                      { return OFPT_GET_CONFIG_REQUEST }
func (m *GetConfigRequest) EncodeBody(_ uint8, b []byte) ([]byte, error) { return b, nil }

// SwitchConfig is ofp_switch_config: OFPT_GET_CONFIG_REPLY (Reply) or
// OFPT_SET_CONFIG.
type SwitchConfig struct {
	Reply       bool
	Flags       uint16
	MissSendLen uint16
}

func (m *SwitchConfig) MessageType(uint8) uint8 {
	if m.Reply {
		return OFPT_GET_CONFIG_REPLY
	}
	return OFPT_SET_CONFIG
}

func (m *SwitchConfig) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	return put16(put16(b, m.Flags), m.MissSendLen), nil
}

func decodeSwitchConfig(v, typ uint8, body []byte) (*SwitchConfig, error) {
	if len(body) != 4 {
		return nil, errf(v, OFPBRC_BAD_LEN, "switch config %d bytes, want 4", len(body))
	}
	return &SwitchConfig{Reply: typ == OFPT_GET_CONFIG_REPLY, Flags: be16(body), MissSendLen: be16(body[2:])}, nil
}

// OFPCR_ROLE_* controller roles.
const (
	OFPCR_ROLE_NOCHANGE uint32 = 0
	OFPCR_ROLE_EQUAL    uint32 = 1
	OFPCR_ROLE_MASTER   uint32 = 2
	OFPCR_ROLE_SLAVE    uint32 = 3
)

// RoleMsg is OFPT_ROLE_REQUEST / OFPT_ROLE_REPLY (ofp12_role_request).
type RoleMsg struct {
	Reply        bool
	Role         uint32
	GenerationID uint64
}

func (m *RoleMsg) MessageType(uint8) uint8 {
	if m.Reply {
		return OFPT_ROLE_REPLY
	}
	return OFPT_ROLE_REQUEST
}

func (m *RoleMsg) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	b = put32(b, m.Role)
	b = zeros(b, 4)
	return put64(b, m.GenerationID), nil
}

func decodeRole(v, typ uint8, body []byte) (*RoleMsg, error) {
	if len(body) != 16 {
		return nil, errf(v, OFPBRC_BAD_LEN, "role message %d bytes, want 16", len(body))
	}
	return &RoleMsg{Reply: typ == OFPT_ROLE_REPLY, Role: be32(body), GenerationID: be64(body[8:])}, nil
}

// GetAsyncRequest is OFPT_GET_ASYNC_REQUEST.
type GetAsyncRequest struct{}

func (m *GetAsyncRequest) MessageType(uint8) uint8                      { return OFPT_GET_ASYNC_REQUEST }
func (m *GetAsyncRequest) EncodeBody(_ uint8, b []byte) ([]byte, error) { return b, nil }

// AsyncConfig is OFPT_GET_ASYNC_REPLY (Reply) or OFPT_SET_ASYNC. In 1.3 it
// is three pairs of masks (index 0 = master/equal, 1 = slave); in 1.5 it is
// a list of ofp14_async_config_prop_reasons properties (kept in Props).
// NX is Open vSwitch's NXT_SET_ASYNC_CONFIG: the 1.3 masks, in any version.
type AsyncConfig struct {
	Reply           bool
	NX              bool
	PacketInMask    [2]uint32
	PortStatusMask  [2]uint32
	FlowRemovedMask [2]uint32
	Props           []Property // 1.5
}

func (m *AsyncConfig) MessageType(uint8) uint8 {
	switch {
	case m.NX:
		return OFPT_EXPERIMENTER
	case m.Reply:
		return OFPT_GET_ASYNC_REPLY
	}
	return OFPT_SET_ASYNC
}

func (m *AsyncConfig) EncodeBody(v uint8, b []byte) ([]byte, error) {
	if m.NX {
		b = nxHeader(b, NXT_SET_ASYNC_CONFIG)
	} else if v >= OFP14 {
		return appendProps(b, m.Props)
	}
	for _, p := range [][2]uint32{m.PacketInMask, m.PortStatusMask, m.FlowRemovedMask} {
		b = put32(put32(b, p[0]), p[1])
	}
	return b, nil
}

func decodeAsync(v, typ uint8, body []byte) (*AsyncConfig, error) {
	m := &AsyncConfig{Reply: typ == OFPT_GET_ASYNC_REPLY}
	if v >= OFP14 {
		props, err := decodeProps(v, body)
		m.Props = props
		return m, err
	}
	return m, decodeAsyncMasks(v, m, body)
}

// decodeAsyncMasks reads the 1.3 layout (struct nx_async_config).
func decodeAsyncMasks(v uint8, m *AsyncConfig, body []byte) error {
	if len(body) != 24 {
		return errf(v, OFPBRC_BAD_LEN, "async config %d bytes, want 24", len(body))
	}
	for i, p := range []*[2]uint32{&m.PacketInMask, &m.PortStatusMask, &m.FlowRemovedMask} {
		p[0], p[1] = be32(body[8*i:]), be32(body[8*i+4:])
	}
	return nil
}

// Property is a TLV property (ofp_prop_header: type, length, payload padded
// to 8 bytes), as used by 1.4+ messages, NX actions and NX messages.
// Data excludes the 4-byte header and the padding.
type Property struct {
	Type uint16
	Data []byte
}

func appendProps(b []byte, props []Property) ([]byte, error) {
	for _, p := range props {
		start := len(b)
		if 4+len(p.Data) > 0xffff {
			return b, errTooLong
		}
		b = put16(b, p.Type)
		b = put16(b, uint16(4+len(p.Data)))
		b = append(b, p.Data...)
		b = pad8(b, start)
	}
	return b, nil
}

// decodeProps decodes a property list following ofpprop_pull(): each
// property's length must be at least 4 and, rounded up to 8, fit.
func decodeProps(v uint8, b []byte) ([]Property, error) {
	var out []Property
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, errf(v, OFPBPC_BAD_LEN, "property header truncated")
		}
		n := int(be16(b[2:]))
		padded := (n + 7) &^ 7
		if n < 4 || padded > len(b) {
			return nil, errf(v, OFPBPC_BAD_LEN, "property type %d length %d does not fit in %d bytes", be16(b), n, len(b))
		}
		out = append(out, Property{Type: be16(b), Data: b[4:n]})
		b = b[padded:]
	}
	return out, nil
}

// ExperimenterMsg is an OFPT_EXPERIMENTER (OF1.0 OFPT_VENDOR) message this
// package does not decode further: experimenter id, subtype (exp_type) and
// the rest of the body.
type ExperimenterMsg struct {
	Experimenter uint32
	ExpType      uint32
	Data         []byte
}

func (m *ExperimenterMsg) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *ExperimenterMsg) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	b = put32(b, m.Experimenter)
	b = put32(b, m.ExpType)
	return append(b, m.Data...), nil
}
