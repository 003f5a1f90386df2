package wire

import (
	"fmt"
)

// Message is any decoded OpenFlow message body. EncodeBody appends the
// body (everything after ofp_header) for version; MessageType gives the
// ofp_header.type for version.
type Message interface {
	MessageType(version uint8) uint8
	EncodeBody(version uint8, b []byte) ([]byte, error)
}

// EncodeMessage appends a complete message (header + body) to b.
func EncodeMessage(b []byte, version uint8, xid uint32, m Message) ([]byte, error) {
	start := len(b)
	b = Header{Version: version, Type: m.MessageType(version), Xid: xid}.Append(b)
	b, err := m.EncodeBody(version, b)
	if err != nil {
		return b[:start], fmt.Errorf("encoding %T: %w", m, err)
	}
	if err := setLen16(b, start+2, start); err != nil {
		return b[:start], fmt.Errorf("encoding %T: %w", m, err)
	}
	return b, nil
}

// Decoder decodes messages reusing its memory: everything a decode returns
// (messages, match field and action slices, action structs) stays valid only
// until the next Reset. The zero Decoder is ready to use. A Decoder is not
// safe for concurrent use.
type Decoder struct {
	version uint8
	pooled  bool // arenas in use (set by Reset)

	fields       arena[MatchField]
	actions      arena[Action]
	instructions arena[Instruction]
	flowMods     arena[FlowMod]
	bundleAdds   arena[BundleAdd]
	acts         actionArenas
}

// Reset releases everything decoded so far for reuse and enables pooling.
func (d *Decoder) Reset() {
	d.pooled = true
	d.fields.reset()
	d.actions.reset()
	d.instructions.reset()
	d.flowMods.reset()
	d.bundleAdds.reset()
	d.acts.reset()
}

func (d *Decoder) fieldArena() *arena[MatchField] {
	if d.pooled {
		return &d.fields
	}
	return nil
}

func (d *Decoder) actionArena() *arena[Action] {
	if d.pooled {
		return &d.actions
	}
	return nil
}

func (d *Decoder) instructionArena() *arena[Instruction] {
	if d.pooled {
		return &d.instructions
	}
	return nil
}

func supportedVersion(v uint8) bool { return v == OFP10 || v == OFP13 || v == OFP15 }

// DecodeMessage decodes one message (without pooling; see Decoder).
func DecodeMessage(h Header, body []byte) (Message, error) {
	var d Decoder
	return d.DecodeMessage(h, body)
}

// DecodeMessage decodes the body of a message whose header is h. body must
// be exactly h.Length-8 bytes (as ReadMessage/SplitMessage return).
func (d *Decoder) DecodeMessage(h Header, body []byte) (Message, error) {
	if int(h.Length) != len(body)+HeaderLen {
		return nil, errf(h.Version, OFPBRC_BAD_LEN, "header length %d but %d bytes of message", h.Length, len(body)+HeaderLen)
	}
	if h.Type == OFPT_HELLO {
		// Hello is decodable in every version: that is how negotiation works.
		return decodeHello(body), nil
	}
	if !supportedVersion(h.Version) {
		return nil, errf(h.Version, OFPBRC_BAD_VERSION, "OpenFlow version %#x not supported", h.Version)
	}
	d.version = h.Version
	m, err := d.decodeBody(h, body)
	if err != nil {
		return nil, fmt.Errorf("decoding message type %d (version %#x, xid %#x): %w", h.Type, h.Version, h.Xid, err)
	}
	return m, nil
}

func (d *Decoder) decodeBody(h Header, body []byte) (Message, error) {
	v := h.Version
	switch h.Type {
	case OFPT_ERROR:
		return decodeErrorMsg(v, body)
	case OFPT_ECHO_REQUEST:
		return &EchoRequest{Data: body}, nil
	case OFPT_ECHO_REPLY:
		return &EchoReply{Data: body}, nil
	case OFPT_EXPERIMENTER:
		return d.decodeExperimenterMsg(body)
	case OFPT_FEATURES_REQUEST:
		return &FeaturesRequest{}, emptyBody(v, body)
	case OFPT_FEATURES_REPLY:
		return d.decodeFeaturesReply(body)
	case OFPT_GET_CONFIG_REQUEST:
		return &GetConfigRequest{}, emptyBody(v, body)
	case OFPT_GET_CONFIG_REPLY, OFPT_SET_CONFIG:
		return decodeSwitchConfig(v, h.Type, body)
	case OFPT_PACKET_IN:
		return d.decodePacketIn(body)
	case OFPT_FLOW_REMOVED:
		return d.decodeFlowRemoved(body)
	case OFPT_PORT_STATUS:
		return d.decodePortStatus(body)
	case OFPT_PACKET_OUT:
		return d.decodePacketOut(body)
	case OFPT_FLOW_MOD:
		return d.decodeFlowMod(body)
	}
	if v == OFP10 {
		switch h.Type {
		case OFPT10_PORT_MOD:
			return d.decodePortMod(body)
		case OFPT10_STATS_REQUEST:
			return d.decodeMultipartRequest(body)
		case OFPT10_STATS_REPLY:
			return d.decodeMultipartReply(body)
		case OFPT10_BARRIER_REQUEST:
			return &BarrierRequest{}, emptyBody(v, body)
		case OFPT10_BARRIER_REPLY:
			return &BarrierReply{}, emptyBody(v, body)
		}
		return nil, errf(v, OFPBRC_BAD_TYPE, "unknown OpenFlow 1.0 message type %d", h.Type)
	}
	switch h.Type {
	case OFPT_GROUP_MOD:
		return d.decodeGroupMod(body, false)
	case OFPT_PORT_MOD:
		return d.decodePortMod(body)
	case OFPT_TABLE_MOD:
		return d.decodeTableMod(body)
	case OFPT_MULTIPART_REQUEST:
		return d.decodeMultipartRequest(body)
	case OFPT_MULTIPART_REPLY:
		return d.decodeMultipartReply(body)
	case OFPT_BARRIER_REQUEST:
		return &BarrierRequest{}, emptyBody(v, body)
	case OFPT_BARRIER_REPLY:
		return &BarrierReply{}, emptyBody(v, body)
	case OFPT_ROLE_REQUEST, OFPT_ROLE_REPLY:
		return decodeRole(v, h.Type, body)
	case OFPT_GET_ASYNC_REQUEST:
		return &GetAsyncRequest{}, emptyBody(v, body)
	case OFPT_GET_ASYNC_REPLY, OFPT_SET_ASYNC:
		return decodeAsync(v, h.Type, body)
	case OFPT_METER_MOD:
		return d.decodeMeterMod(body)
	}
	if v == OFP15 {
		switch h.Type {
		case OFPT_BUNDLE_CONTROL:
			return decodeBundleControl(v, body, false)
		case OFPT_BUNDLE_ADD_MESSAGE:
			return d.decodeBundleAdd(body, false)
		}
	}
	return nil, errf(v, OFPBRC_BAD_TYPE, "unknown message type %d", h.Type)
}

func emptyBody(v uint8, body []byte) error {
	if len(body) != 0 {
		return errf(v, OFPBRC_BAD_LEN, "message must have no body, has %d bytes", len(body))
	}
	return nil
}
