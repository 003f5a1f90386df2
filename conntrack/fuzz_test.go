package conntrack

import (
	"encoding/binary"
	"testing"
	"time"
)

// FuzzExecute feeds arbitrary IP packets (with arbitrary ct() arguments)
// through the packet-to-tuple path, the state machines and NAT. Nothing may
// panic, the frame keeps its length, and the result is consistent: every
// packet is +trk, +inv packets carry no original tuple, others do.
func FuzzExecute(f *testing.F) {
	seeds := [][]byte{
		build(tcpPk("10.0.0.1", "10.0.0.2", 1000, 80, tcpSYN, 1, 0, 0)),
		build(tcpPk("10.0.0.2", "10.0.0.1", 80, 1000, tcpSYN|tcpACK, 1, 2, 0)),
		build(udpPk("10.0.0.1", "10.0.0.2", 1000, 53)),
		build(icmpEcho("10.0.0.1", "10.0.0.2", icmp4Echo, 5)),
		build(icmpErr("10.0.0.9", "10.0.0.1", build(tcpPk("10.0.0.1", "10.0.0.2", 1000, 80, tcpSYN, 1, 0, 0)))),
		build(tcpPk("fd00::1", "fd00::2", 1000, 80, tcpSYN, 1, 0, 0)),
		build(icmpErr("fd00::9", "fd00::1", build(udpPk("fd00::1", "fd00::2", 1000, 53)))),
		build(pk{src: "10.0.0.1", dst: "10.0.0.2", proto: protoSCTP, payload: make([]byte, 16)}),
	}
	seeds = append(seeds, fragment4(bigUDP("10.0.0.1", "10.0.0.2", 1000, 53, 100), 64, 5)...)
	seeds = append(seeds, fragment6(bigUDP("fd00::1", "fd00::2", 1000, 53, 100), 64, 5)...)
	for i, s := range seeds {
		f.Add(s[ethLen:], uint8(i))
	}
	tr := New(Config{MaxConns: 10000, VerifyChecksums: false})
	nats := []*NAT{
		nil,
		{},
		{Action: NATDst, MinAddr: mustAddr("10.10.0.4"), MinPort: 8080, MaxPort: 8081},
		{Action: NATSrc, MinAddr: mustAddr("192.168.0.1"), MaxAddr: mustAddr("192.168.0.3"), MinPort: 1, MaxPort: 3},
		{Action: NATSrc, MinAddr: mustAddr("fd00:1::1"), Random: true},
		{Action: NATDst, MinAddr: mustAddr("fd00:2::1"), MaxAddr: mustAddr("fd00:2::ff"), Persistent: true},
	}
	now := int64(time.Hour)
	f.Fuzz(func(t *testing.T, ip []byte, sel uint8) {
		frame := make([]byte, ethLen+len(ip))
		copy(frame[ethLen:], ip)
		et := uint16(EthTypeIPv4)
		if len(ip) > 0 && ip[0]>>4 == 6 {
			et = EthTypeIPv6
		}
		binary.BigEndian.PutUint16(frame[12:], et)
		a := Args{Zone: uint16(sel & 3), Commit: sel&4 != 0, Force: sel&0x80 != 0, NAT: nats[int(sel>>3)%len(nats)]}
		for round := 0; round < 2; round++ {
			var md Meta
			n := len(frame)
			tr.Execute(frame, ethLen, et, &md, &a, now)
			if len(frame) != n {
				t.Fatal("frame length changed")
			}
			if md.State&StateTracked == 0 {
				t.Fatalf("not tracked: %s", stateString(md.State))
			}
			if md.State&StateInv != 0 && md.Orig.Proto != 0 {
				t.Fatalf("+inv with an orig tuple %+v", md.Orig)
			}
			if md.State&StateInv == 0 && md.Orig.IPv6 != (et == EthTypeIPv6) {
				t.Fatalf("orig tuple family %v for ethertype %#x", md.Orig.IPv6, et)
			}
			// Then the translated packet in a lookup with the metadata.
			tr.Execute(frame, ethLen, et, &md, &Args{Zone: a.Zone, NAT: &NAT{}}, now)
		}
		// Random offsets never crash either.
		var md Meta
		tr.Execute(frame, int(sel), et, &md, &a, now)
		tr.Execute(frame[:len(frame)/2], ethLen, et, &md, &a, now)
		if tr.Count() > 9000 {
			tr.Flush()
		}
	})
}

// FuzzParse checks the packet-to-tuple extraction on its own: no panic, and
// for a non-error packet the key holds the header's own addresses and, for
// TCP/UDP, its ports; for an ICMP error the key is the reverse of the quoted
// packet's, whose source must be the error's destination.
func FuzzParse(f *testing.F) {
	f.Add(build(tcpPk("10.0.0.1", "10.0.0.2", 1000, 80, tcpSYN, 1, 0, 0))[ethLen:], false)
	f.Add(build(udpPk("fd00::1", "fd00::2", 1000, 53))[ethLen:], true)
	f.Add(build(icmpErr("10.0.0.9", "10.0.0.1", build(udpPk("10.0.0.1", "10.0.0.2", 1000, 53))))[ethLen:], false)
	for _, fr := range fragment6(bigUDP("fd00::1", "fd00::2", 1000, 53, 100), 64, 5) {
		f.Add(fr[ethLen:], true)
	}
	f.Fuzz(func(t *testing.T, ip []byte, v6 bool) {
		et := uint16(EthTypeIPv4)
		if v6 {
			et = EthTypeIPv6
		}
		var k key
		var p pkt
		if parse(ip, 0, et, 7, &k, &p, true) != parseOK {
			return
		}
		if k.zone != 7 || (k.v6 == 1) != v6 {
			t.Fatalf("zone/family lost: %+v", k)
		}
		if p.l4 < 0 || p.l4 > p.end || p.end > len(ip) {
			t.Fatalf("offsets l4=%d end=%d len=%d", p.l4, p.end, len(ip))
		}
		alen, so, do := 4, 12, 16
		if v6 {
			alen, so, do = 16, 8, 24
		}
		if !p.related {
			if string(k.src[:alen]) != string(ip[so:so+alen]) || string(k.dst[:alen]) != string(ip[do:do+alen]) {
				t.Fatalf("addresses differ from the header")
			}
			if (k.proto == protoTCP || k.proto == protoUDP) && (k.sport != be16(ip[p.l4:]) || k.dport != be16(ip[p.l4+2:])) {
				t.Fatalf("ports differ from the header")
			}
			return
		}
		// Related: k.src is the quoted packet's destination, k.dst its
		// source, which is the outer destination.
		if string(k.dst[:alen]) != string(ip[do:do+alen]) {
			t.Fatalf("quoted source is not the outer destination")
		}
	})
}
