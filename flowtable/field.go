package flowtable

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Format says how a field's value is written in flow text (ovs-fields(7)
// "Formatting").
type Format uint8

const (
	FmtDecimal Format = iota
	FmtHex
	FmtEthernet
	FmtIPv4
	FmtIPv6
	FmtPort // an OpenFlow port number or name
	FmtCtState
	FmtFrag
	FmtTunFlags
	FmtTCPFlags
)

// Prereq is a field's prerequisite (ovs-fields(7) "Prerequisites"): what
// else a match must say before the field may be matched or set.
type Prereq uint8

const (
	PrereqNone Prereq = iota
	PrereqEthernet
	PrereqVLANVID
	PrereqIPv4
	PrereqIPv6
	PrereqIPAny
	PrereqARP
	PrereqMPLS
	PrereqTCP
	PrereqUDP
	PrereqSCTP
	PrereqL4 // TCP, UDP or SCTP (the generic tp_src/tp_dst)
	PrereqICMPv4
	PrereqICMPv6
	PrereqND
	PrereqNDSolicit
	PrereqNDAdvert
	PrereqCT // ct_nw_*, ct_tp_*: a tracked IP connection
)

var prereqNames = [...]string{"none", "Ethernet", "VLAN VID", "IPv4", "IPv6", "IPv4/IPv6", "ARP",
	"MPLS", "TCP", "UDP", "SCTP", "TCP/UDP/SCTP", "ICMPv4", "ICMPv6", "ND", "ND solicit", "ND advert", "CT"}

func (p Prereq) String() string { return prereqNames[p] }

// Field is one field of the flow key, as ovs-fields(7) describes it.
type Field struct {
	Name      string // the ovs-fields(7) name, e.g. "eth_src", "reg0"
	ExtraName string // the other name ovs-ofctl accepts, e.g. "dl_src"
	NXM       string // NXM name used in subfield syntax, e.g. "NXM_OF_ETH_SRC"
	OXM       string // OXM name, e.g. "OXM_OF_ETH_SRC"

	Bytes int  // width of a value on the wire and in text (mf_field n_bytes)
	Bits  int  // significant bits (mf_field n_bits)
	Off   int  // byte offset of the storage slot in Key
	Size  int  // bytes of the storage slot
	Shift uint // value = (slot >> Shift) & (1<<Bits - 1)

	Maskable bool
	Writable bool
	Prereq   Prereq
	Format   Format

	// TunMetadata is N+1 for tun_metadataN (0 otherwise). Its location in
	// the key is assigned by the TLV map, see TLVMap.Resolve.
	TunMetadata int
}

func (f *Field) String() string { return f.Name }

// IsTunMetadata reports whether f is one of tun_metadata0..63.
func (f *Field) IsTunMetadata() bool { return f.TunMetadata != 0 }

// Resolved reports whether the field has a location in the key (every field
// but an unmapped tun_metadataN).
func (f *Field) Resolved() bool { return f.Size > 0 }

// Wide reports whether the field's value does not fit in 64 bits.
func (f *Field) Wide() bool { return f.Bits > 64 || f.Size > 8 }

// lowMask returns a mask of the field's Bits low bits (fields up to 64 bits).
func (f *Field) lowMask() uint64 {
	if f.Bits >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(f.Bits) - 1
}

func loadSlot(k *Key, off, size int) uint64 {
	switch size {
	case 1:
		return uint64(k[off])
	case 2:
		return uint64(binary.BigEndian.Uint16(k[off:]))
	case 4:
		return uint64(binary.BigEndian.Uint32(k[off:]))
	case 8:
		return binary.BigEndian.Uint64(k[off:])
	}
	var v uint64
	for i := 0; i < size; i++ {
		v = v<<8 | uint64(k[off+i])
	}
	return v
}

func storeSlot(k *Key, off, size int, v uint64) {
	switch size {
	case 1:
		k[off] = byte(v)
	case 2:
		binary.BigEndian.PutUint16(k[off:], uint16(v))
	case 4:
		binary.BigEndian.PutUint32(k[off:], uint32(v))
	case 8:
		binary.BigEndian.PutUint64(k[off:], v)
	default:
		for i := size - 1; i >= 0; i-- {
			k[off+i] = byte(v)
			v >>= 8
		}
	}
}

// Uint64 returns the field's value in k (fields up to 64 bits).
func (f *Field) Uint64(k *Key) uint64 {
	return loadSlot(k, f.Off, f.Size) >> f.Shift & f.lowMask()
}

// SetUint64 stores v (truncated to the field's width) into k, leaving the
// other bits of the slot alone.
func (f *Field) SetUint64(k *Key, v uint64) {
	m := f.lowMask() << f.Shift
	s := loadSlot(k, f.Off, f.Size)
	storeSlot(k, f.Off, f.Size, s&^m|(v<<f.Shift)&m)
}

// Value returns the field's value in k as big-endian bytes of width Bytes.
func (f *Field) Value(k *Key) []byte {
	out := make([]byte, f.Bytes)
	f.getBytes(k, out)
	return out
}

func (f *Field) getBytes(k *Key, out []byte) {
	if !f.Wide() {
		v := f.Uint64(k)
		for i := len(out) - 1; i >= 0; i-- {
			out[i] = byte(v)
			v >>= 8
		}
		return
	}
	// Wide fields are whole bytes: Bytes == Size.
	copy(out, k[f.Off:f.Off+f.Size])
}

// SetValue stores a big-endian value of width Bytes into k.
func (f *Field) SetValue(k *Key, v []byte) {
	if !f.Wide() {
		f.SetUint64(k, bytesToU64(v))
		return
	}
	copy(k[f.Off:f.Off+f.Size], v)
}

// slotMask returns, in key layout, the bits of k that the field occupies.
func (f *Field) slotMask() Key {
	var m Key
	f.SetValue(&m, onesBytes(f))
	return m
}

func onesBytes(f *Field) []byte {
	b := make([]byte, f.Bytes)
	if !f.Wide() {
		v := f.lowMask()
		for i := len(b) - 1; i >= 0; i-- {
			b[i] = byte(v)
			v >>= 8
		}
		return b
	}
	for i := range b {
		b[i] = 0xff
	}
	return b
}

func bytesToU64(v []byte) uint64 {
	var x uint64
	for _, c := range v {
		x = x<<8 | uint64(c)
	}
	return x
}

// Field registry.

var (
	fieldsByName = map[string]*Field{}
	fieldsByNXM  = map[string]*Field{}
	// Fields lists every field in registry order.
	Fields []*Field
)

func reg(f *Field) *Field {
	Fields = append(Fields, f)
	fieldsByName[f.Name] = f
	if f.ExtraName != "" {
		fieldsByName[f.ExtraName] = f
	}
	if f.NXM != "" {
		fieldsByNXM[f.NXM] = f
	}
	if f.OXM != "" {
		fieldsByNXM[f.OXM] = f
	}
	return f
}

// FieldByName returns the field called name (ovs-fields(7) name or its
// other name), or nil.
func FieldByName(name string) *Field { return fieldsByName[name] }

// FieldByNXM returns the field with NXM or OXM name n (e.g. "NXM_NX_REG0",
// "OXM_OF_ETH_SRC"), or nil.
func FieldByNXM(n string) *Field { return fieldsByNXM[n] }

// The fields. Names, widths, prerequisites and formats follow ovs-fields(7).
var (
	FieldInPort       = reg(&Field{Name: "in_port", NXM: "NXM_OF_IN_PORT", Bytes: 2, Bits: 16, Off: offInPort, Size: 4, Writable: true, Format: FmtPort})
	FieldInPortOXM    = reg(&Field{Name: "in_port_oxm", OXM: "OXM_OF_IN_PORT", Bytes: 4, Bits: 32, Off: offInPort, Size: 4, Writable: true, Format: FmtPort})
	FieldPktMark      = reg(&Field{Name: "pkt_mark", NXM: "NXM_NX_PKT_MARK", Bytes: 4, Bits: 32, Off: offPktMark, Size: 4, Maskable: true, Writable: true, Format: FmtHex})
	FieldActsetOutput = reg(&Field{Name: "actset_output", OXM: "ONFOXM_ET_ACTSET_OUTPUT", Bytes: 4, Bits: 32, Off: offActsetOutput, Size: 4, Format: FmtPort})
	FieldConjID       = reg(&Field{Name: "conj_id", NXM: "NXM_NX_CONJ_ID", Bytes: 4, Bits: 32, Off: offConjID, Size: 4, Format: FmtDecimal})
	FieldRecircID     = reg(&Field{Name: "recirc_id", NXM: "NXM_NX_RECIRC_ID", Bytes: 4, Bits: 32, Off: offRecircID, Size: 4, Format: FmtDecimal})
	FieldDpHash       = reg(&Field{Name: "dp_hash", NXM: "NXM_NX_DP_HASH", Bytes: 4, Bits: 32, Off: offDpHash, Size: 4, Maskable: true, Format: FmtHex})
	FieldMetadata     = reg(&Field{Name: "metadata", OXM: "OXM_OF_METADATA", Bytes: 8, Bits: 64, Off: offMetadata, Size: 8, Maskable: true, Writable: true, Format: FmtHex})
	FieldTunID        = reg(&Field{Name: "tun_id", ExtraName: "tunnel_id", NXM: "NXM_NX_TUN_ID", OXM: "OXM_OF_TUNNEL_ID", Bytes: 8, Bits: 64, Off: offTunID, Size: 8, Maskable: true, Writable: true, Format: FmtHex})
	FieldTunSrc       = reg(&Field{Name: "tun_src", NXM: "NXM_NX_TUN_IPV4_SRC", Bytes: 4, Bits: 32, Off: offTunSrc, Size: 4, Maskable: true, Writable: true, Format: FmtIPv4})
	FieldTunDst       = reg(&Field{Name: "tun_dst", NXM: "NXM_NX_TUN_IPV4_DST", Bytes: 4, Bits: 32, Off: offTunDst, Size: 4, Maskable: true, Writable: true, Format: FmtIPv4})
	FieldTunIPv6Src   = reg(&Field{Name: "tun_ipv6_src", NXM: "NXM_NX_TUN_IPV6_SRC", Bytes: 16, Bits: 128, Off: offTunIPv6Src, Size: 16, Maskable: true, Writable: true, Format: FmtIPv6})
	FieldTunIPv6Dst   = reg(&Field{Name: "tun_ipv6_dst", NXM: "NXM_NX_TUN_IPV6_DST", Bytes: 16, Bits: 128, Off: offTunIPv6Dst, Size: 16, Maskable: true, Writable: true, Format: FmtIPv6})
	FieldTunFlags     = reg(&Field{Name: "tun_flags", NXM: "NXM_NX_TUN_FLAGS", Bytes: 2, Bits: 1, Off: offTunFlags, Size: 2, Maskable: true, Writable: true, Format: FmtTunFlags})
	FieldCtState      = reg(&Field{Name: "ct_state", NXM: "NXM_NX_CT_STATE", Bytes: 4, Bits: 32, Off: offCtState, Size: 4, Maskable: true, Format: FmtCtState})
	FieldCtZone       = reg(&Field{Name: "ct_zone", NXM: "NXM_NX_CT_ZONE", Bytes: 2, Bits: 16, Off: offCtZone, Size: 2, Format: FmtHex})
	FieldCtMark       = reg(&Field{Name: "ct_mark", NXM: "NXM_NX_CT_MARK", Bytes: 4, Bits: 32, Off: offCtMark, Size: 4, Maskable: true, Writable: true, Format: FmtHex})
	FieldCtLabel      = reg(&Field{Name: "ct_label", NXM: "NXM_NX_CT_LABEL", Bytes: 16, Bits: 128, Off: offCtLabel, Size: 16, Maskable: true, Writable: true, Format: FmtHex})
	FieldCtNwProto    = reg(&Field{Name: "ct_nw_proto", NXM: "NXM_NX_CT_NW_PROTO", Bytes: 1, Bits: 8, Off: offCtNwProto, Size: 1, Prereq: PrereqCT, Format: FmtDecimal})
	FieldCtNwSrc      = reg(&Field{Name: "ct_nw_src", NXM: "NXM_NX_CT_NW_SRC", Bytes: 4, Bits: 32, Off: offCtNwSrc, Size: 4, Maskable: true, Prereq: PrereqCT, Format: FmtIPv4})
	FieldCtNwDst      = reg(&Field{Name: "ct_nw_dst", NXM: "NXM_NX_CT_NW_DST", Bytes: 4, Bits: 32, Off: offCtNwDst, Size: 4, Maskable: true, Prereq: PrereqCT, Format: FmtIPv4})
	FieldCtIPv6Src    = reg(&Field{Name: "ct_ipv6_src", NXM: "NXM_NX_CT_IPV6_SRC", Bytes: 16, Bits: 128, Off: offCtIPv6Src, Size: 16, Maskable: true, Prereq: PrereqCT, Format: FmtIPv6})
	FieldCtIPv6Dst    = reg(&Field{Name: "ct_ipv6_dst", NXM: "NXM_NX_CT_IPV6_DST", Bytes: 16, Bits: 128, Off: offCtIPv6Dst, Size: 16, Maskable: true, Prereq: PrereqCT, Format: FmtIPv6})
	FieldCtTpSrc      = reg(&Field{Name: "ct_tp_src", NXM: "NXM_NX_CT_TP_SRC", Bytes: 2, Bits: 16, Off: offCtTpSrc, Size: 2, Maskable: true, Prereq: PrereqCT, Format: FmtDecimal})
	FieldCtTpDst      = reg(&Field{Name: "ct_tp_dst", NXM: "NXM_NX_CT_TP_DST", Bytes: 2, Bits: 16, Off: offCtTpDst, Size: 2, Maskable: true, Prereq: PrereqCT, Format: FmtDecimal})

	FieldEthSrc    = reg(&Field{Name: "eth_src", ExtraName: "dl_src", NXM: "NXM_OF_ETH_SRC", OXM: "OXM_OF_ETH_SRC", Bytes: 6, Bits: 48, Off: offEthSrc, Size: 6, Maskable: true, Writable: true, Prereq: PrereqEthernet, Format: FmtEthernet})
	FieldEthDst    = reg(&Field{Name: "eth_dst", ExtraName: "dl_dst", NXM: "NXM_OF_ETH_DST", OXM: "OXM_OF_ETH_DST", Bytes: 6, Bits: 48, Off: offEthDst, Size: 6, Maskable: true, Writable: true, Prereq: PrereqEthernet, Format: FmtEthernet})
	FieldEthType   = reg(&Field{Name: "eth_type", ExtraName: "dl_type", NXM: "NXM_OF_ETH_TYPE", OXM: "OXM_OF_ETH_TYPE", Bytes: 2, Bits: 16, Off: offEthType, Size: 2, Prereq: PrereqEthernet, Format: FmtHex})
	FieldVlanTCI   = reg(&Field{Name: "vlan_tci", NXM: "NXM_OF_VLAN_TCI", Bytes: 2, Bits: 16, Off: offVlanTCI, Size: 2, Maskable: true, Writable: true, Prereq: PrereqEthernet, Format: FmtHex})
	FieldDlVlan    = reg(&Field{Name: "dl_vlan", Bytes: 2, Bits: 12, Off: offVlanTCI, Size: 2, Writable: true, Prereq: PrereqEthernet, Format: FmtDecimal})
	FieldVlanVID   = reg(&Field{Name: "vlan_vid", OXM: "OXM_OF_VLAN_VID", Bytes: 2, Bits: 13, Off: offVlanTCI, Size: 2, Maskable: true, Writable: true, Prereq: PrereqEthernet, Format: FmtDecimal})
	FieldDlVlanPCP = reg(&Field{Name: "dl_vlan_pcp", Bytes: 1, Bits: 3, Off: offVlanTCI, Size: 2, Shift: 13, Writable: true, Prereq: PrereqEthernet, Format: FmtDecimal})
	FieldVlanPCP   = reg(&Field{Name: "vlan_pcp", OXM: "OXM_OF_VLAN_PCP", Bytes: 1, Bits: 3, Off: offVlanTCI, Size: 2, Shift: 13, Writable: true, Prereq: PrereqVLANVID, Format: FmtDecimal})

	FieldIPv4Src   = reg(&Field{Name: "ip_src", ExtraName: "nw_src", NXM: "NXM_OF_IP_SRC", OXM: "OXM_OF_IPV4_SRC", Bytes: 4, Bits: 32, Off: offNwSrc, Size: 4, Maskable: true, Writable: true, Prereq: PrereqIPv4, Format: FmtIPv4})
	FieldIPv4Dst   = reg(&Field{Name: "ip_dst", ExtraName: "nw_dst", NXM: "NXM_OF_IP_DST", OXM: "OXM_OF_IPV4_DST", Bytes: 4, Bits: 32, Off: offNwDst, Size: 4, Maskable: true, Writable: true, Prereq: PrereqIPv4, Format: FmtIPv4})
	FieldIPv6Src   = reg(&Field{Name: "ipv6_src", NXM: "NXM_NX_IPV6_SRC", OXM: "OXM_OF_IPV6_SRC", Bytes: 16, Bits: 128, Off: offIPv6Src, Size: 16, Maskable: true, Writable: true, Prereq: PrereqIPv6, Format: FmtIPv6})
	FieldIPv6Dst   = reg(&Field{Name: "ipv6_dst", NXM: "NXM_NX_IPV6_DST", OXM: "OXM_OF_IPV6_DST", Bytes: 16, Bits: 128, Off: offIPv6Dst, Size: 16, Maskable: true, Writable: true, Prereq: PrereqIPv6, Format: FmtIPv6})
	FieldIPv6Label = reg(&Field{Name: "ipv6_label", NXM: "NXM_NX_IPV6_LABEL", OXM: "OXM_OF_IPV6_FLABEL", Bytes: 4, Bits: 20, Off: offIPv6Label, Size: 4, Maskable: true, Writable: true, Prereq: PrereqIPv6, Format: FmtHex})
	// The top MPLS label stack entry (see mpls.go).
	FieldMPLSLabel  = reg(&Field{Name: "mpls_label", OXM: "OXM_OF_MPLS_LABEL", Bytes: 4, Bits: 20, Off: offMPLS, Size: 4, Shift: 12, Writable: true, Prereq: PrereqMPLS, Format: FmtDecimal})
	FieldMPLSTC     = reg(&Field{Name: "mpls_tc", OXM: "OXM_OF_MPLS_TC", Bytes: 1, Bits: 3, Off: offMPLS, Size: 4, Shift: 9, Writable: true, Prereq: PrereqMPLS, Format: FmtDecimal})
	FieldMPLSBOS    = reg(&Field{Name: "mpls_bos", OXM: "OXM_OF_MPLS_BOS", Bytes: 1, Bits: 1, Off: offMPLS, Size: 4, Shift: 8, Prereq: PrereqMPLS, Format: FmtDecimal})
	FieldMPLSTTL    = reg(&Field{Name: "mpls_ttl", NXM: "NXM_NX_MPLS_TTL", Bytes: 1, Bits: 8, Off: offMPLS, Size: 4, Writable: true, Prereq: PrereqMPLS, Format: FmtDecimal})
	FieldIPv6ExtHdr = reg(&Field{Name: "ipv6_exthdr", OXM: "OXM_OF_IPV6_EXTHDR", Bytes: 2, Bits: 9, Off: offIPv6ExtHdr, Size: 2, Maskable: true, Prereq: PrereqIPv6, Format: FmtHex})
	FieldIPProto    = reg(&Field{Name: "nw_proto", ExtraName: "ip_proto", NXM: "NXM_OF_IP_PROTO", OXM: "OXM_OF_IP_PROTO", Bytes: 1, Bits: 8, Off: offNwProto, Size: 1, Prereq: PrereqIPAny, Format: FmtDecimal})
	FieldNwTos      = reg(&Field{Name: "nw_tos", NXM: "NXM_OF_IP_TOS", Bytes: 1, Bits: 8, Off: offNwTos, Size: 1, Writable: true, Prereq: PrereqIPAny, Format: FmtDecimal})
	FieldIPDSCP     = reg(&Field{Name: "ip_dscp", OXM: "OXM_OF_IP_DSCP", Bytes: 1, Bits: 6, Off: offNwTos, Size: 1, Shift: 2, Writable: true, Prereq: PrereqIPAny, Format: FmtDecimal})
	FieldIPECN      = reg(&Field{Name: "nw_ecn", ExtraName: "ip_ecn", NXM: "NXM_NX_IP_ECN", OXM: "OXM_OF_IP_ECN", Bytes: 1, Bits: 2, Off: offNwTos, Size: 1, Writable: true, Prereq: PrereqIPAny, Format: FmtDecimal})
	FieldIPTTL      = reg(&Field{Name: "nw_ttl", NXM: "NXM_NX_IP_TTL", Bytes: 1, Bits: 8, Off: offNwTTL, Size: 1, Writable: true, Prereq: PrereqIPAny, Format: FmtDecimal})
	FieldIPFrag     = reg(&Field{Name: "ip_frag", ExtraName: "nw_frag", NXM: "NXM_NX_IP_FRAG", Bytes: 1, Bits: 2, Off: offNwFrag, Size: 1, Maskable: true, Prereq: PrereqIPAny, Format: FmtFrag})

	FieldArpOp  = reg(&Field{Name: "arp_op", NXM: "NXM_OF_ARP_OP", OXM: "OXM_OF_ARP_OP", Bytes: 2, Bits: 16, Off: offArpOp, Size: 2, Writable: true, Prereq: PrereqARP, Format: FmtDecimal})
	FieldArpSpa = reg(&Field{Name: "arp_spa", NXM: "NXM_OF_ARP_SPA", OXM: "OXM_OF_ARP_SPA", Bytes: 4, Bits: 32, Off: offNwSrc, Size: 4, Maskable: true, Writable: true, Prereq: PrereqARP, Format: FmtIPv4})
	FieldArpTpa = reg(&Field{Name: "arp_tpa", NXM: "NXM_OF_ARP_TPA", OXM: "OXM_OF_ARP_TPA", Bytes: 4, Bits: 32, Off: offNwDst, Size: 4, Maskable: true, Writable: true, Prereq: PrereqARP, Format: FmtIPv4})
	FieldArpSha = reg(&Field{Name: "arp_sha", NXM: "NXM_NX_ARP_SHA", OXM: "OXM_OF_ARP_SHA", Bytes: 6, Bits: 48, Off: offArpSha, Size: 6, Maskable: true, Writable: true, Prereq: PrereqARP, Format: FmtEthernet})
	FieldArpTha = reg(&Field{Name: "arp_tha", NXM: "NXM_NX_ARP_THA", OXM: "OXM_OF_ARP_THA", Bytes: 6, Bits: 48, Off: offArpTha, Size: 6, Maskable: true, Writable: true, Prereq: PrereqARP, Format: FmtEthernet})

	FieldTCPSrc   = reg(&Field{Name: "tcp_src", ExtraName: "tp_src", NXM: "NXM_OF_TCP_SRC", OXM: "OXM_OF_TCP_SRC", Bytes: 2, Bits: 16, Off: offTpSrc, Size: 2, Maskable: true, Writable: true, Prereq: PrereqTCP, Format: FmtDecimal})
	FieldTCPDst   = reg(&Field{Name: "tcp_dst", ExtraName: "tp_dst", NXM: "NXM_OF_TCP_DST", OXM: "OXM_OF_TCP_DST", Bytes: 2, Bits: 16, Off: offTpDst, Size: 2, Maskable: true, Writable: true, Prereq: PrereqTCP, Format: FmtDecimal})
	FieldTCPFlags = reg(&Field{Name: "tcp_flags", NXM: "NXM_NX_TCP_FLAGS", OXM: "ONFOXM_ET_TCP_FLAGS", Bytes: 2, Bits: 12, Off: offTCPFlags, Size: 2, Maskable: true, Prereq: PrereqTCP, Format: FmtTCPFlags})
	FieldUDPSrc   = reg(&Field{Name: "udp_src", NXM: "NXM_OF_UDP_SRC", OXM: "OXM_OF_UDP_SRC", Bytes: 2, Bits: 16, Off: offTpSrc, Size: 2, Maskable: true, Writable: true, Prereq: PrereqUDP, Format: FmtDecimal})
	FieldUDPDst   = reg(&Field{Name: "udp_dst", NXM: "NXM_OF_UDP_DST", OXM: "OXM_OF_UDP_DST", Bytes: 2, Bits: 16, Off: offTpDst, Size: 2, Maskable: true, Writable: true, Prereq: PrereqUDP, Format: FmtDecimal})
	FieldSCTPSrc  = reg(&Field{Name: "sctp_src", OXM: "OXM_OF_SCTP_SRC", Bytes: 2, Bits: 16, Off: offTpSrc, Size: 2, Maskable: true, Writable: true, Prereq: PrereqSCTP, Format: FmtDecimal})
	FieldSCTPDst  = reg(&Field{Name: "sctp_dst", OXM: "OXM_OF_SCTP_DST", Bytes: 2, Bits: 16, Off: offTpDst, Size: 2, Maskable: true, Writable: true, Prereq: PrereqSCTP, Format: FmtDecimal})

	FieldICMPType   = reg(&Field{Name: "icmp_type", NXM: "NXM_OF_ICMP_TYPE", OXM: "OXM_OF_ICMPV4_TYPE", Bytes: 1, Bits: 8, Off: offTpSrc, Size: 2, Writable: true, Prereq: PrereqICMPv4, Format: FmtDecimal})
	FieldICMPCode   = reg(&Field{Name: "icmp_code", NXM: "NXM_OF_ICMP_CODE", OXM: "OXM_OF_ICMPV4_CODE", Bytes: 1, Bits: 8, Off: offTpDst, Size: 2, Writable: true, Prereq: PrereqICMPv4, Format: FmtDecimal})
	FieldICMPv6Type = reg(&Field{Name: "icmpv6_type", NXM: "NXM_NX_ICMPV6_TYPE", OXM: "OXM_OF_ICMPV6_TYPE", Bytes: 1, Bits: 8, Off: offTpSrc, Size: 2, Writable: true, Prereq: PrereqICMPv6, Format: FmtDecimal})
	FieldICMPv6Code = reg(&Field{Name: "icmpv6_code", NXM: "NXM_NX_ICMPV6_CODE", OXM: "OXM_OF_ICMPV6_CODE", Bytes: 1, Bits: 8, Off: offTpDst, Size: 2, Writable: true, Prereq: PrereqICMPv6, Format: FmtDecimal})
	FieldNdTarget   = reg(&Field{Name: "nd_target", NXM: "NXM_NX_ND_TARGET", OXM: "OXM_OF_IPV6_ND_TARGET", Bytes: 16, Bits: 128, Off: offNdTarget, Size: 16, Maskable: true, Writable: true, Prereq: PrereqND, Format: FmtIPv6})
	FieldNdSll      = reg(&Field{Name: "nd_sll", NXM: "NXM_NX_ND_SLL", OXM: "OXM_OF_IPV6_ND_SLL", Bytes: 6, Bits: 48, Off: offArpSha, Size: 6, Maskable: true, Writable: true, Prereq: PrereqNDSolicit, Format: FmtEthernet})
	FieldNdTll      = reg(&Field{Name: "nd_tll", NXM: "NXM_NX_ND_TLL", OXM: "OXM_OF_IPV6_ND_TLL", Bytes: 6, Bits: 48, Off: offArpTha, Size: 6, Maskable: true, Writable: true, Prereq: PrereqNDAdvert, Format: FmtEthernet})
)

// offArpOp is the arp_op slot: its own two bytes (OVS keeps it in nw_proto,
// but a separate slot keeps the 16-bit field whole).
const offArpOp = 246

// FieldReg, FieldXReg and FieldXXReg are the register views.
var (
	FieldReg   [16]*Field
	FieldXReg  [8]*Field
	FieldXXReg [4]*Field
	// FieldTunMetadataN are tun_metadata0..63; their location comes from the TLV map.
	FieldTunMetadataN [64]*Field
)

func init() {
	for i := range FieldReg {
		FieldReg[i] = reg(&Field{Name: fmt.Sprintf("reg%d", i), NXM: fmt.Sprintf("NXM_NX_REG%d", i),
			Bytes: 4, Bits: 32, Off: offRegs + 4*i, Size: 4, Maskable: true, Writable: true, Format: FmtHex})
	}
	for i := range FieldXReg {
		FieldXReg[i] = reg(&Field{Name: fmt.Sprintf("xreg%d", i), OXM: fmt.Sprintf("OXM_OF_PKT_REG%d", i),
			Bytes: 8, Bits: 64, Off: offRegs + 8*i, Size: 8, Maskable: true, Writable: true, Format: FmtHex})
	}
	for i := range FieldXXReg {
		FieldXXReg[i] = reg(&Field{Name: fmt.Sprintf("xxreg%d", i), NXM: fmt.Sprintf("NXM_NX_XXREG%d", i),
			Bytes: 16, Bits: 128, Off: offRegs + 16*i, Size: 16, Maskable: true, Writable: true, Format: FmtHex})
	}
	for i := range FieldTunMetadataN {
		FieldTunMetadataN[i] = reg(&Field{Name: fmt.Sprintf("tun_metadata%d", i), NXM: fmt.Sprintf("NXM_NX_TUN_METADATA%d", i),
			Bytes: 124, Bits: 124 * 8, Maskable: true, Writable: true, Format: FmtHex, TunMetadata: i + 1})
	}
}

// Port numbers. govs uses OVS's internal 16-bit numbering (the OpenFlow 1.0
// values); ofproto converts 32-bit OpenFlow 1.1+ port numbers.
const (
	PortMax        = 0xff00
	PortInPort     = 0xfff8
	PortTable      = 0xfff9
	PortNormal     = 0xfffa
	PortFlood      = 0xfffb
	PortAll        = 0xfffc
	PortController = 0xfffd
	PortLocal      = 0xfffe
	PortNone       = 0xffff
)

var portNames = map[uint32]string{
	PortInPort: "IN_PORT", PortTable: "TABLE", PortNormal: "NORMAL", PortFlood: "FLOOD",
	PortAll: "ALL", PortController: "CONTROLLER", PortLocal: "LOCAL", PortNone: "ANY",
}

// PortName returns the reserved name of port p ("LOCAL", "NORMAL", ...) or
// its number.
func PortName(p uint32) string {
	if n, ok := portNames[p]; ok {
		return n
	}
	return strconv.FormatUint(uint64(p), 10)
}

// ParsePort parses a port number or reserved port name (case-insensitive,
// as ovs-ofctl accepts them).
func ParsePort(s string) (uint32, bool) {
	for p, n := range portNames {
		if strings.EqualFold(n, s) {
			return p, true
		}
	}
	if strings.EqualFold(s, "NONE") {
		return PortNone, true
	}
	v, err := strconv.ParseUint(s, 0, 32)
	if err != nil {
		return 0, false
	}
	if v > 0xffff {
		return 0, false
	}
	return uint32(v), true
}
