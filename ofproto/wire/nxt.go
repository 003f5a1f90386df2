package wire

import (
	"fmt"
)

// Nicira message subtypes (NXT_*), carried in OFPT_VENDOR/OFPT_EXPERIMENTER
// with vendor NX_VENDOR_ID.
const (
	NXT_ROLE_REQUEST         uint32 = 10
	NXT_ROLE_REPLY           uint32 = 11
	NXT_SET_FLOW_FORMAT      uint32 = 12
	NXT_FLOW_MOD             uint32 = 13
	NXT_FLOW_REMOVED         uint32 = 14
	NXT_FLOW_MOD_TABLE_ID    uint32 = 15
	NXT_SET_PACKET_IN_FORMAT uint32 = 16
	NXT_PACKET_IN            uint32 = 17
	NXT_FLOW_AGE             uint32 = 18
	NXT_SET_ASYNC_CONFIG     uint32 = 19
	NXT_SET_CONTROLLER_ID    uint32 = 20
	NXT_TLV_TABLE_MOD        uint32 = 24
	NXT_TLV_TABLE_REQUEST    uint32 = 25
	NXT_TLV_TABLE_REPLY      uint32 = 26
	NXT_RESUME               uint32 = 28
	NXT_CT_FLUSH_ZONE        uint32 = 29
	NXT_PACKET_IN2           uint32 = 30
	NXT_GROUP_MOD            uint32 = 31 // OF1.0 only; OF1.5 group_mod layout
)

// ONF experimenter message types (ONFT_*), OpenFlow 1.3.
const (
	ONFT_BUNDLE_CONTROL     uint32 = 2300
	ONFT_BUNDLE_ADD_MESSAGE uint32 = 2301
)

// NXFF_* flow formats for NXT_SET_FLOW_FORMAT.
const (
	NXFF_OPENFLOW10 uint32 = 0
	NXFF_NXM        uint32 = 2
)

// NXPIF_* packet-in formats for NXT_SET_PACKET_IN_FORMAT.
const (
	NXPIF_STANDARD       uint32 = 0 // OFPT_PACKET_IN
	NXPIF_NXT_PACKET_IN  uint32 = 1
	NXPIF_NXT_PACKET_IN2 uint32 = 2
)

// NXSetFlowFormat is NXT_SET_FLOW_FORMAT.
type NXSetFlowFormat struct{ Format uint32 }

// NXFlowModTableID is NXT_FLOW_MOD_TABLE_ID (Set != 0 enables the table id
// in the high byte of the NX/1.0 flow-mod command).
type NXFlowModTableID struct{ Set uint8 }

// NXSetPacketInFormat is NXT_SET_PACKET_IN_FORMAT.
type NXSetPacketInFormat struct{ Format uint32 }

// NXSetControllerID is NXT_SET_CONTROLLER_ID.
type NXSetControllerID struct{ ControllerID uint16 }

// NXCTFlushZone is NXT_CT_FLUSH_ZONE (struct nx_zone_id: 6 zero bytes,
// then the zone): flush the connection tracker's zone.
type NXCTFlushZone struct{ Zone uint16 }

// NXTLVMap is one nx_tlv_map entry: Geneve option class/type/length mapped
// to tun_metadata<Index>.
type NXTLVMap struct {
	OptClass uint16
	OptType  uint8
	OptLen   uint8
	Index    uint16
}

// NXTLVTableMod is NXT_TLV_TABLE_MOD (Command NXTTMC_ADD=0, DELETE=1, CLEAR=2).
type NXTLVTableMod struct {
	Command uint16
	Maps    []NXTLVMap
}

// NXTLVTableRequest is NXT_TLV_TABLE_REQUEST.
type NXTLVTableRequest struct{}

// NXTLVTableReply is NXT_TLV_TABLE_REPLY.
type NXTLVTableReply struct {
	MaxOptionSpace uint32
	MaxFields      uint16
	Maps           []NXTLVMap
}

// NXResume is NXT_RESUME: the NXT_PACKET_IN2 properties echoed back.
type NXResume struct{ Props []Property }

func nxHeader(b []byte, subtype uint32) []byte { return put32(put32(b, NX_VENDOR_ID), subtype) }

func (m *NXSetFlowFormat) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *NXSetFlowFormat) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	return put32(nxHeader(b, NXT_SET_FLOW_FORMAT), m.Format), nil
}
func (m *NXFlowModTableID) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *NXFlowModTableID) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	return zeros(append(nxHeader(b, NXT_FLOW_MOD_TABLE_ID), m.Set), 7), nil
}
func (m *NXSetPacketInFormat) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *NXSetPacketInFormat) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	return put32(nxHeader(b, NXT_SET_PACKET_IN_FORMAT), m.Format), nil
}
func (m *NXCTFlushZone) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *NXCTFlushZone) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	b = zeros(nxHeader(b, NXT_CT_FLUSH_ZONE), 6)
	return put16(b, m.Zone), nil
}
func (m *NXSetControllerID) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *NXSetControllerID) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	b = zeros(nxHeader(b, NXT_SET_CONTROLLER_ID), 6)
	return put16(b, m.ControllerID), nil
}
func appendTLVMaps(b []byte, maps []NXTLVMap) []byte {
	for _, mp := range maps {
		b = put16(b, mp.OptClass)
		b = append(b, mp.OptType, mp.OptLen)
		b = zeros(put16(b, mp.Index), 2)
	}
	return b
}
func (m *NXTLVTableMod) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *NXTLVTableMod) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	b = zeros(put16(nxHeader(b, NXT_TLV_TABLE_MOD), m.Command), 6)
	return appendTLVMaps(b, m.Maps), nil
}
func (m *NXTLVTableRequest) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *NXTLVTableRequest) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	return nxHeader(b, NXT_TLV_TABLE_REQUEST), nil
}
func (m *NXTLVTableReply) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *NXTLVTableReply) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	b = put32(nxHeader(b, NXT_TLV_TABLE_REPLY), m.MaxOptionSpace)
	b = zeros(put16(b, m.MaxFields), 10)
	return appendTLVMaps(b, m.Maps), nil
}
func (m *NXResume) MessageType(uint8) uint8 { return OFPT_EXPERIMENTER }
func (m *NXResume) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	return appendProps(nxHeader(b, NXT_RESUME), m.Props)
}

func decodeTLVMaps(v uint8, p []byte) ([]NXTLVMap, error) {
	if len(p)%8 != 0 {
		return nil, errf(v, OFPBRC_BAD_LEN, "nx_tlv_map list %d bytes is not a multiple of 8", len(p))
	}
	out := make([]NXTLVMap, 0, len(p)/8)
	for ; len(p) > 0; p = p[8:] {
		out = append(out, NXTLVMap{OptClass: be16(p), OptType: p[2], OptLen: p[3], Index: be16(p[4:])})
	}
	return out, nil
}

// decodeExperimenterMsg dispatches OFPT_EXPERIMENTER / OFPT_VENDOR bodies.
func (d *Decoder) decodeExperimenterMsg(body []byte) (Message, error) {
	v := d.version
	if len(body) < 8 {
		return nil, errf(v, OFPBRC_BAD_LEN, "experimenter header truncated (%d bytes)", len(body))
	}
	vendor, sub := be32(body), be32(body[4:])
	p := body[8:]
	fixed := func(n int) error {
		if len(p) != n {
			return errf(v, OFPBRC_BAD_LEN, "NX message subtype %d: %d bytes, want %d", sub, len(p), n)
		}
		return nil
	}
	switch vendor {
	case NX_VENDOR_ID:
		switch sub {
		case NXT_FLOW_MOD:
			return d.decodeNXFlowMod(p)
		case NXT_SET_FLOW_FORMAT:
			if v != OFP10 {
				break
			}
			if err := fixed(4); err != nil {
				return nil, err
			}
			return &NXSetFlowFormat{Format: be32(p)}, nil
		case NXT_FLOW_MOD_TABLE_ID:
			if err := fixed(8); err != nil {
				return nil, err
			}
			return &NXFlowModTableID{Set: p[0]}, nil
		case NXT_SET_PACKET_IN_FORMAT:
			if err := fixed(4); err != nil {
				return nil, err
			}
			return &NXSetPacketInFormat{Format: be32(p)}, nil
		case NXT_FLOW_REMOVED:
			if v != OFP10 {
				break
			}
			return d.decodeNXFlowRemoved(p)
		case NXT_SET_ASYNC_CONFIG:
			m := &AsyncConfig{NX: true}
			return m, decodeAsyncMasks(v, m, p)
		case NXT_SET_CONTROLLER_ID:
			if err := fixed(8); err != nil {
				return nil, err
			}
			return &NXSetControllerID{ControllerID: be16(p[6:])}, nil
		case NXT_TLV_TABLE_MOD:
			if len(p) < 8 {
				return nil, errf(v, OFPBRC_BAD_LEN, "nx_tlv_table_mod truncated")
			}
			maps, err := decodeTLVMaps(v, p[8:])
			return &NXTLVTableMod{Command: be16(p), Maps: maps}, err
		case NXT_TLV_TABLE_REQUEST:
			return &NXTLVTableRequest{}, fixed(0)
		case NXT_CT_FLUSH_ZONE:
			if err := fixed(8); err != nil {
				return nil, err
			}
			return &NXCTFlushZone{Zone: be16(p[6:])}, nil
		case NXT_TLV_TABLE_REPLY:
			if len(p) < 16 {
				return nil, errf(v, OFPBRC_BAD_LEN, "nx_tlv_table_reply truncated")
			}
			maps, err := decodeTLVMaps(v, p[16:])
			return &NXTLVTableReply{MaxOptionSpace: be32(p), MaxFields: be16(p[4:]), Maps: maps}, err
		case NXT_RESUME:
			// The switch checks the properties in order, as OVS does
			// (ofproto.Bridge), so a bad one is reported there.
			props, _ := decodeProps(v, p)
			return &NXResume{Props: props}, nil
		case NXT_PACKET_IN2:
			props, err := decodeProps(v, p)
			return &NXPacketIn2{Props: props}, err
		case NXT_GROUP_MOD:
			if v != OFP10 {
				break
			}
			return d.decodeGroupMod(p, true)
		}
		return &ExperimenterMsg{Experimenter: vendor, ExpType: sub, Data: p}, nil
	case ONF_VENDOR_ID:
		if v == OFP13 {
			switch sub {
			case ONFT_BUNDLE_CONTROL:
				return decodeBundleControl(v, p, true)
			case ONFT_BUNDLE_ADD_MESSAGE:
				return d.decodeBundleAdd(p, true)
			}
		}
		return &ExperimenterMsg{Experimenter: vendor, ExpType: sub, Data: p}, nil
	}
	return nil, fmt.Errorf("experimenter %#x: %w", vendor, errf(v, OFPBRC_BAD_VENDOR, "unknown experimenter %#x", vendor))
}
