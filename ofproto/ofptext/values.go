package ofptext

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
)

// parseInt parses an integer as ovs-ofctl does for field values: 0x... is
// hexadecimal of any length, anything else decimal. The result is
// big-endian in n bytes.
func ParseIntBytes(s string, n int) ([]byte, error) {
	var v big.Int
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		if len(s) == 2 {
			return nil, fmt.Errorf("%q: not a number", s)
		}
		if _, ok := v.SetString(s[2:], 16); !ok {
			return nil, fmt.Errorf("%q: not a hexadecimal number", s)
		}
	default:
		if _, ok := v.SetString(s, 10); !ok || v.Sign() < 0 {
			return nil, fmt.Errorf("%q: not a number", s)
		}
	}
	if v.BitLen() > n*8 {
		return nil, fmt.Errorf("%q: value too large for a %d-byte field", s, n)
	}
	out := make([]byte, n)
	v.FillBytes(out)
	return out, nil
}

func U64Bytes(v uint64, n int) []byte {
	out := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		out[i] = byte(v)
		v >>= 8
	}
	return out
}

// ParseFieldValue parses "value[/mask]" for field f as ovs-ofctl does
// (lib/meta-flow.c mf_parse). mask is nil for an exact match.
func ParseFieldValue(f *flowtable.Field, s string, ports map[string]uint32) (value, mask []byte, err error) {
	valStr, maskStr, hasMask := strings.Cut(s, "/")
	if hasMask && !f.Maskable {
		// ovs-ofctl still accepts an all-ones mask; anything else is rejected.
		if f.Format != flowtable.FmtIPv4 && f.Format != flowtable.FmtIPv6 && f.Format != flowtable.FmtEthernet {
			m, err := ParseIntBytes(maskStr, f.Bytes)
			if err == nil && IsFullFieldMask(f, m) {
				hasMask = false
			} else {
				return nil, nil, fmt.Errorf("%s: this field does not support masking", f.Name)
			}
		}
	}
	switch f.Format {
	case flowtable.FmtEthernet:
		value, err = ParseMAC(valStr)
		if err != nil {
			return nil, nil, err
		}
		if hasMask {
			if mask, err = ParseMAC(maskStr); err != nil {
				return nil, nil, err
			}
		}
	case flowtable.FmtIPv4:
		var v, m uint32
		v, m, err = ParseIPv4Masked(s)
		if err != nil {
			return nil, nil, err
		}
		value = U64Bytes(uint64(v), 4)
		if m != 0xffffffff {
			mask = U64Bytes(uint64(m), 4)
		}
	case flowtable.FmtIPv6:
		var v, m []byte
		v, m, err = ParseIPv6Masked(s)
		if err != nil {
			return nil, nil, err
		}
		value = v
		if !AllOnes(m) {
			mask = m
		}
	case flowtable.FmtPort:
		if hasMask {
			return nil, nil, fmt.Errorf("%s: this field does not support masking", f.Name)
		}
		p, err := ParsePortName(valStr, ports)
		if err != nil {
			return nil, nil, err
		}
		value = U64Bytes(uint64(p), f.Bytes)
	case flowtable.FmtCtState:
		return ParseFlagsField(f, s, CtStateNames)
	case flowtable.FmtTCPFlags:
		return ParseFlagsField(f, s, TCPFlagNames)
	case flowtable.FmtTunFlags:
		return ParseFlagsField(f, s, TunFlagNames)
	case flowtable.FmtFrag:
		var v, m uint64
		switch valStr {
		case "no":
			v, m = 0, 1
		case "yes":
			v, m = 1, 1
		case "first":
			v, m = 1, 3
		case "later":
			v, m = 3, 3
		case "not_later":
			v, m = 0, 2
		default:
			return nil, nil, fmt.Errorf("%s: %q is not one of no, yes, first, later, not_later", f.Name, valStr)
		}
		return []byte{byte(v)}, []byte{byte(m)}, nil
	default:
		value, err = ParseIntBytes(valStr, f.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if hasMask {
			if mask, err = ParseIntBytes(maskStr, f.Bytes); err != nil {
				return nil, nil, fmt.Errorf("%s mask: %w", f.Name, err)
			}
		}
	}
	if err := checkWidth(f, value); err != nil {
		return nil, nil, err
	}
	if mask != nil {
		if err := checkWidth(f, mask); err != nil {
			return nil, nil, err
		}
		for i := range value {
			if value[i]&^mask[i] != 0 {
				// OVS masks the value silently for bitwise fields.
				value[i] &= mask[i]
			}
		}
	}
	return value, mask, nil
}

// checkWidth rejects values with bits beyond the field's width (e.g.
// dl_vlan=4096).
func checkWidth(f *flowtable.Field, v []byte) error {
	if f.Wide() || f.Bits >= f.Bytes*8 {
		return nil
	}
	x := BytesU64(v)
	if x>>uint(f.Bits) != 0 {
		return fmt.Errorf("%s: value %#x does not fit in %d bits", f.Name, x, f.Bits)
	}
	return nil
}

func ParseMAC(s string) ([]byte, error) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return nil, fmt.Errorf("%q: invalid Ethernet address", s)
	}
	return []byte(hw), nil
}

// ParseIPv4Masked parses a.b.c.d[/len|/m.m.m.m].
func ParseIPv4Masked(s string) (v, m uint32, err error) {
	addrStr, maskStr, hasMask := strings.Cut(s, "/")
	a, err := netip.ParseAddr(addrStr)
	if err != nil || !a.Is4() {
		return 0, 0, fmt.Errorf("%q: invalid IP address", s)
	}
	v = binary.BigEndian.Uint32(a.AsSlice())
	m = 0xffffffff
	if hasMask {
		if n, err := strconv.Atoi(maskStr); err == nil {
			if n < 0 || n > 32 {
				return 0, 0, fmt.Errorf("%q: invalid prefix length", s)
			}
			m = uint32(0xffffffff) << uint(32-n)
			if n == 0 {
				m = 0
			}
		} else {
			ma, err := netip.ParseAddr(maskStr)
			if err != nil || !ma.Is4() {
				return 0, 0, fmt.Errorf("%q: invalid IP mask", s)
			}
			m = binary.BigEndian.Uint32(ma.AsSlice())
		}
	}
	return v & m, m, nil
}

func ParseIPv6Masked(s string) (v, m []byte, err error) {
	addrStr, maskStr, hasMask := strings.Cut(s, "/")
	a, err := netip.ParseAddr(addrStr)
	if err != nil || !a.Is6() {
		return nil, nil, fmt.Errorf("%q: invalid IPv6 address", s)
	}
	v = a.AsSlice()
	m = OnesOf(16)
	if hasMask {
		if n, err := strconv.Atoi(maskStr); err == nil {
			if n < 0 || n > 128 {
				return nil, nil, fmt.Errorf("%q: invalid prefix length", s)
			}
			m = make([]byte, 16)
			for i := 0; i < n; i++ {
				m[i/8] |= 0x80 >> uint(i%8)
			}
		} else {
			ma, err := netip.ParseAddr(maskStr)
			if err != nil || !ma.Is6() {
				return nil, nil, fmt.Errorf("%q: invalid IPv6 mask", s)
			}
			m = ma.AsSlice()
		}
	}
	for i := range v {
		v[i] &= m[i]
	}
	return v, m, nil
}

// ParsePortName parses a port number, a reserved name, or a port name
// (optionally quoted) known in ports.
func ParsePortName(s string, ports map[string]uint32) (uint32, error) {
	name := s
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		uq, err := strconv.Unquote(s)
		if err == nil {
			name = uq
		}
	}
	if p, ok := ports[name]; ok {
		return p, nil
	}
	if name == s {
		if p, ok := flowtable.ParsePort(s); ok {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%s: invalid or unknown port", s)
}

// ParseFlagsField parses "+a-b", "a|b" or "value[/mask]" for flag fields.
func ParseFlagsField(f *flowtable.Field, s string, names []FlagName) (value, mask []byte, err error) {
	if s == "" {
		return nil, nil, fmt.Errorf("%s: missing value", f.Name)
	}
	if s[0] >= '0' && s[0] <= '9' {
		valStr, maskStr, hasMask := strings.Cut(s, "/")
		v, err := ParseIntBytes(valStr, f.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if !hasMask {
			if err := checkFlagBits(f, s, v, nil, names); err != nil {
				return nil, nil, err
			}
			return v, nil, nil
		}
		m, err := ParseIntBytes(maskStr, f.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		for i := range v {
			v[i] &= m[i]
		}
		if err := checkFlagBits(f, s, v, m, names); err != nil {
			return nil, nil, err
		}
		return v, m, nil
	}
	var v, m uint64
	if s[0] != '+' && s[0] != '-' {
		// name|name: exact match on the listed flags, all named bits.
		for _, tok := range strings.Split(s, "|") {
			bit, ok := flagBit(tok, names)
			if !ok {
				return nil, nil, fmt.Errorf("%s: unknown flag %q", f.Name, tok)
			}
			v |= bit
		}
		for _, n := range names {
			m |= n.Bit
		}
		return U64Bytes(v, f.Bytes), U64Bytes(m, f.Bytes), nil
	}
	for i := 0; i < len(s); {
		sign := s[i]
		if sign != '+' && sign != '-' {
			return nil, nil, fmt.Errorf("%s: %q: flags must start with + or -", f.Name, s)
		}
		j := i + 1
		for j < len(s) && s[j] != '+' && s[j] != '-' {
			j++
		}
		bit, ok := flagBit(s[i+1:j], names)
		if !ok {
			return nil, nil, fmt.Errorf("%s: unknown flag %q", f.Name, s[i+1:j])
		}
		if m&bit != 0 {
			return nil, nil, fmt.Errorf("%s: flag %q given twice", f.Name, s[i+1:j])
		}
		m |= bit
		if sign == '+' {
			v |= bit
		}
		i = j
	}
	return U64Bytes(v, f.Bytes), U64Bytes(m, f.Bytes), nil
}

// checkFlagBits refuses a numeric value or mask with bits no flag of the
// field names, as OVS does ("0x101: unknown ct_state flag(s)"): such a
// match could never be printed back.
func checkFlagBits(f *flowtable.Field, s string, value, mask []byte, names []FlagName) error {
	var known uint64
	for _, n := range names {
		known |= n.Bit
	}
	for _, b := range [][]byte{value, mask} {
		if b == nil {
			continue
		}
		if extra := BytesU64(b) &^ known; extra != 0 {
			return fmt.Errorf("%s: %s: unknown flag(s) %#x", f.Name, s, extra)
		}
	}
	return nil
}

func flagBit(name string, names []FlagName) (uint64, bool) {
	for _, n := range names {
		if n.Name == name {
			return n.Bit, true
		}
	}
	return 0, false
}

// ParseSubfield parses NXM_NX_REG0[0..15], NXM_NX_REG0[3], NXM_NX_REG0[],
// reg0[0..15] or a bare field name (the whole field).
func ParseSubfield(s string, tlv *flowtable.TLVMap) (flowtable.FieldRange, error) {
	name, rng, hasRange := strings.Cut(s, "[")
	f := flowtable.FieldByNXM(name)
	if f == nil {
		f = flowtable.FieldByName(name)
	}
	if f == nil {
		return flowtable.FieldRange{}, fmt.Errorf("%s: unknown field", name)
	}
	f, err := tlv.Resolve(f)
	if err != nil {
		return flowtable.FieldRange{}, err
	}
	r := flowtable.Whole(f)
	if hasRange {
		if !strings.HasSuffix(rng, "]") {
			return r, fmt.Errorf("%s: missing ']'", s)
		}
		rng = rng[:len(rng)-1]
		if rng != "" {
			a, b, two := strings.Cut(rng, "..")
			lo, err := strconv.Atoi(a)
			if err != nil {
				return r, fmt.Errorf("%s: bad bit index %q", s, a)
			}
			hi := lo
			if two {
				if hi, err = strconv.Atoi(b); err != nil {
					return r, fmt.Errorf("%s: bad bit index %q", s, b)
				}
			}
			if hi < lo {
				return r, fmt.Errorf("%s: bit range is backwards", s)
			}
			r.Ofs, r.NBits = lo, hi-lo+1
		}
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	return r, nil
}
