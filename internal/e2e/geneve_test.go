package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
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

// A seed worker node of the Geneve walk (seed 001 §9.7-9.11): its underlay
// address on the node-to-node link, its gateway and the pods the test needs.
// The addresses exist only inside the test's namespaces.
type geneveWorker struct {
	nodeIP, nodeMAC string // underlay (ens160 in the seed)
	gwCIDR, gwMAC   string // antrea-gw0
	flows           string // seed pipeline file
	pods            []genevePod
}

var (
	geneveWorker1 = geneveWorker{
		nodeIP: "10.79.1.201", nodeMAC: "00:50:56:8f:4e:82",
		gwCIDR: "10.222.1.1/24", gwMAC: "4e:99:08:c1:53:be",
		flows: "worker1.flows",
		pods:  []genevePod{{"frontend", "10.222.1.48", "be:2c:bf:e4:ec:c5", 49}},
	}
	geneveWorker2 = geneveWorker{
		nodeIP: "10.79.1.202", nodeMAC: "00:50:56:8f:1c:f6",
		gwCIDR: "10.222.2.1/24", gwMAC: "02:d8:4e:3f:92:1d",
		flows: "worker2.flows",
		pods:  []genevePod{{"backend2", "10.222.2.34", "c6:f4:b5:76:10:38", 35}},
	}
)

// nodeCIDR is the node address with the underlay's prefix length.
func (w geneveWorker) nodeCIDR() string {
	if strings.Contains(w.nodeIP, ":") {
		return w.nodeIP + "/64"
	}
	return w.nodeIP + "/24"
}

// peer is the other worker of w's pair (IPv4 or IPv6 underlay).
func (w geneveWorker) peer() geneveWorker {
	for _, pair := range [][2]geneveWorker{{geneveWorker1, geneveWorker2}, {geneveWorker1v6, geneveWorker2v6}} {
		if w.nodeIP == pair[0].nodeIP {
			return pair[1]
		}
		if w.nodeIP == pair[1].nodeIP {
			return pair[0]
		}
	}
	panic("no peer for worker " + w.nodeIP)
}

// genevePod is a pod of the walk, with its OpenFlow port in the seed.
type genevePod struct {
	name, ip, mac string
	ofport        int
}

// antreaTLVMap is the seed's `# tlv-map:` line, loaded before the flows.
const antreaTLVMap = "{class=0x104,type=0x80,len=4}->tun_metadata0"

// Extra flows for the tun_metadata0 check (Antrea's traffic-control mark
// lives in tun_metadata0[28..31] and lands in reg9[28..31], seed table 0):
// the sender tags what it tunnels with mark 0x3, the receiver counts tagged
// packets with a table-30 flow that acts like the seed's own table-30 flow.
const (
	tagTunnelFlow   = "table=110,priority=210,ip,reg0=0x10000/0x10000,reg1=0x1 actions=load:0x3->NXM_NX_TUN_METADATA0[28..31],output:NXM_NX_REG1[]"
	countTaggedSpec = "table=30,ip,reg9=0x30000000/0xf0000000"
	countTaggedFlow = "table=30,priority=210,ip,reg9=0x30000000/0xf0000000 actions=ct(table=31,zone=65520)"
)

// geneveNode is one worker as the test sees it: where its pods and gateway
// live and how to reach its OpenFlow bridge.
type geneveNode struct {
	ns     *netnstest.NS // the node namespace (gateway, underlay)
	target string        // ovs-ofctl target of br-int
	pods   map[string]*pod
	// appctl runs ovs-appctl against the node's switch (OVSDB nodes only).
	appctl func(args ...string) (string, error)
}

// loadSeed loads the TLV map and the seed pipeline with the real ovs-ofctl.
func (g *geneveNode) loadSeed(t *testing.T, w geneveWorker) {
	t.Helper()
	if out, err := ofctl(g.target, "add-tlv-map", antreaTLVMap); err != nil {
		t.Fatalf("add-tlv-map: %v %s", err, out)
	}
	if out, err := ofctl(g.target, "add-flows", filepath.Join(seeds.Dir(), w.flows)); err != nil {
		t.Fatalf("add-flows %s: %v %s", w.flows, err, out)
	}
}

// addFlows adds extra flows (OpenFlow 1.3, like Antrea).
func (g *geneveNode) addFlows(t *testing.T, flows ...string) {
	t.Helper()
	for _, f := range flows {
		if out, err := ofctl(g.target, "-O", "OpenFlow13", "add-flow", f); err != nil {
			t.Fatalf("add-flow %s: %v %s", f, err, out)
		}
	}
}

// nPackets is the total n_packets of the flows dump-flows prints for spec.
func (g *geneveNode) nPackets(t *testing.T, spec string) int {
	t.Helper()
	out, err := ofctl(g.target, "-O", "OpenFlow13", "dump-flows", spec)
	if err != nil {
		t.Fatalf("dump-flows %s: %v", spec, err)
	}
	total := 0
	for _, m := range regexp.MustCompile(`n_packets=(\d+)`).FindAllStringSubmatch(out, -1) {
		v, _ := strconv.Atoi(m[1])
		total += v
	}
	return total
}

// setupGateway configures the gateway's address in the node namespace,
// with offloads off so that frames reach the bridge with final checksums.
func setupGateway(t *testing.T, ns *netnstest.NS, gw string, w geneveWorker) {
	t.Helper()
	ns.MustExec(t, "ip", "addr", "add", w.gwCIDR, "dev", gw)
	ns.MustExec(t, "ip", "link", "set", gw, "up")
	netnstest.DisableOffloads(t, ns, gw)
}

// newVeth is netnstest.NewVeth without its NS.Do (which runs on an OS
// thread that exits afterwards, and OVS daemons started by ovstest with
// Pdeathsig die when the thread that forked them exits): IPv6 is turned off
// with sysctl run in the namespaces instead.
func newVeth(t *testing.T, hostNS, peerNS *netnstest.NS, opts netnstest.VethOptions) *netnstest.Veth {
	t.Helper()
	opts.KeepIPv6 = true
	v := netnstest.NewVeth(t, hostNS, peerNS, opts)
	for _, end := range []struct {
		ns   *netnstest.NS
		name string
	}{{hostNS, v.Host}, {peerNS, v.Peer}} {
		end.ns.MustExec(t, "sysctl", "-qw", "net.ipv6.conf."+end.name+".disable_ipv6=1")
	}
	return v
}

// podNS creates the namespace of a pod with its veth, its address and a
// default route through the gateway, as the Antrea CNI does; the veth's
// host end is in hostNS.
func podNS(t *testing.T, hostNS *netnstest.NS, p genevePod, w geneveWorker) *pod {
	t.Helper()
	ns := netnstest.NewNS(t)
	v := newVeth(t, hostNS, ns, netnstest.VethOptions{PeerAddr: p.ip + "/24", PeerMAC: mustMAC(t, p.mac)})
	gwIP := strings.Split(w.gwCIDR, "/")[0]
	ns.MustExec(t, "ip", "route", "add", "default", "via", gwIP)
	return &pod{ns: ns, veth: v, ip: p.ip}
}

// startGovsWorker configures a govs-vswitchd node like the Antrea agent
// configures OVS: br-int with the flow-based Geneve port antrea-tun0
// (ofport 1), the gateway antrea-gw0 (ofport 2), the pods, the TLV map and
// the seed flows. The underlay address must already be up in n's namespace.
func startGovsWorker(t *testing.T, n *node, w geneveWorker) *geneveNode {
	t.Helper()
	g := &geneveNode{ns: n.ns, target: "unix:" + filepath.Join(n.rundir, "br-int.mgmt"), pods: map[string]*pod{}}
	n.mustRun("add-br", "br-int", "fail_mode=secure")
	n.mustRun("add-port", "br-int", "antrea-tun0", "type=geneve", "ofport_request=1",
		"options:remote_ip=flow", "options:key=flow", "options:local_ip="+w.nodeIP)
	n.mustRun("add-port", "br-int", "antrea-gw0", "type=internal", "ofport_request=2", "mac="+w.gwMAC, "mtu_request=1450")
	setupGateway(t, n.ns, "antrea-gw0", w)
	for _, p := range w.pods {
		pd := podNS(t, n.ns, p, w)
		n.mustRun("add-port", "br-int", pd.veth.Host, fmt.Sprintf("ofport_request=%d", p.ofport))
		g.pods[p.name] = pd
	}
	g.loadSeed(t, w)
	return g
}

// underlay joins two node namespaces with a veth pair carrying the seed's
// node addresses (10.79.1.201 and 10.79.1.202) where addr1/addr2 ask (a
// node with br-phy has its address there); it returns the pair.
func underlay(t *testing.T, ns1, ns2 *netnstest.NS, addr1, addr2 bool) *netnstest.Veth {
	t.Helper()
	opts := netnstest.VethOptions{
		HostMAC: mustMAC(t, geneveWorker1.nodeMAC),
		PeerMAC: mustMAC(t, geneveWorker2.nodeMAC),
	}
	if addr1 {
		opts.HostAddr = geneveWorker1.nodeIP + "/24"
	}
	if addr2 {
		opts.PeerAddr = geneveWorker2.nodeIP + "/24"
	}
	return newVeth(t, ns1, ns2, opts)
}

// capture is tshark decoding (-V) the Geneve datagrams worker 1 sends on
// an underlay interface. tshark reports "Capture started" a little before
// dumpcap's filter is attached, so callers repeat their traffic until the
// packet they want shows up (see synCapture).
type capture struct {
	cmd    *exec.Cmd
	out    lockedBuffer
	stderr strings.Builder // written by the stderr reader before done
	done   chan error
}

func (c *capture) Write(b []byte) (int, error) { return c.out.Write(b) }

func (c *capture) output() string { return c.out.String() }

func startCapture(t *testing.T, ns *netnstest.NS, ifname string) *capture {
	t.Helper()
	return startCaptureFrom(t, ns, ifname, geneveWorker1.nodeIP)
}

// startCaptureFrom captures the Geneve datagrams src sends.
func startCaptureFrom(t *testing.T, ns *netnstest.NS, ifname, src string) *capture {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Fatalf("tshark missing (Debian package tshark): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	args := ns.Command("tshark", "-i", ifname, "-n", "-l", "-a", "duration:30", "-V",
		"-f", "udp dst port 6081 and src host "+src)
	c := &capture{cmd: exec.CommandContext(ctx, args[0], args[1:]...), done: make(chan error, 1)}
	c.cmd.Stdout = c
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("tshark: %v", err)
	}
	t.Cleanup(func() {
		c.cmd.Process.Signal(os.Interrupt)
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
		}
		cancel()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			c.stderr.WriteString(sc.Text() + "\n")
			if !signalled && strings.Contains(sc.Text(), "Capturing on") {
				close(ready)
				signalled = true
			}
		}
		if !signalled {
			close(ready)
		}
		c.done <- c.cmd.Wait()
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("tshark did not start capturing on %s", ifname)
	}
	return c
}

// synCapture repeats connect (one TCP connection through the tunnel) until
// tshark has decoded a datagram whose inner frame is a TCP SYN, and returns
// that packet's -V text.
func synCapture(t *testing.T, ns *netnstest.NS, ifname string, connect func()) string {
	t.Helper()
	return synCaptureFrom(t, ns, ifname, geneveWorker1.nodeIP, connect)
}

// synCaptureFrom is synCapture for the datagrams src sends.
func synCaptureFrom(t *testing.T, ns *netnstest.NS, ifname, src string, connect func()) string {
	t.Helper()
	c := startCaptureFrom(t, ns, ifname, src)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		connect()
		wait := time.Now().Add(500 * time.Millisecond)
		for time.Now().Before(wait) {
			for _, pkt := range strings.Split(c.output(), "\nFrame ") {
				if strings.Contains(pkt, ".... ..1. = Syn: Set") {
					return pkt
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Fatalf("tshark decoded no Geneve datagram with an inner SYN; output:\n%s\n%s", c.output(), c.stderr.String())
	return ""
}

// checkGeneveCapture asserts what seed 001 §9.10 shows for the SYN of the
// frontend -> backend2 connection on worker 1's underlay: UDP to 6081 from
// 10.79.1.201 to 10.79.1.202, Geneve VNI 0 with protocol TEB, and inner
// MACs gw0 > the global virtual MAC.
func checkGeneveCapture(t *testing.T, pkt string) {
	t.Helper()
	for _, want := range []string{
		"Internet Protocol Version 4, Src: 10.79.1.201, Dst: 10.79.1.202",
		"Dst Port: 6081",
		"Generic Network Virtualization Encapsulation",
		"Virtual Network Identifier (VNI): 0x000000",
		"Protocol Type: Transparent Ethernet bridging (0x6558)",
		"Ethernet II, Src: 4e:99:08:c1:53:be, Dst: aa:bb:cc:dd:ee:ff",
		"Internet Protocol Version 4, Src: 10.222.1.48, Dst: 10.222.2.34",
		"Destination Port: 80",
	} {
		if !strings.Contains(pkt, want) {
			t.Errorf("capture lacks %q; packet:\n%s", want, pkt)
		}
	}
}

// The pods' TCP server and client run as this test binary re-executed
// inside the pod's namespace (ip netns exec), not with netnstest.NS.Do, for
// the reason newVeth gives.
const helperEnv = "GOVS_E2E_GENEVE_HELPER"

func init() {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return
	}
	if err := runHelper(mode, os.Args[len(os.Args)-1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runHelper is "serve" (listen on addr, answer every connection with
// "hello from <pod>\n", $POD) or "get" (connect to addr, print the answer).
func runHelper(mode, addr string) error {
	switch mode {
	case "serve":
		ln, err := net.Listen("tcp4", addr)
		if err != nil {
			return err
		}
		fmt.Println("listening")
		for {
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			fmt.Fprintf(c, "hello from %s\n", os.Getenv("POD"))
			c.Close()
		}
	case "get":
		c, err := net.DialTimeout("tcp4", addr, 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Second))
		b, err := io.ReadAll(c)
		os.Stdout.Write(b)
		return err
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// podServe starts the TCP server of a pod on port; it stops at cleanup.
func podServe(t *testing.T, p *pod, name string, port int) {
	t.Helper()
	args := p.ns.Command(os.Args[0], fmt.Sprintf(":%d", port))
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"=serve", "POD="+name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("pod %s server: %v", name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "listening\n" {
		t.Fatalf("pod %s server did not start: %q %v", name, line, err)
	}
}

// podGet connects from a pod to addr and returns what the server said.
func podGet(p *pod, addr string) (string, error) {
	args := p.ns.Command(os.Args[0], addr)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"=get")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// checkPodTCP runs the §9 connection (frontend -> backend2 TCP 80) and
// checks the answer came back through the tunnel.
func checkPodTCP(t *testing.T, frontend *pod) {
	t.Helper()
	got, err := podGet(frontend, "10.222.2.34:80")
	if err != nil || !strings.Contains(got, "hello from backend2") {
		t.Fatalf("frontend -> backend2 10.222.2.34:80: %q %v", got, err)
	}
}

// TestGeneveTwoGovsNodes runs seed 001 §9.7-9.11 on two govs-vswitchd
// nodes joined by a Geneve tunnel: frontend (worker 1) connects to backend2
// (worker 2) on TCP 80 through the seed pipelines, the underlay carries
// what tshark decodes as the seed's capture shows, and tun_metadata0 set by
// one side reaches the other's reg9.
func TestGeneveTwoGovsNodes(t *testing.T) {
	n1, n2 := startNode(t), startNode(t)
	link := underlay(t, n1.ns, n2.ns, true, true)
	w1 := startGovsWorker(t, n1, geneveWorker1)
	w2 := startGovsWorker(t, n2, geneveWorker2)
	frontend, backend2 := w1.pods["frontend"], w2.pods["backend2"]
	podServe(t, backend2, "backend2", 80)

	t.Run("frontend to backend2 TCP 80 through the tunnel, decoded by tshark", func(t *testing.T) {
		tunOut1 := w1.nPackets(t, "table=70,ip,nw_dst=10.222.2.0/24")
		tunIn2 := w2.nPackets(t, "table=0,in_port=1")
		pkt := synCapture(t, n1.ns, link.Host, func() { checkPodTCP(t, frontend) })
		checkGeneveCapture(t, pkt)
		if got := w1.nPackets(t, "table=70,ip,nw_dst=10.222.2.0/24"); got <= tunOut1 {
			t.Errorf("worker 1 table 70 tunnel flow did not count (%d -> %d)", tunOut1, got)
		}
		if got := w2.nPackets(t, "table=0,in_port=1"); got <= tunIn2 {
			t.Errorf("worker 2 table 0 in_port=antrea-tun0 did not count (%d -> %d)", tunIn2, got)
		}
	})
	checkTunMetadata(t, w1, w2, frontend)
	t.Run("govs show and add-port errors", func(t *testing.T) {
		if show := n1.mustRun("show"); !strings.Contains(show, "Port antrea-tun0\n            Interface antrea-tun0\n                ofport: 1\n                type: geneve") {
			t.Errorf("show does not list the geneve port:\n%s", show)
		}
		// Without local_ip the port shares antrea-tun0's socket, as in
		// OVS: it takes the packets to the node's other addresses.
		out, err := n1.run("add-port", "br-int", "tun9", "type=geneve", "options:remote_ip=flow")
		if err != nil {
			t.Errorf("second geneve port, without local_ip: %v %s", err, out)
		} else if out, err := n1.run("del-port", "br-int", "tun9"); err != nil {
			t.Errorf("del-port tun9: %v %s", err, out)
		}
		// Unless it would take the same packets (OVS: "same config as
		// port", EEXIST). A fixed remote_ip is another match.
		out, err = n1.run("add-port", "br-int", "tun9", "type=geneve", "options:remote_ip=flow", "options:key=flow", "options:local_ip="+geneveWorker1.nodeIP)
		if err == nil || !strings.Contains(out, "could not add network device tun9 to ofproto (File exists)") {
			t.Errorf("second geneve port with antrea-tun0's options: %v %s", err, out)
		}
		out, err = n1.run("add-port", "br-int", "tun9", "type=geneve", "options:remote_ip="+geneveWorker2.nodeIP, "options:key=flow", "options:local_ip="+geneveWorker1.nodeIP)
		if err != nil {
			t.Errorf("geneve port with a fixed remote_ip next to antrea-tun0: %v %s", err, out)
		} else if out, err := n1.run("del-port", "br-int", "tun9"); err != nil {
			t.Errorf("del-port tun9: %v %s", err, out)
		}
	})
}

// checkTunMetadata: each side tags its tunnel traffic with tun_metadata0
// mark 0x3 and the other side sees it in reg9[28..31] (seed table 0's move).
func checkTunMetadata(t *testing.T, w1, w2 *geneveNode, frontend *pod) {
	t.Helper()
	t.Run("tun_metadata0 crosses the tunnel both ways into reg9", func(t *testing.T) {
		for _, g := range []*geneveNode{w1, w2} {
			g.addFlows(t, tagTunnelFlow, countTaggedFlow)
		}
		checkPodTCP(t, frontend)
		// Worker 1 tags the frontend's packets, worker 2 the replies.
		if got := w2.nPackets(t, countTaggedSpec); got == 0 {
			t.Errorf("worker 2 saw no packet with reg9[28..31]=0x3 from worker 1's tun_metadata0")
		}
		if got := w1.nPackets(t, countTaggedSpec); got == 0 {
			t.Errorf("worker 1 saw no packet with reg9[28..31]=0x3 from worker 2's tun_metadata0")
		}
	})
}

// startOVSWorker2 makes worker 2 with a real Open vSwitch next to n1's
// govs node (whose underlay address is on its NIC).
func startOVSWorker2(t *testing.T, n1 *node) (*geneveNode, *netnstest.Veth) {
	t.Helper()
	var link *netnstest.Veth
	g := startOVSDBWorker(t, "", geneveWorker2, func(ns *netnstest.NS) string {
		link = underlay(t, n1.ns, ns, true, false)
		return link.Peer
	})
	return g, link
}

// startOVSDBWorker makes a worker with a switch daemon (vswitchd; "":
// Open vSwitch's ovs-vswitchd) on a private ovsdb-server, configured with
// the commands OVS's userspace tunneling guide gives: br-phy holds the
// underlay interface (which plug connects and names) and the node address
// (on its LOCAL port), the switch's route and neighbour tables point the
// tunnel at it, and br-int has the flow-based Geneve port antrea-tun0
// without local_ip, the gateway and the pods. The same commands whatever
// the daemon.
func startOVSDBWorker(t *testing.T, vswitchd string, w geneveWorker, plug func(ns *netnstest.NS) string) *geneveNode {
	t.Helper()
	o := ovstest.Start(t, ovstest.Options{FailMode: "secure", Vswitchd: vswitchd})
	ns := &netnstest.NS{Name: o.Netns()}
	nic := plug(ns)
	vsctl := func(args ...string) {
		t.Helper()
		if out, err := o.Vsctl(args...); err != nil {
			t.Fatalf("ovs-vsctl %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
	appctl := func(args ...string) {
		t.Helper()
		if out, err := o.Appctl(args...); err != nil {
			t.Fatalf("ovs-appctl %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
	// br-phy's LOCAL port takes the NIC's MAC once the NIC is its port
	// (bridge_pick_local_hw_addr: the lowest global MAC), so that the
	// peer's frames to that MAC reach the node address on br-phy.
	vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev", "fail-mode=standalone")
	vsctl("add-port", "br-phy", nic)
	cidr := netip.MustParsePrefix(w.nodeCIDR())
	addr := []string{"ip", "addr", "add", cidr.String(), "dev", "br-phy"}
	neigh := "tnl/arp/set"
	if cidr.Addr().Is6() {
		addr = append(addr, "nodad") // usable at once
		neigh = "tnl/neigh/set"
	}
	ns.MustExec(t, addr...)
	ns.MustExec(t, "ip", "link", "set", "br-phy", "up")
	// OVS learns br-phy's new address from netlink a moment later, and
	// refuses the route ("Error while inserting route") until it has.
	underlayNet := cidr.Masked().String()
	waitFor(t, 10*time.Second, func() bool {
		_, err := o.Appctl("ovs/route/add", underlayNet, "br-phy")
		return err == nil
	}, "ovs-appctl ovs/route/add "+underlayNet+" br-phy")
	peer := w.peer()
	appctl(neigh, "br-phy", peer.nodeIP, peer.nodeMAC)

	g := &geneveNode{ns: ns, target: o.Target(), pods: map[string]*pod{}, appctl: o.Appctl}
	if err := o.AddPort(ovstest.Port{Name: "antrea-tun0", Type: "geneve", OFPort: 1,
		Options: map[string]string{"remote_ip": "flow", "key": "flow"}}); err != nil {
		t.Fatal(err)
	}
	if err := o.AddPort(ovstest.Port{Name: "antrea-gw0", Type: "internal", OFPort: 2}); err != nil {
		t.Fatal(err)
	}
	vsctl("set", "interface", "antrea-gw0", fmt.Sprintf("mac=%q", w.gwMAC))
	setupGateway(t, ns, "antrea-gw0", w)
	for _, p := range w.pods {
		pd := podNS(t, ns, p, w)
		if err := o.AddPort(ovstest.Port{Name: pd.veth.Host, OFPort: p.ofport}); err != nil {
			t.Fatal(err)
		}
		g.pods[p.name] = pd
	}
	g.loadSeed(t, w)
	return g
}

// startOVSDBPair starts the workers wk1 and wk2 with startOVSDBWorker and
// the daemons vswitchd1 and vswitchd2, their br-phy bridges joined by an
// underlay link; it returns them, worker 1's namespace and the link.
func startOVSDBPair(t *testing.T, vswitchd1, vswitchd2 string, wk1, wk2 geneveWorker) (w1, w2 *geneveNode, ns1 *netnstest.NS, link *netnstest.Veth) {
	t.Helper()
	netnstest.RequireRoot(t)
	// The link is made with worker 1's namespace and its far end waits in
	// hold until worker 2's exists.
	hold := netnstest.NewNS(t)
	w1 = startOVSDBWorker(t, vswitchd1, wk1, func(ns *netnstest.NS) string {
		ns1 = ns
		link = underlay(t, ns, hold, false, false)
		return link.Host
	})
	w2 = startOVSDBWorker(t, vswitchd2, wk2, func(ns *netnstest.NS) string {
		hold.MustExec(t, "ip", "link", "set", link.Peer, "netns", ns.Name)
		ns.MustExec(t, "ip", "link", "set", link.Peer, "up")
		return link.Peer
	})
	return w1, w2, ns1, link
}

// testGeneveOVSDB runs the Geneve walk between two workers built by
// startOVSDBWorker with the daemons vswitchd1 and vswitchd2 ("": Open
// vSwitch), joined by an underlay link between their br-phy bridges.
func testGeneveOVSDB(t *testing.T, vswitchd1, vswitchd2 string) {
	w1, w2, ns1, link := startOVSDBPair(t, vswitchd1, vswitchd2, geneveWorker1, geneveWorker2)
	frontend, backend2 := w1.pods["frontend"], w2.pods["backend2"]
	podServe(t, backend2, "backend2", 80)
	t.Run("frontend to backend2 TCP 80 through the tunnel, decoded by tshark", func(t *testing.T) {
		tunOut1 := w1.nPackets(t, "table=70,ip,nw_dst=10.222.2.0/24")
		tunIn2 := w2.nPackets(t, "table=0,in_port=1")
		tunIn1 := w1.nPackets(t, "table=0,in_port=1")
		pkt := synCapture(t, ns1, link.Host, func() { checkPodTCP(t, frontend) })
		checkGeneveCapture(t, pkt)
		if got := w1.nPackets(t, "table=70,ip,nw_dst=10.222.2.0/24"); got <= tunOut1 {
			t.Errorf("worker 1 table 70 tunnel flow did not count (%d -> %d)", tunOut1, got)
		}
		if got := w2.nPackets(t, "table=0,in_port=1"); got <= tunIn2 {
			t.Errorf("worker 2 table 0 in_port=antrea-tun0 did not count (%d -> %d)", tunIn2, got)
		}
		if got := w1.nPackets(t, "table=0,in_port=1"); got <= tunIn1 {
			t.Errorf("worker 1 table 0 in_port=antrea-tun0 did not count the replies (%d -> %d)", tunIn1, got)
		}
	})
	checkTunMetadata(t, w1, w2, frontend)
}

// The Geneve walk driven only by Open vSwitch's tools (ovsdb-server,
// ovs-vsctl with br-phy and no local_ip, ovs-ofctl, ovs-appctl): two
// govs-vswitchd, govs and Open vSwitch both ways, and the reference with
// two Open vSwitch.
func TestGeneveOVSDBGovsGovs(t *testing.T) {
	_, vswitchd := binaries(t)
	testGeneveOVSDB(t, vswitchd, vswitchd)
}

func TestGeneveOVSDBGovsOVS(t *testing.T) {
	_, vswitchd := binaries(t)
	testGeneveOVSDB(t, vswitchd, "")
}

func TestGeneveOVSDBOVSGovs(t *testing.T) {
	_, vswitchd := binaries(t)
	testGeneveOVSDB(t, "", vswitchd)
}

func TestGeneveOVSDBOpenVSwitch(t *testing.T) { testGeneveOVSDB(t, "", "") }

// TestGeneveInteropWithOVS is TestGeneveTwoGovsNodes with worker 2 run by
// a real Open vSwitch: govs's Geneve (encap, decap, TLV options) must
// interoperate with OVS's userspace tunnel in both directions.
func TestGeneveInteropWithOVS(t *testing.T) {
	n1 := startNode(t)
	w2, link := startOVSWorker2(t, n1)
	w1 := startGovsWorker(t, n1, geneveWorker1)
	frontend, backend2 := w1.pods["frontend"], w2.pods["backend2"]
	podServe(t, backend2, "backend2", 80)

	t.Run("frontend (govs) to backend2 (OVS) TCP 80", func(t *testing.T) {
		tunIn2 := w2.nPackets(t, "table=0,in_port=1")
		tunIn1 := w1.nPackets(t, "table=0,in_port=1")
		pkt := synCapture(t, n1.ns, link.Host, func() { checkPodTCP(t, frontend) })
		checkGeneveCapture(t, pkt)
		if got := w2.nPackets(t, "table=0,in_port=1"); got <= tunIn2 {
			t.Errorf("OVS table 0 in_port=antrea-tun0 did not count govs's packets (%d -> %d)", tunIn2, got)
		}
		if got := w1.nPackets(t, "table=0,in_port=1"); got <= tunIn1 {
			t.Errorf("govs table 0 in_port=antrea-tun0 did not count OVS's packets (%d -> %d)", tunIn1, got)
		}
	})
	checkTunMetadata(t, w1, w2, frontend)
}
