package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// threadNiceness returns the niceness of every thread of process pid
// (field 19 of /proc/PID/task/TID/stat).
func threadNiceness(t *testing.T, pid int) map[int]int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	for _, e := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			continue // the thread exited
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 17 {
			t.Fatalf("%s/stat: %q", e.Name(), s)
		}
		nice, err := strconv.Atoi(f[16])
		if err != nil {
			t.Fatalf("%s/stat nice %q: %v", e.Name(), f[16], err)
		}
		tid, _ := strconv.Atoi(e.Name())
		out[tid] = nice
	}
	return out
}

// TestDaemonNiceness: govs-vswitchd runs every thread at niceness -10 by
// default, as ovs-ctl starts ovs-vswitchd, including the threads its
// port readers start later; --nice sets another value and rejects one out
// of range.
func TestDaemonNiceness(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, -10},
		{[]string{"--nice", "0"}, 0},
		{[]string{"--nice", "5"}, 5},
	} {
		t.Run(fmt.Sprint(tc.want), func(t *testing.T) {
			n := startNode(t, tc.args...)
			// Ports start reader goroutines, and the runtime threads
			// for them: they must inherit the niceness.
			n.mustRun("add-br", "br0", "fail_mode=standalone")
			a := n.addPod(t, "10.232.0.1/24", "")
			b := n.addPod(t, "10.232.0.2/24", "")
			n.mustRun("add-port", "br0", a.veth.Host)
			n.mustRun("add-port", "br0", b.veth.Host)
			if out, err := a.ns.Exec("ping", "-c", "2", "-i", "0.2", "-W", "2", b.ip); err != nil {
				t.Fatalf("ping through the bridge failed: %v\n%s", err, out)
			}
			threads := threadNiceness(t, n.cmd.Process.Pid)
			if len(threads) < 3 {
				t.Fatalf("only %d threads", len(threads))
			}
			for tid, nice := range threads {
				if nice != tc.want {
					t.Errorf("thread %d has niceness %d, want %d (all: %v)", tid, nice, tc.want, threads)
				}
			}
		})
	}
	_, vswitchd := binaries(t)
	out, err := exec.Command(vswitchd, "--nice", "-21", "--rundir", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--nice -21") {
		t.Errorf("--nice -21: %v %s", err, out)
	}
}
