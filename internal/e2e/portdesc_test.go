package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/ovstest"
)

// portDescBridge builds the same bridge on Open vSwitch or govs
// (vswitchd ""/path): internal ports up and down, veth ports whose peer is
// up, down, or whose own side is down, and a Geneve tunnel port.
func portDescBridge(t *testing.T, vswitchd string) *ovstest.OVS {
	o := ovstest.Start(t, ovstest.Options{Vswitchd: vswitchd, FailMode: "secure",
		Ports: []ovstest.Port{{Name: "int-up", Type: "internal", OFPort: 1}, {Name: "int-down", Type: "internal", OFPort: 2}}})
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", o.Netns()}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	ip("link", "set", "int-up", "up")
	for _, v := range []string{"vup", "vpeerdown", "vdown"} {
		ip("link", "add", v, "type", "veth", "peer", "name", v+"-p")
	}
	ip("link", "set", "vup", "up")
	ip("link", "set", "vup-p", "up")
	ip("link", "set", "vpeerdown", "up")
	ip("link", "set", "vdown-p", "up")
	for i, p := range []ovstest.Port{
		{Name: "vup", OFPort: 3}, {Name: "vpeerdown", OFPort: 4}, {Name: "vdown", OFPort: 5},
		{Name: "gnv0", Type: "geneve", OFPort: 6, Options: map[string]string{"remote_ip": "flow", "key": "flow"}},
	} {
		if err := o.AddPort(p); err != nil {
			t.Fatalf("port %d: %v", i, err)
		}
	}
	return o
}

// Per-port facts that differ between two runs by chance.
var portDescNoise = regexp.MustCompile(`addr:[0-9a-f:]{17}|\(xid=0x[0-9a-f]+\)`)

// portDescStates is dump-ports-desc reduced to each port's config,
// state, current features and speed lines.
func portDescStates(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "  "): // " 1(int-up): addr:..."
			fmt.Fprintln(&b, strings.TrimSpace(portDescNoise.ReplaceAllString(t, "")))
		case strings.HasPrefix(t, "config:"), strings.HasPrefix(t, "state:"), strings.HasPrefix(t, "current:"), strings.HasPrefix(t, "speed:"):
			fmt.Fprintln(&b, "    "+strings.Join(strings.Fields(t), " "))
		}
	}
	return b.String()
}

// TestPortDescStatesMatchOVS: dump-ports-desc says, in OpenFlow 1.0, 1.3
// and 1.5, what Open vSwitch says of each port: PORT_DOWN and LINK_DOWN for
// an internal or system port that is down, LINK_DOWN for a veth whose peer
// is down, LIVE for ports with a carrier and for tunnels.
func TestPortDescStatesMatchOVS(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	ovs := portDescBridge(t, "")
	govs := portDescBridge(t, vswitchd)
	for _, v := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
		want, err := ovs.Ofctl("-O", v, "dump-ports-desc")
		if err != nil {
			t.Fatal(err)
		}
		got, err := govs.Ofctl("-O", v, "dump-ports-desc")
		if err != nil {
			t.Fatal(err)
		}
		w, g := portDescStates(want), portDescStates(got)
		if w != g {
			t.Errorf("%s dump-ports-desc states differ:\n%s\nOVS:\n%s\ngovs:\n%s", v, lineDiff(g, w), w, g)
		}
		for _, must := range []string{"2(int-down):\n    config: PORT_DOWN\n    state: LINK_DOWN", "6(gnv0):\n    config: 0\n    state: LIVE"} {
			if v == "OpenFlow10" {
				must = strings.ReplaceAll(must, "LIVE", "0") // 1.0 has no LIVE
			}
			if !strings.Contains(w, must) {
				t.Errorf("%s: OVS says\n%s\nwithout %q", v, w, must)
			}
		}
	}
}
