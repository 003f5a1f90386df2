package flowtable_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

const stackFlows = `
table=0,priority=10,ip,actions=load:0xabc->NXM_NX_REG0[],push:NXM_NX_REG0[],push:NXM_OF_IP_SRC[],resubmit(,1)
table=0,priority=5,actions=pop:NXM_NX_REG1[],output:4
table=1,actions=pop:NXM_NX_REG1[],pop:NXM_NX_REG2[0..15],output:2
`

// TestStackPushPop: values pushed in one table pop in LIFO order in a
// resubmitted one, truncated to the destination.
func TestStackPushPop(t *testing.T) {
	p := loadSeed(t, stackFlows)
	_, final, out := walk(t, p, "in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1000,tp_dst=80", nil)
	if got := flowtable.FieldReg[1].Uint64(&final); got != 0x0a000001 {
		t.Errorf("reg1 = %#x, want ip_src 0xa000001 (pushed last)", got)
	}
	if got := flowtable.FieldReg[2].Uint64(&final); got != 0xabc {
		t.Errorf("reg2 = %#x, want 0xabc", got)
	}
	if len(out) != 1 || out[0].port != 2 {
		t.Errorf("output %v, want port 2", out)
	}
}

// TestStackUnderflow: popping an empty stack changes nothing, is traced,
// and the actions go on (OVS reports "stack underflow").
func TestStackUnderflow(t *testing.T) {
	p := loadSeed(t, stackFlows)
	k, frame := packetSpec(t, p, "in_port=1,arp")
	var pkt flowtable.Packet
	pkt.Key = k
	if err := pkt.Extract(frame); err != nil {
		t.Fatal(err)
	}
	var tr flowtable.Trace
	sink := &captureSink{}
	p.Run(&pkt, sink, &tr)
	if got := flowtable.FieldReg[1].Uint64(&tr.Final); got != 0 {
		t.Errorf("reg1 = %#x after an empty pop", got)
	}
	if len(sink.out) != 1 || sink.out[0].port != 4 {
		t.Errorf("output %v, want port 4", sink.out)
	}
	found := false
	for _, e := range tr.Events {
		found = found || strings.Contains(e.Msg, "stack underflow")
	}
	if !found {
		t.Errorf("trace has no stack underflow note: %+v", tr.Events)
	}
}

// TestStackRecorded: a push and pop in one segment is cacheable, with the
// pushed source in the megaflow; a pop of a value pushed before a
// recirculation is not (the segment's start key does not hold it).
func TestStackRecorded(t *testing.T) {
	rec := record(t, stackFlows, "in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1000,tp_dst=80", 0)
	if s := rec.Segments[0]; !s.Cacheable || flowtable.FieldIPv4Src.Uint64(&s.Mask) != 0xffffffff {
		t.Errorf("segment 0: cacheable %v (%s), ip_src mask %#x; want cacheable with ip_src exact", s.Cacheable, s.Why, flowtable.FieldIPv4Src.Uint64(&s.Mask))
	}
	rec = record(t, `
table=0,ip,actions=push:NXM_OF_IP_SRC[],ct(table=1)
table=1,actions=pop:NXM_NX_REG1[],output:2
`, "in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1000,tp_dst=80", 0)
	if len(rec.Segments) < 2 {
		t.Fatalf("%d segments, want 2", len(rec.Segments))
	}
	if s := rec.Segments[1]; s.Cacheable || !strings.Contains(s.Why, "pop") {
		t.Errorf("segment 1 after ct: cacheable %v (%q), want uncacheable because of the pop", s.Cacheable, s.Why)
	}
}

const pktLargerFlows = `
table=0,actions=check_pkt_larger(100)->NXM_NX_REG0[3],resubmit(,1)
table=1,priority=10,reg0=0x8/0x8,actions=output:2
table=1,priority=0,actions=output:3
`

// TestCheckPktLarger: the bit is 1 only for frames longer than N bytes,
// and a segment that checked it is not cacheable (the length is not in the
// key).
func TestCheckPktLarger(t *testing.T) {
	p := loadSeed(t, pktLargerFlows)
	for _, c := range []struct {
		payload int
		out     uint32
	}{{0, 3}, {58, 3}, {59, 2}, {400, 2}} { // 42 bytes of Ethernet, IPv4 and UDP headers
		sink, frame := runUDP(t, p, c.payload)
		if len(sink.out) != 1 || sink.out[0].port != c.out {
			t.Errorf("%d-byte frame: output %v, want port %d", len(frame), sink.out, c.out)
		}
	}
	rec := record(t, pktLargerFlows, "in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1000,tp_dst=53", 0)
	if s := rec.Segments[0]; s.Cacheable || !strings.Contains(s.Why, "check_pkt_larger") {
		t.Errorf("segment 0: cacheable %v (%q), want uncacheable", s.Cacheable, s.Why)
	}
}

// runUDP runs a UDP packet with payload bytes from port 1 and returns
// what came out and the frame as sent.
func runUDP(t *testing.T, p *flowtable.Pipeline, payload int) (*captureSink, []byte) {
	t.Helper()
	k, _ := packetSpec(t, p, "in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1000,tp_dst=53")
	frame := flowtable.BuildFrame(&k, payload)
	var pkt flowtable.Packet
	pkt.Key = k
	if err := pkt.Extract(frame); err != nil {
		t.Fatal(err)
	}
	sent := slices.Clone(frame) // the walk may rewrite frame in place
	sink := &captureSink{}
	p.Run(&pkt, sink, nil)
	return sink, sent
}

// record runs one packet with a flow-cache recording.
func record(t *testing.T, flows, spec string, payload int) *flowtable.Recording {
	t.Helper()
	p := loadSeed(t, flows)
	k, _ := packetSpec(t, p, spec)
	frame := flowtable.BuildFrame(&k, payload)
	var pkt flowtable.Packet
	pkt.Key = k
	if err := pkt.Extract(frame); err != nil {
		t.Fatal(err)
	}
	var rec flowtable.Recording
	p.RunRecorded(&pkt, 0, &captureSink{}, &rec)
	if len(rec.Segments) == 0 {
		t.Fatal("nothing recorded")
	}
	return &rec
}

// TestCheckPktLargerOtherBranch: the rules the packet's check_pkt_larger
// result did not lead to count it too, as in OVS (both branches of the
// datapath's check_pkt_len are translated), but nothing of that branch
// happens: no output, packet-in, learned flow, MAC learning, conntrack
// entry or change of the frame.
func TestCheckPktLargerOtherBranch(t *testing.T) {
	const flows = `
table=0,actions=check_pkt_larger(100)->NXM_NX_REG0[3],resubmit(,1)
table=1,priority=10,reg0=0x8/0x8,actions=push_vlan:0x8100,learn(table=5,NXM_OF_ETH_DST[]),ct(commit),controller,NORMAL,output:2,resubmit(,2)
table=1,priority=0,actions=output:3
table=2,actions=output:4
`
	p := loadSeed(t, flows)
	p.MACs = flowtable.NewMACTable(time.Minute)
	sink, frame := runUDP(t, p, 0)
	if len(sink.out) != 1 || sink.out[0].port != 3 || !bytes.Equal(sink.out[0].frame, frame) {
		t.Fatalf("outputs %v, want the frame unchanged to port 3 only", sink.out)
	}
	ff := flowtable.AllFlows()
	counts := map[string]uint64{}
	for _, r := range p.Flows(&ff) {
		counts[fmt.Sprintf("table=%d,priority=%d", r.Table, r.Priority)] = r.Stats.Packets.Load()
	}
	want := map[string]uint64{"table=0,priority=32768": 1, "table=1,priority=10": 1, "table=1,priority=0": 1, "table=2,priority=32768": 1}
	if !maps.Equal(counts, want) {
		t.Errorf("n_packets %v, want %v", counts, want)
	}
	if e := p.MACs.Entries(time.Now()); len(e) != 0 {
		t.Errorf("the other branch's NORMAL learned %v", e)
	}
}

// TestCheckPktLargerActionSet: each branch of a check_pkt_larger ends with
// its own run of the action set, as OVS 3.1 translates it: the greater
// branch with the set as it was, the less-or-equal one with an empty set
// (the greater one's run emptied it); then the top level runs the set
// from before the check_pkt_larger once more.
func TestCheckPktLargerActionSet(t *testing.T) {
	const flows = `
table=0,actions=write_actions(output:2),goto_table:1
table=1,actions=check_pkt_larger(100)->NXM_NX_REG0[0],goto_table:2
table=2,priority=10,reg0=0x1/0x1,actions=write_actions(output:4)
table=2,priority=0,actions=write_actions(output:3)
`
	p := loadSeed(t, flows)
	for _, c := range []struct {
		payload int
		out     []uint32
	}{{0, []uint32{3, 2}}, {400, []uint32{4, 2}}} {
		sink, frame := runUDP(t, p, c.payload)
		var got []uint32
		for _, o := range sink.out {
			got = append(got, o.port)
		}
		if !slices.Equal(got, c.out) {
			t.Errorf("%d-byte frame: outputs %v, want %v", len(frame), got, c.out)
		}
	}
}

// TestCheckPktLargerMeterDrop: a meter that drops the packet inside the
// greater branch drops the branch's copy only, as the datapath meter
// inside check_pkt_len does in OVS; the level that resubmitted goes on.
func TestCheckPktLargerMeterDrop(t *testing.T) {
	const flows = `
table=0,actions=resubmit(,1),output:2
table=1,actions=check_pkt_larger(10)->NXM_NX_REG0[0],resubmit(,2)
table=2,reg0=0x1/0x1,actions=meter:1,output:3
`
	p := flowtable.NewPipeline()
	band := []flowtable.MeterBand{{Type: flowtable.MeterBandDrop, Rate: 1, Burst: 1}}
	if err := p.AddMeter(&flowtable.MeterEntry{ID: 1, Flags: flowtable.MeterPktps | flowtable.MeterBurst, Bands: band}); err != nil {
		t.Fatal(err)
	}
	if err := flowtext.Load(p, flows, nil); err != nil {
		t.Fatal(err)
	}
	var got [][]uint32
	for range 3 {
		sink, _ := runUDP(t, p, 0)
		var ports []uint32
		for _, o := range sink.out {
			ports = append(ports, o.port)
		}
		got = append(got, ports)
	}
	// The burst lets the first packet through the meter; the next are
	// dropped in the branch, and output:2 still runs for every one.
	want := [][]uint32{{3, 2}, {2}, {2}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("outputs %v, want %v", got, want)
	}
}
