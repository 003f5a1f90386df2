package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/govs-project/govs/internal/ovstest"
	"github.com/govs-project/govs/internal/seeds"
)

// ofctl runs ovs-ofctl against a target and returns stdout (stderr on error).
func ofctl(target string, args ...string) (string, error) {
	full := withTarget(target, args)
	cmd := exec.Command("ovs-ofctl", full...)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return string(ee.Stderr), fmt.Errorf("ovs-ofctl %s: %w: %s", strings.Join(full, " "), err, ee.Stderr)
		}
		return "", err
	}
	return string(out), nil
}

func sortedLines(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// dual runs the same ovs-ofctl commands against govs and real Open
// vSwitch and compares what they print.
type dual struct {
	t         *testing.T
	govs, ovs string // targets
}

func (d *dual) both(args ...string) (string, string) {
	d.t.Helper()
	g, gerr := ofctl(d.govs, args...)
	o, oerr := ofctl(d.ovs, args...)
	if (gerr == nil) != (oerr == nil) {
		d.t.Fatalf("ovs-ofctl %s: govs err=%v, OVS err=%v\ngovs: %s\novs: %s", strings.Join(args, " "), gerr, oerr, g, o)
	}
	return g, o
}

// same runs a command on both and requires identical (sorted) output.
func (d *dual) same(args ...string) {
	d.t.Helper()
	g, o := d.both(args...)
	if sortedLines(g) != sortedLines(o) {
		d.t.Errorf("ovs-ofctl %s differs:\n%s", strings.Join(args, " "), lineDiff(g, o))
	}
}

// lineDiff lists the lines only govs printed (+) and only OVS printed (-).
func lineDiff(govs, ovs string) string {
	count := map[string]int{}
	for _, l := range strings.Split(strings.TrimRight(ovs, "\n"), "\n") {
		count[l]++
	}
	var only []string
	for _, l := range strings.Split(strings.TrimRight(govs, "\n"), "\n") {
		if count[l] > 0 {
			count[l]--
		} else {
			only = append(only, "+ "+l)
		}
	}
	for l, n := range count {
		for ; n > 0; n-- {
			only = append(only, "- "+l)
		}
	}
	sort.Strings(only)
	return strings.Join(only, "\n")
}

// ok runs a command on both, requiring success.
func (d *dual) ok(args ...string) {
	d.t.Helper()
	if out, err := ofctl(d.govs, args...); err != nil {
		d.t.Fatalf("govs: %v\n%s", err, out)
	}
	if out, err := ofctl(d.ovs, args...); err != nil {
		d.t.Fatalf("OVS: %v\n%s", err, out)
	}
}

func newDual(t *testing.T) *dual {
	n := startNode(t)
	n.mustRun("add-br", "br-int")
	o := ovstest.Start(t, ovstest.Options{})
	return &dual{t: t, govs: "unix:" + filepath.Join(n.rundir, "br-int.mgmt"), ovs: o.Target()}
}

// TestTLVOptionSpaceMatchesOVS: the tun_metadata option space is OVS's 256
// bytes: two 124-byte options and an 8-byte one fill it, one more byte is
// NXTTMFC_TABLE_FULL; flows match and move the last bytes of the space;
// 64 four-byte mappings fit. dump-tlv-map, the errors and dump-flows are
// what Open vSwitch prints.
func TestTLVOptionSpaceMatchesOVS(t *testing.T) {
	d := newDual(t)
	steps := [][]string{
		{"del-flows"},
		{"add-tlv-map", "{class=0x104,type=0x80,len=124}->tun_metadata0,{class=0x104,type=0x81,len=124}->tun_metadata1"},
		{"add-tlv-map", "{class=0xffff,type=0x82,len=8}->tun_metadata2"},
		{"dump-tlv-map"},
		{"add-tlv-map", "{class=0x104,type=0x83,len=4}->tun_metadata3"},
		{"dump-tlv-map"},
		{"add-flow", "table=0,priority=10,tun_metadata2=0x1122334455667788/0xffffffff00000000 actions=move:NXM_NX_TUN_METADATA2[0..31]->NXM_NX_REG0[],set_field:0xab->tun_metadata1[0..7],resubmit(,1)"},
		{"add-flow", "table=0,priority=11,tun_metadata1=0x42 actions=drop"},
		{"dump-flows", "--no-stats"},
		{"del-flows"},
		{"del-tlv-map"},
	}
	var all []string
	for i := 0; i < 64; i++ {
		all = append(all, fmt.Sprintf("{class=0x%x,type=%d,len=4}->tun_metadata%d", 0x100+i/8, i%8, i))
	}
	steps = append(steps,
		[]string{"add-tlv-map", strings.Join(all, ",")},
		[]string{"dump-tlv-map"},
		[]string{"add-flow", "table=0,tun_metadata63=7 actions=move:NXM_NX_TUN_METADATA63[]->NXM_NX_REG1[]"},
		[]string{"dump-flows", "--no-stats"})
	for _, args := range steps {
		g, o := d.both(args...)
		g = strings.ReplaceAll(g, d.govs, "TARGET")
		o = strings.ReplaceAll(o, d.ovs, "TARGET")
		if sortedLines(g) != sortedLines(o) {
			t.Errorf("ovs-ofctl %s differs:\n%s", strings.Join(args, " "), lineDiff(g, o))
		}
		if args[0] == "dump-tlv-map" && !strings.Contains(o, "max option space=256") {
			t.Errorf("OVS dump-tlv-map: %s", o)
		}
	}
}

// TestOfctlSeedFlowsMatchOVS: with ovs-ofctl in OpenFlow 1.0, 1.3 and 1.5,
// add-tlv-map, add-groups and add-flows of every seed file, then
// dump-flows and dump-groups: govs prints exactly what Open vSwitch
// prints; then mod-flows, del-flows by cookie and by match, --strict.
func TestOfctlSeedFlowsMatchOVS(t *testing.T) {
	d := newDual(t)
	d.ok("add-tlv-map", "{class=0x104,type=0x80,len=4}->tun_metadata0")
	d.same("dump-tlv-map")
	for _, name := range []string{"worker1", "worker2", "antrea-reference"} {
		file := filepath.Join(seeds.Dir(), name+".flows")
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var groups []string
		for _, l := range strings.Split(string(data), "\n") {
			if g, ok := strings.CutPrefix(l, "# group: "); ok {
				groups = append(groups, g)
			}
		}
		for _, v := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
			t.Run(name+"/"+v, func(t *testing.T) {
				d.t = t
				d.ok("-O", v, "del-flows")
				d.ok("-O", v, "del-groups")
				if len(groups) > 0 {
					gf := filepath.Join(t.TempDir(), "groups")
					os.WriteFile(gf, []byte(strings.Join(groups, "\n")+"\n"), 0o644)
					d.ok("-O", v, "add-groups", gf)
				}
				d.ok("-O", v, "add-flows", file)
				d.same("-O", v, "dump-flows", "--no-stats")
				d.same("-O", v, "dump-groups")
				d.same("-O", v, "dump-flows", "--no-stats", "table=70")
				d.same("-O", v, "dump-flows", "--no-stats", "ip,nw_src=10.222.1.48")
				d.same("-O", v, "dump-aggregate")
				d.ok("-O", v, "mod-flows", "table=31,ip actions=resubmit(,40)")
				d.ok("-O", v, "--strict", "mod-flows", "table=10,priority=0 actions=resubmit(,20)")
				d.same("-O", v, "dump-flows", "--no-stats")
				d.ok("-O", v, "del-flows", "cookie=0x1050000000000/-1")
				d.ok("-O", v, "--strict", "del-flows", "table=110,priority=0")
				d.ok("-O", v, "del-flows", "table=70,ip,nw_dst=10.222.0.0/16")
				d.same("-O", v, "dump-flows", "--no-stats")
			})
		}
	}
}

// TestOfctlBundle: --bundle add-flows of 10,000 flows is atomic and ends
// with the same table as in Open vSwitch; a bundle with one bad flow
// changes nothing.
func TestOfctlBundle(t *testing.T) {
	d := newDual(t)
	var b strings.Builder
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&b, "table=%d,priority=%d,ip,nw_src=10.%d.%d.%d actions=load:%#x->NXM_NX_REG1[],goto_table:%d\n",
			i%3, 100+i%50, i/65536, i/256%256, i%256, i, 10+i%3)
	}
	f := filepath.Join(t.TempDir(), "many.flows")
	os.WriteFile(f, []byte(b.String()), 0o644)
	for _, v := range []string{"OpenFlow13", "OpenFlow15"} {
		d.ok("-O", v, "del-flows")
		d.ok("-O", v, "--bundle", "add-flows", f)
		d.same("-O", v, "dump-aggregate")
		g, o := d.both("-O", v, "dump-flows", "--no-stats", "table=1")
		if sortedLines(g) != sortedLines(o) {
			t.Errorf("%s: table 1 differs after the bundle", v)
		}
		bad := filepath.Join(t.TempDir(), "bad.flows")
		os.WriteFile(bad, []byte("table=5,priority=1,ip actions=drop\ntable=5,priority=2,ip actions=group:4242\n"), 0o644)
		gout, gerr := ofctl(d.govs, "-O", v, "--bundle", "add-flows", bad)
		oout, oerr := ofctl(d.ovs, "-O", v, "--bundle", "add-flows", bad)
		if gerr == nil || oerr == nil {
			t.Errorf("%s: bundle with a missing group accepted: govs %v / OVS %v", v, gerr, oerr)
		}
		t.Logf("govs: %s\novs: %s", gout, oout)
		d.same("-O", v, "dump-flows", "--no-stats", "table=5")
	}
}
