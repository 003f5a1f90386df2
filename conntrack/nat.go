package conntrack

import (
	"encoding/binary"
	"math/rand/v2"
)

// NAT actions stored in conn.nat.
const (
	natSrc uint8 = 1
	natDst uint8 = 2
)

func natReverse(a uint8) uint8 {
	switch a {
	case natSrc:
		return natDst
	case natDst:
		return natSrc
	}
	return a
}

// Ephemeral port classes used when a port must change but no range was
// given: the replacement stays in the class of the original port, as in OVS
// (and Linux).
func portClass(p uint16) (lo, hi uint16) {
	switch {
	case p < 512:
		return 1, 511
	case p < 1024:
		return 600, 1023
	}
	return 1024, 65535
}

// natAddr is an address range of a NAT clause in key form.
func natAddrs(n *NAT, v6 bool) (min, max [16]byte, set, ok bool) {
	if !n.MinAddr.IsValid() {
		return min, max, false, true
	}
	maxA := n.MaxAddr
	if !maxA.IsValid() {
		maxA = n.MinAddr
	}
	if n.MinAddr.Is4() != !v6 || maxA.Is4() != !v6 {
		return min, max, false, false // address family mismatch
	}
	if v6 {
		min, max = n.MinAddr.As16(), maxA.As16()
	} else {
		a, b := n.MinAddr.As4(), maxA.As4()
		copy(min[:4], a[:])
		copy(max[:4], b[:])
	}
	return min, max, true, true
}

// rangeHash is the hash that picks the address (and, unless Random, the
// first port to try). With Persistent only the source address counts, so a
// client always gets the same translated address.
func (t *Tracker) rangeHash(k *key, n *NAT, persistent bool) uint64 {
	var h uint64
	if persistent {
		h = mix(binary.LittleEndian.Uint64(k.src[:8])^0x9e3779b97f4a7c15, binary.LittleEndian.Uint64(k.src[8:])^0xa0761d6478bd642f)
	} else {
		h = k.hash(t.seed ^ 0x5851f42d4c957f2d)
	}
	h = mix(h^uint64(n.MinPort)<<16^uint64(n.MaxPort), uint64(k.zone)<<8^uint64(k.proto)^0xe7037ed1a0b428db)
	return h
}

// addrInRange returns min + off (mod size of the range). IPv6 ranges are
// limited to 2^32 addresses (like OVS).
func addrInRange(min, max [16]byte, v6 bool, h uint64) [16]byte {
	if !v6 {
		lo, hi := be32(min[:4]), be32(max[:4])
		if hi < lo {
			hi = lo
		}
		n := uint64(hi-lo) + 1
		var r [16]byte
		binary.BigEndian.PutUint32(r[:4], lo+uint32(h%n))
		return r
	}
	loHi, loLo := binary.BigEndian.Uint64(min[:8]), binary.BigEndian.Uint64(min[8:])
	hiHi, hiLo := binary.BigEndian.Uint64(max[:8]), binary.BigEndian.Uint64(max[8:])
	var delta uint64
	switch {
	case loHi == hiHi && loLo <= hiLo:
		delta = hiLo - loLo
	case loHi+1 == hiHi && loLo > hiLo:
		delta = hiLo - loLo // wraps around correctly
	default:
		delta = 0xfffffffe
	}
	if delta > 0xfffffffe {
		delta = 0xfffffffe
	}
	off := h % (delta + 1)
	lo := loLo + off
	carry := uint64(0)
	if lo < loLo {
		carry = 1
	}
	var r [16]byte
	binary.BigEndian.PutUint64(r[:8], loHi+carry)
	binary.BigEndian.PutUint64(r[8:], lo)
	return r
}

// natPlan is the first reply key that natSelect tries for a new
// connection, computed before the connection's own lookup: execute loads
// the candidate's index slot together with the lookup's, so that the check
// that the candidate is free does not take a cache miss of its own after
// the lookup's (see execute).
type natPlan struct {
	rev    key    // the first candidate reply key
	h      uint64 // rev.hash(seed)
	off    uint64 // where port searches start
	action uint8  // natSrc or natDst
	ok     bool   // false: the clause cannot apply (address family)
}

// natFirst fills pl for a new connection with original key k under the
// clause n: the translated address and the first port natSelect tries.
//
// SNAT: pick an address in the range (all-zero: keep the source address);
// keep the source port if the tuple is free, else try the others of the
// range (or of the port's class).
// DNAT: pick an address; with a port range, pick a destination port in it;
// if every such tuple is taken, change the source port as SNAT would.
func (t *Tracker) natFirst(k *key, n *NAT, pl *natPlan) {
	pl.rev = k.reverse()
	rev := &pl.rev
	v6 := k.v6 != 0
	min, max, addrSet, ok := natAddrs(n, v6)
	pl.ok = ok
	if !ok {
		return
	}
	pl.action = natSrc
	if n.Action == NATDst {
		pl.action = natDst
	}
	h := t.rangeHash(k, n, n.Persistent)
	switch {
	case n.Random:
		pl.off = rand.Uint64()
	case n.Persistent:
		pl.off = t.rangeHash(k, n, false)
	default:
		pl.off = h
	}
	// An all-zero address keeps the original one, and only a collision
	// changes the port (OVS's find_addr, Datapath capability
	// ct_zero_snat).
	if addrSet && min != ([16]byte{}) {
		addr := addrInRange(min, max, v6, h)
		if pl.action == natSrc {
			rev.dst = addr
		} else {
			rev.src = addr
		}
	}
	if k.hasPorts() && n.MinPort != 0 {
		pmin, pmax := natPortRange(n)
		cur := pmin + uint16(pl.off%(uint64(pmax-pmin)+1))
		switch {
		case pl.action == natDst && !k.isICMP():
			rev.sport = cur
		case pl.action == natSrc:
			rev.dport = cur
			if k.isICMP() {
				rev.sport = cur
			}
		}
	}
	pl.h = rev.hash(t.seed)
}

func natPortRange(n *NAT) (uint16, uint16) {
	if n.MaxPort < n.MinPort {
		return n.MinPort, n.MinPort
	}
	return n.MinPort, n.MaxPort
}

// natSelect chooses the reply key pl.rev of a new connection with original
// key k under the clause n, starting from the candidate natFirst chose, so
// that no other connection uses it. It returns the NAT action to store.
// Port search visits up to 128 ports from a hashed (or random) start, then
// keeps halving the count from random starts, as OVS does.
func (t *Tracker) natSelect(k *key, n *NAT, pl *natPlan, now int64) (uint8, bool) {
	if !pl.ok {
		return 0, false
	}
	rev, action, off := &pl.rev, pl.action, pl.off
	if !k.hasPorts() {
		return action, !t.exists(rev, pl.h, now)
	}
	portRange := n.MinPort != 0
	pmin, pmax := natPortRange(n)
	icmp := k.isICMP()

	// DNAT with a port range: choose the destination port first.
	if action == natDst && portRange && !icmp {
		cur := pmin + uint16(off%(uint64(pmax-pmin)+1))
		if t.uniquePort(rev, pl.h, &rev.sport, nil, cur, pmin, pmax, now) {
			return action, true
		}
	}
	// Source port (for ICMP: the query id, on both sides).
	var cur, lo, hi uint16
	if action == natSrc && portRange {
		lo, hi = pmin, pmax
		cur = lo + uint16(off%(uint64(hi-lo)+1))
	} else {
		cur = k.sport
		lo, hi = portClass(cur)
	}
	var peer *uint16
	if icmp {
		peer = &rev.sport
	}
	return action, t.uniquePort(rev, pl.h, &rev.dport, peer, cur, lo, hi, now)
}

// uniquePort looks for a value of *port in [lo, hi], starting at cur (which
// may lie outside the range, then it is tried first), for which rev is free.
// h0 is the hash of rev as it is on entry: the first candidate usually
// leaves rev unchanged, and its hash is known.
func (t *Tracker) uniquePort(rev *key, h0 uint64, port, peer *uint16, cur, lo, hi uint16, now int64) bool {
	size := int(hi-lo) + 1
	attempts := min(size, 128)
	orig := cur
	for {
		n := attempts
		if cur < lo || cur > hi {
			n++ // the out-of-range start is an extra attempt
		}
		for i := 0; i < n; i++ {
			same := *port == cur && (peer == nil || *peer == cur)
			*port = cur
			if peer != nil {
				*peer = cur
			}
			h := h0
			if !same {
				h = rev.hash(t.seed)
				h0 = h
			}
			if !t.exists(rev, h, now) {
				return true
			}
			if cur < lo || cur >= hi {
				cur = lo
			} else {
				cur++
			}
		}
		if attempts < size && attempts >= 16 {
			attempts /= 2
			cur = lo + uint16(rand.IntN(size))
			continue
		}
		break
	}
	*port = orig
	if peer != nil {
		*peer = orig
	}
	return false
}

// natPacket rewrites the packet of connection c travelling in direction dir
// (0 original, 1 reply) and returns the ct_state bit to add. The packet must
// come out as the reverse of the other direction's key: the original packet
// of a DNAT connection gets the endpoint as destination, its reply gets the
// virtual address back as source. For an ICMP error, the outer header gets
// the translated address and the embedded packet is translated the opposite
// way, so the receiver recognizes the packet it sent.
func (t *Tracker) natPacket(frame []byte, p *pkt, c *conn, dir int) uint8 {
	act := c.nat
	if dir == 1 {
		act = natReverse(act)
	}
	other := c.key(1 - dir)
	v6 := p.v6
	alen := 4
	if v6 {
		alen = 16
	}
	srcOff, dstOff := p.l3+12, p.l3+16
	if v6 {
		srcOff, dstOff = p.l3+8, p.l3+24
	}
	proto := c.key0.proto

	if !p.related {
		var csumOff int
		udp4 := false
		switch proto {
		case protoTCP:
			csumOff = p.l4 + 16
		case protoUDP, protoUDPLite:
			csumOff = p.l4 + 6
			udp4 = !v6
		case protoDCCP:
			csumOff = p.l4 + 6
		case protoICMPv6:
			if v6 {
				csumOff = p.l4 + 2
			}
		case protoICMP:
			if !v6 {
				csumOff = p.l4 + 2 // not in a pseudo-header; used for the id
			}
		}
		if csumOff+2 > p.end {
			csumOff = 0
		}
		partial := p.csumPartial && (proto == protoTCP || proto == protoUDP)
		icmp4 := proto == protoICMP && !v6
		// Addresses.
		var aoff int
		var naddr []byte
		if act == natSrc {
			aoff, naddr = srcOff, other.dst[:alen]
		} else {
			aoff, naddr = dstOff, other.src[:alen]
		}
		if partial {
			// The partial checksum covers the pseudo-header only: fix it
			// for the address, not for the ports.
			var old [16]byte
			copy(old[:alen], frame[aoff:aoff+alen])
			rewrite(frame, aoff, naddr, v6, p.l3, 0, false, false)
			if csumOff > 0 {
				fixPartialCsum(frame, csumOff, old[:alen], naddr)
			}
			csumOff = 0
		} else {
			rewrite(frame, aoff, naddr, v6, p.l3, csumOff, udp4, icmp4)
		}
		// Ports, or the ICMP query id.
		if c.key0.hasPorts() {
			if c.key0.isICMP() {
				setPort(frame, p.l4+4, other.sport, csumOff, false)
			} else {
				setPort(frame, p.l4, other.dport, csumOff, udp4)
				setPort(frame, p.l4+2, other.sport, csumOff, udp4)
			}
			if proto == protoSCTP {
				sctpFixCRC(frame[p.l4:p.end])
			}
		}
	} else {
		// Outer header: only the translated side.
		if act == natSrc {
			rewrite(frame, srcOff, other.dst[:alen], v6, p.l3, 0, false, false)
		} else {
			rewrite(frame, dstOff, other.src[:alen], v6, p.l3, 0, false, false)
		}
		// Embedded packet: translated the other way.
		iv6 := p.inV6
		isrc, idst := p.in3+12, p.in3+16
		if iv6 {
			isrc, idst = p.in3+8, p.in3+24
		}
		icsum := 0
		iudp4 := false
		switch proto {
		case protoTCP:
			if p.in4+18 <= p.end {
				icsum = p.in4 + 16
			}
		case protoUDP:
			if p.in4+8 <= p.end {
				icsum = p.in4 + 6
				iudp4 = !iv6
			}
		}
		inIPCsum := p.in3
		if iv6 {
			inIPCsum = -1
		}
		if natReverse(act) == natSrc {
			rewrite(frame, isrc, other.src[:alen], iv6, inIPCsum, icsum, iudp4, false)
		} else {
			rewrite(frame, idst, other.dst[:alen], iv6, inIPCsum, icsum, iudp4, false)
		}
		if c.key0.hasPorts() {
			if c.key0.isICMP() {
				if p.in4+6 <= p.end {
					binary.BigEndian.PutUint16(frame[p.in4+4:], other.sport)
				}
			} else {
				setPort(frame, p.in4, other.sport, icsum, iudp4)
				setPort(frame, p.in4+2, other.dport, icsum, iudp4)
			}
		}
		// The ICMP checksum covers everything above: recompute it.
		icmp := frame[p.l4:p.end]
		icmp[2], icmp[3] = 0, 0
		var init uint32
		if v6 {
			init = pseudoSum(frame, p, protoICMPv6)
		}
		binary.BigEndian.PutUint16(icmp[2:], checksum(icmp, init))
	}
	if act == natSrc {
		return StateSNAT
	}
	return StateDNAT
}

// rewrite replaces the address at frame[off:off+len(naddr)] and fixes the
// IPv4 header checksum (ipHdr >= 0: offset of the IPv4 header) and the L4
// checksum at csumOff (0: none; icmp4: the ICMPv4 checksum does not cover
// addresses).
func rewrite(frame []byte, off int, naddr []byte, v6 bool, ipHdr, csumOff int, udp4, icmp4 bool) {
	old := frame[off : off+len(naddr)]
	if string(old) == string(naddr) {
		return
	}
	var oldBuf [16]byte
	copy(oldBuf[:], old)
	ob := oldBuf[:len(naddr)]
	copy(old, naddr)
	if !v6 && ipHdr >= 0 {
		fixCsum(frame, ipHdr+10, ob, naddr)
	}
	if csumOff > 0 && !icmp4 {
		if udp4 {
			fixUDPCsum(frame, csumOff, ob, naddr)
		} else {
			fixCsum(frame, csumOff, ob, naddr)
		}
	}
}

// setPort writes a 16-bit port at off and fixes the checksum at csumOff.
func setPort(frame []byte, off int, port uint16, csumOff int, udp4 bool) {
	if off+2 > len(frame) {
		return
	}
	oldP := binary.BigEndian.Uint16(frame[off:])
	if oldP == port {
		return
	}
	var ob, nb [2]byte
	binary.BigEndian.PutUint16(ob[:], oldP)
	binary.BigEndian.PutUint16(nb[:], port)
	binary.BigEndian.PutUint16(frame[off:], port)
	if csumOff > 0 {
		if udp4 {
			fixUDPCsum(frame, csumOff, ob[:], nb[:])
		} else {
			fixCsum(frame, csumOff, ob[:], nb[:])
		}
	}
}
