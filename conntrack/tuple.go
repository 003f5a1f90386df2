package conntrack

import (
	"encoding/binary"
	"math/bits"
)

// EtherTypes and IP protocol numbers the tracker understands.
const (
	EthTypeIPv4 = 0x0800
	EthTypeIPv6 = 0x86dd

	protoICMP    = 1
	protoIGMP    = 2
	protoTCP     = 6
	protoUDP     = 17
	protoDCCP    = 33
	protoICMPv6  = 58
	protoSCTP    = 132
	protoUDPLite = 136
)

// ICMP message types used for tracking.
const (
	icmp4EchoReply    = 0
	icmp4DstUnreach   = 3
	icmp4SourceQuench = 4
	icmp4Redirect     = 5
	icmp4Echo         = 8
	icmp4TimeExceeded = 11
	icmp4ParamProb    = 12
	icmp4Timestamp    = 13
	icmp4TimestampRep = 14
	icmp4InfoReq      = 15
	icmp4InfoReply    = 16

	icmp6DstUnreach   = 1
	icmp6PacketTooBig = 2
	icmp6TimeExceeded = 3
	icmp6ParamProb    = 4
	icmp6Echo         = 128
	icmp6EchoReply    = 129
)

// key is one direction of a connection: the zone plus the 5-tuple. For ICMP
// query messages the "ports" are the ICMP id on both sides and styp/dtyp hold
// the message type seen from each side (request on one side, reply on the
// other), so that the reverse of a request key is the key of its reply, as in
// OVS' struct conn_key. IPv4 addresses use the first 4 bytes of src/dst.
//
// The struct is 42 bytes with no padding, so == compiles to a memory compare.
type key struct {
	src, dst     [16]byte
	sport, dport uint16
	zone         uint16
	proto        uint8
	styp, dtyp   uint8
	v6           uint8
}

func (k *key) reverse() key {
	return key{
		src: k.dst, dst: k.src,
		sport: k.dport, dport: k.sport,
		zone: k.zone, proto: k.proto,
		styp: k.dtyp, dtyp: k.styp,
		v6: k.v6,
	}
}

// eq compares two keys word by word (== on the struct calls memequal).
func (k *key) eq(o *key) bool {
	le := binary.LittleEndian
	return le.Uint64(k.src[0:8]) == le.Uint64(o.src[0:8]) &&
		le.Uint64(k.dst[0:8]) == le.Uint64(o.dst[0:8]) &&
		k.sport == o.sport && k.dport == o.dport &&
		le.Uint64(k.src[8:16]) == le.Uint64(o.src[8:16]) &&
		le.Uint64(k.dst[8:16]) == le.Uint64(o.dst[8:16]) &&
		k.zone == o.zone && k.proto == o.proto &&
		k.styp == o.styp && k.dtyp == o.dtyp && k.v6 == o.v6
}

// eqReverse tells whether k is the reverse of o (o.reverse().eq(k)),
// without building the reversed key.
func (k *key) eqReverse(o *key) bool {
	le := binary.LittleEndian
	return le.Uint64(k.src[0:8]) == le.Uint64(o.dst[0:8]) &&
		le.Uint64(k.dst[0:8]) == le.Uint64(o.src[0:8]) &&
		k.sport == o.dport && k.dport == o.sport &&
		le.Uint64(k.src[8:16]) == le.Uint64(o.dst[8:16]) &&
		le.Uint64(k.dst[8:16]) == le.Uint64(o.src[8:16]) &&
		k.zone == o.zone && k.proto == o.proto &&
		k.styp == o.dtyp && k.dtyp == o.styp && k.v6 == o.v6
}

func (k *key) isICMP() bool {
	return k.proto == protoICMP && k.v6 == 0 || k.proto == protoICMPv6 && k.v6 == 1
}

// hasPorts tells whether sport/dport carry L4 ports that NAT may rewrite
// (TCP, UDP, SCTP, UDP-Lite, DCCP) or an ICMP query id (isICMP).
func (k *key) hasPorts() bool {
	switch k.proto {
	case protoTCP, protoUDP, protoSCTP, protoUDPLite, protoDCCP:
		return true
	}
	return k.isICMP()
}

// hash mixes every field of the key with a per-tracker seed (so remote peers
// cannot aim collisions at one bucket). It is symmetric, as OVS' is:
// reversing the key (swapping the endpoints) gives the same hash, so the two
// directions of a connection without NAT share one index entry. It is a
// small wyhash-style mixer over 64-bit words; no allocation.
func (k *key) hash(seed uint64) uint64 {
	const (
		p0 = 0xa0761d6478bd642f
		p1 = 0xe7037ed1a0b428db
		p2 = 0x8ebc6af09c88c6e3
		p3 = 0x589965cc75374cc3
	)
	src := mix(binary.LittleEndian.Uint64(k.src[0:8])^seed, binary.LittleEndian.Uint64(k.src[8:16])^p0) ^
		mix(uint64(k.sport)|uint64(k.styp)<<16^p1, seed^p2)
	dst := mix(binary.LittleEndian.Uint64(k.dst[0:8])^seed, binary.LittleEndian.Uint64(k.dst[8:16])^p0) ^
		mix(uint64(k.dport)|uint64(k.dtyp)<<16^p1, seed^p2)
	rest := uint64(k.zone) | uint64(k.proto)<<16 | uint64(k.v6)<<24
	return mix(src^dst^p3, rest^seed^p1)
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// pkt holds what parse learned about a packet: offsets into the frame and the
// TCP fields the state machine needs. It lives on the caller's stack.
type pkt struct {
	l3, l4  int // offsets of the IP and L4 headers in the frame
	l4len   int // L4 bytes (header+payload) as the IP header says
	end     int // offset just past the IP datagram (frame padding excluded)
	v6      bool
	related bool // ICMP error: the key was taken from the embedded header

	// Embedded packet of an ICMP error (related only).
	in3, in4 int
	inV6     bool

	// TCP (outer packet only).
	tcpFlags uint16
	tcpHLen  int

	// IP fragmentation (outer packet only): fragFirst or fragLater, and
	// the datagram's identification.
	frag   uint8
	fragID uint32

	// csumPartial is Args.CsumPartial for this packet.
	csumPartial bool
}

const (
	fragFirst = 1 // offset 0, more fragments follow: carries the L4 header
	fragLater = 2 // non-zero offset: no L4 header
)

// TCP flag bits (low 9 bits of the 16-bit word at offset 12).
const (
	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpRST = 0x04
	tcpPSH = 0x08
	tcpACK = 0x10
	tcpURG = 0x20
)

// parseResult says why parse failed, for counters and tests.
type parseResult uint8

const (
	parseOK parseResult = iota
	parseBad
	parseFragment
)

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// parse extracts the connection key of the packet at frame[l3:]. It checks
// every length it relies on, so any byte slice is safe to pass. It returns
// parseFragment for IPv4/IPv6 fragments (see the package documentation).
func parse(frame []byte, l3 int, ethType uint16, zone uint16, k *key, p *pkt, verifyCsum bool) parseResult {
	if l3 < 0 || l3 > len(frame) {
		return parseBad
	}
	*k = key{zone: zone}
	p.l3 = l3
	var r parseResult
	switch ethType {
	case EthTypeIPv4:
		r = parseIPv4(frame, l3, k, p, true)
	case EthTypeIPv6:
		r = parseIPv6(frame, l3, k, p, true)
	default:
		return parseBad
	}
	if r != parseOK {
		return r
	}
	if verifyCsum && !l4ChecksumOK(frame, p, k) {
		return parseBad
	}
	return parseL4(frame, k, p, true)
}

// parseIPv4 reads an IPv4 header at off. outer selects strict length checks:
// an embedded header inside an ICMP error is usually truncated, so its total
// length is not checked against the bytes present.
func parseIPv4(frame []byte, off int, k *key, p *pkt, outer bool) parseResult {
	b := frame[off:]
	if len(b) < 20 || b[0]>>4 != 4 {
		return parseBad
	}
	ihl := int(b[0]&0x0f) * 4
	if ihl < 20 || len(b) < ihl {
		return parseBad
	}
	tot := int(be16(b[2:]))
	if tot < ihl {
		return parseBad
	}
	frag := be16(b[6:])
	if frag&0x3fff != 0 && !outer {
		return parseFragment
	}
	copy(k.src[:4], b[12:16])
	copy(k.dst[:4], b[16:20])
	k.proto = b[9]
	k.v6 = 0
	if outer {
		if tot > len(b) {
			return parseBad
		}
		p.l4 = off + ihl
		p.l4len = tot - ihl
		p.end = off + tot
		p.v6 = false
		if frag&0x3fff != 0 {
			p.fragID = uint32(be16(b[4:]))
			if frag&0x1fff != 0 {
				p.frag = fragLater
				return parseFragment
			}
			p.frag = fragFirst
		}
	} else {
		p.in4 = off + ihl
		p.inV6 = false
	}
	return parseOK
}

// maxIPv6ExtHeaders bounds the extension-header walk.
const maxIPv6ExtHeaders = 8

func parseIPv6(frame []byte, off int, k *key, p *pkt, outer bool) parseResult {
	b := frame[off:]
	if len(b) < 40 || b[0]>>4 != 6 {
		return parseBad
	}
	end := len(b)
	if outer {
		plen := int(be16(b[4:]))
		if 40+plen > len(b) {
			return parseBad
		}
		end = 40 + plen
	}
	nh := b[6]
	o := 40
	for i := 0; ; i++ {
		if i > maxIPv6ExtHeaders {
			return parseBad
		}
		var hl int
		switch nh {
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if o+8 > end {
				return parseBad
			}
			hl = (int(b[o+1]) + 1) * 8
		case 51: // authentication header
			if o+8 > end {
				return parseBad
			}
			hl = (int(b[o+1]) + 2) * 4
		case 44: // fragment header
			if !outer || o+8 > end {
				return parseFragment
			}
			fo := be16(b[o+2:])
			if fo>>3 == 0 && fo&1 == 0 {
				// An atomic fragment (RFC 8021): a whole packet.
				hl = 8
				break
			}
			p.fragID = be32(b[o+4:])
			if fo>>3 != 0 {
				copy(k.src[:], b[8:24])
				copy(k.dst[:], b[24:40])
				k.proto = b[o]
				k.v6 = 1
				p.l4 = off + o + 8
				p.l4len = end - o - 8
				p.end = off + end
				p.v6 = true
				p.frag = fragLater
				return parseFragment
			}
			p.frag = fragFirst
			hl = 8
		default:
			goto done
		}
		if o+hl > end {
			return parseBad
		}
		nh = b[o]
		o += hl
	}
done:
	copy(k.src[:], b[8:24])
	copy(k.dst[:], b[24:40])
	k.proto = nh
	k.v6 = 1
	if outer {
		p.l4 = off + o
		p.l4len = end - o
		p.end = off + end
		p.v6 = true
	} else {
		p.in4 = off + o
		p.inV6 = true
	}
	return parseOK
}

// parseL4 fills the ports (or ICMP id/types) of k. For an ICMP error it
// replaces the whole key with the reverse of the embedded packet's key and
// sets p.related, as OVS does, so the error finds the connection it belongs
// to. outer is false while parsing the embedded packet, where only the first
// 8 bytes of the L4 header are guaranteed and errors cannot nest.
func parseL4(frame []byte, k *key, p *pkt, outer bool) parseResult {
	var b []byte
	if outer {
		b = frame[p.l4:p.end]
	} else {
		b = frame[p.in4:]
	}
	switch k.proto {
	case protoTCP:
		if outer {
			if len(b) < 20 {
				return parseBad
			}
			hl := int(b[12]>>4) * 4
			if hl < 20 || hl > len(b) {
				return parseBad
			}
			p.tcpHLen = hl
			p.tcpFlags = be16(b[12:]) & 0x1ff
		} else if len(b) < 8 {
			return parseBad
		}
		k.sport, k.dport = be16(b), be16(b[2:])
		if k.sport == 0 || k.dport == 0 {
			return parseBad
		}
	case protoUDP, protoUDPLite:
		if len(b) < 8 {
			return parseBad
		}
		if outer && k.proto == protoUDP {
			// The first fragment holds only part of the datagram.
			ul := int(be16(b[4:]))
			if ul < 8 || (ul > len(b) && p.frag != fragFirst) {
				return parseBad
			}
		}
		k.sport, k.dport = be16(b), be16(b[2:])
		if k.sport == 0 || k.dport == 0 {
			return parseBad
		}
	case protoSCTP, protoDCCP:
		if len(b) < 8 || (outer && k.proto == protoSCTP && len(b) < 12) {
			return parseBad
		}
		k.sport, k.dport = be16(b), be16(b[2:])
		if k.sport == 0 || k.dport == 0 {
			return parseBad
		}
	case protoICMP:
		if k.v6 != 0 {
			return parseOK // ICMPv4 inside IPv6: no L4 key, like any protocol
		}
		if len(b) < 8 {
			return parseBad
		}
		typ, code := b[0], b[1]
		switch typ {
		case icmp4Echo, icmp4EchoReply, icmp4Timestamp, icmp4TimestampRep, icmp4InfoReq, icmp4InfoReply:
			if code != 0 {
				return parseBad
			}
			id := be16(b[4:])
			k.sport, k.dport = id, id
			k.styp, k.dtyp = typ, reverseICMP4(typ)
		case icmp4DstUnreach, icmp4TimeExceeded, icmp4ParamProb, icmp4SourceQuench, icmp4Redirect:
			if !outer || p.frag != 0 {
				return parseBad
			}
			return parseICMPError(frame, k, p, p.l4+8, false)
		default:
			return parseBad
		}
	case protoICMPv6:
		if k.v6 == 0 {
			return parseOK
		}
		if len(b) < 8 {
			return parseBad
		}
		typ, code := b[0], b[1]
		switch typ {
		case icmp6Echo, icmp6EchoReply:
			if code != 0 {
				return parseBad
			}
			id := be16(b[4:])
			k.sport, k.dport = id, id
			k.styp, k.dtyp = typ, reverseICMP6(typ)
		case icmp6DstUnreach, icmp6PacketTooBig, icmp6TimeExceeded, icmp6ParamProb:
			if !outer || p.frag != 0 {
				return parseBad
			}
			return parseICMPError(frame, k, p, p.l4+8, true)
		default:
			// Neighbor discovery, MLD and the rest are not trackable (as in
			// OVS): the pipeline should not send them to ct().
			return parseBad
		}
	}
	return parseOK
}

// parseICMPError reads the packet embedded in an ICMP error at off. The
// embedded packet travelled the other way, so the key is its reverse. Its
// source must be the outer destination (pf and OVS check this too).
func parseICMPError(frame []byte, k *key, p *pkt, off int, v6 bool) parseResult {
	if off > p.end {
		return parseBad
	}
	var in key
	in.zone = k.zone
	var r parseResult
	// Only the bytes of the outer datagram belong to the embedded packet.
	f := frame[:p.end]
	if v6 {
		r = parseIPv6(f, off, &in, p, false)
	} else {
		r = parseIPv4(f, off, &in, p, false)
	}
	if r != parseOK {
		return parseBad // an embedded fragment is not a trackable error either
	}
	if in.src != k.dst {
		return parseBad
	}
	if r := parseL4(f, &in, p, false); r != parseOK {
		return parseBad
	}
	p.in3 = off
	p.related = true
	*k = in.reverse()
	return parseOK
}

func reverseICMP4(t uint8) uint8 {
	switch t {
	case icmp4Echo:
		return icmp4EchoReply
	case icmp4EchoReply:
		return icmp4Echo
	case icmp4Timestamp:
		return icmp4TimestampRep
	case icmp4TimestampRep:
		return icmp4Timestamp
	case icmp4InfoReq:
		return icmp4InfoReply
	case icmp4InfoReply:
		return icmp4InfoReq
	}
	return t
}

func reverseICMP6(t uint8) uint8 {
	switch t {
	case icmp6Echo:
		return icmp6EchoReply
	case icmp6EchoReply:
		return icmp6Echo
	}
	return t
}

// l4ChecksumOK verifies the IPv4 header checksum and the L4 checksum
// (Config.VerifyChecksums). Off by default: frames read from veths with
// checksum offload carry partial checksums.
func l4ChecksumOK(frame []byte, p *pkt, k *key) bool {
	if !p.v6 {
		ihl := int(frame[p.l3]&0x0f) * 4
		if checksum(frame[p.l3:p.l3+ihl], 0) != 0 {
			return false
		}
	}
	if p.frag != 0 {
		return true // the L4 checksum covers the whole datagram
	}
	l4 := frame[p.l4:p.end]
	switch k.proto {
	case protoTCP, protoUDP, protoICMPv6:
		if k.proto == protoUDP && !p.v6 && len(l4) >= 8 && be16(l4[6:]) == 0 {
			return true // no checksum
		}
		if k.proto == protoICMPv6 && !p.v6 {
			return true
		}
		return checksum(l4, pseudoSum(frame, p, k.proto)) == 0
	case protoICMP:
		if p.v6 {
			return true
		}
		return checksum(l4, 0) == 0
	}
	return true
}
