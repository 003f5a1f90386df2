package ovstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLaunchAndStop starts OVS without a testing.TB, uses it, stops it and
// checks that the namespace, the daemons and the directory are gone.
func TestLaunchAndStop(t *testing.T) {
	var logged []string
	logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	o, stop, err := Launch(Options{FailMode: "secure"}, logf)
	if err != nil {
		t.Fatal(err)
	}
	netns, dir := o.Netns(), o.Rundir()
	var pids []int
	for _, d := range o.daemons {
		pids = append(pids, d.cmd.Process.Pid)
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	if got, err := o.Vsctl("get", "bridge", "br-int", "fail_mode"); err != nil || got != "secure\n" {
		t.Errorf("fail_mode = %q, %v", got, err)
	}
	if err := o.AddFlow("OpenFlow13", "priority=0,actions=NORMAL"); err != nil {
		t.Errorf("add-flow: %v", err)
	}
	stopped = true
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join("/var/run/netns", netns)); !os.IsNotExist(err) {
		t.Errorf("namespace %s still there: %v", netns, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("run directory %s still there: %v", dir, err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("daemon pid %d still running", pid)
		}
	}
	if len(pids) != 2 {
		t.Errorf("%d daemons, want ovsdb-server and ovs-vswitchd", len(pids))
	}
	if len(logged) != 0 {
		t.Errorf("a clean run logged %q", logged)
	}
}

// TestLaunchFailure: a start that fails returns an error (not a panic or an
// exit) with Start's message, and leaves nothing behind.
func TestLaunchFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"bad fail mode", Options{FailMode: "sometimes"}, `fail mode "sometimes"`},
		{"bad port", Options{Ports: []Port{{Name: "p1", Type: "no-such-type", OFPort: 3}}}, "port p1 got ofport -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var created *OVS
			testHookCreated = func(o *OVS) { created = o }
			defer func() { testHookCreated = nil }()
			o, stop, err := Launch(tc.opts, nil)
			if err == nil {
				stop()
				t.Fatalf("Launch succeeded")
			}
			if o != nil || stop != nil {
				t.Errorf("Launch returned an instance with its error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
			if created == nil {
				return // failed before creating anything
			}
			if _, err := os.Stat(filepath.Join("/var/run/netns", created.netns)); !os.IsNotExist(err) {
				t.Errorf("namespace %s still there: %v", created.netns, err)
			}
			if _, err := os.Stat(created.dir); !os.IsNotExist(err) {
				t.Errorf("run directory %s still there: %v", created.dir, err)
			}
			for _, d := range created.daemons {
				if syscall.Kill(d.cmd.Process.Pid, 0) == nil {
					t.Errorf("%s (pid %d) still running", d.name, d.cmd.Process.Pid)
				}
			}
		})
	}
}
