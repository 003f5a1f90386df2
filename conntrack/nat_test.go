package conntrack

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// hdr is what gopacket (an independent decoder) sees in a frame.
type hdr struct {
	src, dst     netip.Addr
	sport, dport uint16
	icmpID       uint16
	inner        *hdr // embedded packet of an ICMP error
}

func decode(t *testing.T, frame []byte) hdr {
	t.Helper()
	pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	if pkt.NetworkLayer() == nil {
		// Application-layer decoding errors (e.g. a fake DNS payload)
		// are irrelevant; the IP header must decode.
		t.Fatalf("gopacket: no network layer: %v", pkt.ErrorLayer())
	}
	var h hdr
	if ip, ok := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		h.src, _ = netip.AddrFromSlice(ip.SrcIP.To4())
		h.dst, _ = netip.AddrFromSlice(ip.DstIP.To4())
	}
	if ip, ok := pkt.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
		h.src, _ = netip.AddrFromSlice(ip.SrcIP)
		h.dst, _ = netip.AddrFromSlice(ip.DstIP)
	}
	if l, ok := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP); ok {
		h.sport, h.dport = uint16(l.SrcPort), uint16(l.DstPort)
	}
	if l, ok := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP); ok {
		h.sport, h.dport = uint16(l.SrcPort), uint16(l.DstPort)
	}
	if l, ok := pkt.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4); ok {
		h.icmpID = l.Id
		if l.TypeCode.Type() == icmp4DstUnreach {
			in := append(make([]byte, ethLen), l.Payload...)
			binary.BigEndian.PutUint16(in[12:], EthTypeIPv4)
			ih := decodeLoose(in)
			h.inner = &ih
		}
	}
	return h
}

// decodeLoose decodes a truncated embedded packet.
func decodeLoose(frame []byte) hdr {
	ip := frame[ethLen:]
	var h hdr
	h.src = netip.AddrFrom4([4]byte(ip[12:16]))
	h.dst = netip.AddrFrom4([4]byte(ip[16:20]))
	off := int(ip[0]&0xf) * 4
	h.sport, h.dport = binary.BigEndian.Uint16(ip[off:]), binary.BigEndian.Uint16(ip[off+2:])
	return h
}

func hp(addr string, port uint16) string { return netip.AddrPortFrom(mustAddr(addr), port).String() }

func (h hdr) String() string {
	return netip.AddrPortFrom(h.src, h.sport).String() + "->" + netip.AddrPortFrom(h.dst, h.dport).String()
}

// Antrea's proxy: ct(commit,table=45,zone=65520,nat(dst=10.10.0.4:8080),
// exec(load:0x21->NXM_NX_CT_MARK[])) then ct(zone=65520,nat) on replies.
func TestDNATRoundTrip(t *testing.T) {
	h := newHarness(t, Config{})
	lookupNAT := Args{Zone: antreaZone, NAT: &NAT{}}
	dnat := Args{Zone: antreaZone, Commit: true, SetMark: true, Mark: 0x21, MarkMask: 0xffffffff,
		NAT: &NAT{Action: NATDst, MinAddr: mustAddr("10.10.0.4"), MinPort: 8080, MaxPort: 8080}}
	cv := &tcpConv{c: "10.10.0.5", s: "10.96.0.10", cport: 40000, sport: 80, cseq: 10, sseq: 5000}

	syn := build(cv.fromC(tcpSYN, 0))
	var md Meta
	h.tr.Execute(syn, ethLen, EthTypeIPv4, &md, &lookupNAT, h.clock.now) // table 30
	if md.State != trk|nw {
		t.Fatalf("lookup: %s", stateString(md.State))
	}
	h.tr.Execute(syn, ethLen, EthTypeIPv4, &md, &dnat, h.clock.now) // table 42
	if md.State != trk|nw|StateDNAT || md.Mark != 0x21 {
		t.Fatalf("dnat commit: %s mark %#x", stateString(md.State), md.Mark)
	}
	if got := decode(t, syn).String(); got != hp("10.10.0.5", 40000)+"->"+hp("10.10.0.4", 8080) {
		t.Fatalf("translated syn %s", got)
	}
	checkCsums(t, syn)
	// Table 45 commits again in the same zone with a label: the packet is
	// recognized as translated (+dnat) and not translated twice.
	label := Args{Zone: antreaZone, Commit: true, SetLabel: true, Label: Label{Lo: 1 << 32}, LabelMask: Label{Lo: 0xffffffff << 32}}
	before := string(syn)
	h.tr.Execute(syn, ethLen, EthTypeIPv4, &md, &label, h.clock.now)
	if md.State != trk|nw|StateDNAT || md.Mark != 0x21 || md.Label.Lo != 1<<32 || string(syn) != before {
		t.Fatalf("second commit: %s mark %#x label %+v", stateString(md.State), md.Mark, md.Label)
	}
	if md.Orig.SrcAddr() != mustAddr("10.10.0.5") || md.Orig.DstAddr() != mustAddr("10.96.0.10") || md.Orig.DstPort != 80 {
		t.Fatalf("orig tuple %+v", md.Orig)
	}

	// The endpoint answers; ct(nat) restores the service address.
	synack := build(tcpPk("10.10.0.4", "10.10.0.5", 8080, 40000, tcpSYN|tcpACK, cv.sseq, cv.cseq, 0))
	cv.sseq++
	r := h.ct(synack, lookupNAT)
	// The reply's source was rewritten: +snat (OVS and the kernel report
	// the translation applied to this packet).
	if r.State != trk|est|rpl|StateSNAT || r.Mark != 0x21 {
		t.Fatalf("reply: %s mark %#x", stateString(r.State), r.Mark)
	}
	if got := decode(t, synack).String(); got != hp("10.96.0.10", 80)+"->"+hp("10.10.0.5", 40000) {
		t.Fatalf("translated reply %s", got)
	}
	checkCsums(t, synack)
	// The client's next packet is translated by the lookup alone.
	ack := build(cv.fromC(tcpACK, 0))
	a := h.ct(ack, lookupNAT)
	if a.State != trk|est|StateDNAT || decode(t, ack).dst != mustAddr("10.10.0.4") {
		t.Fatalf("ack: %s %v", stateString(a.State), decode(t, ack))
	}
	checkCsums(t, ack)
	// Without nat the packet is tracked but left alone.
	ack2 := build(cv.fromC(tcpACK, 0))
	before = string(ack2)
	if a := h.ct(ack2, Args{Zone: antreaZone}); a.State != trk|est || string(ack2) != before {
		t.Fatalf("lookup without nat: %s", stateString(a.State))
	}
	want := "tcp,orig=(src=10.10.0.5,dst=10.96.0.10,sport=40000,dport=80),reply=(src=10.10.0.4,dst=10.10.0.5,sport=8080,dport=40000),zone=65520,mark=33,labels=0x100000000,protoinfo=(state=ESTABLISHED)"
	if d := h.tr.Dump(DumpFilter{}); len(d) != 1 || d[0].String() != want {
		t.Fatalf("dump:\n%s\nwant\n%s", strings.Join(entryStrings(d), "\n"), want)
	}
}

func TestDNATAddressRange(t *testing.T) {
	h := newHarness(t, Config{})
	n := &NAT{Action: NATDst, MinAddr: mustAddr("10.10.1.1"), MaxAddr: mustAddr("10.10.1.4"), MinPort: 8000, MaxPort: 8003}
	seen := map[netip.Addr]bool{}
	for i := 0; i < 64; i++ {
		f := build(udpPk("10.10.0.5", "10.96.0.53", uint16(30000+i), 53))
		md := h.ct(f, Args{Commit: true, NAT: n})
		if md.State != trk|nw|StateDNAT {
			t.Fatalf("conn %d: %s", i, stateString(md.State))
		}
		d := decode(t, f)
		if d.dst.Compare(mustAddr("10.10.1.1")) < 0 || d.dst.Compare(mustAddr("10.10.1.4")) > 0 || d.dport < 8000 || d.dport > 8003 || d.sport != uint16(30000+i) {
			t.Fatalf("conn %d translated to %v", i, d)
		}
		seen[d.dst] = true
		checkCsums(t, f)
	}
	if len(seen) < 3 {
		t.Fatalf("hash spread over %d of 4 addresses", len(seen))
	}
}

func TestSNATPortExhaustion(t *testing.T) {
	h := newHarness(t, Config{})
	snat := Args{Zone: 65521, Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("192.168.0.100"), MinPort: 40000, MaxPort: 40001}}
	ports := map[uint16]string{}
	for i, client := range []string{"10.10.0.5", "10.10.0.6", "10.10.0.7"} {
		f := build(tcpPk(client, "8.8.8.8", 5555, 443, tcpSYN, 1, 0, 0))
		md := h.ct(f, snat)
		if i == 2 {
			if md.State != trk|inv {
				t.Fatalf("third connection with 2 ports: %s", stateString(md.State))
			}
			continue
		}
		if md.State != trk|nw|StateSNAT {
			t.Fatalf("conn %d: %s", i, stateString(md.State))
		}
		d := decode(t, f)
		if d.src != mustAddr("192.168.0.100") || d.sport < 40000 || d.sport > 40001 {
			t.Fatalf("conn %d translated to %v", i, d)
		}
		if ports[d.sport] != "" {
			t.Fatalf("port %d given twice", d.sport)
		}
		ports[d.sport] = client
		checkCsums(t, f)
	}
	if h.tr.Stats().NATFail != 1 || h.tr.Count() != 2 {
		t.Fatalf("stats %+v count %d", h.tr.Stats(), h.tr.Count())
	}
	// Replies find their own client.
	for port, client := range ports {
		f := build(tcpPk("8.8.8.8", "192.168.0.100", 443, port, tcpSYN|tcpACK, 100, 2, 0))
		md := h.ct(f, Args{Zone: 65521, NAT: &NAT{}})
		if md.State != trk|est|rpl|StateDNAT {
			t.Fatalf("reply to %d: %s", port, stateString(md.State))
		}
		if d := decode(t, f); d.dst != mustAddr(client) || d.dport != 5555 {
			t.Fatalf("reply to port %d went to %v, want %s:5555", port, d, client)
		}
		checkCsums(t, f)
	}
	// Once a connection is gone its port is free again.
	if err := h.tr.FlushTuple(65521, Tuple{Src: mustAddr("10.10.0.5"), Dst: mustAddr("8.8.8.8"), Proto: protoTCP, SrcPort: 5555, DstPort: 443}); err != nil {
		t.Fatal(err)
	}
	if md := h.ct(build(tcpPk("10.10.0.7", "8.8.8.8", 5555, 443, tcpSYN, 1, 0, 0)), snat); md.State != trk|nw|StateSNAT {
		t.Fatalf("after flush: %s", stateString(md.State))
	}
}

func TestSNATCollisionAvoidance(t *testing.T) {
	h := newHarness(t, Config{})
	snat := Args{Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("192.168.0.100")}}
	f1 := build(udpPk("10.10.0.5", "1.1.1.1", 5555, 53))
	f2 := build(udpPk("10.10.0.6", "1.1.1.1", 5555, 53))
	f3 := build(udpPk("10.10.0.7", "1.1.1.1", 700, 53))
	h.ct(f1, snat)
	h.ct(f2, snat)
	h.ct(f3, snat)
	d1, d2, d3 := decode(t, f1), decode(t, f2), decode(t, f3)
	if d1.sport != 5555 {
		t.Fatalf("first connection should keep its port: %v", d1)
	}
	if d2.sport == 5555 || d2.sport < 1024 || d2.src != mustAddr("192.168.0.100") {
		t.Fatalf("second connection must move to another ephemeral port: %v", d2)
	}
	if d3.sport != 700 {
		t.Fatalf("free privileged port changed: %v", d3)
	}
	// Persistent: a client keeps its address across connections.
	pers := Args{Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("172.16.0.1"), MaxAddr: mustAddr("172.16.0.200"), Persistent: true}}
	var first netip.Addr
	for i := 0; i < 20; i++ {
		f := build(udpPk("10.10.0.9", "2.2.2.2", uint16(10000+i), 53))
		h.ct(f, pers)
		d := decode(t, f)
		if i == 0 {
			first = d.src
		} else if d.src != first {
			t.Fatalf("persistent SNAT moved the client from %v to %v", first, d.src)
		}
	}
	// Random still gives unique tuples.
	rnd := Args{Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("172.16.1.1"), MinPort: 2000, MaxPort: 2009, Random: true}}
	seen := map[uint16]bool{}
	for i := 0; i < 10; i++ {
		f := build(udpPk("10.10.0.9", "3.3.3.3", uint16(20000+i), 53))
		if md := h.ct(f, rnd); md.State != trk|nw|StateSNAT {
			t.Fatalf("random %d: %s", i, stateString(md.State))
		}
		seen[decode(t, f).sport] = true
	}
	if len(seen) != 10 {
		t.Fatalf("random SNAT used %d distinct ports for 10 connections", len(seen))
	}
}

func TestNATRelatedICMP(t *testing.T) {
	h := newHarness(t, Config{})
	dnat := Args{Commit: true, NAT: &NAT{Action: NATDst, MinAddr: mustAddr("10.10.0.4"), MinPort: 8080}}
	syn := build(tcpPk("10.10.0.5", "10.96.0.10", 40000, 80, tcpSYN, 1, 0, 0))
	h.ct(syn, dnat)
	// A router on the way to the endpoint reports it unreachable, quoting
	// the translated SYN; the client must see an error about its own SYN
	// to the service address.
	errf := build(icmpErr("192.168.9.9", "10.10.0.5", syn))
	md := h.ct(errf, Args{NAT: &NAT{}})
	if md.State != trk|rel|rpl|StateSNAT {
		t.Fatalf("related: %s", stateString(md.State))
	}
	d := decode(t, errf)
	if d.src != mustAddr("10.96.0.10") || d.dst != mustAddr("10.10.0.5") {
		t.Fatalf("outer header %v", d)
	}
	if d.inner == nil || d.inner.String() != hp("10.10.0.5", 40000)+"->"+hp("10.96.0.10", 80) {
		t.Fatalf("embedded packet %v", d.inner)
	}
	checkCsums(t, errf)

	// SNAT: the router's address stays, the destination goes back to the
	// client.
	snat := Args{Zone: 2, Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("192.168.0.100"), MinPort: 30000, MaxPort: 30000}}
	usyn := build(udpPk("10.10.0.5", "9.9.9.9", 1234, 53))
	h.ct(usyn, snat)
	errf = build(icmpErr("192.168.9.9", "192.168.0.100", usyn))
	md = h.ct(errf, Args{Zone: 2, NAT: &NAT{}})
	if md.State != trk|rel|rpl|StateDNAT {
		t.Fatalf("snat related: %s", stateString(md.State))
	}
	d = decode(t, errf)
	if d.src != mustAddr("192.168.9.9") || d.dst != mustAddr("10.10.0.5") || d.inner.String() != hp("10.10.0.5", 1234)+"->"+hp("9.9.9.9", 53) {
		t.Fatalf("snat related translated to %v inner %v", d, d.inner)
	}
	checkCsums(t, errf)
}

func TestICMPEchoSNAT(t *testing.T) {
	h := newHarness(t, Config{})
	snat := Args{Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("192.168.0.100")}}
	p1 := build(icmpEcho("10.10.0.5", "8.8.8.8", icmp4Echo, 77))
	p2 := build(icmpEcho("10.10.0.6", "8.8.8.8", icmp4Echo, 77))
	h.ct(p1, snat)
	if md := h.ct(p2, snat); md.State != trk|nw|StateSNAT {
		t.Fatalf("second ping: %s", stateString(md.State))
	}
	d1, d2 := decode(t, p1), decode(t, p2)
	if d1.icmpID != 77 || d2.icmpID == 77 || d2.src != mustAddr("192.168.0.100") {
		t.Fatalf("ids %d %d", d1.icmpID, d2.icmpID)
	}
	checkCsums(t, p1)
	checkCsums(t, p2)
	rep := build(icmpEcho("8.8.8.8", "192.168.0.100", icmp4EchoReply, d2.icmpID))
	if md := h.ct(rep, Args{NAT: &NAT{}}); md.State != trk|est|rpl|StateDNAT {
		t.Fatalf("reply: %s", stateString(md.State))
	}
	if d := decode(t, rep); d.dst != mustAddr("10.10.0.6") || d.icmpID != 77 {
		t.Fatalf("reply translated to %v id %d", d, d.icmpID)
	}
	checkCsums(t, rep)
}

func TestIPv6NAT(t *testing.T) {
	h := newHarness(t, Config{})
	dnat := Args{Commit: true, NAT: &NAT{Action: NATDst, MinAddr: mustAddr("fd00:10::4"), MinPort: 8443}}
	f := build(tcpPk("fd00:10::5", "fd00:96::10", 41000, 443, tcpSYN, 1, 0, 0))
	if md := h.ct(f, dnat); md.State != trk|nw|StateDNAT {
		t.Fatalf("v6 dnat: %s", stateString(md.State))
	}
	if d := decode(t, f); d.dst != mustAddr("fd00:10::4") || d.dport != 8443 {
		t.Fatalf("v6 dnat to %v", d)
	}
	checkCsums(t, f)
	r := build(tcpPk("fd00:10::4", "fd00:10::5", 8443, 41000, tcpSYN|tcpACK, 1, 2, 0))
	if md := h.ct(r, Args{NAT: &NAT{}}); md.State != trk|est|rpl|StateSNAT {
		t.Fatalf("v6 reply: %s", stateString(md.State))
	}
	if d := decode(t, r); d.src != mustAddr("fd00:96::10") || d.sport != 443 {
		t.Fatalf("v6 reply to %v", d)
	}
	checkCsums(t, r)
	// A v6 range in a /64 with a large span.
	snat := Args{Zone: 4, Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("fd00:1::ffff:ff00"), MaxAddr: mustAddr("fd00:1::1:0:ff")}}
	u := build(udpPk("fd00:10::5", "fd00:99::1", 5353, 53))
	if md := h.ct(u, snat); md.State != trk|nw|StateSNAT {
		t.Fatalf("v6 snat: %s", stateString(md.State))
	}
	d := decode(t, u)
	if d.src.Compare(mustAddr("fd00:1::ffff:ff00")) < 0 || d.src.Compare(mustAddr("fd00:1::1:0:ff")) > 0 {
		t.Fatalf("v6 snat address %v out of range", d.src)
	}
	checkCsums(t, u)
	// Address family mismatch: refused, not mistranslated.
	bad := Args{Zone: 5, Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("1.2.3.4")}}
	if md := h.ct(build(udpPk("fd00:10::5", "fd00:99::1", 5353, 53)), bad); md.State != trk|inv {
		t.Fatalf("v4 range on v6 packet: %s", stateString(md.State))
	}
}

func TestUDPZeroChecksumStaysZero(t *testing.T) {
	h := newHarness(t, Config{})
	f := build(udpPk("10.0.0.1", "10.96.0.1", 1000, 53))
	f[ethLen+20+6], f[ethLen+20+7] = 0, 0
	h.ct(f, Args{Commit: true, NAT: &NAT{Action: NATDst, MinAddr: mustAddr("10.0.0.9"), MinPort: 5353}})
	if f[ethLen+20+6] != 0 || f[ethLen+20+7] != 0 {
		t.Fatal("zero UDP checksum was filled in")
	}
	if decode(t, f).dport != 5353 {
		t.Fatal("not translated")
	}
}

func TestNATExistingOnNewConnection(t *testing.T) {
	h := newHarness(t, Config{})
	f := build(udpPk("10.0.0.1", "10.0.0.2", 1000, 53))
	before := string(f)
	md := h.ct(f, Args{Commit: true, NAT: &NAT{}})
	if md.State != trk|nw || string(f) != before {
		t.Fatalf("ct(commit,nat) on a new connection: %s, modified=%v", stateString(md.State), string(f) != before)
	}
}

func TestSCTPNATCRC(t *testing.T) {
	h := newHarness(t, Config{})
	sctp := make([]byte, 28)
	binary.BigEndian.PutUint16(sctp[0:], 5000)
	binary.BigEndian.PutUint16(sctp[2:], 6000)
	sctpFixCRC(sctp)
	f := build(pk{src: "10.0.0.1", dst: "10.96.0.9", proto: protoSCTP, payload: sctp})
	md := h.ct(f, Args{Commit: true, NAT: &NAT{Action: NATDst, MinAddr: mustAddr("10.0.0.7"), MinPort: 7000}})
	if md.State != trk|nw|StateDNAT {
		t.Fatalf("sctp: %s", stateString(md.State))
	}
	l4 := f[ethLen+20:]
	if binary.BigEndian.Uint16(l4[2:]) != 7000 {
		t.Fatalf("sctp port %d", binary.BigEndian.Uint16(l4[2:]))
	}
	crc := binary.LittleEndian.Uint32(l4[8:])
	check := append([]byte(nil), l4...)
	sctpFixCRC(check)
	if binary.LittleEndian.Uint32(check[8:]) != crc || crc == 0 {
		t.Fatal("sctp CRC not recomputed")
	}
}

// TestZeroSNAT: nat(src=0.0.0.0) keeps the source address and port when
// the reply tuple is free, and changes only the port when another
// connection's reply already uses it (OVS's all-zero SNAT, which
// ovn-controller uses when Datapath capabilities say ct_zero_snat).
func TestZeroSNAT(t *testing.T) {
	h := newHarness(t, Config{})
	zero := Args{Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("0.0.0.0")}}
	f := build(udpPk("10.10.0.5", "1.1.1.1", 5555, 53))
	if md := h.ct(f, zero); md.State != trk|nw|StateSNAT {
		t.Fatalf("zero SNAT: %s", stateString(md.State))
	}
	if d := decode(t, f); d.src != mustAddr("10.10.0.5") || d.sport != 5555 {
		t.Fatalf("zero SNAT without collision changed the packet: %v", d)
	}
	// 10.10.0.6 SNATed to 10.10.0.7 takes the reply tuple
	// 1.1.1.1:53 -> 10.10.0.7:6666 first; 10.10.0.7's own connection to
	// the same place must then move to another port, keeping its address.
	h.ct(build(udpPk("10.10.0.6", "1.1.1.1", 6666, 53)), Args{Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("10.10.0.7")}})
	f = build(udpPk("10.10.0.7", "1.1.1.1", 6666, 53))
	if md := h.ct(f, zero); md.State != trk|nw|StateSNAT {
		t.Fatalf("zero SNAT with a collision: %s", stateString(md.State))
	}
	if d := decode(t, f); d.src != mustAddr("10.10.0.7") || d.sport == 6666 {
		t.Fatalf("zero SNAT with a collision: %v, want 10.10.0.7 and another port", d)
	}
	checkCsums(t, f)
}
