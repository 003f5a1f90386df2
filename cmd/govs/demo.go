package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/internal/vswitchd"
)

func init() {
	commands = append(commands, command{"demo",
		"demo [--keep | --clean | --offline]: build seed worker 1 in network namespaces, run govs-vswitchd, drive real traffic through the Antrea pipeline and show what passed and what was dropped (root; otherwise the offline trace)",
		runDemo})
}

// The demo's names: every namespace is demoPrefix + run id + "-" + role,
// so `govs demo --clean` finds what a --keep run left.
const demoPrefix = "govsdemo-"

// demoPod is one pod of seed 003 §3 worker 1.
type demoPod struct {
	name, ip, mac string
	ofport        int
}

var demoPods = []demoPod{
	{"coredns", "10.222.1.2", "f2:82:cc:96:da:bd", 3},
	{"backend1", "10.222.1.47", "f2:32:d8:07:e2:a6", 48},
	{"frontend", "10.222.1.48", "be:2c:bf:e4:ec:c5", 49},
}

func runDemo(args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	keep := fs.Bool("keep", false, "leave the topology and the switch running, and print commands to look around")
	clean := fs.Bool("clean", false, "remove what earlier `govs demo --keep` runs left")
	offline := fs.Bool("offline", false, "only trace the service packet through the embedded pipeline (no root needed)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("usage: govs demo [--keep | --clean | --offline]")
	}
	switch {
	case *clean:
		return demoClean(cmdOut)
	case *offline:
		return runTrace([]string{"--demo"})
	case os.Geteuid() != 0:
		fmt.Fprintln(cmdOut, "govs demo: the live demo needs root (network namespaces, veths, a TAP port); showing the offline trace instead.")
		fmt.Fprintln(cmdOut)
		return runTrace([]string{"--demo"})
	}
	d := &demo{out: cmdOut, keep: *keep, id: netnstest.UniqueName("")[:6]}
	return d.run()
}

// demo is one live run. It implements netnstest.T, so the topology is
// built with the helpers the end-to-end tests use, and every step
// registers how to undo itself.
type demo struct {
	out      io.Writer
	keep     bool
	id       string
	cleanups []func()
	rundir   string
	node     *netnstest.NS
	pods     map[string]*netnstest.NS
	veths    map[string]*netnstest.Veth
	stopping atomic.Bool
	rows     []demoRow
	flows0   map[string]flowCount
}

// demoFatal carries a failed step to run, which cleans up.
type demoFatal struct{ msg string }

func (d *demo) Helper()                   {}
func (d *demo) Cleanup(f func())          { d.cleanups = append(d.cleanups, f) }
func (d *demo) Fatal(a ...any)            { panic(demoFatal{fmt.Sprint(a...)}) }
func (d *demo) Fatalf(f string, a ...any) { panic(demoFatal{fmt.Sprintf(f, a...)}) }
func (d *demo) Errorf(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "govs demo: "+f+"\n", a...)
}

// check stops the demo between steps once SIGINT or SIGTERM arrived.
func (d *demo) check() {
	if d.stopping.Load() {
		d.Fatal("interrupted")
	}
}

func (d *demo) run() (err error) {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	// A closed stdout (govs demo | head) must not kill the demo before it
	// cleans up: with SIGPIPE caught, writes just fail.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	defer signal.Stop(sig)
	go func() {
		for range sig {
			d.stopping.Store(true)
		}
	}()
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(demoFatal)
			if !ok {
				panic(r)
			}
			err = errors.New(f.msg)
		}
		if d.keep && err == nil {
			d.printKeep()
			return
		}
		fmt.Fprintf(d.out, "\nRemoving the namespaces, veths and the switch...")
		for i := len(d.cleanups) - 1; i >= 0; i-- {
			d.cleanups[i]()
		}
		fmt.Fprintf(d.out, " done (%.1f s in all).\n", time.Since(start).Seconds())
	}()
	d.build()
	d.traffic()
	d.report()
	bad := 0
	for _, r := range d.rows {
		if !r.ok {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d walks did not behave as the seed says", bad, len(d.rows))
	}
	return nil
}

// build creates seed worker 1: the node namespace running govs-vswitchd
// with br-int and antrea-gw0 (10.222.1.1/24), kube-proxy's DNAT for
// backendsvc, and one namespace per pod on a veth.
func (d *demo) build() {
	fmt.Fprintf(d.out, "Building seed worker 1 (Antrea, 3 pods) in network namespaces %s%s-*\n", demoPrefix, d.id)
	vswitchdBin := siblingBinary("govs-vswitchd")
	d.node = netnstest.NewNSNamed(d, demoPrefix+d.id+"-node")
	d.rundir = filepath.Join(os.TempDir(), demoPrefix+d.id)
	if err := os.MkdirAll(d.rundir, 0o755); err != nil {
		d.Fatal(err)
	}
	d.Cleanup(func() { os.RemoveAll(d.rundir) })
	d.startSwitch(vswitchdBin)
	d.check()

	d.ctl("add-br", "br-int", "fail_mode=secure")
	d.ctl("add-port", "br-int", "antrea-gw0", "type=internal", "ofport_request=2", "mac=4e:99:08:c1:53:be", "mtu_request=1450")
	for _, c := range [][]string{
		{"ip", "addr", "add", "10.222.1.1/24", "dev", "antrea-gw0"},
		{"ip", "link", "set", "antrea-gw0", "up"},
		{"sysctl", "-qw", "net.ipv4.ip_forward=1"},
		{"sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0"},
		// kube-proxy's DNAT for backendsvc (seed 001): the service IP
		// is translated in the node, after antrea-gw0.
		{"iptables", "-t", "nat", "-A", "PREROUTING", "-d", "10.104.65.133", "-p", "tcp", "--dport", "80",
			"-j", "DNAT", "--to-destination", "10.222.1.47:80"},
	} {
		d.node.MustExec(d, c...)
	}
	netnstest.DisableOffloads(d, d.node, "antrea-gw0")
	netnstest.DisableIPv6(d, d.node, "antrea-gw0") // no router solicitations in the counters
	d.pods, d.veths = map[string]*netnstest.NS{}, map[string]*netnstest.Veth{}
	for _, p := range demoPods {
		d.check()
		ns := netnstest.NewNSNamed(d, demoPrefix+d.id+"-"+p.name)
		mac, _ := net.ParseMAC(p.mac)
		v := netnstest.NewVeth(d, d.node, ns, netnstest.VethOptions{PeerAddr: p.ip + "/24", PeerMAC: mac})
		ns.MustExec(d, "ip", "route", "add", "default", "via", "10.222.1.1")
		d.ctl("add-port", "br-int", v.Host, fmt.Sprintf("ofport_request=%d", p.ofport))
		d.pods[p.name], d.veths[p.name] = ns, v
	}
	flowsFile := filepath.Join(d.rundir, "worker1.flows")
	if err := os.WriteFile(flowsFile, []byte(seeds.Worker1), 0o644); err != nil {
		d.Fatal(err)
	}
	d.ofctl("add-tlv-map", "br-int", "{class=0x104,type=0x80,len=4}->tun_metadata0")
	d.ofctl("add-flows", "br-int", flowsFile)
	d.flows0 = d.flowCounts()
	fmt.Fprintf(d.out, "govs-vswitchd runs in %s (rundir %s) with br-int: antrea-gw0 (ofport 2)", d.node.Name, d.rundir)
	for _, p := range demoPods {
		fmt.Fprintf(d.out, ", %s %s (ofport %d)", p.name, p.ip, p.ofport)
	}
	fmt.Fprintf(d.out, "; %d flows of seed worker 1 loaded.\n\n", len(d.flows0))
}

// siblingBinary finds another govs binary next to this one, else on PATH.
func siblingBinary(name string) string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return name
}

// startSwitch runs govs-vswitchd in the node namespace, in a process
// group of its own (a Ctrl-C at the terminal reaches only the demo, which
// stops the switch after the traffic it is driving).
func (d *demo) startSwitch(bin string) {
	logf, err := os.Create(filepath.Join(d.rundir, "govs-vswitchd.log"))
	if err != nil {
		d.Fatal(err)
	}
	args := d.node.Command(bin, "--rundir", d.rundir, "--log-level", "warn", "--nice", "0")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		d.Fatalf("starting %s: %v", bin, err)
	}
	os.WriteFile(filepath.Join(d.rundir, "demo.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	d.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(filepath.Join(d.rundir, vswitchd.CtlSocketName)); err == nil {
			return
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(d.rundir, "govs-vswitchd.log"))
			d.Fatalf("govs-vswitchd exited at start:\n%s", log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.Fatal("govs-vswitchd did not create its control socket in 10 s")
		}
	}
}

// ctl sends an ovs-vsctl style command to the demo's switch.
func (d *demo) ctl(args ...string) {
	rep, err := vswitchd.Call(d.rundir, vswitchd.Request{Command: args[0], Args: args[1:]})
	if err == nil && rep.Error != "" {
		err = errors.New(rep.Error)
	}
	if err != nil {
		d.Fatalf("govs %s: %v", strings.Join(args, " "), err)
	}
}

// ofctl runs one of govs's ovs-ofctl style commands against the switch.
func (d *demo) ofctl(args ...string) string {
	c, _ := ofctlCommandNamed(args[0])
	var b bytes.Buffer
	if err := runOfctl(&c, append([]string{"--rundir", d.rundir}, args[1:]...), &b); err != nil {
		d.Fatalf("govs %s: %v", strings.Join(args, " "), err)
	}
	return b.String()
}

// flowCount is one flow of dump-flows and its packet count.
type flowCount struct {
	table, priority int
	line            string // the flow without its statistics
	packets         int
	drop            bool
}

var (
	statsRE   = regexp.MustCompile(`(duration|n_packets|n_bytes|idle_age|hard_age)=[^,]*, `)
	tableRE   = regexp.MustCompile(`table=(\d+)`)
	packetsRE = regexp.MustCompile(`n_packets=(\d+)`)
	prioRE    = regexp.MustCompile(`priority=(\d+)`)
)

// flowCounts reads every flow's packet count, keyed by the flow.
func (d *demo) flowCounts() map[string]flowCount {
	out := map[string]flowCount{}
	for _, line := range strings.Split(d.ofctl("dump-flows", "br-int"), "\n") {
		m := packetsRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := flowCount{line: strings.TrimSpace(statsRE.ReplaceAllString(line, ""))}
		f.packets, _ = strconv.Atoi(m[1])
		if t := tableRE.FindStringSubmatch(line); t != nil {
			f.table, _ = strconv.Atoi(t[1])
		}
		if p := prioRE.FindStringSubmatch(line); p != nil {
			f.priority, _ = strconv.Atoi(p[1])
		} else {
			f.priority = 32768
		}
		f.drop = strings.HasSuffix(f.line, "actions=drop")
		out[f.line] = f
	}
	return out
}

// moved returns the flows whose counters grew from before to after.
func moved(before, after map[string]flowCount) []flowCount {
	var fs []flowCount
	for k, a := range after {
		if a.packets > before[k].packets {
			a.packets -= before[k].packets
			fs = append(fs, a)
		}
	}
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].table != fs[j].table {
			return fs[i].table < fs[j].table
		}
		return fs[i].priority > fs[j].priority
	})
	return fs
}

// demoRow is one line of the pass/drop table.
type demoRow struct {
	what, want, got, why string
	ok                   bool // the traffic behaved as the seed says
}

// tryStep runs one traffic check: it returns whether the traffic got
// through, with a word on what came back, and which flows counted it.
func (d *demo) tryStep(what, want string, wantPass bool, try func() (bool, string)) {
	d.check()
	before := d.flowCounts()
	ok, detail := try()
	after := d.flowCounts()
	row := demoRow{what: what, want: want, got: "dropped", ok: ok == wantPass}
	if ok {
		row.got = "passed"
	}
	fs := moved(before, after)
	var tables []string
	seen := map[int]bool{}
	for _, f := range fs {
		if !seen[f.table] {
			seen[f.table] = true
			tables = append(tables, strconv.Itoa(f.table))
		}
	}
	// The drop flow that counted most of the step's packets is the one
	// that dropped it (others may have counted stray frames meanwhile).
	var drop *flowCount
	for i := range fs {
		if fs[i].drop && (drop == nil || fs[i].packets > drop.packets) {
			drop = &fs[i]
		}
	}
	switch {
	case !ok && drop != nil:
		_, match, _ := strings.Cut(drop.line, fmt.Sprintf("priority=%d,", drop.priority))
		match, _, _ = strings.Cut(match, " actions=")
		row.why = fmt.Sprintf("table %d: priority=%d,%s actions=drop", drop.table, drop.priority, match)
	case detail != "":
		row.why = detail
	}
	if len(tables) > 0 {
		row.why += " (tables " + strings.Join(tables, ",") + ")"
	}
	d.rows = append(d.rows, row)
}

// traffic drives the seed's walks with real sockets and tools.
func (d *demo) traffic() {
	backend1, frontend := d.pods["backend1"], d.pods["frontend"]
	for _, port := range []int{80, 8080} {
		ln, err := backend1.ServeTCP(port, "hello from backend1\n")
		if err != nil {
			d.Fatal(err)
		}
		d.Cleanup(func() { ln.Close() })
	}
	fmt.Fprintln(d.out, "Driving traffic (TCP from the pods' own sockets, ping, ARP):")
	d.tryStep("frontend -> backend1 10.222.1.47:80/tcp", "pass (policy allows 80)", true, func() (bool, string) {
		got, err := frontend.TCPGet("10.222.1.47:80")
		return err == nil && strings.Contains(got, "backend1"), strings.TrimSpace(got)
	})
	d.tryStep("frontend -> backend1 10.222.1.47:8080/tcp", "drop (policy allows only 80)", false, func() (bool, string) {
		_, err := frontend.TCPGet("10.222.1.47:8080")
		return err == nil, ""
	})
	d.tryStep("frontend -> antrea-gw0 10.222.1.1 ping", "drop (frontend egress isolated)", false, func() (bool, string) {
		_, err := frontend.Exec("ping", "-c", "3", "-i", "0.2", "-W", "1", "10.222.1.1")
		return err == nil, ""
	})
	d.tryStep("coredns -> antrea-gw0 10.222.1.1 ping", "pass", true, func() (bool, string) {
		_, err := d.pods["coredns"].Exec("ping", "-c", "1", "-W", "1", "10.222.1.1")
		return err == nil, "echo reply"
	})
	d.tryStep("node ARP for 10.222.2.1 (worker 2's gateway)", "answered by the ARP responder", true, func() (bool, string) {
		d.node.Exec("ip", "route", "add", "10.222.2.0/24", "via", "10.222.2.1", "dev", "antrea-gw0", "onlink")
		d.node.Exec("ping", "-c", "1", "-W", "1", "10.222.2.34")
		out, _ := d.node.Exec("ip", "neigh", "show", "10.222.2.1", "dev", "antrea-gw0")
		return strings.Contains(out, "aa:bb:cc:dd:ee:ff"), "is-at aa:bb:cc:dd:ee:ff"
	})
	d.tryStep("frontend -> backendsvc 10.104.65.133:80/tcp", "pass, DNAT to backend1, reply ct_mark 0x20", true, func() (bool, string) {
		got, err := frontend.TCPGet("10.104.65.133:80")
		if err != nil || !strings.Contains(got, "backend1") {
			return false, ""
		}
		ct := d.ctlOut("dump-conntrack", "zone=65520")
		for _, line := range strings.Split(ct, "\n") {
			if strings.Contains(line, "src=10.222.1.48,dst=10.222.1.47") && strings.Contains(line, "mark=32") {
				return true, strings.TrimSpace(got) + ", conntrack mark=32 (0x20)"
			}
		}
		return false, "answered, but no connection with ct_mark 0x20"
	})
}

// ctlOut is ctl returning the command's output.
func (d *demo) ctlOut(args ...string) string {
	rep, err := vswitchd.Call(d.rundir, vswitchd.Request{Command: args[0], Args: args[1:]})
	if err == nil && rep.Error != "" {
		err = errors.New(rep.Error)
	}
	if err != nil {
		d.Fatalf("govs %s: %v", strings.Join(args, " "), err)
	}
	return rep.Output
}

// report prints the table, the service packet's trace and the flows
// whose counters moved.
func (d *demo) report() {
	tw := tabwriter.NewWriter(d.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  traffic\texpected\tresult\twhy")
	for _, r := range d.rows {
		mark := " "
		if !r.ok {
			mark = "!"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\n", mark, r.what, r.want, r.got, r.why)
	}
	tw.Flush()
	fmt.Fprintf(d.out, "\nThe service packet, traced by the running switch (govs trace --rundir %s br-int PACKET,\nthe same as ovs-appctl ofproto/trace):\n\n", d.rundir)
	d.check()
	saved := cmdOut
	cmdOut = d.out
	err := runTrace([]string{"--rundir", d.rundir, "br-int", demoPacket})
	cmdOut = saved
	if err != nil {
		d.Fatal(err)
	}
	fmt.Fprintln(d.out, "\nFlows whose counters moved (govs dump-flows br-int):")
	for _, f := range moved(d.flows0, d.flowCounts()) {
		fmt.Fprintf(d.out, "  n_packets=%-4d %s\n", f.packets, f.line)
	}
}

// printKeep tells how to look around a --keep run and how to remove it.
func (d *demo) printKeep() {
	fmt.Fprintf(d.out, `
The topology stays up. Look around:
  govs --rundir %[1]s show
  govs --rundir %[1]s dump-flows br-int
  govs --rundir %[1]s dump-conntrack
  govs --rundir %[1]s dump-cache
  ip netns exec %[2]s%[3]s-frontend ping 10.222.1.2
  ip netns exec %[2]s%[3]s-node ip neigh
  govs trace --demo
Remove it with:
  govs demo --clean
`, d.rundir, demoPrefix, d.id)
}

// demoClean removes what --keep runs left: their switches and namespaces.
func demoClean(w io.Writer) error {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), demoPrefix+"*"))
	for _, dir := range dirs {
		if b, err := os.ReadFile(filepath.Join(dir, "demo.pid")); err == nil {
			if pid, err := strconv.Atoi(string(b)); err == nil {
				syscall.Kill(pid, syscall.SIGTERM)
				for i := 0; i < 50 && syscall.Kill(pid, 0) == nil; i++ {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}
		os.RemoveAll(dir)
		fmt.Fprintf(w, "removed %s\n", dir)
	}
	out, err := netnstest.Run("ip", "netns", "list")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(out, "\n") {
		name, _, _ := strings.Cut(line, " ")
		if strings.HasPrefix(name, demoPrefix) {
			if out, err := netnstest.Run("ip", "netns", "del", name); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			fmt.Fprintf(w, "removed netns %s\n", name)
		}
	}
	return nil
}
