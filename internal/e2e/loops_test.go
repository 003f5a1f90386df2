package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/internal/ovstest"
)

// arpHex is an ARP request from 00:00:00:00:00:01 for 10.0.0.2.
const arpHex = "ffffffffffff000000000001080600010800060400010000000000010a0000010000000000000a000002"

// TestGroupLoopsLikeOVS is issue 15.2 against the real daemon and Open
// vSwitch 3.1: group loops (1 -> 1, 2 -> 3 -> 2) are accepted at group-mod
// time by both (OVS 3.1 does not check chains for loops), and a packet
// that walks into one is dropped: a packet-out gets OFPFMFC_UNKNOWN, a
// packet through the pipeline (output:TABLE to a flow with group:2) too.
// govs used to overflow its stack and exit on either. (With a select
// group in the loop OVS recirculates first, so its packet-out succeeds and
// the drop happens in the later upcall; govs answers OFPFMFC_UNKNOWN.)
func TestGroupLoopsLikeOVS(t *testing.T) {
	n := startNode(t)
	n.mustRun("add-br", "br-int")
	o := ovstest.Start(t, ovstest.Options{})
	targets := map[string]string{
		"govs": "unix:" + filepath.Join(n.rundir, "br-int.mgmt"),
		"OVS":  o.Target(),
	}
	for name, target := range targets {
		for _, g := range []string{
			"group_id=1,type=all,bucket=actions=group:1",
			"group_id=2,type=all,bucket=actions=group:3",
			"group_id=3,type=all,bucket=actions=group:2",
		} {
			if out, err := ofctl(target, "-O", "OpenFlow13", "add-group", g); err != nil {
				t.Fatalf("%s: add-group %s: %v\n%s", name, g, err, out)
			}
		}
		mustOfctl(t, target, "-O", "OpenFlow13", "add-flow", "arp,actions=group:2")
		for _, acts := range []string{"group:1", "group:2", "output:TABLE"} {
			start := time.Now()
			out, err := ofctl(target, "-O", "OpenFlow13", "packet-out", "LOCAL", acts, arpHex)
			if err == nil || !strings.Contains(out+err.Error(), "OFPFMFC_UNKNOWN") {
				t.Errorf("%s: packet-out %s: got %v %s, want OFPFMFC_UNKNOWN", name, acts, err, out)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%s: packet-out %s took %v", name, acts, d)
			}
		}
		// The daemon is alive and still answers.
		if out := mustOfctl(t, target, "-O", "OpenFlow13", "dump-groups"); !strings.Contains(out, "group_id=1,type=all,bucket=actions=group:1") {
			t.Errorf("%s: dump-groups after the loops:\n%s", name, out)
		}
	}
	log, _ := os.ReadFile(filepath.Join(n.rundir, "govs-vswitchd.log"))
	if !strings.Contains(string(log), "packet dropped: translation failed (Recursion too deep)") {
		t.Errorf("govs log lacks the dropped-packet line:\n%s", log)
	}
}
