package flowtable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Offload is what a port that receives with offload metadata (Linux's
// struct virtio_net_hdr: AF_PACKET with PACKET_VNET_HDR, TAP with
// IFF_VNET_HDR) says about a frame: its L4 checksum may still be partial,
// and it may be a TCP or UDP "super-segment" larger than the MTU that the
// kernel segments when it finally sends it (GSO). Forwarding such frames
// unsegmented and with partial checksums between ports that take them is
// what makes userspace TSO cheap; the datapath completes or segments them
// only for ports that cannot (tunnels, controllers, plain sockets).
type Offload struct {
	// CsumPartial: the L4 checksum field at CsumStart+CsumOffset holds
	// the folded, uncomplemented pseudo-header sum only
	// (CHECKSUM_PARTIAL); the sum over Frame[CsumStart:] is still to be
	// added.
	CsumPartial bool
	CsumStart   int
	CsumOffset  int

	// GSOType says how the frame is to be segmented (GSONone: it is
	// not a super-segment); GSOSize is the L4 payload of each segment.
	GSOType GSOType
	GSOSize int
	// GSOECN: the TCP stream uses ECN (VIRTIO_NET_HDR_GSO_ECN), so CWR
	// stays on the first segment only.
	GSOECN bool
}

// GSOType is the kind of segmentation a super-segment needs, named after
// VIRTIO_NET_HDR_GSO_*.
type GSOType uint8

// GSO types.
const (
	GSONone  GSOType = iota
	GSOTCPv4         // TSO over IPv4
	GSOTCPv6         // TSO over IPv6
	GSOUDPL4         // UDP segmentation (UDP_SEGMENT), IPv4 or IPv6
)

// Active reports whether the frame needs any offload work before it
// reaches a port without offload support.
func (o *Offload) Active() bool { return o.CsumPartial || o.GSOType != GSONone }

// Errors from Segment and CompleteChecksum.
var (
	ErrBadOffload = errors.New("frame does not match its offload metadata")
)

// CompleteChecksum turns a partial L4 checksum into a complete one, like
// Linux's skb_checksum_help: the partial field already holds the
// pseudo-header sum, so summing from CsumStart to the end of the frame
// with it in place gives the whole checksum. udp says the checksum is
// UDP's, where a computed 0 is sent as all ones (0 means "none").
func CompleteChecksum(frame []byte, o *Offload, udp bool) error {
	if !o.CsumPartial {
		return nil
	}
	at := o.CsumStart + o.CsumOffset
	if o.CsumStart < 0 || o.CsumOffset < 0 || at+2 > len(frame) {
		return fmt.Errorf("checksum start %d offset %d in a %d-byte frame: %w", o.CsumStart, o.CsumOffset, len(frame), ErrBadOffload)
	}
	c := ^fold(sum64(frame[o.CsumStart:], 0))
	if c == 0 && udp {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(frame[at:], c)
	o.CsumPartial = false
	return nil
}

// partialUDP reports whether the packet's partial checksum is its UDP one.
func (p *Packet) partialUDP() bool {
	return p.L4 >= 0 && p.L4 == p.Offload.CsumStart && p.Key.NwProto() == IPProtoUDP
}

// CompleteChecksum completes a partial L4 checksum of the packet in place.
func (p *Packet) CompleteChecksum() error {
	p.Unshare()
	return CompleteChecksum(p.Frame, &p.Offload, p.partialUDP())
}

// CompleteChecksumIn completes the partial L4 checksum in frame, a copy of
// the packet's frame, leaving the packet itself as it is.
func (p *Packet) CompleteChecksumIn(frame []byte) error {
	o := p.Offload
	return CompleteChecksum(frame, &o, p.partialUDP())
}

// sum64 is the unfolded one's-complement sum of b (big-endian 16-bit
// words, an odd last byte padded with zero), added to initial. It adds 8
// bytes at a time with the carry folded back in, which is what makes
// completing a 64 KiB super-segment's checksum cheap.
func sum64(b []byte, initial uint64) uint64 {
	s, c := initial, uint64(0)
	for len(b) >= 32 {
		s, c = bits.Add64(s, binary.BigEndian.Uint64(b), c)
		s, c = bits.Add64(s, binary.BigEndian.Uint64(b[8:]), c)
		s, c = bits.Add64(s, binary.BigEndian.Uint64(b[16:]), c)
		s, c = bits.Add64(s, binary.BigEndian.Uint64(b[24:]), c)
		b = b[32:]
	}
	for len(b) >= 8 {
		s, c = bits.Add64(s, binary.BigEndian.Uint64(b), c)
		b = b[8:]
	}
	s, c = bits.Add64(s, 0, c)
	s += c // cannot carry again: the previous add left s < 2^64-1 or c = 0
	// The last 0-7 bytes, padded with zeros: big-endian 16-bit words
	// stay aligned with the ones before.
	var last [8]byte
	copy(last[:], b)
	tail := binary.BigEndian.Uint64(last[:])
	s, c = bits.Add64(s, tail, 0)
	return s + c
}

// fold folds a 64-bit one's-complement sum to 16 bits (uncomplemented).
func fold(s uint64) uint16 {
	s = s&0xffffffff + s>>32
	s = s&0xffffffff + s>>32
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	return uint16(s)
}

// partialUpdate16 updates a partial (uncomplemented pseudo-header) checksum
// for a 16-bit word change: the same RFC 1624 arithmetic as csumUpdate16,
// on the sum rather than on its complement.
func partialUpdate16(sum, old, new uint16) uint16 {
	return ^csumUpdate16(^sum, old, new)
}

// Segment cuts a GSO super-segment into frames of at most GSOSize L4
// payload bytes, each with its own IP length, IPv4 ID and header checksum,
// TCP sequence number and flags or UDP length, and a complete L4
// checksum, the way Linux's tcp_gso_segment and udp4_ufo_fragment do for a
// device without TSO. buf returns a buffer of the length asked for, which
// Segment fills with one segment. A frame without GSO gets one copy with
// its checksum completed. It returns the number of segments.
func (p *Packet) Segment(buf func(n int) []byte) (int, error) {
	o := &p.Offload
	f := p.Frame
	if o.GSOType == GSONone {
		out := buf(len(f))
		copy(out, f)
		if err := p.CompleteChecksumIn(out); err != nil {
			return 0, err
		}
		return 1, nil
	}
	if p.L3 < 0 || p.L4 < 0 || o.GSOSize <= 0 {
		return 0, fmt.Errorf("GSO frame without L3/L4 headers or segment size %d: %w", o.GSOSize, ErrBadOffload)
	}
	v6 := false
	switch p.Key.EthType() {
	case EthTypeIPv4:
		if len(f) < p.L3+20 {
			return 0, fmt.Errorf("GSO frame: short IPv4 header: %w", ErrBadOffload)
		}
	case EthTypeIPv6:
		v6 = true
		if len(f) < p.L3+40 {
			return 0, fmt.Errorf("GSO frame: short IPv6 header: %w", ErrBadOffload)
		}
	default:
		return 0, fmt.Errorf("GSO frame with ethertype %#04x: %w", p.Key.EthType(), ErrBadOffload)
	}
	var hdrLen, csumAt int
	proto := p.Key.NwProto()
	switch {
	case proto == IPProtoTCP && (o.GSOType == GSOTCPv4 || o.GSOType == GSOTCPv6):
		if len(f) < p.L4+20 {
			return 0, fmt.Errorf("GSO frame: short TCP header: %w", ErrBadOffload)
		}
		hdrLen = p.L4 + int(f[p.L4+12]>>4)*4
		csumAt = p.L4 + 16
	case proto == IPProtoUDP && o.GSOType == GSOUDPL4:
		hdrLen = p.L4 + 8
		csumAt = p.L4 + 6
	default:
		return 0, fmt.Errorf("GSO type %d for IP protocol %d: %w", o.GSOType, proto, ErrBadOffload)
	}
	if hdrLen > len(f) || hdrLen < p.L4+8 {
		return 0, fmt.Errorf("GSO frame: L4 header past the frame: %w", ErrBadOffload)
	}
	payload := f[hdrLen:]
	mss := o.GSOSize
	n := 0
	seq := uint32(0)
	var ipID uint16
	if proto == IPProtoTCP {
		seq = binary.BigEndian.Uint32(f[p.L4+4:])
	}
	if !v6 {
		ipID = binary.BigEndian.Uint16(f[p.L3+4:])
	}
	var addrs []byte
	if v6 {
		addrs = f[p.L3+8 : p.L3+40]
	} else {
		addrs = f[p.L3+12 : p.L3+20]
	}
	for off := 0; off < len(payload) || n == 0; off += mss {
		end := min(off+mss, len(payload))
		seg := buf(hdrLen + end - off)
		copy(seg, f[:hdrLen])
		copy(seg[hdrLen:], payload[off:end])
		last := end == len(payload)
		l4len := len(seg) - p.L4
		if v6 {
			binary.BigEndian.PutUint16(seg[p.L3+4:], uint16(len(seg)-p.L3-40))
		} else {
			ip := seg[p.L3:]
			binary.BigEndian.PutUint16(ip[2:], uint16(len(seg)-p.L3))
			binary.BigEndian.PutUint16(ip[4:], ipID+uint16(n))
			ip[10], ip[11] = 0, 0
			ihl := int(ip[0]&0x0f) * 4
			binary.BigEndian.PutUint16(ip[10:], ^fold(sum64(ip[:ihl], 0)))
		}
		l4 := seg[p.L4:]
		if proto == IPProtoTCP {
			binary.BigEndian.PutUint32(l4[4:], seq+uint32(off))
			const fin, psh, cwr = 0x01, 0x08, 0x80
			if !last {
				l4[13] &^= fin | psh
			}
			if n > 0 {
				l4[13] &^= cwr
			}
		} else {
			binary.BigEndian.PutUint16(l4[4:], uint16(l4len))
		}
		seg[csumAt], seg[csumAt+1] = 0, 0
		ps := sum64(addrs, uint64(proto)+uint64(l4len))
		c := ^fold(sum64(l4, ps))
		if c == 0 && proto == IPProtoUDP {
			c = 0xffff
		}
		binary.BigEndian.PutUint16(seg[csumAt:], c)
		n++
		if last {
			break
		}
	}
	return n, nil
}
