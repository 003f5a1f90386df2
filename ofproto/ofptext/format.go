package ofptext

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
)

// Version is the OpenFlow version whose dump a printout imitates.
type Version uint8

const (
	OF10 Version = 0x01
	OF13 Version = 0x04
	OF15 Version = 0x06
)

// PrintOptions control printing.
type PrintOptions struct {
	Version Version           // default OF13
	Ports   map[uint32]string // port names to print instead of numbers
	Stats   bool              // not used by --no-stats printouts
	TLV     *flowtable.TLVMap // to print tun_metadata matches
}

// Ver is the version to imitate (OpenFlow 1.3 when unset).
func (o *PrintOptions) Ver() Version {
	if o == nil || o.Version == 0 {
		return OF13
	}
	return o.Version
}

// CHex prints like C's "%#x": "0" for zero, "0x..." otherwise.
func CHex(v uint64) string {
	if v == 0 {
		return "0"
	}
	return "0x" + strconv.FormatUint(v, 16)
}

func IPString(v uint32) string {
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], v)
	return netip.AddrFrom4(a).String()
}

// IPMaskedString is OVS ip_format_masked: a.b.c.d, a.b.c.d/len for CIDR
// masks, a.b.c.d/m.m.m.m otherwise.
func IPMaskedString(v, m uint32) string {
	s := IPString(v)
	if m == 0xffffffff {
		return s
	}
	ones := 0
	for x := m; x&0x80000000 != 0; x <<= 1 {
		ones++
	}
	if ones < 32 && m<<uint(ones) == 0 {
		return s + "/" + strconv.Itoa(ones)
	}
	return s + "/" + IPString(m)
}

// IPv6String prints an IPv6 address as OVS does (glibc inet_ntop): like
// Go's netip, except that an IPv4-compatible address (96 zero bits, then a
// nonzero second-to-last group) ends in dotted quad, e.g. "::255.255.0.0".
func IPv6String(a [16]byte) string {
	if [12]byte(a[:12]) == [12]byte{} && (a[12] != 0 || a[13] != 0) {
		return "::" + netip.AddrFrom4([4]byte(a[12:])).String()
	}
	return netip.AddrFrom16(a).String()
}

// IPv6MaskedString is OVS ipv6_format_masked: the address, then /len for
// a CIDR mask or /mask otherwise.
func IPv6MaskedString(val, msk []byte) string {
	s := IPv6String([16]byte(val))
	if AllOnes(msk) {
		return s
	}
	ones, cidr := 0, true
	for _, c := range msk {
		for bit := 7; bit >= 0; bit-- {
			if c&(1<<uint(bit)) != 0 {
				if !cidr {
					return s + "/" + IPv6String([16]byte(msk))
				}
				ones++
			} else {
				cidr = false
			}
		}
	}
	return s + "/" + strconv.Itoa(ones)
}

func EthString(a []byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", a[0], a[1], a[2], a[3], a[4], a[5])
}

func EthMaskedString(val, msk []byte) string {
	if msk == nil || AllOnes(msk) {
		return EthString(val)
	}
	return EthString(val) + "/" + EthString(msk)
}

func AllZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func AllOnes(b []byte) bool {
	for _, c := range b {
		if c != 0xff {
			return false
		}
	}
	return true
}

// PutHex is OVS ds_put_hex: 0x followed by the bytes without leading zero
// bytes, or "0".
func PutHex(b *strings.Builder, v []byte) {
	printed := false
	for _, c := range v {
		if c != 0 || printed {
			if !printed {
				fmt.Fprintf(b, "0x%x", c)
			} else {
				fmt.Fprintf(b, "%02x", c)
			}
			printed = true
		}
	}
	if !printed {
		b.WriteByte('0')
	}
}

// FlagName names one bit of a flags field.
type FlagName struct {
	Bit  uint64
	Name string
}

var CtStateNames = []FlagName{{0x01, "new"}, {0x02, "est"}, {0x04, "rel"}, {0x08, "rpl"},
	{0x10, "inv"}, {0x20, "trk"}, {0x40, "snat"}, {0x80, "dnat"}}

var TCPFlagNames = []FlagName{{0x001, "fin"}, {0x002, "syn"}, {0x004, "rst"}, {0x008, "psh"},
	{0x010, "ack"}, {0x020, "urg"}, {0x040, "ece"}, {0x080, "cwr"}, {0x100, "ns"},
	{0x200, "[200]"}, {0x400, "[400]"}, {0x800, "[800]"}}

var TunFlagNames = []FlagName{{0x1, "oam"}}

// FormatFlags is OVS format_flags: names joined by del.
func FormatFlags(b *strings.Builder, val uint64, names []FlagName, del byte) {
	first := true
	for _, n := range names {
		if val&n.Bit != 0 {
			if !first {
				b.WriteByte(del)
			}
			b.WriteString(n.Name)
			first = false
			val &^= n.Bit
		}
	}
	if val != 0 {
		if !first {
			b.WriteByte(del)
		}
		fmt.Fprintf(b, "0x%x", val)
	}
}

// FormatFlagsMasked is OVS format_flags_masked: +name/-name for each
// masked bit; a mask wider than the named bits prints value/mask in hex.
func FormatFlagsMasked(b *strings.Builder, val, msk uint64, names []FlagName, maxMask uint64) {
	if msk == maxMask {
		if val == 0 {
			b.WriteByte('0')
			return
		}
		FormatFlags(b, val, names, '|')
		return
	}
	if msk == 0 {
		b.WriteString("0/0")
		return
	}
	for _, n := range names {
		if msk&n.Bit != 0 {
			if val&n.Bit != 0 {
				b.WriteByte('+')
			} else {
				b.WriteByte('-')
			}
			b.WriteString(n.Name)
			msk &^= n.Bit
		}
	}
	if msk != 0 {
		fmt.Fprintf(b, "%#x/%#x", val&msk, msk)
	}
}

func FragString(val, msk uint64) string {
	switch msk & 3 {
	case 3:
		switch {
		case val&1 != 0 && val&2 != 0:
			return "later"
		case val&1 != 0:
			return "first"
		case val&2 != 0:
			return "<error>"
		}
		return "no"
	case 1:
		if val&1 != 0 {
			return "yes"
		}
		return "no"
	case 2:
		if val&2 != 0 {
			return "later"
		}
		return "not_later"
	}
	return ""
}

func PortString(p uint32, o *PrintOptions) string {
	if o != nil && o.Ports != nil {
		if n, ok := o.Ports[p]; ok {
			return strconv.Quote(n)
		}
	}
	return flowtable.PortName(p)
}

var ReasonNames = []string{"no_match", "action", "invalid_ttl", "action_set", "group", "packet_out"}

func ReasonName(r uint8) string {
	if int(r) < len(ReasonNames) {
		return ReasonNames[r]
	}
	return strconv.Itoa(int(r))
}

// SubfieldString prints NXM_NX_REG0[0..15] style subfields (OVS
// mf_format_subfield): the NXM name when the field has one.
func SubfieldString(r flowtable.FieldRange) string {
	name := r.Field.NXM
	if name == "" {
		name = r.Field.OXM
	}
	if name == "" {
		name = r.Field.Name
	}
	switch {
	case r.Ofs == 0 && r.NBits == r.Field.Bits:
		return name + "[]"
	case r.NBits == 1:
		return fmt.Sprintf("%s[%d]", name, r.Ofs)
	}
	return fmt.Sprintf("%s[%d..%d]", name, r.Ofs, r.Ofs+r.NBits-1)
}

func IsFullFieldMask(f *flowtable.Field, mask []byte) bool {
	if f.Wide() {
		return AllOnes(mask)
	}
	var x uint64
	for _, c := range mask {
		x = x<<8 | uint64(c)
	}
	all := uint64(1)<<uint(f.Bits) - 1
	if f.Bits >= 64 {
		all = ^uint64(0)
	}
	return x == all
}

func BytesU64(v []byte) uint64 {
	var x uint64
	for _, c := range v {
		x = x<<8 | uint64(c)
	}
	return x
}

// FieldValueString formats value[/mask] of f as OVS mf_format does (mask
// nil: exact).
func FieldValueString(f *flowtable.Field, value, mask []byte) string {
	var b strings.Builder
	switch f.Format {
	case flowtable.FmtEthernet:
		return EthMaskedString(value, mask)
	case flowtable.FmtIPv4:
		m := uint32(0xffffffff)
		if mask != nil {
			m = uint32(BytesU64(mask))
		}
		return IPMaskedString(uint32(BytesU64(value)), m)
	case flowtable.FmtIPv6:
		if mask == nil {
			mask = OnesOf(16)
		}
		return IPv6MaskedString(value, mask)
	case flowtable.FmtCtState:
		m := uint64(0xffffffff)
		if mask != nil {
			m = BytesU64(mask)
		}
		FormatFlagsMasked(&b, BytesU64(value), m, CtStateNames, 0xffff)
		return b.String()
	case flowtable.FmtFrag:
		m := uint64(3)
		if mask != nil {
			m = BytesU64(mask)
		}
		return FragString(BytesU64(value), m)
	case flowtable.FmtTCPFlags, flowtable.FmtTunFlags:
		names := TCPFlagNames
		if f.Format == flowtable.FmtTunFlags {
			names = TunFlagNames
		}
		m := uint64(1)<<uint(f.Bits) - 1
		if mask != nil {
			m = BytesU64(mask)
		}
		FormatFlagsMasked(&b, BytesU64(value), m, names, 0)
		return b.String()
	case flowtable.FmtPort:
		if mask == nil {
			return flowtable.PortName(uint32(BytesU64(value)))
		}
		fallthrough
	case flowtable.FmtHex, flowtable.FmtDecimal:
		if f.Format == flowtable.FmtHex || f.Format == flowtable.FmtPort && mask != nil {
			PutHex(&b, value)
		} else {
			b.WriteString(strconv.FormatUint(BytesU64(value), 10))
		}
		if mask != nil {
			b.WriteByte('/')
			PutHex(&b, mask)
		}
	}
	return b.String()
}

func OnesOf(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xff
	}
	return b
}
