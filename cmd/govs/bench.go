package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/govs-project/govs/bench"
)

func init() {
	commands = append(commands, command{
		"bench",
		"bench [--scenario NAME[,NAME]] [--measure NAME[,NAME]] [--reps N] [--duration 5s] [--out results.json]: pod-to-pod network benchmark of govs against a veth pair, a Linux bridge and Open vSwitch (root)",
		runBench,
	})
}

func runBench(args []string) error {
	// The harness re-executes this binary as `govs bench` for its pinned
	// request/response workers; they are told apart by the environment.
	bench.RunWorkerIfRequested()

	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var scenarios, measures listFlag
	fs.Var(&scenarios, "scenario", "scenario `NAME` to run (repeat or comma-separate; default all): "+scenarioNames())
	fs.Var(&measures, "measure", "measurement `NAME` to take (repeat or comma-separate; default all): "+measurementNames())
	reps := fs.Int("reps", 3, "repetitions of each measurement")
	duration := fs.Duration("duration", 5e9, "measured `TIME` of each measurement")
	out := fs.String("out", "", "write the results as JSON to `FILE` (and CSV and an SVG plot next to it)")
	offloads := fs.String("offloads", "auto", "pod veth offloads: auto (off for userspace switches only), on, off")
	cpu := fs.String("cpu", "0", "`CPU` for trafgen and the pinned request/response workers (taskset -c)")
	crr := fs.Int("crr-concurrency", 4, "concurrent connect/close loops")
	vswitchd := fs.String("vswitchd", "", "govs-vswitchd `BINARY` (default: next to govs, else go build)")
	verbose := fs.Bool("v", false, "also log daemon output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench.Run(ctx, bench.Config{
		Scenarios: scenarios, Measurements: measures, Reps: *reps, Duration: *duration,
		Offloads: *offloads, CPU: *cpu, CRRConcurrency: *crr, Vswitchd: *vswitchd,
		Log: os.Stderr, Verbose: *verbose,
	})
	if rep != nil {
		if werr := rep.WriteTable(os.Stdout); werr != nil && err == nil {
			err = werr
		}
		if *out != "" {
			others, werr := rep.WriteFiles(*out)
			if werr != nil && err == nil {
				err = werr
			}
			if werr == nil {
				fmt.Fprintf(os.Stderr, "bench: wrote %s and %s\n", *out, strings.Join(others, ", "))
			}
		}
	}
	return err
}

// listFlag collects repeated and comma-separated values.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

func scenarioNames() string {
	var n []string
	for _, s := range bench.Scenarios {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

func measurementNames() string {
	var n []string
	for _, m := range bench.Measurements {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}
