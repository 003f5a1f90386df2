package ovstest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStartLoadDumpCleanup starts a real OVS, loads flows, checks the dump for
// two OpenFlow versions, and after the subtest's cleanup checks that the
// namespace, the processes and the directory are gone.
func TestStartLoadDumpCleanup(t *testing.T) {
	var netns, dir string
	var pids []int
	t.Run("run", func(t *testing.T) {
		o := Start(t, Options{
			FailMode:         "secure",
			Ports:            []Port{{Name: "p7", Type: "internal", OFPort: 7}},
			VswitchdNiceness: -10,
		})
		netns, dir = o.Netns(), o.Rundir()
		for _, d := range o.daemons {
			pids = append(pids, d.cmd.Process.Pid)
			// ovs-vswitchd runs at the niceness asked for (through
			// nice, which leaves the daemon's pid the one started).
			want := 0
			if d.name == "ovs-vswitchd" {
				want = -10
			}
			if got, err := syscall.Getpriority(syscall.PRIO_PROCESS, d.cmd.Process.Pid); err != nil || 20-got != want {
				t.Errorf("%s niceness = %d (%v), want %d", d.name, 20-got, err, want)
			}
		}
		if _, err := os.Stat(filepath.Join("/var/run/netns", netns)); err != nil {
			t.Fatalf("namespace %s not created: %v", netns, err)
		}
		if got, err := o.Vsctl("get", "bridge", "br-int", "fail_mode", "datapath_type", "protocols"); err != nil {
			t.Fatal(err)
		} else if want := "secure\nnetdev\n[OpenFlow10, OpenFlow13, OpenFlow15]\n"; got != want {
			t.Errorf("bridge config = %q, want %q", got, want)
		}

		flows := filepath.Join(t.TempDir(), "two.flows")
		if err := os.WriteFile(flows, []byte(
			"# a comment line\n"+
				"table=0,priority=200,in_port=7 actions=load:0x1->NXM_NX_REG0[0..15],resubmit(,10)\n"+
				"\n"+
				"cookie=0x1000000000000,table=10,priority=0 actions=drop\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := o.AddFlowsFile(flows, "OpenFlow13"); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			version string
			want    []string
		}{
			{"OpenFlow13", []string{
				" cookie=0x1000000000000, table=10, priority=0 actions=drop",
				" priority=200,in_port=7 actions=load:0x1->NXM_NX_REG0[0..15],resubmit(,10)",
			}},
			{"OpenFlow15", []string{
				" cookie=0x1000000000000, table=10, priority=0 actions=drop",
				" priority=200,in_port=7 actions=set_field:0x1/0xffff->reg0,resubmit(,10)",
			}},
		} {
			out, err := o.DumpFlows(tc.version, "--no-stats")
			if err != nil {
				t.Fatal(err)
			}
			got := SortedLines(out)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("%s dump-flows:\n got %q\nwant %q", tc.version, got, tc.want)
			}
		}

		// A typo is rejected with ovs-ofctl's own message on stderr.
		err := o.AddFlow("OpenFlow13", "table=40,ip,w_dst=10.96.0.0/12 actions=drop")
		var ce *CmdError
		if !errors.As(err, &ce) {
			t.Fatalf("bad flow: got error %v, want *CmdError", err)
		}
		if want := "ovs-ofctl: unknown keyword w_dst\n"; ce.Stderr != want {
			t.Errorf("bad flow stderr = %q, want %q", ce.Stderr, want)
		}

		if err := o.AddTLVMap("{class=0x104,type=0x80,len=4}->tun_metadata0"); err != nil {
			t.Fatal(err)
		}
		if out, err := o.Ofctl("dump-tlv-map"); err != nil || !strings.Contains(out, "0x104  0x80       4  tun_metadata0") {
			t.Errorf("dump-tlv-map = %q, %v", out, err)
		}
		if out, err := o.Ofctl("dump-ports-desc"); err != nil || !strings.Contains(out, " 7(p7):") {
			t.Errorf("dump-ports-desc lacks port 7(p7): %q, %v", out, err)
		}
		if err := o.Reset(); err != nil {
			t.Fatal(err)
		}
		if out, err := o.DumpFlows("OpenFlow13", "--no-stats"); err != nil || out != "" {
			t.Errorf("after Reset dump-flows = %q, %v", out, err)
		}
	})
	if netns == "" {
		t.Fatal("subtest did not start OVS")
	}
	if _, err := os.Stat(filepath.Join("/var/run/netns", netns)); !os.IsNotExist(err) {
		t.Errorf("namespace %s still present after cleanup (stat err %v)", netns, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("run directory %s still present after cleanup (stat err %v)", dir, err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("daemon pid %d still alive after cleanup", pid)
		}
	}
}

func TestOfctlArgs(t *testing.T) {
	o := &OVS{bridge: "br-int", dir: "/tmp/x"}
	target := "unix:/tmp/x/br-int.mgmt"
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"dump-flows"}, []string{"dump-flows", target}},
		{[]string{"-O", "OpenFlow13", "dump-flows", "--no-stats", "table=0"}, []string{"-O", "OpenFlow13", "dump-flows", target, "--no-stats", "table=0"}},
		{[]string{"--protocols=OpenFlow13", "add-flow", "actions=drop"}, []string{"--protocols=OpenFlow13", "add-flow", target, "actions=drop"}},
		{[]string{"-t", "5", "show"}, []string{"-t", "5", "show", target}},
		{[]string{"parse-flow", "actions=drop"}, []string{"parse-flow", "actions=drop"}},
		{[]string{"dump-flows", target}, []string{"dump-flows", target}},
		{[]string{"--version"}, []string{"--version"}},
	} {
		if got := o.ofctlArgs(tc.in); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("ofctlArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// fakeTB records what Start reports, so the failure paths can be tested
// without failing this test. Fatalf panics with fatalStop (instead of
// runtime.Goexit) and the caller recovers it.
type fakeTB struct {
	testing.TB // satisfies the interface; Start only calls the methods below
	fatal      string
	failed     bool
	cleanups   []func()
	logs       []string
}

type fatalStop struct{}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Failed() bool      { return f.failed }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	f.failed = true
	panic(fatalStop{})
}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.failed = true
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}

// startFake runs Start against a fakeTB and then its cleanups, newest first.
func startFake(opts Options) (f *fakeTB, o *OVS) {
	f = &fakeTB{}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(fatalStop); !ok {
					panic(r)
				}
			}
		}()
		o = Start(f, opts)
	}()
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
	return f, o
}

// TestStartFailures checks that a missing OVS is a loud failure (never a skip)
// and that a start that fails half-way still removes everything and copies the
// daemon logs into the test log.
func TestStartFailures(t *testing.T) {
	t.Run("binaries missing", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		f, _ := startFake(Options{})
		if !strings.Contains(f.fatal, "not found in PATH") || !strings.Contains(f.fatal, "openvswitch-switch") {
			t.Errorf("Fatalf message = %q, want it to name the missing binary and the Debian package", f.fatal)
		}
	})
	t.Run("bad fail mode", func(t *testing.T) {
		f, _ := startFake(Options{FailMode: "closed"})
		if !strings.Contains(f.fatal, `fail mode "closed"`) {
			t.Errorf("Fatalf message = %q", f.fatal)
		}
	})
	t.Run("port fails after daemons started", func(t *testing.T) {
		var created *OVS
		testHookCreated = func(o *OVS) { created = o }
		defer func() { testHookCreated = nil }()
		f, _ := startFake(Options{Ports: []Port{{Name: "bad0", Type: "no-such-type", OFPort: 9}}})
		if !strings.Contains(f.fatal, "bad0") {
			t.Fatalf("Fatalf message = %q, want the failing port named", f.fatal)
		}
		logs := strings.Join(f.logs, "\n")
		if !strings.Contains(logs, "ovs-vswitchd.log") || !strings.Contains(logs, "no-such-type") {
			t.Errorf("daemon logs not copied into the test log on failure; got:\n%.2000s", logs)
		}
		if created == nil {
			t.Fatal("Start did not create an instance")
		}
		if _, err := os.Stat(filepath.Join("/var/run/netns", created.Netns())); !os.IsNotExist(err) {
			t.Errorf("failed start left namespace %s behind (stat err %v)", created.Netns(), err)
		}
		if _, err := os.Stat(created.Rundir()); !os.IsNotExist(err) {
			t.Errorf("failed start left %s behind (stat err %v)", created.Rundir(), err)
		}
	})
}
