package flowtable

import (
	"encoding/binary"
	"hash/crc32"
)

// Header rewrites whose checksums are not a 16-bit one's complement sum
// of the changed words alone: SCTP's CRC32c, and ICMPv6 (type, code and
// the Neighbor Discovery target and link-layer address options, all under
// the ICMPv6 checksum).

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// l4End returns the end of the L4 payload: the IP length, not the frame's
// (an Ethernet frame may be padded).
func (p *Packet) l4End() int {
	end := len(p.Frame)
	if p.L3 < 0 {
		return end
	}
	ip := p.Frame[p.L3:]
	switch p.Key.EthType() {
	case EthTypeIPv4:
		if len(ip) >= 4 {
			end = min(end, p.L3+int(binary.BigEndian.Uint16(ip[2:])))
		}
	case EthTypeIPv6:
		if len(ip) >= 6 {
			end = min(end, p.L3+40+int(binary.BigEndian.Uint16(ip[4:])))
		}
	}
	return end
}

// sctpCRC is the SCTP checksum of b with its checksum field taken as zero,
// as it sits in the header (the CRC's bytes in little-endian order, RFC
// 4960 appendix B as Linux and OVS store it).
func sctpCRC(b []byte) uint32 {
	saved := binary.LittleEndian.Uint32(b[8:])
	binary.LittleEndian.PutUint32(b[8:], 0)
	c := crc32.Checksum(b, castagnoli)
	binary.LittleEndian.PutUint32(b[8:], saved)
	return c
}

// commitSCTP writes changed SCTP ports and updates the CRC32c the way OVS's
// packet_set_sctp_port does: the stored checksum keeps its error, if it
// had one (stored ^ correct-before ^ correct-after).
func (p *Packet) commitSCTP() {
	k, base := &p.Key, &p.base
	if !headerChanged(k, base, offTpSrc, 4) {
		return
	}
	end := p.l4End()
	if end < p.L4+12 {
		return
	}
	sh := p.Frame[p.L4:end]
	before := sctpCRC(sh)
	binary.BigEndian.PutUint16(sh[0:], k.u16(offTpSrc))
	binary.BigEndian.PutUint16(sh[2:], k.u16(offTpDst))
	after := sctpCRC(sh)
	binary.LittleEndian.PutUint32(sh[8:], binary.LittleEndian.Uint32(sh[8:])^before^after)
}

// commitICMPv6 writes a changed ICMPv6 type and code, ND target and ND
// source/target link-layer address options, updating the checksum.
func (p *Packet) commitICMPv6(upd16 func([]byte, uint16, uint16), l4csum []byte) {
	k, base := &p.Key, &p.base
	// A frame whose IP length ends before its L4 header (FuzzExtract
	// found one) has no ICMPv6 header to rewrite.
	end := p.l4End()
	if end < p.L4+4 {
		return
	}
	l4 := p.Frame[p.L4:end]
	put := func(b []byte, v []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			old, new := binary.BigEndian.Uint16(b[i:]), binary.BigEndian.Uint16(v[i:])
			if old != new {
				upd16(l4csum, old, new)
			}
		}
		copy(b, v)
	}
	if headerChanged(k, base, offTpSrc, 4) {
		put(l4[0:2], []byte{byte(k.u16(offTpSrc)), byte(k.u16(offTpDst))})
	}
	nd := l4[0] == 135 || l4[0] == 136
	if !nd || len(l4) < 24 {
		return
	}
	if headerChanged(k, base, offNdTarget, 16) {
		put(l4[8:24], k[offNdTarget:offNdTarget+16])
	}
	sll, tll := headerChanged(k, base, offArpSha, 6), headerChanged(k, base, offArpTha, 6)
	if !sll && !tll {
		return
	}
	for o := 24; o+8 <= len(l4); {
		typ, ln := l4[o], int(l4[o+1])*8
		if ln == 0 || o+ln > len(l4) {
			break
		}
		if ln == 8 && typ == 1 && sll {
			put(l4[o+2:o+8], k[offArpSha:offArpSha+6])
		} else if ln == 8 && typ == 2 && tll {
			put(l4[o+2:o+8], k[offArpTha:offArpTha+6])
		}
		o += ln
	}
}
