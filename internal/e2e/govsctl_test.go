package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/internal/ovstest"
	"github.com/govs-project/govs/internal/seeds"
)

// The govs CLI's ovs-ofctl style commands are checked against both kinds
// of switch: a govs-vswitchd bridge and a real Open vSwitch. The reference
// is always the real ovs-ofctl: what `govs CMD` leaves in a switch must be
// what `ovs-ofctl CMD` leaves in it, as dumped by ovs-ofctl.

// ctlSwitch is one switch under test.
type ctlSwitch struct {
	name   string
	target string // unix:PATH for ovs-ofctl
	rundir string // for `govs --rundir DIR br-int`
	bridge string
}

func govsCtl(t *testing.T, govs string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(govs, args...).CombinedOutput()
	return string(out), err
}

func mustGovsCtl(t *testing.T, govs string, args ...string) string {
	t.Helper()
	out, err := govsCtl(t, govs, args...)
	if err != nil {
		t.Fatalf("govs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func mustOfctl(t *testing.T, target string, args ...string) string {
	t.Helper()
	out, err := ofctl(target, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// ctlSwitches starts a govs-vswitchd bridge and a real Open vSwitch bridge,
// both called br-int, each with one port numbered 5.
func ctlSwitches(t *testing.T) (govs string, sws []ctlSwitch) {
	n := startNode(t)
	n.mustRun("add-br", "br-int")
	p := n.addPod(t, "10.231.9.1/24", "")
	n.mustRun("add-port", "br-int", p.veth.Host, "ofport_request=5")
	o := ovstest.Start(t, ovstest.Options{Ports: []ovstest.Port{{Name: "p5", Type: "internal", OFPort: 5}}})
	return n.govs, []ctlSwitch{
		{"govs", "unix:" + filepath.Join(n.rundir, "br-int.mgmt"), n.rundir, "br-int"},
		{"ovs", o.Target(), filepath.Dir(o.MgmtSocket()), o.Bridge()},
	}
}

const ctlGroups = "group_id=5,type=select,bucket=weight:100,actions=load:0xa0a0002->NXM_NX_REG3[],resubmit(,42),bucket=weight:50,actions=load:0xa0a0003->NXM_NX_REG3[],resubmit(,42)\n" +
	"# a comment between groups\n" +
	"group_id=7,type=all,bucket=actions=resubmit(,40)\n"

// ctlScript is the sequence of modifications both tools run.
func ctlScript(flowsFile, groupsFile string, bundle bool) [][]string {
	addFlows := []string{"add-flows", flowsFile}
	if bundle {
		addFlows = []string{"--bundle", "add-flows", flowsFile}
	}
	return [][]string{
		{"add-groups", groupsFile},
		addFlows,
		{"add-flow", "table=41,priority=300,ip,nw_dst=10.96.0.10 actions=group:5"},
		{"add-flow", "table=41,priority=301,ip,nw_dst=10.96.0.11 actions=group:7"},
		{"mod-flows", "table=31,ip actions=resubmit(,40)"},
		{"--strict", "mod-flows", "table=10,priority=0 actions=resubmit(,20)"},
		{"del-flows", "table=70,ip,nw_dst=10.222.0.0/16"},
		{"--strict", "del-flows", "table=110,priority=0"},
		{"del-flows", "cookie=0x1030000000000/-1"},
	}
}

// runCtl runs one step with `govs` or `ovs-ofctl` against sw in version v.
// govs addresses the bridge by name through --rundir.
func runCtl(t *testing.T, tool, govs string, sw ctlSwitch, v string, step []string) {
	t.Helper()
	if tool == "ovs-ofctl" {
		mustOfctl(t, sw.target, append([]string{"-O", v}, step...)...)
		return
	}
	// govs wants the command word first; options may follow anywhere.
	i := 0
	for i < len(step) && strings.HasPrefix(step[i], "-") {
		i++
	}
	args := []string{step[i]}
	args = append(args, step[:i]...)
	args = append(args, sw.bridge, "--rundir", sw.rundir, "-O", v)
	mustGovsCtl(t, govs, append(args, step[i+1:]...)...)
}

func resetSwitch(t *testing.T, sw ctlSwitch, v string) {
	t.Helper()
	mustOfctl(t, sw.target, "-O", v, "del-flows")
	mustOfctl(t, sw.target, "-O", v, "del-groups")
}

// TestGovsOfctlCommands: on a govs bridge and on Open vSwitch, for
// OpenFlow 1.0, 1.3 and 1.5, `govs add-tlv-map/add-groups/add-flows
// (plain and --bundle)/add-flow/mod-flows/del-flows` leave exactly the
// flow and group tables that the same ovs-ofctl commands leave (as dumped
// by the real ovs-ofctl), and `govs dump-flows --no-stats` and `govs
// dump-groups` print what ovs-ofctl prints.
func TestGovsOfctlCommands(t *testing.T) {
	govs, sws := ctlSwitches(t)
	dir := t.TempDir()
	groupsFile := filepath.Join(dir, "groups")
	if err := os.WriteFile(groupsFile, []byte(ctlGroups), 0o644); err != nil {
		t.Fatal(err)
	}
	flowsFile := filepath.Join(seeds.Dir(), "worker1.flows")
	for _, sw := range sws {
		t.Run(sw.name, func(t *testing.T) {
			// TLV map by govs (bridge name + --rundir), read back by both.
			mustGovsCtl(t, govs, "add-tlv-map", "--rundir", sw.rundir, sw.bridge, "{class=0x104,type=0x80,len=4}->tun_metadata0")
			want := mustOfctl(t, sw.target, "dump-tlv-map")
			got := mustGovsCtl(t, govs, "dump-tlv-map", "-O", "OpenFlow10", sw.target)
			if got != want {
				t.Errorf("govs dump-tlv-map differs from ovs-ofctl's:\n%s", lineDiff(got, want))
			}
			if !strings.Contains(want, "0x104  0x80       4  tun_metadata0") {
				t.Errorf("mapping not installed:\n%s", want)
			}
			for _, v := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
				for _, bundle := range []bool{false, true} {
					if bundle && v == "OpenFlow10" {
						continue // bundles need OpenFlow 1.3+
					}
					name := v
					if bundle {
						name += "/bundle"
					}
					t.Run(name, func(t *testing.T) {
						dumps := map[string][2]string{}
						for _, tool := range []string{"ovs-ofctl", "govs"} {
							resetSwitch(t, sw, v)
							for _, step := range ctlScript(flowsFile, groupsFile, bundle) {
								runCtl(t, tool, govs, sw, v, step)
							}
							flows := sortedLines(mustOfctl(t, sw.target, "-O", v, "dump-flows", "--no-stats"))
							groups := sortedLines(mustOfctl(t, sw.target, "-O", v, "dump-groups"))
							dumps[tool] = [2]string{flows, groups}
						}
						if g, o := dumps["govs"][0], dumps["ovs-ofctl"][0]; g != o || strings.Count(g, "\n") < 50 {
							t.Errorf("flow table after govs differs from after ovs-ofctl (%d lines):\n%s", strings.Count(o, "\n"), lineDiff(g, o))
						}
						if g, o := dumps["govs"][1], dumps["ovs-ofctl"][1]; g != o || !strings.Contains(o, "group_id=7") {
							t.Errorf("group table after govs differs from after ovs-ofctl:\n%s", lineDiff(g, o))
						}
						// The dump commands print what ovs-ofctl prints.
						for _, dump := range [][]string{
							{"dump-flows", "--no-stats"},
							{"dump-flows", "--no-stats", "table=41"},
							{"dump-flows", "--no-stats", "ip,nw_src=10.222.1.48"},
							{"dump-groups"},
						} {
							want := sortedLines(mustOfctl(t, sw.target, append([]string{"-O", v}, dump...)...))
							got := sortedLines(mustGovsCtl(t, govs, append([]string{dump[0], "-O", v, sw.target}, dump[1:]...)...))
							if got != want {
								t.Errorf("govs %s differs from ovs-ofctl's:\n%s", strings.Join(dump, " "), lineDiff(got, want))
							}
						}
						// With statistics: the same flows, each with counters.
						stats := mustGovsCtl(t, govs, "dump-flows", "-O", v, sw.target)
						lines := strings.Split(strings.TrimRight(stats, "\n"), "\n")
						if len(lines) != strings.Count(dumps["govs"][0], "\n")+2 { // header + flows
							t.Errorf("dump-flows with stats printed %d lines, want %d", len(lines), strings.Count(dumps["govs"][0], "\n")+2)
						}
						for _, l := range lines[1:] {
							if !strings.Contains(l, ", duration=") || !strings.Contains(l, "n_packets=0, n_bytes=0, ") {
								t.Errorf("flow without statistics: %q", l)
								break
							}
						}
					})
				}
			}
		})
	}
}

// TestGovsOfctlErrors: a flow that references a missing group is rejected
// with the flow's file and line and Open vSwitch's name for the OpenFlow
// error, by both switches; with --bundle nothing of the file is applied.
func TestGovsOfctlErrors(t *testing.T) {
	govs, sws := ctlSwitches(t)
	bad := filepath.Join(t.TempDir(), "bad.flows")
	content := "# first a good flow\ntable=5,priority=1,ip actions=drop\n\ntable=5,priority=2,ip actions=group:4242\ntable=5,priority=3,ip actions=drop\n"
	if err := os.WriteFile(bad, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sw := range sws {
		for _, v := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
			t.Run(sw.name+"/"+v, func(t *testing.T) {
				resetSwitch(t, sw, v)
				out, err := govsCtl(t, govs, "add-flows", "-O", v, sw.target, bad)
				if err == nil {
					t.Fatalf("add-flows with a missing group succeeded:\n%s", out)
				}
				for _, want := range []string{bad + ":4:", "group:4242", "OFPBAC_BAD_OUT_GROUP"} {
					if !strings.Contains(out, want) {
						t.Errorf("error %q does not mention %q", out, want)
					}
				}
				// Like ovs-ofctl: flows before the bad one stay, later ones are not sent.
				if got := sortedLines(mustOfctl(t, sw.target, "-O", v, "dump-flows", "--no-stats", "table=5")); got != " table=5, priority=1,ip actions=drop" {
					t.Errorf("table 5 after the failed add-flows:\n%s", got)
				}
				if v == "OpenFlow10" {
					return
				}
				resetSwitch(t, sw, v)
				out, err = govsCtl(t, govs, "add-flows", "--bundle", "-O", v, sw.target, bad)
				if err == nil || !strings.Contains(out, "OFPBAC_BAD_OUT_GROUP") {
					t.Errorf("--bundle add-flows with a missing group: %v\n%s", err, out)
				}
				// The switch reports the failing message (its own xid) before
				// failing the commit, so the line is known.
				if !strings.Contains(out, bad+":4:") {
					t.Errorf("--bundle add-flows error does not name line 4:\n%s", out)
				}
				if got := mustOfctl(t, sw.target, "-O", v, "dump-flows", "--no-stats", "table=5"); got != "" {
					t.Errorf("a failed bundle changed table 5:\n%s", got)
				}
			})
		}
	}
}

// TestGovsOfctlShowPortsTables: show, dump-ports, dump-tables and
// packet-out work against both switches and print what ovs-ofctl prints
// where it does not depend on timing.
func TestGovsOfctlShowPortsTables(t *testing.T) {
	govs, sws := ctlSwitches(t)
	for _, sw := range sws {
		for _, v := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
			t.Run(sw.name+"/"+v, func(t *testing.T) {
				resetSwitch(t, sw, v)
				mustGovsCtl(t, govs, "add-flow", "-O", v, sw.target, "table=3,priority=7,ip actions=drop")
				show := mustGovsCtl(t, govs, "show", "-O", v, sw.target)
				want := mustOfctl(t, sw.target, "-O", v, "show")
				// The first two lines (dpid, n_tables) are the same.
				if g, w := strings.SplitN(show, "\n", 3), strings.SplitN(want, "\n", 3); len(g) < 3 || g[0] != w[0] || g[1] != w[1] {
					t.Errorf("show:\n%s\nwant:\n%s", show, want)
				}
				if !strings.Contains(show, "\n 5(") || !strings.Contains(show, "     speed: ") {
					t.Errorf("show lacks port 5:\n%s", show)
				}
				ports := mustGovsCtl(t, govs, "dump-ports", "-O", v, sw.target, "5")
				if !strings.Contains(ports, "1 ports\n  port  5: rx pkts=") || !strings.Contains(ports, "           tx pkts=") {
					t.Errorf("dump-ports 5:\n%s", ports)
				}
				tables := mustGovsCtl(t, govs, "dump-tables", "-O", v, sw.target)
				if !strings.Contains(tables, "  table 3:\n    active=1, ") || !strings.Contains(tables, "ditto") {
					t.Errorf("dump-tables:\n%s", tables)
				}
				// packet-out in both syntaxes: a broadcast ARP from port 5,
				// dropped, and resubmitted to table 3 (which drops it).
				arp := "ffffffffffff000000000001080600010800060400010000000000010a000001000000000000" + "0a000002"
				mustGovsCtl(t, govs, "packet-out", "-O", v, sw.target, "5", "drop", arp)
				mustGovsCtl(t, govs, "packet-out", "-O", v, sw.target, "in_port=5 packet="+arp+" actions=resubmit(,3)")
				if out, err := govsCtl(t, govs, "packet-out", "-O", v, sw.target, "5", "drop", "0x1"); err == nil || !strings.Contains(out, "not hexadecimal") {
					t.Errorf("packet-out with a bad packet: %v\n%s", err, out)
				}
				// A packet-out to a missing group is rejected; the error is named.
				if v != "OpenFlow10" {
					if out, err := govsCtl(t, govs, "packet-out", "-O", v, sw.target, "5", "group:99", arp); err == nil || !strings.Contains(out, "OFPBAC_BAD_OUT_GROUP") {
						t.Errorf("packet-out to a missing group: %v\n%s", err, out)
					}
				}
			})
		}
	}
}
