package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
)

// TestOVSCtl: govs-vswitchd installed as ovs-vswitchd (a symlink, as
// `make install` makes it) is started, checked and stopped by the real
// ovs-ctl in a private rundir, next to a private ovsdb-server that
// ovs-ctl starts too (which records ovs_version from `ovs-vswitchd
// --version`).
func TestOVSCtl(t *testing.T) {
	netnstest.RequireRoot(t)
	const scripts = "/usr/share/openvswitch/scripts"
	if _, err := os.Stat(scripts + "/ovs-ctl"); err != nil {
		t.Fatalf("ovs-ctl missing: %v (make deps installs openvswitch-switch)", err)
	}
	_, vswitchd := binaries(t)
	// Socket paths must stay under 108 bytes: a short directory in /tmp.
	dir, err := os.MkdirTemp("/tmp", "govs-ovsctl-")
	if err != nil {
		t.Fatal(err)
	}
	bin, run, scr := filepath.Join(dir, "bin"), filepath.Join(dir, "run"), filepath.Join(dir, "scripts")
	for _, d := range []string{bin, run, scr} {
		os.MkdirAll(d, 0o755)
	}
	if err := os.Symlink(vswitchd, filepath.Join(bin, "ovs-vswitchd")); err != nil {
		t.Fatal(err)
	}
	// ovs-ctl's own scripts, with ovs-kmod-ctl a no-op as in Antrea's
	// image (no kernel module is needed for the userspace datapath).
	for _, f := range []string{"ovs-ctl", "ovs-lib"} {
		data, err := os.ReadFile(filepath.Join(scripts, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(scr, f), data, 0o755)
	}
	os.WriteFile(filepath.Join(scr, "ovs-kmod-ctl"), []byte("#!/bin/sh\nexit 0\n"), 0o755)
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "OVS_RUNDIR="+run, "OVS_LOGDIR="+run,
		"OVS_DBDIR="+run, "OVS_SYSCONFDIR="+dir, "OVS_PKGDATADIR=/usr/share/openvswitch")
	ovsctl := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(scr, "ovs-ctl"), args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	tool := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		ovsctl("stop")
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(run, "ovs-vswitchd.log"))
			t.Logf("ovs-vswitchd.log:\n%s", log)
		}
		os.RemoveAll(dir)
	})

	if out, err := ovsctl("--no-ovs-vswitchd", "--system-id=random", "start", "--db-file="+filepath.Join(run, "conf.db")); err != nil {
		t.Fatalf("ovs-ctl start ovsdb-server: %v\n%s", err, out)
	}
	db := "--db=unix:" + filepath.Join(run, "db.sock")
	if out, err := tool("ovs-vsctl", db, "get", "open_vswitch", ".", "ovs_version"); err != nil || strings.TrimSpace(out) != `"3.1.0"` {
		t.Errorf("ovs_version set by ovs-ctl from ovs-vswitchd --version: %v %q", err, out)
	}
	start := time.Now()
	out, err := ovsctl("--no-ovsdb-server", "--system-id=random", "start", "--db-file="+filepath.Join(run, "conf.db"))
	if err != nil || !strings.Contains(out, "Starting ovs-vswitchd") {
		t.Fatalf("ovs-ctl start: %v\n%s", err, out)
	}
	t.Logf("ovs-ctl start --no-ovsdb-server took %v", time.Since(start))
	data, err := os.ReadFile(filepath.Join(run, "ovs-vswitchd.pid"))
	if err != nil {
		t.Fatalf("no pidfile after ovs-ctl start: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); string(comm) != "ovs-vswitchd\n" {
		t.Errorf("/proc/%d/comm = %q", pid, comm)
	}
	// A second start sees it running (pidfile, /proc and comm).
	if out, err := ovsctl("--no-ovsdb-server", "start"); err != nil || !strings.Contains(out, "ovs-vswitchd is already running") {
		t.Errorf("second ovs-ctl start: %v\n%s", err, out)
	}
	out, err = ovsctl("status")
	if err != nil || !regexp.MustCompile(`ovs-vswitchd is running with pid `+strconv.Itoa(pid)+`\n`).MatchString(out) {
		t.Errorf("ovs-ctl status: %v\n%s", err, out)
	}
	if out, err := tool("ovs-appctl", "-t", "ovs-vswitchd", "version"); err != nil || !strings.HasPrefix(out, "ovs-vswitchd (Open vSwitch) 3.1.0\n") {
		t.Errorf("ovs-appctl -t ovs-vswitchd version: %v %q", err, out)
	}
	// The daemon runs with the database unreachable from its OVSDB side
	// (it retries) and logs to the --log-file ovs-ctl gave it.
	if log, err := os.ReadFile(filepath.Join(run, "ovs-vswitchd.log")); err != nil || !strings.Contains(string(log), "govs-vswitchd started") {
		t.Errorf("log file: %v\n%s", err, log)
	}
	out, err = ovsctl("stop")
	if err != nil || !strings.Contains(out, "Exiting ovs-vswitchd ("+strconv.Itoa(pid)+")") {
		t.Errorf("ovs-ctl stop: %v\n%s", err, out)
	}
	for _, f := range []string{"ovs-vswitchd.pid", "ovs-vswitchd." + strconv.Itoa(pid) + ".ctl"} {
		if _, err := os.Stat(filepath.Join(run, f)); !os.IsNotExist(err) {
			t.Errorf("%s left after ovs-ctl stop: %v", f, err)
		}
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !os.IsNotExist(err) {
		t.Errorf("pid %d still alive after ovs-ctl stop", pid)
	}
	if out, _ := ovsctl("status"); !strings.Contains(out, "ovs-vswitchd is not running") {
		t.Errorf("ovs-ctl status after stop:\n%s", out)
	}
	// Nor is --monitor's process left: it exits with the daemon.
	time.Sleep(200 * time.Millisecond)
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if data, _ := os.ReadFile(p); strings.Contains(string(data), "ovs-vswitchd.pid") && strings.Contains(string(data), run) {
			t.Errorf("left running after ovs-ctl stop: %s %q", p, strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
}
