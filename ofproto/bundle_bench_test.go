package ofproto_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/bench/antreagen"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/ofproto"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// BenchmarkBundleFlowMods measures flow-mods applied per second over one
// OpenFlow 1.5 connection in an atomic bundle (open, 10,000 adds, commit),
// on the switch side: the client's messages are encoded in advance. The
// connection is an in-process net.Pipe (every write waits for the
// switch's read) or, as for real clients, an AF_UNIX socket.
func BenchmarkBundleFlowMods(b *testing.B) {
	for _, tc := range []struct {
		name    string
		connect func(testing.TB, *ofproto.Bridge, uint8) *oftest.Client
	}{{"pipe", connectTo}, {"unix", connectUnix}} {
		b.Run(tc.name, func(b *testing.B) {
			p := flowtable.NewPipeline()
			benchBundle(b, tc.connect(b, ofproto.NewBridge(&fakeDP{p}, nil), wire.OFP15), p, testFlows(10000), 10000)
		})
	}
}

// BenchmarkBundleAntreaScale is BenchmarkBundleFlowMods with the flows
// of a generated Antrea node at scale (bench/antreagen's default, ~119k
// flows, its 500 select groups installed first), over an AF_UNIX socket:
// the switch side of `ovs-ofctl --bundle add-flows` of the node (issue 23).
func BenchmarkBundleAntreaScale(b *testing.B) {
	gen := antreagen.Generate(antreagen.Default())
	p := flowtable.NewPipeline()
	var groups strings.Builder
	for _, g := range strings.Split(strings.TrimSpace(gen.Groups), "\n") {
		groups.WriteString("# group: " + g + "\n")
	}
	if err := flowtext.Load(p, groups.String(), nil); err != nil {
		b.Fatal(err)
	}
	flows := strings.Split(strings.TrimSpace(gen.Flows), "\n")
	benchBundle(b, connectUnix(b, ofproto.NewBridge(&fakeDP{p}, nil), wire.OFP15), p, flows, gen.NumFlows)
}

// BenchmarkBundleAntrea is BenchmarkBundleFlowMods with 20,000 flows shaped
// as those Antrea's agent sends through ofnet (internal/ofnete2e): per pod a
// classifier, spoof guard, L3 and L2 forwarding flow and an ingress policy
// as conjunctions; per Service a ServiceLB flow and three EndpointDNAT
// flows with ct(commit,exec(set_field->ct_mark)).
func BenchmarkBundleAntrea(b *testing.B) {
	p := flowtable.NewPipeline()
	flows := antreaFlows(2000, 1000)
	benchBundle(b, connectUnix(b, ofproto.NewBridge(&fakeDP{p}, nil), wire.OFP15), p, flows, len(flows))
}

func antreaFlows(pods, services int) []string {
	var out []string
	ip := func(a, i int) string { return fmt.Sprintf("10.%d.%d.%d", a, i>>8&0xff, i&0xff) }
	mac := func(i int) string { return fmt.Sprintf("aa:bb:cc:00:%02x:%02x", i>>8&0xff, i&0xff) }
	for i := 0; i < pods; i++ {
		port, conj := 10+i, 1000+i
		out = append(out,
			fmt.Sprintf("table=5,priority=190,in_port=%d actions=set_field:0x3/0xf->reg0,goto_table:6", port),
			fmt.Sprintf("table=6,priority=200,ip,in_port=%d,dl_src=%s,nw_src=%s actions=goto_table:10", port, mac(i), ip(10, i)),
			fmt.Sprintf("table=30,priority=200,ip,reg0=0x200/0x200,nw_dst=%s actions=set_field:aa:bb:cc:dd:ee:ff->eth_src,set_field:%s->eth_dst,dec_ttl,goto_table:40", ip(10, i), mac(i)),
			fmt.Sprintf("table=40,priority=200,dl_dst=%s actions=set_field:%#x->reg1,set_field:0x200000/0x600000->reg0,goto_table:42", mac(i), port),
			fmt.Sprintf("table=42,priority=200,ip,nw_src=%s actions=conjunction(%d,1/2)", ip(10, i+1), conj),
			fmt.Sprintf("table=42,priority=200,ip,reg1=%#x actions=conjunction(%d,2/2)", port, conj),
			fmt.Sprintf("table=42,priority=190,conj_id=%d,ip actions=set_field:%#x->reg6,goto_table:44", conj, conj),
			fmt.Sprintf("table=44,priority=200,ip,reg6=%#x actions=goto_table:45", conj))
	}
	for j := 0; j < services; j++ {
		out = append(out, fmt.Sprintf("table=13,priority=200,tcp,reg4=0x10000/0x70000,nw_dst=%s,tp_dst=80 actions=set_field:0x20000/0x70000->reg4,goto_table:14", ip(96, j)))
		for k := 0; k < 3; k++ {
			out = append(out, fmt.Sprintf("table=14,priority=200,tcp,reg3=%#x,reg4=0x28080/0x7ffff actions=ct(commit,table=20,zone=65520,exec(set_field:0x20/0x20->ct_mark))", 0x0a0a0000+3*j+k))
		}
	}
	return out
}

// testFlows are BenchmarkBundleFlowMods's 10,000 flows.
func testFlows(n int) []string {
	flows := make([]string, n)
	for i := range flows {
		flows[i] = fmt.Sprintf("table=%d,priority=%d,ip,nw_src=10.%d.%d.%d actions=load:%#x->NXM_NX_REG1[],goto_table:%d",
			i%3, 100+i%50, i/65536, i/256%256, i%256, i, 10+i%3)
	}
	return flows
}

// benchBundle sends flows in one atomic OpenFlow 1.5 bundle over c per
// iteration; the switch then holds n flows, which are deleted after.
func benchBundle(b *testing.B, c *oftest.Client, p *flowtable.Pipeline, flows []string, n int) {
	var msgs [][]byte // encoded bundle-add messages (without header)
	for _, line := range flows {
		fm, err := flowtext.ParseFlow(line, &flowtext.ParseOptions{TLV: p.TLV})
		if err != nil {
			b.Fatal(err)
		}
		wfm, err := translate.FlowModToWire(&translate.FlowMod{Flow: fm.Flow, Command: uint8(wire.OFPFC_ADD),
			BufferID: wire.OFP_NO_BUFFER, OutPort: flowtable.PortNone, OutGroup: translate.GroupAny}, wire.OFP15, p.TLV)
		if err != nil {
			b.Fatal(err)
		}
		add := &wire.BundleAdd{BundleID: 1, Flags: wire.OFPBF_ATOMIC, InnerHeader: wire.Header{Version: wire.OFP15, Xid: 0x600}, Inner: wfm}
		body, err := add.EncodeBody(wire.OFP15, nil)
		if err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, body)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sendBundle(b, c, wire.OFPBF_ATOMIC, msgs)
		b.StopTimer()
		if got := p.NumFlows(); got != n {
			b.Fatalf("%d flows after the bundle, want %d", got, n)
		}
		all := flowtable.AllFlows()
		p.DeleteFlows(&all)
		b.StartTimer()
	}
	b.ReportMetric(float64(len(flows)*b.N)/b.Elapsed().Seconds(), "flowmods/s")
}

// sendBundle sends one bundle (open with flags, the bundle-add bodies,
// commit) and waits for the open and commit replies.
func sendBundle(b *testing.B, c *oftest.Client, flags uint16, msgs [][]byte) {
	sendBundleTimed(b, c, flags, msgs, false)
}

// sendBundleTimed is sendBundle; with barrier, it waits for a barrier
// reply after the adds (every add staged) and returns the commit phase
// alone: the commit request to its reply.
func sendBundleTimed(b *testing.B, c *oftest.Client, flags uint16, msgs [][]byte, barrier bool) time.Duration {
	control := func(typ uint16) []byte {
		body, _ := (&wire.BundleControl{BundleID: 1, Type: typ, Flags: flags}).EncodeBody(wire.OFP15, nil)
		return body
	}
	open, commit := control(wire.OFPBCT_OPEN_REQUEST), control(wire.OFPBCT_COMMIT_REQUEST)
	expect := func() {
		h, body, err := c.Recv()
		if err != nil || h.Type != wire.OFPT_BUNDLE_CONTROL {
			b.Fatalf("got type %d (%v) % x, want a bundle control reply", h.Type, err, body)
		}
	}
	c.Send(wire.OFPT_BUNDLE_CONTROL, 0x600, open)
	expect()
	for _, m := range msgs {
		c.Send(wire.OFPT_BUNDLE_ADD_MESSAGE, 0x600, m)
	}
	if barrier {
		c.Send(wire.OFPT_BARRIER_REQUEST, 0x601, nil)
		if h, _, err := c.Recv(); err != nil || h.Type != wire.OFPT_BARRIER_REPLY {
			b.Fatalf("got type %d (%v), want a barrier reply", h.Type, err)
		}
	}
	start := time.Now()
	c.Send(wire.OFPT_BUNDLE_CONTROL, 0x600, commit)
	expect()
	return time.Since(start)
}

// ovnGroup is the group ovn-controller adds with testdata/ovn-br-int.flows
// (the load balancer's dp_hash select group).
const ovnGroup = "group_id=1,type=select,selection_method=dp_hash,bucket=bucket_id:0,weight:100,actions=ct(commit,table=21,zone=NXM_NX_REG13[0..15],nat(dst=10.0.2.2:80),exec(set_field:0x2/0x2->ct_mark))"

// ovnBundle encodes the bundle ovn-controller sends on (re)connecting to
// the one-chassis topology of internal/e2e's OVN test: delete every flow
// and group, add the group and the 565 flows Open vSwitch dumped
// (testdata/ovn-br-int.flows), all in one atomic, ordered bundle.
func ovnBundle(tb testing.TB, p *flowtable.Pipeline) [][]byte {
	tb.Helper()
	text, err := os.ReadFile("testdata/ovn-br-int.flows")
	if err != nil {
		tb.Fatal(err)
	}
	add := func(inner wire.Message) []byte {
		m := &wire.BundleAdd{BundleID: 1, Flags: wire.OFPBF_ATOMIC | wire.OFPBF_ORDERED, InnerHeader: wire.Header{Version: wire.OFP15, Xid: 0x600}, Inner: inner}
		body, err := m.EncodeBody(wire.OFP15, nil)
		if err != nil {
			tb.Fatal(err)
		}
		return body
	}
	flowMod := func(fm *translate.FlowMod) []byte {
		w, err := translate.FlowModToWire(fm, wire.OFP15, p.TLV)
		if err != nil {
			tb.Fatal(err)
		}
		return add(w)
	}
	groupMod := func(gm *translate.GroupMod) []byte {
		w, err := translate.GroupModToWire(gm, wire.OFP15, p.TLV)
		if err != nil {
			tb.Fatal(err)
		}
		return add(w)
	}
	any := translate.FlowMod{Flow: flowtable.Flow{Table: translate.TableAll}, Command: uint8(wire.OFPFC_DELETE),
		BufferID: wire.OFP_NO_BUFFER, OutPort: flowtable.PortNone, OutGroup: translate.GroupAny}
	msgs := [][]byte{flowMod(&any), groupMod(&translate.GroupMod{Command: wire.OFPGC_DELETE, Group: &flowtable.GroupEntry{ID: flowtable.GroupAllID}})}
	g, err := flowtext.ParseGroup(ovnGroup, nil)
	if err != nil {
		tb.Fatal(err)
	}
	msgs = append(msgs, groupMod(&translate.GroupMod{Command: wire.OFPGC_ADD, Group: g}))
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		fm, err := flowtext.ParseFlow(strings.TrimSpace(line), nil)
		if err != nil {
			tb.Fatalf("%s: %v", line, err)
		}
		msgs = append(msgs, flowMod(&translate.FlowMod{Flow: fm.Flow, Command: uint8(wire.OFPFC_ADD),
			BufferID: wire.OFP_NO_BUFFER, OutPort: flowtable.PortNone, OutGroup: translate.GroupAny}))
	}
	return msgs
}

// BenchmarkBundleOVN is ovn-controller's full-table bundle (ovnBundle)
// over an AF_UNIX connection, switch side: open, the 568 adds, a
// barrier, commit.
func BenchmarkBundleOVN(b *testing.B) {
	p := flowtable.NewPipeline()
	c := connectUnix(b, ofproto.NewBridge(&fakeDP{p}, nil), wire.OFP15)
	msgs := ovnBundle(b, p)
	var commit time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		commit += sendBundleTimed(b, c, wire.OFPBF_ATOMIC|wire.OFPBF_ORDERED, msgs, true)
	}
	b.StopTimer()
	// The commit phase alone: delete every flow and group, then install
	// the flows again (what Open vSwitch does between commit and reply).
	b.ReportMetric(float64(commit.Microseconds())/float64(b.N), "commit-µs/op")
	if got := p.NumFlows(); got != len(msgs)-3 {
		b.Fatalf("%d flows after the bundle, want %d", got, len(msgs)-3)
	}
}

// BenchmarkCommit is the commit of a bundle alone, in the pipeline
// without a connection (what the switch does between commit request and
// reply): ovn-controller's (ovnBundle's delete every flow and group, the
// group, the 565 adds) and an agent's first load (BenchmarkBundleAntrea's
// 20,000 flows into empty tables). "staged": the bundle went through a
// flowtable.Stage as it was staged; "onebyone": every rule inserted at
// commit. The other side's catch-up of the previous commit is done
// before the timer starts.
func BenchmarkCommit(b *testing.B) {
	ovnFlows, err := os.ReadFile("testdata/ovn-br-int.flows")
	if err != nil {
		b.Fatal(err)
	}
	g, err := flowtext.ParseGroup(ovnGroup, nil)
	if err != nil {
		b.Fatal(err)
	}
	parse := func(lines []string) []*flowtable.Flow {
		var fs []*flowtable.Flow
		for _, line := range lines {
			fm, err := flowtext.ParseFlow(strings.TrimSpace(line), nil)
			if err != nil {
				b.Fatal(err)
			}
			fs = append(fs, &fm.Flow)
		}
		return fs
	}
	all := flowtable.AllFlows()
	for _, tc := range []struct {
		name  string
		head  []flowtable.FlowOp
		flows []*flowtable.Flow
	}{
		{"ovn", []flowtable.FlowOp{{Kind: flowtable.OpDelete, Filter: &all}, {Kind: flowtable.OpGroupDelete, GroupID: flowtable.GroupAllID},
			{Kind: flowtable.OpGroupAdd, Group: g}}, parse(strings.Split(strings.TrimSpace(string(ovnFlows)), "\n"))},
		{"antrea20k", nil, parse(antreaFlows(2000, 1000))},
	} {
		for _, staged := range []bool{true, false} {
			name := tc.name + "/onebyone"
			if staged {
				name = tc.name + "/staged"
			}
			b.Run(name, func(b *testing.B) {
				p := flowtable.NewPipeline()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					if tc.head == nil { // into empty tables
						p.DeleteFlows(&all)
					}
					ops := slices.Clone(tc.head)
					for _, f := range tc.flows {
						ops = append(ops, flowtable.FlowOp{Kind: flowtable.OpAdd, Rule: flowtable.NewRule(f)})
					}
					var st *flowtable.Stage
					if staged {
						st = p.NewStage()
						for j := range ops {
							st.Add(&ops[j])
						}
					}
					if _, err := p.Apply(nil); err != nil { // the previous commit's catch-up
						b.Fatal(err)
					}
					b.StartTimer()
					if _, err := p.ApplyStaged(ops, st); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
