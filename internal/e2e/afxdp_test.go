package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDaemonAFXDPPorts: govs-vswitchd forwards pings between two
// namespaces through a standalone bridge whose ports are type=afxdp (one
// per XDP mode), with port goroutines and with a PMD thread; the log says
// which mode bound, and bad options are refused with the option named.
func TestDaemonAFXDPPorts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{{"goroutines", nil}, {"pmd", []string{"--pmd"}}} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, tc.flags...)
			n.mustRun("add-br", "br0", "fail_mode=standalone")
			a := n.addPod(t, "10.232.0.1/24", "")
			b := n.addPod(t, "10.232.0.2/24", "")
			if out, err := n.run("add-port", "br0", a.veth.Host, "type=afxdp", "options:xdp-mode=turbo"); err == nil ||
				!strings.Contains(out, `options:xdp-mode="turbo"`) {
				t.Errorf("bad xdp-mode: %v %s", err, out)
			}
			if out, err := n.run("add-port", "br0", a.veth.Host, "type=afxdp", "options:queue=3"); err == nil ||
				!strings.Contains(out, `afxdp option "queue" not supported`) {
				t.Errorf("unknown option: %v %s", err, out)
			}
			n.mustRun("add-port", "br0", a.veth.Host, "type=afxdp", "options:xdp-mode=native")
			n.mustRun("add-port", "br0", b.veth.Host, "type=afxdp", "options:xdp-mode=generic")
			if show := n.mustRun("show"); strings.Count(show, "type: afxdp") != 2 {
				t.Errorf("show does not list two afxdp ports:\n%s", show)
			}
			for _, p := range []*pod{a, b} {
				other := b
				if p == b {
					other = a
				}
				if out, err := p.ns.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", other.ip); err != nil {
					t.Fatalf("ping %s through the afxdp bridge: %v\n%s", other.ip, err, out)
				}
			}
			log, err := os.ReadFile(filepath.Join(n.rundir, "govs-vswitchd.log"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"xdp-mode-in-use": "native"`, `"xdp-mode-in-use": "generic"`} {
				if !strings.Contains(string(log), want) {
					t.Errorf("daemon log lacks %s", want)
				}
			}
			n.mustRun("del-port", "br0", b.veth.Host)
			if out, err := a.ns.Exec("ping", "-c", "1", "-W", "1", b.ip); err == nil {
				t.Errorf("ping still works after del-port:\n%s", out)
			}
			// The deleted port's program is gone from the interface.
			if out := n.ns.MustExec(t, "ip", "link", "show", b.veth.Host); strings.Contains(out, "xdp") {
				t.Errorf("XDP program still attached after del-port:\n%s", out)
			}
		})
	}
}
