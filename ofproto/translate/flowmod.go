package translate

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpact"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/wire"
)

// TableAll is OFPTT_ALL: a modify/delete (or a flow stats request) that
// covers every table, and an NX flow-mod without the table-id extension.
const TableAll = 0xff

// GroupAny is OFPG_ANY (no out_group filter, no watch group).
const GroupAny = 0xffffffff

// FlowMod is a decoded flow-mod: the flow plus what the command needs, as
// OVS's struct ofputil_flow_mod has it.
type FlowMod struct {
	// Flow is the flow to add, or the match (and new actions) for
	// modify/delete. Flow.Table is TableAll for "every table"; Flow.Cookie
	// is the new cookie (see ModifyCookie).
	Flow flowtable.Flow

	Command    uint8  // wire.OFPFC_*
	Cookie     uint64 // cookie to match (modify/delete), under CookieMask
	CookieMask uint64
	// ModifyCookie says a modify must also replace the cookie with
	// Flow.Cookie (OpenFlow 1.0 and NX flow-mods; never in 1.1+).
	ModifyCookie bool
	OutPort      uint32 // model numbering; flowtable.PortNone = any
	OutGroup     uint32 // GroupAny = any
	BufferID     uint32 // wire.OFP_NO_BUFFER when none
	// ResetCounts is OFPFF_RESET_COUNTS (implied for OpenFlow 1.0 adds);
	// it is an action of the command, not a property of the flow.
	ResetCounts bool

	// Inline backing for the action lists and set-field values of a
	// typical flow, so that translating one costs few allocations.
	pool ofpact.Pool
}

// FlowModFromWire translates a decoded flow-mod. For OpenFlow 1.0 and NX
// flow-mods the table id is taken from the high byte of the command, as OVS
// does once NXT_FLOW_MOD_TABLE_ID is enabled (ovs-ofctl always enables it
// before using a table other than 0); use FlowModFromWireTID otherwise.
func FlowModFromWire(fm *wire.FlowMod, version uint8, tlv *flowtable.TLVMap) (*FlowMod, error) {
	return FlowModFromWireTID(fm, version, tlv, true)
}

// FlowModFromWireTID is FlowModFromWire with the connection's
// NXT_FLOW_MOD_TABLE_ID state: without it an OpenFlow 1.0/NX flow-mod's
// table is TableAll and its command is the whole 16-bit field.
func FlowModFromWireTID(fm *wire.FlowMod, version uint8, tlv *flowtable.TLVMap, tableIDExt bool) (*FlowMod, error) {
	out := &FlowMod{}
	if err := out.fromWire(fm, version, tlv, tableIDExt); err != nil {
		return nil, err
	}
	return out, nil
}

// FlowModFromWireInto is FlowModFromWireTID into out, which is reset
// first: a connection translates flow-mod after flow-mod into one
// scratch FlowMod (over a kilobyte) instead of allocating one each. The
// action lists and set-field bytes of out live in out, so a caller that
// keeps anything of it past the next call must detach it first
// (flowtable.NewRule does).
func FlowModFromWireInto(out *FlowMod, fm *wire.FlowMod, version uint8, tlv *flowtable.TLVMap, tableIDExt bool) error {
	*out = FlowMod{}
	return out.fromWire(fm, version, tlv, tableIDExt)
}

func (out *FlowMod) fromWire(fm *wire.FlowMod, v uint8, tlv *flowtable.TLVMap, tid bool) error {
	t := ofpact.NewDecoder(v, tlv, &out.pool)
	f := &out.Flow
	f.Priority = fm.Priority
	f.IdleTimeout, f.HardTimeout = fm.IdleTimeout, fm.HardTimeout
	out.BufferID = fm.BufferID
	out.OutGroup = GroupAny
	var err error
	var command uint16
	switch fm.Format {
	case wire.FlowModOF11:
		if v == wire.OFP10 {
			return ofpfield.Err(v, wire.OFPBRC_BAD_VERSION, "OpenFlow 1.1+ flow_mod in OpenFlow 1.0")
		}
		command = fm.Command & 0xff
		if _, _, err = matchFromWire(&f.Match, v, fm.Match, tlv, false); err != nil {
			return err
		}
		if command == uint16(wire.OFPFC_ADD) {
			f.Cookie = fm.Cookie
		} else {
			out.Cookie, out.CookieMask = fm.Cookie&fm.CookieMask, fm.CookieMask
		}
		f.Table = fm.TableID
		if f.Table == TableAll && command != wire.OFPFC_DELETE && command != wire.OFPFC_DELETE_STRICT {
			return ofpfield.Err(v, wire.OFPFMFC_BAD_TABLE_ID, "table 255 (all) is only allowed for deletes")
		}
		if v >= wire.OFP14 && command == wire.OFPFC_ADD {
			f.Importance = fm.Importance
		}
		p, ok := ofpfield.PortFromOFP11(fm.OutPort)
		if !ok {
			return ofpfield.Err(v, wire.OFPBAC_BAD_OUT_PORT, "out_port %#x", fm.OutPort)
		}
		out.OutPort = p
		if command == wire.OFPFC_DELETE || command == wire.OFPFC_DELETE_STRICT {
			out.OutGroup = fm.OutGroup
		}
		if f.Actions, err = t.Instructions(fm.Instructions); err != nil {
			return err
		}
	case wire.FlowModOF10, wire.FlowModNX:
		if fm.Format == wire.FlowModOF10 {
			f.Match = MatchFromMatch10(&fm.Match10)
			if Match10Exact(&fm.Match10) {
				// OpenFlow 1.0: exact-match flows have the highest priority.
				f.Priority = 0xffff
			}
		} else {
			var ck, ckMask uint64
			if ck, ckMask, err = matchFromWire(&f.Match, v, fm.Match, tlv, true); err != nil {
				return err
			}
			if fm.Command&0xff == wire.OFPFC_ADD && ckMask != 0 {
				return ofpfield.Err(v, wire.NXBRC_NXM_INVALID, "an add may not match on the cookie")
			}
			out.Cookie, out.CookieMask = ck&ckMask, ckMask
		}
		f.Cookie = fm.Cookie
		out.ModifyCookie = fm.Cookie != ^uint64(0)
		out.OutPort = fm.OutPort & 0xffff
		command = fm.Command
		f.Table = TableAll
		if tid {
			command, f.Table = fm.Command&0xff, uint8(fm.Command>>8)
		}
		if f.Actions, err = t.Actions(fm.Actions); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown flow-mod format %d", fm.Format)
	}
	if command > uint16(wire.OFPFC_DELETE_STRICT) {
		return ofpfield.Err(v, wire.OFPFMFC_BAD_COMMAND, "flow_mod command %d", command)
	}
	out.Command = uint8(command)
	if out.Command == uint8(wire.OFPFC_ADD) && f.Table == TableAll {
		// An NX/1.0 add without a table (ovs-ofctl sends 0xff for "no
		// table=" once the table-id extension is on) goes to table 0, as in
		// OVS's add_flow_init.
		f.Table = 0
	}
	m := &f.Match
	dl, dlMask := m.Uint64(flowtable.FieldEthType)
	ip4 := dlMask == 0xffff && dl == flowtable.EthTypeIPv4
	ip6 := dlMask == 0xffff && dl == flowtable.EthTypeIPv6
	if ((slotSet(m, flowtable.FieldCtNwSrc) || slotSet(m, flowtable.FieldCtNwDst)) && !ip4) ||
		((slotSet(m, flowtable.FieldCtIPv6Src) || slotSet(m, flowtable.FieldCtIPv6Dst)) && !ip6) {
		return ofpfield.Err(v, wire.OFPBAC_MATCH_INCONSISTENT, "ct original-direction addresses do not match the IP version of the flow")
	}
	return out.flagsFromWire(fm.Flags, v, command)
}

// flagsFromWire is ofputil_decode_flow_mod_flags.
func (out *FlowMod) flagsFromWire(raw uint16, v uint8, command uint16) error {
	f := &out.Flow
	if raw&wire.OFPFF_SEND_FLOW_REM != 0 {
		f.Flags |= flowtable.FlagSendFlowRem
	}
	if raw&wire.OFPFF_CHECK_OVERLAP != 0 {
		f.Flags |= flowtable.FlagCheckOverlap
	}
	rest := raw &^ (wire.OFPFF_SEND_FLOW_REM | wire.OFPFF_CHECK_OVERLAP)
	if v == wire.OFP10 {
		const emerg = 1 << 2 // OFPFF10_EMERG
		if rest&emerg != 0 {
			// OVS does not support the emergency flow cache.
			if f.IdleTimeout != 0 || f.HardTimeout != 0 {
				return ofpfield.Err(v, wire.OFPFMFC_BAD_EMERG_TIMEOUT, "emergency flow with timeouts")
			}
			return ofpfield.Err(v, wire.OFPFMFC_TABLE_FULL, "emergency flows are not supported")
		}
		if command == uint16(wire.OFPFC_ADD) {
			out.ResetCounts = true
		}
	} else {
		if rest&wire.OFPFF_RESET_COUNTS != 0 {
			out.ResetCounts = true
		}
		if rest&wire.OFPFF_NO_PKT_COUNTS != 0 {
			f.Flags |= flowtable.FlagNoPktCounts
		}
		if rest&wire.OFPFF_NO_BYT_COUNTS != 0 {
			f.Flags |= flowtable.FlagNoBytCounts
		}
		rest &^= wire.OFPFF_RESET_COUNTS | wire.OFPFF_NO_PKT_COUNTS | wire.OFPFF_NO_BYT_COUNTS
	}
	if rest != 0 {
		return ofpfield.Err(v, wire.OFPFMFC_BAD_FLAGS, "unknown flow_mod flags %#x", raw)
	}
	return nil
}

func flagsToWire(fl flowtable.FlowFlags, v uint8) uint16 {
	var raw uint16
	if fl&flowtable.FlagSendFlowRem != 0 {
		raw |= wire.OFPFF_SEND_FLOW_REM
	}
	if fl&flowtable.FlagCheckOverlap != 0 {
		raw |= wire.OFPFF_CHECK_OVERLAP
	}
	if v != wire.OFP10 {
		if fl&flowtable.FlagNoPktCounts != 0 {
			raw |= wire.OFPFF_NO_PKT_COUNTS
		}
		if fl&flowtable.FlagNoBytCounts != 0 {
			raw |= wire.OFPFF_NO_BYT_COUNTS
		}
	}
	return raw
}

// FlowModToWire encodes a flow-mod the way ovs-ofctl sends it in version:
// NXT_FLOW_MOD (NXM match, table in the command's high byte) for OpenFlow
// 1.0, OFPT_FLOW_MOD with an OXM match and instructions for 1.3/1.5.
func FlowModToWire(fm *FlowMod, version uint8, tlv *flowtable.TLVMap) (*wire.FlowMod, error) {
	f := &fm.Flow
	match, err := MatchToWire(&f.Match, version, tlv)
	if err != nil {
		return nil, err
	}
	out := &wire.FlowMod{Priority: f.Priority, IdleTimeout: f.IdleTimeout, HardTimeout: f.HardTimeout,
		BufferID: fm.BufferID, Flags: flagsToWire(f.Flags, version)}
	if version == wire.OFP10 {
		out.Format = wire.FlowModNX
		out.Command = uint16(fm.Command) | uint16(f.Table)<<8
		out.Cookie = f.Cookie
		out.OutPort = fm.OutPort & 0xffff
		if fm.CookieMask != 0 {
			var ck, mk [8]byte
			binary.BigEndian.PutUint64(ck[:], fm.Cookie&fm.CookieMask)
			binary.BigEndian.PutUint64(mk[:], fm.CookieMask)
			cf := wire.MatchField{Field: cookieFieldInfo(), Value: ck[:]}
			if fm.CookieMask != ^uint64(0) {
				cf.Mask = mk[:]
			}
			if cf.Field == nil {
				return nil, fmt.Errorf("the wire codec does not expose the NXM_NX_COOKIE pseudo-field")
			}
			match = append(match, cf)
		}
		out.Match = match
		if out.Actions, err = ActionsToWire(version, f.Actions, tlv); err != nil {
			return nil, err
		}
		return out, nil
	}
	out.Format = wire.FlowModOF11
	out.Command = uint16(fm.Command)
	out.TableID = f.Table
	if uint16(fm.Command) == wire.OFPFC_ADD {
		out.Cookie = f.Cookie
	} else {
		out.Cookie, out.CookieMask = fm.Cookie, fm.CookieMask
	}
	out.OutPort = ofpfield.PortToOFP11(fm.OutPort)
	out.OutGroup = fm.OutGroup
	out.Importance = f.Importance
	out.Match = match
	if out.Instructions, err = InstructionsToWire(version, f.Actions, tlv); err != nil {
		return nil, err
	}
	return out, nil
}

var (
	cookieOnce  sync.Once
	cookieField *wire.FieldInfo
)

// cookieFieldInfo finds wire's NXM_NX_COOKIE pseudo-field by decoding a
// one-entry nx_match (the wire package does not export it directly).
func cookieFieldInfo() *wire.FieldInfo {
	cookieOnce.Do(func() {
		var d wire.Decoder
		b := []byte{0x00, 0x01, 30 << 1, 8, 0, 0, 0, 0, 0, 0, 0, 0}
		fs, _, err := d.DecodeNXMatch(append(b, 0, 0, 0, 0), len(b), true)
		if err == nil && len(fs) == 1 {
			cookieField = fs[0].Field
		}
	})
	return cookieField
}

// FlowStats is one flow of a flow stats (dump-flows) reply.
type FlowStats struct {
	Flow         *flowtable.Flow
	DurationSec  uint32
	DurationNsec uint32
	IdleAge      int // seconds since last hit (NX and 1.5 replies)
	HardAge      int // seconds since last modification (NX replies)
	PacketCount  uint64
	ByteCount    uint64
}

// FlowStatsToWire encodes one flow stats entry for version: nx_flow_stats
// (OpenFlow 1.0 ovs-ofctl uses NXST_FLOW), ofp11_flow_stats (1.3) or
// ofp15_flow_desc with OXS statistics (1.5). The caller puts it in a
// wire.Multipart reply of the matching type.
func FlowStatsToWire(fs *FlowStats, version uint8, tlv *flowtable.TLVMap) (wire.FlowStats, error) {
	f := fs.Flow
	out := wire.FlowStats{TableID: f.Table, DurationSec: fs.DurationSec, DurationNsec: fs.DurationNsec,
		Priority: f.Priority, IdleTimeout: f.IdleTimeout, HardTimeout: f.HardTimeout,
		Cookie: f.Cookie, PacketCount: fs.PacketCount, ByteCount: fs.ByteCount}
	var err error
	if out.Match, err = MatchToWire(&f.Match, version, tlv); err != nil {
		return out, err
	}
	if version == wire.OFP10 {
		// nx_flow_stats ages are "seconds + 1", 0 meaning unknown.
		out.IdleAge, out.HardAge = ageToNX(fs.IdleAge), ageToNX(fs.HardAge)
		out.Actions, err = ActionsToWire(version, f.Actions, tlv)
		return out, err
	}
	out.Flags = flagsToWire(f.Flags, version)
	if version >= wire.OFP14 {
		out.Importance = f.Importance
	}
	if version >= wire.OFP15 {
		out.Stats = oxsStats(fs)
	}
	out.Instructions, err = InstructionsToWire(version, f.Actions, tlv)
	return out, err
}

func ageToNX(age int) uint16 {
	switch {
	case age < 0:
		return 0
	case age < 0xffff:
		return uint16(age + 1)
	}
	return 0xffff
}

// OXS statistics (OpenFlow 1.5 ofp_stats): class OFPXSC_OPENFLOW_BASIC.
const (
	oxsClassBasic   = 0x8002
	oxsDuration     = 0
	oxsIdleTime     = 1
	oxsPacketCount  = 4
	oxsByteCount    = 5
	oxsHeaderLength = 4
)

// oxsStats builds the ofp_stats block OVS's oxs_put_stats writes:
// duration, idle_time, packet_count, byte_count, padded to 8.
func oxsStats(fs *FlowStats) []byte {
	b := make([]byte, 4, 4+4*12+4)
	put := func(field uint8, v uint64) {
		b = binary.BigEndian.AppendUint32(b, uint32(oxsClassBasic)<<16|uint32(field)<<9|8)
		b = binary.BigEndian.AppendUint64(b, v)
	}
	put(oxsDuration, uint64(fs.DurationSec)<<32|uint64(fs.DurationNsec))
	idle := fs.IdleAge
	if idle < 0 {
		idle = 0
	}
	put(oxsIdleTime, uint64(idle)<<32)
	put(oxsPacketCount, fs.PacketCount)
	put(oxsByteCount, fs.ByteCount)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

// FlowStatsFromWire translates one decoded flow stats entry (of an
// NXST_FLOW, OFPMP_FLOW or OFPMP_FLOW_DESC reply) into the model.
func FlowStatsFromWire(ws *wire.FlowStats, version uint8, tlv *flowtable.TLVMap) (*FlowStats, error) {
	f := &flowtable.Flow{Table: ws.TableID, Priority: ws.Priority, IdleTimeout: ws.IdleTimeout,
		HardTimeout: ws.HardTimeout, Cookie: ws.Cookie}
	fs := &FlowStats{Flow: f, DurationSec: ws.DurationSec, DurationNsec: ws.DurationNsec,
		PacketCount: ws.PacketCount, ByteCount: ws.ByteCount, IdleAge: int(ws.IdleAge) - 1, HardAge: int(ws.HardAge) - 1}
	var err error
	if _, _, err = matchFromWire(&f.Match, version, ws.Match, tlv, false); err != nil {
		return nil, err
	}
	if ws.Actions != nil || version == wire.OFP10 {
		f.Actions, err = ofpact.ActionsFromWire(version, ws.Actions, tlv)
	} else {
		f.Actions, err = ofpact.InstructionsFromWire(version, ws.Instructions, tlv)
	}
	if err != nil {
		return nil, err
	}
	if version != wire.OFP10 {
		fl := &FlowMod{}
		if err := fl.flagsFromWire(ws.Flags, version, 1); err != nil {
			return nil, err
		}
		f.Flags = fl.Flow.Flags
		if version >= wire.OFP14 {
			f.Importance = ws.Importance
		}
	}
	if version >= wire.OFP15 {
		parseOXS(fs, ws.Stats)
	}
	return fs, nil
}

// parseOXS reads the statistics OVS puts in an ofp_stats block.
func parseOXS(fs *FlowStats, b []byte) {
	if len(b) < 4 {
		return
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if n > len(b) {
		n = len(b)
	}
	for p := b[4:n]; len(p) >= oxsHeaderLength; {
		h := binary.BigEndian.Uint32(p)
		l := int(h & 0xff)
		if oxsHeaderLength+l > len(p) {
			return
		}
		v := p[oxsHeaderLength : oxsHeaderLength+l]
		if h>>16 == oxsClassBasic && l == 8 {
			x := binary.BigEndian.Uint64(v)
			switch uint8(h>>9) & 0x7f {
			case oxsDuration:
				fs.DurationSec, fs.DurationNsec = uint32(x>>32), uint32(x)
			case oxsIdleTime:
				fs.IdleAge = int(x >> 32)
			case oxsPacketCount:
				fs.PacketCount = x
			case oxsByteCount:
				fs.ByteCount = x
			}
		}
		p = p[oxsHeaderLength+l:]
	}
}

// slotSet reports whether the match constrains any bit of f's storage slot
// (cheaper than Match.Has for fields that own their whole slot).
func slotSet(m *flowtable.Match, f *flowtable.Field) bool {
	for _, c := range m.Mask[f.Off : f.Off+f.Size] {
		if c != 0 {
			return true
		}
	}
	return false
}
