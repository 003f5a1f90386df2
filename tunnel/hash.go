package tunnel

import (
	"encoding/binary"
	"math/bits"
)

// The UDP source port range of encapsulated packets, OVS's default
// (ovs-appctl tnl/egress_port_range): the port is the only per-flow entropy
// the underlay's ECMP and the receiver's RSS see.
const (
	SourcePortMin = 32768
	SourcePortMax = 61000 // exclusive, as in OVS's netdev_tnl_get_src_port
)

// SourcePort returns the UDP source port for an encapsulated inner frame:
// a hash of its flow mapped into [SourcePortMin, SourcePortMax), so every
// packet of one inner flow takes the same underlay path.
func SourcePort(inner []byte) uint16 {
	h := FlowHash(inner)
	return uint16(uint64(h)*(SourcePortMax-SourcePortMin)>>32) + SourcePortMin
}

// FlowHash hashes the flow an Ethernet frame belongs to: the IPv4/IPv6
// addresses and protocol, plus the TCP/UDP/SCTP ports when the packet is
// not a fragment (so all fragments of a datagram hash alike); the MAC
// addresses and EtherType for other frames. Up to two VLAN tags are
// skipped. It reads the frame only and never fails: a truncated frame hashes
// what is there.
func FlowHash(f []byte) uint32 {
	if len(f) < EthHeaderLen {
		return 0
	}
	et := binary.BigEndian.Uint16(f[12:])
	l3 := EthHeaderLen
	for i := 0; i < 2 && (et == 0x8100 || et == 0x88a8) && len(f) >= l3+4; i++ {
		et = binary.BigEndian.Uint16(f[l3+2:])
		l3 += 4
	}
	var a, b uint64 // the flow's words, folded by hash64
	switch {
	case et == 0x0800 && len(f) >= l3+20:
		ip := f[l3:]
		proto := ip[9]
		a = binary.BigEndian.Uint64(ip[12:]) // source and destination address
		b = uint64(proto)
		ihl := int(ip[0]&0x0f) * 4
		frag := binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 // MF or offset
		if !frag && ihl >= 20 && hasPorts(proto) && len(ip) >= ihl+4 {
			b |= uint64(binary.BigEndian.Uint32(ip[ihl:])) << 8
		}
	case et == 0x86dd && len(f) >= l3+40:
		ip := f[l3:]
		a = binary.BigEndian.Uint64(ip[8:]) ^ binary.BigEndian.Uint64(ip[16:])*0x9e3779b97f4a7c15 ^
			bits.RotateLeft64(binary.BigEndian.Uint64(ip[24:]), 17) ^ binary.BigEndian.Uint64(ip[32:])*0xc2b2ae3d27d4eb4f
		proto := ip[6]
		b = uint64(proto) | 1<<40 // keep IPv6 apart from IPv4
		if hasPorts(proto) && len(ip) >= 44 {
			b |= uint64(binary.BigEndian.Uint32(ip[40:])) << 8
		}
	default:
		a = binary.BigEndian.Uint64(f[0:])
		b = uint64(binary.BigEndian.Uint32(f[8:]))<<16 | uint64(et) | 1<<48
	}
	return hash64(a, b)
}

// hash64 folds two words with 128-bit multiplies (the wyhash mixing step):
// every input bit reaches every output bit, in a few cycles.
func hash64(a, b uint64) uint32 {
	hi, lo := bits.Mul64(a^0xa0761d6478bd642f, b^0xe7037ed1a0b428db)
	hi, lo = bits.Mul64(hi^lo^0x8ebc6af09c88c6e3, 0x589965cc75374cc3)
	h := hi ^ lo
	return uint32(h ^ h>>32)
}

func hasPorts(proto uint8) bool { return proto == 6 || proto == 17 || proto == 132 }
