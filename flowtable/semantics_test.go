package flowtable_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

type portList []uint32

func (p portList) PortNumbers() []uint32 { return p }

func pipelineOf(t *testing.T, flows string) *flowtable.Pipeline {
	t.Helper()
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, flows, nil); err != nil {
		t.Fatalf("load: %v", err)
	}
	return p
}

func ports(out []captured) string {
	var s []string
	for _, o := range out {
		s = append(s, fmt.Sprint(o.port))
	}
	return strings.Join(s, ",")
}

const tcpPkt = "in_port=1,tcp,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_ttl=64,tp_src=1234,tp_dst=80"

// TestPipelineSemantics covers the OpenFlow/OVS behaviours the pipeline
// implements, one small pipeline each.
func TestPipelineSemantics(t *testing.T) {
	cases := []struct {
		name   string
		flows  string
		packet string
		want   string // output ports, in order
		check  func(t *testing.T, final flowtable.Key, out []captured)
	}{
		{name: "higher priority wins", flows: "priority=10,ip actions=output:2\npriority=20,tcp actions=output:3\npriority=5 actions=output:4",
			packet: tcpPkt, want: "3"},
		{name: "masks", flows: "priority=10,ip,nw_dst=10.0.0.0/8 actions=output:2\npriority=20,ip,nw_dst=10.1.0.0/16 actions=output:3",
			packet: tcpPkt, want: "2"},
		{name: "table miss drops", flows: "priority=10,udp actions=output:2", packet: tcpPkt, want: ""},
		{name: "resubmit returns to the caller", flows: "actions=resubmit(,1),output:2\ntable=1, actions=output:3",
			packet: tcpPkt, want: "3,2"},
		{name: "goto_table continues in the next table", flows: "actions=load:0x5->NXM_NX_REG3[],goto_table:7\ntable=7, reg3=5 actions=output:4",
			packet: tcpPkt, want: "4"},
		{name: "output to the input port is skipped, IN_PORT is not", flows: "actions=output:1,IN_PORT", packet: tcpPkt, want: "1"},
		{name: "output:NXM_NX_REG1[]", flows: "actions=load:0x7->NXM_NX_REG1[],output:NXM_NX_REG1[]", packet: tcpPkt, want: "7"},
		{name: "resubmit loop is bounded", flows: "actions=resubmit(,0)", packet: tcpPkt, want: ""},
		{name: "conjunction: all clauses match", flows: `priority=100,ip,nw_src=10.0.0.1 actions=conjunction(7,1/2)
priority=100,tcp,tp_dst=80 actions=conjunction(7,2/2)
priority=90,conj_id=7,ip actions=output:2
priority=1 actions=output:9`, packet: tcpPkt, want: "2"},
		{name: "conjunction: a missing clause falls through", flows: `priority=100,ip,nw_src=10.0.0.1 actions=conjunction(7,1/2)
priority=100,tcp,tp_dst=443 actions=conjunction(7,2/2)
priority=90,conj_id=7,ip actions=output:2
priority=1 actions=output:9`, packet: tcpPkt, want: "9"},
		{name: "conjunction: higher hard flow wins", flows: `priority=100,ip,nw_src=10.0.0.1 actions=conjunction(7,1/2)
priority=100,tcp,tp_dst=80 actions=conjunction(7,2/2)
priority=90,conj_id=7,ip actions=output:2
priority=200,tcp actions=output:5`, packet: tcpPkt, want: "5"},
		{name: "one flow in two conjunctions", flows: `priority=100,ip,nw_src=10.0.0.1 actions=conjunction(1,1/2),conjunction(2,1/2)
priority=100,udp,tp_dst=53 actions=conjunction(1,2/2)
priority=100,tcp,tp_dst=80 actions=conjunction(2,2/2)
priority=90,conj_id=1,ip actions=output:2
priority=90,conj_id=2,ip actions=output:3`, packet: tcpPkt, want: "3"},
		{name: "set_field, load and move rewrite the frame", flows: "tcp actions=set_field:10.9.9.9->ip_dst,load:0x1f90->NXM_OF_TCP_DST[],move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],mod_dl_src:02:00:00:00:00:aa,output:2",
			packet: tcpPkt, want: "2", check: func(t *testing.T, _ flowtable.Key, out []captured) {
				pkt := decode(t, out[0].frame)
				ip := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
				tcp := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
				eth := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
				if ip.DstIP.String() != "10.9.9.9" || tcp.DstPort != 8080 || eth.DstMAC.String() != "00:00:00:00:00:01" || eth.SrcMAC.String() != "02:00:00:00:00:aa" {
					t.Errorf("rewritten headers: %v %v %v %v", ip.DstIP, tcp.DstPort, eth.DstMAC, eth.SrcMAC)
				}
				if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
					t.Fatal(err)
				}
				if !validTCPChecksum(t, out[0].frame) {
					t.Errorf("TCP checksum wrong after NAT-like rewrites")
				}
			}},
		{name: "load of a subfield keeps the other bits", flows: "actions=load:0xffffffff->NXM_NX_REG2[],load:0->NXM_NX_REG2[8..15],resubmit(,1)\ntable=1, reg2=0xffff00ff actions=output:3",
			packet: tcpPkt, want: "3"},
		{name: "dec_ttl at TTL 1 goes to the controller", flows: "actions=dec_ttl,output:2",
			packet: strings.Replace(tcpPkt, "nw_ttl=64", "nw_ttl=1", 1), want: fmt.Sprint(flowtable.PortController)},
		{name: "write_actions run at the end of the pipeline", flows: "actions=write_actions(output:3),goto_table:1\ntable=1, actions=load:0x1->NXM_NX_REG0[]",
			packet: tcpPkt, want: "3"},
		{name: "clear_actions empties the action set", flows: "actions=write_actions(output:3),goto_table:1\ntable=1, actions=clear_actions",
			packet: tcpPkt, want: ""},
		{name: "group all clones the packet per bucket", flows: "# group: group_id=1,type=all,bucket=actions=mod_dl_dst:02:00:00:00:00:01,output:2,bucket=actions=output:3\nactions=group:1",
			packet: tcpPkt, want: "2,3", check: func(t *testing.T, _ flowtable.Key, out []captured) {
				eth3 := decode(t, out[1].frame).Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
				if eth3.DstMAC.String() != "00:00:00:00:00:02" {
					t.Errorf("bucket 2 saw bucket 1's rewrite: dl_dst=%s", eth3.DstMAC)
				}
			}},
		{name: "group indirect", flows: "# group: group_id=9,type=indirect,bucket=actions=output:4\nactions=group:9", packet: tcpPkt, want: "4"},
		{name: "push and pop vlan", flows: "actions=push_vlan:0x8100,set_field:4196->vlan_vid,output:2,pop_vlan,output:3",
			packet: tcpPkt, want: "2,3", check: func(t *testing.T, _ flowtable.Key, out []captured) {
				d := decode(t, out[0].frame).Layer(layers.LayerTypeDot1Q)
				if d == nil || d.(*layers.Dot1Q).VLANIdentifier != 100 {
					t.Errorf("port 2 frame lacks VLAN 100: %v", d)
				}
				if decode(t, out[1].frame).Layer(layers.LayerTypeDot1Q) != nil {
					t.Errorf("port 3 frame still tagged")
				}
			}},
		{name: "exit stops", flows: "actions=output:2,exit,output:3", packet: tcpPkt, want: "2"},
		{name: "ct without table keeps the old state", flows: "actions=ct(zone=5),resubmit(,1)\ntable=1, ct_state=-trk actions=output:2\ntable=1, ct_state=+trk actions=output:3",
			packet: tcpPkt, want: "2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pipelineOf(t, c.flows)
			p.Ports = portList{1, 2, 3, 4}
			_, final, out := walk(t, p, c.packet, nil)
			if got := ports(out); got != c.want {
				t.Errorf("outputs %q, want %q", got, c.want)
			}
			if c.check != nil && len(out) > 0 {
				c.check(t, final, out)
			}
		})
	}
}

func validTCPChecksum(t *testing.T, frame []byte) bool {
	t.Helper()
	ip := frame[14:34]
	seg := frame[34 : 14+(int(ip[2])<<8|int(ip[3]))]
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(ip[12:20])
	sum += 6 + uint32(len(seg))
	add(seg)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return sum == 0xffff
}

// TestNormal: NORMAL learns source MACs and floods unknown destinations.
func TestNormal(t *testing.T) {
	p := pipelineOf(t, "actions=NORMAL")
	p.Ports = portList{1, 2, 3}
	a, b := "00:00:00:00:00:0a", "00:00:00:00:00:0b"
	pkt := func(in int, src, dst string) string {
		return fmt.Sprintf("in_port=%d,udp,dl_src=%s,dl_dst=%s,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2", in, src, dst)
	}
	if _, _, out := walk(t, p, pkt(1, a, b), nil); ports(out) != "2,3" {
		t.Errorf("unknown destination: outputs %q, want flood 2,3", ports(out))
	}
	if _, _, out := walk(t, p, pkt(2, b, a), nil); ports(out) != "1" {
		t.Errorf("learned destination: outputs %q, want 1", ports(out))
	}
	if _, _, out := walk(t, p, pkt(1, a, b), nil); ports(out) != "2" {
		t.Errorf("both learned: outputs %q, want 2", ports(out))
	}
	if _, _, out := walk(t, p, pkt(3, a, "ff:ff:ff:ff:ff:ff"), nil); ports(out) != "1,2" {
		t.Errorf("broadcast: outputs %q, want 1,2", ports(out))
	}
}

// TestLearn: learn() installs the flow it describes, which then matches.
func TestLearn(t *testing.T) {
	p := pipelineOf(t, `table=0, tcp actions=learn(table=10,hard_timeout=300,priority=200,cookie=0x42,eth_type=0x800,nw_proto=6,NXM_OF_IP_DST[],NXM_OF_IP_SRC[],NXM_OF_TCP_DST[],load:0x3->NXM_NX_REG4[16..18],output:NXM_OF_IN_PORT[]),resubmit(,10)
table=10, priority=0 actions=drop`)
	walk(t, p, tcpPkt, nil)
	ff := flowtable.AllFlows()
	ff.Table = 10
	var learned *flowtable.Rule
	for _, r := range p.Flows(&ff) {
		if r.Priority == 200 {
			learned = r
		}
	}
	if learned == nil {
		t.Fatalf("no learned flow in table 10")
	}
	got := flowtext.FormatFlow(learned.Flow(), nil)
	want := "cookie=0x42, table=10, hard_timeout=300, priority=200,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_dst=80 actions=load:0x3->NXM_NX_REG4[16..18],output:1"
	if got != want {
		t.Errorf("learned flow:\n got %s\nwant %s", got, want)
	}
	// The second packet of the connection hits it: reg4[16..18]=3 and out port 1... which is the input port.
	_, final, _ := walk(t, p, tcpPkt, nil)
	if final.Reg(4)>>16&7 != 3 {
		t.Errorf("learned flow did not run: reg4=%#x", final.Reg(4))
	}
}

// TestFlowMods covers add/modify/delete selection semantics.
func TestFlowMods(t *testing.T) {
	p := pipelineOf(t, `cookie=0x10, priority=10,ip actions=output:1
cookie=0x11, priority=20,ip,nw_src=10.0.0.1 actions=output:2
cookie=0x20, priority=30,tcp,nw_src=10.0.0.1,tp_dst=80 actions=output:3
cookie=0x20, table=1, priority=30,udp actions=output:3`)
	parse := func(s string, cmd flowtext.Command) *flowtext.FlowMod {
		fm, err := flowtext.ParseFlow(s, &flowtext.ParseOptions{Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		return fm
	}
	filter := func(fm *flowtext.FlowMod, strict bool) *flowtable.FlowFilter {
		ff := flowtable.AllFlows()
		if fm.TableSet {
			ff.Table = fm.Table
		}
		ff.Match, ff.Priority, ff.Strict = fm.Match, fm.Priority, strict
		ff.Cookie, ff.CookieMask, ff.OutPort = fm.Cookie, fm.CookieMask, fm.OutPort
		return &ff
	}
	// Non-strict modify of "ip,nw_src=10.0.0.1" changes the two flows at
	// least as specific, not the plain "ip" one.
	fm := parse("ip,nw_src=10.0.0.1 actions=output:7", flowtext.CmdModify)
	if n := p.ModifyFlows(filter(fm, false), fm.Actions, false); n != 2 {
		t.Errorf("modify changed %d flows, want 2", n)
	}
	// Strict delete needs the exact match and priority.
	fm = parse("priority=20,ip", flowtext.CmdDeleteStrict)
	if n := len(p.DeleteFlows(filter(fm, true))); n != 0 {
		t.Errorf("strict delete with another match removed %d flows", n)
	}
	// Delete by cookie/mask over all tables.
	fm = parse("cookie=0x20/-1", flowtext.CmdDelete)
	if n := len(p.DeleteFlows(filter(fm, false))); n != 2 {
		t.Errorf("delete cookie=0x20/-1 removed %d flows, want 2", n)
	}
	// out_port filter.
	fm = parse("out_port=1", flowtext.CmdDelete)
	if n := len(p.DeleteFlows(filter(fm, false))); n != 1 {
		t.Errorf("delete out_port=1 removed %d flows, want 1", n)
	}
	if n := p.NumFlows(); n != 1 {
		t.Errorf("%d flows left, want 1", n)
	}
	// check_overlap.
	err := p.AddFlows([]*flowtable.Flow{&parse("priority=20,ip,nw_dst=10.0.0.2 check_overlap actions=drop", flowtext.CmdAdd).Flow})
	if !errors.Is(err, flowtable.ErrOverlap) {
		t.Errorf("check_overlap: err %v, want ErrOverlap", err)
	}
	// Adding the same match and priority replaces and keeps one flow.
	if err := p.AddFlow(&parse("priority=20,ip,nw_src=10.0.0.1 actions=output:9", flowtext.CmdAdd).Flow); err != nil {
		t.Fatal(err)
	}
	if n := p.NumFlows(); n != 1 {
		t.Errorf("%d flows after replacing add, want 1", n)
	}
	// A flow using a missing group is refused.
	if err := p.AddFlow(&parse("actions=group:77", flowtext.CmdAdd).Flow); !errors.Is(err, flowtable.ErrUnknownGroup) {
		t.Errorf("group:77 without the group: err %v", err)
	}
}

// TestGroupSelect: select buckets share the traffic by weight and one
// connection always uses the same bucket.
func TestGroupSelect(t *testing.T) {
	p := pipelineOf(t, "# group: group_id=5,type=select,bucket=weight:25,actions=output:2,bucket=weight:75,actions=output:3\nactions=group:5")
	counts := map[string]int{}
	for i := 0; i < 400; i++ {
		pkt := fmt.Sprintf("in_port=1,tcp,nw_src=10.0.%d.%d,nw_dst=10.0.0.2,tp_src=%d,tp_dst=80", i/250, i%250, 1000+i)
		_, _, out := walk(t, p, pkt, nil)
		counts[ports(out)]++
	}
	if counts["2"] < 50 || counts["3"] < 200 || counts["2"]+counts["3"] != 400 {
		t.Errorf("select distribution %v, want about 100/300", counts)
	}
	first := ""
	for i := 0; i < 5; i++ {
		_, _, out := walk(t, p, tcpPkt, nil)
		if i == 0 {
			first = ports(out)
		} else if ports(out) != first {
			t.Fatalf("same 5-tuple chose buckets %s then %s", first, ports(out))
		}
	}
}

// TestApplyAtomic: a batch whose last flow-mod fails leaves the tables as
// they were (atomic bundles).
func TestApplyAtomic(t *testing.T) {
	p := pipelineOf(t, "priority=10,ip actions=output:1\npriority=20,ip,nw_src=10.0.0.1 actions=output:2")
	before := flowtext.DumpFlows(p, nil)
	parse := func(s string) *flowtable.Flow {
		fm, err := flowtext.ParseFlow(s, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &fm.Flow
	}
	all := flowtable.AllFlows()
	ops := []flowtable.FlowOp{
		{Kind: flowtable.OpAdd, Flow: parse("priority=30,tcp actions=output:3")},
		{Kind: flowtable.OpAdd, Flow: parse("priority=10,ip actions=output:9")}, // replaces
		{Kind: flowtable.OpModify, Flow: parse("actions=output:7"), Filter: &all, ResetCounts: true},
		{Kind: flowtable.OpDelete, Filter: &all},
		{Kind: flowtable.OpAdd, Flow: parse("priority=5,ip actions=output:4")},
		{Kind: flowtable.OpAdd, Flow: parse("priority=5,ip,nw_dst=10.0.0.9 check_overlap actions=output:5")},
	}
	if _, err := p.Apply(ops); !errors.Is(err, flowtable.ErrOverlap) {
		t.Fatalf("Apply: err %v, want ErrOverlap from the last op", err)
	}
	if after := flowtext.DumpFlows(p, nil); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("failed batch changed the tables:\nbefore %v\nafter  %v", before, after)
	}
	res, err := p.Apply(ops[:len(ops)-1])
	if err != nil {
		t.Fatal(err)
	}
	if res[2].Modified != 3 || len(res[3].Removed) != 3 || p.NumFlows() != 1 {
		t.Errorf("modify changed %d, delete removed %d, %d flows left; want 3, 3 and 1",
			res[2].Modified, len(res[3].Removed), p.NumFlows())
	}
}

// TestExpireFlows: hard and idle timeouts remove flows; traffic keeps an
// idle flow alive.
func TestExpireFlows(t *testing.T) {
	now := time.Unix(1000, 0)
	p := flowtable.NewPipeline()
	p.Now = func() time.Time { return now }
	if err := flowtext.Load(p, "priority=1,ip actions=drop\nhard_timeout=10,priority=2,tcp actions=drop\nidle_timeout=5,priority=3,udp actions=drop\nidle_timeout=5,priority=4,icmp actions=drop", nil); err != nil {
		t.Fatal(err)
	}
	icmp := "in_port=1,icmp,nw_src=10.0.0.1,nw_dst=10.0.0.2,icmp_type=8"
	for step := 1; step <= 12; step++ {
		now = now.Add(time.Second)
		walk(t, p, icmp, nil) // keeps the icmp flow busy
		exp := p.ExpireFlows(now)
		for _, e := range exp {
			t.Logf("t=%d: expired priority %d reason %d", step, e.Rule.Priority, e.Reason)
		}
		switch step {
		case 5:
			if len(exp) != 1 || exp[0].Rule.Priority != 3 || exp[0].Reason != flowtable.RemovedIdleTimeout {
				t.Errorf("t=5: %v, want the udp flow idle-expired", exp)
			}
		case 10:
			if len(exp) != 1 || exp[0].Rule.Priority != 2 || exp[0].Reason != flowtable.RemovedHardTimeout {
				t.Errorf("t=10: %v, want the tcp flow hard-expired", exp)
			}
		default:
			if len(exp) != 0 {
				t.Errorf("t=%d: unexpected expiry %v", step, exp)
			}
		}
	}
	if n := p.NumFlows(); n != 2 {
		t.Errorf("%d flows left, want 2 (the permanent one and the busy icmp one)", n)
	}
}
