package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/govs-project/govs/internal/ovstest"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/internal/vswitchd"
)

// The two pods are seed worker 1's frontend (the client) and backend1 (the
// server), with their addresses, MACs and OpenFlow ports, so the seed
// pipeline forwards between them unchanged.
var (
	clientPod = podSpec{role: "fe", ip: "10.222.1.48", mac: "be:2c:bf:e4:ec:c5", ofport: 49}
	serverPod = podSpec{role: "be", ip: "10.222.1.47", mac: "f2:32:d8:07:e2:a6", ofport: 48}
)

const podPrefixLen = 24

type podSpec struct {
	role   string
	ip     string
	mac    string
	ofport int
	prefix int // prefix length of the pod subnet; 0: podPrefixLen
}

func (p podSpec) cidr() string {
	if p.prefix == 0 {
		return fmt.Sprintf("%s/%d", p.ip, podPrefixLen)
	}
	return fmt.Sprintf("%s/%d", p.ip, p.prefix)
}

// Ports the measurements use. The seed policy lets the frontend open TCP
// 80 to backend1 (egress conjunction 1 in table 50, ingress conjunction 3
// in table 90), so iperf3, the request/response and the connection tests
// all use TCP port 80. UDP 53 leaves the frontend (conjunction 2) but the
// seed's backendpolicy drops it at backend1's ingress (table 100), so the
// seed pipeline gets worker1BenchRule below for the packet-rate test.
const (
	tcpPort = 80
	udpPort = 53
)

// worker1BenchRule is added to the seed pipeline for the "antrea"
// scenarios: an Antrea-style ingress rule "backendpolicy also allows UDP 53
// from the frontend", in table 90 next to the gateway bypass (a plain flow
// at priority 210, so it does not mix with the conjunctions at 200). The
// packet still takes the whole pipeline: classifier, spoof guard, ct in
// zone 65520, egress conjunction 2, L3/L2 forwarding, ct commit, output.
const worker1BenchRule = "cookie=0x1050000000000, table=90, priority=210,udp,nw_src=10.222.1.48,reg1=0x30,tp_dst=53 actions=load:0x6->NXM_NX_REG6[],resubmit(,105)\n"

// worker1TLVMap must exist before the seed flows load (table 0 reads
// tun_metadata0); worker 2's seed uses the same map.
const worker1TLVMap = "{class=0x104,type=0x80,len=4}->tun_metadata0"

// normalFlow is the "normal" scenarios' whole pipeline.
const normalFlow = "priority=0,actions=NORMAL"

// Scenario is one way of connecting the two pods.
type Scenario struct {
	Name        string
	Description string
	// Userspace is true for the userspace switches, whose pod veths need
	// checksum and segmentation offloads off...
	Userspace bool
	// ...unless the switch runs with userspace TSO (offload metadata on
	// its ports): then the pods keep their offloads, as on a kernel path.
	TSO bool
	// PMD runs govs with a poll-mode thread pinned away from the
	// measurement's pinned CPU.
	PMD bool
	// NoOffloads turns the pods' offloads off on a kernel path too, so a
	// kernel baseline can be compared like for like with the userspace rows
	// that run without offloads (TCP throughput depends on them most).
	NoOffloads bool
	setup      func(e *env, cs *cleanupStack, offloads bool) (*topology, error)
}

// Scenarios lists every scenario in the order they run and print.
var Scenarios = []Scenario{
	{Name: "direct", Description: "the two pods on one veth pair (baseline)", setup: setupDirect},
	{Name: "direct-nooffload", Description: "the two pods on one veth pair, with the offloads off as in the userspace rows without TSO (baseline)", NoOffloads: true, setup: setupDirect},
	{Name: "bridge", Description: "a Linux bridge", setup: setupBridge},
	{Name: "ovs-normal", Description: "Open vSwitch userspace (netdev) datapath, actions=NORMAL", Userspace: true, setup: setupOVS(false, false)},
	{Name: "ovs-antrea", Description: "Open vSwitch userspace (netdev) datapath, seed worker 1 pipeline", Userspace: true, setup: setupOVS(true, false)},
	{Name: "relay", Description: "the latency floor of a userspace hop: one thread relaying frames between the two veths with plain AF_PACKET sockets (ppoll, recvmmsg, sendmmsg), no pipeline", Userspace: true, setup: setupRelay},
	{Name: "govs-normal", Description: "govs-vswitchd, actions=NORMAL", Userspace: true, setup: setupGovs(false, govsMode{})},
	{Name: "govs-antrea", Description: "govs-vswitchd, seed worker 1 pipeline", Userspace: true, setup: setupGovs(true, govsMode{})},
	{Name: "ovs-antrea-tso", Description: "Open vSwitch userspace (netdev) datapath, seed worker 1 pipeline, other_config:userspace-tso-enable=true", Userspace: true, TSO: true, setup: setupOVS(true, true)},
	{Name: "govs-antrea-tso", Description: "govs-vswitchd --userspace-tso, seed worker 1 pipeline", Userspace: true, TSO: true, setup: setupGovs(true, govsMode{tso: true})},
	{Name: "govs-antrea-tso-pmd", Description: "govs-vswitchd --userspace-tso --pmd-cpu, seed worker 1 pipeline", Userspace: true, TSO: true, PMD: true, setup: setupGovs(true, govsMode{tso: true, pmd: true})},
	{Name: "govs-antrea-ebpf", Description: "govs-vswitchd --offload=ebpf (established connections forwarded by the TCX program on the pod veths, whose sockets get what it sends up), seed worker 1 pipeline", Userspace: true, setup: setupGovs(true, govsMode{ebpf: true})},
	{Name: "govs-antrea-ebpf-tso", Description: "govs-vswitchd --offload=ebpf --userspace-tso (the pods keep their offloads; established connections forwarded by the TCX program on the pod ports, whose sockets get what it sends up), seed worker 1 pipeline", Userspace: true, TSO: true, setup: setupGovs(true, govsMode{ebpf: true, tso: true})},
	{Name: "govs-antrea-pmd", Description: "govs-vswitchd --pmd-cpu (a busy-polling thread on the CPU the workers do not use), seed worker 1 pipeline", Userspace: true, PMD: true, setup: setupGovs(true, govsMode{pmd: true})},
	{Name: "govs-antrea-xdp", Description: "govs-vswitchd, pod ports type=afxdp (xdp-mode=best-effort: native on veth, copy mode), seed worker 1 pipeline", Userspace: true, setup: setupGovs(true, govsMode{afxdp: true})},
	{Name: "govs-antrea-xdp-generic", Description: "govs-vswitchd, pod ports type=afxdp options:xdp-mode=generic (XDP on the skb, copy mode), seed worker 1 pipeline", Userspace: true, setup: setupGovs(true, govsMode{afxdp: true, xdpMode: "generic"})},
	{Name: "govs-antrea-xdp-nice0", Description: "govs-vswitchd --nice 0 (the other rows run every switch at niceness -10), pod ports type=afxdp, seed worker 1 pipeline", Userspace: true, setup: setupGovs(true, govsMode{afxdp: true, niceZero: true})},
	{Name: "govs-antrea-xdp-pmd", Description: "govs-vswitchd --pmd-cpu, pod ports type=afxdp, seed worker 1 pipeline", Userspace: true, PMD: true, setup: setupGovs(true, govsMode{afxdp: true, pmd: true})},
	{Name: "ovs-antrea-scale", Description: "Open vSwitch userspace (netdev) datapath, a generated Antrea v1.15 node at scale (bench/antreagen: 1,000 pods, 2,000 policies, 500 Services, 100 remote nodes; ~119k flows, 500 groups)", Userspace: true, setup: setupOVSWith(scalePipeline, false)},
	{Name: "govs-antrea-scale", Description: "govs-vswitchd, a generated Antrea v1.15 node at scale (bench/antreagen: 1,000 pods, 2,000 policies, 500 Services, 100 remote nodes; ~119k flows, 500 groups)", Userspace: true, setup: setupGovsWith(scalePipeline, govsMode{})},
	{Name: "ovs-geneve", Description: "two Open vSwitch userspace (netdev) nodes, seed worker 1 and 2 pipelines, frontend->backend2 through Geneve", Userspace: true, setup: setupOVSGeneve},
	{Name: "govs-geneve", Description: "two govs-vswitchd nodes, seed worker 1 and 2 pipelines, frontend->backend2 through Geneve", Userspace: true, setup: setupGovsGeneve},
	{Name: "govs-geneve-ebpf", Description: "two govs-vswitchd --offload=ebpf nodes (established connections encapsulated by the TCX program on the pod veths and decapsulated by the underlay's TCX program), seed worker 1 and 2 pipelines, frontend->backend2 through Geneve", Userspace: true, setup: setupGovsGeneveEBPF},
	{Name: "govs-geneve-tso", Description: "two govs-vswitchd --userspace-tso nodes (the pods keep their offloads; the underlay veth's are off, as a NIC without tunnel offloads), seed worker 1 and 2 pipelines, frontend->backend2 through Geneve", Userspace: true, TSO: true, setup: setupGovsGeneveTSO(false)},
	{Name: "govs-geneve-ebpf-tso", Description: "govs-geneve-tso with --offload=ebpf (the TCX program on the pod ports encapsulates established connections' super-segments whole; the underlay's TCX program decapsulates)", Userspace: true, TSO: true, setup: setupGovsGeneveTSO(true)},
}

// ScenarioByName returns the named scenario.
func ScenarioByName(name string) (Scenario, error) {
	var names []string
	for _, s := range Scenarios {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Scenario{}, fmt.Errorf("unknown scenario %q (have %s)", name, strings.Join(names, ", "))
}

// errSkip marks a scenario that cannot run here (a missing program); the
// report shows it with the reason instead of numbers.
type errSkip struct{ reason string }

func (e *errSkip) Error() string { return e.reason }

// topology is a scenario's running setup.
type topology struct {
	client, server podIface
	// switchPIDs are the userspace switch processes, one per node; none
	// for kernel paths, whose cost is softirq time that no process is
	// charged with.
	switchPIDs []int
	switchCmd  string
	version    string // switch version, for the report
	// cacheStats reads the switch's megaflow cache counters (nil: no
	// cache to report).
	cacheStats func() (cacheStats, error)
}

// pods creates the two pod namespaces.
func pods(cs *cleanupStack) (client, server netns, err error) {
	if client, err = newNS(cs, clientPod.role); err != nil {
		return "", "", err
	}
	if server, err = newNS(cs, serverPod.role); err != nil {
		return "", "", err
	}
	return client, server, nil
}

// attachPod connects a pod namespace to the switch namespace sw with a veth
// pair and configures the pod end; it returns the pod iface and the name of
// the switch end.
func attachPod(p podSpec, podNS, sw netns, offloads bool) (podIface, string, error) {
	podEnd, swEnd, err := vethPair(podNS, sw)
	if err != nil {
		return podIface{}, "", err
	}
	if err := setupIface(podNS, podEnd, p.mac, p.cidr(), offloads); err != nil {
		return podIface{}, "", err
	}
	if err := setupIface(sw, swEnd, "", "", offloads); err != nil {
		return podIface{}, "", err
	}
	return podIface{ns: podNS, name: podEnd, ip: p.ip, mac: p.mac}, swEnd, nil
}

// attachPods attaches the client pod (namespace cns) and the server pod
// (sns) to the switch namespace sw with attachPod, fills t.client and
// t.server, and hands each pod's spec and switch end to plug, which adds it
// to the switch.
func attachPods(t *topology, cns, sns, sw netns, offloads bool, plug func(spec podSpec, swEnd string) error) error {
	return attachPodPair(t, clientPod, serverPod, cns, sns, sw, offloads, plug)
}

// attachPodPair is attachPods with the two pods' specs.
func attachPodPair(t *topology, client, server podSpec, cns, sns, sw netns, offloads bool, plug func(spec podSpec, swEnd string) error) error {
	for _, p := range []struct {
		spec podSpec
		ns   netns
		dst  *podIface
	}{{client, cns, &t.client}, {server, sns, &t.server}} {
		i, swEnd, err := attachPod(p.spec, p.ns, sw, offloads)
		if err != nil {
			return err
		}
		if err := plug(p.spec, swEnd); err != nil {
			return err
		}
		*p.dst = i
	}
	return nil
}

// switchTicks is the CPU time of all the switch processes together, in
// clock ticks.
func (t *topology) switchTicks() (uint64, error) {
	var sum uint64
	for _, pid := range t.switchPIDs {
		v, err := cpuTicks(pid)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// finishPods adds the static neighbour entries both ways: for the peer pod
// itself on one subnet, else for the pod's gateway, with a default route
// through it (as the Antrea CNI configures a pod).
func finishPods(t *topology) error {
	for _, p := range []struct{ self, peer podIface }{{t.client, t.server}, {t.server, t.client}} {
		if p.self.gwIP == "" {
			if err := staticNeighbor(p.self.ns, p.self.name, p.peer.ip, p.peer.mac); err != nil {
				return err
			}
			continue
		}
		if err := staticNeighbor(p.self.ns, p.self.name, p.self.gwIP, p.self.gwMAC); err != nil {
			return err
		}
		if _, err := p.self.ns.exec("ip", "route", "add", "default", "via", p.self.gwIP, "dev", p.self.name); err != nil {
			return err
		}
	}
	return nil
}

func setupDirect(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
	cns, sns, err := pods(cs)
	if err != nil {
		return nil, err
	}
	c, s, err := vethPair(cns, sns)
	if err != nil {
		return nil, err
	}
	t := &topology{
		client: podIface{ns: cns, name: c, ip: clientPod.ip, mac: clientPod.mac},
		server: podIface{ns: sns, name: s, ip: serverPod.ip, mac: serverPod.mac},
	}
	for _, p := range []struct {
		i    podIface
		spec podSpec
	}{{t.client, clientPod}, {t.server, serverPod}} {
		if err := setupIface(p.i.ns, p.i.name, p.spec.mac, fmt.Sprintf("%s/%d", p.spec.ip, podPrefixLen), offloads); err != nil {
			return nil, err
		}
	}
	return t, finishPods(t)
}

func setupBridge(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
	cns, sns, err := pods(cs)
	if err != nil {
		return nil, err
	}
	node, err := newNS(cs, "br")
	if err != nil {
		return nil, err
	}
	// STP off (the default) puts ports straight into forwarding.
	if _, err := node.exec("ip", "link", "add", "br0", "type", "bridge"); err != nil {
		return nil, err
	}
	if err := setupIface(node, "br0", "", "", offloads); err != nil {
		return nil, err
	}
	t := &topology{}
	err = attachPods(t, cns, sns, node, offloads, func(_ podSpec, swEnd string) error {
		_, err := node.exec("ip", "link", "set", swEnd, "master", "br0")
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, finishPods(t)
}

// loadFlows installs a one-node scenario's pipeline: actions=NORMAL, or
// seed worker 1's with worker1BenchRule.
func loadFlows(target, dir string, antrea bool) error {
	if !antrea {
		return loadPipeline(target, dir, normalFlow+"\n", false)
	}
	return loadPipeline(target, dir, seeds.Worker1+"\n# govs bench: backendpolicy also allows UDP 53 from the frontend\n"+worker1BenchRule, true)
}

// loadPipeline installs flows with the real ovs-ofctl, which is how every
// switch is programmed: the seed's TLV map first if tlv (the seed's table 0
// reads tun_metadata0), then the flows from a file in dir.
func loadPipeline(target, dir, flows string, tlv bool) error {
	if tlv {
		if _, err := run("ovs-ofctl", "add-tlv-map", target, worker1TLVMap); err != nil {
			return fmt.Errorf("add-tlv-map: %w", err)
		}
	}
	path := filepath.Join(dir, "bench.flows")
	if err := os.WriteFile(path, []byte(flows), 0o644); err != nil {
		return fmt.Errorf("write flows: %w", err)
	}
	if _, err := run("ovs-ofctl", "-O", "OpenFlow13", "del-flows", target); err != nil {
		return fmt.Errorf("del-flows: %w", err)
	}
	if _, err := run("ovs-ofctl", "-O", "OpenFlow13", "add-flows", target, path); err != nil {
		return fmt.Errorf("add-flows: %w", err)
	}
	return nil
}

// benchPipeline is what a one-node scenario loads into the switch and
// the two pods it connects.
type benchPipeline struct {
	client, server podSpec
	load           func(target, dir string) error
}

// seedPipeline is seed worker 1's pipeline (antrea) or actions=NORMAL,
// between the seed's frontend and backend1.
func seedPipeline(antrea bool) func() (*benchPipeline, error) {
	return func() (*benchPipeline, error) {
		return &benchPipeline{client: clientPod, server: serverPod,
			load: func(target, dir string) error { return loadFlows(target, dir, antrea) }}, nil
	}
}

func setupOVS(antrea, tso bool) func(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
	return setupOVSWith(seedPipeline(antrea), tso)
}

func setupOVSWith(pipeline func() (*benchPipeline, error), tso bool) func(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
	return func(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
		if err := ovsMissing(); err != nil {
			return nil, err
		}
		pl, err := pipeline()
		if err != nil {
			return nil, err
		}
		cns, sns, err := pods(cs)
		if err != nil {
			return nil, err
		}
		opts := ovstest.Options{FailMode: "secure", VswitchdNiceness: switchNiceness}
		if tso {
			opts.OtherConfig = map[string]string{"userspace-tso-enable": "true"}
		}
		o, stop, err := ovstest.Launch(opts, e.logf)
		if err != nil {
			return nil, fmt.Errorf("start Open vSwitch: %w", err)
		}
		cs.push(stop)
		sw := netns(o.Netns())
		t := &topology{switchCmd: "ovs-vswitchd", cacheStats: ovsCacheStats(o)}
		err = attachPodPair(t, pl.client, pl.server, cns, sns, sw, offloads, func(spec podSpec, swEnd string) error {
			return o.AddPort(ovstest.Port{Name: swEnd, OFPort: spec.ofport})
		})
		if err != nil {
			return nil, err
		}
		if err := pl.load(o.Target(), o.Rundir()); err != nil {
			return nil, err
		}
		pid, err := ovsVswitchdPID(o)
		if err != nil {
			return nil, err
		}
		t.switchPIDs = []int{pid}
		t.version = ovsVersion()
		return t, finishPods(t)
	}
}

// ovsVswitchdPID reads the pid of an Open vSwitch instance's ovs-vswitchd.
func ovsVswitchdPID(o *ovstest.OVS) (int, error) {
	pidText, err := os.ReadFile(filepath.Join(o.Rundir(), "ovs-vswitchd.pid"))
	if err != nil {
		return 0, fmt.Errorf("ovs-vswitchd pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		return 0, fmt.Errorf("ovs-vswitchd pidfile %q: %w", pidText, err)
	}
	return pid, nil
}

// ovsVersion is the first line of `ovs-vswitchd --version`, for the report.
func ovsVersion() string {
	out, err := exec.Command("ovs-vswitchd", "--version").Output()
	if err != nil {
		return ""
	}
	return strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
}

// ovsMissing returns an errSkip naming the first Open vSwitch program
// that is not installed, or nil.
func ovsMissing() error {
	for _, bin := range []string{"ovs-vswitchd", "ovsdb-server", "ovs-vsctl", "ovs-ofctl", "ovs-appctl"} {
		if _, err := exec.LookPath(bin); err != nil {
			return &errSkip{reason: "Open vSwitch is not installed (" + bin + " not in PATH; apt-get install openvswitch-switch)"}
		}
	}
	return nil
}

// ofctlMissing returns an errSkip if ovs-ofctl, which loads every
// switch's flows, is not installed, or nil.
func ofctlMissing() error {
	if _, err := exec.LookPath("ovs-ofctl"); err != nil {
		return &errSkip{reason: "ovs-ofctl (used to load the flows) is not installed (apt-get install openvswitch-common)"}
	}
	return nil
}

// govsNode is a running govs-vswitchd in a node namespace.
type govsNode struct {
	ns     netns
	rundir string
	proc   *process
}

// startGovs starts govs-vswitchd in node with a fresh rundir and the given
// extra flags, creates br-int in fail-mode secure and registers the
// daemon's stop.
func startGovs(e *env, cs *cleanupStack, node netns, flags ...string) (*govsNode, error) {
	bin, err := e.vswitchd()
	if err != nil {
		return nil, err
	}
	// Unix socket paths are limited to 108 bytes: keep the rundir short.
	rundir, err := os.MkdirTemp("/tmp", "govsbench-")
	if err != nil {
		return nil, fmt.Errorf("govs rundir: %w", err)
	}
	cs.push(func() error { return os.RemoveAll(rundir) })
	p, err := startProcess("govs-vswitchd", nil, node.cmd(append([]string{bin, "--rundir", rundir, "--log-level", "warn"}, flags...)...)...)
	if err != nil {
		return nil, err
	}
	cs.push(func() error {
		out := p.stop(syscall.SIGTERM)
		if e.verbose && out != "" {
			e.logf("govs-vswitchd (%s) output:\n%s", node, out)
		}
		return nil
	})
	if err := waitFile(filepath.Join(rundir, vswitchd.CtlSocketName), 10*time.Second, p); err != nil {
		out := p.stop(syscall.SIGTERM)
		return nil, fmt.Errorf("govs-vswitchd did not start: %w (output: %s)", err, lastLines(out, 10))
	}
	g := &govsNode{ns: node, rundir: rundir, proc: p}
	if err := g.call("add-br", "br-int", "fail_mode=secure"); err != nil {
		return nil, err
	}
	return g, nil
}

// call runs one `govs` control command (add-port, ...) against the daemon.
func (g *govsNode) call(words ...string) error {
	rep, err := vswitchd.Call(g.rundir, vswitchd.Request{Command: words[0], Args: words[1:]})
	if err != nil {
		return fmt.Errorf("govs %s: %w", strings.Join(words, " "), err)
	}
	if rep.Error != "" {
		return fmt.Errorf("govs %s: %s", strings.Join(words, " "), rep.Error)
	}
	return nil
}

// target waits for br-int's management socket and returns it as an
// ovs-ofctl target.
func (g *govsNode) target() (string, error) {
	mgmt := filepath.Join(g.rundir, "br-int.mgmt")
	if err := waitFile(mgmt, 10*time.Second, g.proc); err != nil {
		return "", fmt.Errorf("br-int management socket: %w", err)
	}
	return "unix:" + mgmt, nil
}

// govsMode are the datapath options a govs scenario runs with.
// switchNiceness is the niceness every userspace switch runs at: the one
// ovs-ctl starts ovs-vswitchd with, and govs-vswitchd's default. At the
// default niceness a switch shares the 2 CPUs equally with iperf3's busy
// senders and its receive rings overflow (TCP retransmits).
const switchNiceness = vswitchd.DefaultNiceness

type govsMode struct {
	tso   bool // --userspace-tso
	pmd   bool // --pmd-cpu with a CPU the workers are not pinned to
	afxdp bool // pod ports are type=afxdp instead of system (AF_PACKET)
	// xdpMode is the afxdp ports' options:xdp-mode; "" leaves the
	// default (best-effort: native on veth).
	xdpMode string
	// niceZero runs the daemon at niceness 0 instead of switchNiceness:
	// with AF_XDP ports in copy mode on 2 CPUs, the extra CPU a niceness
	// of -10 gives the switch is taken from the pods' TCP stacks.
	niceZero bool
	ebpf     bool // --offload=ebpf
}

// pmdCPU picks the CPU for the PMD thread: the first one the workers are
// not pinned to (e.cpu, a taskset list like "0" or "0,2").
func pmdCPU(e *env) (int, error) {
	pinned := map[string]bool{}
	for _, c := range strings.Split(e.cpu, ",") {
		pinned[strings.TrimSpace(c)] = true
	}
	for c := range runtime.NumCPU() {
		if !pinned[strconv.Itoa(c)] {
			return c, nil
		}
	}
	return 0, &errSkip{reason: fmt.Sprintf("a PMD thread needs a CPU besides the workers' %s (this machine has %d)", e.cpu, runtime.NumCPU())}
}

func setupGovs(antrea bool, mode govsMode) func(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
	return setupGovsWith(seedPipeline(antrea), mode)
}

func setupGovsWith(pipeline func() (*benchPipeline, error), mode govsMode) func(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
	return func(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
		if err := ofctlMissing(); err != nil {
			return nil, err
		}
		pl, err := pipeline()
		if err != nil {
			return nil, err
		}
		cns, sns, err := pods(cs)
		if err != nil {
			return nil, err
		}
		node, err := newNS(cs, "gv")
		if err != nil {
			return nil, err
		}
		var flags []string
		if mode.tso {
			flags = append(flags, "--userspace-tso")
		}
		if mode.pmd {
			cpu, err := pmdCPU(e)
			if err != nil {
				return nil, err
			}
			flags = append(flags, "--pmd-cpu", strconv.Itoa(cpu))
		}
		if mode.niceZero {
			flags = append(flags, "--nice", "0")
		}
		if mode.ebpf {
			flags = append(flags, "--offload=ebpf")
		}
		g, err := startGovs(e, cs, node, flags...)
		if err != nil {
			return nil, err
		}
		t := &topology{switchPIDs: []int{g.proc.pid()}, switchCmd: "govs-vswitchd", version: "govs-vswitchd (this tree)", cacheStats: g.cacheStats}
		err = attachPodPair(t, pl.client, pl.server, cns, sns, node, offloads, func(spec podSpec, swEnd string) error {
			args := []string{"add-port", "br-int", swEnd, fmt.Sprintf("ofport_request=%d", spec.ofport)}
			if mode.afxdp {
				args = append(args, "type=afxdp")
			}
			if mode.xdpMode != "" {
				args = append(args, "options:xdp-mode="+mode.xdpMode)
			}
			return g.call(args...)
		})
		if err != nil {
			return nil, err
		}
		target, err := g.target()
		if err != nil {
			return nil, err
		}
		if err := pl.load(target, g.rundir); err != nil {
			return nil, err
		}
		return t, finishPods(t)
	}
}

// setupRelay connects the pods through the relay worker (see relay) in a
// switch namespace.
func setupRelay(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
	cns, sns, err := pods(cs)
	if err != nil {
		return nil, err
	}
	node, err := newNS(cs, "rl")
	if err != nil {
		return nil, err
	}
	t := &topology{switchCmd: "relay", version: "relay (this tree)"}
	var ends []string
	err = attachPods(t, cns, sns, node, offloads, func(_ podSpec, swEnd string) error {
		ends = append(ends, swEnd)
		return nil
	})
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(workerSpec{Role: "relay", Ifaces: ends})
	if err != nil {
		return nil, err
	}
	p, err := startProcess("relay", []string{WorkerEnv + "=" + string(spec), "GOMAXPROCS=1", "GOGC=off"},
		node.cmd(append([]string{"nice", "-n", strconv.Itoa(switchNiceness)}, e.self...)...)...)
	if err != nil {
		return nil, err
	}
	cs.push(func() error {
		if p.exited() {
			return fmt.Errorf("relay exited early: %s", lastLines(p.stop(syscall.SIGTERM), 5))
		}
		p.stop(syscall.SIGTERM)
		return nil
	})
	t.switchPIDs = []int{p.pid()}
	if err := waitSockets(p, 2, 10*time.Second); err != nil {
		return nil, err
	}
	return t, finishPods(t)
}

// waitSockets waits until process p has n sockets open (the relay's
// AF_PACKET sockets: it has none before), failing early if p exits.
func waitSockets(p *process, n int, timeout time.Duration) error {
	dir := fmt.Sprintf("/proc/%d/fd", p.pid())
	deadline := time.Now().Add(timeout)
	for {
		ents, _ := os.ReadDir(dir)
		have := 0
		for _, ent := range ents {
			if l, err := os.Readlink(filepath.Join(dir, ent.Name())); err == nil && strings.HasPrefix(l, "socket:") {
				have++
			}
		}
		if have >= n {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited: %s", p.name, lastLines(p.output(), 5))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s has %d sockets open after %v, want %d", p.name, have, timeout, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFile waits until path exists, failing early if p exits.
func waitFile(path string, timeout time.Duration, p *process) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("%s exited before creating %s", p.name, path)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not there after %v", path, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
