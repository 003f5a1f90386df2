package ofpact

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

// ct(...) with its nat(...) and exec(...) clauses, and ct_clear: send the
// packet through connection tracking (NXAST_CT with nested NXAST_NAT and
// set-field actions; NXAST_CT_CLEAR).

func init() {
	keywords(parseCT, "ct")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) { return &flowtable.CTClear{}, nil }, "ct_clear")
	register(Def[*flowtable.CT]{
		Format: formatCT,
		Encode: func(t Encoder, out []wire.Action, a *flowtable.CT) ([]wire.Action, error) { return t.ct(out, a) },
		Check: func(c Checker, a *flowtable.CT) error {
			c.InCT = true
			return c.checkAll(a.Exec)
		},
	})
	register(Def[*flowtable.CTClear]{
		Format: func(b *strings.Builder, a *flowtable.CTClear, o *ofptext.PrintOptions) { b.WriteString("ct_clear") },
		Encode: func(t Encoder, out []wire.Action, a *flowtable.CTClear) ([]wire.Action, error) {
			return append(out, &wire.ActionCTClear{}), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionCT) (flowtable.Action, error) { return t.ct(a) })
	fromWire(func(t Decoder, a *wire.ActionNAT) (flowtable.Action, error) {
		return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "nat is only allowed inside ct()")
	})
	fromWire(func(t Decoder, a *wire.ActionCTClear) (flowtable.Action, error) { return &flowtable.CTClear{}, nil })
}

func parseCT(p Parser, e ofptext.KV) (flowtable.Action, error) {
	ct := &flowtable.CT{Table: flowtable.TableNone}
	if e.Delim == 0 {
		return ct, nil
	}
	for x := range ofptext.Elements(e.Value, e.ValPos) {
		switch x.Key {
		case "commit":
			ct.Commit = true
		case "force":
			ct.Force = true
		case "table":
			t, err := ofptext.ParseNum(x.Value, 8)
			if err != nil || t == 255 {
				return nil, ofptext.ErrAt(x.ValPos, "table", "%q: invalid table", x.Value)
			}
			ct.Table = uint8(t)
		case "zone":
			if z, err := ofptext.ParseNum(x.Value, 16); err == nil {
				ct.Zone = uint16(z)
				break
			}
			r, err := ofptext.ParseSubfield(x.Value, p.TLV)
			if err != nil {
				return nil, ofptext.ErrAt(x.ValPos, "zone", "%v", err)
			}
			if r.NBits != 16 {
				return nil, ofptext.ErrAt(x.ValPos, "zone", "zone field must be 16 bits wide, not %d", r.NBits)
			}
			ct.ZoneSrc = r
		case "alg":
			switch x.Value {
			case "ftp":
				ct.Alg = 21
			case "tftp":
				ct.Alg = 69
			default:
				a, err := ofptext.ParseNum(x.Value, 16)
				if err != nil {
					return nil, ofptext.ErrAt(x.ValPos, "alg", "unknown ALG %q", x.Value)
				}
				ct.Alg = uint16(a)
			}
		case "nat":
			n, err := parseNAT(x)
			if err != nil {
				return nil, err
			}
			ct.NAT = n
		case "exec":
			inner, err := p.ParseActions(x.Value, x.ValPos)
			if err != nil {
				return nil, err
			}
			for _, a := range inner {
				if msg := ctExecRefusal(a); msg != "" {
					return nil, ofptext.ErrAt(x.ValPos, "exec", "%s", msg)
				}
			}
			ct.Exec = inner
		default:
			return nil, ofptext.ErrAt(x.KeyPos, x.Key, "unknown ct argument %q", x.Key)
		}
	}
	if ct.Commit && ct.ZoneSrc.Field == nil {
		// fine
	}
	if ct.Force && !ct.Commit {
		return nil, ofptext.ErrAt(e.ValPos, "ct", "\"force\" requires \"commit\"")
	}
	if len(ct.Exec) > 0 && !ct.Commit {
		return nil, ofptext.ErrAt(e.ValPos, "ct", "exec() requires \"commit\"")
	}
	return ct, nil
}

// ctExecRefusal says why OVS refuses a as an action of ct(exec(...)), or
// "" when it accepts it: only actions that write ct_mark or ct_label
// (set_field, load, move into them), as ofpacts_verify_nested checks.
// The text is OVS's.
func ctExecRefusal(a flowtable.Action) string {
	var dst *flowtable.Field
	switch a := a.(type) {
	case *flowtable.SetField:
		dst = a.Field
	case *flowtable.Move:
		dst = a.Dst.Field
	default:
		return fmt.Sprintf("ct action doesn't support nested action %s", a.Name())
	}
	if dst != flowtable.FieldCtMark && dst != flowtable.FieldCtLabel {
		return fmt.Sprintf("ct action doesn't support nested modification of %s", dst.Name)
	}
	return ""
}

// parseNAT parses nat[(src|dst[=ADDR[-ADDR][:PORT[-PORT]]][,persistent][,hash][,random])].
func parseNAT(x ofptext.KV) (*flowtable.NAT, error) {
	n := &flowtable.NAT{}
	if x.Delim != '(' {
		return n, nil
	}
	bad := func(format string, args ...any) error { return ofptext.ErrAt(x.ValPos, "nat", format, args...) }
	for i, part := range ofptext.SplitTop(x.Value) {
		k, v, hasVal := strings.Cut(part, "=")
		switch k {
		case "src", "dst":
			if i != 0 || n.Flags&(flowtable.NATSrc|flowtable.NATDst) != 0 {
				return nil, bad("src or dst must come first, once")
			}
			if k == "src" {
				n.Flags |= flowtable.NATSrc
			} else {
				n.Flags |= flowtable.NATDst
			}
			if hasVal {
				if err := parseNATRange(n, v); err != nil {
					return nil, bad("%v", err)
				}
			}
		case "persistent":
			n.Flags |= flowtable.NATPersistent
		case "hash":
			n.Flags |= flowtable.NATHash
		case "random":
			n.Flags |= flowtable.NATRandom
		default:
			return nil, bad("unknown nat argument %q", part)
		}
	}
	if n.Flags&flowtable.NATHash != 0 && n.Flags&flowtable.NATRandom != 0 {
		return nil, bad("both hash and random given")
	}
	return n, nil
}

func parseNATRange(n *flowtable.NAT, s string) error {
	addrs, ports := s, ""
	if strings.HasPrefix(s, "[") {
		// [v6]-[v6]:port
		end := strings.LastIndex(s, "]")
		addrs, ports = s[:end+1], strings.TrimPrefix(s[end+1:], ":")
		addrs = strings.ReplaceAll(strings.ReplaceAll(addrs, "[", ""), "]", "")
	} else if i := strings.LastIndexByte(s, ':'); i >= 0 && strings.Count(s, ":") == 1 {
		addrs, ports = s[:i], s[i+1:]
	}
	lo, hi, isRange := strings.Cut(addrs, "-")
	a, err := netip.ParseAddr(lo)
	if err != nil {
		return fmt.Errorf("%q: invalid address", lo)
	}
	n.AddrMin = a
	if isRange {
		b, err := netip.ParseAddr(hi)
		if err != nil || b.Is4() != a.Is4() || b.Less(a) {
			return fmt.Errorf("%q: invalid address range", addrs)
		}
		n.AddrMax = b
	}
	if ports != "" {
		plo, phi, pr := strings.Cut(ports, "-")
		p1, err := ofptext.ParseNum(plo, 16)
		if err != nil {
			return fmt.Errorf("%q: invalid port", plo)
		}
		n.PortMin = uint16(p1)
		if pr {
			p2, err := ofptext.ParseNum(phi, 16)
			if err != nil || p2 < p1 {
				return fmt.Errorf("%q: invalid port range", ports)
			}
			n.PortMax = uint16(p2)
		}
	}
	return nil
}

func formatCT(b *strings.Builder, a *flowtable.CT, o *ofptext.PrintOptions) {
	var parts []string
	if a.Commit {
		parts = append(parts, "commit")
	}
	if a.Force {
		parts = append(parts, "force")
	}
	if a.Table != flowtable.TableNone {
		parts = append(parts, fmt.Sprintf("table=%d", a.Table))
	}
	if a.ZoneSrc.Field != nil {
		parts = append(parts, "zone="+ofptext.SubfieldString(a.ZoneSrc))
	} else if a.Zone != 0 {
		parts = append(parts, fmt.Sprintf("zone=%d", a.Zone))
	}
	if a.NAT != nil {
		parts = append(parts, NATString(a.NAT))
	}
	if len(a.Exec) > 0 {
		parts = append(parts, "exec("+ActionsString(a.Exec, o)+")")
	}
	switch a.Alg {
	case 0:
	case 21:
		parts = append(parts, "alg=ftp")
	case 69:
		parts = append(parts, "alg=tftp")
	default:
		parts = append(parts, fmt.Sprintf("alg=%d", a.Alg))
	}
	b.WriteString("ct(" + strings.Join(parts, ",") + ")")
}

// NATString is ct's nat(...) argument as ovs-ofctl prints it (also in traces).
func NATString(n *flowtable.NAT) string {
	s := "nat"
	if n.Flags&(flowtable.NATSrc|flowtable.NATDst) == 0 {
		return s
	}
	s += "("
	if n.Flags&flowtable.NATSrc != 0 {
		s += "src"
	} else {
		s += "dst"
	}
	if n.AddrMin.IsValid() {
		s += "="
		if n.AddrMin.Is4() {
			s += n.AddrMin.String()
			if n.AddrMax.IsValid() && n.AddrMax != n.AddrMin {
				s += "-" + n.AddrMax.String()
			}
		} else {
			br := n.PortMin != 0
			s += v6Bracket(n.AddrMin, br)
			if n.AddrMax.IsValid() && n.AddrMax != n.AddrMin {
				s += "-" + v6Bracket(n.AddrMax, br)
			}
		}
		if n.PortMin != 0 {
			s += fmt.Sprintf(":%d", n.PortMin)
			if n.PortMax != 0 && n.PortMax != n.PortMin {
				s += fmt.Sprintf("-%d", n.PortMax)
			}
		}
		if n.Flags&flowtable.NATPersistent != 0 {
			s += ",persistent"
		}
		if n.Flags&flowtable.NATHash != 0 {
			s += ",hash"
		}
		if n.Flags&flowtable.NATRandom != 0 {
			s += ",random"
		}
	}
	return s + ")"
}

func v6Bracket(a netip.Addr, bracket bool) string {
	if bracket {
		return "[" + a.String() + "]"
	}
	return a.String()
}

func (t Encoder) ct(out []wire.Action, a *flowtable.CT) ([]wire.Action, error) {
	ct := &wire.ActionCT{RecircTable: a.Table, Alg: a.Alg}
	if a.Commit {
		ct.Flags |= wire.NX_CT_F_COMMIT
	}
	if a.Force {
		ct.Flags |= wire.NX_CT_F_FORCE | wire.NX_CT_F_COMMIT
	}
	if a.ZoneSrc.Field != nil {
		ref, err := t.nxRef(a.ZoneSrc.Field)
		if err != nil {
			return nil, fmt.Errorf("ct zone: %w", err)
		}
		ct.ZoneSrc, ct.ZoneOfs, ct.ZoneNBits = ref, uint16(a.ZoneSrc.Ofs), uint16(a.ZoneSrc.NBits)
	} else {
		ct.ZoneImm = a.Zone
	}
	if a.NAT != nil {
		ct.Actions = append(ct.Actions, natToWire(a.NAT))
	}
	var err error
	if ct.Actions, err = t.appendActions(ct.Actions, a.Exec); err != nil {
		return nil, fmt.Errorf("ct exec: %w", err)
	}
	return append(out, ct), nil
}

func natToWire(n *flowtable.NAT) *wire.ActionNAT {
	a := &wire.ActionNAT{}
	if n.Flags&flowtable.NATSrc != 0 {
		a.Flags |= wire.NX_NAT_F_SRC
	}
	if n.Flags&flowtable.NATDst != 0 {
		a.Flags |= wire.NX_NAT_F_DST
	}
	if n.Flags&flowtable.NATPersistent != 0 {
		a.Flags |= wire.NX_NAT_F_PERSISTENT
	}
	if n.Flags&flowtable.NATHash != 0 {
		a.Flags |= wire.NX_NAT_F_PROTO_HASH
	}
	if n.Flags&flowtable.NATRandom != 0 {
		a.Flags |= wire.NX_NAT_F_PROTO_RANDOM
	}
	if n.AddrMin.IsValid() {
		hasMax := n.AddrMax.IsValid() && n.AddrMax != n.AddrMin
		if n.AddrMin.Is4() {
			a.RangePresent |= wire.NX_NAT_RANGE_IPV4_MIN
			a.IPv4Min = n.AddrMin.As4()
			if hasMax {
				a.RangePresent |= wire.NX_NAT_RANGE_IPV4_MAX
				a.IPv4Max = n.AddrMax.As4()
			}
		} else {
			a.RangePresent |= wire.NX_NAT_RANGE_IPV6_MIN
			a.IPv6Min = n.AddrMin.As16()
			if hasMax {
				a.RangePresent |= wire.NX_NAT_RANGE_IPV6_MAX
				a.IPv6Max = n.AddrMax.As16()
			}
		}
	}
	if n.PortMin != 0 {
		a.RangePresent |= wire.NX_NAT_RANGE_PROTO_MIN
		a.ProtoMin = n.PortMin
		if n.PortMax != 0 && n.PortMax != n.PortMin {
			a.RangePresent |= wire.NX_NAT_RANGE_PROTO_MAX
			a.ProtoMax = n.PortMax
		}
	}
	return a
}

func (t Decoder) ct(a *wire.ActionCT) (flowtable.Action, error) {
	ct := &flowtable.CT{
		Commit: a.Flags&wire.NX_CT_F_COMMIT != 0,
		Force:  a.Flags&wire.NX_CT_F_FORCE != 0,
		Table:  a.RecircTable,
		Alg:    a.Alg,
	}
	if a.ZoneSrc.Field != nil {
		r, err := t.fieldRange(a.ZoneSrc, int(a.ZoneOfs), int(a.ZoneNBits))
		if err != nil {
			return nil, fmt.Errorf("ct zone: %w", err)
		}
		ct.ZoneSrc = r
	} else {
		ct.Zone = a.ZoneImm
	}
	n := 0
	for _, na := range a.Actions {
		if _, ok := na.(*wire.ActionNAT); !ok {
			n++
		}
	}
	ct.Exec = t.pool.actions(n)
	for _, na := range a.Actions {
		if nat, ok := na.(*wire.ActionNAT); ok {
			if ct.NAT != nil {
				return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "ct: more than one nat")
			}
			ct.NAT = natFromWire(nat)
			continue
		}
		m, err := t.action(na)
		if err != nil {
			return nil, fmt.Errorf("ct nested action: %w", err)
		}
		if msg := ctExecRefusal(m); msg != "" {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "%s", msg)
		}
		ct.Exec = append(ct.Exec, m)
	}
	return ct, nil
}

func natFromWire(a *wire.ActionNAT) *flowtable.NAT {
	n := &flowtable.NAT{}
	f := a.Flags
	if f&wire.NX_NAT_F_SRC != 0 {
		n.Flags |= flowtable.NATSrc
	}
	if f&wire.NX_NAT_F_DST != 0 {
		n.Flags |= flowtable.NATDst
	}
	if f&wire.NX_NAT_F_PERSISTENT != 0 {
		n.Flags |= flowtable.NATPersistent
	}
	if f&wire.NX_NAT_F_PROTO_HASH != 0 {
		n.Flags |= flowtable.NATHash
	}
	if f&wire.NX_NAT_F_PROTO_RANDOM != 0 {
		n.Flags |= flowtable.NATRandom
	}
	r := a.RangePresent
	switch {
	case r&wire.NX_NAT_RANGE_IPV4_MIN != 0:
		n.AddrMin = netip.AddrFrom4(a.IPv4Min)
		if r&wire.NX_NAT_RANGE_IPV4_MAX != 0 {
			n.AddrMax = netip.AddrFrom4(a.IPv4Max)
		}
	case r&wire.NX_NAT_RANGE_IPV6_MIN != 0:
		n.AddrMin = netip.AddrFrom16(a.IPv6Min)
		if r&wire.NX_NAT_RANGE_IPV6_MAX != 0 {
			n.AddrMax = netip.AddrFrom16(a.IPv6Max)
		}
	}
	if r&wire.NX_NAT_RANGE_PROTO_MIN != 0 {
		n.PortMin = a.ProtoMin
		if r&wire.NX_NAT_RANGE_PROTO_MAX != 0 {
			n.PortMax = a.ProtoMax
		}
	}
	return n
}
