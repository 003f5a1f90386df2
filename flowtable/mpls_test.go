package flowtable_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// runFrame runs frame (in_port 1) through p and returns what came out.
func runFrame(t *testing.T, p *flowtable.Pipeline, frame []byte) []captured {
	t.Helper()
	var pkt flowtable.Packet
	pkt.Key.SetInPort(1)
	if err := pkt.Extract(append([]byte(nil), frame...)); err != nil {
		t.Fatal(err)
	}
	sink := &captureSink{}
	p.Run(&pkt, sink, nil)
	return sink.out
}

// TestMPLSPushPopRoundTrip: push_mpls on an IPv4 packet inserts a label
// stack entry after the Ethernet header (label 0 rewritten by set_field,
// the TC from the DSCP, bottom of stack, the IP TTL), a second push copies
// the top entry without bottom-of-stack, the MPLS fields match the top
// entry, and popping both (the second to IPv4) gives back the original
// frame, whose L3 fields match again in the next table.
func TestMPLSPushPopRoundTrip(t *testing.T) {
	p := loadSeed(t, "table=0,priority=10,in_port=1,tcp actions=push_mpls:0x8847,set_field:9->mpls_label,output:2")
	_, orig := packetSpec(t, p, "in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_tos=0x28,nw_ttl=33,tp_src=1000,tp_dst=80")
	out := runFrame(t, p, orig)
	if len(out) != 1 || out[0].port != 2 {
		t.Fatalf("push: got %+v", out)
	}
	f := out[0].frame
	if len(f) != len(orig)+4 || binary.BigEndian.Uint16(f[12:]) != 0x8847 {
		t.Fatalf("push: frame % x", f[:20])
	}
	// label 9, tc = DSCP(0x28>>2=10)&7 = 2, bos 1, ttl 33.
	if lse := binary.BigEndian.Uint32(f[14:]); lse != 9<<12|2<<9|1<<8|33 {
		t.Errorf("pushed LSE %#08x, want %#08x", lse, 9<<12|2<<9|1<<8|33)
	}
	if !bytes.Equal(f[18:], orig[14:]) || !bytes.Equal(f[:12], orig[:12]) {
		t.Errorf("push changed more than the label")
	}

	// A second label on top, then matched and popped twice.
	p2 := loadSeed(t, `
table=0,priority=10,mpls,mpls_label=9,mpls_bos=1 actions=push_mpls:0x8847,set_field:20->mpls_label,dec_mpls_ttl,goto_table:1
table=1,priority=10,mpls,mpls_label=20,mpls_bos=0,mpls_ttl=32,mpls_tc=2 actions=pop_mpls:0x8847,goto_table:2
table=2,priority=10,mpls,mpls_label=9,mpls_bos=1,mpls_ttl=33 actions=pop_mpls:0x0800,goto_table:3
table=3,priority=10,tcp,nw_dst=10.0.0.2,tp_dst=80 actions=output:3
`)
	out = runFrame(t, p2, f)
	if len(out) != 1 || out[0].port != 3 {
		t.Fatalf("push+pop+pop: got %+v", out)
	}
	// The last pop leaves the IP packet, padded to the Ethernet minimum.
	want := orig[:14+int(binary.BigEndian.Uint16(orig[16:]))]
	if len(want) < 60 {
		want = append(append([]byte(nil), want...), make([]byte, 60-len(want))...)
	}
	if !bytes.Equal(out[0].frame, want) {
		t.Errorf("after two pops:\n got % x\nwant % x", out[0].frame, want)
	}
}

// TestMPLSTTL: set_mpls_ttl and dec_mpls_ttl rewrite the top label; a TTL
// that would reach zero sends the packet to the controller with reason
// invalid_ttl instead of forwarding it.
func TestMPLSTTL(t *testing.T) {
	p := loadSeed(t, "table=0,priority=10,mpls actions=dec_mpls_ttl,output:2")
	frame := func(ttl byte) []byte {
		f := make([]byte, 14+4+20)
		copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0x47})
		binary.BigEndian.PutUint32(f[14:], 77<<12|1<<8|uint32(ttl))
		return f
	}
	out := runFrame(t, p, frame(5))
	if len(out) != 1 || out[0].port != 2 || out[0].frame[17] != 4 {
		t.Fatalf("dec_mpls_ttl of 5: got %+v", out)
	}
	out = runFrame(t, p, frame(1))
	if len(out) != 1 || out[0].port != flowtable.PortController {
		t.Fatalf("dec_mpls_ttl of 1: got %+v, want a packet-in", out)
	}
	p = loadSeed(t, "table=0,priority=10,mpls actions=set_mpls_ttl(200),set_mpls_tc(5),output:2")
	out = runFrame(t, p, frame(5))
	if len(out) != 1 || binary.BigEndian.Uint32(out[0].frame[14:]) != 77<<12|5<<9|1<<8|200 {
		t.Fatalf("set_mpls_ttl/tc: got %+v", out)
	}
}

// TestSelectGroupSpreads: a select group spreads frames over its buckets
// in proportion to the weights whichever hashed field varies: the
// Ethernet addresses alone (group/01_SELECT_Ether, 01_SELECT_Weight_Ether)
// or an ARP packet's addresses alone (group/01_SELECT_IP's ARP case).
func TestSelectGroupSpreads(t *testing.T) {
	for _, c := range []struct {
		name, spec string
		vary       func(f []byte, i uint32)
	}{
		{"ethernet", "in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1000,tp_dst=80", func(f []byte, i uint32) {
			binary.BigEndian.PutUint32(f[2:], i*2654435761) // dl_dst
			binary.BigEndian.PutUint32(f[8:], i*40503)      // dl_src
		}},
		{"arp", "in_port=1,arp,arp_op=1,arp_spa=10.0.0.1,arp_tpa=10.0.0.2", func(f []byte, i uint32) {
			binary.BigEndian.PutUint32(f[14+14:], i*2654435761) // arp_spa
			binary.BigEndian.PutUint32(f[14+24:], i*40503)      // arp_tpa
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := loadSeed(t, "")
			if err := p.AddGroup(&flowtable.GroupEntry{ID: 1, Type: flowtable.GroupSelect, Buckets: []flowtable.Bucket{
				{Weight: 1, Actions: []flowtable.Action{&flowtable.Output{Port: 2}}},
				{Weight: 3, Actions: []flowtable.Action{&flowtable.Output{Port: 3}}},
			}}); err != nil {
				t.Fatal(err)
			}
			if err := flowtext.Load(p, "table=0,priority=10,in_port=1 actions=group:1", nil); err != nil {
				t.Fatal(err)
			}
			count := map[uint32]int{}
			const n = 4000
			for i := 0; i < n; i++ {
				_, f := packetSpec(t, p, c.spec)
				c.vary(f, uint32(i))
				for _, o := range runFrame(t, p, f) {
					count[o.port]++
				}
			}
			if c2, c3 := count[2], count[3]; c2+c3 != n || c2 < n/4-n/20 || c2 > n/4+n/20 {
				t.Errorf("buckets got %d and %d of %d frames, want about 1:3", c2, c3, n)
			}
		})
	}
}

// TestCloneRunsOnACopy: clone's actions see and change a copy (here an
// MPLS push and a rewritten address go out of port 3), the original
// continues unchanged after it (out of port 2); an exit inside a clone
// ends only the clone.
func TestCloneRunsOnACopy(t *testing.T) {
	p := loadSeed(t, "table=0,priority=10,ip actions=clone(set_field:10.9.9.9->ip_dst,push_mpls:0x8847,output:3,exit,output:4),output:2")
	_, orig := packetSpec(t, p, "in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2")
	out := runFrame(t, p, orig)
	if len(out) != 2 || out[0].port != 3 || out[1].port != 2 {
		t.Fatalf("got %+v, want port 3 then port 2", out)
	}
	if binary.BigEndian.Uint16(out[0].frame[12:]) != 0x8847 {
		t.Errorf("clone's copy was not MPLS: % x", out[0].frame[:18])
	}
	if !bytes.Equal(out[1].frame, orig) {
		t.Errorf("the original changed:\n got % x\nwant % x", out[1].frame, orig)
	}
}

// TestIPv6ExtHdr: ipv6_exthdr says which extension headers a packet has
// (hop-by-hop + AH = 0x44, as the switch suite's match/39_IPV6_EXTHDR),
// flags repeats and a wrong order, and matches with a mask.
func TestIPv6ExtHdr(t *testing.T) {
	p := loadSeed(t, `
table=0,priority=20,ipv6,ipv6_exthdr=0x44 actions=output:2
table=0,priority=10,ipv6,ipv6_exthdr=0x40/0x1f0 actions=output:3
table=0,priority=5,ipv6 actions=output:4
`)
	v6 := func(exts ...[]byte) []byte {
		f := make([]byte, 14+40)
		copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd})
		f[14] = 0x60
		f[14+7] = 64
		next := &f[14+6]
		for _, e := range exts {
			*next = e[0]
			e = append([]byte(nil), e...)
			f = append(f, e[1:]...)
			next = &f[len(f)-len(e)+1]
		}
		*next = 6
		f = append(f, make([]byte, 20)...) // TCP
		binary.BigEndian.PutUint16(f[14+4:], uint16(len(f)-14-40))
		return f
	}
	hop := []byte{0, 0, 0, 1, 4, 0, 0, 0, 0}             // next, len 0 (8 bytes), PadN
	ah := []byte{51, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0} // next, len 1 ((1+2)*4 = 12 bytes)
	dst := []byte{60, 0, 0, 1, 4, 0, 0, 0, 0}
	for _, c := range []struct {
		name  string
		frame []byte
		port  uint32
	}{
		{"hop+auth", v6(hop, ah), 2},
		{"hop+dest", v6(hop, dst), 3},
		{"none", v6(), 4},
		{"dest+hop (out of order)", v6(dst, hop), 4},
	} {
		out := runFrame(t, p, c.frame)
		if len(out) != 1 || out[0].port != c.port {
			t.Errorf("%s: got %+v, want port %d", c.name, out, c.port)
		}
	}
	var pkt flowtable.Packet
	if err := pkt.Extract(v6(dst, hop, hop)); err != nil {
		t.Fatal(err)
	}
	if got := flowtable.FieldIPv6ExtHdr.Uint64(&pkt.Key); got != flowtable.ExtHdrDest|flowtable.ExtHdrHop|flowtable.ExtHdrUnrep|flowtable.ExtHdrUnseq {
		t.Errorf("dest+hop+hop: ipv6_exthdr %#x", got)
	}
}

// TestCopyTTL: copy_ttl_out sets the label's TTL from the IPv4/IPv6 header
// under it; copy_ttl_in sets the IP TTL from the label, with the IPv4
// header checksum right.
func TestCopyTTL(t *testing.T) {
	mplsOver := func(ipFrame []byte) []byte {
		f := append([]byte(nil), ipFrame[:12]...)
		f = append(f, 0x88, 0x47, 0, 0x64, 1, 64) // label 100, bos, ttl 64
		return append(f, ipFrame[14:]...)
	}
	p := loadSeed(t, "")
	_, v4 := packetSpec(t, p, "in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_ttl=32,tp_src=1,tp_dst=2")
	_, v6 := packetSpec(t, p, "in_port=1,tcp6,ipv6_src=::1,ipv6_dst=::2,nw_ttl=32,tp_src=1,tp_dst=2")
	for _, c := range []struct {
		name, action string
		frame        []byte
		check        func(f []byte) bool
	}{
		{"out v4", "copy_ttl_out", mplsOver(v4), func(f []byte) bool { return f[17] == 32 }},
		{"out v6", "copy_ttl_out", mplsOver(v6), func(f []byte) bool { return f[17] == 32 }},
		{"in v4", "copy_ttl_in", mplsOver(v4), func(f []byte) bool {
			return f[18+8] == 64 && flowtable.Checksum(f[18:38]) == 0
		}},
		{"in v6", "copy_ttl_in", mplsOver(v6), func(f []byte) bool { return f[18+7] == 64 }},
	} {
		p := loadSeed(t, "table=0,priority=10,mpls actions="+c.action+",output:2")
		out := runFrame(t, p, c.frame)
		if len(out) != 1 || !c.check(out[0].frame) {
			t.Errorf("%s: got %+v", c.name, out)
		}
	}
}

// reasonSink records the reasons of the packet-ins of a walk.
type reasonSink struct{ reasons []uint8 }

func (s *reasonSink) Output(uint32, *flowtable.Packet) {}
func (s *reasonSink) PacketIn(_ *flowtable.Packet, pi *flowtable.PacketIn) {
	s.reasons = append(s.reasons, pi.Reason)
}

// TestPacketInReason: an output to CONTROLLER by a table-miss flow
// (priority 0, empty match) is an explicit miss (OFPR_NO_MATCH from
// OpenFlow 1.3 on), by any other flow, by a group bucket or by the action
// set an action (OVS: OFPR_ACTION, OFPR_GROUP, OFPR_ACTION_SET).
func TestPacketInReason(t *testing.T) {
	miss, action := uint8(flowtable.ReasonExplicitMiss), uint8(flowtable.ReasonAction)
	for _, c := range []struct {
		flows string
		want  []uint8
	}{
		{"table=0,priority=0 actions=CONTROLLER:65535", []uint8{miss}},
		{"table=0,priority=1 actions=CONTROLLER:65535", []uint8{action}},
		{"table=0,priority=0,ip actions=CONTROLLER:65535", []uint8{action}},
		{"table=0,priority=0 actions=goto_table:1\ntable=1,priority=0 actions=CONTROLLER:65535", []uint8{miss}},
		{"table=0,priority=5 actions=resubmit(,1),CONTROLLER:65535\ntable=1,priority=0 actions=CONTROLLER:65535", []uint8{miss, action}},
		{"table=0,priority=0 actions=group:1", []uint8{action}},
		{"table=0,priority=0 actions=write_actions(CONTROLLER:65535)", []uint8{action}},
	} {
		p := loadSeed(t, "")
		if err := p.AddGroup(&flowtable.GroupEntry{ID: 1, Type: flowtable.GroupAll, Buckets: []flowtable.Bucket{
			{Actions: []flowtable.Action{&flowtable.Output{Port: flowtable.PortController, MaxLen: 0xffff}}},
		}}); err != nil {
			t.Fatal(err)
		}
		if err := flowtext.Load(p, c.flows, nil); err != nil {
			t.Fatal(err)
		}
		_, f := packetSpec(t, p, "in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2")
		var pkt flowtable.Packet
		pkt.Key.SetInPort(1)
		if err := pkt.Extract(f); err != nil {
			t.Fatal(err)
		}
		sink := &reasonSink{}
		p.Run(&pkt, sink, nil)
		if !bytes.Equal(sink.reasons, c.want) {
			t.Errorf("%q: reasons %v, want %v", c.flows, sink.reasons, c.want)
		}
	}
}
