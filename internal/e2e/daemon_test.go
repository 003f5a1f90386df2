// Package e2e holds end-to-end tests: the real govs-vswitchd and govs
// binaries, run in network namespaces the tests create, with real
// interfaces and real tools (ip, ping, ovs-ofctl).
package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds govs and govs-vswitchd once per test binary run.
func binaries(t testing.TB) (govs, vswitchd string) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "govs-e2e-bin-")
		if buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", binDir+"/", "github.com/govs-project/govs/cmd/...").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	vswitchd = filepath.Join(binDir, "govs-vswitchd")
	// Another build of the daemon (an older one to compare with, or one
	// that serves profiles).
	if bin := os.Getenv("GOVS_E2E_VSWITCHD"); bin != "" {
		vswitchd = bin
	}
	return filepath.Join(binDir, "govs"), vswitchd
}

// node is a govs-vswitchd running inside its own network namespace.
type node struct {
	t      testing.TB
	ns     *netnstest.NS
	rundir string
	govs   string
	cmd    *exec.Cmd
	log    *os.File
}

// startNode starts govs-vswitchd in a new namespace; it is stopped and its
// log shown (on failure) at cleanup.
func startNode(t testing.TB, extra ...string) *node {
	t.Helper()
	netnstest.RequireRoot(t)
	govs, vswitchd := binaries(t)
	n := &node{t: t, ns: netnstest.NewNS(t), rundir: t.TempDir(), govs: govs}
	logPath := filepath.Join(n.rundir, "govs-vswitchd.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	n.log = f
	args := n.ns.Command(append([]string{vswitchd, "--rundir", n.rundir, "--log-level", "info"}, extra...)...)
	n.cmd = exec.Command(args[0], args[1:]...)
	n.cmd.Stdout, n.cmd.Stderr = f, f
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("starting govs-vswitchd: %v", err)
	}
	t.Cleanup(func() {
		n.cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- n.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			n.cmd.Process.Kill()
			<-done
		}
		f.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("govs-vswitchd log:\n%s", data)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(n.rundir, "govs-vswitchd.ctl")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("govs-vswitchd did not create its control socket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

// run runs `govs ARGS` against the node's daemon.
func (n *node) run(args ...string) (string, error) {
	cmd := exec.Command(n.govs, append([]string{args[0], "--rundir", n.rundir}, args[1:]...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (n *node) mustRun(args ...string) string {
	n.t.Helper()
	out, err := n.run(args...)
	if err != nil {
		n.t.Fatalf("govs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// pod is a namespace with one veth whose other end is in the node.
type pod struct {
	ns   *netnstest.NS
	veth *netnstest.Veth
	ip   string
}

func (n *node) addPod(t *testing.T, ipCIDR, mac string) *pod {
	t.Helper()
	ns := netnstest.NewNS(t)
	opts := netnstest.VethOptions{PeerAddr: ipCIDR}
	if mac != "" {
		opts.PeerMAC = net.HardwareAddr(mustMAC(t, mac))
	}
	v := netnstest.NewVeth(t, n.ns, ns, opts)
	return &pod{ns: ns, veth: v, ip: strings.Split(ipCIDR, "/")[0]}
}

// TestDaemonStandaloneBridge: govs-vswitchd with a fail_mode=standalone
// bridge (a NORMAL learning switch) forwards pings between two namespaces
// over real veths, and the govs commands manage it like ovs-vsctl.
func TestDaemonStandaloneBridge(t *testing.T) {
	n := startNode(t)
	n.mustRun("add-br", "br0", "fail_mode=standalone", "datapath_id=0000000000000042")
	a := n.addPod(t, "10.231.0.1/24", "")
	b := n.addPod(t, "10.231.0.2/24", "")
	n.mustRun("add-port", "br0", a.veth.Host, "ofport_request=7")
	n.mustRun("add-port", "br0", b.veth.Host)
	show := n.mustRun("show")
	for _, want := range []string{"Bridge br0", "datapath_id: 0000000000000042", "Port " + a.veth.Host, "ofport: 7", "ofport: 1"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	if out, err := a.ns.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", b.ip); err != nil {
		t.Fatalf("ping through the bridge failed: %v\n%s", err, out)
	}
	// Errors are precise and the daemon keeps serving.
	if out, err := n.run("add-port", "br0", a.veth.Host); err == nil || !strings.Contains(out, "already exists") {
		t.Errorf("duplicate add-port: %v %s", err, out)
	}
	if out, err := n.run("add-port", "nobr", "x"); err == nil || !strings.Contains(out, "no bridge named nobr") {
		t.Errorf("add-port to a missing bridge: %v %s", err, out)
	}
	if out, err := n.run("add-port", "br0", "p9", "mtu_request=abc"); err == nil || !strings.Contains(out, "mtu_request") {
		t.Errorf("bad mtu_request: %v %s", err, out)
	}
	n.mustRun("del-port", "br0", b.veth.Host)
	if out, err := a.ns.Exec("ping", "-c", "1", "-W", "1", b.ip); err == nil {
		t.Errorf("ping still works after del-port:\n%s", out)
	}
	n.mustRun("del-br", "br0")
	if show := n.mustRun("show"); strings.Contains(show, "br0") {
		t.Errorf("bridge still shown after del-br:\n%s", show)
	}
}

func mustMAC(t *testing.T, s string) []byte {
	t.Helper()
	var m [6]byte
	if _, err := fmt.Sscanf(s, "%02x:%02x:%02x:%02x:%02x:%02x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]); err != nil {
		t.Fatalf("mac %q: %v", s, err)
	}
	return m[:]
}
