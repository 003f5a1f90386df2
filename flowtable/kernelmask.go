package flowtable

// Masks for the kernel fast path (datapath/offload), which matches packets
// exactly on their Ethernet and IPv4 5-tuple headers and can rewrite only
// the Ethernet addresses and the TTL.
var (
	// FrameFieldsMask covers every key field read from the packet's
	// headers (nw_proto up to arp_tha); a write outside it changes only
	// metadata.
	FrameFieldsMask = maskBytes(offNwProto, offCtIPv6Src)
	// EthAddrsMask covers eth_src and eth_dst.
	EthAddrsMask = or(maskBytes(offEthSrc, offEthSrc+6), maskBytes(offEthDst, offEthDst+6))
	// VlanTCIMask covers vlan_tci.
	VlanTCIMask = maskBytes(offVlanTCI, offVlanTCI+2)
	// NwTTLMask covers nw_ttl.
	NwTTLMask = maskBytes(offNwTTL, offNwTTL+1)
	// PerPacketMask covers the header fields that can differ between
	// packets with the same addresses, ports and TTL: nw_tos and
	// tcp_flags. A megaflow that matches them cannot be an exact-match
	// kernel entry.
	PerPacketMask = or(maskBytes(offNwTos, offNwTos+1), maskBytes(offTCPFlags, offTCPFlags+2))
)

func maskBytes(from, to int) Key {
	var k Key
	for i := from; i < to; i++ {
		k[i] = 0xff
	}
	return k
}

func or(a, b Key) Key {
	a.Or(&b)
	return a
}

// NwTOS returns the key's nw_tos (DSCP and ECN).
func (k *Key) NwTOS() uint8 { return k.u8(offNwTos) }

// NwFrag returns the key's nw_frag bits.
func (k *Key) NwFrag() uint8 { return k.u8(offNwFrag) }

// TCPFlags returns the key's tcp_flags.
func (k *Key) TCPFlags() uint16 { return k.u16(offTCPFlags) }
