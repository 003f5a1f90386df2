package conntrack

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

const antreaZone = 65520

// step is one packet of a scenario: the packet, the ct() arguments and the
// ct_state expected afterwards.
type step struct {
	name string
	p    pk
	a    Args
	want uint8
}

func runSteps(t *testing.T, h *harness, steps []step) {
	t.Helper()
	for i, s := range steps {
		md := h.ct(build(s.p), s.a)
		if md.State != s.want {
			t.Errorf("step %d %s: ct_state %s, want %s", i, s.name, stateString(md.State), stateString(s.want))
		}
	}
}

const (
	trk = StateTracked
	nw  = StateNew
	est = StateEst
	rpl = StateRpl
	inv = StateInv
	rel = StateRel
)

func tcpPk(src, dst string, sport, dport uint16, flags uint16, seq, ack uint32, payload int) pk {
	return pk{src: src, dst: dst, proto: protoTCP, sport: sport, dport: dport, flags: flags, seq: seq, ack: ack, payload: make([]byte, payload)}
}

// A client/server TCP conversation in one direction-agnostic form.
type tcpConv struct {
	c, s         string
	cport, sport uint16
	cseq, sseq   uint32
}

func (cv *tcpConv) fromC(flags uint16, n int) pk {
	p := tcpPk(cv.c, cv.s, cv.cport, cv.sport, flags, cv.cseq, cv.sseq, n)
	cv.cseq += uint32(n)
	if flags&(tcpSYN|tcpFIN) != 0 {
		cv.cseq++
	}
	return p
}

func (cv *tcpConv) fromS(flags uint16, n int) pk {
	p := tcpPk(cv.s, cv.c, cv.sport, cv.cport, flags, cv.sseq, cv.cseq, n)
	cv.sseq += uint32(n)
	if flags&(tcpSYN|tcpFIN) != 0 {
		cv.sseq++
	}
	return p
}

func TestTCPStates(t *testing.T) {
	commit := Args{Zone: 1, Commit: true}
	look := Args{Zone: 1}
	tests := []struct {
		name  string
		steps func(cv *tcpConv) []step
		dump  string // expected protoinfo state at the end ("" = no entry)
	}{
		{"handshake data teardown", func(cv *tcpConv) []step {
			return []step{
				{"syn", cv.fromC(tcpSYN, 0), commit, trk | nw},
				{"syn-ack", cv.fromS(tcpSYN|tcpACK, 0), look, trk | est | rpl},
				{"ack", cv.fromC(tcpACK, 0), look, trk | est},
				{"data", cv.fromC(tcpACK|tcpPSH, 100), look, trk | est},
				{"data reply", cv.fromS(tcpACK|tcpPSH, 1000), look, trk | est | rpl},
				{"fin", cv.fromC(tcpFIN|tcpACK, 0), look, trk | est},
				{"fin-ack", cv.fromS(tcpFIN|tcpACK, 0), look, trk | est | rpl},
				{"last ack", cv.fromC(tcpACK, 0), look, trk | est},
			}
		}, "TIME_WAIT"},
		{"rst ends", func(cv *tcpConv) []step {
			return []step{
				{"syn", cv.fromC(tcpSYN, 0), commit, trk | nw},
				{"syn-ack", cv.fromS(tcpSYN|tcpACK, 0), look, trk | est | rpl},
				{"ack", cv.fromC(tcpACK, 0), look, trk | est},
				{"rst", cv.fromS(tcpRST|tcpACK, 0), look, trk | est | rpl},
			}
		}, "TIME_WAIT"},
		{"syn retransmit stays new", func(cv *tcpConv) []step {
			syn := cv.fromC(tcpSYN, 0)
			return []step{
				{"syn", syn, commit, trk | nw},
				{"syn again", syn, look, trk | nw},
			}
		}, "SYN_SENT"},
		{"out of window data", func(cv *tcpConv) []step {
			s := []step{
				{"syn", cv.fromC(tcpSYN, 0), commit, trk | nw},
				{"syn-ack", cv.fromS(tcpSYN|tcpACK, 0), look, trk | est | rpl},
				{"ack", cv.fromC(tcpACK, 0), look, trk | est},
			}
			far := tcpPk(cv.c, cv.s, cv.cport, cv.sport, tcpACK, cv.cseq+10_000_000, cv.sseq, 10)
			return append(s, step{"far ahead", far, look, trk | inv})
		}, "ESTABLISHED"},
		{"ack of unsent data", func(cv *tcpConv) []step {
			s := []step{
				{"syn", cv.fromC(tcpSYN, 0), commit, trk | nw},
				{"syn-ack", cv.fromS(tcpSYN|tcpACK, 0), look, trk | est | rpl},
			}
			bad := tcpPk(cv.c, cv.s, cv.cport, cv.sport, tcpACK, cv.cseq, cv.sseq+5_000_000, 0)
			return append(s, step{"wild ack", bad, look, trk | inv})
		}, "ESTABLISHED"},
		{"rst with wrong seq", func(cv *tcpConv) []step {
			s := []step{
				{"syn", cv.fromC(tcpSYN, 0), commit, trk | nw},
				{"syn-ack", cv.fromS(tcpSYN|tcpACK, 0), look, trk | est | rpl},
				{"ack", cv.fromC(tcpACK, 0), look, trk | est},
			}
			bad := tcpPk(cv.s, cv.c, cv.sport, cv.cport, tcpRST, cv.sseq+1000, 0, 0)
			return append(s, step{"rst", bad, look, trk | inv})
		}, "ESTABLISHED"},
		{"invalid flags", func(cv *tcpConv) []step {
			return []step{
				{"syn", cv.fromC(tcpSYN, 0), commit, trk | nw},
				{"syn+fin", cv.fromC(tcpSYN|tcpFIN, 0), look, trk | inv},
				{"no flags", cv.fromC(0, 0), look, trk | inv},
			}
		}, "SYN_SENT"},
		{"syn-ack cannot start", func(cv *tcpConv) []step {
			return []step{{"syn-ack", cv.fromS(tcpSYN|tcpACK, 0), commit, trk | inv}}
		}, ""},
		{"mid-stream pickup", func(cv *tcpConv) []step {
			cv.fromC(tcpSYN, 0)
			cv.fromS(tcpSYN|tcpACK, 0)
			return []step{
				{"ack", cv.fromC(tcpACK, 10), commit, trk | nw},
				{"reply", cv.fromS(tcpACK, 10), look, trk | est | rpl},
				{"more", cv.fromC(tcpACK, 10), look, trk | est},
			}
		}, "ESTABLISHED"},
		{"reopen after close", func(cv *tcpConv) []step {
			s := []step{
				{"syn", cv.fromC(tcpSYN, 0), commit, trk | nw},
				{"syn-ack", cv.fromS(tcpSYN|tcpACK, 0), look, trk | est | rpl},
				{"rst", cv.fromC(tcpRST|tcpACK, 0), look, trk | est},
			}
			cv.cseq += 100000
			return append(s, step{"new syn", cv.fromC(tcpSYN, 0), commit, trk | nw})
		}, "SYN_SENT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			cv := &tcpConv{c: "10.0.0.1", s: "10.0.0.2", cport: 40000, sport: 80, cseq: 1000, sseq: 900000}
			runSteps(t, h, tc.steps(cv))
			d := h.tr.Dump(DumpFilter{})
			if tc.dump == "" {
				if len(d) != 0 {
					t.Fatalf("dump: %v, want nothing", d)
				}
				return
			}
			if len(d) != 1 {
				t.Fatalf("dump has %d entries, want 1: %v", len(d), d)
			}
			if got := d[0].TCPStateName(); got != tc.dump {
				t.Errorf("dump state %s, want %s (%v)", got, tc.dump, d[0])
			}
		})
	}
}

func TestTCPWindowScaling(t *testing.T) {
	h := newHarness(t, Config{})
	look := Args{Zone: 0}
	cv := &tcpConv{c: "10.0.0.1", s: "10.0.0.2", cport: 40000, sport: 443, cseq: 1, sseq: 5000}
	wsOpt := []byte{1, 3, 3, 7} // NOP, window scale 7
	syn := cv.fromC(tcpSYN, 0)
	syn.opts, syn.win = wsOpt, 64240
	synack := cv.fromS(tcpSYN|tcpACK, 0)
	synack.opts, synack.win = wsOpt, 65160
	ack := cv.fromC(tcpACK, 0)
	ack.win = 502 // 502 << 7 = 64256
	runSteps(t, h, []step{
		{"syn", syn, Args{Commit: true}, trk | nw},
		{"syn-ack", synack, look, trk | est | rpl},
		{"ack", ack, look, trk | est},
	})
	// The server may now send up to the client's scaled window: 60000
	// bytes in one burst is in the window only because of scaling.
	big := cv.fromS(tcpACK, 60000)
	big.win = 509
	if md := h.ct(build(big), look); md.State != trk|est|rpl {
		t.Fatalf("scaled-window segment: %s, want +est+rpl+trk", stateString(md.State))
	}
}

func TestTCPNoSeqCheck(t *testing.T) {
	h := newHarness(t, Config{NoTCPSeqCheck: true})
	cv := &tcpConv{c: "10.0.0.1", s: "10.0.0.2", cport: 40000, sport: 80, cseq: 1000, sseq: 900000}
	runSteps(t, h, []step{
		{"syn", cv.fromC(tcpSYN, 0), Args{Commit: true}, trk | nw},
		{"syn-ack", cv.fromS(tcpSYN|tcpACK, 0), Args{}, trk | est | rpl},
		{"far", tcpPk(cv.c, cv.s, cv.cport, cv.sport, tcpACK, cv.cseq+10_000_000, cv.sseq, 10), Args{}, trk | est},
	})
}

func TestUncommittedCreatesNothing(t *testing.T) {
	h := newHarness(t, Config{})
	cv := &tcpConv{c: "10.0.0.1", s: "10.0.0.2", cport: 40000, sport: 80, cseq: 1000, sseq: 900000}
	runSteps(t, h, []step{
		{"syn lookup", cv.fromC(tcpSYN, 0), Args{Zone: 5}, trk | nw},
		{"syn-ack", cv.fromS(tcpSYN|tcpACK, 0), Args{Zone: 5}, trk | inv},
	})
	if n := h.tr.Count(); n != 0 {
		t.Fatalf("Count = %d after uncommitted lookups, want 0", n)
	}
	// The orig tuple of an uncommitted packet is the packet's own.
	md := h.ct(build(udpPk("10.0.0.1", "10.0.0.2", 1111, 53)), Args{Zone: 5})
	if md.Orig.Proto != protoUDP || md.Orig.SrcAddr() != mustAddr("10.0.0.1") || md.Orig.DstPort != 53 {
		t.Fatalf("uncommitted orig tuple = %+v", md.Orig)
	}
}

func udpPk(src, dst string, sport, dport uint16) pk {
	return pk{src: src, dst: dst, proto: protoUDP, sport: sport, dport: dport, payload: []byte("hello")}
}

func TestUDPAndOther(t *testing.T) {
	h := newHarness(t, Config{})
	c := Args{Commit: true}
	gre := func(src, dst string) pk { return pk{src: src, dst: dst, proto: 47, payload: make([]byte, 8)} }
	runSteps(t, h, []step{
		{"udp first", udpPk("10.0.0.1", "10.0.0.2", 5000, 53), c, trk | nw},
		{"udp again", udpPk("10.0.0.1", "10.0.0.2", 5000, 53), c, trk | nw},
		{"udp reply", udpPk("10.0.0.2", "10.0.0.1", 53, 5000), c, trk | est | rpl},
		{"udp after reply", udpPk("10.0.0.1", "10.0.0.2", 5000, 53), c, trk | est},
		{"udp port 0", udpPk("10.0.0.1", "10.0.0.2", 0, 53), c, trk | inv},
		{"gre first", gre("10.0.0.1", "10.0.0.3"), c, trk | nw},
		{"gre reply", gre("10.0.0.3", "10.0.0.1"), c, trk | est | rpl},
	})
	d := h.tr.Dump(DumpFilter{})
	want := []string{
		"udp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=5000,dport=53),reply=(src=10.0.0.2,dst=10.0.0.1,sport=53,dport=5000)",
		"47,orig=(src=10.0.0.1,dst=10.0.0.3,sport=0,dport=0),reply=(src=10.0.0.3,dst=10.0.0.1,sport=0,dport=0)",
	}
	if got := entryStrings(d); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dump:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func entryStrings(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.String())
	}
	return out
}

func icmpEcho(src, dst string, typ uint8, id uint16) pk {
	proto := uint8(protoICMP)
	if mustAddr(src).Is6() {
		proto = protoICMPv6
	}
	return pk{src: src, dst: dst, proto: proto, icmpType: typ, id: id, payload: []byte("ping")}
}

func TestICMP(t *testing.T) {
	h := newHarness(t, Config{})
	c := Args{Commit: true, Zone: 3}
	runSteps(t, h, []step{
		{"echo", icmpEcho("10.0.0.1", "10.0.0.2", icmp4Echo, 7), c, trk | nw},
		{"echo reply", icmpEcho("10.0.0.2", "10.0.0.1", icmp4EchoReply, 7), c, trk | est | rpl},
		{"other id reply", icmpEcho("10.0.0.2", "10.0.0.1", icmp4EchoReply, 8), c, trk | inv},
		{"v6 echo", icmpEcho("fd00::1", "fd00::2", icmp6Echo, 9), c, trk | nw},
		{"v6 reply", icmpEcho("fd00::2", "fd00::1", icmp6EchoReply, 9), c, trk | est | rpl},
		{"v6 neighbor solicitation", pk{src: "fd00::1", dst: "fd00::2", proto: protoICMPv6, icmpType: 135, payload: make([]byte, 20)}, c, trk | inv},
	})
	want := []string{
		"icmp,orig=(src=10.0.0.1,dst=10.0.0.2,id=7,type=8,code=0),reply=(src=10.0.0.2,dst=10.0.0.1,id=7,type=0,code=0),zone=3",
		"icmpv6,orig=(src=fd00::1,dst=fd00::2,id=9,type=128,code=0),reply=(src=fd00::2,dst=fd00::1,id=9,type=129,code=0),zone=3",
	}
	if got := entryStrings(h.tr.Dump(DumpFilter{})); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dump:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The orig tuple of ICMP carries type and code in the port fields.
	md := h.ct(build(icmpEcho("10.0.0.2", "10.0.0.1", icmp4EchoReply, 7)), c)
	if md.Orig.SrcPort != icmp4Echo || md.Orig.DstPort != 0 || md.Orig.Proto != protoICMP {
		t.Fatalf("icmp orig tuple %+v", md.Orig)
	}
}

// icmpErr builds an ICMP error from router to dst quoting the frame about.
func icmpErr(router, dst string, about []byte) pk {
	inner := ipPacket(about)
	if len(inner) > 28+20 {
		inner = inner[:48]
	}
	if mustAddr(router).Is4() {
		return pk{src: router, dst: dst, proto: protoICMP, icmpType: icmp4DstUnreach, icmpCode: 3, inner: inner}
	}
	return pk{src: router, dst: dst, proto: protoICMPv6, icmpType: icmp6DstUnreach, icmpCode: 4, inner: inner}
}

func TestICMPRelated(t *testing.T) {
	h := newHarness(t, Config{})
	c := Args{Commit: true}
	syn := build(tcpPk("10.0.0.1", "10.0.0.2", 40000, 80, tcpSYN, 1, 0, 0))
	if md := h.ct(syn, c); md.State != trk|nw {
		t.Fatalf("syn: %s", stateString(md.State))
	}
	synack := build(tcpPk("10.0.0.2", "10.0.0.1", 80, 40000, tcpSYN|tcpACK, 100, 2, 0))
	udp := build(udpPk("fd00::1", "fd00::2", 3000, 4000))
	if md := h.ct(udp, c); md.State != trk|nw {
		t.Fatalf("udp6: %s", stateString(md.State))
	}
	runSteps(t, h, []step{
		// The router tells the client its SYN could not be delivered.
		{"error to client", icmpErr("192.168.1.1", "10.0.0.1", syn), c, trk | rel | rpl},
		// The client complains about the server's packet.
		{"error to server", icmpErr("10.0.0.1", "10.0.0.2", synack), c, trk | rel},
		// An error about a connection nobody has.
		{"unknown", icmpErr("192.168.1.1", "10.0.0.1", build(tcpPk("10.0.0.1", "10.0.0.9", 1, 2, tcpSYN, 1, 0, 0))), c, trk | inv},
		// The quoted packet must come from the error's destination.
		{"spoofed", icmpErr("192.168.1.1", "10.0.0.7", syn), c, trk | inv},
		{"v6 error", icmpErr("fd00::99", "fd00::1", udp), c, trk | rel | rpl},
	})
	if h.tr.Count() != 2 {
		t.Fatalf("errors created connections: count %d", h.tr.Count())
	}
}

// The seed flows of Antrea (seed 001 §8.3-8.6): ct(table=31,zone=65520) on
// every IP packet; new connections from the gateway are committed with
// exec(load:0x20->NXM_NX_CT_MARK[]); the reply must match
// ct_state=-new+trk,ct_mark=0x20.
func TestAntreaGatewayMark(t *testing.T) {
	h := newHarness(t, Config{})
	lookup := Args{Zone: antreaZone}
	commitMark := Args{Zone: antreaZone, Commit: true, SetMark: true, Mark: 0x20, MarkMask: 0xffffffff}
	cv := &tcpConv{c: "10.10.0.1", s: "10.10.0.5", cport: 51000, sport: 8080, cseq: 7, sseq: 70000}

	syn := build(cv.fromC(tcpSYN, 0))
	var md Meta
	h.tr.Execute(syn, ethLen, EthTypeIPv4, &md, &lookup, h.clock.now) // table 30
	if md.State != trk|nw {
		t.Fatalf("table 30: %s", stateString(md.State))
	}
	h.tr.Execute(syn, ethLen, EthTypeIPv4, &md, &commitMark, h.clock.now) // table 105
	if md.State != trk|nw || md.Mark != 0x20 || md.Zone != antreaZone {
		t.Fatalf("table 105: %s mark %#x zone %d", stateString(md.State), md.Mark, md.Zone)
	}
	reply := h.ct(build(cv.fromS(tcpSYN|tcpACK, 0)), lookup)
	if reply.State&(trk|nw) != trk || reply.Mark != 0x20 || reply.State&rpl == 0 {
		t.Fatalf("reply: %s mark %#x, want -new+trk+rpl ct_mark=0x20", stateString(reply.State), reply.Mark)
	}
	if reply.Orig.SrcAddr() != mustAddr("10.10.0.1") || reply.Orig.DstPort != 8080 || reply.Orig.Proto != protoTCP {
		t.Fatalf("reply orig tuple %+v", reply.Orig)
	}
	// A connection committed without the mark keeps mark 0.
	h.ct(build(tcpPk("10.10.0.5", "10.10.0.6", 1, 2, tcpSYN, 1, 0, 0)), Args{Zone: antreaZone, Commit: true})
	if r := h.ct(build(tcpPk("10.10.0.6", "10.10.0.5", 2, 1, tcpSYN|tcpACK, 1, 2, 0)), lookup); r.Mark != 0 {
		t.Fatalf("unmarked connection has mark %#x", r.Mark)
	}
	d := h.tr.Dump(DumpFilter{Zone: ptr(uint16(antreaZone))})
	want := "tcp,orig=(src=10.10.0.1,dst=10.10.0.5,sport=51000,dport=8080),reply=(src=10.10.0.5,dst=10.10.0.1,sport=8080,dport=51000),zone=65520,mark=32,protoinfo=(state=ESTABLISHED)"
	if len(d) != 2 || d[0].String() != want {
		t.Fatalf("dump:\n%s\nwant first:\n%s", strings.Join(entryStrings(d), "\n"), want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestMarkAndLabelMasks(t *testing.T) {
	h := newHarness(t, Config{})
	p := build(udpPk("10.0.0.1", "10.0.0.2", 1000, 2000))
	h.ct(p, Args{Commit: true, SetMark: true, Mark: 0x21, MarkMask: 0xffffffff})
	// exec(load:0x1->NXM_NX_CT_LABEL[32..63]) from seed 002.
	md := h.ct(p, Args{Commit: true, SetLabel: true, Label: Label{Lo: 1 << 32}, LabelMask: Label{Lo: 0xffffffff00000000}})
	if md.Mark != 0x21 || md.Label != (Label{Lo: 1 << 32}) {
		t.Fatalf("mark %#x label %+v", md.Mark, md.Label)
	}
	md = h.ct(p, Args{Commit: true, SetLabel: true, Label: Label{Hi: 0xab, Lo: 3}, LabelMask: Label{Hi: 0xff, Lo: 0xffffffff}, SetMark: true, Mark: 0x100, MarkMask: 0xf00})
	if md.Mark != 0x121 || md.Label != (Label{Hi: 0xab, Lo: 1<<32 | 3}) {
		t.Fatalf("mark %#x label %+v", md.Mark, md.Label)
	}
	// Without commit, exec() is not applied (OVS only allows it with commit).
	md = h.ct(p, Args{SetMark: true, Mark: 0, MarkMask: 0xffffffff})
	if md.Mark != 0x121 {
		t.Fatalf("uncommitted exec changed the mark to %#x", md.Mark)
	}
	want := "udp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=1000,dport=2000),reply=(src=10.0.0.2,dst=10.0.0.1,sport=2000,dport=1000),mark=289,labels=0xab0000000100000003"
	if d := h.tr.Dump(DumpFilter{}); len(d) != 1 || d[0].String() != want {
		t.Fatalf("dump %v\nwant %s", d, want)
	}
}

func TestZoneIsolation(t *testing.T) {
	h := newHarness(t, Config{})
	syn := tcpPk("10.0.0.1", "10.0.0.2", 40000, 80, tcpSYN, 1, 0, 0)
	synack := tcpPk("10.0.0.2", "10.0.0.1", 80, 40000, tcpSYN|tcpACK, 100, 2, 0)
	runSteps(t, h, []step{
		{"commit zone 1", syn, Args{Zone: 1, Commit: true}, trk | nw},
		{"reply zone 2", synack, Args{Zone: 2}, trk | inv},
		{"reply zone 1", synack, Args{Zone: 1}, trk | est | rpl},
		{"commit zone 2", syn, Args{Zone: 2, Commit: true}, trk | nw},
	})
	if h.tr.ZoneCount(1) != 1 || h.tr.ZoneCount(2) != 1 || h.tr.Count() != 2 {
		t.Fatalf("zone counts %d %d total %d", h.tr.ZoneCount(1), h.tr.ZoneCount(2), h.tr.Count())
	}
	if n := h.tr.FlushZone(1); n != 1 {
		t.Fatalf("FlushZone(1) = %d", n)
	}
	if d := h.tr.Dump(DumpFilter{}); len(d) != 1 || d[0].Zone != 2 {
		t.Fatalf("after FlushZone(1): %v", d)
	}
	// Entering another zone resets ct_state: the +dnat of zone 1 must not
	// make zone 2 believe the packet was translated there.
	md := Meta{State: trk | nw | StateDNAT, Zone: 1}
	a := Args{Zone: 3}
	h.tr.Execute(build(syn), ethLen, EthTypeIPv4, &md, &a, h.clock.now)
	if md.State != trk|nw || md.Zone != 3 {
		t.Fatalf("zone change: %s zone %d", stateString(md.State), md.Zone)
	}
}

func TestForce(t *testing.T) {
	h := newHarness(t, Config{})
	ab := udpPk("10.0.0.1", "10.0.0.2", 1000, 2000)
	ba := udpPk("10.0.0.2", "10.0.0.1", 2000, 1000)
	runSteps(t, h, []step{
		{"commit a->b", ab, Args{Commit: true, SetMark: true, Mark: 1, MarkMask: 1}, trk | nw},
		{"force b->a", ba, Args{Commit: true, Force: true}, trk | nw},
		{"a->b is now the reply", ab, Args{}, trk | est | rpl},
		{"force in orig dir keeps it", ba, Args{Commit: true, Force: true}, trk | est},
	})
	d := h.tr.Dump(DumpFilter{})
	if len(d) != 1 || d[0].Orig.Src != mustAddr("10.0.0.2") || d[0].Mark != 0 {
		t.Fatalf("after force: %v", d)
	}
}

func TestExpiry(t *testing.T) {
	to := DefaultTimeouts()
	h := newHarness(t, Config{})
	c := Args{Commit: true}
	udp := udpPk("10.0.0.1", "10.0.0.2", 1000, 2000)
	h.ct(build(udp), c)
	cv := &tcpConv{c: "10.0.0.1", s: "10.0.0.2", cport: 40000, sport: 80, cseq: 1, sseq: 1000}
	h.ct(build(cv.fromC(tcpSYN, 0)), c)
	h.ct(build(cv.fromS(tcpSYN|tcpACK, 0)), Args{})
	h.ct(build(cv.fromC(tcpACK, 0)), Args{})
	if h.tr.Count() != 2 {
		t.Fatalf("count %d", h.tr.Count())
	}
	h.clock.Advance(to.UDPFirst - time.Second)
	if n := h.tr.Sweep(h.clock.now); n != 0 {
		t.Fatalf("swept %d before any timeout", n)
	}
	h.clock.Advance(2 * time.Second)
	// Lookups see the UDP connection gone at once, before any sweep.
	if md := h.ct(build(udp), Args{}); md.State != trk|nw {
		t.Fatalf("expired udp: %s", stateString(md.State))
	}
	if n := h.tr.Sweep(h.clock.now); n != 1 {
		t.Fatalf("swept %d, want the UDP connection", n)
	}
	if h.tr.Count() != 1 {
		t.Fatalf("count %d after sweep", h.tr.Count())
	}
	// The established TCP connection lives 24 h from its last packet, even
	// when packets keep it busy past several turns of the wheel.
	for i := 0; i < 10; i++ {
		h.clock.Advance(10 * time.Hour)
		h.tr.Sweep(h.clock.now)
		if md := h.ct(build(cv.fromC(tcpACK, 1)), Args{}); md.State != trk|est {
			t.Fatalf("round %d: busy tcp: %s", i, stateString(md.State))
		}
	}
	h.clock.Advance(to.TCPEstablished + time.Second)
	if n := h.tr.Sweep(h.clock.now); n != 1 || h.tr.Count() != 0 {
		t.Fatalf("swept %d, count %d", n, h.tr.Count())
	}
	// Closing shortens the timeout; the wheel frees the connection within
	// one turn after that.
	cv = &tcpConv{c: "10.0.0.1", s: "10.0.0.2", cport: 40001, sport: 80, cseq: 1, sseq: 1000}
	for _, p := range []pk{cv.fromC(tcpSYN, 0), cv.fromS(tcpSYN|tcpACK, 0), cv.fromC(tcpACK, 0), cv.fromC(tcpRST|tcpACK, 0)} {
		h.ct(build(p), c)
	}
	h.clock.Advance(to.TCPClose + time.Second)
	if md := h.ct(build(cv.fromC(tcpACK, 0)), Args{}); md.State != trk|nw {
		t.Fatalf("closed connection still found: %s", stateString(md.State))
	}
	h.clock.Advance(time.Duration(wheelSlots) * 250 * time.Millisecond)
	if n := h.tr.Sweep(h.clock.now); n != 1 || h.tr.Count() != 0 {
		t.Fatalf("closed connection: swept %d, count %d", n, h.tr.Count())
	}
}

func TestLimits(t *testing.T) {
	h := newHarness(t, Config{MaxConns: 3})
	c := Args{Commit: true, Zone: 9}
	for i := 0; i < 3; i++ {
		if md := h.ct(build(udpPk("10.0.0.1", "10.0.0.2", uint16(1000+i), 53)), c); md.State != trk|nw {
			t.Fatalf("conn %d: %s", i, stateString(md.State))
		}
	}
	if md := h.ct(build(udpPk("10.0.0.1", "10.0.0.2", 2000, 53)), c); md.State != trk|inv {
		t.Fatalf("over the global limit: %s", stateString(md.State))
	}
	// Established connections keep working.
	if md := h.ct(build(udpPk("10.0.0.2", "10.0.0.1", 53, 1000)), c); md.State != trk|est|rpl {
		t.Fatalf("existing connection at the limit: %s", stateString(md.State))
	}
	h.tr.SetGlobalLimit(100)
	h.tr.SetZoneLimit(9, 4)
	h.tr.SetDefaultZoneLimit(1)
	// As in OVS, a new limit counts the connections committed from then on.
	for i := 0; i < 4; i++ {
		if md := h.ct(build(udpPk("10.0.0.1", "10.0.0.2", uint16(2001+i), 53)), c); md.State != trk|nw {
			t.Fatalf("zone 9 under its limit: %s", stateString(md.State))
		}
	}
	if md := h.ct(build(udpPk("10.0.0.1", "10.0.0.2", 2005, 53)), c); md.State != trk|inv {
		t.Fatalf("zone 9 over its limit: %s", stateString(md.State))
	}
	if h.tr.ZoneLimitCount(9) != 4 || h.tr.ZoneCount(9) != 7 {
		t.Fatalf("zone 9: %d counted against the limit, %d held", h.tr.ZoneLimitCount(9), h.tr.ZoneCount(9))
	}
	other := Args{Commit: true, Zone: 10}
	if md := h.ct(build(udpPk("10.0.0.1", "10.0.0.2", 2003, 53)), other); md.State != trk|nw {
		t.Fatalf("zone 10 first: %s", stateString(md.State))
	}
	if md := h.ct(build(udpPk("10.0.0.1", "10.0.0.2", 2004, 53)), other); md.State != trk|inv {
		t.Fatalf("zone 10 over the default limit: %s", stateString(md.State))
	}
	if s := h.tr.Stats(); s.Full != 3 {
		t.Fatalf("stats %+v, want 3 refusals", s)
	}
	if h.tr.ZoneLimit(9) != 4 || h.tr.ZoneLimit(10) != 1 || h.tr.GlobalLimit() != 100 {
		t.Fatalf("limits %d %d %d", h.tr.ZoneLimit(9), h.tr.ZoneLimit(10), h.tr.GlobalLimit())
	}
	// Freeing room lets new connections in again.
	if err := h.tr.FlushTuple(9, Tuple{Src: mustAddr("10.0.0.1"), Dst: mustAddr("10.0.0.2"), Proto: protoUDP, SrcPort: 2002, DstPort: 53}); err != nil {
		t.Fatal(err)
	}
	if md := h.ct(build(udpPk("10.0.0.1", "10.0.0.2", 2005, 53)), c); md.State != trk|nw {
		t.Fatalf("after flush: %s", stateString(md.State))
	}
}

func TestFlush(t *testing.T) {
	h := newHarness(t, Config{})
	for z := uint16(0); z < 4; z++ {
		for i := 0; i < 50; i++ {
			h.ct(build(udpPk("10.0.0.1", "10.0.0.2", uint16(1000+i), 53)), Args{Commit: true, Zone: z})
		}
	}
	if h.tr.Count() != 200 {
		t.Fatalf("count %d", h.tr.Count())
	}
	// Flush by reply tuple works too.
	if err := h.tr.FlushTuple(2, Tuple{Src: mustAddr("10.0.0.2"), Dst: mustAddr("10.0.0.1"), Proto: protoUDP, SrcPort: 53, DstPort: 1007}); err != nil {
		t.Fatal(err)
	}
	err := h.tr.FlushTuple(2, Tuple{Src: mustAddr("10.0.0.2"), Dst: mustAddr("10.0.0.1"), Proto: protoUDP, SrcPort: 53, DstPort: 1007})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("second FlushTuple: %v", err)
	}
	if err := h.tr.FlushTuple(0, Tuple{Src: mustAddr("10.0.0.2"), Dst: mustAddr("fd00::1")}); err == nil {
		t.Fatal("mixed families accepted")
	}
	if n := h.tr.FlushZone(1); n != 50 {
		t.Fatalf("FlushZone = %d", n)
	}
	if n := h.tr.Flush(); n != 149 || h.tr.Count() != 0 || len(h.tr.Dump(DumpFilter{})) != 0 {
		t.Fatalf("Flush = %d, count %d", n, h.tr.Count())
	}
	// Slots are reused.
	h.ct(build(udpPk("10.0.0.1", "10.0.0.2", 1, 53)), Args{Commit: true})
	if h.tr.Count() != 1 {
		t.Fatalf("count %d", h.tr.Count())
	}
}

func TestIPv6TCP(t *testing.T) {
	h := newHarness(t, Config{})
	cv := &tcpConv{c: "fd00:10::1", s: "fd00:10::2", cport: 33000, sport: 443, cseq: 5, sseq: 500}
	runSteps(t, h, []step{
		{"syn", cv.fromC(tcpSYN, 0), Args{Commit: true, Zone: 7}, trk | nw},
		{"syn-ack", cv.fromS(tcpSYN|tcpACK, 0), Args{Zone: 7}, trk | est | rpl},
		{"ack", cv.fromC(tcpACK, 0), Args{Zone: 7}, trk | est},
	})
	want := "tcp,orig=(src=fd00:10::1,dst=fd00:10::2,sport=33000,dport=443),reply=(src=fd00:10::2,dst=fd00:10::1,sport=443,dport=33000),zone=7,protoinfo=(state=ESTABLISHED)"
	if d := h.tr.Dump(DumpFilter{}); len(d) != 1 || d[0].String() != want {
		t.Fatalf("dump %v", d)
	}
	md := h.ct(build(cv.fromS(tcpACK, 1)), Args{Zone: 7})
	if !md.Orig.IPv6 || md.Orig.DstAddr() != mustAddr("fd00:10::2") {
		t.Fatalf("orig %+v", md.Orig)
	}
}

func TestBadInput(t *testing.T) {
	h := newHarness(t, Config{VerifyChecksums: true})
	good := build(udpPk("10.0.0.1", "10.0.0.2", 1000, 53))
	cases := map[string]func() ([]byte, int, uint16){
		"arp":         func() ([]byte, int, uint16) { return good, ethLen, 0x0806 },
		"short":       func() ([]byte, int, uint16) { return good[:20], ethLen, EthTypeIPv4 },
		"l3 past end": func() ([]byte, int, uint16) { return good, len(good) + 5, EthTypeIPv4 },
		"negative l3": func() ([]byte, int, uint16) { return good, -1, EthTypeIPv4 },
		"truncated":   func() ([]byte, int, uint16) { return good[:len(good)-2], ethLen, EthTypeIPv4 },
		"wrong ver":   func() ([]byte, int, uint16) { return good, ethLen, EthTypeIPv6 },
		"bad checksum": func() ([]byte, int, uint16) {
			b := append([]byte(nil), good...)
			b[len(b)-1] ^= 0xff
			return b, ethLen, EthTypeIPv4
		},
	}
	for name, f := range cases {
		frame, l3, et := f()
		var md Meta
		h.tr.Execute(frame, l3, et, &md, &Args{Commit: true}, h.clock.now)
		if md.State != trk|inv || md.Orig.Proto != 0 {
			t.Errorf("%s: %s orig %+v", name, stateString(md.State), md.Orig)
		}
	}
	if h.tr.Count() != 0 {
		t.Fatalf("bad input created %d connections", h.tr.Count())
	}
	var md Meta
	h.tr.Execute(good, ethLen, EthTypeIPv4, &md, &Args{Commit: true}, h.clock.now)
	if md.State != trk|nw {
		t.Fatalf("good packet with VerifyChecksums: %s", stateString(md.State))
	}
	md.Clear()
	if md != (Meta{}) {
		t.Fatal("Clear left fields")
	}
}

func TestDumpFormatTimeWaitAndLabels(t *testing.T) {
	e := Entry{
		Orig:          Tuple{Src: mustAddr("10.222.1.48"), Dst: mustAddr("10.104.65.133"), Proto: protoTCP, SrcPort: 56670, DstPort: 80},
		Reply:         Tuple{Src: mustAddr("10.222.1.49"), Dst: mustAddr("10.222.1.48"), Proto: protoTCP, SrcPort: 8080, DstPort: 56670},
		Zone:          65520,
		Mark:          32,
		Label:         Label{Hi: 1, Lo: 0},
		TCPStateOrig:  tcpsFinWait2,
		TCPStateReply: tcpsClosing,
	}
	want := "tcp,orig=(src=10.222.1.48,dst=10.104.65.133,sport=56670,dport=80),reply=(src=10.222.1.49,dst=10.222.1.48,sport=8080,dport=56670),zone=65520,mark=32,labels=0x10000000000000000,protoinfo=(state=TIME_WAIT)"
	if e.String() != want {
		t.Fatalf("got  %s\nwant %s", e.String(), want)
	}
	e.TCPStateOrig, e.TCPStateReply = tcpsSynRecv, tcpsSynSent
	if e.TCPStateName() != "ESTABLISHED" {
		t.Fatalf("SYN_RECV coalesces to %s", e.TCPStateName())
	}
	if fmt.Sprint(protoName(200)) != "200" {
		t.Fatal("unknown protocol name")
	}
}

// TestRetryAfterRace: two goroutines committing the same new connection
// end with one connection.
func TestConcurrentSameCommit(t *testing.T) {
	h := newHarness(t, Config{})
	frame := build(udpPk("10.0.0.1", "10.0.0.2", 1000, 53))
	done := make(chan Meta, 8)
	for i := 0; i < 8; i++ {
		go func() {
			f := append([]byte(nil), frame...)
			var md Meta
			h.tr.Execute(f, ethLen, EthTypeIPv4, &md, &Args{Commit: true}, h.clock.now)
			done <- md
		}()
	}
	for i := 0; i < 8; i++ {
		if md := <-done; md.State&trk == 0 || md.State&inv != 0 {
			t.Errorf("state %s", stateString(md.State))
		}
	}
	if h.tr.Count() != 1 {
		t.Fatalf("count %d, want 1", h.tr.Count())
	}
}

func TestBE(t *testing.T) {
	var o Orig
	binary.BigEndian.PutUint32(o.Src[:], 0x0a000001)
	binary.BigEndian.PutUint32(o.Dst[:], 0x0a000002)
	if o.NwSrc() != 0x0a000001 || o.NwDst() != 0x0a000002 || o.SrcAddr() != netip.MustParseAddr("10.0.0.1") {
		t.Fatal("Orig accessors")
	}
}

// ExecuteBatch gives what Execute gives, packet by packet, including
// packets of one batch that depend on each other (a commit then its reply).
func TestExecuteBatchMatchesExecute(t *testing.T) {
	mk := func() []pk {
		cv := &tcpConv{c: "10.0.0.1", s: "10.0.0.2", cport: 40000, sport: 80, cseq: 1, sseq: 1000}
		var ps []pk
		ps = append(ps, cv.fromC(tcpSYN, 0), cv.fromS(tcpSYN|tcpACK, 0), cv.fromC(tcpACK, 0))
		for i := 0; i < 40; i++ {
			ps = append(ps, udpPk("10.0.1.1", "10.0.2.2", uint16(1000+i%7), 53), udpPk("10.0.2.2", "10.0.1.1", 53, uint16(1000+i%5)))
		}
		ps = append(ps, cv.fromC(tcpFIN|tcpACK, 0), pk{src: "10.0.0.1", dst: "10.0.0.2", proto: protoUDP, fragOff: 0x2000, payload: make([]byte, 8)})
		return ps
	}
	a := Args{Zone: 3, Commit: true, NAT: &NAT{Action: NATDst, MinAddr: mustAddr("10.0.9.9"), MinPort: 99}}
	one := newHarness(t, Config{Seed: 1})
	var want []Meta
	var wantFrames []string
	for _, p := range mk() {
		f := build(p)
		var md Meta
		one.tr.Execute(f, ethLen, EthTypeIPv4, &md, &a, one.clock.now)
		want = append(want, md)
		wantFrames = append(wantFrames, string(f))
	}
	bat := newHarness(t, Config{Seed: 1})
	ps := mk()
	mds := make([]Meta, len(ps))
	batch := make([]Packet, len(ps))
	for i, p := range ps {
		batch[i] = Packet{Frame: build(p), L3: ethLen, EthType: EthTypeIPv4, Meta: &mds[i]}
	}
	bat.tr.ExecuteBatch(batch, &a, bat.clock.now)
	for i := range ps {
		if mds[i] != want[i] {
			t.Errorf("packet %d: batch %s, single %s", i, stateString(mds[i].State), stateString(want[i].State))
		}
		if string(batch[i].Frame) != wantFrames[i] {
			t.Errorf("packet %d: frames differ", i)
		}
	}
	if one.tr.Count() != bat.tr.Count() || one.tr.Count() == 0 {
		t.Fatalf("counts %d %d", one.tr.Count(), bat.tr.Count())
	}
}

// With a limit far above the shards' reporting slack the approximate count
// decides, and the exact count takes over near the limit.
func TestGlobalLimitLarge(t *testing.T) {
	h := newHarness(t, Config{MaxConns: 3000})
	ok := 0
	for i := 0; i < 3100; i++ {
		f := build(udpPk("10.0.0.1", "10.0.0.2", uint16(1000+i), 53))
		if md := h.ct(f, Args{Commit: true}); md.State == trk|nw {
			ok++
		}
	}
	if ok != 3000 || h.tr.Count() != 3000 {
		t.Fatalf("%d commits accepted, count %d; want 3000", ok, h.tr.Count())
	}
	h.tr.Flush()
	if h.tr.Count() != 0 || h.tr.approx.Load() < -nShards*countBatch || h.tr.approx.Load() > nShards*countBatch {
		t.Fatalf("after flush: count %d approx %d", h.tr.Count(), h.tr.approx.Load())
	}
}

// A clock that starts at zero works too (the wheel does not rely on
// positive ticks).
func TestSweepFromTimeZero(t *testing.T) {
	tr := New(Config{Timeouts: Timeouts{UDPFirst: time.Second}})
	var md Meta
	tr.Execute(build(udpPk("10.0.0.1", "10.0.0.2", 1, 2)), ethLen, EthTypeIPv4, &md, &Args{Commit: true}, 0)
	if n := tr.Sweep(int64(500 * time.Millisecond)); n != 0 {
		t.Fatalf("swept %d early", n)
	}
	if n := tr.Sweep(int64(2 * time.Second)); n != 1 || tr.Count() != 0 {
		t.Fatalf("swept %d, count %d", n, tr.Count())
	}
	// The background sweeper frees on its own.
	clk := &fakeClock{now: int64(time.Hour)}
	tr = New(Config{Clock: clk.Now, SweepTick: time.Millisecond, Timeouts: Timeouts{UDPFirst: time.Second}})
	md = Meta{}
	tr.Execute(build(udpPk("10.0.0.1", "10.0.0.2", 1, 2)), ethLen, EthTypeIPv4, &md, &Args{Commit: true}, clk.now)
	stop := tr.StartSweeper()
	defer stop()
	atomicAdvance(clk, 2*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for tr.Count() != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if tr.Count() != 0 {
		t.Fatal("background sweeper did not free the expired connection")
	}
}

func TestKeyEq(t *testing.T) {
	var a key
	a.src[0], a.dst[15], a.sport, a.dport, a.zone, a.proto, a.styp, a.dtyp, a.v6 = 1, 2, 3, 4, 5, 6, 7, 8, 1
	fields := []func(k *key){
		func(k *key) { k.src[0]++ }, func(k *key) { k.src[15]++ }, func(k *key) { k.dst[3]++ }, func(k *key) { k.dst[15]++ },
		func(k *key) { k.sport++ }, func(k *key) { k.dport++ }, func(k *key) { k.zone++ }, func(k *key) { k.proto++ },
		func(k *key) { k.styp++ }, func(k *key) { k.dtyp++ }, func(k *key) { k.v6 = 0 },
	}
	b := a
	if !a.eq(&b) || a != b {
		t.Fatal("equal keys differ")
	}
	for i, f := range fields {
		b := a
		f(&b)
		if a.eq(&b) || a == b {
			t.Fatalf("field %d change not seen", i)
		}
	}
}

// An earlier +inv in the same zone does not stick to the packet.
func TestStateNotSticky(t *testing.T) {
	h := newHarness(t, Config{})
	f := build(udpPk("10.0.0.1", "10.0.0.2", 1, 2))
	md := Meta{State: trk | inv, Zone: 4}
	h.tr.Execute(f, ethLen, EthTypeIPv4, &md, &Args{Zone: 4, Commit: true}, h.clock.now)
	if md.State != trk|nw {
		t.Fatalf("state %s", stateString(md.State))
	}
	md = Meta{State: trk | est | rpl, Zone: 4}
	h.tr.Execute(f, ethLen, EthTypeIPv4, &md, &Args{Zone: 4}, h.clock.now)
	if md.State != trk|nw {
		t.Fatalf("state %s", stateString(md.State))
	}
}

// Many connections due in the same slot a turn of the wheel later must not
// make a sweep spin on them (regression: the budget used to restart the
// slot from its head).
func TestSweepCrowdedSlot(t *testing.T) {
	n := 100_000
	if raceEnabled {
		n = 80_000
	}
	// timeout 100s: the crowded slot comes in the middle of the first
	// sweep; 128s (two turns): it is the very first slot that sweep visits.
	for _, timeout := range []time.Duration{100 * time.Second, 128 * time.Second} {
		tr := New(Config{Timeouts: Timeouts{UDPFirst: timeout}})
		now := int64(time.Hour)
		f := build(udpPk("10.0.0.1", "10.96.0.10", 1, 53))
		for i := 0; i < n; i++ {
			newTupleFrame(f, uint32(i))
			var md Meta
			tr.Execute(f, ethLen, EthTypeIPv4, &md, &Args{Commit: true}, now)
		}
		done := make(chan int)
		go func() {
			freed := tr.Sweep(now)
			for s := now + int64(time.Second); s <= now+int64(timeout)+int64(2*time.Second); s += int64(time.Second) {
				freed += tr.Sweep(s)
			}
			done <- freed
		}()
		select {
		case freed := <-done:
			if freed != n || tr.Count() != 0 {
				t.Fatalf("timeout %v: freed %d of %d, count %d", timeout, freed, n, tr.Count())
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("timeout %v: sweep does not terminate", timeout)
		}
	}
}
