package appctl

import (
	"regexp"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/govs-project/govs/internal/vswitchd"
)

func testApp(t *testing.T) *App {
	d := vswitchd.New(t.TempDir(), zap.NewNop())
	t.Cleanup(func() { d.Close() })
	if err := d.AddBridge(vswitchd.BridgeConfig{Name: "br-int"}); err != nil {
		t.Fatal(err)
	}
	return New(d, NewVLog(), nil)
}

// TestListCommandsMatchOVS: every command govs serves has the name and
// usage Open vSwitch 3.1 lists (golden 11), printed in its layout.
func TestListCommandsMatchOVS(t *testing.T) {
	golden := goldenFile(t, "11-appctl-list-commands.txt")
	ovs := map[string]string{}
	line := regexp.MustCompile(`^  (\S+) +(.*)$`)
	for _, l := range strings.Split(golden, "\n")[1:] {
		if m := line.FindStringSubmatch(l); m != nil {
			ovs[m[1]] = strings.TrimSpace(m[2])
		}
	}
	a := testApp(t)
	out := a.Server.ListCommands()
	if !strings.HasPrefix(out, "The available commands are:\n") {
		t.Fatalf("header: %q", out)
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("line %q not in OVS's layout", l)
			continue
		}
		usage, ok := ovs[m[1]]
		if !ok {
			t.Errorf("%s: not an ovs-vswitchd command", m[1])
			continue
		}
		if strings.TrimSpace(m[2]) != usage {
			t.Errorf("%s usage %q, OVS %q", m[1], m[2], usage)
		}
		// The name column is 24 wide, as OVS prints it.
		if len(m[1]) < 23 && !strings.HasPrefix(l, "  "+m[1]+strings.Repeat(" ", 24-len(m[1]))) {
			t.Errorf("%q: name not padded to 24 columns", l)
		}
		n++
	}
	if n < 25 {
		t.Errorf("only %d commands", n)
	}
}

// TestDPFeaturesMatchOVS: dpif/show-dp-features prints OVS's keys in
// OVS's order (golden 12) with Yes for everything Antrea's agent checks.
func TestDPFeaturesMatchOVS(t *testing.T) {
	sections := goldenSections(t, "12-appctl-basic-outputs.txt")
	want := sections["ovs-appctl dpif/show-dp-features br-int"]
	a := testApp(t)
	got, errText := a.Server.Execute("dpif/show-dp-features", []string{"br-int"})
	if errText != "" {
		t.Fatal(errText)
	}
	keys := func(s string) []string {
		var ks []string
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			k, _, _ := strings.Cut(l, ": ")
			ks = append(ks, k)
		}
		return ks
	}
	if strings.Join(keys(got), "|") != strings.Join(keys(want), "|") {
		t.Errorf("keys:\n%s\nwant\n%s", got, want)
	}
	for _, k := range []string{"CT state", "CT zone", "CT mark", "CT label", "CT state NAT"} {
		if !strings.Contains(got, "\n"+k+": Yes\n") {
			t.Errorf("%s is not Yes (Antrea's agent refuses to start)", k)
		}
	}
	for _, tc := range []struct{ cmd, want string }{
		{"dpif/show-dp-features", "no such bridge\n"}, {"fdb/show", "no such bridge\n"},
		{"bridge/dump-flows", "Unknown bridge\n"}, {"ofproto/trace", "nosuchbr: unknown bridge\n"},
	} {
		args := []string{"nosuchbr"}
		if tc.cmd == "ofproto/trace" {
			args = append(args, "in_port=1")
		}
		if _, errText := a.Server.Execute(tc.cmd, args); errText != tc.want {
			t.Errorf("%s nosuchbr: %q, want %q", tc.cmd, errText, tc.want)
		}
	}
}

// TestBasicOutputsMatchOVS: outputs that are deterministic on an empty
// bridge equal golden 12/15/17's.
func TestBasicOutputsMatchOVS(t *testing.T) {
	g12 := goldenSections(t, "12-appctl-basic-outputs.txt")
	g17 := goldenSections(t, "17-appctl-conntrack-zone-mark-label.txt")
	a := testApp(t)
	for _, tc := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"ofproto/list"}, g12["ovs-appctl ofproto/list"]},
		{[]string{"fdb/show", "br-int"}, g12["ovs-appctl fdb/show br-int"]},
		{[]string{"dpctl/ct-get-limits", "zone=65520"}, g17["ovs-appctl dpctl/ct-get-limits zone=65520"]},
		{[]string{"version"}, "ovs-vswitchd (Open vSwitch) 3.1.0\ngovs " + GovsVersion() + "\n"},
	} {
		got, errText := a.Server.Execute(tc.cmd[0], tc.cmd[1:])
		want := strings.TrimRight(tc.want, "\n") + "\n" // the golden's blank separator line
		if errText != "" || got != want {
			t.Errorf("%v: %q %q, want %q", tc.cmd, got, errText, want)
		}
	}
	if !strings.HasPrefix(g12["ovs-appctl version"], "ovs-vswitchd (Open vSwitch) 3.1.0\n") {
		t.Errorf("golden version line changed: %q", g12["ovs-appctl version"])
	}
}
