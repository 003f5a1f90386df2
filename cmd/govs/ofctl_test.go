package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

func TestParseOfctlArgs(t *testing.T) {
	t.Setenv("GOVS_RUNDIR", "/env/run")
	tests := []struct {
		args []string
		want ofctlOptions
		pos  []string
		err  string
	}{
		{[]string{"br-int", "table=0 actions=drop"}, ofctlOptions{version: flowtext.OF13, rundir: "/env/run"}, []string{"br-int", "table=0 actions=drop"}, ""},
		{[]string{"-O", "OpenFlow10", "br0"}, ofctlOptions{version: flowtext.OF10, rundir: "/env/run"}, []string{"br0"}, ""},
		{[]string{"br0", "-OOpenFlow15", "--strict"}, ofctlOptions{version: flowtext.OF15, strict: true, rundir: "/env/run"}, []string{"br0"}, ""},
		{[]string{"--protocols=OpenFlow13", "--bundle", "br0", "f"}, ofctlOptions{version: flowtext.OF13, bundle: true, rundir: "/env/run"}, []string{"br0", "f"}, ""},
		{[]string{"--no-stats", "--names", "--rundir", "/r", "br0"}, ofctlOptions{version: flowtext.OF13, noStats: true, names: true, rundir: "/r"}, []string{"br0"}, ""},
		{[]string{"--rundir=/r", "--names", "--no-names", "br0", "--", "-x"}, ofctlOptions{version: flowtext.OF13, rundir: "/r"}, []string{"br0", "-x"}, ""},
		{[]string{"-O"}, ofctlOptions{}, nil, "needs a value"},
		{[]string{"-O", "OpenFlow11"}, ofctlOptions{}, nil, "unknown OpenFlow version"},
		{[]string{"-O", "OpenFlow10,OpenFlow13"}, ofctlOptions{}, nil, "exactly one"},
		{[]string{"--sort", "br0"}, ofctlOptions{}, nil, "unknown option --sort"},
	}
	for _, tc := range tests {
		o, pos, err := parseOfctlArgs(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || *o != tc.want || strings.Join(pos, "|") != strings.Join(tc.pos, "|") {
			t.Errorf("%q: %+v %q %v; want %+v %q", tc.args, o, pos, err, tc.want, tc.pos)
		}
	}
}

func TestOfctlCommandArgCounts(t *testing.T) {
	for _, c := range ofctlCommands {
		if err := runOfctl(&c, nil, nil); err == nil || !strings.Contains(err.Error(), "usage: govs "+c.name) {
			t.Errorf("%s without arguments: %v", c.name, err)
		}
		args := make([]string, c.max+1)
		if err := runOfctl(&c, args, nil); err == nil || !strings.Contains(err.Error(), "usage") {
			t.Errorf("%s with too many arguments: %v", c.name, err)
		}
	}
}

// TestToFlowMod: the flow-mod fields ovs-ofctl sends for each command.
func TestToFlowMod(t *testing.T) {
	tests := []struct {
		cmd        flowtext.Command
		text       string
		command    uint16
		table      uint8
		cookie     uint64 // selector
		mask       uint64
		newCookie  uint64
		outPort    uint32
		strictTest bool
	}{
		{flowtext.CmdAdd, "cookie=0x5,table=3,priority=9,ip actions=drop", wire.OFPFC_ADD, 3, 0, 0, 5, flowtable.PortNone, false},
		{flowtext.CmdModify, "ip actions=drop", wire.OFPFC_MODIFY, translate.TableAll, 0, 0, 0, flowtable.PortNone, false},
		{flowtext.CmdModify, "cookie=0x7,table=2,ip actions=drop", wire.OFPFC_MODIFY, 2, 0, 0, 7, flowtable.PortNone, false},
		{flowtext.CmdModifyStrict, "table=2,priority=5,ip actions=drop", wire.OFPFC_MODIFY_STRICT, 2, 0, 0, 0, flowtable.PortNone, false},
		{flowtext.CmdDelete, "cookie=0x1050000000000/-1", wire.OFPFC_DELETE, translate.TableAll, 0x1050000000000, ^uint64(0), 0, flowtable.PortNone, false},
		{flowtext.CmdDelete, "cookie=0xff/0xf0,out_port=5", wire.OFPFC_DELETE, translate.TableAll, 0xf0, 0xf0, 0, 5, false},
		{flowtext.CmdDeleteStrict, "table=110,priority=0", wire.OFPFC_DELETE_STRICT, 110, 0, 0, 0, flowtable.PortNone, false},
	}
	for _, tc := range tests {
		fm, err := flowtext.ParseFlow(tc.text, &flowtext.ParseOptions{Command: tc.cmd})
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		got := toFlowMod(fm)
		if uint16(got.Command) != tc.command || got.Flow.Table != tc.table || got.Cookie != tc.cookie || got.CookieMask != tc.mask ||
			got.Flow.Cookie != tc.newCookie || got.OutPort != tc.outPort || got.BufferID != wire.OFP_NO_BUFFER {
			t.Errorf("%q: command %d table %d cookie %#x/%#x new cookie %#x out_port %d", tc.text, got.Command, got.Flow.Table,
				got.Cookie, got.CookieMask, got.Flow.Cookie, got.OutPort)
		}
	}
	o := &ofctlOptions{strict: true}
	if o.command(flowtext.CmdModify) != flowtext.CmdModifyStrict || o.command(flowtext.CmdDelete) != flowtext.CmdDeleteStrict || o.command(flowtext.CmdAdd) != flowtext.CmdAdd {
		t.Errorf("--strict does not select the strict commands")
	}
}

func TestPacketOutArgs(t *testing.T) {
	tests := []struct {
		args                 []string
		inPort, actions, pkt string
		err                  string
	}{
		{[]string{"5", "output:3", "ffff"}, "5", "output:3", "ffff", ""},
		{[]string{"in_port=LOCAL packet=00ff actions=resubmit(,3),output:1"}, "LOCAL", "resubmit(,3),output:1", "00ff", ""},
		{[]string{"in_port=5,packet=00ff,actions=drop"}, "5", "drop", "00ff", ""},
		{[]string{"packet=00ff actions=drop"}, "NONE", "drop", "00ff", ""},
		{[]string{"in_port=5 actions=drop"}, "", "", "", "missing packet="},
		{[]string{"in_port=5 packet=00"}, "", "", "", "missing actions="},
		{[]string{"in_port=5 pkt=00 actions=drop"}, "", "", "", "unknown packet-out keyword"},
		{[]string{"5", "drop"}, "", "", "", "takes IN_PORT ACTIONS PACKET_HEX"},
	}
	for _, tc := range tests {
		in, acts, pkt, err := packetOutArgs(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || in != tc.inPort || acts != tc.actions || pkt != tc.pkt {
			t.Errorf("%q: %q %q %q %v", tc.args, in, acts, pkt, err)
		}
	}
}

func TestParseGroupIDAndPort(t *testing.T) {
	for in, want := range map[string]uint32{"5": 5, "group_id=7": 7, "group_id=all": flowtable.GroupAllID, "type=all,group_id=0x10": 16} {
		if got, err := parseGroupID(in); err != nil || got != want {
			t.Errorf("parseGroupID(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "group_id=", "4294967295", "-1"} {
		if _, err := parseGroupID(bad); err == nil {
			t.Errorf("parseGroupID(%q) accepted", bad)
		}
	}
	for in, want := range map[string]uint32{"5": 5, "LOCAL": flowtable.PortLocal, "local": flowtable.PortLocal, "NONE": flowtable.PortNone, "CONTROLLER": flowtable.PortController} {
		if got, err := parsePort(in); err != nil || got != want {
			t.Errorf("parsePort(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "eth0", "65280", "-3"} {
		if _, err := parsePort(bad); err == nil {
			t.Errorf("parsePort(%q) accepted", bad)
		}
	}
	if wirePort(wire.OFP13, flowtable.PortLocal) != 0xfffffffe || wirePort(wire.OFP13, flowtable.PortNone) != wire.OFPP_ANY || wirePort(wire.OFP10, 5) != 5 {
		t.Errorf("wirePort")
	}
}

func TestFormatHelpers(t *testing.T) {
	for _, tc := range []struct {
		sec, nsec uint32
		want      string
	}{{3, 0, "3s"}, {0, 208000000, "0.208s"}, {1, 5000, "1.000005s"}, {12, 1, "12.000000001s"}} {
		if got := formatDuration(tc.sec, tc.nsec); got != tc.want {
			t.Errorf("formatDuration(%d, %d) = %q, want %q", tc.sec, tc.nsec, got, tc.want)
		}
	}
	if statString(^uint64(0)) != "?" || statString(42) != "42" {
		t.Errorf("statString")
	}
	g, err := flowtext.ParseGroup("group_id=5,type=select,bucket=weight:100,actions=resubmit(,42),bucket=weight:50,actions=drop", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := flowtext.FormatGroup(g, &flowtext.PrintOptions{Version: flowtext.OF10})
	if want := "group_id=5,type=select,bucket=bucket_id:0,weight:100,actions=resubmit(,42),bucket=bucket_id:1,weight:50,actions=drop"; got != want {
		t.Errorf("OpenFlow 1.0 group:\n got %s\nwant %s", got, want)
	}
	all, _ := flowtext.ParseGroup("group_id=7,type=all,bucket=actions=drop", nil)
	if all.Buckets[0].Weight != 0 {
		t.Errorf("all group bucket weight %d, want 0", all.Buckets[0].Weight)
	}
	if _, err := flowtext.ParseGroup("group_id=7,type=all,bucket=weight:9,actions=drop", nil); err == nil || !strings.Contains(err.Error(), "only select groups") {
		t.Errorf("weight in an all group: %v", err)
	}
	fs := &translate.FlowStats{Flow: &flowtable.Flow{Table: 3, Priority: 5, Cookie: 0x10, IdleTimeout: 9, Importance: 2},
		DurationSec: 1, DurationNsec: 500000000, IdleAge: 1, HardAge: 4, PacketCount: 7, ByteCount: 700}
	want := "cookie=0x10, duration=1.500s, table=3, n_packets=7, n_bytes=700, idle_timeout=9, importance=2, idle_age=1, hard_age=4, priority=5 actions=drop"
	if got := formatFlowStats(fs, &flowtext.PrintOptions{Version: flowtext.OF10}); got != want {
		t.Errorf("formatFlowStats:\n got %s\nwant %s", got, want)
	}
}

// TestOfctlCLIErrors: the binary reports unreachable targets and bad
// input precisely, and `govs show` without a target stays ovs-vsctl show.
func TestOfctlCLIErrors(t *testing.T) {
	bin := buildGovs(t)
	dir := t.TempDir()
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"dump-flows", "--rundir", dir, "br9"}, []string{filepath.Join(dir, "br9.mgmt")}},
		{[]string{"dump-flows", "tcp:127.0.0.1"}, []string{"127.0.0.1:6653"}},
		{[]string{"add-flow", "-O", "OpenFlow12", "br0", "actions=drop"}, []string{"unknown OpenFlow version"}},
		{[]string{"add-flows", "br0", filepath.Join(dir, "missing.flows")}, []string{"missing.flows"}},
		{[]string{"packet-out", "br0", "5", "drop", "zz"}, []string{"not hexadecimal"}},
		{[]string{"show", "--rundir", dir}, []string{"govs-vswitchd"}},
		{[]string{"show", "--rundir", dir, "br0"}, []string{filepath.Join(dir, "br0.mgmt")}},
	}
	for _, tc := range tests {
		out, err := exec.Command(bin, tc.args...).CombinedOutput()
		if err == nil {
			t.Errorf("govs %q succeeded:\n%s", tc.args, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("govs %q: %q does not mention %q", tc.args, out, w)
			}
		}
	}
}

func FuzzParseOfctlArgs(f *testing.F) {
	f.Add("-O\x00OpenFlow10\x00br0\x00--strict")
	f.Add("--rundir=/x\x00--\x00-y")
	f.Add("in_port=1 packet=00 actions=drop")
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		if o, _, err := parseOfctlArgs(args); err == nil && o == nil {
			t.Errorf("nil options without error")
		}
		packetOutArgs(args)
		packetOutArgs(args[:1])
		parseGroupID(s)
		parsePort(s)
	})
}
