package flowtext

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// Command is the flow-mod command a flow text is parsed for; it decides
// which keywords are allowed (ovs-ofctl(8) "Flow Syntax").
type Command uint8

const (
	CmdAdd Command = iota
	CmdModify
	CmdModifyStrict
	CmdDelete
	CmdDeleteStrict
)

// ParseOptions say how to read flow text.
type ParseOptions struct {
	Command Command
	TLV     *flowtable.TLVMap // for tun_metadataN
	Ports   map[string]uint32 // port names (in_port="name", output:name)
}

// FlowMod is a parsed flow line: the flow plus the flow-mod extras.
type FlowMod struct {
	flowtable.Flow
	Command    Command
	CookieMask uint64
	OutPort    uint32 // PortNone: any
	OutGroup   uint32 // GroupAny: any
	TableSet   bool   // table= was given (otherwise modify/delete use all tables)
	Line       int    // line number in its file (ParseFlows)
}

// GroupAny is the "any group" value of out_group.
const GroupAny = 0xffffffff

// protocols are the ovs-ofctl shorthand keywords.
var protocols = map[string]struct {
	ethType uint16
	proto   int // -1: none
}{
	"ip": {flowtable.EthTypeIPv4, -1}, "ipv6": {flowtable.EthTypeIPv6, -1},
	"icmp": {flowtable.EthTypeIPv4, flowtable.IPProtoICMP}, "icmp6": {flowtable.EthTypeIPv6, flowtable.IPProtoICMPv6},
	"tcp": {flowtable.EthTypeIPv4, flowtable.IPProtoTCP}, "tcp6": {flowtable.EthTypeIPv6, flowtable.IPProtoTCP},
	"udp": {flowtable.EthTypeIPv4, flowtable.IPProtoUDP}, "udp6": {flowtable.EthTypeIPv6, flowtable.IPProtoUDP},
	"sctp": {flowtable.EthTypeIPv4, flowtable.IPProtoSCTP}, "sctp6": {flowtable.EthTypeIPv6, flowtable.IPProtoSCTP},
	"arp": {flowtable.EthTypeARP, -1}, "rarp": {flowtable.EthTypeRARP, -1},
	"mpls": {flowtable.EthTypeMPLS, -1}, "mplsm": {0x8848, -1},
}

// ParseFlow parses one flow in ovs-ofctl syntax.
func ParseFlow(s string, o *ParseOptions) (*FlowMod, error) {
	if o == nil {
		o = &ParseOptions{}
	}
	fm := &FlowMod{Command: o.Command, OutPort: flowtable.PortNone, OutGroup: GroupAny}
	fm.Priority = flowtable.DefaultPriority
	matchStr, actStr, actPos := s, "", -1
	wantActions := o.Command == CmdAdd || o.Command == CmdModify || o.Command == CmdModifyStrict
	if i := strings.Index(s, "action"); i >= 0 {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			return nil, ofptext.ErrAt(i, "actions", "missing '=' after actions")
		}
		if !wantActions {
			return nil, ofptext.ErrAt(i, "actions", "actions are not allowed in this command")
		}
		matchStr = s[:i]
		actPos = i + eq + 1
		actStr = s[actPos:]
	} else if wantActions {
		return nil, ofptext.ErrAt(len(s), "actions", "must specify an action")
	}
	if err := parseMatchPart(fm, matchStr, o); err != nil {
		return nil, err
	}
	if actPos >= 0 {
		acts, err := parseActions(actStr, actPos, o)
		if err != nil {
			return nil, err
		}
		fm.Actions = acts
		if err := checkActions(&fm.Flow, actPos); err != nil {
			return nil, err
		}
	}
	return fm, nil
}

func parseMatchPart(fm *FlowMod, s string, o *ParseOptions) error {
	m := &fm.Match
	for e := range ofptext.Elements(s, 0) {
		name, value := e.Key, e.Value
		if p, ok := protocols[name]; ok && e.Delim == 0 {
			m.SetUint64(flowtable.FieldEthType, uint64(p.ethType))
			if p.proto >= 0 {
				m.SetUint64(flowtable.FieldIPProto, uint64(p.proto))
			}
			continue
		}
		if e.Delim != '=' && e.Delim != ':' {
			switch name {
			case "send_flow_rem":
				fm.Flags |= flowtable.FlagSendFlowRem
			case "check_overlap":
				fm.Flags |= flowtable.FlagCheckOverlap
			case "reset_counts":
				fm.Flags |= flowtable.FlagResetCounts
			case "no_packet_counts":
				fm.Flags |= flowtable.FlagNoPktCounts
			case "no_byte_counts":
				fm.Flags |= flowtable.FlagNoBytCounts
			default:
				if flowtable.FieldByName(name) != nil {
					return ofptext.ErrAt(e.KeyPos, name, "missing value")
				}
				return ofptext.ErrAt(e.KeyPos, name, "unknown keyword %q", name)
			}
			continue
		}
		var err error
		switch name {
		case "table":
			var t uint64
			if value == "all" || value == "ALL" {
				t = 255
			} else if t, err = ofptext.ParseNum(value, 8); err != nil {
				break
			}
			fm.Table, fm.TableSet = uint8(t), true
		case "priority":
			var p uint64
			if p, err = ofptext.ParseNum(value, 16); err == nil {
				fm.Priority = uint16(p)
			}
		case "cookie":
			v, mstr, hasMask := strings.Cut(value, "/")
			var c uint64
			if c, err = ofptext.ParseNum(v, 64); err != nil {
				break
			}
			fm.Cookie = c
			if hasMask {
				if o.Command == CmdAdd {
					return ofptext.ErrAt(e.ValPos, name, "cannot set cookie mask when adding a flow")
				}
				if mstr == "-1" {
					fm.CookieMask = ^uint64(0)
				} else if fm.CookieMask, err = ofptext.ParseNum(mstr, 64); err != nil {
					break
				}
			}
		case "idle_timeout":
			var t uint64
			if t, err = ofptext.ParseNum(value, 16); err == nil {
				fm.IdleTimeout = uint16(t)
			}
		case "hard_timeout":
			var t uint64
			if t, err = ofptext.ParseNum(value, 16); err == nil {
				fm.HardTimeout = uint16(t)
			}
		case "importance":
			var t uint64
			if t, err = ofptext.ParseNum(value, 16); err == nil {
				fm.Importance = uint16(t)
			}
		case "out_port":
			var p uint32
			if p, err = ofptext.ParsePortName(value, o.Ports); err == nil {
				fm.OutPort = p
			}
		case "out_group":
			var g uint64
			if g, err = ofptext.ParseNum(value, 32); err == nil {
				fm.OutGroup = uint32(g)
			}
		case "duration", "n_packets", "n_bytes", "idle_age", "hard_age":
			// Ignored, so that dump-flows output can be fed back in.
		case "dl_vlan":
			var v uint64
			if v, err = ofptext.ParseNum(value, 16); err != nil {
				break
			}
			if v > 0xfff && v != 0xffff {
				err = fmt.Errorf("%s: VLAN %d out of range 0..4095", name, v)
				break
			}
			tci, tmask := m.Uint64(flowtable.FieldVlanTCI)
			if v == 0xffff { // OFP_VLAN_NONE: no VLAN header
				m.SetMaskedUint64(flowtable.FieldVlanTCI, 0, 0xffff)
			} else {
				m.SetMaskedUint64(flowtable.FieldVlanTCI, tci&^0x0fff|v|flowtable.VlanCFI, tmask|0x0fff|flowtable.VlanCFI)
			}
		case "dl_vlan_pcp":
			var v uint64
			if v, err = ofptext.ParseNum(value, 8); err != nil {
				break
			}
			if v > 7 {
				err = fmt.Errorf("%s: PCP %d out of range 0..7", name, v)
				break
			}
			tci, tmask := m.Uint64(flowtable.FieldVlanTCI)
			m.SetMaskedUint64(flowtable.FieldVlanTCI, tci&^0xe000|v<<13|flowtable.VlanCFI, tmask|0xe000|flowtable.VlanCFI)
		default:
			f := fieldForMatch(name, m)
			if f == nil {
				return ofptext.ErrAt(e.KeyPos, name, "unknown field %q", name)
			}
			if f, err = o.TLV.Resolve(f); err != nil {
				return ofptext.ErrAt(e.KeyPos, name, "%v", err)
			}
			var v, mk []byte
			v, mk, err = ParseFieldValue(f, value, o.Ports)
			if err == nil {
				m.Set(f, v, mk)
			}
			if err == nil && f == flowtable.FieldConjID && fm.Command == CmdAdd {
				// conj_id is exact only.
			}
		}
		if err != nil {
			return ofptext.ErrAt(e.ValPos, name, "%v", ofptext.TrimFieldPrefix(err, name))
		}
	}
	if err := m.CheckPrereqs(); err != nil {
		pe := err.(*flowtable.PrereqError)
		pos := strings.Index(s, pe.Field.Name)
		if pos < 0 && pe.Field.ExtraName != "" {
			pos = strings.Index(s, pe.Field.ExtraName)
		}
		if pos < 0 {
			pos = 0
		}
		return ofptext.ErrAt(pos, pe.Field.Name, "prerequisites not met (needs %s)", pe.Field.Prereq)
	}
	return nil
}

// fieldForMatch maps a match keyword to a field. "nw_src"/"nw_dst" mean
// arp_spa/arp_tpa in an ARP match and "tp_src"/"tp_dst" follow the
// protocol, as in ovs-ofctl.
func fieldForMatch(name string, m *flowtable.Match) *flowtable.Field {
	dl, dlm := m.Uint64(flowtable.FieldEthType)
	proto, pm := m.Uint64(flowtable.FieldIPProto)
	isARP := dlm != 0 && (dl == flowtable.EthTypeARP || dl == flowtable.EthTypeRARP)
	switch name {
	case "nw_src":
		if isARP {
			return flowtable.FieldArpSpa
		}
	case "nw_dst":
		if isARP {
			return flowtable.FieldArpTpa
		}
	case "nw_proto":
		if isARP {
			return flowtable.FieldArpOp
		}
	case "tp_src", "tp_dst":
		if pm != 0 {
			src := name == "tp_src"
			switch proto {
			case flowtable.IPProtoUDP:
				if src {
					return flowtable.FieldUDPSrc
				}
				return flowtable.FieldUDPDst
			case flowtable.IPProtoSCTP:
				if src {
					return flowtable.FieldSCTPSrc
				}
				return flowtable.FieldSCTPDst
			case flowtable.IPProtoICMP, flowtable.IPProtoICMPv6:
				if src {
					return flowtable.FieldICMPType
				}
				return flowtable.FieldICMPCode
			}
		}
	case "icmp_type", "icmp_code":
		if dlm != 0 && dl == flowtable.EthTypeIPv6 {
			if name == "icmp_type" {
				return flowtable.FieldICMPv6Type
			}
			return flowtable.FieldICMPv6Code
		}
	case "in_port_oxm":
		return flowtable.FieldInPort
	}
	f := flowtable.FieldByName(name)
	if f == nil {
		f = flowtable.FieldByNXM(name)
	}
	return f
}

// ParseFlows reads a flows file in the ovs-ofctl add-flows format: one
// flow per line, '#' comments, blank lines, '\' line continuations. Every
// error names its line.
func ParseFlows(r io.Reader, o *ParseOptions) ([]*FlowMod, error) {
	var out []*FlowMod
	err := scanLines(r, func(lineNo int, line string) error {
		fm, err := ParseFlow(line, o)
		if err != nil {
			if fe, ok := err.(*Error); ok {
				fe.Line = lineNo
				return fe
			}
			return fmt.Errorf("line %d: %w", lineNo, err)
		}
		fm.Line = lineNo
		out = append(out, fm)
		return nil
	})
	return out, err
}

// scanLines calls fn for each logical line (continuations joined,
// comments and blank lines skipped) with its first physical line number.
func scanLines(r io.Reader, fn func(lineNo int, line string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	n, start := 0, 0
	var cur strings.Builder
	for sc.Scan() {
		n++
		line := sc.Text()
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\"))
			continue
		}
		cur.WriteString(line)
		text := cur.String()
		cur.Reset()
		trimmed := strings.TrimSpace(text)
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		if err := fn(start, text); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading flows: %w", err)
	}
	if cur.Len() > 0 && strings.TrimSpace(cur.String()) != "" {
		return fn(start, cur.String())
	}
	return nil
}

// Quote returns s quoted as ovs-ofctl prints port names.
func Quote(s string) string { return strconv.Quote(s) }
