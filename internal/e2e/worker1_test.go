package e2e

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/ovstest"
	"github.com/govs-project/govs/internal/seeds"
)

// seedPod is one pod of seed 003 §3 worker 1.
type seedPod struct {
	name   string
	ip     string
	mac    string
	ofport int
}

var worker1Pods = []seedPod{
	{"coredns", "10.222.1.2", "f2:82:cc:96:da:bd", 3},
	{"backend1", "10.222.1.47", "f2:32:d8:07:e2:a6", 48},
	{"frontend", "10.222.1.48", "be:2c:bf:e4:ec:c5", 49},
}

// worker1 is a live seed worker 1: a switch with br-int, antrea-gw0
// (internal, 10.222.1.1/24) in the node namespace, the pods in their own
// namespaces, and the seed flows loaded with the real ovs-ofctl. The
// switch is govs-vswitchd configured with the govs commands
// (startWorker1), or a switch daemon configured through a private
// ovsdb-server with ovs-vsctl (startWorker1OVSDB): govs-vswitchd or Open
// vSwitch's ovs-vswitchd, with the same commands.
type worker1 struct {
	ns   *netnstest.NS // the node's namespace (the switch's, the gateway's)
	gw   string        // the gateway's device name in the node namespace
	pods map[string]*pod
	mgmt string
	// appctl runs the real ovs-appctl against the switch daemon.
	appctl func(t *testing.T, args ...string) (string, int)
	o      *ovstest.OVS // the OVSDB harness (startWorker1OVSDB only)
}

func startWorker1(t *testing.T, extra ...string) *worker1 {
	t.Helper()
	n := startNode(t, extra...)
	w := &worker1{ns: n.ns, pods: map[string]*pod{}, mgmt: "unix:" + filepath.Join(n.rundir, "br-int.mgmt"), appctl: n.appctl}
	n.mustRun("add-br", "br-int", "fail_mode=secure")
	w.gw = netnstest.UniqueName("gw")
	n.mustRun("add-port", "br-int", w.gw, "type=internal", "ofport_request=2", "mac=4e:99:08:c1:53:be", "mtu_request=1450")
	n.ns.MustExec(t, "ip", "link", "set", "lo", "up")
	n.ns.MustExec(t, "ip", "addr", "add", "10.222.1.1/24", "dev", w.gw)
	n.ns.MustExec(t, "ip", "link", "set", w.gw, "up")
	n.ns.MustExec(t, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	n.ns.MustExec(t, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0")
	netnstest.DisableOffloads(t, n.ns, w.gw)
	for _, p := range worker1Pods {
		pd := n.addPod(t, p.ip+"/24", p.mac)
		pd.ns.MustExec(t, "ip", "link", "set", "lo", "up")
		pd.ns.MustExec(t, "ip", "route", "add", "default", "via", "10.222.1.1")
		n.mustRun("add-port", "br-int", pd.veth.Host, fmt.Sprintf("ofport_request=%d", p.ofport))
		w.pods[p.name] = pd
	}
	w.loadFlows(t)
	return w
}

// startWorker1OVSDB builds worker 1 on a private ovsdb-server with the
// switch daemon vswitchd ("": Open vSwitch's ovs-vswitchd) started with
// ovs-vswitchd's command line and configured with ovs-vsctl only: the
// commands one types for Open vSwitch's userspace datapath.
func startWorker1OVSDB(t *testing.T, vswitchd string) *worker1 {
	t.Helper()
	return startWorker1OVSDBWith(t, vswitchd, false)
}

// startWorker1OVSDBWith is startWorker1OVSDB with the pods' checksum and
// segmentation offloads left on (keepOffloads: the veth defaults) and
// other_config:userspace-tso-enable=true.
func startWorker1OVSDBWith(t *testing.T, vswitchd string, keepOffloads bool) *worker1 {
	t.Helper()
	netnstest.RequireRoot(t)
	opts := ovstest.Options{FailMode: "secure", Vswitchd: vswitchd,
		Ports: []ovstest.Port{{Name: "gw0", Type: "internal", OFPort: 2}}}
	if keepOffloads {
		// The ports exchange offload metadata (OVS's userspace TSO).
		opts.OtherConfig = map[string]string{"userspace-tso-enable": "true"}
	}
	o := ovstest.Start(t, opts)
	node := &netnstest.NS{Name: o.Netns()}
	w := &worker1{ns: node, gw: "gw0", pods: map[string]*pod{}, mgmt: o.Target(), o: o,
		appctl: func(t *testing.T, args ...string) (string, int) {
			out, err := o.Appctl(args...)
			var ce *ovstest.CmdError
			if errors.As(err, &ce) {
				return out + ce.Stderr, 2
			}
			return out, 0
		}}
	node.MustExec(t, "ip", "link", "set", "lo", "up")
	node.MustExec(t, "ip", "addr", "add", "10.222.1.1/24", "dev", "gw0")
	node.MustExec(t, "ip", "link", "set", "gw0", "address", "4e:99:08:c1:53:be", "up")
	node.MustExec(t, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	node.MustExec(t, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0")
	netnstest.DisableOffloads(t, node, "gw0")
	for _, p := range worker1Pods {
		ns := netnstest.NewNS(t)
		v := netnstest.NewVeth(t, node, ns, netnstest.VethOptions{PeerAddr: p.ip + "/24", PeerMAC: net.HardwareAddr(mustMAC(t, p.mac)), KeepOffloads: keepOffloads})
		ns.MustExec(t, "ip", "link", "set", "lo", "up")
		ns.MustExec(t, "ip", "route", "add", "default", "via", "10.222.1.1")
		if err := o.AddPort(ovstest.Port{Name: v.Host, OFPort: p.ofport}); err != nil {
			t.Fatal(err)
		}
		w.pods[p.name] = &pod{ns: ns, veth: v, ip: p.ip}
	}
	w.loadFlows(t)
	return w
}

// loadFlows loads the seed's TLV map and flows with ovs-ofctl.
func (w *worker1) loadFlows(t *testing.T) {
	t.Helper()
	if out, err := ofctl(w.mgmt, "add-tlv-map", "{class=0x104,type=0x80,len=4}->tun_metadata0"); err != nil {
		t.Fatalf("add-tlv-map: %v %s", err, out)
	}
	if out, err := ofctl(w.mgmt, "add-flows", filepath.Join(seeds.Dir(), "worker1.flows")); err != nil {
		t.Fatalf("add-flows: %v %s", err, out)
	}
}

// tcpServer listens on port inside a pod and answers "hello from NAME".
func tcpServer(t *testing.T, p *pod, port int, name string) {
	t.Helper()
	ln, err := p.ns.ServeTCP(port, "hello from "+name+"\n")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
}

// tcpGet connects from a pod and returns what the server said.
func tcpGet(p *pod, addr string) (string, error) { return p.ns.TCPGet(addr) }

func (w *worker1) ping(t *testing.T, from, to string, extra ...string) error {
	t.Helper()
	args := append([]string{"ping", "-c", "2", "-i", "0.2", "-W", "1"}, extra...)
	_, err := w.pods[from].ns.Exec(append(args, to)...)
	return err
}

// nPackets returns the total n_packets of the flows dump-flows prints for
// spec whose lines contain every one of must.
func (w *worker1) nPackets(t *testing.T, spec string, must ...string) int {
	t.Helper()
	out, err := ofctl(w.mgmt, "dump-flows", spec)
	if err != nil {
		t.Fatalf("dump-flows %s: %v", spec, err)
	}
	total := 0
lines:
	for _, line := range strings.Split(out, "\n") {
		for _, m := range must {
			if !strings.Contains(line, m) {
				continue lines
			}
		}
		if m := regexp.MustCompile(`n_packets=(\d+)`).FindStringSubmatch(line); m != nil {
			v, _ := strconv.Atoi(m[1])
			total += v
		}
	}
	return total
}

// TestWorker1Seed recreates seed 003 §3 worker 1 with real interfaces and
// checks the behaviour seed 001 describes, with real tools.
func TestWorker1Seed(t *testing.T) { testWorker1Seed(t, startWorker1(t)) }

// The same checks with the kernel fast path on (docs/offload.md).
func TestWorker1SeedKernelPath(t *testing.T) { testWorker1Seed(t, startWorker1(t, "--offload=ebpf")) }

// The same with the pods' offloads on and userspace-tso-enable: the pod
// ports are on the kernel path's tc path (TCX, sockets getting upcalls).
func TestWorker1SeedKernelPathOffloadsOn(t *testing.T) {
	_, vswitchd := binaries(t)
	w := startWorker1OVSDBWith(t, offloadVswitchd(t, vswitchd, "--offload=ebpf", "--bpffs=none"), true)
	for name, p := range w.pods {
		if tcxProg(t, w.ns.Name, p.veth.Host) == "" || xdpProg(t, w.ns.Name, p.veth.Host) != "" {
			t.Fatalf("pod %s's port %s is not on the tc path (TCX program %q, XDP program %q)", name, p.veth.Host,
				tcxProg(t, w.ns.Name, p.veth.Host), xdpProg(t, w.ns.Name, p.veth.Host))
		}
	}
	testWorker1Seed(t, w)
}

// The same checks with govs-vswitchd driven only by Open vSwitch's tools:
// a private ovsdb-server, ovs-vsctl, ovs-ofctl, ovs-appctl.
func TestWorker1SeedOVSDB(t *testing.T) {
	_, vswitchd := binaries(t)
	testWorker1Seed(t, startWorker1OVSDB(t, vswitchd))
}

// The reference: the same commands and checks with Open vSwitch.
func TestWorker1SeedOpenVSwitch(t *testing.T) { testWorker1Seed(t, startWorker1OVSDB(t, "")) }

func testWorker1Seed(t *testing.T, w *worker1) {
	backend1, frontend := w.pods["backend1"], w.pods["frontend"]
	tcpServer(t, backend1, 80, "backend1")
	tcpServer(t, backend1, 8080, "backend1-8080")
	tcpServer(t, frontend, 80, "frontend")

	t.Run("coredns pings the gateway", func(t *testing.T) {
		if err := w.ping(t, "coredns", "10.222.1.1"); err != nil {
			t.Errorf("coredns -> gw ping failed: %v", err)
		}
	})
	t.Run("frontend and backend ICMP is dropped by egress policy (table 60)", func(t *testing.T) {
		before := w.nPackets(t, "table=60,ip,nw_src=10.222.1.48")
		if err := w.ping(t, "frontend", "10.222.1.1"); err == nil {
			t.Errorf("frontend -> gw ping passed; frontendpolicy isolates its egress")
		}
		if err := w.ping(t, "backend1", "10.222.1.1"); err == nil {
			t.Errorf("backend1 -> gw ping passed; backendpolicy isolates its egress")
		}
		if after := w.nPackets(t, "table=60,ip,nw_src=10.222.1.48"); after <= before {
			t.Errorf("table 60 drop flow for the frontend did not count the pings (%d -> %d)", before, after)
		}
	})
	t.Run("frontend to backend1 TCP 80 works (tables 50 and 90)", func(t *testing.T) {
		before := w.nPackets(t, "table=50,conj_id=1,ip")
		got, err := tcpGet(frontend, "10.222.1.47:80")
		if err != nil || !strings.Contains(got, "hello from backend1") {
			t.Fatalf("frontend -> backend1:80: %q %v", got, err)
		}
		if after := w.nPackets(t, "table=50,conj_id=1,ip"); after <= before {
			t.Errorf("conjunction 1 flow did not count the connection (%d -> %d)", before, after)
		}
	})
	t.Run("frontend to backend1 on another port is dropped", func(t *testing.T) {
		if got, err := tcpGet(frontend, "10.222.1.47:8080"); err == nil {
			t.Errorf("frontend -> backend1:8080 connected: %q", got)
		}
	})
	t.Run("backend1 to frontend TCP 80 is dropped (backend egress isolated)", func(t *testing.T) {
		if got, err := tcpGet(backend1, "10.222.1.48:80"); err == nil {
			t.Errorf("backend1 -> frontend:80 connected: %q", got)
		}
	})
	t.Run("spoofed source IP is dropped by table 10", func(t *testing.T) {
		coredns := w.pods["coredns"]
		coredns.ns.MustExec(t, "ip", "addr", "add", "10.222.1.99/24", "dev", coredns.veth.Peer)
		before := w.nPackets(t, "table=10", " priority=0 actions=drop")
		if err := w.ping(t, "coredns", "10.222.1.1", "-I", "10.222.1.99"); err == nil {
			t.Errorf("ping with a spoofed source passed")
		}
		if after := w.nPackets(t, "table=10", " priority=0 actions=drop"); after <= before {
			t.Errorf("table 10 drop flow did not count the spoofed packets (%d -> %d)", before, after)
		}
		if err := w.ping(t, "coredns", "10.222.1.1"); err != nil {
			t.Errorf("coredns's own address stopped working: %v", err)
		}
	})
	t.Run("the gateway's ARP for 10.222.2.1 is answered with aa:bb:cc:dd:ee:ff (table 20)", func(t *testing.T) {
		w.ns.MustExec(t, "ip", "route", "add", "10.222.2.0/24", "via", "10.222.2.1", "dev", w.gw, "onlink")
		w.ns.Exec("ping", "-c", "1", "-W", "1", "10.222.2.34")
		out := w.ns.MustExec(t, "ip", "neigh", "show", "10.222.2.1", "dev", w.gw)
		if !strings.Contains(out, "aa:bb:cc:dd:ee:ff") {
			t.Errorf("neighbour 10.222.2.1: %q, want aa:bb:cc:dd:ee:ff", out)
		}
	})
	t.Run("service traffic goes through the gateway and kube-proxy's DNAT (tables 40, 105, 31)", func(t *testing.T) {
		if _, err := exec.LookPath("iptables"); err != nil {
			t.Fatalf("iptables missing: %v", err)
		}
		w.ns.MustExec(t, "iptables", "-t", "nat", "-A", "PREROUTING", "-d", "10.104.65.133", "-p", "tcp", "--dport", "80",
			"-j", "DNAT", "--to-destination", "10.222.1.47:80")
		before40 := w.nPackets(t, "table=40,ip,nw_dst=10.96.0.0/12")
		before31 := w.nPackets(t, "table=31,ct_mark=0x20,ip", "priority=200,")
		got, err := tcpGet(frontend, "10.104.65.133:80")
		if err != nil || !strings.Contains(got, "hello from backend1") {
			t.Fatalf("frontend -> backendsvc 10.104.65.133:80: %q %v", got, err)
		}
		if after := w.nPackets(t, "table=40,ip,nw_dst=10.96.0.0/12"); after <= before40 {
			t.Errorf("table 40 service flow did not count (%d -> %d)", before40, after)
		}
		if after := w.nPackets(t, "table=31,ct_mark=0x20,ip", "priority=200,"); after <= before31 {
			t.Errorf("table 31 ct_mark=0x20 reply flow did not count (%d -> %d)", before31, after)
		}
	})
	t.Run("dump-ports counts the pods' traffic", func(t *testing.T) {
		out, err := ofctl(w.mgmt, "dump-ports", "49")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`rx pkts=(\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("dump-ports output: %s", out)
		}
		if n, _ := strconv.Atoi(m[1]); n < 10 {
			t.Errorf("port 49 rx pkts=%d, want the frontend's traffic (>= 10)\n%s", n, out)
		}
	})
	t.Run("the megaflow cache served the traffic (dpctl/show)", func(t *testing.T) {
		// A few more packets of an established connection.
		for i := 0; i < 3; i++ {
			tcpGet(frontend, "10.222.1.47:80")
		}
		time.Sleep(200 * time.Millisecond) // counters are published after each batch
		out, rc := w.appctl(t, "dpctl/show")
		m := regexp.MustCompile(`lookups: hit:(\d+) `).FindStringSubmatch(out)
		if rc != 0 || m == nil {
			t.Fatalf("dpctl/show: %d %s", rc, out)
		}
		if n, _ := strconv.Atoi(m[1]); n == 0 {
			t.Errorf("no cache hits after the traffic:\n%s", out)
		}
		if out, _ := w.appctl(t, "dpif/dump-flows", "br-int"); !regexp.MustCompile(`(?m)^recirc_id\(0\),in_port\(\d+\),.*, packets:[1-9]\d*, .*actions:`).MatchString(out) {
			t.Errorf("dpif/dump-flows lists no megaflow:\n%s", out)
		}
	})
	t.Run("dpctl/dump-conntrack shows the gateway connection with ct_mark 0x20", func(t *testing.T) {
		out, _ := w.appctl(t, "dpctl/dump-conntrack", "zone=65520")
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "tcp,orig=(src=10.222.1.48,dst=10.222.1.47,") && strings.Contains(line, "dport=80)") &&
				strings.Contains(line, "zone=65520") && strings.Contains(line, "mark=32") {
				found = true
			}
		}
		if !found {
			t.Errorf("no committed frontend -> backend1:80 connection with mark 32 in zone 65520:\n%s", out)
		}
		if out, _ := w.appctl(t, "dpctl/dump-conntrack", "zone=7"); strings.TrimSpace(out) != "" {
			t.Errorf("zone 7 should be empty:\n%s", out)
		}
		w.appctl(t, "dpctl/flush-conntrack", "zone=65520")
		if out, _ := w.appctl(t, "dpctl/dump-conntrack", "zone=65520"); strings.TrimSpace(out) != "" {
			t.Errorf("flush-conntrack left:\n%s", out)
		}
	})
}
