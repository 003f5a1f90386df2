package main

import (
	"strings"
	"testing"
)

// TestParseOVSCtlCommandLine: the exact argv ovs-ctl builds (fact sheet
// 1.2) parses into the daemon options, with OVS's default paths.
func TestParseOVSCtlCommandLine(t *testing.T) {
	argv := strings.Fields("unix:/var/run/openvswitch/db.sock -vconsole:emer -vsyslog:err -vfile:info --mlockall --no-chdir " +
		"--log-file=/var/log/openvswitch/ovs-vswitchd.log --pidfile=/var/run/openvswitch/ovs-vswitchd.pid --detach --monitor " +
		"--no-self-confinement --user root")
	a, err := parseArgs(argv, -10)
	if err != nil {
		t.Fatal(err)
	}
	a.resolve("ovs-vswitchd", func(string) string { return "" })
	if a.database != "unix:/var/run/openvswitch/db.sock" || !a.mlockall || !a.noChdir || !a.detach || !a.monitor ||
		!a.noSelfConf || a.user != "root" || a.logFile != "/var/log/openvswitch/ovs-vswitchd.log" ||
		a.pidfile != "/var/run/openvswitch/ovs-vswitchd.pid" || a.rundir != "/var/run/openvswitch" ||
		strings.Join(a.verbose, " ") != "console:emer syslog:err file:info" || a.nice != -10 {
		t.Errorf("parsed %+v", a)
	}
}

func TestParseArgs(t *testing.T) {
	env := map[string]string{"OVS_RUNDIR": "/run/x", "OVS_LOGDIR": "/log/x"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		argv                     string
		rundir, pidfile, logFile string
		nice                     int
		err                      string
	}{
		{"", "/var/run/govs", "/var/run/govs/ovs-vswitchd.pid", "", -10, ""},
		{"--rundir /tmp/r --nice -21", "/tmp/r", "/tmp/r/ovs-vswitchd.pid", "", -21, ""},
		{"-rundir=/tmp/r -log-level debug --pmd-cpu 1", "/tmp/r", "/tmp/r/ovs-vswitchd.pid", "", -10, ""},
		{"tcp:127.0.0.1:6640 --pidfile --log-file", "/run/x", "/run/x/ovs-vswitchd.pid", "/log/x/ovs-vswitchd.log", -10, ""},
		{"unix:/db.sock --pidfile=my.pid --log-file=my.log", "/run/x", "/run/x/my.pid", "/log/x/my.log", -10, ""},
		{"--frobnicate", "", "", "", 0, "unrecognized option '--frobnicate'"},
		{"-mlockall", "", "", "", 0, "unrecognized option '-mlockall'"},
		{"--detach=yes", "", "", "", 0, "doesn't allow an argument"},
		{"--unixctl", "", "", "", 0, "requires an argument"},
		{"unix:/a unix:/b", "", "", "", 0, "exactly one non-option argument"},
		{"--nice x", "", "", "", 0, "--nice x: not a number"},
		{"--offload=ebpf", "/var/run/govs", "/var/run/govs/ovs-vswitchd.pid", "", -10, ""},
		{"--offload auto", "", "", "", 0, "--offload auto: want ebpf or none"},
	} {
		a, err := parseArgs(strings.Fields(tc.argv), -10)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.argv, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.argv, err)
			continue
		}
		a.resolve("ovs-vswitchd", getenv)
		if a.rundir != tc.rundir || a.pidfile != tc.pidfile || a.logFile != tc.logFile || a.nice != tc.nice {
			t.Errorf("%q: rundir %q pidfile %q log %q nice %d", tc.argv, a.rundir, a.pidfile, a.logFile, a.nice)
		}
	}
}
