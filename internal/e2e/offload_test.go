package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/ovstest"
)

// offloadVswitchd is a govs-vswitchd that takes extra command-line
// options (ovstest starts the binary with ovs-vswitchd's command line).
func offloadVswitchd(t *testing.T, vswitchd string, extra ...string) string {
	t.Helper()
	if len(extra) == 0 {
		return vswitchd
	}
	script := filepath.Join(t.TempDir(), "govs-vswitchd")
	body := fmt.Sprintf("#!/bin/sh\nexec %s %s \"$@\"\n", vswitchd, strings.Join(extra, " "))
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// xdpProg is the id of the XDP program on a device of ns ("": none).
func xdpProg(t *testing.T, ns, dev string) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "link", "show", "dev", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("ip link show %s: %v: %s", dev, err, out)
	}
	if m := regexp.MustCompile(`prog/xdp id (\d+)`).FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

// offloadProg is the id of the kernel path's program on a device of ns
// ("": none): TCX ingress (veths) or XDP (other interfaces).
func offloadProg(t *testing.T, ns, dev string) string {
	t.Helper()
	if id := tcxProg(t, ns, dev); id != "" {
		return id
	}
	return xdpProg(t, ns, dev)
}

// waitOffload waits until dev has a program (want) or none (!want).
func waitOffload(t *testing.T, ns, dev string, want bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for (offloadProg(t, ns, dev) != "") != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: offload program attached %v, want %v", dev, !want, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// addVeths adds veth pairs named after names in ns, both ends up.
func addVeths(t *testing.T, ns string, names ...string) {
	t.Helper()
	for _, n := range names {
		for _, args := range [][]string{{"link", "add", n, "type", "veth", "peer", "name", n + "-p"},
			{"link", "set", n, "up"}, {"link", "set", n + "-p", "up"}} {
			if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("ip %v: %v: %s", args, err, out)
			}
		}
	}
}

// TestOffloadControl: the kernel path's mode comes from --offload, else
// from other_config:govs-offload (or hw-offload=true, as auto), else it
// is off; Interface other_config:govs-offload=false keeps one port out,
// and setting or removing it through ovs-vsctl detaches or attaches the
// program. What is checked is the kernel's view: whether the port's
// interface (a veth) carries the TCX program, and no XDP one.
func TestOffloadControl(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	for _, tc := range []struct {
		name        string
		flag        string
		otherConfig map[string]string
		want        bool
	}{
		{"default", "", nil, false},
		{"ovsdb-none", "", map[string]string{"govs-offload": "none"}, false},
		{"ovsdb-ebpf", "", map[string]string{"govs-offload": "ebpf"}, true},
		{"ovsdb-auto", "", map[string]string{"govs-offload": "auto"}, true},
		{"ovsdb-hw-offload", "", map[string]string{"hw-offload": "true"}, true},
		{"ovsdb-govs-key-wins", "", map[string]string{"hw-offload": "true", "govs-offload": "none"}, false},
		{"flag-auto", "--offload=auto", nil, true},
		{"flag-ebpf", "--offload=ebpf", nil, true},
		{"flag-wins-over-ovsdb", "--offload=none", map[string]string{"govs-offload": "ebpf"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ovstest.Start(t, ovstest.Options{Vswitchd: offloadVswitchd(t, vswitchd, tc.flag), OtherConfig: tc.otherConfig})
			addVeths(t, o.Netns(), "off1", "off2")
			if _, err := o.Vsctl("add-port", o.Bridge(), "off1"); err != nil {
				t.Fatal(err)
			}
			if _, err := o.Vsctl("add-port", o.Bridge(), "off2", "--", "set", "Interface", "off2", "other_config:govs-offload=false"); err != nil {
				t.Fatal(err)
			}
			waitOffload(t, o.Netns(), "off1", tc.want)
			if id := xdpProg(t, o.Netns(), "off1"); id != "" {
				t.Errorf("off1, a veth, has XDP program %s: want the tc path", id)
			}
			if offloadProg(t, o.Netns(), "off2") != "" {
				t.Errorf("off2 (other_config:govs-offload=false) has an offload program")
			}
			if !tc.want {
				return
			}
			// The per-port opt-out, set and removed on a running port.
			if _, err := o.Vsctl("set", "Interface", "off1", "other_config:govs-offload=false"); err != nil {
				t.Fatal(err)
			}
			waitOffload(t, o.Netns(), "off1", false)
			if _, err := o.Vsctl("remove", "Interface", "off1", "other_config", "govs-offload"); err != nil {
				t.Fatal(err)
			}
			waitOffload(t, o.Netns(), "off1", true)
			if _, err := o.Vsctl("remove", "Interface", "off2", "other_config", "govs-offload"); err != nil {
				t.Fatal(err)
			}
			waitOffload(t, o.Netns(), "off2", true)
		})
	}
}

// TestOffloadAutoAttachFails: in auto mode, ports whose interface the
// program cannot be attached to (another XDP program owns them; macvlans,
// which get XDP) are logged once and forward in userspace. A veth with
// another owner's XDP program gets the TCX program next to it (TCX takes
// several; the other program runs first). A change of the OVSDB key
// once bridges run takes effect at the next start, with a warning
// saying so.
func TestOffloadAutoAttachFails(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	o := ovstest.Start(t, ovstest.Options{Vswitchd: vswitchd, FailMode: "standalone",
		OtherConfig: map[string]string{"govs-offload": "auto"}})
	nsA, nsB := netnstest.NewNS(t), netnstest.NewNS(t)
	obj, err := filepath.Abs("../../datapath/offload/offload_bpfel.o")
	if err != nil {
		t.Fatal(err)
	}
	owned := map[string]string{}
	for _, v := range []struct {
		name string
		peer *netnstest.NS
		addr string
	}{{"busy1", nsA, "10.213.0.1/24"}, {"busy2", nsB, "10.213.0.2/24"}} {
		ip := func(ns string, args ...string) {
			t.Helper()
			if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("ip %v: %v: %s", args, err, out)
			}
		}
		// The port is a macvlan taking all of its veth's frames.
		ip(o.Netns(), "link", "add", v.name+"l", "type", "veth", "peer", "name", "p", "netns", v.peer.Name)
		ip(o.Netns(), "link", "add", v.name, "link", v.name+"l", "type", "macvlan", "mode", "passthru")
		ip(o.Netns(), "link", "set", v.name+"l", "up")
		ip(o.Netns(), "link", "set", v.name, "up")
		ip(v.peer.Name, "addr", "add", v.addr, "dev", "p")
		ip(v.peer.Name, "link", "set", "p", "up")
		// Another owner's XDP program (attached without a bpf_link):
		// the kernel refuses govs's link with EBUSY.
		ip(o.Netns(), "link", "set", "dev", v.name, "xdpgeneric", "obj", obj, "sec", "xdp")
		owned[v.name] = xdpProg(t, o.Netns(), v.name)
		if err := o.AddPort(ovstest.Port{Name: v.name}); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := nsA.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", "10.213.0.2"); err != nil {
		t.Fatalf("ping through the userspace path: %v\n%s", err, out)
	}
	// A veth with another owner's XDP program: the tc path goes next to it.
	addVeths(t, o.Netns(), "shared")
	if out, err := exec.Command("ip", "-n", o.Netns(), "link", "set", "dev", "shared", "xdpgeneric", "obj", obj, "sec", "xdp").CombinedOutput(); err != nil {
		t.Fatalf("attach the other owner's program: %v: %s", err, out)
	}
	owned["shared"] = xdpProg(t, o.Netns(), "shared")
	if err := o.AddPort(ovstest.Port{Name: "shared"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for tcxProg(t, o.Netns(), "shared") == "" {
		if time.Now().After(deadline) {
			t.Fatalf("the veth shared has no TCX program next to the other owner's XDP one:\n%s", o.VswitchdLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for name, id := range owned {
		if got := xdpProg(t, o.Netns(), name); got != id {
			t.Errorf("%s: XDP program %s, want the other owner's %s left in place", name, got, id)
		}
	}
	log := o.VswitchdLog()
	if n := strings.Count(log, "offload=auto: a port stays in userspace"); n != 1 {
		t.Errorf("the attach failure is logged at warn level %d times, want once:\n%s", n, log)
	}
	if _, err := o.Vsctl("set", "Open_vSwitch", ".", "other_config:govs-offload=none"); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for !strings.Contains(o.VswitchdLog(), "takes effect when govs-vswitchd restarts") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning that other_config:govs-offload needs a restart:\n%s", o.VswitchdLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
