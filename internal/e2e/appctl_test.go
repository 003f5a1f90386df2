package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
)

// pidOf reads the daemon's pid from its pidfile.
func (n *node) pid(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(n.rundir, "ovs-vswitchd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("pidfile %q: %v", data, err)
	}
	return pid
}

// appctl runs the real ovs-appctl against the node's daemon, the way
// Antrea does (-t RUNDIR/ovs-vswitchd.PID.ctl), and returns the combined
// output and exit status.
func (n *node) appctl(t *testing.T, args ...string) (string, int) {
	t.Helper()
	sock := filepath.Join(n.rundir, fmt.Sprintf("ovs-vswitchd.%d.ctl", n.pid(t)))
	out, err := exec.Command("ovs-appctl", append([]string{"-t", sock}, args...)...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("ovs-appctl %v: %v", args, err)
	return "", -1
}

// TestAppctlCommands: the real ovs-appctl against govs-vswitchd gets the
// answers Open vSwitch gives (goldens 12, 15, 17), errors with status 2.
func TestAppctlCommands(t *testing.T) {
	n := startNode(t)
	n.mustRun("add-br", "br-int", "fail_mode=secure")
	gw := netnstest.UniqueName("gw")
	n.mustRun("add-port", "br-int", gw, "type=internal", "ofport_request=2")
	for _, tc := range []struct {
		args []string
		rc   int
		want string // regexp the whole output must match
	}{
		{[]string{"version"}, 0, `^ovs-vswitchd \(Open vSwitch\) 3\.1\.0\ngovs \S+\n$`},
		{[]string{"ofproto/list"}, 0, `^br-int\n$`},
		{[]string{"dpif/show"}, 0, `^netdev@ovs-netdev: hit:\d+ missed:\d+\n  br-int:\n    ` + gw + ` 2/2: \(tap\)\n$`},
		{[]string{"dpif/show-dp-features", "br-int"}, 0, `(?s)^Masked set action: Yes\n.*\nCT state: Yes\nCT zone: Yes\nCT mark: Yes\nCT label: Yes\nCT state NAT: Yes\n.*IPv6 ND Extension: No\n$`},
		{[]string{"dpif/show-dp-features", "nosuchbr"}, 2, `^no such bridge\novs-appctl: .*server returned an error\n$`},
		{[]string{"nosuch/cmd"}, 2, `^"nosuch/cmd" is not a valid command \(use "list-commands" to see a list of valid commands\)\novs-appctl: .*server returned an error\n$`},
		{[]string{"dpctl/show ovs-system"}, 2, `^"dpctl/show ovs-system" is not a valid command`},
		{[]string{"ofproto/trace", "nosuchbr", "in_port=1"}, 2, `^nosuchbr: unknown bridge\n`},
		{[]string{"dpctl/ct-get-maxconns"}, 0, `^\d+\n$`},
		{[]string{"dpctl/ct-set-limits", "zone=65520,limit=100"}, 0, `^$`},
		{[]string{"dpctl/ct-get-limits", "zone=65520"}, 0, `^default limit=0\nzone=65520,limit=100,count=0\n$`},
		{[]string{"dpctl/ct-stats-show"}, 0, `^Connections Stats:\n    Total: 0\n$`},
		{[]string{"dpctl/dump-conntrack", "-m", "-s"}, 0, `^$`},
		{[]string{"fdb/show", "br-int"}, 0, `^ port  VLAN  MAC                Age\n$`},
		{[]string{"memory/show"}, 0, `^conntrack:0 goroutines:\d+ ports:1 rules:0 udpif keys:\d+\n$`},
		{[]string{"coverage/show"}, 0, `^Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=[0-9a-f]{8}:\n`},
		{[]string{"vlog/set", "ofproto:file:dbg"}, 0, `^$`},
		{[]string{"vlog/list"}, 0, `(?s)^                 console    syslog    file\n                 -------    ------    ------\n.*\nofproto           INFO       INFO        DBG\n`},
		{[]string{"vlog/set", "nosuchmodule:file:dbg"}, 2, `unknown module`},
	} {
		out, rc := n.appctl(t, tc.args...)
		if rc != tc.rc || !regexp.MustCompile(tc.want).MatchString(out) {
			t.Errorf("ovs-appctl %s: rc %d, output:\n%s\nwant rc %d and /%s/", strings.Join(tc.args, " "), rc, out, tc.rc, tc.want)
		}
	}
	if out, err := ofctl("unix:"+filepath.Join(n.rundir, "br-int.mgmt"), "add-flow", "table=1,priority=10,ip,actions=drop"); err != nil {
		t.Fatalf("add-flow: %v %s", err, out)
	}
	if out, _ := n.appctl(t, "bridge/dump-flows", "br-int"); !regexp.MustCompile(`^table_id=1, duration=\d+s, n_packets=0, n_bytes=0, priority=10,ip,actions=drop\n$`).MatchString(out) {
		t.Errorf("bridge/dump-flows:\n%s", out)
	}
	// ovs-appctl -t ovs-vswitchd finds the daemon through the locked
	// pidfile in OVS_RUNDIR.
	cmd := exec.Command("ovs-appctl", "-t", "ovs-vswitchd", "ofproto/list")
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+n.rundir)
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "br-int\n" {
		t.Errorf("ovs-appctl -t ovs-vswitchd with OVS_RUNDIR: %v %q", err, out)
	}
}

// TestSecondDaemonRefused: a second govs-vswitchd on the same rundir
// refuses with OVS's message and leaves the first one's sockets alone
// (issue 15 #4); SIGTERM removes the sockets and the pidfile; after
// kill -9 the next start removes the stale sockets.
func TestSecondDaemonRefused(t *testing.T) {
	n := startNode(t)
	n.mustRun("add-br", "br-int")
	_, vswitchd := binaries(t)
	pid := n.pid(t)
	out, err := exec.Command(vswitchd, "--rundir", n.rundir).CombinedOutput()
	want := fmt.Sprintf("%s: already running as pid %d, aborting", filepath.Join(n.rundir, "ovs-vswitchd.pid"), pid)
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("second daemon: %v %q, want %q", err, out, want)
	}
	if got := n.mustRun("show"); !strings.Contains(got, "Bridge br-int") {
		t.Errorf("first daemon unreachable after the second start: %q", got)
	}
	if o, rc := n.appctl(t, "ofproto/list"); rc != 0 || o != "br-int\n" {
		t.Errorf("first daemon's unixctl after the second start: %d %q", rc, o)
	}

	// kill -9, then a new daemon on the rundir cleans up and serves.
	dir := t.TempDir()
	cmd := exec.Command(vswitchd, "--rundir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitPath(t, filepath.Join(dir, "govs-vswitchd.ctl"))
	if out, err := exec.Command(n.govs, "add-br", "--rundir", dir, "brk").CombinedOutput(); err != nil {
		t.Fatalf("add-br: %v %s", err, out)
	}
	staleCtl := filepath.Join(dir, fmt.Sprintf("ovs-vswitchd.%d.ctl", cmd.Process.Pid))
	cmd.Process.Kill()
	cmd.Wait()
	for _, f := range []string{staleCtl, filepath.Join(dir, "brk.mgmt")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("kill -9 left no %s to clean (%v): the test would prove nothing", f, err)
		}
	}
	cmd2 := exec.Command(vswitchd, "--rundir", dir)
	if err := cmd2.Start(); err != nil {
		t.Fatal(err)
	}
	ctl2 := filepath.Join(dir, fmt.Sprintf("ovs-vswitchd.%d.ctl", cmd2.Process.Pid))
	waitPath(t, ctl2)
	for _, f := range []string{staleCtl, filepath.Join(dir, "brk.mgmt")} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("stale %s not removed at start: %v", f, err)
		}
	}
	// SIGTERM: sockets and pidfile gone, exit status 0.
	cmd2.Process.Signal(syscall.SIGTERM)
	if err := cmd2.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("left after SIGTERM: %s", e.Name())
	}
}

// TestCommandLine: ovs-vswitchd's options are accepted, unknown ones are
// an error as with ovs-vswitchd, and --version prints what ovs-ctl parses.
func TestCommandLine(t *testing.T) {
	_, vswitchd := binaries(t)
	out, err := exec.Command(vswitchd, "--version").CombinedOutput()
	if err != nil || !regexp.MustCompile(`^govs-vswitchd \(Open vSwitch\) 3\.1\.0\ngovs \S+\n$`).Match(out) {
		t.Errorf("--version: %v %q", err, out)
	}
	// ovs-ctl's parsing: awk '/Open vSwitch/{print $NF}'.
	awk := exec.Command("sh", "-c", vswitchd+" --version | awk '/Open vSwitch/{print $NF}'")
	if out, err := awk.CombinedOutput(); err != nil || string(out) != "3.1.0\n" {
		t.Errorf("ovs-ctl's version parsing: %v %q", err, out)
	}
	for _, bad := range [][]string{{"--frobnicate"}, {"--pidfile", "x", "y"}, {"--unixctl"}, {"--detach=yes"}} {
		out, err := exec.Command(vswitchd, bad...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "govs-vswitchd: ") {
			t.Errorf("%v accepted: %q", bad, out)
		}
	}
}

// TestMonitorRestartsAfterCrash: with --detach --monitor the daemon comes
// back (new pid, same rundir) after a crash signal, and the monitor goes
// away with it after `ovs-appctl exit`.
func TestMonitorRestartsAfterCrash(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	dir := t.TempDir()
	out, err := exec.Command(vswitchd, "--rundir", dir, "--detach", "--monitor", "--no-chdir",
		"--log-file="+filepath.Join(dir, "log")).CombinedOutput()
	if err != nil {
		t.Fatalf("--detach --monitor: %v %s", err, out)
	}
	pidfile := filepath.Join(dir, "ovs-vswitchd.pid")
	readPid := func() int {
		data, _ := os.ReadFile(pidfile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return pid
	}
	first := readPid()
	t.Cleanup(func() {
		if pid := readPid(); pid > 0 {
			syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	if first <= 0 {
		t.Fatalf("no pid in %s after --detach returned", pidfile)
	}
	syscall.Kill(first, syscall.SIGSEGV)
	deadline := time.Now().Add(10 * time.Second)
	var second int
	for time.Now().Before(deadline) {
		if p := readPid(); p > 0 && p != first {
			if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("ovs-vswitchd.%d.ctl", p))); err == nil {
				second = p
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if second == 0 {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("daemon not restarted after SIGSEGV\n%s", log)
	}
	t.Logf("restarted as pid %d %v after SIGSEGV to pid %d", second, 10*time.Second-time.Until(deadline), first)
	sock := filepath.Join(dir, fmt.Sprintf("ovs-vswitchd.%d.ctl", second))
	if out, err := exec.Command("ovs-appctl", "-t", sock, "exit").CombinedOutput(); err != nil {
		t.Fatalf("exit: %v %s", err, out)
	}
	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(pidfile); os.IsNotExist(err) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("pidfile gone %v after exit", 5*time.Second-time.Until(deadline))
	time.Sleep(300 * time.Millisecond)
	if p := readPid(); p != 0 {
		t.Errorf("restarted again after exit: pid %d", p)
	}
}
