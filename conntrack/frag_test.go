package conntrack

import (
	"encoding/binary"
	"testing"
)

// fragment4 splits an IPv4 frame into fragments carrying chunk bytes of
// the datagram each (chunk a multiple of 8).
func fragment4(frame []byte, chunk int, id uint16) [][]byte {
	ip := frame[ethLen:]
	ihl := int(ip[0]&0xf) * 4
	data := ip[ihl:]
	var out [][]byte
	for off := 0; off < len(data); off += chunk {
		part := data[off:min(off+chunk, len(data))]
		f := make([]byte, ethLen+ihl+len(part))
		copy(f, frame[:ethLen+ihl])
		copy(f[ethLen+ihl:], part)
		h := f[ethLen:]
		binary.BigEndian.PutUint16(h[2:], uint16(ihl+len(part)))
		binary.BigEndian.PutUint16(h[4:], id)
		fo := uint16(off / 8)
		if off+chunk < len(data) {
			fo |= 0x2000
		}
		binary.BigEndian.PutUint16(h[6:], fo)
		h[10], h[11] = 0, 0
		binary.BigEndian.PutUint16(h[10:], checksum(h[:ihl], 0))
		out = append(out, f)
	}
	return out
}

// fragment6 splits an IPv6 frame (no extension headers) into fragments.
func fragment6(frame []byte, chunk int, id uint32) [][]byte {
	ip := frame[ethLen:]
	nh := ip[6]
	data := ip[40:]
	var out [][]byte
	for off := 0; off < len(data); off += chunk {
		part := data[off:min(off+chunk, len(data))]
		f := make([]byte, ethLen+48+len(part))
		copy(f, frame[:ethLen+40])
		h := f[ethLen:]
		h[6] = 44
		binary.BigEndian.PutUint16(h[4:], uint16(8+len(part)))
		h[40] = nh
		fo := uint16(off/8) << 3
		if off+chunk < len(data) {
			fo |= 1
		}
		binary.BigEndian.PutUint16(h[42:], fo)
		binary.BigEndian.PutUint32(h[44:], id)
		copy(h[48:], part)
		out = append(out, f)
	}
	return out
}

// reassembledL4OK checks the L4 checksum of the datagram the fragments
// make up, with the addresses of the (translated) fragments, and returns
// its destination port.
func reassembledL4OK(t *testing.T, frags [][]byte) uint16 {
	t.Helper()
	ip0 := frags[0][ethLen:]
	hl := 20
	if ip0[0]>>4 == 6 {
		hl = 48
	}
	var l4 []byte
	for _, f := range frags {
		ip := f[ethLen:]
		if string(ip[8:hl-8]) != string(ip0[8:hl-8]) && ip0[0]>>4 == 6 {
			t.Fatalf("fragments disagree on addresses")
		}
		if ip0[0]>>4 == 4 && (string(ip[12:20]) != string(ip0[12:20]) || checksum(ip[:20], 0) != 0) {
			t.Fatalf("fragment addresses differ or bad IPv4 header checksum")
		}
		l4 = append(l4, ip[hl:]...)
	}
	pseudoIP := ip0
	if ip0[0]>>4 == 6 {
		pseudoIP = append([]byte(nil), ip0[:40]...)
	}
	if checksum(l4, pseudo(pseudoIP, len(l4), protoUDP)) != 0 {
		t.Fatalf("reassembled UDP checksum is wrong")
	}
	return binary.BigEndian.Uint16(l4[2:])
}

func bigUDP(src, dst string, sport, dport uint16, n int) []byte {
	p := udpPk(src, dst, sport, dport)
	p.payload = make([]byte, n)
	for i := range p.payload {
		p.payload[i] = byte(i * 7)
	}
	return build(p)
}

func TestFragmentsDNATRoundTrip(t *testing.T) {
	h := newHarness(t, Config{})
	dnat := Args{Zone: antreaZone, Commit: true, NAT: &NAT{Action: NATDst, MinAddr: mustAddr("10.10.0.4"), MinPort: 5353}}
	req := fragment4(bigUDP("10.10.0.5", "10.96.0.10", 40000, 53, 3000), 1480, 0x4242)
	if len(req) != 3 {
		t.Fatalf("%d fragments", len(req))
	}
	for i, f := range req {
		md := h.ct(f, dnat)
		if md.State != trk|nw|StateDNAT || md.Orig.DstAddr() != mustAddr("10.96.0.10") || md.Orig.DstPort != 53 {
			t.Fatalf("request fragment %d: %s orig %+v", i, stateString(md.State), md.Orig)
		}
		if d := f[ethLen+16 : ethLen+20]; string(d) != string([]byte{10, 10, 0, 4}) {
			t.Fatalf("request fragment %d not translated: dst %v", i, d)
		}
	}
	if port := reassembledL4OK(t, req); port != 5353 {
		t.Fatalf("reassembled request to port %d", port)
	}
	// The answer, fragmented too, is translated back.
	rep := fragment4(bigUDP("10.10.0.4", "10.10.0.5", 5353, 40000, 2000), 1024, 0x0101)
	for i, f := range rep {
		md := h.ct(f, Args{Zone: antreaZone, NAT: &NAT{}})
		if md.State != trk|est|rpl|StateSNAT {
			t.Fatalf("reply fragment %d: %s", i, stateString(md.State))
		}
		if s := f[ethLen+12 : ethLen+16]; string(s) != string([]byte{10, 96, 0, 10}) {
			t.Fatalf("reply fragment %d not translated: src %v", i, s)
		}
	}
	reassembledL4OK(t, rep)
	if h.tr.Count() != 1 || h.tr.Stats().Fragments != 5 {
		t.Fatalf("count %d stats %+v", h.tr.Count(), h.tr.Stats())
	}
}

func TestFragmentsEdgeCases(t *testing.T) {
	h := newHarness(t, Config{})
	c := Args{Commit: true}
	// A later fragment before its first: nothing to go by.
	fr := fragment4(bigUDP("10.0.0.1", "10.0.0.2", 1000, 53, 2000), 1480, 7)
	if md := h.ct(fr[1], c); md.State != trk|inv {
		t.Fatalf("later fragment first: %s", stateString(md.State))
	}
	if md := h.ct(fr[0], c); md.State != trk|nw {
		t.Fatalf("first fragment: %s", stateString(md.State))
	}
	if md := h.ct(fr[1], c); md.State != trk|nw {
		t.Fatalf("later fragment after the first: %s", stateString(md.State))
	}
	// Another datagram id is another datagram.
	other := fragment4(bigUDP("10.0.0.1", "10.0.0.2", 1000, 53, 2000), 1480, 8)
	if md := h.ct(other[1], c); md.State != trk|inv {
		t.Fatalf("fragment of an unknown datagram: %s", stateString(md.State))
	}
	// Uncommitted: later fragments are new like their first.
	un := fragment4(bigUDP("10.0.0.9", "10.0.0.2", 1000, 53, 2000), 1480, 9)
	h.ct(un[0], Args{})
	if md := h.ct(un[1], Args{}); md.State != trk|nw || md.Orig.SrcAddr() != mustAddr("10.0.0.9") || md.Orig.SrcPort != 1000 {
		t.Fatalf("uncommitted later fragment: %s %+v", stateString(md.State), md.Orig)
	}
	// TCP segments are not tracked in pieces.
	tcp := tcpPk("10.0.0.1", "10.0.0.2", 1000, 80, tcpACK, 1, 1, 2000)
	tf := fragment4(build(tcp), 1480, 10)
	for i, f := range tf {
		if md := h.ct(f, c); md.State != trk|inv {
			t.Fatalf("tcp fragment %d: %s", i, stateString(md.State))
		}
	}
	// IPv6, with SNAT.
	snat := Args{Zone: 2, Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("fd00:99::1")}}
	v6 := fragment6(bigUDP("fd00::1", "fd00::2", 3333, 4444, 3000), 1448, 0xabcdef)
	for i, f := range v6 {
		md := h.ct(f, snat)
		if md.State != trk|nw|StateSNAT {
			t.Fatalf("v6 fragment %d: %s", i, stateString(md.State))
		}
		if s := f[ethLen+8 : ethLen+24]; string(s) != string(mustAddr("fd00:99::1").AsSlice()) {
			t.Fatalf("v6 fragment %d src %v", i, s)
		}
	}
	reassembledL4OK(t, v6)
	// An IPv6 atomic fragment is a whole packet.
	atomic := fragment6(build(udpPk("fd00::5", "fd00::6", 1, 2)), 1448, 1)
	if len(atomic) != 1 {
		t.Fatal("atomic fragment split")
	}
	binary.BigEndian.PutUint16(atomic[0][ethLen+42:], 0)
	if md := h.ct(atomic[0], c); md.State != trk|nw {
		t.Fatalf("atomic fragment: %s", stateString(md.State))
	}
}
