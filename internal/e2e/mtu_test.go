package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/ovstest"
)

// TestInternalPortMTUMatchesOVS changes the MTU of a bridge's ports the
// ways a user does (ip link, Interface mtu_request, adding and removing
// ports) and compares, after each step, the MTU Open vSwitch 3.1 and govs
// leave on every device and write to Interface.mtu: internal ports
// without mtu_request follow the smallest MTU of the other ports
// (ofproto.c update_mtu_ofproto), one with mtu_request keeps it. It also
// times how long the Interface state columns take to show a link change:
// OVS writes them at once, not on the statistics interval.
func TestInternalPortMTUMatchesOVS(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	type result struct {
		views  []string
		delays map[string]time.Duration
	}
	run := func(vswitchd string) result {
		res := result{delays: map[string]time.Duration{}}
		o := ovstest.Start(t, ovstest.Options{Vswitchd: vswitchd, FailMode: "secure"})
		sh := func(args ...string) string {
			t.Helper()
			out, err := exec.Command("ip", append([]string{"netns", "exec", o.Netns()}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v: %s", args, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		vsctl := func(args ...string) string {
			t.Helper()
			out, err := o.Vsctl(args...)
			if err != nil {
				t.Fatalf("ovs-vsctl %v: %v: %s", args, err, out)
			}
			return strings.TrimSpace(out)
		}
		sh("ip", "link", "add", "mtuv", "type", "veth", "peer", "name", "mtuv-p")
		sh("ip", "link", "set", "mtuv", "up")
		sh("ip", "link", "set", "mtuv-p", "up")
		sh("ip", "tuntap", "add", "mtut", "mode", "tap")
		for _, p := range []ovstest.Port{{Name: "mtuv"}, {Name: "mtui", Type: "internal"}, {Name: "mtuj", Type: "internal"}} {
			if err := o.AddPort(p); err != nil {
				t.Fatal(err)
			}
		}
		vsctl("set", "Interface", "mtuj", "mtu_request=1600")
		// Every device's MTU in the kernel and in Interface.mtu.
		view := func() string {
			var b strings.Builder
			for _, name := range []string{o.Bridge(), "mtui", "mtuj", "mtuv", "mtut"} {
				kernel, db := "-", "-"
				if out, err := exec.Command("ip", "netns", "exec", o.Netns(), "cat", "/sys/class/net/"+name+"/mtu").Output(); err == nil {
					kernel = strings.TrimSpace(string(out))
				}
				if out, err := o.Vsctl("--if-exists", "get", "Interface", name, "mtu"); err == nil {
					db = strings.TrimSpace(out)
				}
				fmt.Fprintf(&b, "%s: ip link mtu %s, Interface mtu %s\n", name, kernel, db)
			}
			return b.String()
		}
		settled := func() string {
			last := view()
			for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); {
				time.Sleep(400 * time.Millisecond)
				v := view()
				if v == last {
					break
				}
				last = v
			}
			return last
		}
		// until times how long an Interface column takes to show want.
		until := func(what, iface, col, want string) {
			start := time.Now()
			for time.Since(start) < 10*time.Second {
				if out, err := o.Vsctl("get", "Interface", iface, col); err == nil && strings.TrimSpace(out) == want {
					res.delays[what] = time.Since(start)
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
			res.delays[what] = -1
		}
		res.views = append(res.views, "ports added\n"+settled())
		for _, step := range []struct {
			name string
			do   func()
		}{
			{"veth to 1400 with ip link", func() {
				sh("ip", "link", "set", "mtuv", "mtu", "1400")
				until("mtu 1400 by ip link", "mtuv", "mtu", "1400")
			}},
			{"TAP added", func() { vsctl("add-port", o.Bridge(), "mtut") }},
			{"TAP to 1300 with mtu_request", func() { vsctl("set", "Interface", "mtut", "mtu_request=1300") }},
			{"internal port raised with ip link", func() { sh("ip", "link", "set", "mtui", "mtu", "1500") }},
			{"internal port lowered with ip link", func() { sh("ip", "link", "set", "mtui", "mtu", "1200") }},
			{"mtu_request of the internal port removed", func() { vsctl("remove", "Interface", "mtuj", "mtu_request", "1600") }},
			{"TAP removed", func() { vsctl("del-port", o.Bridge(), "mtut") }},
			{"veth down", func() {
				sh("ip", "link", "set", "mtuv", "down")
				until("admin_state down", "mtuv", "admin_state", "down")
			}},
			{"veth up, peer down", func() {
				sh("ip", "link", "set", "mtuv-p", "down")
				sh("ip", "link", "set", "mtuv", "up")
				until("link_state down", "mtuv", "link_state", "down")
			}},
			{"veth removed", func() { vsctl("del-port", o.Bridge(), "mtuv") }},
		} {
			step.do()
			res.views = append(res.views, step.name+"\n"+settled())
		}
		return res
	}
	want := run("")
	got := run(vswitchd)
	if !strings.Contains(want.views[1], "mtui: ip link mtu 1400, Interface mtu 1400") {
		t.Errorf("Open vSwitch did not give the internal port the veth's MTU: the rule is not what this test means:\n%s", want.views[1])
	}
	t.Logf("Open vSwitch, every step:\n%s", strings.Join(want.views, "\n"))
	for i := range want.views {
		if got.views[i] != want.views[i] {
			t.Errorf("MTUs differ after %s", lineDiff(got.views[i], want.views[i]))
			t.Logf("OVS:\n%s\ngovs:\n%s", want.views[i], got.views[i])
		}
	}
	for what, d := range want.delays {
		t.Logf("%s shown in Interface: Open vSwitch %v, govs %v", what, d, got.delays[what])
		if g := got.delays[what]; g < 0 || g > time.Second {
			t.Errorf("%s: govs took %v to write it (Open vSwitch %v), want within 1 s", what, g, d)
		}
	}
}
