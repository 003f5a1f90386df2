// Package bench is the network benchmark harness: it builds two "pods"
// (network namespaces with veth pairs) connected in several ways — a direct
// veth pair, a Linux bridge, Open vSwitch's userspace datapath and
// govs-vswitchd, the switches once with actions=NORMAL and once with seed
// worker 1's Antrea pipeline; and, across two nodes joined by Geneve, two
// govs-vswitchd against two Open vSwitch instances, each node with its seed
// pipeline — and measures each the same way: 64-byte UDP
// packets/s, TCP throughput with 1 and 4 streams, TCP request/response rate
// and latency, new TCP connections/s through conntrack, and the switch's CPU
// time per packet. Every run repeats each measurement, reports medians and
// spread, the ratios of govs to the others, and writes JSON and CSV.
//
// It needs root, iproute2, ethtool, iperf3, trafgen (netsniff-ng), taskset
// and ss, and for the OVS rows Open vSwitch (the govs rows load their flows
// with ovs-ofctl too). Everything it creates (namespaces, veths, daemons,
// servers) is removed when Run returns, also on error or cancellation; child
// processes die with the harness (PR_SET_PDEATHSIG) and a later run deletes
// namespaces a killed run left behind.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Config is one harness invocation.
type Config struct {
	// Scenarios to run, by name; nil runs all of Scenarios.
	Scenarios []string
	// Measurements to take, by name; nil takes all of Measurements.
	Measurements []string
	// Reps is how many times each measurement repeats (default 3).
	Reps int
	// Duration of each measurement's measured window (default 5 s).
	Duration time.Duration
	// Offloads is "auto" (default: kernel paths keep the veth defaults,
	// userspace switches get tx checksum/TSO/GSO/GRO off), "on" or "off".
	Offloads string
	// CPU is the CPU that trafgen and the request/response and connection
	// workers are pinned to (taskset -c); default "0".
	CPU string
	// CRRConcurrency is the number of concurrent connect/close loops (4).
	CRRConcurrency int
	// Vswitchd is the govs-vswitchd binary; empty uses one next to this
	// executable, else builds ./cmd/govs-vswitchd with the go tool.
	Vswitchd string
	// WorkerCommand re-executes this program as a worker (see WorkerEnv);
	// empty means [os.Executable(), "bench"].
	WorkerCommand []string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Verbose also logs daemon output.
	Verbose bool
}

// env is what the scenarios and measurements share during a run.
type env struct {
	logf           func(string, ...any)
	verbose        bool
	tmp            string
	cpu            string
	duration       time.Duration
	crrConcurrency int
	self           []string
	// udpFlows counts the UDP measurements taken, so each floods from a
	// source port of its own.
	udpFlows int

	vswitchdOnce sync.Once
	vswitchdPath string
	vswitchdErr  error
	vswitchdFlag string
}

// vswitchd returns the govs-vswitchd binary, building it on first use.
func (e *env) vswitchd() (string, error) {
	e.vswitchdOnce.Do(func() {
		if e.vswitchdFlag != "" {
			e.vswitchdPath, e.vswitchdErr = exec.LookPath(e.vswitchdFlag)
			return
		}
		if exe, err := os.Executable(); err == nil {
			sib := filepath.Join(filepath.Dir(exe), "govs-vswitchd")
			if st, err := os.Stat(sib); err == nil && st.Mode().IsRegular() {
				e.vswitchdPath = sib
				return
			}
		}
		e.logf("building govs-vswitchd from source (go build ./cmd/govs-vswitchd)")
		out, err := exec.Command("go", "build", "-o", e.tmp+"/", "github.com/govs-project/govs/cmd/govs-vswitchd").CombinedOutput()
		if err != nil {
			e.vswitchdErr = fmt.Errorf("go build govs-vswitchd (run from inside the govs module, or pass --vswitchd): %w: %s", err, out)
			return
		}
		e.vswitchdPath = filepath.Join(e.tmp, "govs-vswitchd")
	})
	return e.vswitchdPath, e.vswitchdErr
}

// requiredTools are needed by every run, with the Debian package to install.
var requiredTools = []struct{ bin, pkg string }{
	{"ip", "iproute2"}, {"ss", "iproute2"}, {"ethtool", "ethtool"}, {"iperf3", "iperf3"},
	{"trafgen", "netsniff-ng"}, {"taskset", "util-linux"}, {"sysctl", "procps"},
}

// Run runs the benchmark and returns the report. It returns a partial
// report and ctx's error when ctx is cancelled; everything is torn down in
// both cases.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	var logw io.Writer = io.Discard
	if cfg.Log != nil {
		logw = cfg.Log
	}
	logf := func(format string, args ...any) { fmt.Fprintf(logw, "bench: "+format+"\n", args...) }
	if os.Geteuid() != 0 {
		return nil, errors.New("the network benchmark needs root (network namespaces, veth, AF_PACKET)")
	}
	var missing []string
	for _, t := range requiredTools {
		if _, err := exec.LookPath(t.bin); err != nil {
			missing = append(missing, fmt.Sprintf("%s (package %s)", t.bin, t.pkg))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing tools: %s; apt-get install -y them", strings.Join(missing, ", "))
	}
	scenarios, err := selectScenarios(cfg.Scenarios)
	if err != nil {
		return nil, err
	}
	measurements, err := selectMeasurements(cfg.Measurements)
	if err != nil {
		return nil, err
	}
	removeStaleNamespaces(logf)
	tmp, err := os.MkdirTemp("", "govsbench-")
	if err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	e := &env{
		logf: logf, verbose: cfg.Verbose, tmp: tmp, cpu: cfg.CPU, duration: cfg.Duration,
		crrConcurrency: cfg.CRRConcurrency, self: cfg.WorkerCommand, vswitchdFlag: cfg.Vswitchd,
	}
	rep := newReport(cfg)
	for _, sc := range scenarios {
		res := runScenario(ctx, e, sc, measurements, cfg)
		rep.Scenarios = append(rep.Scenarios, res)
		if ctx.Err() != nil {
			rep.finish()
			return rep, ctx.Err()
		}
	}
	rep.finish()
	return rep, nil
}

func (cfg *Config) fill() error {
	if cfg.Reps == 0 {
		cfg.Reps = 3
	}
	if cfg.Reps < 0 {
		return fmt.Errorf("reps %d: want at least 1", cfg.Reps)
	}
	if cfg.Duration == 0 {
		cfg.Duration = 5 * time.Second
	}
	if cfg.Duration < 200*time.Millisecond {
		return fmt.Errorf("duration %v: want at least 200ms", cfg.Duration)
	}
	switch cfg.Offloads {
	case "":
		cfg.Offloads = "auto"
	case "auto", "on", "off":
	default:
		return fmt.Errorf("offloads %q: want auto, on or off", cfg.Offloads)
	}
	if cfg.CPU == "" {
		cfg.CPU = "0"
	}
	if cfg.CRRConcurrency == 0 {
		cfg.CRRConcurrency = 4
	}
	if cfg.CRRConcurrency < 0 {
		return fmt.Errorf("crr concurrency %d: want at least 1", cfg.CRRConcurrency)
	}
	if len(cfg.WorkerCommand) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("own executable (to run the workers): %w", err)
		}
		cfg.WorkerCommand = []string{exe, "bench"}
	}
	return nil
}

func selectScenarios(names []string) ([]Scenario, error) {
	if len(names) == 0 {
		return Scenarios, nil
	}
	var out []Scenario
	for _, n := range names {
		s, err := ScenarioByName(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func selectMeasurements(names []string) ([]Measurement, error) {
	if len(names) == 0 {
		return Measurements, nil
	}
	var out []Measurement
next:
	for _, n := range names {
		var have []string
		for _, m := range Measurements {
			if m.Name == n {
				out = append(out, m)
				continue next
			}
			have = append(have, m.Name)
		}
		return nil, fmt.Errorf("unknown measurement %q (have %s)", n, strings.Join(have, ", "))
	}
	return out, nil
}

// runScenario sets a scenario up, takes every measurement reps times and
// tears it down. Failures are recorded in the result, not returned, so one
// broken row does not hide the others.
func runScenario(ctx context.Context, e *env, sc Scenario, ms []Measurement, cfg Config) ScenarioResult {
	offloads := cfg.Offloads == "on" || (cfg.Offloads == "auto" && !sc.NoOffloads && (!sc.Userspace || sc.TSO))
	res := ScenarioResult{Name: sc.Name, Description: sc.Description, Offloads: offloadText(offloads), Metrics: map[string]*Stat{}}
	cs := &cleanupStack{}
	defer func() {
		if err := cs.run(); err != nil {
			res.Errors = append(res.Errors, "teardown: "+err.Error())
			e.logf("%s: teardown: %v", sc.Name, err)
		}
	}()
	e.logf("%s: setting up (%s, offloads %s)", sc.Name, sc.Description, res.Offloads)
	t, err := sc.setup(e, cs, offloads)
	var skip *errSkip
	if errors.As(err, &skip) {
		res.Skipped = skip.reason
		e.logf("%s: skipped: %s", sc.Name, skip.reason)
		return res
	}
	if err != nil {
		res.Errors = append(res.Errors, "setup: "+err.Error())
		e.logf("%s: setup failed: %v", sc.Name, err)
		return res
	}
	res.Switch = t.version
	for rep := 1; rep <= cfg.Reps; rep++ {
		for _, m := range ms {
			if ctx.Err() != nil {
				return res
			}
			if len(t.switchPIDs) > 0 {
				if _, err := t.switchTicks(); err != nil {
					res.Errors = append(res.Errors, fmt.Sprintf("%s died before %s rep %d", t.switchCmd, m.Name, rep))
					return res
				}
			}
			vals, err := m.run(ctx, e, t)
			if err != nil {
				if ctx.Err() != nil {
					return res
				}
				msg := fmt.Sprintf("%s rep %d: %v", m.Name, rep, err)
				res.Errors = append(res.Errors, msg)
				e.logf("%s: %s", sc.Name, msg)
				continue
			}
			for k, v := range vals {
				st := res.Metrics[k]
				if st == nil {
					st = &Stat{Unit: metricUnit(k)}
					res.Metrics[k] = st
				}
				st.Values = append(st.Values, v)
			}
			e.logf("%s: rep %d %s: %s", sc.Name, rep, m.Name, formatVals(vals))
		}
	}
	return res
}

func offloadText(on bool) string {
	if on {
		return "on (veth defaults)"
	}
	return "off (tx csum, tso, gso, gro)"
}

// hostInfo describes the machine for the report.
func hostInfo() (host, kernel string, cpus int) {
	host, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	return host, kernel, runtime.NumCPU()
}
