// Command govs-vswitchd is the govs switch daemon: it runs bridges whose
// ports are real interfaces (AF_PACKET), TAP internal ports and Geneve
// tunnels, serves OpenFlow on each bridge's management socket
// <rundir>/<bridge>.mgmt (where `ovs-ofctl BRIDGE` and Antrea's ofnet
// connect), ovs-appctl on <rundir>/ovs-vswitchd.<pid>.ctl, and takes
// configuration changes from `govs` over <rundir>/govs-vswitchd.ctl.
//
// It takes ovs-vswitchd's command line (the one ovs-ctl builds): with a
// database argument it is configured from OVSDB; installed as
// ovs-vswitchd (`make install`), ovs-ctl starts, checks and stops it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/offload"
	"github.com/govs-project/govs/internal/appctl"
	"github.com/govs-project/govs/internal/daemonproc"
	"github.com/govs-project/govs/internal/metrics"
	"github.com/govs-project/govs/internal/unixctl"
	"github.com/govs-project/govs/internal/unixsock"
	"github.com/govs-project/govs/internal/vswitchd"
)

// program is the name OVS tools look the daemon up by: the pidfile
// ovs-vswitchd.pid and the socket ovs-vswitchd.PID.ctl.
const program = "ovs-vswitchd"

func main() {
	name := filepath.Base(os.Args[0])
	a, err := parseArgs(os.Args[1:], vswitchd.DefaultNiceness)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	if a.help {
		fmt.Printf(usageText, name, name)
		return
	}
	if a.version {
		fmt.Print(appctl.VersionText(name))
		return
	}
	a.resolve(program, os.Getenv)
	n, err := daemonproc.Start(daemonproc.Options{Detach: a.detach, Monitor: a.monitor, NoChdir: a.noChdir})
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	if err := run(a, n); err != nil {
		n.Fail(err)
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func run(a *args, ready *daemonproc.Notifier) error {
	if a.user != "" && strings.Split(a.user, ":")[0] != "root" {
		return fmt.Errorf("--user %s: govs-vswitchd runs as root only (it opens AF_PACKET/AF_XDP sockets and TAPs)", a.user)
	}
	vlog := appctl.NewVLog()
	vlog.LogFile = a.logFile
	for _, spec := range a.verbose {
		if err := vlog.Set(spec); err != nil {
			return fmt.Errorf("-v%s: %w", spec, err)
		}
	}
	if a.logLevel != "" {
		var lvl zapcore.Level
		if err := lvl.Set(a.logLevel); err != nil {
			return fmt.Errorf("--log-level: %w", err)
		}
		vlog.Console.SetLevel(lvl)
		vlog.File.SetLevel(lvl)
	}
	log, err := vlog.Logger()
	if err != nil {
		return err
	}
	defer log.Sync()
	defer vlog.Close()
	if a.nice < -20 || a.nice > 19 {
		return fmt.Errorf("--nice %d: niceness goes from -20 to 19", a.nice)
	}
	if err := vswitchd.SetNiceness(a.nice); err != nil {
		// Not fatal: without CAP_SYS_NICE the daemon still works, it just
		// competes for the CPU like any process.
		log.Warn("cannot set the niceness", zap.Int("nice", a.nice), zap.Error(err))
	}
	if a.mlockall {
		if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE); err != nil {
			log.Warn("mlockall failed", zap.Error(err))
		}
	}
	if err := os.MkdirAll(a.rundir, 0o755); err != nil {
		return fmt.Errorf("rundir: %w", err)
	}
	pf, err := daemonproc.CreatePidfile(a.pidfile)
	if err != nil {
		return err
	}
	defer pf.Remove()
	// Holding the pidfile, nothing alive uses this rundir's sockets: what
	// is left is a killed daemon's.
	if gone := daemonproc.RemoveStaleSockets(a.rundir, program, []string{"*.mgmt", vswitchd.CtlSocketName}); len(gone) > 0 {
		log.Info("removed stale sockets", zap.Strings("files", gone))
	}
	if a.pmdCPU >= runtime.NumCPU() {
		return fmt.Errorf("--pmd-cpu %d: this machine has CPUs 0 to %d", a.pmdCPU, runtime.NumCPU()-1)
	}
	d := vswitchd.New(a.rundir, log)
	defer d.Close()
	// The kernel fast path's state is pinned and outlives a stop, a
	// restart or a crash (established connections keep flowing in the
	// kernel); `ovs-appctl exit --cleanup` removes it (docs/offload.md).
	switch a.bpffs {
	case "":
		d.PinRoot = offload.DefaultPinRoot
	case "none":
	default:
		d.PinRoot = a.bpffs
	}
	d.SetRetainKernelState(true)
	if a.metricsAddr != "" {
		ln, err := metrics.Serve(a.metricsAddr, d.MetricsSnapshot)
		if err != nil {
			return fmt.Errorf("--metrics-address: %w", err)
		}
		defer ln.Close()
		log.Info("serving Prometheus metrics", zap.String("address", ln.Addr().String()))
	}
	d.SetLimits(a.limits)
	d.UserspaceTSO = a.tso
	d.UserspaceTSOFlag = a.tso
	if a.offload != "" {
		if err := d.SetOffloadFlag(a.offload); err != nil {
			return err
		}
	}
	d.PMD = datapath.PMDConfig{Enabled: a.pmd || a.pmdCPU >= 0, CPU: a.pmdCPU}
	d.PortThreads = a.portThreads
	if a.config != "" {
		c, err := vswitchd.LoadConfig(a.config)
		if err != nil {
			return err
		}
		d.UserspaceTSO = d.UserspaceTSO || c.UserspaceTSO
		d.UserspaceTSOFlag = d.UserspaceTSO
		if c.PMD || c.PMDCPU != nil {
			d.PMD.Enabled = true
		}
		if c.PMDCPU != nil && a.pmdCPU < 0 {
			d.PMD.CPU = *c.PMDCPU
		}
		if err := d.Apply(c); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, exit := context.WithCancel(ctx)
	defer exit()

	app := appctl.New(d, vlog, func() {
		log.Info("exiting on ovs-appctl exit")
		exit()
	})
	ctlPath := a.unixctl
	if ctlPath == "" {
		ctlPath = unixctl.SocketPath(a.rundir, program, os.Getpid())
	}
	ln, err := unixsock.Listen(ctlPath)
	if err != nil {
		return err
	}
	errc := make(chan error, 2)
	go func() { errc <- app.Server.Serve(ctx, ln) }()
	go app.RunCoverage(ctx)
	go func() { errc <- d.ServeCtl(ctx) }()
	if a.database != "" {
		go serveDatabase(ctx, d, a.database, log)
	}
	// Up when the sockets answer: the govs control socket is created by
	// ServeCtl, so wait for it before telling --detach's parent.
	waitForSocket(filepath.Join(a.rundir, vswitchd.CtlSocketName), 5*time.Second)
	if a.database != "" {
		// As ovs-vswitchd: --detach's parent returns once the daemon has
		// applied the database's configuration (written cur_cfg), so
		// what ovs-ctl runs next finds the bridges and ofports set.
		select {
		case <-d.Configured():
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		}
	}
	log.Info("govs-vswitchd started", zap.String("rundir", a.rundir), zap.String("unixctl", ctlPath),
		zap.String("pidfile", a.pidfile), zap.String("database", a.database))
	ready.Ready()
	var runErr error
	pending := 2
	select {
	case <-ctx.Done():
	case runErr = <-errc:
		pending--
	}
	exit()
	// Both socket servers return once their listeners are closed, which
	// removes the socket files: wait for that before exiting.
	for ; pending > 0; pending-- {
		select {
		case <-errc:
		case <-time.After(2 * time.Second):
			pending = 0
		}
	}
	log.Info("govs-vswitchd exiting")
	return runErr
}

// serveDatabase keeps the daemon configured from OVSDB: like
// ovs-vswitchd, it goes on running and retries (with backoff) while the
// database is unreachable.
func serveDatabase(ctx context.Context, d *vswitchd.Daemon, remote string, log *zap.Logger) {
	backoff := time.Second
	for ctx.Err() == nil {
		err := d.ServeDatabase(ctx, remote)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("session ended")
		}
		log.Warn("database connection failed, retrying", zap.String("database", remote), zap.Duration("in", backoff), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 8*time.Second)
	}
}

func waitForSocket(path string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
