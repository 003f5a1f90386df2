package conformance

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/govs-project/govs/internal/ovstest"
)

// TesterApp is os-ken's switch test tool as Debian's python3-os-ken ships it.
const TesterApp = "/usr/lib/python3/dist-packages/os_ken/tests/switch/tester.py"

// Target kinds: the switch under test.
const (
	TargetGovs = "govs"
	TargetOVS  = "ovs"
)

// Options configure one run of the suite against one target.
type Options struct {
	// Target is TargetGovs or TargetOVS.
	Target string
	// CaseDir is the suite directory (holding action/, match/, ...).
	CaseDir string
	// Files are the case files to run, in LoadCases order.
	Files []CaseFile
	// Vswitchd is the govs-vswitchd binary (TargetGovs only).
	Vswitchd string
	// Timeout bounds the whole run; the cases not reached are "not run".
	Timeout time.Duration
	// Logf receives progress messages; nil discards them.
	Logf func(format string, args ...any)
	// KeepLog, if not empty, is a file the tester's log is copied to.
	KeepLog string
	// Capture, if not empty, is a pcap file that gets every frame of the
	// namespace (the veths and the OpenFlow connections on loopback),
	// headers only, to find where a case's packet went.
	Capture string
}

// testerOptions configure the tester Open vSwitch. Its datapath keeps no
// flows (flow-limit 0: every packet is translated against the OpenFlow
// table as it is then): before each case the tester app deletes all of the
// tester's flows and adds its packet-in flow again, and a barrier reply
// does not wait for Open vSwitch's revalidators, which may look at the
// table between the delete and the add, rewrite the cached datapath flow
// to drop, and fix it only milliseconds later. The case's packet, sent
// back by the target in that window, was dropped by the tester ("Receiving
// timeout: increment in rx_packets in tester"), a few cases per run
// whichever switch was the target.
func testerOptions() ovstest.Options {
	return ovstest.Options{
		Bridge: "tester", FailMode: "secure", Protocols: []string{"OpenFlow13"},
		OtherConfig: map[string]string{"flow-limit": "0"},
	}
}

// ofPort is the OpenFlow port the tester app listens on inside the private
// namespace (private, so the standard port cannot clash with other runs).
const ofPort = "6653"

// Run builds the topology (a private namespace holding a tester Open
// vSwitch with datapath id 2, the target with datapath id 1, their ports
// 1-3 wired by veth pairs, and osken-manager running the tester app that
// both switches connect to), runs the case files, tears everything down
// and returns the per-case results.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if _, err := exec.LookPath("osken-manager"); err != nil {
		return nil, fmt.Errorf("osken-manager not installed (Debian package python3-os-ken): %w", err)
	}
	if opts.Timeout == 0 {
		opts.Timeout = time.Hour
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	// The tester switch, and the namespace everything runs in.
	ovs, stopOVS, err := ovstest.Launch(testerOptions(), logf)
	if err != nil {
		return nil, fmt.Errorf("tester Open vSwitch: %w", err)
	}
	var cleanups []func() error
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			if cerr := cleanups[i](); cerr != nil {
				logf("conformance: teardown: %v", cerr)
			}
		}
		if serr := stopOVS(); serr != nil {
			logf("conformance: tester teardown: %v", serr)
		}
	}()
	ns := ovs.Netns()
	nsExec := func(args ...string) error {
		out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w (%s)", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	// Linux's own IPv6 traffic (router solicitations, MLD) on the veths
	// would reach the tester as unexpected packets.
	for _, k := range []string{"all", "default"} {
		if err := nsExec("sysctl", "-qw", "net.ipv6.conf."+k+".disable_ipv6=1"); err != nil {
			return nil, err
		}
	}
	for i := 1; i <= 3; i++ {
		t, s := fmt.Sprintf("target%d", i), fmt.Sprintf("tester%d", i)
		if err := nsExec("ip", "link", "add", t, "type", "veth", "peer", "name", s); err != nil {
			return nil, err
		}
		for _, d := range []string{t, s} {
			if err := nsExec("ip", "link", "set", d, "up"); err != nil {
				return nil, err
			}
		}
		if err := ovs.AddPort(ovstest.Port{Name: s, OFPort: i}); err != nil {
			return nil, fmt.Errorf("tester port %s: %w", s, err)
		}
	}
	if _, err := ovs.Vsctl("set", "bridge", "tester", "other-config:datapath-id=0000000000000002"); err != nil {
		return nil, err
	}

	if opts.Capture != "" {
		stop, err := startCapture(ns, opts.Capture)
		if err != nil {
			return nil, err
		}
		cleanups = append(cleanups, stop)
		// The tester's side of each packet: its upcalls and OpenFlow
		// messages, with its counters at the end.
		if _, err := ovs.Appctl("vlog/set", "ofproto_dpif_upcall:file:dbg", "dpif_netdev:file:dbg", "vconn:file:dbg", "netdev_linux:file:dbg"); err != nil {
			return nil, err
		}
		cleanups = append(cleanups, func() error {
			var b strings.Builder
			for _, c := range [][]string{{"coverage/show"}, {"dpctl/show", "-s"}, {"dpif-netdev/pmd-stats-show"}} {
				out, err := ovs.Appctl(c...)
				fmt.Fprintf(&b, "### ovs-appctl %s (%v)\n%s\n", strings.Join(c, " "), err, out)
			}
			b.WriteString("### ovs-vswitchd.log\n")
			b.WriteString(ovs.VswitchdLog())
			return os.WriteFile(strings.TrimSuffix(opts.Capture, ".pcap")+".tester-ovs.txt", []byte(b.String()), 0o644)
		})
	}

	// The tester app, started before the switches connect.
	testDir, err := os.MkdirTemp("", "govs-conformance-cases-")
	if err != nil {
		return nil, err
	}
	cleanups = append(cleanups, func() error { return os.RemoveAll(testDir) })
	for i, f := range opts.Files {
		data, err := os.ReadFile(filepath.Join(opts.CaseDir, f.Path))
		if err != nil {
			return nil, err
		}
		// Flat names: the tester orders files by description anyway.
		if err := os.WriteFile(filepath.Join(testDir, fmt.Sprintf("%03d.json", i)), data, 0o644); err != nil {
			return nil, err
		}
	}
	// The warm-up file sorts first: the tester's first packets after the
	// switches connect can be lost (the tester switch's datapath is still
	// settling), which would fail the first real case.
	if err := os.WriteFile(filepath.Join(testDir, "warmup.json"), []byte(warmUpCases), 0o644); err != nil {
		return nil, err
	}
	logPath := filepath.Join(testDir, "tester.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	osken := exec.Command("ip", "netns", "exec", ns, "osken-manager",
		"--ofp-listen-host", "0.0.0.0", "--ofp-tcp-listen-port", ofPort,
		"--test-switch-dir", testDir, TesterApp)
	osken.Stdout, osken.Stderr = logFile, logFile
	if err := osken.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("osken-manager: %w", err)
	}
	done := make(chan struct{}) // closed when osken-manager has exited
	go func() { osken.Wait(); close(done) }()
	cleanups = append(cleanups, func() error {
		select {
		case <-done:
		default:
			osken.Process.Kill() // "ip netns exec" execs in place: this is osken-manager
			<-done
		}
		return logFile.Close()
	})

	switch opts.Target {
	case TargetOVS:
		stop, err := startOVSTarget(ns, logf)
		if err != nil {
			return nil, err
		}
		cleanups = append(cleanups, stop)
	case TargetGovs:
		stop, err := startGovs(ns, opts.Vswitchd, "tcp:127.0.0.1:"+ofPort, logf)
		if err != nil {
			return nil, err
		}
		cleanups = append(cleanups, stop)
	default:
		return nil, fmt.Errorf("target %q: want %q or %q", opts.Target, TargetGovs, TargetOVS)
	}
	// The tester app starts the first case as soon as both switches are
	// connected: let both datapaths settle on their new ports first (a
	// first packet sent at once can be lost).
	time.Sleep(2 * time.Second)
	if _, err := ovs.Vsctl("set-controller", "tester", "tcp:127.0.0.1:"+ofPort); err != nil {
		return nil, err
	}
	logf("conformance: %s: running %d case files", opts.Target, len(opts.Files))

	var runErr error
	select {
	case <-done:
		// The tester stops itself with SIGTERM when it has run every file.
	case <-ctx.Done():
		runErr = fmt.Errorf("tester did not finish: %w", ctx.Err())
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		return nil, err
	}
	if opts.KeepLog != "" {
		if err := os.WriteFile(opts.KeepLog, log, 0o644); err != nil {
			return nil, err
		}
	}
	warm := CaseFile{Path: "warm-up", Description: warmUpDescription, Cases: []string{warmUpCase, warmUpCase}}
	res := ParseLog(string(log), append([]CaseFile{warm}, opts.Files...))[len(warm.Cases):]
	if runErr == nil && !strings.Contains(string(log), "---  Test end  ---") {
		runErr = errors.New("tester exited before the end of the tests")
	}
	return res, runErr
}

// startCapture runs tcpdump on every interface of the namespace, writing
// the first 256 bytes of each frame to file; stop ends it and waits for
// the file to be complete.
func startCapture(ns, file string) (stop func() error, err error) {
	cmd := exec.Command("ip", "netns", "exec", ns, "tcpdump", "-i", "any", "-s", "256", "-U", "-n", "-w", file)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("tcpdump: %w", err)
	}
	// tcpdump says "listening on" once it captures.
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on") {
				close(listening)
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop = func() error {
		stopProcess(cmd, exited, 5*time.Second)
		return nil
	}
	select {
	case <-listening:
		return stop, nil
	case <-exited:
		return nil, errors.New("tcpdump exited before capturing")
	case <-time.After(10 * time.Second):
		stop()
		return nil, errors.New("tcpdump did not start capturing")
	}
}

// stopProcess interrupts cmd (exited is closed once it has exited) and
// kills it if it has not exited within grace.
func stopProcess(cmd *exec.Cmd, exited <-chan struct{}, grace time.Duration) {
	cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(grace):
		cmd.Process.Kill()
		<-exited
	}
}

// startGovs runs govs-vswitchd in the namespace with bridge "target"
// (datapath id 1) on the veths target1-3 as OpenFlow ports 1-3.
func startGovs(ns, vswitchd, controller string, logf func(string, ...any)) (stop func() error, err error) {
	b := make([]byte, 4)
	rand.Read(b)
	rundir, err := os.MkdirTemp("/tmp", "govs-conformance-"+hex.EncodeToString(b)+"-")
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(rundir, "govs-vswitchd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(rundir)
		return nil, err
	}
	cmd := exec.Command("ip", "netns", "exec", ns, vswitchd, "--rundir", rundir, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		os.RemoveAll(rundir)
		return nil, fmt.Errorf("govs-vswitchd: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop = func() error {
		stopProcess(cmd, exited, 10*time.Second)
		logFile.Close()
		if data, _ := os.ReadFile(logPath); len(data) > 0 {
			logf("conformance: govs-vswitchd log:\n%s", data)
		}
		return os.RemoveAll(rundir)
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	ctl := filepath.Join(rundir, "govs-vswitchd.ctl")
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ctl); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, errors.New("govs-vswitchd did not create its control socket")
		}
	}
	govs := filepath.Join(filepath.Dir(vswitchd), "govs")
	vsctl := func(args ...string) error {
		out, err := exec.Command(govs, append([]string{args[0], "--rundir", rundir}, args[1:]...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("govs %s: %w (%s)", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := vsctl("add-br", "target", "datapath_id=0000000000000001", "fail_mode=secure", "controller="+controller); err != nil {
		return nil, err
	}
	for i := 1; i <= 3; i++ {
		if err := vsctl("add-port", "target", fmt.Sprintf("target%d", i), fmt.Sprintf("ofport_request=%d", i)); err != nil {
			return nil, err
		}
	}
	return stop, nil
}

// startOVSTarget runs a second private Open vSwitch as the target, bridge
// "target" with datapath id 1, in its own namespace (one netdev datapath
// per namespace): the veths target1-3 move there, and a veth pair with
// private addresses carries its controller connection to the tester app.
func startOVSTarget(testerNS string, logf func(string, ...any)) (stop func() error, err error) {
	ovs, stop, err := ovstest.Launch(ovstest.Options{
		Bridge: "target", FailMode: "secure", Protocols: []string{"OpenFlow13"},
	}, logf)
	if err != nil {
		return nil, fmt.Errorf("target Open vSwitch: %w", err)
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	ns := ovs.Netns()
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w (%s)", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	steps := [][]string{
		{"netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"},
		{"netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"},
		{"-n", testerNS, "link", "add", "ctl-tester", "type", "veth", "peer", "name", "ctl-target", "netns", ns},
		{"-n", testerNS, "addr", "add", "192.168.251.1/30", "dev", "ctl-tester"},
		{"-n", testerNS, "link", "set", "ctl-tester", "up"},
		{"-n", ns, "addr", "add", "192.168.251.2/30", "dev", "ctl-target"},
		{"-n", ns, "link", "set", "ctl-target", "up"},
	}
	for i := 1; i <= 3; i++ {
		p := fmt.Sprintf("target%d", i)
		steps = append(steps, []string{"-n", testerNS, "link", "set", p, "netns", ns}, []string{"-n", ns, "link", "set", p, "up"})
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return nil, err
		}
	}
	for i := 1; i <= 3; i++ {
		if err := ovs.AddPort(ovstest.Port{Name: fmt.Sprintf("target%d", i), OFPort: i}); err != nil {
			return nil, fmt.Errorf("target port %d: %w", i, err)
		}
	}
	if _, err := ovs.Vsctl("set", "bridge", "target", "other-config:datapath-id=0000000000000001"); err != nil {
		return nil, err
	}
	if _, err := ovs.Vsctl("set-controller", "target", "tcp:192.168.251.1:"+ofPort); err != nil {
		return nil, err
	}
	return stop, nil
}

// warmUpCases is a case file of the suite's simplest case (action/00_OUTPUT's
// first), twice, run before the real ones and left out of the results.
const (
	warmUpDescription = "!warm-up"
	warmUpCase        = "warm-up: ethernet/ipv4/tcp-->'actions=output:2'"
	warmUpCases       = `["!warm-up", {"description": "warm-up: ethernet/ipv4/tcp-->'actions=output:2'", "prerequisite": [{"OFPFlowMod": {"table_id": 0, "instructions": [{"OFPInstructionActions": {"actions": [{"OFPActionOutput": {"port": 2}}], "type": 4}}]}}], "tests": [{"ingress": ["ethernet(dst='22:22:22:22:22:22', src='12:11:11:11:11:11', ethertype=2048)", "ipv4(tos=32, proto=6, src='192.168.10.10', dst='192.168.20.20', ttl=64)", "tcp(dst_port=2222, option=bytes(b'\\x00' * 4), src_port=11111)", "b'\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\t\\n\\x0b\\x0c\\r\\x0e\\x0f\\x10\\x11\\x12\\x13\\x14\\x15\\x16\\x17\\x18\\x19\\x1a\\x1b\\x1c\\x1d\\x1e\\x1f'"], "egress": ["ethernet(dst='22:22:22:22:22:22', src='12:11:11:11:11:11', ethertype=2048)", "ipv4(tos=32, proto=6, src='192.168.10.10', dst='192.168.20.20', ttl=64)", "tcp(dst_port=2222, option=bytes(b'\\x00' * 4), src_port=11111)", "b'\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\t\\n\\x0b\\x0c\\r\\x0e\\x0f\\x10\\x11\\x12\\x13\\x14\\x15\\x16\\x17\\x18\\x19\\x1a\\x1b\\x1c\\x1d\\x1e\\x1f'"]}]}, {"description": "warm-up: ethernet/ipv4/tcp-->'actions=output:2'", "prerequisite": [{"OFPFlowMod": {"table_id": 0, "instructions": [{"OFPInstructionActions": {"actions": [{"OFPActionOutput": {"port": 2}}], "type": 4}}]}}], "tests": [{"ingress": ["ethernet(dst='22:22:22:22:22:22', src='12:11:11:11:11:11', ethertype=2048)", "ipv4(tos=32, proto=6, src='192.168.10.10', dst='192.168.20.20', ttl=64)", "tcp(dst_port=2222, option=bytes(b'\\x00' * 4), src_port=11111)", "b'\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\t\\n\\x0b\\x0c\\r\\x0e\\x0f\\x10\\x11\\x12\\x13\\x14\\x15\\x16\\x17\\x18\\x19\\x1a\\x1b\\x1c\\x1d\\x1e\\x1f'"], "egress": ["ethernet(dst='22:22:22:22:22:22', src='12:11:11:11:11:11', ethertype=2048)", "ipv4(tos=32, proto=6, src='192.168.10.10', dst='192.168.20.20', ttl=64)", "tcp(dst_port=2222, option=bytes(b'\\x00' * 4), src_port=11111)", "b'\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\t\\n\\x0b\\x0c\\r\\x0e\\x0f\\x10\\x11\\x12\\x13\\x14\\x15\\x16\\x17\\x18\\x19\\x1a\\x1b\\x1c\\x1d\\x1e\\x1f'"]}]}]`
)
