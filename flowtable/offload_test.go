package flowtable

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"testing"
)

// naiveSum is the RFC 1071 sum, 16 bits at a time, as a reference for
// sum64.
func naiveSum(b []byte) uint16 {
	return checksum(b, 0)
}

func TestSum64MatchesNaive(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for n := 0; n < 300; n++ {
		b := make([]byte, n)
		r.Read(b)
		if got, want := fold(sum64(b, 0)), naiveSum(b); got != want {
			t.Fatalf("len %d: fold(sum64) = %#04x, want %#04x", n, got, want)
		}
	}
	// All ones everywhere: the carries pile up.
	b := bytes.Repeat([]byte{0xff}, 65536+7)
	if got, want := fold(sum64(b, 0xffff_ffff_ffff_ffff)), checksum(b, 0xffff); got != want {
		t.Fatalf("all ones: %#04x, want %#04x", got, want)
	}
}

// offloadFrame builds an Ethernet/IP/L4 frame with payload, a correct
// complete L4 checksum, and returns it with the partial form (the L4
// checksum field holding the folded pseudo-header sum, as a Linux sender
// with checksum offload leaves it).
func offloadFrame(t *testing.T, v6 bool, proto uint8, payload []byte) (full, partial []byte, o Offload) {
	t.Helper()
	var k Key
	FieldEthSrc.SetValue(&k, []byte{2, 0, 0, 0, 0, 1})
	FieldEthDst.SetValue(&k, []byte{2, 0, 0, 0, 0, 2})
	if v6 {
		k.SetEthType(EthTypeIPv6)
		FieldIPv6Src.SetValue(&k, []byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
		FieldIPv6Dst.SetValue(&k, []byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2})
	} else {
		k.SetEthType(EthTypeIPv4)
		FieldIPv4Src.SetUint64(&k, 0x0ade0102)
		FieldIPv4Dst.SetUint64(&k, 0x0ade0103)
	}
	k.SetNwProto(proto)
	k[offNwTTL] = 64
	FieldTCPSrc.SetUint64(&k, 40000)
	FieldTCPDst.SetUint64(&k, 80)
	f := BuildFrame(&k, len(payload))
	var pkt Packet
	if err := pkt.Extract(f); err != nil {
		t.Fatal(err)
	}
	l4 := pkt.L4
	if proto == IPProtoTCP {
		binary.BigEndian.PutUint32(f[l4+4:], 1000) // seq
		f[l4+13] = 0x18 | 0x80                     // PSH ACK CWR
	}
	hdr := len(f) - len(payload)
	copy(f[hdr:], payload)
	csumOff := 16
	if proto == IPProtoUDP {
		csumOff = 6
	}
	var addrs []byte
	if v6 {
		addrs = f[pkt.L3+8 : pkt.L3+40]
	} else {
		addrs = f[pkt.L3+12 : pkt.L3+20]
	}
	pseudo := sumBytes(addrs, uint32(proto)+uint32(len(f)-l4))
	f[l4+csumOff], f[l4+csumOff+1] = 0, 0
	binary.BigEndian.PutUint16(f[l4+csumOff:], ^checksum(f[l4:], pseudo))
	full = f
	partial = bytes.Clone(f)
	binary.BigEndian.PutUint16(partial[l4+csumOff:], checksum(nil, pseudo))
	return full, partial, Offload{CsumPartial: true, CsumStart: l4, CsumOffset: csumOff}
}

// l4ChecksumValid verifies frame's L4 checksum from scratch with the
// 16-bit reference sum.
func l4ChecksumValid(t *testing.T, frame []byte) bool {
	t.Helper()
	var pkt Packet
	if err := pkt.Extract(frame); err != nil || pkt.L4 < 0 {
		t.Fatalf("extract: %v, L4 %d", err, pkt.L4)
	}
	var addrs []byte
	if pkt.Key.EthType() == EthTypeIPv6 {
		addrs = frame[pkt.L3+8 : pkt.L3+40]
	} else {
		addrs = frame[pkt.L3+12 : pkt.L3+20]
		if checksum(frame[pkt.L3:pkt.L3+20], 0) != 0xffff {
			t.Errorf("IPv4 header checksum invalid")
		}
	}
	return checksum(frame[pkt.L4:], sumBytes(addrs, uint32(pkt.Key.NwProto())+uint32(len(frame)-pkt.L4))) == 0xffff
}

func TestCompleteChecksum(t *testing.T) {
	payload := make([]byte, 3001)
	rand.New(rand.NewSource(2)).Read(payload)
	for _, tc := range []struct {
		name  string
		v6    bool
		proto uint8
	}{{"tcp4", false, IPProtoTCP}, {"udp4", false, IPProtoUDP}, {"tcp6", true, IPProtoTCP}, {"udp6", true, IPProtoUDP}} {
		t.Run(tc.name, func(t *testing.T) {
			full, partial, o := offloadFrame(t, tc.v6, tc.proto, payload)
			if bytes.Equal(full, partial) {
				t.Fatal("partial frame equals the full one")
			}
			var pkt Packet
			pkt.Offload = o
			if err := pkt.Extract(partial); err != nil {
				t.Fatal(err)
			}
			if err := pkt.CompleteChecksum(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(pkt.Frame, full) {
				t.Errorf("completed frame differs from the one with a full checksum")
			}
			if pkt.Offload.CsumPartial {
				t.Errorf("still partial after completion")
			}
		})
	}
	bad := Offload{CsumPartial: true, CsumStart: 100, CsumOffset: 16}
	if err := CompleteChecksum(make([]byte, 110), &bad, false); err == nil {
		t.Errorf("checksum field past the frame: no error")
	}
}

// TestCommitPartialChecksum: NAT-like rewrites of addresses and ports on a
// frame whose checksum is partial leave a partial checksum that completes
// to the right value; the same rewrites on the full frame agree.
func TestCommitPartialChecksum(t *testing.T) {
	payload := make([]byte, 2000)
	rand.New(rand.NewSource(3)).Read(payload)
	for _, tc := range []struct {
		name  string
		v6    bool
		proto uint8
	}{{"tcp4", false, IPProtoTCP}, {"udp4", false, IPProtoUDP}, {"tcp6", true, IPProtoTCP}} {
		t.Run(tc.name, func(t *testing.T) {
			full, partial, o := offloadFrame(t, tc.v6, tc.proto, payload)
			rewrite := func(p *Packet) {
				if tc.v6 {
					FieldIPv6Dst.SetValue(&p.Key, []byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34})
				} else {
					FieldIPv4Dst.SetUint64(&p.Key, 0x0ade0999)
					FieldIPv4Src.SetUint64(&p.Key, 0xc0a80001)
				}
				FieldTCPDst.SetUint64(&p.Key, 8080)
				FieldTCPSrc.SetUint64(&p.Key, 1234)
				p.Commit()
			}
			var pf, pp Packet
			if err := pf.Extract(full); err != nil {
				t.Fatal(err)
			}
			rewrite(&pf)
			if !l4ChecksumValid(t, pf.Frame) {
				t.Fatalf("full checksum wrong after commit")
			}
			pp.Offload = o
			if err := pp.Extract(partial); err != nil {
				t.Fatal(err)
			}
			rewrite(&pp)
			if err := pp.CompleteChecksum(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(pp.Frame, pf.Frame) {
				t.Errorf("partial frame after commit and completion differs from the full one")
			}
		})
	}
}

func TestSegment(t *testing.T) {
	payload := make([]byte, 10000)
	rand.New(rand.NewSource(4)).Read(payload)
	for _, tc := range []struct {
		name    string
		v6      bool
		proto   uint8
		gso     GSOType
		mss     int
		partial bool
		want    int
	}{
		{"tcp4 partial", false, IPProtoTCP, GSOTCPv4, 1448, true, 7},
		{"tcp4 full", false, IPProtoTCP, GSOTCPv4, 1448, false, 7},
		{"tcp6 partial", true, IPProtoTCP, GSOTCPv6, 1428, true, 8},
		{"udp4 partial", false, IPProtoUDP, GSOUDPL4, 1472, true, 7},
		{"tcp4 exact multiple", false, IPProtoTCP, GSOTCPv4, 1000, true, 10},
		{"no gso, one copy", false, IPProtoTCP, GSONone, 0, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full, partial, o := offloadFrame(t, tc.v6, tc.proto, payload)
			in := partial
			if !tc.partial {
				in, o.CsumPartial = full, false
			}
			o.GSOType, o.GSOSize = tc.gso, tc.mss
			var pkt Packet
			pkt.Offload = o
			if err := pkt.Extract(bytes.Clone(in)); err != nil {
				t.Fatal(err)
			}
			var segs [][]byte
			n, err := pkt.Segment(func(n int) []byte {
				segs = append(segs, make([]byte, n))
				return segs[len(segs)-1]
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.want || len(segs) != n {
				t.Fatalf("%d segments (%d buffers), want %d", n, len(segs), tc.want)
			}
			var got []byte
			hdr := len(full) - len(payload)
			seq := uint32(1000)
			var id0 uint16
			if !tc.v6 {
				id0 = binary.BigEndian.Uint16(full[pkt.L3+4:])
			}
			for i, s := range segs {
				if !l4ChecksumValid(t, s) {
					t.Errorf("segment %d: bad L4 checksum", i)
				}
				var sp Packet
				if err := sp.Extract(s); err != nil {
					t.Fatal(err)
				}
				l4 := s[sp.L4:]
				if tc.v6 {
					if pl := int(binary.BigEndian.Uint16(s[sp.L3+4:])); pl != len(s)-sp.L3-40 {
						t.Errorf("segment %d: payload length %d, want %d", i, pl, len(s)-sp.L3-40)
					}
				} else {
					if tl := int(binary.BigEndian.Uint16(s[sp.L3+2:])); tl != len(s)-sp.L3 {
						t.Errorf("segment %d: total length %d, want %d", i, tl, len(s)-sp.L3)
					}
					if id := binary.BigEndian.Uint16(s[sp.L3+4:]); id != id0+uint16(i) {
						t.Errorf("segment %d: IP ID %d, want %d", i, id, id0+uint16(i))
					}
				}
				if tc.mss > 0 && len(s)-hdr > tc.mss {
					t.Errorf("segment %d: %d payload bytes > mss %d", i, len(s)-hdr, tc.mss)
				}
				if tc.proto == IPProtoTCP {
					if s := binary.BigEndian.Uint32(l4[4:]); s != seq {
						t.Errorf("segment %d: seq %d, want %d", i, s, seq)
					}
					last := i == len(segs)-1
					if psh := l4[13]&0x08 != 0; psh != last {
						t.Errorf("segment %d: PSH %v, want %v", i, psh, last)
					}
					if cwr := l4[13]&0x80 != 0; cwr != (i == 0) {
						t.Errorf("segment %d: CWR %v", i, cwr)
					}
				} else if ul := int(binary.BigEndian.Uint16(l4[4:])); ul != len(l4) {
					t.Errorf("segment %d: UDP length %d, want %d", i, ul, len(l4))
				}
				seq += uint32(len(s) - hdr)
				got = append(got, s[hdr:]...)
			}
			if !bytes.Equal(got, payload) {
				t.Errorf("segments carry %d bytes that differ from the %d-byte payload", len(got), len(payload))
			}
		})
	}
}

func TestSegmentRejectsMismatch(t *testing.T) {
	_, partial, o := offloadFrame(t, false, IPProtoUDP, make([]byte, 3000))
	o.GSOType, o.GSOSize = GSOTCPv4, 1000 // a UDP frame with TCP GSO
	var pkt Packet
	pkt.Offload = o
	if err := pkt.Extract(partial); err != nil {
		t.Fatal(err)
	}
	if _, err := pkt.Segment(func(n int) []byte { return make([]byte, n) }); err == nil {
		t.Errorf("UDP frame with TCP GSO: no error")
	}
	pkt.Offload.GSOType, pkt.Offload.GSOSize = GSOUDPL4, 0
	if _, err := pkt.Segment(func(n int) []byte { return make([]byte, n) }); err == nil {
		t.Errorf("GSO size 0: no error")
	}
}

func BenchmarkCompleteChecksum64K(b *testing.B) {
	f := make([]byte, 65536)
	rand.New(rand.NewSource(5)).Read(f)
	o := Offload{CsumPartial: true, CsumStart: 34, CsumOffset: 16}
	b.SetBytes(int64(len(f)))
	for b.Loop() {
		o.CsumPartial = true
		_ = CompleteChecksum(f, &o, false)
	}
}
