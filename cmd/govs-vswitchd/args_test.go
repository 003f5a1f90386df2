package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/govs-project/govs/internal/vswitchd"
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
		{"--offload auto", "/var/run/govs", "/var/run/govs/ovs-vswitchd.pid", "", -10, ""},
		{"--offload xdp", "", "", "", 0, "--offload xdp: want auto, ebpf or none"},
		{"--port-threads=yes", "", "", "", 0, "doesn't allow an argument"},
	} {
		a, ok := parseArgsCase(t, tc.argv, tc.err)
		if !ok {
			continue
		}
		a.resolve("ovs-vswitchd", getenv)
		if a.rundir != tc.rundir || a.pidfile != tc.pidfile || a.logFile != tc.logFile || a.nice != tc.nice {
			t.Errorf("%q: rundir %q pidfile %q log %q nice %d", tc.argv, a.rundir, a.pidfile, a.logFile, a.nice)
		}
	}
}

// TestParsePortThreads: --port-threads asks for a goroutine per system
// port; without it the bridges' poll threads serve them.
func TestParsePortThreads(t *testing.T) {
	for argv, want := range map[string]bool{"": false, "--pmd": false, "--port-threads": true, "-port-threads --nice 0": true} {
		a, ok := parseArgsCase(t, argv, "")
		if ok && a.portThreads != want {
			t.Errorf("%q: portThreads %v, want %v", argv, a.portThreads, want)
		}
	}
}

// TestParseLimits: the limit options fill vswitchd.Limits over the
// defaults; a bad value is an error naming the option.
func TestParseLimits(t *testing.T) {
	def := vswitchd.DefaultLimits()
	for _, tc := range []struct {
		argv string
		want func(l *vswitchd.Limits)
		err  string
	}{
		{"", func(*vswitchd.Limits) {}, ""},
		{"--flow-limit 1000 --max-flows=5000 --max-groups 10", func(l *vswitchd.Limits) {
			l.Flows.MaxFlowsPerTable, l.Flows.MaxFlows, l.Flows.MaxGroups = 1000, 5000, 10
		}, ""},
		{"--ct-maxconns 200000 --ct-zone-limit default=100 --ct-zone-limit zone=7,limit=5 --ct-zone-limit=zone=65535,limit=0",
			func(l *vswitchd.Limits) {
				l.ConntrackMax, l.ConntrackZoneDefault = 200000, 100
				l.ConntrackZones = map[uint16]uint32{7: 5, 65535: 0}
			}, ""},
		{"--flow-cache-limit 5000", func(l *vswitchd.Limits) { l.FlowCacheEntries = 5000 }, ""},
		{"--flow-cache-limit=-1", nil, "--flow-cache-limit -1: want a positive number"},
		{"--flow-limit 0", nil, "--flow-limit 0: want a positive number"},
		{"--max-flows -3", nil, "--max-flows -3: want a positive number"},
		{"--max-groups lots", nil, "--max-groups lots: want a positive number"},
		{"--ct-maxconns 4294967296", nil, "--ct-maxconns 4294967296: want a positive number"},
		{"--ct-zone-limit zone=70000,limit=1", nil, `--ct-zone-limit "zone=70000,limit=1": the zone is not a number up to 65535`},
		{"--ct-zone-limit zone=1", nil, `--ct-zone-limit "zone=1": want default=N or zone=Z,limit=N`},
		{"--ct-zone-limit default=x", nil, `--ct-zone-limit "default=x": the default limit is not a number`},
		{"--ct-zone-limit zone=1,limit=-1", nil, `--ct-zone-limit "zone=1,limit=-1": the limit is not a number`},
		{"--flow-limit", nil, "option '--flow-limit' requires an argument"},
		{"--flow-limits 3", nil, "unrecognized option '--flow-limits'"},
	} {
		a, ok := parseArgsCase(t, tc.argv, tc.err)
		if !ok {
			continue
		}
		want := vswitchd.DefaultLimits()
		tc.want(&want)
		if !reflect.DeepEqual(a.limits, want) {
			t.Errorf("%q: limits %+v, want %+v (defaults %+v)", tc.argv, a.limits, want, def)
		}
	}
}

// parseArgsCase parses argv and checks the error against wantErr (a
// substring; "" for none); ok says the arguments parsed as wanted and a
// holds them.
func parseArgsCase(t *testing.T, argv, wantErr string) (a *args, ok bool) {
	t.Helper()
	a, err := parseArgs(strings.Fields(argv), -10)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want %q", argv, err, wantErr)
		}
		return nil, false
	}
	if err != nil {
		t.Errorf("%q: %v", argv, err)
		return nil, false
	}
	return a, true
}
