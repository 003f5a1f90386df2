package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/bench/antreagen"
)

// TestAntreaScaleMatchesOVS loads a small generated Antrea v1.15-shaped
// pipeline (bench/antreagen) into govs and into Open vSwitch with
// `ovs-ofctl -O OpenFlow15 add-groups` and `--bundle add-flows`: both
// accept every line and print the same flows and groups, also filtered
// by table and by match.
func TestAntreaScaleMatchesOVS(t *testing.T) {
	d := newDual(t)
	p := antreagen.Generate(antreagen.Small())
	dir := t.TempDir()
	flows, groups := filepath.Join(dir, "antrea.flows"), filepath.Join(dir, "antrea.groups")
	if err := os.WriteFile(flows, []byte(p.Flows), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(groups, []byte(p.Groups), 0o644); err != nil {
		t.Fatal(err)
	}
	const v = "OpenFlow15"
	d.ok("-O", v, "add-groups", groups)
	d.ok("-O", v, "--bundle", "add-flows", flows)
	g, _ := d.both("-O", v, "dump-flows", "--no-stats")
	if n := strings.Count(g, "\n"); n != p.NumFlows {
		t.Errorf("govs dumps %d flows, the generator wrote %d", n, p.NumFlows)
	}
	d.same("-O", v, "dump-flows", "--no-stats")
	d.same("-O", v, "dump-groups")
	d.same("-O", v, "dump-aggregate")
	d.same("-O", v, "dump-flows", "--no-stats", "table=24")
	d.same("-O", v, "dump-flows", "--no-stats", "ip,nw_src="+antreagen.IP(p.Pods[0].IP))
	// Every generated line is printed back by OVS exactly as written (the
	// generator writes what Antrea's flows look like in a dump).
	_, o := d.both("-O", v, "dump-flows", "--no-stats")
	if got, want := sortedLines(strings.ReplaceAll(o, "\n ", "\n")[1:]), sortedLines(p.Flows); got != want {
		t.Errorf("OVS prints the generated flows differently:\n%s", lineDiff(want, got))
	}
}
