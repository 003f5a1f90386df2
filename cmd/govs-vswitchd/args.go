package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/govs-project/govs/internal/vswitchd"
)

// args is the command line: ovs-vswitchd's options (as ovs-ctl builds
// them) and govs's own.
type args struct {
	// ovs-vswitchd
	database   string // unix:PATH or tcp:IP:PORT; "" keeps the YAML/CLI mode
	pidfile    string // "" none given; "-" --pidfile without a value
	detach     bool
	monitor    bool
	noChdir    bool
	mlockall   bool
	logFile    string // "" none; "-" --log-file without a value
	unixctl    string
	verbose    []string
	user       string
	overwrite  bool
	version    bool
	help       bool
	noSelfConf bool
	disableSys bool
	// govs
	rundir    string
	config    string
	logLevel  string
	tso       bool
	pmd       bool
	pmdCPU    int
	nice      int
	rundirSet bool
	// portThreads: a goroutine per system port instead of the poll thread.
	portThreads bool
	// metricsAddr serves Prometheus metrics there ("": off).
	metricsAddr string
	// offload is --offload: "auto", "ebpf", "none" or "" (not given: the
	// OVSDB's other_config:govs-offload, default none).
	offload string
	// bpffs is --bpffs: where the kernel fast path pins its state
	// ("none": nothing pinned, the state dies with the daemon).
	bpffs string
	// limits: --flow-limit, --max-flows, --max-groups, --ct-maxconns,
	// --ct-zone-limit (the defaults where none is given).
	limits vswitchd.Limits
}

// optSpec says whether an option takes a value: required (the next word
// or after '='), optional (only after '='), or none.
type optArg int

const (
	noArg optArg = iota
	requiredArg
	optionalArg
)

var optionTable = map[string]optArg{
	// ovs-vswitchd (lib/daemon.h, lib/vlog.h, vswitchd/ovs-vswitchd.c)
	"pidfile": optionalArg, "overwrite-pidfile": noArg, "detach": noArg, "no-chdir": noArg,
	"monitor": noArg, "user": requiredArg, "no-self-confinement": noArg, "mlockall": noArg,
	"unixctl": requiredArg, "log-file": optionalArg, "verbose": optionalArg, "help": noArg,
	"version": noArg, "disable-system": noArg, "disable-system-route": noArg,
	// govs-vswitchd
	"rundir": requiredArg, "config": requiredArg, "log-level": requiredArg, "userspace-tso": noArg,
	"pmd": noArg, "pmd-cpu": requiredArg, "port-threads": noArg, "nice": requiredArg, "metrics-address": requiredArg,
	"offload": requiredArg, "bpffs": requiredArg, "flow-limit": requiredArg, "max-flows": requiredArg, "max-groups": requiredArg,
	"ct-maxconns": requiredArg, "ct-zone-limit": requiredArg, "flow-cache-limit": requiredArg,
}

// usageError is a command-line error: exit status 1, as ovs-vswitchd.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// parseArgs reads the command line like getopt_long in ovs-vswitchd:
// --name, --name=value, --name value (required values), -v[SPEC], -h,
// -V; govs's own options also with a single dash (-rundir DIR), as the
// Go flag package took them before.
func parseArgs(argv []string, defaultNice int) (*args, error) {
	a := &args{logLevel: "", pmdCPU: -1, nice: defaultNice, limits: vswitchd.DefaultLimits()}
	for i := 0; i < len(argv); i++ {
		w := argv[i]
		switch {
		case w == "-h":
			a.help = true
			continue
		case w == "-V":
			a.version = true
			continue
		case strings.HasPrefix(w, "-v") && !strings.HasPrefix(w, "--"):
			a.verbose = append(a.verbose, w[2:])
			continue
		case w == "--":
			if i+1 < len(argv) {
				return nil, &usageError{fmt.Sprintf("unexpected argument %q", argv[i+1])}
			}
			continue
		case !strings.HasPrefix(w, "-"):
			if a.database != "" {
				return nil, &usageError{"exactly one non-option argument required; use --help for usage"}
			}
			a.database = w
			continue
		}
		name := strings.TrimLeft(w, "-")
		value, hasValue := "", false
		if k, v, ok := strings.Cut(name, "="); ok {
			name, value, hasValue = k, v, true
		}
		kind, ok := optionTable[name]
		if !ok || (!strings.HasPrefix(w, "--") && !isGovsOption(name)) {
			return nil, &usageError{fmt.Sprintf("unrecognized option '%s'", w)}
		}
		switch kind {
		case noArg:
			if hasValue {
				return nil, &usageError{fmt.Sprintf("option '--%s' doesn't allow an argument", name)}
			}
		case requiredArg:
			if !hasValue {
				if i+1 >= len(argv) {
					return nil, &usageError{fmt.Sprintf("option '--%s' requires an argument", name)}
				}
				i++
				value = argv[i]
			}
		case optionalArg:
			if !hasValue {
				value = "-"
			}
		}
		if err := a.set(name, value); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func isGovsOption(name string) bool {
	switch name {
	case "rundir", "config", "log-level", "userspace-tso", "pmd", "pmd-cpu", "port-threads", "nice", "pidfile", "detach", "monitor", "metrics-address", "offload", "bpffs",
		"flow-limit", "max-flows", "max-groups", "ct-maxconns", "ct-zone-limit", "flow-cache-limit":
		return true
	}
	return false
}

func (a *args) set(name, value string) error {
	num := func() (int, error) {
		n, err := strconv.Atoi(value)
		if err != nil {
			return 0, &usageError{fmt.Sprintf("--%s %s: not a number", name, value)}
		}
		return n, nil
	}
	// limit reads a limit: a positive number (0 would mean "none" for
	// some limits and "nothing" for others, so it is refused).
	limit := func() (int, error) {
		n, err := strconv.ParseUint(value, 10, 31)
		if err != nil || n == 0 {
			return 0, &usageError{fmt.Sprintf("--%s %s: want a positive number up to 2147483647", name, value)}
		}
		return int(n), nil
	}
	var err error
	switch name {
	case "flow-limit":
		a.limits.Flows.MaxFlowsPerTable, err = limit()
	case "max-flows":
		a.limits.Flows.MaxFlows, err = limit()
	case "max-groups":
		a.limits.Flows.MaxGroups, err = limit()
	case "ct-maxconns":
		a.limits.ConntrackMax, err = limit()
	case "flow-cache-limit":
		a.limits.FlowCacheEntries, err = limit()
	case "ct-zone-limit":
		zone, n, perr := vswitchd.ParseZoneLimit(value)
		if perr != nil {
			return &usageError{fmt.Sprintf("--ct-zone-limit %v", perr)}
		}
		a.limits.SetZoneLimit(zone, n)
	case "pidfile":
		a.pidfile = value
	case "overwrite-pidfile":
		a.overwrite = true
	case "detach":
		a.detach = true
	case "no-chdir":
		a.noChdir = true
	case "monitor":
		a.monitor = true
	case "user":
		a.user = value
	case "no-self-confinement":
		a.noSelfConf = true
	case "mlockall":
		a.mlockall = true
	case "unixctl":
		a.unixctl = value
	case "log-file":
		a.logFile = value
	case "verbose":
		if value == "-" {
			value = ""
		}
		a.verbose = append(a.verbose, value)
	case "help":
		a.help = true
	case "version":
		a.version = true
	case "disable-system":
		a.disableSys = true
	case "disable-system-route":
		// Accepted: govs reads the kernel's routes only to pick a
		// tunnel's source address, which OVS's option does not cover.
	case "rundir":
		a.rundir, a.rundirSet = value, true
	case "config":
		a.config = value
	case "log-level":
		a.logLevel = value
	case "userspace-tso":
		a.tso = true
	case "pmd":
		a.pmd = true
	case "port-threads":
		a.portThreads = true
	case "pmd-cpu":
		a.pmdCPU, err = num()
	case "nice":
		a.nice, err = num()
	case "metrics-address":
		a.metricsAddr = value
	case "offload":
		if value != "auto" && value != "ebpf" && value != "none" {
			return &usageError{fmt.Sprintf("--offload %s: want auto, ebpf or none", value)}
		}
		a.offload = value
	case "bpffs":
		a.bpffs = value
	}
	return err
}

// resolve fills in the paths OVS derives from its directories: rundir
// from --rundir, else $OVS_RUNDIR (database mode) or /var/run/govs;
// a relative or empty --pidfile/--log-file/--unixctl under rundir/logdir.
func (a *args) resolve(program string, env func(string) string) {
	if !a.rundirSet {
		a.rundir = "/var/run/govs"
		if a.database != "" {
			a.rundir = "/var/run/openvswitch"
			if d := env("OVS_RUNDIR"); d != "" {
				a.rundir = d
			}
		}
	}
	switch a.pidfile {
	case "", "-":
		// Always a pidfile: it is the lock that keeps a second daemon off
		// this rundir's sockets (OVS makes one only with --pidfile).
		a.pidfile = filepath.Join(a.rundir, program+".pid")
	default:
		if !filepath.IsAbs(a.pidfile) {
			a.pidfile = filepath.Join(a.rundir, a.pidfile)
		}
	}
	logdir := "/var/log/openvswitch"
	if d := env("OVS_LOGDIR"); d != "" {
		logdir = d
	}
	switch a.logFile {
	case "":
	case "-":
		a.logFile = filepath.Join(logdir, program+".log")
	default:
		if !filepath.IsAbs(a.logFile) {
			a.logFile = filepath.Join(logdir, a.logFile)
		}
	}
	if a.unixctl != "" && !filepath.IsAbs(a.unixctl) {
		a.unixctl = filepath.Join(a.rundir, a.unixctl)
	}
}

const usageText = `%s: Open vSwitch daemon (govs)
usage: %s [OPTIONS] [DATABASE]
where DATABASE is a socket on which ovsdb-server is listening
      (unix:PATH or tcp:IP:PORT); without it, govs's own YAML/CLI mode.

Daemon options:
  --detach                run in background as daemon (returns once it is up)
  --monitor               creates a process to monitor this daemon
  --no-chdir              do not chdir to '/'
  --pidfile[=FILE]        create pidfile (default: RUNDIR/ovs-vswitchd.pid)
  --overwrite-pidfile     accepted (the pidfile lock decides)
  --user=USER[:GROUP]     only root is supported
  --no-self-confinement   accepted (govs has no self-confinement)
  --mlockall              lock all memory into RAM
  --unixctl=SOCKET        override default control socket name

Logging options:
  -vSPEC, --verbose=SPEC  set logging levels (module:destination:level)
  -v, --verbose           set maximum verbosity level
  --log-file[=FILE]       enable logging to specified FILE
                          (default: $OVS_LOGDIR/ovs-vswitchd.log)

govs options:
  --rundir DIR            sockets and pidfile (default /var/run/govs, or
                          $OVS_RUNDIR / /var/run/openvswitch with a DATABASE)
  --config FILE           YAML bridges and ports to create at start
  --log-level LEVEL       debug, info, warn, error (console and file)
  --userspace-tso         forward TCP super-segments (PACKET_VNET_HDR)
  --pmd, --pmd-cpu N      poll-mode thread per bridge, pinned to CPU N
  --port-threads          without --pmd: a thread per system port rather
                          than one poll thread per bridge
  --nice N                niceness of every thread (default -10)
  --metrics-address ADDR  serve Prometheus metrics on ADDR (host:port), /metrics
  --offload=auto|ebpf|none  forward established connections of system ports
                          in the kernel (XDP; docs/offload.md): auto where
                          the kernel can, ebpf or fail; default: the OVSDB's
                          other_config:govs-offload, else none
  --bpffs DIR|none        pin the kernel fast path's programs and maps under
                          DIR/<rundir>/<bridge> (a bpffs; default
                          /sys/fs/bpf/govs, mounted if missing), so that a
                          restart keeps established connections flowing

Limits (each refusal is counted and logged):
  --flow-limit N          flows per OpenFlow table (default 1000000; a
                          bridge's Flow_Table flow_limit overrides it there)
  --max-flows N           flows in all tables of a bridge (default 2000000)
  --max-groups N          groups of a bridge (default 65536)
  --ct-maxconns N         conntrack connections (default 3000000), as
                          ovs-appctl dpctl/ct-set-maxconns
  --ct-zone-limit SPEC    default=N or zone=Z,limit=N (repeatable), as
                          ovs-appctl dpctl/ct-set-limits
  --flow-cache-limit N    megaflows per packet loop (default 65536; the
                          database's other_config:flow-limit overrides it)

Other options:
  -h, --help              display this help message
  -V, --version           display version information
`
