package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
)

var demoIDRE = regexp.MustCompile(`network namespaces govsdemo-([0-9a-f]+)-\*`)

// demoLeftovers lists what a demo run with id left: namespaces, its
// rundir, govs-vswitchd processes started from it.
func demoLeftovers(t *testing.T, id string) []string {
	t.Helper()
	var left []string
	out, err := netnstest.Run("ip", "netns", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "govsdemo-"+id) {
			left = append(left, "netns "+line)
		}
	}
	rundir := filepath.Join(os.TempDir(), "govsdemo-"+id)
	if _, err := os.Stat(rundir); err == nil {
		left = append(left, "rundir "+rundir)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), rundir) {
			left = append(left, "process "+p+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return left
}

// TestDemoLive: `govs demo` builds seed worker 1, every walk behaves as
// the seed says (the demo exits 1 otherwise), the table and the trace are
// printed, and nothing is left behind.
func TestDemoLive(t *testing.T) {
	netnstest.RequireRoot(t)
	govs, _ := binaries(t)
	start := time.Now()
	out, err := exec.Command(govs, "demo").CombinedOutput()
	took := time.Since(start)
	m := demoIDRE.FindStringSubmatch(string(out))
	if m != nil {
		if left := demoLeftovers(t, m[1]); len(left) > 0 {
			t.Errorf("the demo left:\n%s", strings.Join(left, "\n"))
		}
	}
	if err != nil {
		t.Fatalf("govs demo: %v\n%s", err, out)
	}
	if m == nil {
		t.Fatalf("no namespace prefix in the output:\n%s", out)
	}
	for _, want := range []string{
		"frontend -> backend1 10.222.1.47:80/tcp",
		"table 60: priority=200,ip,nw_src=10.222.1.48 actions=drop",
		"is-at aa:bb:cc:dd:ee:ff",
		"conntrack mark=32 (0x20)",
		"Datapath actions: 2",
		"Flows whose counters moved",
		"Removing the namespaces, veths and the switch... done",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("govs demo took %v", took)
}

// TestDemoInterrupted: SIGINT while the demo drives traffic stops it and
// still removes everything it created.
func TestDemoInterrupted(t *testing.T) {
	netnstest.RequireRoot(t)
	govs, _ := binaries(t)
	cmd := exec.Command(govs, "demo")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var id string
	sc := bufio.NewScanner(stdout)
	var seen []string
	for sc.Scan() {
		line := sc.Text()
		seen = append(seen, line)
		if m := demoIDRE.FindStringSubmatch(line); m != nil {
			id = m[1]
		}
		if strings.HasPrefix(line, "Driving traffic") {
			cmd.Process.Signal(syscall.SIGINT)
			break
		}
	}
	for sc.Scan() {
		seen = append(seen, sc.Text())
	}
	err = cmd.Wait()
	if id == "" {
		t.Fatalf("no namespace prefix in the output:\n%s", strings.Join(seen, "\n"))
	}
	if left := demoLeftovers(t, id); len(left) > 0 {
		t.Errorf("the interrupted demo left:\n%s", strings.Join(left, "\n"))
	}
	if err == nil {
		t.Errorf("the interrupted demo exited 0:\n%s", strings.Join(seen, "\n"))
	}
	if all := strings.Join(seen, "\n"); !strings.Contains(all, "interrupted") || !strings.Contains(all, "Removing the namespaces") {
		t.Errorf("the interrupted demo did not say so and clean up:\n%s", all)
	}
}
