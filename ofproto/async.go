package ofproto

import (
	"encoding/binary"

	"github.com/govs-project/govs/ofproto/wire"
)

// Asynchronous message types (OVS enum ofputil_async_msg_type, OAM_*): the
// index of each kind's mask in an AsyncConfig. Bit n of a mask enables
// reason n of that kind.
const (
	AsyncPacketIn       = iota // OFPR_* reasons
	AsyncPortStatus            // OFPPR_*
	AsyncFlowRemoved           // OFPRR_*
	AsyncRoleStatus            // OFPCRR_* (govs sends no role status)
	AsyncTableStatus           // OFPTR_* (govs sends no table status)
	AsyncRequestForward        // OFPRFR_* (govs forwards no requests)
	NumAsyncTypes
)

// AsyncConfig says which asynchronous messages a connection receives (OVS
// struct ofputil_async_cfg): Primary while it is master or equal,
// Secondary while it is slave.
type AsyncConfig struct {
	Primary, Secondary [NumAsyncTypes]uint32
}

// Packet-in reasons as mask bits. OpenFlow 1.4 splits OFPR_ACTION (now
// "apply_action") into it and OFPR_ACTION_SET, OFPR_GROUP, OFPR_PACKET_OUT.
const (
	pinNoMatch    = 1 << 0
	pinAction     = 1 << 1
	pinInvalidTTL = 1 << 2
	pinAction14   = 1<<3 | 1<<4 | 1<<5

	portStatusAll = 1<<0 | 1<<1 | 1<<2 // OFPPR_ADD, OFPPR_DELETE, OFPPR_MODIFY

	// Flow-removed reasons each version knows: idle and hard timeout and
	// delete; 1.3 adds group delete; 1.4 meter delete and eviction.
	flowRemoved10 = 1<<0 | 1<<1 | 1<<2
	flowRemoved13 = flowRemoved10 | 1<<3
	flowRemoved14 = flowRemoved13 | 1<<4 | 1<<5
)

// asyncAllowed is the reasons each mask may hold in version (OVS
// async_props: allowed10, or allowed14 from OpenFlow 1.4 on).
func asyncAllowed(version uint8) [NumAsyncTypes]uint32 {
	a := [NumAsyncTypes]uint32{
		AsyncPacketIn:       pinNoMatch | pinAction | pinInvalidTTL,
		AsyncPortStatus:     portStatusAll,
		AsyncFlowRemoved:    flowRemoved14,
		AsyncRoleStatus:     1<<0 | 1<<1 | 1<<2, // OFPCRR_MASTER_REQUEST, CONFIG, EXPERIMENTER
		AsyncTableStatus:    1<<3 | 1<<4,        // OFPTR_VACANCY_DOWN, VACANCY_UP
		AsyncRequestForward: 1<<0 | 1<<1,        // OFPRFR_GROUP_MOD, METER_MOD
	}
	if version >= wire.OFP14 {
		a[AsyncPacketIn] |= pinAction14
	}
	return a
}

// DefaultAsyncConfig is what a connection of version receives until it
// sets its own configuration (OVS ofputil_async_cfg_default): a master or
// equal gets every packet-in but invalid_ttl, every port status and the
// flow-removed reasons of its version; a slave gets port status only.
func DefaultAsyncConfig(version uint8) AsyncConfig {
	var ac AsyncConfig
	ac.Primary[AsyncPacketIn] = pinNoMatch | pinAction | pinAction14
	ac.Primary[AsyncPortStatus] = portStatusAll
	ac.Secondary[AsyncPortStatus] = portStatusAll
	switch {
	case version >= wire.OFP14:
		ac.Primary[AsyncFlowRemoved] = flowRemoved14
	case version == wire.OFP13:
		ac.Primary[AsyncFlowRemoved] = flowRemoved13
	default:
		ac.Primary[AsyncFlowRemoved] = flowRemoved10
	}
	return ac
}

// AsyncConfig returns the connection's asynchronous message configuration
// for its version: the one it set, or the default.
func (s *ConnState) AsyncConfig(version uint8) AsyncConfig {
	if ac := s.async.Load(); ac != nil {
		return *ac
	}
	return DefaultAsyncConfig(version)
}

// receivesAsync reports whether c gets an asynchronous message of kind typ
// (Async*) for reason (OVS ofconn_receives_async_msg).
func (c *Conn) receivesAsync(typ int, reason uint8) bool {
	if reason >= 32 {
		return false
	}
	if c.opts.Service && c.State.MissSendLen.Load() == 0 {
		return false // a service connection that did not ask (OVS ofconn_receives_async_msg)
	}
	ac := c.State.AsyncConfig(c.Version())
	masks := &ac.Primary
	if c.State.Role.Load() == roleSlave {
		masks = &ac.Secondary
	}
	return masks[typ]&(1<<reason) != 0
}

// setAsync applies OFPT_SET_ASYNC or NXT_SET_ASYNC_CONFIG (OVS
// ofputil_decode_set_async_config and ofconn_set_async_config).
func (b *Bridge) setAsync(c *Conn, m *wire.AsyncConfig) error {
	v := c.Version()
	allowed := asyncAllowed(v)
	var ac AsyncConfig
	if v >= wire.OFP14 && !m.NX {
		// Properties change only the masks they name.
		ac = c.State.AsyncConfig(v)
		if err := ac.setProps(c, allowed, m.Props); err != nil {
			return err
		}
	} else {
		// The 1.3 layout replaces the whole configuration (role status,
		// table status and request forwarding turn off); reasons the
		// version does not know are ignored, not refused.
		for typ, masks := range [...][2]uint32{AsyncPacketIn: m.PacketInMask, AsyncPortStatus: m.PortStatusMask, AsyncFlowRemoved: m.FlowRemovedMask} {
			ac.Primary[typ] = masks[0] & allowed[typ]
			ac.Secondary[typ] = masks[1] & allowed[typ]
		}
	}
	if v < wire.OFP14 {
		// Before 1.4 OFPR_ACTION also stands for what 1.4 splits off it.
		for _, pin := range []*uint32{&ac.Primary[AsyncPacketIn], &ac.Secondary[AsyncPacketIn]} {
			if *pin&pinAction != 0 {
				*pin |= pinAction14
			}
		}
	}
	c.State.async.Store(&ac)
	// A service connection that sets its async config asks for async
	// messages: OVS gives it the default miss_send_len (128) if it had none.
	if c.opts.Service {
		c.State.MissSendLen.CompareAndSwap(0, 128)
	}
	return nil
}

// Property types of an OpenFlow 1.4+ async config: 2n is the slave mask
// of kind n and 2n+1 its master mask (OFPACPT_PACKET_IN_SLAVE = 0, ...);
// 0xfffe and 0xffff are experimenter properties.
const asyncPropExperimenter = 0xfffe

// setProps applies ofp_async_config_prop_reasons properties. A controller's
// request is decoded strictly, as OVS does: a reason the version does not
// know is OFPACFC_INVALID, a property type it does not know
// OFPACFC_UNSUPPORTED.
func (ac *AsyncConfig) setProps(c *Conn, allowed [NumAsyncTypes]uint32, props []wire.Property) error {
	for _, p := range props {
		if p.Type >= asyncPropExperimenter {
			// ofp_prop_experimenter: experimenter id and type after the header.
			switch {
			case len(p.Data) < 8:
				return ofpErr(c, wire.OFPBPC_BAD_LEN, "experimenter async property of %d bytes", 4+len(p.Data))
			case binary.BigEndian.Uint32(p.Data) == 0:
				return ofpErr(c, wire.OFPBPC_BAD_EXPERIMENTER, "experimenter 0 in an async property")
			}
			return ofpErr(c, wire.OFPBPC_BAD_EXP_TYPE, "experimenter %#x async property type %d",
				binary.BigEndian.Uint32(p.Data), binary.BigEndian.Uint32(p.Data[4:]))
		}
		typ := int(p.Type / 2)
		if typ >= NumAsyncTypes {
			return ofpErr(c, wire.OFPACFC_UNSUPPORTED, "async property type %d", p.Type)
		}
		if len(p.Data) != 4 {
			return ofpErr(c, wire.OFPBPC_BAD_LEN, "async property type %d with %d bytes of value, want 4", p.Type, len(p.Data))
		}
		mask := binary.BigEndian.Uint32(p.Data)
		if mask&^allowed[typ] != 0 {
			return ofpErr(c, wire.OFPACFC_INVALID, "async property type %d: mask %#x outside %#x", p.Type, mask, allowed[typ])
		}
		if p.Type%2 == 1 {
			ac.Primary[typ] = mask
		} else {
			ac.Secondary[typ] = mask
		}
	}
	return nil
}

// asyncReply encodes the configuration as OFPT_GET_ASYNC_REPLY for
// version (OVS ofputil_encode_get_async_reply): each mask limited to the
// reasons the version knows; from 1.4 on, one property per mask, slave
// before master.
func (ac *AsyncConfig) asyncReply(version uint8) *wire.AsyncConfig {
	allowed := asyncAllowed(version)
	r := &wire.AsyncConfig{Reply: true}
	if version >= wire.OFP14 {
		for typ := 0; typ < NumAsyncTypes; typ++ {
			r.Props = append(r.Props,
				wire.Property{Type: uint16(2 * typ), Data: binary.BigEndian.AppendUint32(nil, ac.Secondary[typ]&allowed[typ])},
				wire.Property{Type: uint16(2*typ + 1), Data: binary.BigEndian.AppendUint32(nil, ac.Primary[typ]&allowed[typ])})
		}
		return r
	}
	for typ, masks := range [...]*[2]uint32{AsyncPacketIn: &r.PacketInMask, AsyncPortStatus: &r.PortStatusMask, AsyncFlowRemoved: &r.FlowRemovedMask} {
		masks[0] = ac.Primary[typ] & allowed[typ]
		masks[1] = ac.Secondary[typ] & allowed[typ]
	}
	return r
}
