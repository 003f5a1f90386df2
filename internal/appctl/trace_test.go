package appctl

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// golden14Flows are the flows golden 14 was measured with (fact sheet 5.1).
const golden14Flows = `table=0,priority=100,tcp,in_port=49 actions=ct(table=1,zone=65520)
table=1,priority=100,ct_state=+new+trk,tcp actions=ct(commit,zone=65520,exec(set_field:0x1->ct_mark)),output:50
table=1,priority=90,ct_state=+est+trk,tcp actions=output:50
table=1,priority=0 actions=drop
table=0,priority=10,ip actions=ct(commit),NORMAL
table=0,priority=0 actions=NORMAL
`

// goldenSections splits a golden file into "$ command" -> output.
func goldenSections(t *testing.T, name string) map[string]string {
	t.Helper()
	data := goldenFile(t, name)
	out := map[string]string{}
	var cmd string
	var body strings.Builder
	flush := func() {
		if cmd != "" {
			out[cmd] = body.String()
		}
		body.Reset()
	}
	for _, line := range strings.SplitAfter(data, "\n") {
		if strings.HasPrefix(line, "$ ") {
			flush()
			cmd = strings.TrimSpace(line[2:])
			continue
		}
		if strings.HasPrefix(line, "[rc=") {
			continue
		}
		body.WriteString(line)
	}
	flush()
	return out
}

// odpToOFPort maps golden 12's datapath port numbers (dpif/show) to the
// OpenFlow ports govs prints in their place.
var odpToOFPort = map[string]string{"1": "2", "2": "1", "3": "49", "4": "50", "5": "32769"}

// normalizeTrace drops what OVS prints of its own internals: the
// megaflow (each switch's cache keys its entries its own way) and the
// datapath port numbering.
func normalizeTrace(s string, odp map[string]string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.HasPrefix(l, "Megaflow: ") {
			continue
		}
		if rest, ok := strings.CutPrefix(l, "Datapath actions: "); ok && odp != nil {
			parts := flowtext.SplitDatapathActions(rest)
			for i, p := range parts {
				if n, ok := odp[p]; ok {
					parts[i] = n
				}
			}
			l = "Datapath actions: " + strings.Join(parts, ",")
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

func golden14Pipeline(t testing.TB) *flowtable.Pipeline {
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, golden14Flows, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTraceGolden14: ofproto/trace of golden 14's conntrack walks prints
// OVS's lines (tables, flows, actions, details, final flow, banners,
// datapath actions), recirc ids counting up from trace to trace.
func TestTraceGolden14(t *testing.T) {
	sections := goldenSections(t, "14-appctl-ofproto-trace.txt")
	p := golden14Pipeline(t)
	var recirc uint32
	for _, cmd := range []string{
		"ovs-appctl ofproto/trace br-int in_port=49,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_dst=80",
		"ovs-appctl ofproto/trace --ct-next trk,new br-int in_port=49,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_dst=80",
		"ovs-appctl ofproto/trace --ct-next trk,est br-int in_port=49,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_dst=80",
		"ovs-appctl ofproto/trace br-int in_port=49,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_dst=80 -generate",
	} {
		want, ok := sections[cmd]
		if !ok {
			t.Fatalf("golden has no %q", cmd)
		}
		r, err := ParseTraceArgs(strings.Fields(cmd)[2:])
		if err != nil {
			t.Fatal(err)
		}
		key, err := flowtext.ParsePacket(r.Flow, nil)
		if err != nil {
			t.Fatal(err)
		}
		tr := &flowtext.OVSTrace{Bridge: r.Bridge, CtNext: r.CtNext,
			NextRecircID: func() uint32 { recirc++; return recirc }, Options: &flowtext.PrintOptions{Version: flowtext.OF15}}
		got, err := tr.Run(p, key)
		if err != nil {
			t.Fatal(err)
		}
		g, w := normalizeTrace(got, nil), normalizeTrace(want, odpToOFPort)
		if g != w {
			t.Errorf("%s:\n--- got\n%s\n--- want\n%s", cmd, g, w)
		}
	}
}

// TestTraceRecircIDs: the recirc ids of the banner and of the datapath
// actions agree.
func TestTraceRecircIDs(t *testing.T) {
	out, err := (&flowtext.OVSTrace{Bridge: "br-int", NextRecircID: func() uint32 { return 7 }}).Run(golden14Pipeline(t), mustKey(t, "in_port=49,tcp,tp_dst=80"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`recirc\(0x7\)\n`).MatchString(out) || !strings.Contains(out, "Datapath actions: ct(zone=65520),recirc(0x7)") {
		t.Errorf("recirc ids:\n%s", out)
	}
}

func mustKey(t testing.TB, s string) flowtable.Key {
	k, err := flowtext.ParsePacket(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// goldenFile reads a fact-sheet golden copied into testdata/.
func goldenFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestTraceNAT: a ct(nat) recirculation is resumed with the first address
// and port of the range, announced as OVS's trace does, and the datapath
// ct() carries the nat.
func TestTraceNAT(t *testing.T) {
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, "table=0,priority=10,tcp,actions=ct(commit,table=1,zone=5,nat(dst=10.0.0.9-10.0.0.12:8080))\n"+
		"table=1,priority=10,tcp,nw_dst=10.0.0.9,tp_dst=8080,actions=output:2\n", nil); err != nil {
		t.Fatal(err)
	}
	out, err := (&flowtext.OVSTrace{Bridge: "br0", NextRecircID: func() uint32 { return 1 }}).Run(p, mustKey(t, "tcp,in_port=1,nw_src=10.0.0.1,nw_dst=10.1.1.1,tp_src=1234,tp_dst=80"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"    nat(dst=10.0.0.9-10.0.0.12:8080)\n",
		"Datapath actions: ct(commit,zone=5,nat(dst=10.0.0.9-10.0.0.12:8080)),recirc(0x1)\n",
		"Replacing src/dst IP/ports to simulate NAT:\n Initial flow: nw_src=10.0.0.1,tp_src=1234,nw_dst=10.1.1.1,tp_dst=80\n Modified flow: nw_src=10.0.0.1,tp_src=1234,nw_dst=10.0.0.9,tp_dst=8080\n====",
		" 1. tcp,nw_dst=10.0.0.9,tp_dst=8080, priority 10\n    output:2\n",
		"Datapath actions: 2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("trace lacks %q:\n%s", want, out)
		}
	}
}

// TestTraceSeedServiceWalkGolden: `govs trace` of seed 001 §8 through
// worker 1's flows prints what Open vSwitch 3.1 printed for the same
// packet and flows (testdata/seed001-service-walk.txt, written by
// GOVS_UPDATE_GOLDEN=1 go test ./internal/e2e -run TestTraceMatchesOVS:
// megaflows dropped, recirc ids numbered by appearance, ports as
// OpenFlow numbers).
func TestTraceSeedServiceWalkGolden(t *testing.T) {
	golden := goldenFile(t, "seed001-service-walk.txt")
	cmd, want, _ := strings.Cut(golden, "\n")
	args := strings.Fields(strings.TrimPrefix(cmd, "$ ovs-appctl ofproto/trace "))
	r, err := ParseTraceArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	var id uint32
	out, err := TracePipeline(worker1(t), r.Bridge, nil, r, func(n uint32) uint32 { id += n; return id })
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	got := regexp.MustCompile(`recirc(_id=|\()0x[0-9a-f]+`).ReplaceAllStringFunc(normalizeTrace(out, nil), func(s string) string {
		i := strings.Index(s, "0x")
		if _, ok := ids[s[i:]]; !ok {
			ids[s[i:]] = fmt.Sprintf("#%d", len(ids)+1)
		}
		return s[:i] + ids[s[i:]]
	})
	if got != strings.TrimRight(want, "\n") {
		t.Errorf("govs:\n%s\n--- Open vSwitch:\n%s", got, want)
	}
}

// TestTracePause: the trace of a packet that reaches controller(pause)
// stops at the pause and sends nothing (no packet-in, datapath actions
// drop), as Open vSwitch 3.1's ofproto/trace printed for the same flows.
func TestTracePause(t *testing.T) {
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, "table=0 in_port=1 actions=set_field:1->reg1,resubmit(,1),output:2\n"+
		"table=1 actions=set_field:5->reg2,controller(pause,userdata=01.02),set_field:6->reg3,resubmit(,2),output:2\n", nil); err != nil {
		t.Fatal(err)
	}
	out, err := (&flowtext.OVSTrace{Bridge: "br0", NextRecircID: func() uint32 { return 1 }}).Run(p, mustKey(t, "in_port=1,icmp,nw_src=10.0.0.1,nw_dst=10.0.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		" 0. in_port=1, priority 32768\n    set_field:0x1->reg1\n    resubmit(,1)\n" +
			" 1. priority 32768\n    set_field:0x5->reg2\n    controller(userdata=01.02,pause)\n\n" +
			"Final flow: icmp,reg1=0x1,reg2=0x5,in_port=1,",
		"Datapath actions: drop",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("trace lacks %q:\n%s", want, out)
		}
	}
}
