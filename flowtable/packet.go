package flowtable

import (
	"encoding/binary"
	"errors"
)

// Packet is a frame going through the pipeline: its bytes, the key as the
// pipeline currently sees it, and where its headers are.
type Packet struct {
	Frame []byte
	Key   Key

	// base is the header part of the key the frame bytes currently
	// reflect; Commit writes the differences between Key and base into
	// Frame.
	base headerBase
	L3   int // offset of the L3 header (-1: none)
	L4   int // offset of the L4 header (-1: none)

	// Offload is the receiving port's offload metadata (partial
	// checksum, GSO), set before Extract; zero for plain frames.
	Offload Offload

	// CtNow is the time of the packet's batch on the Conntrack's clock
	// (ConntrackClock.Now), 0 when the caller did not read it.
	CtNow int64

	// Counters, when set, are the table statistics of the packet loop the
	// packet belongs to (single writer, see TableCounters); nil: the
	// pipeline's shared set (or a recording flow cache's).
	Counters *TableCounters

	// Alloc, when set, gives Unshare the buffer a lent frame moves to (a
	// packet loop hands out buffers from its pool); nil: make.
	Alloc func(n int) []byte
	// lent is set while a Sink holds Frame's bytes without a copy (Lend):
	// the next write to the frame moves it to a buffer of its own first.
	lent bool
}

// Lend tells the packet that a Sink kept a reference to Frame's bytes
// rather than a copy (an output queued until the end of the batch): from
// now on they must not change, so the next write to the frame goes to a
// copy (copy on write). A packet's last output, the common case, then
// costs no copy at all.
func (p *Packet) Lend() { p.lent = true }

// Unshare makes Frame the packet's own to write: after Lend, it moves the
// frame to a new buffer. Everything that writes Frame calls it first.
func (p *Packet) Unshare() {
	if !p.lent {
		return
	}
	p.lent = false
	var buf []byte
	if p.Alloc != nil {
		buf = p.Alloc(len(p.Frame))
	} else {
		buf = make([]byte, len(p.Frame))
	}
	copy(buf, p.Frame)
	p.Frame = buf
}

// Errors from Extract.
var (
	ErrRunt = errors.New("frame shorter than an Ethernet header")
)

// Extract parses frame into p (keeping p.Key's metadata fields: in_port,
// registers, tunnel) with fixed offsets and no allocation. A frame whose
// inner headers are truncated is still extracted as far as it goes, as OVS
// does; only a frame without a whole Ethernet header is an error.
func (p *Packet) Extract(frame []byte) error {
	p.Frame = frame
	p.lent = false
	k := &p.Key
	// Every return (fragments stop early) leaves base equal to the key:
	// Commit writes what differs from base into the frame.
	defer p.setBase()
	// Clear the packet-header part of the key (everything from vlan_tci on,
	// except the tunnel metadata area and ct_ipv6 fields which are metadata).
	clearHeaders(k)
	p.L3, p.L4 = -1, -1
	if len(frame) < 14 {
		p.setBase()
		return ErrRunt
	}
	copy(k[offEthDst:offEthDst+6], frame[0:6])
	copy(k[offEthSrc:offEthSrc+6], frame[6:12])
	off := 12
	typ := binary.BigEndian.Uint16(frame[off:])
	if (typ == EthTypeVLAN || typ == EthTypeQinQ) && len(frame) >= off+6 {
		tci := binary.BigEndian.Uint16(frame[off+2:])
		k.setU16(offVlanTCI, tci|VlanCFI)
		off += 4
		typ = binary.BigEndian.Uint16(frame[off:])
	}
	if typ < 0x600 {
		typ = 0x05ff // 802.2 frames, as OVS FLOW_DL_TYPE_NONE
	}
	k.SetEthType(typ)
	l3 := off + 2
	p.L3 = l3
	b := frame[l3:]
	switch typ {
	case EthTypeIPv4:
		if len(b) < 20 || b[0]>>4 != 4 {
			break
		}
		ihl := int(b[0]&0x0f) * 4
		if ihl < 20 || len(b) < ihl {
			break
		}
		k.setU8(offNwTos, b[1])
		k.setU8(offNwTTL, b[8])
		proto := b[9]
		k.SetNwProto(proto)
		copy(k[offNwSrc:offNwSrc+4], b[12:16])
		copy(k[offNwDst:offNwDst+4], b[16:20])
		fragOff := binary.BigEndian.Uint16(b[6:]) & 0x1fff
		mf := b[6]&0x20 != 0
		if fragOff != 0 || mf {
			fr := uint8(NwFragAny)
			if fragOff != 0 {
				fr |= NwFragLater
			}
			k.setU8(offNwFrag, fr)
			if fragOff != 0 {
				return nil
			}
		}
		p.extractL4(proto, l3+ihl, false)
	case EthTypeIPv6:
		if len(b) < 40 || b[0]>>4 != 6 {
			break
		}
		vtf := binary.BigEndian.Uint32(b[0:])
		k.setU8(offNwTos, uint8(vtf>>20))
		k.setU32(offIPv6Label, vtf&0xfffff)
		k.setU8(offNwTTL, b[7])
		copy(k[offIPv6Src:offIPv6Src+16], b[8:24])
		copy(k[offIPv6Dst:offIPv6Dst+16], b[24:40])
		next := b[6]
		l4 := l3 + 40
		var eh extHdrs
		for i := 0; i < 8; i++ { // bounded walk over extension headers
			eh.see(next)
			k.setU16(offIPv6ExtHdr, eh.flags())
			switch next {
			case 0, 43, 60: // hop-by-hop, routing, destination options
				if len(frame) < l4+8 {
					k.SetNwProto(next)
					return nil
				}
				n := frame[l4]
				l4 += (int(frame[l4+1]) + 1) * 8
				next = n
				continue
			case 51: // authentication header: its length is in 4-byte units, minus 2
				if len(frame) < l4+8 {
					k.SetNwProto(next)
					return nil
				}
				n := frame[l4]
				l4 += (int(frame[l4+1]) + 2) * 4
				next = n
				continue
			case 44: // fragment
				if len(frame) < l4+8 {
					k.SetNwProto(next)
					return nil
				}
				n := frame[l4]
				offFlags := binary.BigEndian.Uint16(frame[l4+2:])
				fr := uint8(NwFragAny)
				if offFlags&0xfff8 != 0 {
					fr |= NwFragLater
				}
				k.setU8(offNwFrag, fr)
				l4 += 8
				next = n
				if fr&NwFragLater != 0 {
					k.SetNwProto(next)
					return nil
				}
				continue
			}
			break
		}
		k.SetNwProto(next)
		p.extractL4(next, l4, true)
	case EthTypeMPLS, EthTypeMPLSMcast:
		if len(b) >= 4 {
			k.setU32(offMPLS, binary.BigEndian.Uint32(b))
		}
	case EthTypeARP, EthTypeRARP:
		if len(b) < 28 {
			break
		}
		if binary.BigEndian.Uint16(b[0:]) != 1 || binary.BigEndian.Uint16(b[2:]) != EthTypeIPv4 || b[4] != 6 || b[5] != 4 {
			break
		}
		op := binary.BigEndian.Uint16(b[6:])
		if op <= 0xff {
			k.setU16(offArpOp, op)
		}
		copy(k[offArpSha:offArpSha+6], b[8:14])
		copy(k[offNwSrc:offNwSrc+4], b[14:18])
		copy(k[offArpTha:offArpTha+6], b[18:24])
		copy(k[offNwDst:offNwDst+4], b[24:28])
	}
	p.setBase()
	return nil
}

func (p *Packet) extractL4(proto uint8, l4 int, v6 bool) {
	k := &p.Key
	f := p.Frame
	if l4 > len(f) {
		return
	}
	b := f[l4:]
	switch proto {
	case IPProtoTCP:
		if len(b) < 20 {
			return
		}
		p.L4 = l4
		k.setU16(offTpSrc, binary.BigEndian.Uint16(b[0:]))
		k.setU16(offTpDst, binary.BigEndian.Uint16(b[2:]))
		k.setU16(offTCPFlags, binary.BigEndian.Uint16(b[12:])&0x0fff)
	case IPProtoUDP, IPProtoSCTP:
		if len(b) < 8 {
			return
		}
		p.L4 = l4
		k.setU16(offTpSrc, binary.BigEndian.Uint16(b[0:]))
		k.setU16(offTpDst, binary.BigEndian.Uint16(b[2:]))
	case IPProtoICMP:
		if v6 || len(b) < 4 {
			return
		}
		p.L4 = l4
		k.setU16(offTpSrc, uint16(b[0]))
		k.setU16(offTpDst, uint16(b[1]))
	case IPProtoICMPv6:
		if !v6 || len(b) < 4 {
			return
		}
		p.L4 = l4
		k.setU16(offTpSrc, uint16(b[0]))
		k.setU16(offTpDst, uint16(b[1]))
		if (b[0] == 135 || b[0] == 136) && b[1] == 0 && len(b) >= 24 {
			copy(k[offNdTarget:offNdTarget+16], b[8:24])
			for o := 24; o+8 <= len(b); {
				typ, ln := b[o], int(b[o+1])*8
				if ln == 0 || o+ln > len(b) {
					break
				}
				if typ == 1 && b[0] == 135 && ln == 8 {
					copy(k[offArpSha:offArpSha+6], b[o+2:o+8])
				} else if typ == 2 && b[0] == 136 && ln == 8 {
					copy(k[offArpTha:offArpTha+6], b[o+2:o+8])
				}
				o += ln
			}
		}
	}
}

// clearHeaders zeroes the packet-header fields of the key.
func clearHeaders(k *Key) {
	clear(k[offNwProto:offCtIPv6Src])
}

// headerBase holds the key bytes that describe packet headers (from
// nw_proto up to the ct_ipv6 metadata): all that Commit compares, so each
// packet copies these ~100 bytes rather than the whole key.
type headerBase [offCtIPv6Src - offNwProto]byte

// at is the base's key byte off.
func (b *headerBase) at(off int) byte { return b[off-offNwProto] }

// setBase records the key's headers as those of the frame.
func (p *Packet) setBase() { copy(p.base[:], p.Key[offNwProto:offCtIPv6Src]) }

// headerChanged reports whether key bytes off..off+n differ from the base.
func headerChanged(a *Key, b *headerBase, off, n int) bool {
	// A string comparison compiles to memequal, without a copy.
	return string(a[off:off+n]) != string(b[off-offNwProto:off-offNwProto+n])
}

// Commit writes every header field the pipeline changed in Key into the
// frame, fixing the IPv4, TCP, UDP and ICMP checksums incrementally.
func (p *Packet) Commit() {
	k, base := &p.Key, &p.base
	f := p.Frame
	if len(f) < 14 {
		return
	}
	// Most commits (before each output and ct()) find nothing changed:
	// one comparison of the whole header part of the key says so.
	if !headerChanged(k, base, offNwProto, offCtIPv6Src-offNwProto) {
		return
	}
	p.Unshare()
	f = p.Frame
	if headerChanged(k, base, offEthDst, 6) {
		copy(f[0:6], k[offEthDst:offEthDst+6])
	}
	if headerChanged(k, base, offEthSrc, 6) {
		copy(f[6:12], k[offEthSrc:offEthSrc+6])
	}
	if p.L3 >= 0 && headerChanged(k, base, offVlanTCI, 2) && k.VlanTCI()&VlanCFI != 0 && p.L3 >= 18 {
		binary.BigEndian.PutUint16(f[14:], k.VlanTCI()&^VlanCFI)
	}
	switch k.EthType() {
	case EthTypeIPv4:
		p.commitIPv4()
	case EthTypeIPv6:
		p.commitIPv6()
	case EthTypeMPLS, EthTypeMPLSMcast:
		p.commitMPLS()
	case EthTypeARP, EthTypeRARP:
		if p.L3 >= 0 && len(f) >= p.L3+28 && (headerChanged(k, base, offArpSha, 14) || headerChanged(k, base, offNwSrc, 8)) {
			b := f[p.L3:]
			binary.BigEndian.PutUint16(b[6:], k.u16(offArpOp))
			copy(b[8:14], k[offArpSha:offArpSha+6])
			copy(b[14:18], k[offNwSrc:offNwSrc+4])
			copy(b[18:24], k[offArpTha:offArpTha+6])
			copy(b[24:28], k[offNwDst:offNwDst+4])
		}
	}
	p.setBase()
}

func (p *Packet) commitIPv4() {
	k, base := &p.Key, &p.base
	f := p.Frame
	if p.L3 < 0 || len(f) < p.L3+20 {
		return
	}
	ip := f[p.L3:]
	csum := binary.BigEndian.Uint16(ip[10:])
	var l4csum []byte // the L4 checksum that covers the pseudo-header
	if p.L4 >= 0 {
		l4 := f[p.L4:]
		switch ip[9] {
		case IPProtoTCP:
			if len(l4) >= 18 {
				l4csum = l4[16:18]
			}
		case IPProtoUDP:
			if len(l4) >= 8 && binary.BigEndian.Uint16(l4[6:]) != 0 {
				l4csum = l4[6:8]
			}
		}
	}
	upd16, pseudo16 := p.l4CsumUpdaters(l4csum)
	for _, a := range [2]struct{ koff, poff int }{{offNwSrc, 12}, {offNwDst, 16}} {
		if headerChanged(k, base, a.koff, 4) {
			old, new := binary.BigEndian.Uint32(ip[a.poff:]), k.u32(a.koff)
			csum = csumUpdate32(csum, old, new)
			pseudo16(l4csum, uint16(old>>16), uint16(new>>16))
			pseudo16(l4csum, uint16(old), uint16(new))
			binary.BigEndian.PutUint32(ip[a.poff:], new)
		}
	}
	if k[offNwTos] != base.at(offNwTos) {
		old := binary.BigEndian.Uint16(ip[0:])
		ip[1] = k[offNwTos]
		csum = csumUpdate16(csum, old, binary.BigEndian.Uint16(ip[0:]))
	}
	if k[offNwTTL] != base.at(offNwTTL) {
		old := binary.BigEndian.Uint16(ip[8:])
		ip[8] = k[offNwTTL]
		csum = csumUpdate16(csum, old, binary.BigEndian.Uint16(ip[8:]))
	}
	binary.BigEndian.PutUint16(ip[10:], csum)
	p.commitL4(upd16, l4csum)
}

func (p *Packet) commitIPv6() {
	k, base := &p.Key, &p.base
	f := p.Frame
	if p.L3 < 0 || len(f) < p.L3+40 {
		return
	}
	ip := f[p.L3:]
	var l4csum []byte
	if p.L4 >= 0 {
		l4 := f[p.L4:]
		switch k.NwProto() {
		case IPProtoTCP:
			if len(l4) >= 18 {
				l4csum = l4[16:18]
			}
		case IPProtoUDP:
			if len(l4) >= 8 {
				l4csum = l4[6:8]
			}
		case IPProtoICMPv6:
			if len(l4) >= 4 {
				l4csum = l4[2:4]
			}
		}
	}
	upd16, pseudo16 := p.l4CsumUpdaters(l4csum)
	for _, a := range [2]struct{ koff, poff int }{{offIPv6Src, 8}, {offIPv6Dst, 24}} {
		if headerChanged(k, base, a.koff, 16) {
			for i := 0; i < 16; i += 2 {
				pseudo16(l4csum, binary.BigEndian.Uint16(ip[a.poff+i:]), k.u16(a.koff+i))
			}
			copy(ip[a.poff:a.poff+16], k[a.koff:a.koff+16])
		}
	}
	if k[offNwTTL] != base.at(offNwTTL) {
		ip[7] = k[offNwTTL]
	}
	if k[offNwTos] != base.at(offNwTos) || headerChanged(k, base, offIPv6Label, 4) {
		v := uint32(6)<<28 | uint32(k[offNwTos])<<20 | k.u32(offIPv6Label)&0xfffff
		binary.BigEndian.PutUint32(ip[0:], v)
	}
	p.commitL4(upd16, l4csum)
}

// l4CsumUpdaters returns how Commit updates the L4 checksum l4csum (nil:
// none) for a change of a word the L4 checksum covers (ports) and of a
// pseudo-header word (addresses). A partial checksum (Offload.CsumPartial)
// holds only the pseudo-header sum: ports are not in it yet, and addresses
// change it the uncomplemented way.
func (p *Packet) l4CsumUpdaters(l4csum []byte) (upd16, pseudo16 func([]byte, uint16, uint16)) {
	o := &p.Offload
	at := o.CsumStart + o.CsumOffset
	if l4csum != nil && o.CsumPartial && o.CsumStart == p.L4 && at >= 0 && at < len(p.Frame) && &l4csum[0] == &p.Frame[at] {
		return noCsumUpdate, partialCsumUpdate
	}
	return fullCsumUpdate, fullCsumUpdate
}

func noCsumUpdate([]byte, uint16, uint16) {}

func fullCsumUpdate(b []byte, old, new uint16) {
	if b != nil {
		binary.BigEndian.PutUint16(b, csumUpdate16(binary.BigEndian.Uint16(b), old, new))
	}
}

func partialCsumUpdate(b []byte, old, new uint16) {
	binary.BigEndian.PutUint16(b, partialUpdate16(binary.BigEndian.Uint16(b), old, new))
}

func (p *Packet) commitL4(upd16 func([]byte, uint16, uint16), l4csum []byte) {
	k, base := &p.Key, &p.base
	if p.L4 < 0 {
		return
	}
	l4 := p.Frame[p.L4:]
	switch k.NwProto() {
	case IPProtoSCTP:
		p.commitSCTP()
	case IPProtoICMPv6:
		p.commitICMPv6(upd16, l4csum)
	case IPProtoTCP, IPProtoUDP:
		for _, a := range [2]struct{ koff, poff int }{{offTpSrc, 0}, {offTpDst, 2}} {
			if headerChanged(k, base, a.koff, 2) && len(l4) >= a.poff+2 {
				old, new := binary.BigEndian.Uint16(l4[a.poff:]), k.u16(a.koff)
				binary.BigEndian.PutUint16(l4[a.poff:], new)
				upd16(l4csum, old, new)
			}
		}
	case IPProtoICMP:
		if len(l4) >= 4 && (headerChanged(k, base, offTpSrc, 2) || headerChanged(k, base, offTpDst, 2)) {
			old := binary.BigEndian.Uint16(l4[0:])
			l4[0], l4[1] = byte(k.u16(offTpSrc)), byte(k.u16(offTpDst))
			cs := binary.BigEndian.Uint16(l4[2:])
			binary.BigEndian.PutUint16(l4[2:], csumUpdate16(cs, old, binary.BigEndian.Uint16(l4[0:])))
		}
	}
}

// csumUpdate16 updates an Internet checksum for a 16-bit word change
// (RFC 1624).
func csumUpdate16(csum, old, new uint16) uint16 {
	s := uint32(^csum) + uint32(^old) + uint32(new)
	s = (s & 0xffff) + (s >> 16)
	s = (s & 0xffff) + (s >> 16)
	return ^uint16(s)
}

func csumUpdate32(csum uint16, old, new uint32) uint16 {
	csum = csumUpdate16(csum, uint16(old>>16), uint16(new>>16))
	return csumUpdate16(csum, uint16(old), uint16(new))
}

// Rebase tells the packet that Frame was rewritten outside the pipeline
// (e.g. by NAT in conntrack): the current Key's header fields are
// re-extracted from it.
func (p *Packet) Rebase() {
	var meta Key
	meta = p.Key
	lent := p.lent // the same frame: still lent if it was
	_ = p.Extract(p.Frame)
	p.lent = lent
	// Keep metadata (registers, tunnel, ct fields) from before.
	copy(p.Key[:offNwProto], meta[:offNwProto])
	copy(p.Key[offCtIPv6Src:], meta[offCtIPv6Src:])
	p.setBase()
}

// PushVLAN commits the key and puts a VLAN header of type ethType in front
// of the frame's Ethernet type, with the outer tag's TCI (0 untagged), as
// push_vlan does.
func (p *Packet) PushVLAN(ethType uint16) {
	if len(p.Frame) < 14 {
		return
	}
	p.Commit()
	p.Unshare()
	tci := p.Key.VlanTCI() &^ VlanCFI
	n := len(p.Frame) + 4
	f := p.Frame[:cap(p.Frame)]
	if cap(p.Frame) >= n {
		f = f[:n]
		copy(f[16:], f[12:n-4])
	} else {
		// No room behind the frame: a buffer from the loop's pool (the
		// cached path allocates nothing), as Unshare takes one.
		if p.Alloc != nil {
			f = p.Alloc(n)
		} else {
			f = make([]byte, n)
		}
		copy(f, p.Frame[:12])
		copy(f[16:], p.Frame[12:])
	}
	binary.BigEndian.PutUint16(f[12:], ethType)
	binary.BigEndian.PutUint16(f[14:], tci)
	p.Frame = f
	if p.Offload.Active() {
		p.Offload.CsumStart += 4
	}
	if p.L3 >= 0 {
		p.L3 += 4
	}
	if p.L4 >= 0 {
		p.L4 += 4
	}
	p.Key.setU16(offVlanTCI, tci|VlanCFI)
	p.setBase()
}

// PopVLAN commits the key and removes the frame's outer VLAN header, if
// it has one, as pop_vlan does.
func (p *Packet) PopVLAN() {
	if p.Key.VlanTCI()&VlanCFI == 0 || len(p.Frame) < 18 {
		return
	}
	p.Commit()
	p.Unshare()
	copy(p.Frame[12:], p.Frame[16:])
	p.Frame = p.Frame[:len(p.Frame)-4]
	if p.Offload.Active() {
		p.Offload.CsumStart -= 4
	}
	if p.L3 >= 0 {
		p.L3 -= 4
	}
	if p.L4 >= 0 {
		p.L4 -= 4
	}
	p.Key.setU16(offVlanTCI, 0)
	p.setBase()
}
