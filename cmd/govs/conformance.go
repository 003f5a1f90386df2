package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/govs-project/govs/internal/conformance"
)

func init() {
	commands = append(commands, command{
		"conformance",
		"conformance [--cases DIR] [--targets govs,ovs] [--out FILE.tsv] [--baseline FILE.tsv] [FILE|DIR...]: run the os-ken OpenFlow 1.3 switch test suite against govs-vswitchd and/or Open vSwitch, with Open vSwitch as the tester switch (root)",
		runConformance,
	})
}

func runConformance(args []string) error {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	cases := fs.String("cases", "../shared/conformance/osken-of13", "the suite's `DIR`")
	targets := fs.String("targets", "govs,ovs", "switches under test, comma-separated: govs, ovs")
	out := fs.String("out", "", "write per-case results as TSV to `FILE` (and the tester logs next to it)")
	baseline := fs.String("baseline", "", "TSV `FILE` of an earlier run: report govs cases that passed there and fail now")
	vswitchd := fs.String("vswitchd", "", "govs-vswitchd `BINARY` (default: next to govs)")
	timeout := fs.Duration("timeout", 3*time.Hour, "bound of each target's run")
	serial := fs.Bool("serial", false, "run the targets one after the other (default: at the same time)")
	verbose := fs.Bool("v", false, "log the harness's progress")
	capture := fs.Bool("capture", false, "write every frame of each target's namespace (headers, OpenFlow included) to a pcap next to --out")
	if err := fs.Parse(args); err != nil {
		return err
	}
	files, err := conformance.LoadCases(*cases, fs.Args())
	if err != nil {
		return err
	}
	if *vswitchd == "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		*vswitchd = filepath.Join(filepath.Dir(self), "govs-vswitchd")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(string, ...any) {}
	if *verbose {
		logf = func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	}
	rep := &conformance.Report{Targets: strings.Split(*targets, ","), Results: map[string][]conformance.Result{}}
	var (
		mu   sync.Mutex
		errs []string
		wg   sync.WaitGroup
	)
	for _, t := range rep.Targets {
		runOne := func() {
			keep, pcap := "", ""
			if *out != "" {
				keep = strings.TrimSuffix(*out, ".tsv") + "." + t + ".log"
				if *capture {
					pcap = strings.TrimSuffix(*out, ".tsv") + "." + t + ".pcap"
				}
			}
			start := time.Now()
			res, err := conformance.Run(ctx, conformance.Options{
				Target: t, CaseDir: *cases, Files: files, Vswitchd: *vswitchd,
				Timeout: *timeout, Logf: logf, KeepLog: keep, Capture: pcap,
			})
			fmt.Fprintf(os.Stderr, "conformance: %s done in %s\n", t, time.Since(start).Round(time.Second))
			mu.Lock()
			defer mu.Unlock()
			rep.Results[t] = res
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", t, err))
			}
		}
		if *serial {
			runOne()
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); runOne() }()
	}
	wg.Wait()
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		if err := rep.WriteTSV(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	rep.WriteSummary(os.Stdout)
	if *baseline != "" && rep.Results[conformance.TargetGovs] != nil {
		base, err := conformance.ReadBaseline(*baseline, conformance.TargetGovs)
		if err != nil {
			return err
		}
		reg := conformance.Regressions(base, rep.Results[conformance.TargetGovs])
		for _, r := range reg {
			fmt.Printf("REGRESSION %s: %s: %s\n", r.File, r.Case, r.Detail)
		}
		if len(reg) > 0 {
			errs = append(errs, fmt.Sprintf("%d cases passed in %s and fail now", len(reg), *baseline))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
