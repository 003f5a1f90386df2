package flowtext

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// parseActions parses an ovs-actions(7) list. base is the offset of s in
// the line, for error columns.
func parseActions(s string, base int, o *ParseOptions, fl *flowtable.Flow) ([]flowtable.Action, error) {
	sc := ofptext.Scanner{S: s, Base: base}
	var acts []flowtable.Action
	sawDrop := false
	for {
		e, ok := sc.Next()
		if !ok {
			break
		}
		if e.Key == "drop" && e.Delim == 0 {
			sawDrop = true
			continue
		}
		a, err := parseAction(e, o)
		if err != nil {
			return nil, err
		}
		acts = append(acts, a)
	}
	if sawDrop && len(acts) > 0 {
		return nil, ofptext.ErrAt(base, "drop", "\"drop\" must not be combined with other actions")
	}
	return acts, nil
}

func parseAction(e ofptext.KV, o *ParseOptions) (flowtable.Action, error) {
	key, val := e.Key, e.Value
	bad := func(format string, args ...any) error {
		return ofptext.ErrAt(e.ValPos, key, format, args...)
	}
	wrap := func(err error) error { return ofptext.ErrAt(e.ValPos, key, "%s", ofptext.TrimFieldPrefix(err, key)) }
	lk := strings.ToLower(key)
	// A bare port number or reserved port name is an output.
	if e.Delim == 0 {
		switch strings.ToUpper(key) {
		case "IN_PORT", "NORMAL", "FLOOD", "ALL", "LOCAL", "TABLE":
			p, _ := flowtable.ParsePort(key)
			return &flowtable.Output{Port: p}, nil
		case "CONTROLLER":
			return &flowtable.Controller{MaxLen: 0xffff, Reason: 1, Short: true}, nil
		}
		if _, err := strconv.ParseUint(key, 10, 32); err == nil {
			p, err := ofptext.ParsePortName(key, o.Ports)
			if err != nil {
				return nil, ofptext.ErrAt(e.KeyPos, key, "%v", err)
			}
			return &flowtable.Output{Port: p}, nil
		}
	}
	switch lk {
	case "output":
		if strings.Contains(val, "[") {
			r, err := ofptext.ParseSubfield(val, o.TLV)
			if err != nil {
				return nil, wrap(err)
			}
			return &flowtable.OutputReg{Src: r, MaxLen: 0}, nil
		}
		p, err := ofptext.ParsePortName(val, o.Ports)
		if err != nil {
			// output:reg1 style field name.
			if f := flowtable.FieldByName(val); f != nil {
				return &flowtable.OutputReg{Src: flowtable.Whole(f)}, nil
			}
			return nil, wrap(err)
		}
		if p == flowtable.PortController {
			return &flowtable.Controller{MaxLen: 0xffff, Reason: 1, Short: true}, nil
		}
		return &flowtable.Output{Port: p}, nil
	case "controller":
		return parseController(e, bad)
	case "enqueue":
		ps, qs, ok := strings.Cut(val, ":")
		if !ok {
			ps, qs, ok = strings.Cut(val, ",")
		}
		if !ok {
			return nil, bad("syntax is enqueue:PORT:QUEUE")
		}
		p, err := ofptext.ParsePortName(ps, o.Ports)
		if err != nil {
			return nil, wrap(err)
		}
		q, err := ofptext.ParseNum(qs, 32)
		if err != nil {
			return nil, wrap(err)
		}
		return &flowtable.Enqueue{Port: p, Queue: uint32(q)}, nil
	case "resubmit":
		r := &flowtable.Resubmit{InPort: flowtable.PortInPort, Table: flowtable.TableNone}
		if e.Delim == ':' {
			p, err := ofptext.ParsePortName(val, o.Ports)
			if err != nil {
				return nil, wrap(err)
			}
			r.InPort = p
			return r, nil
		}
		parts := strings.Split(val, ",")
		if len(parts) > 3 {
			return nil, bad("syntax is resubmit([PORT][,TABLE][,ct])")
		}
		if parts[0] != "" {
			p, err := ofptext.ParsePortName(parts[0], o.Ports)
			if err != nil {
				return nil, wrap(err)
			}
			r.InPort = p
		}
		if len(parts) > 1 && parts[1] != "" {
			t, err := ofptext.ParseNum(parts[1], 8)
			if err != nil || t == 255 {
				return nil, bad("%q: invalid table", parts[1])
			}
			r.Table = uint8(t)
		}
		if len(parts) > 2 {
			if parts[2] != "ct" {
				return nil, bad("%q: unknown resubmit option (only \"ct\")", parts[2])
			}
			r.CT = true
		}
		if r.InPort == flowtable.PortInPort && r.Table == flowtable.TableNone {
			return nil, bad("at least one of port and table must be specified")
		}
		return r, nil
	case "goto_table":
		t, err := ofptext.ParseNum(val, 8)
		if err != nil || t == 255 {
			return nil, bad("%q: invalid table", val)
		}
		return &flowtable.GotoTable{Table: uint8(t)}, nil
	case "write_metadata":
		vs, ms, hasMask := strings.Cut(val, "/")
		v, err := ofptext.ParseNum(vs, 64)
		if err != nil {
			return nil, wrap(err)
		}
		m := ^uint64(0)
		if hasMask {
			if m, err = ofptext.ParseNum(ms, 64); err != nil {
				return nil, wrap(err)
			}
		}
		return &flowtable.WriteMetadata{Value: v & m, Mask: m}, nil
	case "clear_actions":
		return &flowtable.ClearActions{}, nil
	case "write_actions":
		inner, err := parseActions(val, e.ValPos, o, nil)
		if err != nil {
			return nil, err
		}
		return &flowtable.WriteActions{Actions: inner}, nil
	case "meter":
		id, err := ofptext.ParseNum(val, 32)
		if err != nil {
			return nil, wrap(err)
		}
		return &flowtable.Meter{ID: uint32(id)}, nil
	case "set_field":
		return parseSetField(val, o, bad, wrap)
	case "load":
		return parseLoad(val, o, bad, wrap)
	case "move":
		ss, ds, ok := strings.Cut(val, "->")
		if !ok {
			return nil, bad("%q: missing `->'", val)
		}
		src, err := ofptext.ParseSubfield(ss, o.TLV)
		if err != nil {
			return nil, wrap(err)
		}
		dst, err := ofptext.ParseSubfield(ds, o.TLV)
		if err != nil {
			return nil, wrap(err)
		}
		if src.NBits != dst.NBits {
			return nil, bad("source field is %d bits wide but destination is %d bits wide", src.NBits, dst.NBits)
		}
		return &flowtable.Move{Src: src, Dst: dst}, nil
	case "mod_dl_src", "mod_dl_dst":
		mac, err := ofptext.ParseMAC(val)
		if err != nil {
			return nil, wrap(err)
		}
		f, raw := flowtable.FieldEthSrc, flowtable.RawModDlSrc
		if lk == "mod_dl_dst" {
			f, raw = flowtable.FieldEthDst, flowtable.RawModDlDst
		}
		return &flowtable.SetField{Field: f, Value: mac, Mask: ofptext.OnesOf(6), Raw: raw}, nil
	case "mod_nw_src", "mod_nw_dst":
		a, err := netip.ParseAddr(val)
		if err != nil || !a.Is4() {
			return nil, bad("%q: invalid IP address", val)
		}
		f, raw := flowtable.FieldIPv4Src, flowtable.RawModNwSrc
		if lk == "mod_nw_dst" {
			f, raw = flowtable.FieldIPv4Dst, flowtable.RawModNwDst
		}
		return &flowtable.SetField{Field: f, Value: a.AsSlice(), Mask: ofptext.OnesOf(4), Raw: raw}, nil
	case "mod_nw_tos":
		v, err := ofptext.ParseNum(val, 8)
		if err != nil || v&3 != 0 {
			return nil, bad("%q: invalid TOS (the low 2 bits must be zero)", val)
		}
		return &flowtable.SetField{Field: flowtable.FieldIPDSCP, Value: []byte{byte(v >> 2)}, Mask: []byte{0x3f}, Raw: flowtable.RawModNwTos}, nil
	case "mod_nw_ecn":
		v, err := ofptext.ParseNum(val, 8)
		if err != nil || v > 3 {
			return nil, bad("%q: invalid ECN", val)
		}
		return &flowtable.SetField{Field: flowtable.FieldIPECN, Value: []byte{byte(v)}, Mask: []byte{3}, Raw: flowtable.RawModNwEcn}, nil
	case "mod_nw_ttl":
		v, err := ofptext.ParseNum(val, 8)
		if err != nil {
			return nil, wrap(err)
		}
		return &flowtable.SetField{Field: flowtable.FieldIPTTL, Value: []byte{byte(v)}, Mask: []byte{0xff}, Raw: flowtable.RawModNwTTL}, nil
	case "mod_tp_src", "mod_tp_dst":
		v, err := ofptext.ParseNum(val, 16)
		if err != nil {
			return nil, wrap(err)
		}
		f, raw := flowtable.FieldTCPSrc, flowtable.RawModTpSrc
		if lk == "mod_tp_dst" {
			f, raw = flowtable.FieldTCPDst, flowtable.RawModTpDst
		}
		return &flowtable.SetField{Field: f, Value: ofptext.U64Bytes(v, 2), Mask: ofptext.OnesOf(2), Raw: raw}, nil
	case "mod_vlan_vid", "set_vlan_vid":
		v, err := ofptext.ParseNum(val, 16)
		if err != nil || v > 0xfff {
			return nil, bad("%q: invalid VLAN VID", val)
		}
		return &flowtable.SetField{Field: flowtable.FieldVlanVID, Value: ofptext.U64Bytes(v|flowtable.VlanCFI, 2), Mask: ofptext.U64Bytes(0x1fff, 2), Raw: flowtable.RawModVlanVid}, nil
	case "mod_vlan_pcp", "set_vlan_pcp":
		v, err := ofptext.ParseNum(val, 8)
		if err != nil || v > 7 {
			return nil, bad("%q: invalid VLAN PCP", val)
		}
		return &flowtable.SetField{Field: flowtable.FieldVlanPCP, Value: []byte{byte(v)}, Mask: []byte{7}, Raw: flowtable.RawModVlanPcp}, nil
	case "strip_vlan":
		return &flowtable.PopVLAN{Strip: true}, nil
	case "pop_vlan":
		return &flowtable.PopVLAN{}, nil
	case "push_vlan":
		v, err := ofptext.ParseNum(val, 16)
		if err != nil || (v != flowtable.EthTypeVLAN && v != flowtable.EthTypeQinQ) {
			return nil, bad("%q: push_vlan takes 0x8100 or 0x88a8", val)
		}
		return &flowtable.PushVLAN{EthType: uint16(v)}, nil
	case "dec_ttl":
		d := &flowtable.DecTTL{}
		if e.Delim == '(' {
			for _, x := range strings.Split(val, ",") {
				id, err := ofptext.ParseNum(strings.TrimSpace(x), 16)
				if err != nil {
					return nil, wrap(err)
				}
				d.IDs = append(d.IDs, uint16(id))
			}
			if len(d.IDs) == 0 {
				return nil, bad("dec_ttl_cnt_ids: expected at least one controller id")
			}
		}
		return d, nil
	case "ct":
		return parseCT(e, o)
	case "ct_clear":
		return &flowtable.CTClear{}, nil
	case "conjunction":
		var id, k, n uint64
		is, rest, ok1 := strings.Cut(val, ",")
		ks, ns, ok2 := strings.Cut(rest, "/")
		var err1, err2, err3 error
		id, err1 = ofptext.ParseNum(strings.TrimSpace(is), 32)
		k, err2 = ofptext.ParseNum(strings.TrimSpace(ks), 8)
		n, err3 = ofptext.ParseNum(strings.TrimSpace(ns), 8)
		if !ok1 || !ok2 || err1 != nil || err2 != nil || err3 != nil {
			return nil, bad("\"conjunction\" syntax is \"conjunction(id,i/n)\"")
		}
		if n < 2 || n > 64 {
			return nil, bad("number of clauses %d out of range 2..64", n)
		}
		if k < 1 || k > n {
			return nil, bad("clause index %d out of range 1..%d", k, n)
		}
		return &flowtable.Conjunction{ID: uint32(id), Clause: uint8(k), NClauses: uint8(n)}, nil
	case "group":
		id, err := ofptext.ParseNum(val, 32)
		if err != nil {
			return nil, wrap(err)
		}
		return &flowtable.Group{ID: uint32(id)}, nil
	case "note":
		var data []byte
		for _, x := range strings.FieldsFunc(val, func(r rune) bool { return r == '.' }) {
			for len(x) > 0 {
				n := 2
				if len(x) < 2 {
					n = len(x)
				}
				b, err := strconv.ParseUint(x[:n], 16, 8)
				if err != nil {
					return nil, bad("%q: invalid hex in note", val)
				}
				data = append(data, byte(b))
				x = x[n:]
			}
		}
		return &flowtable.Note{Data: data}, nil
	case "exit":
		return &flowtable.Exit{}, nil
	case "set_queue":
		id, err := ofptext.ParseNum(val, 32)
		if err != nil {
			return nil, wrap(err)
		}
		return &flowtable.SetQueue{ID: uint32(id)}, nil
	case "pop_queue":
		return &flowtable.PopQueue{}, nil
	case "fin_timeout":
		ft := &flowtable.FinTimeout{}
		sc := ofptext.Scanner{S: val, Base: e.ValPos}
		for {
			x, ok := sc.Next()
			if !ok {
				break
			}
			v, err := ofptext.ParseNum(x.Value, 16)
			if err != nil {
				return nil, ofptext.ErrAt(x.ValPos, x.Key, "%v", err)
			}
			switch x.Key {
			case "idle_timeout":
				ft.IdleTimeout = uint16(v)
			case "hard_timeout":
				ft.HardTimeout = uint16(v)
			default:
				return nil, ofptext.ErrAt(x.KeyPos, x.Key, "unknown fin_timeout argument")
			}
		}
		return ft, nil
	case "learn":
		return parseLearn(e, o)
	}
	return nil, ofptext.ErrAt(e.KeyPos, key, "unknown action %q", key)
}

func parseController(e ofptext.KV, bad func(string, ...any) error) (flowtable.Action, error) {
	c := &flowtable.Controller{MaxLen: 0xffff, Reason: 1}
	switch e.Delim {
	case 0:
		c.Short = true
		return c, nil
	case ':':
		n, err := ofptext.ParseNum(e.Value, 16)
		if err != nil {
			return nil, bad("%v", err)
		}
		c.MaxLen, c.Short = uint16(n), true
		return c, nil
	}
	sc := ofptext.Scanner{S: e.Value, Base: e.ValPos}
	for {
		x, ok := sc.Next()
		if !ok {
			break
		}
		switch x.Key {
		case "reason":
			found := false
			for i, n := range ofptext.ReasonNames {
				if n == x.Value {
					c.Reason, found = uint8(i), true
				}
			}
			if !found {
				return nil, ofptext.ErrAt(x.ValPos, "reason", "unknown reason %q", x.Value)
			}
		case "max_len":
			n, err := ofptext.ParseNum(x.Value, 16)
			if err != nil {
				return nil, ofptext.ErrAt(x.ValPos, "max_len", "%v", err)
			}
			c.MaxLen = uint16(n)
		case "id":
			n, err := ofptext.ParseNum(x.Value, 16)
			if err != nil {
				return nil, ofptext.ErrAt(x.ValPos, "id", "%v", err)
			}
			c.ControllerID = uint16(n)
		case "userdata":
			for _, h := range strings.Split(x.Value, ".") {
				b, err := strconv.ParseUint(h, 16, 8)
				if err != nil {
					return nil, ofptext.ErrAt(x.ValPos, "userdata", "%q: invalid hex", x.Value)
				}
				c.UserData = append(c.UserData, byte(b))
			}
		case "pause":
			c.Pause = true
		case "meter_id":
			n, err := ofptext.ParseNum(x.Value, 32)
			if err != nil {
				return nil, ofptext.ErrAt(x.ValPos, "meter_id", "%v", err)
			}
			c.MeterID = uint32(n)
		default:
			return nil, ofptext.ErrAt(x.KeyPos, x.Key, "unknown controller argument")
		}
	}
	return c, nil
}

func parseSetField(val string, o *ParseOptions, bad func(string, ...any) error, wrap func(error) error) (flowtable.Action, error) {
	vs, name, ok := strings.Cut(val, "->")
	if !ok {
		return nil, bad("%q: missing `->'", val)
	}
	if name == "" {
		return nil, bad("%q: missing field name following `->'", val)
	}
	f := flowtable.FieldByName(name)
	if f == nil {
		f = flowtable.FieldByNXM(strings.TrimSuffix(name, "[]"))
	}
	if f == nil {
		return nil, bad("%s is not a valid OXM field name", name)
	}
	f, err := o.TLV.Resolve(f)
	if err != nil {
		return nil, wrap(err)
	}
	if !f.Writable {
		return nil, bad("%s is read-only", f.Name)
	}
	v, m, err := ParseFieldValue(f, vs, o.Ports)
	if err != nil {
		return nil, wrap(err)
	}
	if m == nil {
		m = fullMask(f)
	}
	return &flowtable.SetField{Field: f, Value: v, Mask: m, Raw: flowtable.RawSetField}, nil
}

// fullMask returns the all-bits mask of f (only its Bits significant bits).
func fullMask(f *flowtable.Field) []byte {
	if f.Wide() {
		return ofptext.OnesOf(f.Bytes)
	}
	all := uint64(1)<<uint(f.Bits) - 1
	if f.Bits >= 64 {
		all = ^uint64(0)
	}
	return ofptext.U64Bytes(all, f.Bytes)
}

// parseLoad parses load:VALUE->DST[ofs..end] into a masked set-field.
func parseLoad(val string, o *ParseOptions, bad func(string, ...any) error, wrap func(error) error) (flowtable.Action, error) {
	vs, ds, ok := strings.Cut(val, "->")
	if !ok {
		return nil, bad("%q: missing `->'", val)
	}
	dst, err := ofptext.ParseSubfield(ds, o.TLV)
	if err != nil {
		return nil, wrap(err)
	}
	if !dst.Field.Writable {
		return nil, bad("%s is read-only", dst.Field.Name)
	}
	imm, err := ofptext.ParseIntBytes(vs, (dst.NBits+7)/8)
	if err != nil {
		return nil, bad("%s: value does not fit in %d bits", vs, dst.NBits)
	}
	if dst.NBits%8 != 0 && imm[0]>>uint(dst.NBits%8) != 0 {
		return nil, bad("%s: value does not fit in %d bits", vs, dst.NBits)
	}
	value, mask := placeBits(dst, imm)
	return &flowtable.SetField{Field: dst.Field, Value: value, Mask: mask, Raw: flowtable.RawLoad}, nil
}

// placeBits shifts an immediate of r.NBits bits into position r.Ofs of a
// value of the field's width, and returns the value and the mask of the
// range.
func placeBits(r flowtable.FieldRange, imm []byte) (value, mask []byte) {
	n := r.Field.Bytes
	value, mask = make([]byte, n), make([]byte, n)
	for i := 0; i < r.NBits; i++ {
		src := len(imm) - 1 - i/8
		bitOn := src >= 0 && imm[src]&(1<<uint(i%8)) != 0
		pos := r.Ofs + i
		dst := n - 1 - pos/8
		mask[dst] |= 1 << uint(pos%8)
		if bitOn {
			value[dst] |= 1 << uint(pos%8)
		}
	}
	return value, mask
}

func parseCT(e ofptext.KV, o *ParseOptions) (flowtable.Action, error) {
	ct := &flowtable.CT{Table: flowtable.TableNone}
	if e.Delim == 0 {
		return ct, nil
	}
	sc := ofptext.Scanner{S: e.Value, Base: e.ValPos}
	for {
		x, ok := sc.Next()
		if !ok {
			break
		}
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
			r, err := ofptext.ParseSubfield(x.Value, o.TLV)
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
			inner, err := parseActions(x.Value, x.ValPos, o, nil)
			if err != nil {
				return nil, err
			}
			for _, a := range inner {
				sf, ok := a.(*flowtable.SetField)
				if !ok || (sf.Field != flowtable.FieldCtMark && sf.Field != flowtable.FieldCtLabel) {
					return nil, ofptext.ErrAt(x.ValPos, "exec", "only set_field/load of ct_mark or ct_label may be used in ct(exec(...)), not %s", a.Name())
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

// parseNAT parses nat[(src|dst[=ADDR[-ADDR][:PORT[-PORT]]][,persistent][,hash][,random])].
func parseNAT(x ofptext.KV) (*flowtable.NAT, error) {
	n := &flowtable.NAT{}
	if x.Delim != '(' {
		return n, nil
	}
	bad := func(format string, args ...any) error { return ofptext.ErrAt(x.ValPos, "nat", format, args...) }
	for i, part := range splitTop(x.Value) {
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

func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
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

// parseLearn parses learn(...) (ovs-actions(7)).
func parseLearn(e ofptext.KV, o *ParseOptions) (flowtable.Action, error) {
	l := &flowtable.Learn{Table: 1, Priority: flowtable.DefaultPriority}
	for _, part := range splitTop(e.Value) {
		part = strings.TrimSpace(part)
		pos := e.ValPos + strings.Index(e.Value, part)
		bad := func(format string, args ...any) error { return ofptext.ErrAt(pos, "learn", format, args...) }
		k, v, hasVal := strings.Cut(part, "=")
		num := func(bits int) (uint64, error) {
			x, err := ofptext.ParseNum(v, bits)
			if err != nil {
				return 0, bad("%s: %v", k, err)
			}
			return x, nil
		}
		var err error
		var x uint64
		switch {
		case k == "table" && hasVal:
			x, err = num(8)
			l.Table = uint8(x)
		case k == "priority" && hasVal:
			x, err = num(16)
			l.Priority = uint16(x)
		case k == "idle_timeout" && hasVal:
			x, err = num(16)
			l.IdleTimeout = uint16(x)
		case k == "hard_timeout" && hasVal:
			x, err = num(16)
			l.HardTimeout = uint16(x)
		case k == "fin_idle_timeout" && hasVal:
			x, err = num(16)
			l.FinIdle = uint16(x)
		case k == "fin_hard_timeout" && hasVal:
			x, err = num(16)
			l.FinHard = uint16(x)
		case k == "cookie" && hasVal:
			l.Cookie, err = num(64)
		case k == "limit" && hasVal:
			x, err = num(32)
			l.Limit = uint32(x)
		case k == "send_flow_rem" && !hasVal:
			l.Flags |= flowtable.LearnSendFlowRem
		case k == "delete_learned" && !hasVal:
			l.Flags |= flowtable.LearnDeleteLearned
		case k == "result_dst" && hasVal:
			r, perr := ofptext.ParseSubfield(v, o.TLV)
			if perr != nil {
				return nil, bad("%v", perr)
			}
			l.ResultDst = r
			l.Flags |= flowtable.LearnWriteResult
		default:
			spec, perr := parseLearnSpec(part, o)
			if perr != nil {
				return nil, bad("%v", perr)
			}
			l.Specs = append(l.Specs, spec)
		}
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

func parseLearnSpec(s string, o *ParseOptions) (flowtable.LearnSpec, error) {
	var sp flowtable.LearnSpec
	switch {
	case strings.HasPrefix(s, "load:"):
		sp.Kind = flowtable.LearnLoad
		src, dst, ok := strings.Cut(s[5:], "->")
		if !ok {
			return sp, fmt.Errorf("%q: missing `->'", s)
		}
		d, err := ofptext.ParseSubfield(dst, o.TLV)
		if err != nil {
			return sp, err
		}
		sp.Dst, sp.NBits = d, d.NBits
		return sp, learnSource(&sp, s, src, o)
	case strings.HasPrefix(s, "output:"):
		r, err := ofptext.ParseSubfield(s[7:], o.TLV)
		if err != nil {
			return sp, err
		}
		sp.Kind, sp.Src, sp.NBits = flowtable.LearnOutput, r, r.NBits
		return sp, nil
	}
	sp.Kind = flowtable.LearnMatch
	dstStr, srcStr, hasSrc := strings.Cut(s, "=")
	if hasSrc && !strings.Contains(dstStr, "[") {
		// field=value: an immediate match on the whole field.
		f := flowtable.FieldByName(dstStr)
		if f == nil {
			f = flowtable.FieldByNXM(dstStr)
		}
		if f == nil {
			return sp, fmt.Errorf("%s: unknown field", dstStr)
		}
		f, err := o.TLV.Resolve(f)
		if err != nil {
			return sp, err
		}
		if !strings.Contains(srcStr, "[") {
			v, _, err := ParseFieldValue(f, srcStr, o.Ports)
			if err != nil {
				return sp, err
			}
			sp.Dst, sp.NBits = flowtable.Whole(f), f.Bits
			sp.Imm = trimImm(v, f.Bits)
			sp.ImmText = true
			return sp, nil
		}
	}
	d, err := ofptext.ParseSubfield(dstStr, o.TLV)
	if err != nil {
		return sp, err
	}
	sp.Dst, sp.NBits = d, d.NBits
	if !hasSrc {
		sp.Src = d
		return sp, nil
	}
	return sp, learnSource(&sp, s, srcStr, o)
}

// learnSource parses the source of a learn spec whose destination is set:
// an immediate number or a subfield as wide as the destination.
func learnSource(sp *flowtable.LearnSpec, spec, src string, o *ParseOptions) error {
	if src != "" && src[0] >= '0' && src[0] <= '9' {
		imm, err := ofptext.ParseIntBytes(src, (sp.Dst.NBits+7)/8)
		if err != nil {
			return err
		}
		sp.Imm = imm
		return nil
	}
	r, err := ofptext.ParseSubfield(src, o.TLV)
	if err != nil {
		return err
	}
	if r.NBits != sp.Dst.NBits {
		return fmt.Errorf("%q: source is %d bits, destination %d bits", spec, r.NBits, sp.Dst.NBits)
	}
	sp.Src = r
	return nil
}

// trimImm keeps the (bits+7)/8 low-order bytes of a field value.
func trimImm(v []byte, bits int) []byte {
	n := (bits + 7) / 8
	if n >= len(v) {
		return v
	}
	return v[len(v)-n:]
}

// checkActions validates an action list against its flow (the checks
// live in the flow model, shared with the OpenFlow channel) and positions
// the error.
func checkActions(fl *flowtable.Flow, acts []flowtable.Action, pos int) error {
	if err := fl.Validate(); err != nil {
		ve := err.(*flowtable.ValidationError)
		return ofptext.ErrAt(pos, ve.Field, "%s", ve.Msg)
	}
	return nil
}
