package flowtable

import "encoding/binary"

// BuildFrame synthesizes an Ethernet frame whose headers carry the packet
// fields of k (Ethernet, optional VLAN, IPv4 with TCP/UDP/ICMP, IPv6 with
// TCP/UDP/ICMPv6, or ARP), with valid checksums and payloadLen zero bytes of
// payload. It is for traces and tests, not the packet path.
func BuildFrame(k *Key, payloadLen int) []byte {
	var f []byte
	f = append(f, k[offEthDst:offEthDst+6]...)
	f = append(f, k[offEthSrc:offEthSrc+6]...)
	if tci := k.VlanTCI(); tci&VlanCFI != 0 {
		f = binary.BigEndian.AppendUint16(f, EthTypeVLAN)
		f = binary.BigEndian.AppendUint16(f, tci&^VlanCFI)
	}
	et := k.EthType()
	f = binary.BigEndian.AppendUint16(f, et)
	switch et {
	case EthTypeARP, EthTypeRARP:
		f = binary.BigEndian.AppendUint16(f, 1)
		f = binary.BigEndian.AppendUint16(f, EthTypeIPv4)
		f = append(f, 6, 4)
		f = binary.BigEndian.AppendUint16(f, k.u16(offArpOp))
		f = append(f, k[offArpSha:offArpSha+6]...)
		f = append(f, k[offNwSrc:offNwSrc+4]...)
		f = append(f, k[offArpTha:offArpTha+6]...)
		f = append(f, k[offNwDst:offNwDst+4]...)
	case EthTypeIPv4:
		l4 := buildL4(k, payloadLen, false)
		ip := make([]byte, 20)
		ip[0] = 0x45
		ip[1] = k[offNwTos]
		binary.BigEndian.PutUint16(ip[2:], uint16(20+len(l4)))
		ttl := k.NwTTL()
		if ttl == 0 {
			ttl = 64
		}
		ip[8] = ttl
		ip[9] = k.NwProto()
		copy(ip[12:16], k[offNwSrc:offNwSrc+4])
		copy(ip[16:20], k[offNwDst:offNwDst+4])
		binary.BigEndian.PutUint16(ip[10:], ^checksum(ip, 0))
		if ip[9] == IPProtoTCP || ip[9] == IPProtoUDP {
			ph := pseudoSum4(ip[12:16], ip[16:20], ip[9], len(l4))
			co := 16
			if ip[9] == IPProtoUDP {
				co = 6
			}
			binary.BigEndian.PutUint16(l4[co:], ^checksum(l4, ph))
		}
		f = append(f, ip...)
		f = append(f, l4...)
	case EthTypeIPv6:
		l4 := buildL4(k, payloadLen, true)
		ip := make([]byte, 40)
		binary.BigEndian.PutUint32(ip[0:], 6<<28|uint32(k[offNwTos])<<20|k.u32(offIPv6Label)&0xfffff)
		binary.BigEndian.PutUint16(ip[4:], uint16(len(l4)))
		ip[6] = k.NwProto()
		hl := k.NwTTL()
		if hl == 0 {
			hl = 64
		}
		ip[7] = hl
		copy(ip[8:24], k[offIPv6Src:offIPv6Src+16])
		copy(ip[24:40], k[offIPv6Dst:offIPv6Dst+16])
		var co int
		switch ip[6] {
		case IPProtoTCP:
			co = 16
		case IPProtoUDP:
			co = 6
		case IPProtoICMPv6:
			co = 2
		}
		if co > 0 {
			var s uint32
			s = sumBytes(ip[8:40], s)
			s += uint32(len(l4)) + uint32(ip[6])
			binary.BigEndian.PutUint16(l4[co:], ^checksum(l4, s))
		}
		f = append(f, ip...)
		f = append(f, l4...)
	default:
		f = append(f, make([]byte, payloadLen)...)
	}
	for len(f) < 60 {
		f = append(f, 0) // Ethernet minimum (without FCS)
	}
	return f
}

func buildL4(k *Key, payloadLen int, v6 bool) []byte {
	switch k.NwProto() {
	case IPProtoTCP:
		b := make([]byte, 20+payloadLen)
		binary.BigEndian.PutUint16(b[0:], k.TpSrc())
		binary.BigEndian.PutUint16(b[2:], k.TpDst())
		flags := k.u16(offTCPFlags)
		if flags == 0 {
			flags = 0x002 // SYN
		}
		binary.BigEndian.PutUint16(b[12:], 5<<12|flags&0x0fff)
		binary.BigEndian.PutUint16(b[14:], 64240)
		return b
	case IPProtoUDP:
		b := make([]byte, 8+payloadLen)
		binary.BigEndian.PutUint16(b[0:], k.TpSrc())
		binary.BigEndian.PutUint16(b[2:], k.TpDst())
		binary.BigEndian.PutUint16(b[4:], uint16(len(b)))
		return b
	case IPProtoICMP, IPProtoICMPv6:
		b := make([]byte, 8+payloadLen)
		b[0], b[1] = byte(k.TpSrc()), byte(k.TpDst())
		if !v6 {
			binary.BigEndian.PutUint16(b[2:], ^checksum(b, 0))
		}
		return b
	}
	return make([]byte, payloadLen)
}

func sumBytes(b []byte, s uint32) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func checksum(b []byte, initial uint32) uint16 {
	s := sumBytes(b, initial)
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

func pseudoSum4(src, dst []byte, proto uint8, l4len int) uint32 {
	var s uint32
	s = sumBytes(src, s)
	s = sumBytes(dst, s)
	s += uint32(proto) + uint32(l4len)
	return s
}

// Checksum returns the Internet checksum of b (for tests and tools).
func Checksum(b []byte) uint16 { return ^checksum(b, 0) }
