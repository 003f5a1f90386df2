package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/conformance"
)

// TestOsKenLearningSwitch: an os-ken OpenFlow 1.3 controller (a MAC
// learning switch app, run by osken-manager) drives a govs bridge over
// tcp: the handshake, the table-miss flow, packet-ins and packet-outs work
// and two namespaces can ping each other; the flows the controller
// learned are visible with ovs-ofctl.
func TestOsKenLearningSwitch(t *testing.T) {
	if _, err := exec.LookPath("osken-manager"); err != nil {
		t.Fatalf("osken-manager not installed (Debian package python3-os-ken): %v", err)
	}
	n := startNode(t)
	app, err := filepath.Abs("testdata/learning_switch_13.py")
	if err != nil {
		t.Fatal(err)
	}
	port := 16653
	logPath := filepath.Join(t.TempDir(), "osken.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := n.ns.Command("osken-manager", "--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port", fmt.Sprint(port), app)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("osken-manager log:\n%s", data)
		}
	})
	n.ns.MustExec(t, "ip", "link", "set", "lo", "up")
	time.Sleep(time.Second) // let os-ken listen
	n.mustRun("add-br", "br1", "fail_mode=secure", "datapath_id=0000000000000101", fmt.Sprintf("controller=tcp:127.0.0.1:%d", port))
	a := n.addPod(t, "10.232.0.1/24", "")
	b := n.addPod(t, "10.232.0.2/24", "")
	n.mustRun("add-port", "br1", a.veth.Host)
	n.mustRun("add-port", "br1", b.veth.Host)
	waitFor(t, 20*time.Second, func() bool {
		data, _ := os.ReadFile(logPath)
		return strings.Contains(string(data), "GOVS-TEST switch connected dpid=0000000000000101")
	}, "os-ken never saw the switch")
	var out string
	ok := false
	for i := 0; i < 5 && !ok; i++ {
		out, err = a.ns.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", b.ip)
		ok = err == nil
	}
	if !ok {
		t.Fatalf("ping through the os-ken controlled bridge failed:\n%s", out)
	}
	data, _ := os.ReadFile(logPath)
	if !strings.Contains(string(data), "GOVS-TEST packet-in in_port=") {
		t.Errorf("no packet-in reached os-ken")
	}
	flows, err := ofctl("unix:"+filepath.Join(n.rundir, "br1.mgmt"), "-O", "OpenFlow13", "dump-flows", "--no-stats")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(flows, "priority=0 actions=CONTROLLER:65535") || !strings.Contains(flows, "priority=1,in_port=") {
		t.Errorf("controller's flows missing:\n%s", flows)
	}
}

func waitFor(t *testing.T, d time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestOsKenSwitchSuiteSample runs a sample of the os-ken OpenFlow 1.3
// switch test suite (testdata/osken-of13) with govs-vswitchd as the switch
// under test and a private Open vSwitch as the tester switch: every case
// passes but those that need PBB (push_pbb/pop_pbb, not implemented). A
// file with a failing case is run once more, because the tester's
// one-packet checks can lose a packet on a loaded 2-CPU machine; a case
// must pass in that second run.
func TestOsKenSwitchSuiteSample(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	const dir = "testdata/osken-of13"
	files, err := conformance.LoadCases(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func(files []conformance.CaseFile) []conformance.Result {
		res, err := conformance.Run(context.Background(), conformance.Options{
			Target: conformance.TargetGovs, CaseDir: dir, Files: files, Vswitchd: vswitchd,
			Timeout: 5 * time.Minute, Logf: t.Logf,
		})
		if err != nil {
			t.Fatalf("suite: %v", err)
		}
		return res
	}
	needsPBB := func(r conformance.Result) bool { return strings.Contains(r.Case, "pbb") }
	res := run(files)
	failed := map[string]bool{}
	for _, r := range res {
		if !r.OK && !needsPBB(r) {
			failed[r.File] = true
		}
	}
	if len(failed) > 0 {
		var again []conformance.CaseFile
		for _, f := range files {
			if failed[f.Path] {
				again = append(again, f)
			}
		}
		t.Logf("running %d files again after failures", len(again))
		retry := map[[2]string]conformance.Result{}
		for _, r := range run(again) {
			retry[[2]string{r.File, r.Case}] = r
		}
		for i, r := range res {
			if failed[r.File] {
				res[i] = retry[[2]string{r.File, r.Case}]
			}
		}
	}
	pass := 0
	for _, r := range res {
		switch {
		case r.OK:
			pass++
		case !needsPBB(r):
			t.Errorf("%s: %s: %s", r.File, r.Case, r.Detail)
		}
	}
	if pass < 20 {
		t.Errorf("%d cases passed, want at least 20", pass)
	}
}
