// Package flowtable is the flow model of govs: the flow key (like OVS
// struct flow), matches over it, the action IR, flow tables with a
// tuple-space-search classifier, and the pipeline interpreter that runs a
// packet through them with a trace.
//
// The package knows nothing of sockets or of the OpenFlow wire format:
// ofproto translates wire messages and flow text into these types, and the
// datapath feeds packets into the pipeline.
package flowtable

import (
	"encoding/binary"
	"math/bits"
)

// Byte offsets of the fields inside a Key. The key is a fixed-size byte
// array in network byte order, laid out so that a match is value+mask over
// the same array and the classifier can hash and compare it 8 bytes at a
// time. Sub-byte fields (ip_dscp, ip_ecn, vlan_vid, ...) live inside one
// of these slots and are described by a bit mask in the field table.
const (
	offInPort       = 0
	offPktMark      = 4
	offActsetOutput = 8
	offConjID       = 12
	offRecircID     = 16
	offDpHash       = 20
	offMetadata     = 24
	offRegs         = 32 // reg0..reg15, 4 bytes each; xregN and xxregN are views
	offTunID        = 96
	offTunSrc       = 104
	offTunDst       = 108
	offTunFlags     = 112
	offCtZone       = 114
	offCtState      = 116
	offCtMark       = 120
	offCtNwSrc      = 124
	offCtLabel      = 128
	offCtNwDst      = 144
	offCtTpSrc      = 148
	offCtTpDst      = 150
	offCtNwProto    = 152
	offNwProto      = 153
	offNwTos        = 154
	offNwTTL        = 155
	offNwFrag       = 156
	offVlanTCI      = 158
	offEthSrc       = 160
	offEthType      = 166
	offEthDst       = 168
	offTCPFlags     = 174
	offNwSrc        = 176
	offNwDst        = 180
	offTpSrc        = 184
	offTpDst        = 186
	offIPv6Label    = 188
	offIPv6Src      = 192
	offIPv6Dst      = 208
	offNdTarget     = 224
	offArpSha       = 240
	offArpTha       = 248
	offIPv6ExtHdr   = 254 // ipv6_exthdr flags (9 bits)
	offCtIPv6Src    = 256
	offCtIPv6Dst    = 272
	offTunIPv6Src   = 288 // outer IPv6 addresses of a tunnel over an IPv6 underlay
	offTunIPv6Dst   = 304
	offTunMetadata  = 320 // 256 bytes, allocated to tun_metadataN by the TLV map
	TunMetadataSize = 256 // OVS's TUN_METADATA_TOT_OPT_SIZE

	// KeySize is the size of a flow key in bytes.
	KeySize = 576
	// KeyWords is the number of 64-bit words in a key.
	KeyWords = KeySize / 8
)

// Key is the fixed-size flow key: every field a flow can match on or an
// action can set, for one packet at one point of the pipeline.
type Key [KeySize]byte

// Word returns the i-th 64-bit word of the key (native byte order; only
// used for masking, hashing and comparison).
func (k *Key) Word(i int) uint64 {
	return binary.NativeEndian.Uint64(k[i*8:])
}

// SetWord sets the i-th 64-bit word of the key.
func (k *Key) SetWord(i int, v uint64) {
	binary.NativeEndian.PutUint64(k[i*8:], v)
}

func (k *Key) u8(off int) uint8         { return k[off] }
func (k *Key) u16(off int) uint16       { return binary.BigEndian.Uint16(k[off:]) }
func (k *Key) u32(off int) uint32       { return binary.BigEndian.Uint32(k[off:]) }
func (k *Key) u64(off int) uint64       { return binary.BigEndian.Uint64(k[off:]) }
func (k *Key) setU8(off int, v uint8)   { k[off] = v }
func (k *Key) setU16(off int, v uint16) { binary.BigEndian.PutUint16(k[off:], v) }
func (k *Key) setU32(off int, v uint32) { binary.BigEndian.PutUint32(k[off:], v) }
func (k *Key) setU64(off int, v uint64) { binary.BigEndian.PutUint64(k[off:], v) }

// Accessors for the fields the pipeline and the datapath use directly.

func (k *Key) InPort() uint32         { return k.u32(offInPort) }
func (k *Key) SetInPort(p uint32)     { k.setU32(offInPort, p) }
func (k *Key) Reg(i int) uint32       { return k.u32(offRegs + 4*i) }
func (k *Key) SetReg(i int, v uint32) { k.setU32(offRegs+4*i, v) }
func (k *Key) EthType() uint16        { return k.u16(offEthType) }
func (k *Key) SetEthType(v uint16)    { k.setU16(offEthType, v) }
func (k *Key) NwProto() uint8         { return k.u8(offNwProto) }
func (k *Key) SetNwProto(v uint8)     { k.setU8(offNwProto, v) }
func (k *Key) CtState() uint32        { return k.u32(offCtState) }
func (k *Key) SetCtState(v uint32)    { k.setU32(offCtState, v) }
func (k *Key) CtZone() uint16         { return k.u16(offCtZone) }
func (k *Key) SetCtZone(v uint16)     { k.setU16(offCtZone, v) }
func (k *Key) CtMark() uint32         { return k.u32(offCtMark) }
func (k *Key) SetCtMark(v uint32)     { k.setU32(offCtMark, v) }
func (k *Key) ConjID() uint32         { return k.u32(offConjID) }
func (k *Key) SetConjID(v uint32)     { k.setU32(offConjID, v) }
func (k *Key) TunDst() uint32         { return k.u32(offTunDst) }
func (k *Key) TunSrc() uint32         { return k.u32(offTunSrc) }
func (k *Key) TunID() uint64          { return k.u64(offTunID) }

// TunIPv6Dst returns tun_ipv6_dst, the outer IPv6 destination of a tunnel.
func (k *Key) TunIPv6Dst() [16]byte { return [16]byte(k[offTunIPv6Dst : offTunIPv6Dst+16]) }

// TunIPv6Src returns tun_ipv6_src.
func (k *Key) TunIPv6Src() [16]byte { return [16]byte(k[offTunIPv6Src : offTunIPv6Src+16]) }
func (k *Key) Metadata() uint64     { return k.u64(offMetadata) }
func (k *Key) NwSrc() uint32        { return k.u32(offNwSrc) }
func (k *Key) NwDst() uint32        { return k.u32(offNwDst) }
func (k *Key) TpSrc() uint16        { return k.u16(offTpSrc) }
func (k *Key) TpDst() uint16        { return k.u16(offTpDst) }
func (k *Key) NwTTL() uint8         { return k.u8(offNwTTL) }
func (k *Key) VlanTCI() uint16      { return k.u16(offVlanTCI) }

// CtLabel returns ct_label as two 64-bit halves (high, low).
func (k *Key) CtLabel() (hi, lo uint64) { return k.u64(offCtLabel), k.u64(offCtLabel + 8) }

// SetCtLabel sets ct_label from two 64-bit halves.
func (k *Key) SetCtLabel(hi, lo uint64) { k.setU64(offCtLabel, hi); k.setU64(offCtLabel+8, lo) }

// EthSrc returns the Ethernet source address.
func (k *Key) EthSrc() [6]byte { return [6]byte(k[offEthSrc : offEthSrc+6]) }

// EthDst returns the Ethernet destination address.
func (k *Key) EthDst() [6]byte { return [6]byte(k[offEthDst : offEthDst+6]) }

// SetEthSrc sets the Ethernet source address.
func (k *Key) SetEthSrc(a [6]byte) { copy(k[offEthSrc:], a[:]) }

// SetEthDst sets the Ethernet destination address.
func (k *Key) SetEthDst(a [6]byte) { copy(k[offEthDst:], a[:]) }

// IsIPAny reports whether the key is an IPv4 or IPv6 packet.
func (k *Key) IsIPAny() bool {
	t := k.EthType()
	return t == EthTypeIPv4 || t == EthTypeIPv6
}

// Masked returns k with every bit outside mask cleared.
func (k *Key) Masked(mask *Key) Key {
	var out Key
	for i := 0; i < KeyWords; i++ {
		out.SetWord(i, k.Word(i)&mask.Word(i))
	}
	return out
}

// Or sets every bit of k that is set in o.
func (k *Key) Or(o *Key) {
	for i := 0; i < KeyWords; i++ {
		k.SetWord(i, k.Word(i)|o.Word(i))
	}
}

// IsZero reports whether every byte of k is zero.
func (k *Key) IsZero() bool {
	for i := 0; i < KeyWords; i++ {
		if k.Word(i) != 0 {
			return false
		}
	}
	return true
}

// PopCount returns the number of set bits in k.
func (k *Key) PopCount() int {
	n := 0
	for i := 0; i < KeyWords; i++ {
		n += bits.OnesCount64(k.Word(i))
	}
	return n
}

// Ethernet types and IP protocols the model knows by name.
const (
	EthTypeIPv4 = 0x0800
	EthTypeARP  = 0x0806
	EthTypeRARP = 0x8035
	EthTypeVLAN = 0x8100
	EthTypeQinQ = 0x88a8
	EthTypeIPv6 = 0x86dd
	EthTypeMPLS = 0x8847

	IPProtoICMP   = 1
	IPProtoTCP    = 6
	IPProtoUDP    = 17
	IPProtoICMPv6 = 58
	IPProtoSCTP   = 132
)

// ct_state bits, as in ovs-fields(7).
const (
	CtStateNew  = 0x01
	CtStateEst  = 0x02
	CtStateRel  = 0x04
	CtStateRpl  = 0x08
	CtStateInv  = 0x10
	CtStateTrk  = 0x20
	CtStateSNAT = 0x40
	CtStateDNAT = 0x80
)

// nw_frag bits, as in ovs-fields(7).
const (
	NwFragAny   = 0x01
	NwFragLater = 0x02
)

// VLAN TCI bits.
const (
	VlanCFI     = 0x1000
	VlanVIDMask = 0x0fff
	VlanPCPMask = 0xe000
)
