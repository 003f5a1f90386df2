package ofproto

import (
	"encoding/binary"

	"go.uber.org/zap"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// packetInFields are the metadata fields a packet-in carries when set
// (OVS puts in_port, the tunnel fields, metadata, registers, pkt_mark and
// the ct fields in the packet-in match).
var packetInFields = func() []*flowtable.Field {
	fs := []*flowtable.Field{flowtable.FieldTunID, flowtable.FieldTunSrc, flowtable.FieldTunDst,
		flowtable.FieldMetadata, flowtable.FieldPktMark, flowtable.FieldCtState, flowtable.FieldCtZone,
		flowtable.FieldCtMark}
	return append(fs, flowtable.FieldReg[:]...)
}()

// packetInMatch builds the match of a packet-in from the packet's key.
func packetInMatch(k *flowtable.Key, inPort uint32) flowtable.Match {
	var m flowtable.Match
	m.SetUint64(flowtable.FieldInPort, uint64(inPort))
	for _, f := range packetInFields {
		if v := f.Uint64(k); v != 0 {
			m.SetUint64(f, v)
		}
	}
	return m
}

// PacketIn sends a packet to the controllers: every connection whose async
// configuration asks for packet-ins of this reason (by default masters and
// equals, not slaves), in the format it asked for (OFPT_PACKET_IN, or
// NXT_PACKET_IN2 after NXT_SET_PACKET_IN_FORMAT). Only controllers with
// the given controller id get a packet-in that names one.
func (b *Bridge) PacketIn(frame []byte, inPort uint32, pi *flowtable.PacketIn, key *flowtable.Key) {
	for _, c := range b.connections() {
		if c.State.ControllerID != pi.ControllerID || !c.receivesAsync(AsyncPacketIn, pi.Reason) {
			continue
		}
		if err := b.sendPacketIn(c, frame, inPort, pi, key); err != nil {
			b.log.Debug("packet-in not sent", zap.Error(err))
		}
	}
}

func (b *Bridge) sendPacketIn(c *Conn, frame []byte, inPort uint32, pi *flowtable.PacketIn, key *flowtable.Key) error {
	data := frame
	maxLen := int(pi.MaxLen)
	if pi.Reason != flowtable.ReasonAction {
		maxLen = int(c.State.MissSendLen.Load())
	}
	if maxLen != 0xffff && len(data) > maxLen {
		data = data[:maxLen]
	}
	m := packetInMatch(key, inPort)
	fields, err := translate.MatchToWire(&m, c.Version(), b.p.TLV)
	if err != nil {
		return err
	}
	if c.State.PacketInFormat == 2 {
		var props []wire.Property
		props = append(props, wire.Property{Type: wire.NXPINT_PACKET, Data: data})
		if len(data) < len(frame) {
			props = append(props, wire.Property{Type: wire.NXPINT_FULL_LEN, Data: binary.BigEndian.AppendUint32(nil, uint32(len(frame)))})
		}
		props = append(props, wire.Property{Type: wire.NXPINT_TABLE_ID, Data: []byte{pi.Table}})
		if pi.Cookie != ^uint64(0) {
			// A 64-bit property value is 8-aligned: 4 bytes of padding
			// after the header (ofpprop_put_be64); OVS's decoder rejects
			// the packet-in without them (OFPBPC_BAD_LEN).
			props = append(props, wire.Property{Type: wire.NXPINT_COOKIE, Data: binary.BigEndian.AppendUint64(make([]byte, 4, 12), pi.Cookie)})
		}
		props = append(props, wire.Property{Type: wire.NXPINT_REASON, Data: []byte{pi.Reason}})
		md, err := wire.AppendMatchTLVs(nil, c.Version(), fields)
		if err != nil {
			return err
		}
		props = append(props, wire.Property{Type: wire.NXPINT_METADATA, Data: md})
		if len(pi.UserData) > 0 {
			props = append(props, wire.Property{Type: wire.NXPINT_USERDATA, Data: pi.UserData})
		}
		return c.sendPacketIn(&wire.NXPacketIn2{Props: props})
	}
	msg := &wire.PacketIn{BufferID: wire.OFP_NO_BUFFER, TotalLen: uint16(len(frame)), Reason: pi.Reason,
		TableID: pi.Table, Cookie: pi.Cookie, Data: data}
	if c.Version() == wire.OFP10 {
		msg.InPort = uint16(inPort)
	} else {
		msg.Match = fields
	}
	return c.sendPacketIn(msg)
}
