package e2e

import (
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/ovstest"
)

// portsDescRE masks what differs between two switches by chance: a port's
// Ethernet address and the reply's xid.
var portsDescRE = regexp.MustCompile(`dpid:[0-9a-f]+|addr:[0-9a-f:]{17}|\(xid=0x[0-9a-f]+\)|\(OF[0-9.]+\)`)

// TestPortFeaturesMatchOVS: ports on devices whose drivers report
// different link settings show the same features and speeds in `ovs-ofctl
// show` (1.0) and `dump-ports-desc` (1.3, 1.5), and the same Interface
// link_speed, duplex, link_state and mtu, as on Open vSwitch 3.1: a veth
// (10 Gb/s full duplex, copper), a veth that is down, a TAP set to 1 Gb/s
// half duplex without autonegotiation, a Linux bridge (speed unknown,
// port "other"), a device without link settings (dummy, or ifb where the
// dummy module is missing), an internal port and a Geneve port. Then the
// TAP's speed changes: nothing is announced until a link notification
// (a new queue length) makes the switch read the device again, and then one
// PORT_STATUS MODIFY carries the new features, as OVS's update_port.
func TestPortFeaturesMatchOVS(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	run := func(vswitchd string) (views []string, status []string) {
		o := ovstest.Start(t, ovstest.Options{Vswitchd: vswitchd, FailMode: "secure"})
		sh := func(args ...string) {
			t.Helper()
			cmd := exec.Command("ip", append([]string{"netns", "exec", o.Netns()}, args...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v: %s", args, err, out)
			}
		}
		sh("ip", "link", "add", "pfv", "type", "veth", "peer", "name", "pfv-p")
		sh("ip", "link", "set", "pfv", "up")
		sh("ip", "link", "set", "pfv-p", "up")
		sh("ip", "link", "add", "pfdown", "type", "veth", "peer", "name", "pfdown-p")
		sh("ip", "tuntap", "add", "pft", "mode", "tap")
		sh("ethtool", "-s", "pft", "speed", "1000", "duplex", "half", "autoneg", "off")
		sh("ip", "link", "add", "pfbr", "type", "bridge")
		sh("ip", "link", "set", "pfbr", "up")
		// A dummy device, or an ifb (no ETHTOOL_GSET either) on a kernel
		// without the dummy module: the same kernel for both switches.
		if exec.Command("ip", "-n", o.Netns(), "link", "add", "pfns", "type", "dummy").Run() != nil {
			sh("ip", "link", "add", "pfns", "type", "ifb")
		}
		sh("ip", "link", "set", "pfns", "up")
		if err := o.AddFlow("OpenFlow13", "priority=0,actions=drop"); err != nil {
			t.Fatal(err)
		}
		for i, p := range []ovstest.Port{{Name: "pfv"}, {Name: "pfdown"}, {Name: "pft"}, {Name: "pfbr"}, {Name: "pfns"},
			{Name: "pfi", Type: "internal"},
			{Name: "pfg", Type: "geneve", Options: map[string]string{"remote_ip": "flow", "key": "flow"}}} {
			p.OFPort = i + 1
			if err := o.AddPort(p); err != nil {
				t.Fatal(err)
			}
		}
		view := func(withDB bool) string {
			var b strings.Builder
			for _, args := range [][]string{{"show"}, {"-O", "OpenFlow13", "dump-ports-desc"}, {"-O", "OpenFlow15", "dump-ports-desc"}} {
				out, err := o.Ofctl(args...)
				if err != nil {
					t.Fatalf("ovs-ofctl %v: %v: %s", args, err, out)
				}
				b.WriteString(portsDescRE.ReplaceAllString(out, ""))
			}
			if !withDB {
				return b.String()
			}
			out, err := o.Vsctl("--format=csv", "--columns=name,link_speed,duplex,link_state,admin_state,mtu", "list", "Interface")
			if err != nil {
				t.Fatalf("ovs-vsctl list Interface: %v: %s", err, out)
			}
			rows := strings.Split(strings.TrimSpace(out), "\n")
			sort.Strings(rows)
			b.WriteString(strings.Join(rows, "\n"))
			return b.String()
		}
		// The switches write Interface columns a little after adding the
		// port: wait until two looks agree.
		settled := func(withDB bool) string {
			last := view(withDB)
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
				time.Sleep(300 * time.Millisecond)
				v := view(withDB)
				if v == last {
					break
				}
				last = v
			}
			return last
		}
		views = append(views, settled(true))
		w := watchPortStatus(t, o)
		for _, step := range []struct {
			name string
			args []string
		}{
			{"TAP to 25 Gb/s full duplex (no link notification)", []string{"ethtool", "-s", "pft", "speed", "25000", "duplex", "full"}},
			{"TAP's queue length changed (a link notification)", []string{"ip", "link", "set", "pft", "txqueuelen", "600"}},
			{"TAP to 100 Mb/s with autonegotiation", []string{"ethtool", "-s", "pft", "speed", "100", "duplex", "full", "autoneg", "on"}},
			{"TAP up (a link notification)", []string{"ip", "link", "set", "pft", "up"}},
		} {
			sh(step.args...)
			status = append(status, step.name+"\n"+w.settle(t))
			views = append(views, step.name+"\n"+settled(false))
		}
		// Both switches write the state columns at a link notification,
		// not on the 5 s statistics interval: a moment is enough.
		time.Sleep(time.Second)
		views = append(views, "at the end\n"+settled(true))
		return views, status
	}
	wantViews, wantStatus := run("")
	gotViews, gotStatus := run(vswitchd)
	for _, want := range []string{"current:    1GB-HD COPPER", "speed: 1000 Mbps now", "10GB-FD COPPER"} {
		if !strings.Contains(wantViews[0], want) {
			t.Errorf("Open vSwitch's ports have no %q: the devices are not what this test means:\n%s", want, wantViews[0])
		}
	}
	// Open vSwitch announces nothing for the speed alone, then one MODIFY
	// per version at the next link notification.
	if n := strings.Count(wantStatus[0], "PORT_STATUS"); n != 0 {
		t.Errorf("Open vSwitch announced a speed change without a link notification:\n%s", wantStatus[0])
	}
	if n := strings.Count(wantStatus[1], "PORT_STATUS"); n != len(portStatusVersions) {
		t.Errorf("Open vSwitch sent %d port status, want one per monitor:\n%s", n, wantStatus[1])
	}
	t.Logf("Open vSwitch, every step:\n%s", strings.Join(wantStatus, "\n"))
	for i := range wantViews {
		if gotViews[i] != wantViews[i] {
			t.Errorf("ports differ: %s", lineDiff(gotViews[i], wantViews[i]))
			t.Logf("OVS:\n%s\ngovs:\n%s", wantViews[i], gotViews[i])
			break
		}
	}
	for i := range wantStatus {
		if gotStatus[i] != wantStatus[i] {
			t.Errorf("port status differs after %s", lineDiff(gotStatus[i], wantStatus[i]))
			t.Logf("OVS:\n%s\ngovs:\n%s", wantStatus[i], gotStatus[i])
			break
		}
	}
}
