// Command govs-vswitchd is the govs switch daemon: it runs bridges whose
// ports are real interfaces (AF_PACKET), TAP internal ports and Geneve
// tunnels, serves OpenFlow on each bridge's management socket
// <rundir>/<bridge>.mgmt (where `ovs-ofctl BRIDGE` and Antrea's ofnet
// connect), and takes configuration changes from `govs` over
// <rundir>/govs-vswitchd.ctl.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/internal/vswitchd"
)

func main() {
	rundir := flag.String("rundir", "/var/run/govs", "`DIR` for the management and control sockets")
	config := flag.String("config", "", "YAML `FILE` with the bridges and ports to create at start")
	level := flag.String("log-level", "info", "log `LEVEL`: debug, info, warn, error")
	tso := flag.Bool("userspace-tso", false, "open system ports with offload metadata (PACKET_VNET_HDR): forward TCP super-segments and partial checksums from veths with offloads on, like OVS's userspace-tso-enable")
	pmd := flag.Bool("pmd", false, "serve each bridge's system ports from one busy-polling thread (like OVS's PMD threads): lowest latency, a CPU busy while traffic flows")
	pmdCPU := flag.Int("pmd-cpu", -1, "pin the PMD threads to `CPU` (implies --pmd); -1 leaves them unpinned")
	nice := flag.Int("nice", vswitchd.DefaultNiceness, "run every thread at niceness `N` (-20 to 19), like ovs-ctl's --ovs-vswitchd-priority (default -10 there too), so the datapath keeps up with busy pods; 0 is the default scheduling")
	flag.Parse()
	opts := options{tso: *tso, pmd: *pmd || *pmdCPU >= 0, pmdCPU: *pmdCPU, nice: *nice, database: flag.Arg(0)}
	if err := run(*rundir, *config, *level, opts); err != nil {
		fmt.Fprintf(os.Stderr, "govs-vswitchd: %v\n", err)
		os.Exit(1)
	}
}

// options are the datapath flags.
type options struct {
	tso    bool
	pmd    bool
	pmdCPU int
	nice   int
	// database is ovs-vswitchd's positional DATABASE (unix:PATH,
	// tcp:IP:PORT): the configuration comes from there.
	database string
}

func run(rundir, config, level string, o options) error {
	var lvl zapcore.Level
	if err := lvl.Set(level); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = zap.NewAtomicLevelAt(lvl)
	zc.Encoding = "console"
	zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	log, err := zc.Build()
	if err != nil {
		return err
	}
	defer log.Sync()
	if o.nice < -20 || o.nice > 19 {
		return fmt.Errorf("--nice %d: niceness goes from -20 to 19", o.nice)
	}
	if err := vswitchd.SetNiceness(o.nice); err != nil {
		// Not fatal: without CAP_SYS_NICE the daemon still works, it just
		// competes for the CPU like any process.
		log.Warn("cannot set the niceness", zap.Int("nice", o.nice), zap.Error(err))
	}
	if err := os.MkdirAll(rundir, 0o755); err != nil {
		return fmt.Errorf("rundir: %w", err)
	}
	d := vswitchd.New(rundir, log)
	defer d.Close()
	if o.pmdCPU >= runtime.NumCPU() {
		return fmt.Errorf("--pmd-cpu %d: this machine has CPUs 0 to %d", o.pmdCPU, runtime.NumCPU()-1)
	}
	d.UserspaceTSO = o.tso
	d.PMD = datapath.PMDConfig{Enabled: o.pmd, CPU: o.pmdCPU}
	if config != "" {
		c, err := vswitchd.LoadConfig(config)
		if err != nil {
			return err
		}
		d.UserspaceTSO = d.UserspaceTSO || c.UserspaceTSO
		if c.PMD || c.PMDCPU != nil {
			d.PMD.Enabled = true
		}
		if c.PMDCPU != nil && o.pmdCPU < 0 {
			d.PMD.CPU = *c.PMDCPU
		}
		if err := d.Apply(c); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log.Info("govs-vswitchd started", zap.String("rundir", rundir))
	if o.database != "" {
		go func() {
			if err := d.ServeDatabase(ctx, o.database); err != nil {
				log.Error("database", zap.Error(err))
				stop()
			}
		}()
	}
	return d.ServeCtl(ctx)
}
