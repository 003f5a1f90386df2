package e2e

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// received returns what `ovs-ofctl -vvconn ARGS` logged as received, one
// line per message with its first body line, the xids and the peer
// removed: the sequence of replies the switch sent.
func received(t *testing.T, target string, args ...string) []string {
	t.Helper()
	out, err := ofctlStderr(target, append([]string{"-vvconn"}, args...)...)
	if err != nil {
		t.Fatalf("ovs-ofctl -vvconn %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	xid := regexp.MustCompile(`\(xid=0x[0-9a-f]+\)`)
	lines := strings.Split(out, "\n")
	var msgs []string
	for i, l := range lines {
		_, msg, ok := strings.Cut(l, "received: ")
		if !ok {
			continue
		}
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], " ") {
			msg += " |" + lines[i+1]
		}
		msgs = append(msgs, xid.ReplaceAllString(msg, ""))
	}
	return msgs
}

// TestOfctlRepliesMatchOVS (issue 17.6): the replies Antrea and ovs-ofctl
// see, compared with Open vSwitch on the same commands: dump-groups and
// dump-group-stats of one group id, the FEATURES_REPLY capabilities
// (BUNDLES from 1.4), the group features capabilities, bundle replies
// without flags, dump-tables in one reply and the table features in as
// many replies as OVS sends (Antrea sizes a channel on it).
func TestOfctlRepliesMatchOVS(t *testing.T) {
	d := newDual(t)
	for _, g := range []string{"9", "10"} {
		d.ok("-O", "OpenFlow15", "add-group", "group_id="+g+",type=all,bucket=actions=drop")
	}
	duration := regexp.MustCompile(`duration=[0-9.]+s,`)
	for _, v := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
		if v != "OpenFlow13" { // 1.3 group desc requests carry no group id
			d.same("-O", v, "dump-groups", "9")
			d.same("-O", v, "dump-groups", "11")
		}
		g, o := d.both("-O", v, "dump-group-stats", "group_id=9")
		if duration.ReplaceAllString(g, "") != duration.ReplaceAllString(o, "") {
			t.Errorf("%s dump-group-stats group_id=9:\n%s", v, lineDiff(g, o))
		}
		g, o = d.both("-O", v, "show")
		capabilities := regexp.MustCompile(`(?m)^capabilities:.*$`)
		if gc, oc := capabilities.FindString(g), capabilities.FindString(o); gc != oc || gc == "" {
			t.Errorf("%s show: govs %q, OVS %q", v, gc, oc)
		}
		for _, args := range [][]string{{"dump-tables"}, {"dump-table-features"}, {"--bundle", "add-flow", "table=3,actions=drop"}} {
			if v == "OpenFlow10" && args[0] != "dump-tables" {
				continue
			}
			full := append([]string{"-O", v}, args...)
			gr, or := received(t, d.govs, full...), received(t, d.ovs, full...)
			if args[0] == "--bundle" {
				// The bundle replies; ovs-ofctl also reads the port
				// descriptions, where govs's bridge lacks OVS's LOCAL port.
				gr, or = bundleReplies(gr), bundleReplies(or)
				if len(gr) != 2 {
					t.Errorf("%s bundle: replies %q", v, gr)
				}
			}
			if len(gr) != len(or) {
				t.Errorf("%s %v: govs sent %d messages, OVS %d", v, args, len(gr), len(or))
				continue
			}
			for i := range gr {
				if gr[i] != or[i] && !strings.Contains(args[0], "table") {
					t.Errorf("%s %v message %d: govs %q, OVS %q", v, args, i, gr[i], or[i])
				}
			}
		}
	}
	d.same("-O", "OpenFlow13", "dump-group-features")
}

// ofctlStderr is ofctl returning stdout and stderr together (-vvconn logs
// to stderr).
func ofctlStderr(target string, args ...string) (string, error) {
	out, err := exec.Command("ovs-ofctl", withTarget(target, args)...).CombinedOutput()
	return string(out), err
}

// withTarget puts the target after the command word (after any options).
func withTarget(target string, args []string) []string {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if args[i] == "-O" {
			i++
		}
		i++
	}
	return append(append(append([]string{}, args[:i+1]...), target), args[i+1:]...)
}

func bundleReplies(msgs []string) []string {
	var out []string
	for _, m := range msgs {
		if strings.Contains(m, "BUNDLE_CONTROL") {
			out = append(out, m)
		}
	}
	return out
}

// TestOfctlMetersMatchOVS (issue 17.3): meter-mods, their errors, flows
// naming meters, dump-meters, meter-stats and meter-features print as with
// Open vSwitch's userspace datapath; deleting a meter deletes its flows.
func TestOfctlMetersMatchOVS(t *testing.T) {
	d := newDual(t)
	duration := regexp.MustCompile(`duration:[0-9.]+s`)
	// firstLine compares what ovs-ofctl printed first: the error name of a
	// refused request (OVS quotes the whole request after it, govs 64 bytes).
	firstLine := func(args ...string) {
		t.Helper()
		g, _ := ofctlStderr(d.govs, args...)
		o, _ := ofctlStderr(d.ovs, args...)
		g, _, _ = strings.Cut(g, "\n")
		o, _, _ = strings.Cut(o, "\n")
		if g != o {
			t.Errorf("ovs-ofctl %s: govs %q, OVS %q", strings.Join(args, " "), g, o)
		}
	}
	stats := func(args ...string) {
		t.Helper()
		g, o := d.both(args...)
		g, o = duration.ReplaceAllString(g, ""), duration.ReplaceAllString(o, "")
		if sortedLines(g) != sortedLines(o) {
			t.Errorf("ovs-ofctl %s differs:\n%s", strings.Join(args, " "), lineDiff(g, o))
		}
	}
	for _, v := range []string{"OpenFlow13", "OpenFlow15"} {
		d.ok("-O", v, "del-meters")
		d.ok("-O", v, "del-flows")
		d.same("-O", v, "meter-features")
		d.ok("-O", v, "add-meter", "meter=1,pktps,burst,stats,bands=type=drop,rate=500,burst_size=100")
		d.ok("-O", v, "add-meter", "meter=2,kbps,bands=type=drop,rate=1000")
		d.ok("-O", v, "add-meter", "meter=6,kbps,bands=type=drop,rate=5,type=drop,rate=7")
		firstLine("-O", v, "add-meter", "meter=3,kbps,bands=type=dscp_remark,rate=1000,prec_level=1")
		firstLine("-O", v, "add-meter", "meter=1,pktps,bands=type=drop,rate=5")
		firstLine("-O", v, "mod-meter", "meter=7,pktps,bands=type=drop,rate=5")
		firstLine("-O", v, "add-meter", "meter=all,kbps,bands=type=drop,rate=5")
		firstLine("-O", v, "add-flow", "table=2,actions=meter:9,output:1")
		d.ok("-O", v, "add-flow", "table=2,priority=3,actions=meter:1,output:1")
		d.ok("-O", v, "add-flow", "table=2,priority=4,actions=meter:2,output:1")
		d.ok("-O", v, "add-flow", "table=2,priority=5,actions=meter:2,output:2")
		d.ok("-O", v, "mod-meter", "meter=2,kbps,bands=type=drop,rate=2000")
		d.same("-O", v, "dump-meters")
		d.same("-O", v, "dump-meter", "meter=6")
		stats("-O", v, "meter-stats")
		stats("-O", v, "meter-stats", "meter=2")
		d.same("-O", v, "dump-flows", "--no-stats")
		d.ok("-O", v, "del-meter", "meter=2")
		d.ok("-O", v, "del-meter", "meter=55")
		d.same("-O", v, "dump-flows", "--no-stats")
		d.same("-O", v, "dump-meters")
		d.ok("-O", v, "del-meters")
		d.same("-O", v, "dump-flows", "--no-stats")
		d.same("-O", v, "dump-meters")
	}
}

// monitor runs `ovs-ofctl monitor TARGET watch:` while changes runs and
// returns what it printed (the initial reply and every update).
func monitor(t *testing.T, target, version string, changes func()) string {
	t.Helper()
	var out strings.Builder
	cmd := exec.Command("ovs-ofctl", "-O", version, "monitor", target, "watch:")
	// ovs-ofctl monitor opens a unixctl socket in its run directory.
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+t.TempDir())
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the monitor is set up
	changes()
	time.Sleep(500 * time.Millisecond) // the updates arrived
	cmd.Process.Kill()
	cmd.Wait()
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "20") { // log lines start with a date
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// TestOfctlMonitorMatchesOVS (issue 17.5): `ovs-ofctl monitor watch:` in
// OpenFlow 1.0 (NXST_FLOW_MONITOR), 1.3 (ONFST_FLOW_MONITOR) and 1.5
// (OFPMP_FLOW_MONITOR) prints
// the same initial flows and the same add, modify and delete events as
// with Open vSwitch for the same flow changes.
func TestOfctlMonitorMatchesOVS(t *testing.T) {
	d := newDual(t)
	for _, v := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
		d.ok("del-flows")
		d.ok("add-flow", "table=3,priority=7,ip,actions=output:1")
		run := func(target string) string {
			return monitor(t, target, v, func() {
				for _, args := range [][]string{
					{"add-flow", "table=3,priority=8,tcp,idle_timeout=9,actions=output:2"},
					{"mod-flows", "table=3,tcp,actions=output:3"},
					{"add-flow", "table=3,priority=8,tcp,actions=output:4"},
					{"add-flow", "table=4,priority=8,udp,actions=drop"},
					{"del-flows", "table=3,tcp"},
				} {
					if out, err := ofctl(target, append([]string{"-O", v}, args...)...); err != nil {
						t.Fatalf("%v: %v %s", args, err, out)
					}
				}
			})
		}
		g, o := run(d.govs), run(d.ovs)
		if g != o {
			t.Errorf("%s monitor differs:\ngovs:\n%s\nOVS:\n%s", v, g, o)
		}
		if !strings.Contains(g, "event=DELETED") {
			t.Errorf("%s monitor saw no delete:\n%s", v, g)
		}
	}
}
