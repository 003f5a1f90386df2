package ofproto

import (
	"encoding/binary"

	"go.uber.org/zap"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// packetInFields are the metadata fields a packet-in carries when set
// (OVS flow_get_metadata: the tunnel fields, metadata, registers,
// pkt_mark, ct_zone, ct_mark, ct_label; in_port always; ct_state with the
// ethertype and, for a valid connection, its original tuple).
var packetInFields = func() []*flowtable.Field {
	fs := []*flowtable.Field{flowtable.FieldTunID, flowtable.FieldTunSrc, flowtable.FieldTunDst,
		flowtable.FieldTunIPv6Src, flowtable.FieldTunIPv6Dst, flowtable.FieldMetadata}
	return append(append(fs, flowtable.FieldReg[:]...), flowtable.FieldPktMark, flowtable.FieldCtZone,
		flowtable.FieldCtMark, flowtable.FieldCtLabel)
}()

// packetInMatch builds the match of a packet-in from the packet's key.
func packetInMatch(k *flowtable.Key, inPort uint32) flowtable.Match {
	var m flowtable.Match
	m.SetUint64(flowtable.FieldInPort, uint64(inPort))
	for _, f := range packetInFields {
		setIfNonZero(&m, f, k)
	}
	if st := k.CtState(); st != 0 {
		m.SetUint64(flowtable.FieldCtState, uint64(st))
		m.SetUint64(flowtable.FieldEthType, uint64(k.EthType()))
		valid := st&flowtable.CtStateTrk != 0 && st&flowtable.CtStateInv == 0
		if valid && flowtable.FieldCtNwProto.Uint64(k) != 0 {
			var tuple []*flowtable.Field
			switch k.EthType() {
			case flowtable.EthTypeIPv4:
				tuple = []*flowtable.Field{flowtable.FieldCtNwSrc, flowtable.FieldCtNwDst}
			case flowtable.EthTypeIPv6:
				tuple = []*flowtable.Field{flowtable.FieldCtIPv6Src, flowtable.FieldCtIPv6Dst}
			}
			if tuple != nil {
				tuple = append(tuple, flowtable.FieldCtNwProto, flowtable.FieldCtTpSrc, flowtable.FieldCtTpDst)
			}
			for _, f := range tuple {
				setExact(&m, f, k)
			}
		}
	}
	return m
}

// setIfNonZero matches f exactly in m when the key has it set.
func setIfNonZero(m *flowtable.Match, f *flowtable.Field, k *flowtable.Key) {
	if !f.Wide() {
		if v := f.Uint64(k); v != 0 {
			m.SetUint64(f, v)
		}
		return
	}
	if v := f.Value(k); !allZero(v) {
		m.Set(f, v, ones(len(v)))
	}
}

// setExact matches f exactly in m with the key's value.
func setExact(m *flowtable.Match, f *flowtable.Field, k *flowtable.Key) {
	if !f.Wide() {
		m.SetUint64(f, f.Uint64(k))
		return
	}
	v := f.Value(k)
	m.Set(f, v, ones(len(v)))
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func ones(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xff
	}
	return b
}

// PacketIn sends a packet to the controllers: every connection whose async
// configuration asks for packet-ins of this reason (by default masters and
// equals, not slaves), in the format it asked for (OFPT_PACKET_IN, or
// NXT_PACKET_IN2 after NXT_SET_PACKET_IN_FORMAT). Only controllers with
// the given controller id get a packet-in that names one.
func (b *Bridge) PacketIn(frame []byte, inPort uint32, pi *flowtable.PacketIn, key *flowtable.Key) {
	for _, c := range b.connections() {
		// An explicit miss is asked for with the no_match bit (OVS
		// decode_async_mask).
		maskReason := pi.Reason
		if maskReason == flowtable.ReasonExplicitMiss {
			maskReason = flowtable.ReasonNoMatch
		}
		if c.State.ControllerID != pi.ControllerID || !c.receivesAsync(AsyncPacketIn, maskReason) {
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
	reason := pi.Reason
	switch reason {
	case flowtable.ReasonAction:
	case flowtable.ReasonExplicitMiss:
		// The flow's output action says how much to send.
		reason = flowtable.ReasonNoMatch
		if c.Version() < wire.OFP13 {
			reason = flowtable.ReasonAction
		}
	default:
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
		// ofputil_encode_nx_packet_in2: packet, full length when cut,
		// table, cookie unless the packet came from no flow, reason,
		// metadata, then a pause's continuation and the userdata.
		var props []wire.Property
		props = append(props, wire.Property{Type: wire.NXPINT_PACKET, Data: data})
		if len(data) < len(frame) {
			props = append(props, wire.Property{Type: wire.NXPINT_FULL_LEN, Data: binary.BigEndian.AppendUint32(nil, uint32(len(frame)))})
		}
		props = append(props, wire.Property{Type: wire.NXPINT_TABLE_ID, Data: []byte{pi.Table}})
		if pi.Cookie != flowtable.CookieNone {
			props = append(props, wire.Property{Type: wire.NXPINT_COOKIE, Data: be64Prop(pi.Cookie)})
		}
		props = append(props, wire.Property{Type: wire.NXPINT_REASON, Data: []byte{reason}})
		md, err := wire.AppendMatchTLVs(nil, c.Version(), fields)
		if err != nil {
			return err
		}
		props = append(props, wire.Property{Type: wire.NXPINT_METADATA, Data: md})
		if pi.Continuation != nil {
			cont, err := b.continuationProp(c, pi.Continuation, inPort)
			if err != nil {
				return err
			}
			props = append(props, wire.Property{Type: wire.NXPINT_CONTINUATION, Data: nestedProp(cont)})
		}
		if len(pi.UserData) > 0 {
			props = append(props, wire.Property{Type: wire.NXPINT_USERDATA, Data: pi.UserData})
		}
		return c.sendPacketIn(&wire.NXPacketIn2{Props: props})
	}
	msg := &wire.PacketIn{BufferID: wire.OFP_NO_BUFFER, TotalLen: uint16(len(frame)), Reason: reason,
		TableID: pi.Table, Cookie: pi.Cookie, Data: data}
	if c.Version() == wire.OFP10 {
		msg.InPort = uint16(inPort)
	} else {
		msg.Match = fields
	}
	return c.sendPacketIn(msg)
}
