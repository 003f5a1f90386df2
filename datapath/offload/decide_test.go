package offload

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/ofproto/flowtext"
)

type nopSink struct{}

func (nopSink) Output(uint32, *flowtable.Packet)                {}
func (nopSink) PacketIn(*flowtable.Packet, *flowtable.PacketIn) {}

// udpFrame is an IPv4/UDP frame from (srcIP, sport) to (dstIP, dport).
func udpFrame(src, dst [4]byte, sport, dport uint16) []byte {
	f := ipFrame(src, dst, 17, sport, dport, 8+16)
	binary.BigEndian.PutUint16(f[14+24:], uint16(len(f)-34))
	return f
}

// ipFrame is an IPv4 frame of protocol proto with l4 bytes after the IP
// header, the first four of them the ports.
func ipFrame(src, dst [4]byte, proto byte, sport, dport uint16, l4 int) []byte {
	f := make([]byte, 14+20+l4)
	copy(f[0:6], []byte{2, 0, 0, 0, 0, dst[3]})
	copy(f[6:12], []byte{2, 0, 0, 0, 0, src[3]})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, proto
	binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-14))
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], dport)
	return f
}

// TestDecide runs a connection through a real pipeline, conntrack and
// megaflow cache (A on port 1 -> B on port 2, B's reply, A again) and asks
// Decide about A's last packet, for each way of handling established
// traffic from port 1: what the program can do exactly is offloaded,
// anything else is refused.
func TestDecide(t *testing.T) {
	const eth = "mod_dl_src:02:00:00:00:00:aa,mod_dl_dst:02:00:00:00:00:bb,"
	for _, tc := range []struct {
		name   string
		match  string // added to table 1's established flow from port 1
		est    string // its actions
		extra  string // more flows
		ok     bool
		out    uint32
		flags  uint32
		ethSrc byte // last byte of the rewritten eth_src
	}{
		{name: "output", est: "output:2", ok: true, out: 2},
		{name: "eth rewrites and dec_ttl", est: eth + "dec_ttl,output:2", ok: true, out: 2, flags: ActSetEth | ActDecTTL, ethSrc: 0xaa},
		{name: "register write", est: "load:1->NXM_NX_REG0[],output:2", ok: true, out: 2},
		{name: "two outputs", est: "output:2,output:3"},
		{name: "in_port", est: "in_port"},
		{name: "tos rewrite", est: "mod_nw_tos:4,output:2"},
		{name: "fixed ttl", est: "mod_nw_ttl:7,output:2"},
		{name: "commit", est: "ct(commit,zone=1),output:2"},
		// ct(nat) of a connection without NAT: nothing to rewrite.
		{name: "nat", est: "ct(table=2,zone=1,nat)", extra: "table=2,actions=output:2\n", ok: true, out: 2},
		{name: "match on tos", match: "nw_tos=0,", est: "output:2"},
		{name: "drop", est: "drop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkt, start, c := establish(t, tc.match, tc.est, tc.extra)
			// Refusals must come from the decision itself, not from a
			// packet that missed the cache or a connection not established.
			if st := pkt.Key.CtState(); len(c.Hits) < 2 || st&flowtable.CtStateEst == 0 {
				t.Fatalf("%d cache hits, ct_state %#x: the connection did not reach the decision", len(c.Hits), st)
			}
			d, ok := Decide(start, &pkt.Key, c.Hits)
			if ok != tc.ok {
				t.Fatalf("Decide ok = %v, want %v (hits %d, ct_state %#x)", ok, tc.ok, len(c.Hits), pkt.Key.CtState())
			}
			if !ok {
				return
			}
			if d.OutPort != tc.out || d.Action.Flags != tc.flags || (tc.flags&ActSetEth != 0 && d.Action.EthSrc[5] != tc.ethSrc) {
				t.Errorf("decision %+v, want out %d flags %d eth_src ..:%02x", d, tc.out, tc.flags, tc.ethSrc)
			}
			if len(d.Rules) == 0 {
				t.Errorf("no rules to count the kernel's packets on")
			}
		})
	}
}

// establish runs a UDP connection through a real pipeline, conntrack and
// megaflow cache: A (port 1) -> B (port 2), B's reply, then A twice so
// the cache learns and then serves the established path. It returns A's
// last packet, its start key and the cache (its Hits).
func establish(t testing.TB, match, est, extra string) (*flowtable.Packet, *flowtable.Key, *flowcache.Cache) {
	flows := "table=0,ip,actions=ct(table=1,zone=1)\n" +
		"table=1,priority=10,ct_state=+new+trk,ip,actions=ct(commit,zone=1),output:2\n" +
		"table=1,priority=20,ct_state=+est+trk,ip,in_port=2,actions=output:1\n" +
		"table=1,priority=20,ct_state=+est+trk,ip,in_port=1," + match + "actions=" + est + "\n" + extra
	a, b := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	return runFrames(t, flows, []frameIn{{1, udpFrame(a, b, 1000, 53)}, {2, udpFrame(b, a, 53, 1000)},
		{1, udpFrame(a, b, 1000, 53)}, {1, udpFrame(a, b, 1000, 53)}})
}

// frameIn is a frame received on a port.
type frameIn struct {
	in uint32
	f  []byte
}

// runFrames runs frames through a real pipeline (flows), conntrack and
// megaflow cache, and returns the last packet, its start key and the cache.
func runFrames(t testing.TB, flows string, frames []frameIn) (*flowtable.Packet, *flowtable.Key, *flowcache.Cache) {
	ct, c := newCachedPipeline(t, flows)
	pkt := &flowtable.Packet{}
	start := &flowtable.Key{}
	send := func(in uint32, f []byte) {
		pkt.Key = flowtable.Key{}
		pkt.Key.SetInPort(in)
		pkt.CtNow = ct.Now()
		if err := pkt.Extract(f); err != nil {
			t.Fatal(err)
		}
		*start = pkt.Key
		c.Process(pkt, nopSink{})
	}
	for _, f := range frames {
		send(f.in, slices.Clone(f.f)) // NAT rewrites the frame in place
	}
	return pkt, start, c
}

// newCachedPipeline is a real pipeline (flows) with conntrack and a
// megaflow cache that records its hits.
func newCachedPipeline(t testing.TB, flows string) (*ctadapter.Adapter, *flowcache.Cache) {
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, flows, nil); err != nil {
		t.Fatal(err)
	}
	ct := ctadapter.New()
	p.Conntrack = ct
	c := flowcache.New(p)
	c.TraceHits = true
	return ct, c
}

// TestDecideNAT: a Service-like DNAT (10.0.0.100:53 -> 10.0.0.2:5353,
// committed by the first packet) is offloaded with the tuple conntrack
// gives each direction: the request's new destination, the reply's
// source put back to the Service address.
func TestDecideNAT(t *testing.T) {
	flows := "table=0,ip,actions=ct(table=1,zone=1,nat)\n" +
		"table=1,priority=10,ct_state=+new+trk,ip,in_port=1,actions=ct(commit,zone=1,nat(dst=10.0.0.2:5353)),output:2\n" +
		"table=1,priority=20,ct_state=+est+trk,ip,in_port=2,actions=output:1\n" +
		"table=1,priority=20,ct_state=+est+trk,ip,in_port=1,actions=output:2\n"
	a, b, vip := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 100}
	req, rep := frameIn{1, udpFrame(a, vip, 1000, 53)}, frameIn{2, udpFrame(b, a, 5353, 1000)}
	for _, tc := range []struct {
		name             string
		frames           []frameIn
		out              uint32
		src, dst         string
		srcPort, dstPort uint16
	}{
		{"request", []frameIn{req, rep, req, req}, 2, "10.0.0.1", "10.0.0.2", 1000, 5353},
		{"reply", []frameIn{req, rep, rep, rep}, 1, "10.0.0.100", "10.0.0.1", 53, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkt, start, c := runFrames(t, flows, tc.frames)
			d, ok := Decide(start, &pkt.Key, c.Hits)
			if !ok {
				t.Fatalf("not offloaded (hits %d, ct_state %#x)", len(c.Hits), pkt.Key.CtState())
			}
			a := d.Action
			if d.OutPort != tc.out || a.Flags != ActNAT || a.NatSrc.String() != tc.src || a.NatDst.String() != tc.dst ||
				a.NatSrcPort != tc.srcPort || a.NatDstPort != tc.dstPort {
				t.Errorf("decision out %d %+v, want out %d NAT %s:%d -> %s:%d", d.OutPort, a, tc.out, tc.src, tc.srcPort, tc.dst, tc.dstPort)
			}
		})
	}
}

// BenchmarkDecideRefused: refusing a decision (here a commit on every
// packet) costs little and allocates nothing.
func BenchmarkDecideRefused(b *testing.B) {
	pkt, start, c := establish(b, "", "ct(commit,zone=1),output:2", "")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := Decide(start, &pkt.Key, c.Hits); ok {
			b.Fatal("offloaded a commit")
		}
	}
}

// tagged is f with a VLAN header of type tpid and TCI tci after the MACs.
func tagged(f []byte, tpid, tci uint16) []byte {
	t := slices.Clone(f[:12])
	t = binary.BigEndian.AppendUint16(t, tpid)
	t = binary.BigEndian.AppendUint16(t, tci)
	return append(t, f[12:]...)
}

// TestDecideVLAN: push_vlan, pop_vlan and VID rewrites in the output's
// segment become the entry's tag change, from the tag A's frames come
// with (tci, 0: untagged) to the one they leave with; a second tag, or a
// tag change before the ct() recirculation, stays in userspace.
func TestDecideVLAN(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       uint16 // A's tag (TCI); 0 untagged
		pre, est string // actions before ct() in table 0; of A's established flow
		ok       bool
		flags    uint32
		tpid     uint16
		tci      uint16
	}{
		{name: "untagged", est: "output:2", ok: true},
		{name: "tagged", in: 10, est: "output:2", ok: true},
		{name: "push", est: "push_vlan:0x8100,mod_vlan_vid:10,output:2", ok: true, flags: ActPushVLAN, tpid: 0x8100, tci: 10},
		{name: "push with pcp", est: "push_vlan:0x8100,set_field:0xb007->vlan_tci,output:2", ok: true, flags: ActPushVLAN, tpid: 0x8100, tci: 5<<13 | 7},
		{name: "push 802.1ad", est: "push_vlan:0x88a8,output:2"},
		{name: "pop", in: 10, est: "pop_vlan,output:2", ok: true, flags: ActPopVLAN},
		{name: "strip", in: 10, est: "strip_vlan,output:2", ok: true, flags: ActPopVLAN},
		{name: "modify vid", in: 20, est: "mod_vlan_vid:10,output:2", ok: true, flags: ActSetVLAN, tci: 10},
		{name: "modify to the same vid", in: 10, est: "mod_vlan_vid:10,output:2", ok: true},
		{name: "replace", in: 20, est: "pop_vlan,push_vlan:0x8100,mod_vlan_vid:30,output:2", ok: true, flags: ActPopVLAN | ActPushVLAN, tpid: 0x8100, tci: 30},
		{name: "push and pop", est: "push_vlan:0x8100,pop_vlan,output:2", ok: true},
		{name: "second tag", in: 10, est: "push_vlan:0x8100,output:2"},
		{name: "pop after the output", in: 10, est: "output:2,pop_vlan"},
		{name: "push before ct", pre: "push_vlan:0x8100,", est: "output:2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flows := "table=0,ip,actions=" + tc.pre + "ct(table=1,zone=1)\n" +
				"table=1,priority=10,ct_state=+new+trk,ip,actions=ct(commit,zone=1),output:2\n" +
				"table=1,priority=20,ct_state=+est+trk,ip,in_port=2,actions=output:1\n" +
				"table=1,priority=20,ct_state=+est+trk,ip,in_port=1,actions=" + tc.est + "\n"
			a, b := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
			fa := udpFrame(a, b, 1000, 53)
			if tc.in != 0 {
				fa = tagged(fa, 0x8100, tc.in)
			}
			pkt, start, c := runFrames(t, flows, []frameIn{{1, fa}, {2, udpFrame(b, a, 53, 1000)}, {1, fa}, {1, fa}})
			if st := pkt.Key.CtState(); len(c.Hits) < 2 || st&flowtable.CtStateEst == 0 {
				t.Fatalf("%d cache hits, ct_state %#x: the connection did not reach the decision", len(c.Hits), st)
			}
			d, ok := Decide(start, &pkt.Key, c.Hits)
			if ok != tc.ok {
				t.Fatalf("Decide ok = %v, want %v", ok, tc.ok)
			}
			if ok && (d.Action.Flags != tc.flags || d.Action.VlanTPID != tc.tpid || d.Action.VlanTCI != tc.tci) {
				t.Errorf("flags %#x tpid %#x tci %#x, want %#x %#x %#x", d.Action.Flags, d.Action.VlanTPID, d.Action.VlanTCI, tc.flags, tc.tpid, tc.tci)
			}
			fk, kind := KeyOf(1, start)
			if kind != KeyOffer || (fk.VlanTCI != 0) != (tc.in != 0) || fk.VlanTCI&0xfff != tc.in {
				t.Errorf("KeyOf: kind %d vlan_tci %#x, want offer with %#x", kind, fk.VlanTCI, tc.in)
			}
			// A restart replays the entry with FlowKey.Frame: the same key.
			var replay flowtable.Packet
			replay.Key.SetInPort(1)
			if err := replay.Extract(fk.Frame()); err != nil {
				t.Fatal(err)
			}
			if rk, _ := KeyOf(1, &replay.Key); rk != fk {
				t.Errorf("replayed frame's key %+v, want %+v", rk, fk)
			}
		})
	}
}
