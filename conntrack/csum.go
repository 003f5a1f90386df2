package conntrack

import (
	"encoding/binary"
	"hash/crc32"
)

// checksum returns the Internet checksum (RFC 1071) of b, starting from the
// partial 32-bit sum initial (e.g. a pseudo-header sum). A buffer whose
// checksum field is correct sums to 0.
func checksum(b []byte, initial uint32) uint16 {
	sum := uint64(initial)
	for len(b) >= 8 {
		sum += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	for len(b) >= 2 {
		sum += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint64(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// pseudoSum is the unfolded sum of the TCP/UDP/ICMPv6 pseudo-header of the
// outer packet.
func pseudoSum(frame []byte, p *pkt, proto uint8) uint32 {
	var sum uint32
	var addrs []byte
	if p.v6 {
		addrs = frame[p.l3+8 : p.l3+40]
	} else {
		addrs = frame[p.l3+12 : p.l3+20]
	}
	for i := 0; i < len(addrs); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(addrs[i:]))
	}
	l := uint32(p.end - p.l4)
	sum += l>>16 + l&0xffff + uint32(proto)
	return sum
}

// csumAdjust updates checksum csum for the replacement of the 16-bit-aligned
// bytes old by new (RFC 1624, HC' = ~(~HC + ~m + m')).
func csumAdjust(csum uint16, old, new []byte) uint16 {
	sum := uint32(^csum)
	for i := 0; i+1 < len(old); i += 2 {
		sum += uint32(^binary.BigEndian.Uint16(old[i:]))
		sum += uint32(binary.BigEndian.Uint16(new[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// fixCsum applies csumAdjust to the checksum stored at frame[off:off+2].
func fixCsum(frame []byte, off int, old, new []byte) {
	c := binary.BigEndian.Uint16(frame[off:])
	binary.BigEndian.PutUint16(frame[off:], csumAdjust(c, old, new))
}

// fixPartialCsum updates a partial checksum (CHECKSUM_PARTIAL: the field
// holds the uncomplemented pseudo-header sum) at frame[off:off+2] for the
// replacement of old by new in the pseudo-header.
func fixPartialCsum(frame []byte, off int, old, new []byte) {
	c := binary.BigEndian.Uint16(frame[off:])
	binary.BigEndian.PutUint16(frame[off:], ^csumAdjust(^c, old, new))
}

// fixUDPCsum is fixCsum for UDP over IPv4, where 0 means "no checksum" and a
// computed 0 is sent as 0xffff.
func fixUDPCsum(frame []byte, off int, old, new []byte) {
	c := binary.BigEndian.Uint16(frame[off:])
	if c == 0 {
		return
	}
	c = csumAdjust(c, old, new)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(frame[off:], c)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sctpFixCRC recomputes the CRC32c of the SCTP packet b (RFC 4960 appendix B;
// the checksum field is stored little-endian).
func sctpFixCRC(b []byte) {
	if len(b) < 12 {
		return
	}
	b[8], b[9], b[10], b[11] = 0, 0, 0, 0
	c := crc32.Checksum(b, castagnoli)
	binary.LittleEndian.PutUint32(b[8:], c)
}
