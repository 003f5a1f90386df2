package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/govs-project/govs/internal/ovstest"
	"github.com/govs-project/govs/internal/seeds"
)

// The two-node scenarios run seed 001's §9 walk: the frontend on worker 1
// talks to backend2 on worker 2, each node has its own switch with its
// seed pipeline, and every packet crosses the node-to-node link inside
// Geneve (UDP 6081) through the flow-based tunnel port antrea-tun0. The
// link is a veth pair between the two node namespaces carrying the seed's
// node addresses, which exist only there.

// backend2Pod is seed worker 2's backend2, the server of the two-node
// scenarios (the frontend, clientPod, is the client as on one node).
var backend2Pod = podSpec{role: "be2", ip: "10.222.2.34", mac: "c6:f4:b5:76:10:38", ofport: 35}

// geneveNode is one worker of the seed: its underlay address, its
// gateway antrea-gw0, its pod and its pipeline.
type geneveNode struct {
	role            string // in the namespace names
	nodeIP, nodeMAC string // underlay (ens160 in the seed)
	gwIP, gwMAC     string // antrea-gw0
	pod             podSpec
	flows           string // ovs-ofctl add-flows text
}

// The seed's Antrea ports: antrea-tun0 is OpenFlow port 1, antrea-gw0 2.
const (
	tunOFPort = 1
	gwOFPort  = 2
)

// geneveMTU is the pods' and gateways' MTU: the underlay's 1500 less the
// 50 bytes of outer Ethernet, IPv4, UDP and Geneve headers, which is what
// Antrea configures for Geneve. Larger frames would not fit the tunnel.
const geneveMTU = 1450

// underlaySubnet is the seed's node subnet, which the node addresses
// are configured in.
const (
	underlaySubnet    = "10.79.1.0/24"
	underlayPrefixLen = 24
)

// worker2BenchRule is worker1BenchRule for worker 2: the seed's
// backendpolicy admits only TCP 80 from the frontend into backend2
// (conjunction 1, reg1=0x23 is backend2's port 35) and table 100 drops
// the rest, so the packet-rate test's UDP 53 gets its own ingress rule,
// a plain flow at priority 210 next to the gateway bypass. Both two-node
// scenarios load it.
const worker2BenchRule = "cookie=0x1050000000000, table=90, priority=210,udp,nw_src=10.222.1.48,reg1=0x23,tp_dst=53 actions=load:0x6->NXM_NX_REG6[],resubmit(,105)\n"

// geneveNodes are seed workers 1 and 2; the first holds the client pod.
var geneveNodes = [2]geneveNode{
	{
		role: "w1", nodeIP: "10.79.1.201", nodeMAC: "00:50:56:8f:4e:82",
		gwIP: "10.222.1.1", gwMAC: "4e:99:08:c1:53:be",
		pod: clientPod, flows: seeds.Worker1,
	},
	{
		role: "w2", nodeIP: "10.79.1.202", nodeMAC: "00:50:56:8f:1c:f6",
		gwIP: "10.222.2.1", gwMAC: "02:d8:4e:3f:92:1d",
		pod:   backend2Pod,
		flows: seeds.Worker2 + "\n# govs bench: backendpolicy also allows UDP 53 from the frontend\n" + worker2BenchRule,
	},
}

// peer returns the other node.
func (n geneveNode) peer() geneveNode {
	if n.role == geneveNodes[0].role {
		return geneveNodes[1]
	}
	return geneveNodes[0]
}

// setupGateway configures antrea-gw0 in the node namespace after the
// switch created it: its address (the pods' default gateway), IPv6 off,
// offloads as the pods have them.
func setupGateway(node netns, n geneveNode, offloads bool) error {
	if err := setupIface(node, "antrea-gw0", "", fmt.Sprintf("%s/%d", n.gwIP, podPrefixLen), offloads); err != nil {
		return fmt.Errorf("antrea-gw0: %w", err)
	}
	return nil
}

// attachGenevePod creates n's pod namespace and connects it to the node
// namespace like attachPod, with the tunnel MTU on both ends and the
// node's gateway as the pod's next hop; it returns the pod and the switch
// end's name.
func attachGenevePod(cs *cleanupStack, node netns, n geneveNode, offloads bool) (podIface, string, error) {
	podNS, err := newNS(cs, n.pod.role)
	if err != nil {
		return podIface{}, "", err
	}
	pod, swEnd, err := attachPod(n.pod, podNS, node, offloads)
	if err != nil {
		return podIface{}, "", err
	}
	for _, end := range []struct {
		ns   netns
		name string
	}{{podNS, pod.name}, {node, swEnd}} {
		if _, err := end.ns.exec("ip", "link", "set", end.name, "mtu", fmt.Sprint(geneveMTU)); err != nil {
			return podIface{}, "", err
		}
	}
	pod.gwIP, pod.gwMAC = n.gwIP, n.gwMAC
	return pod, swEnd, nil
}

// setupGovsGeneve runs a govs-vswitchd in each of two node namespaces,
// configured as the Antrea agent configures OVS (see the e2e test
// TestGeneveTwoGovsNodes): br-int with antrea-tun0 (type=geneve,
// remote_ip=flow, key=flow, local_ip=the node address), antrea-gw0 and the
// pod, and the node's seed pipeline. govs sends and receives the Geneve
// datagrams through the node's kernel on the underlay veth.
func setupGovsGeneve(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
	return setupGovsGeneveWith(e, cs, offloads)
}

// setupGovsGeneveEBPF is setupGovsGeneve with --offload=ebpf on both
// nodes: the TCX program on the pod veths encapsulates established
// connections, the underlay's TCX program decapsulates them
// (docs/offload.md).
func setupGovsGeneveEBPF(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
	return setupGovsGeneveWith(e, cs, offloads, "--offload=ebpf")
}

// setupGovsGeneveTSO is setupGovsGeneve with the pods' offloads on and
// --userspace-tso (with ebpf also --offload=ebpf: the tc path
// encapsulates super-segments whole). The underlay veth keeps its
// offloads off, as a NIC without tunnel offloads: the kernel segments
// and checksums the encapsulated super-segments as it sends them (a veth
// keeping them would hand the other node partial checksums, and the tc
// path leaves such underlays to userspace).
func setupGovsGeneveTSO(ebpf bool) func(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
	flags := []string{"--userspace-tso"}
	if ebpf {
		flags = append(flags, "--offload=ebpf")
	}
	return func(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
		return setupGovsGeneveUnderlay(e, cs, offloads, false, flags...)
	}
}

func setupGovsGeneveWith(e *env, cs *cleanupStack, offloads bool, flags ...string) (*topology, error) {
	return setupGovsGeneveUnderlay(e, cs, offloads, offloads, flags...)
}

func setupGovsGeneveUnderlay(e *env, cs *cleanupStack, offloads, underlayOffloads bool, flags ...string) (*topology, error) {
	if err := ofctlMissing(); err != nil {
		return nil, err
	}
	var nodes [2]netns
	for i, n := range geneveNodes {
		ns, err := newNS(cs, "gv"+n.role)
		if err != nil {
			return nil, err
		}
		nodes[i] = ns
	}
	u0, u1, err := vethPair(nodes[0], nodes[1])
	if err != nil {
		return nil, err
	}
	// The node addresses live on the underlay veth ends (local_ip binds
	// to them), with static neighbours so no ARP runs during a test.
	for i, end := range []string{u0, u1} {
		n := geneveNodes[i]
		if err := setupIface(nodes[i], end, n.nodeMAC, fmt.Sprintf("%s/%d", n.nodeIP, underlayPrefixLen), underlayOffloads); err != nil {
			return nil, err
		}
		if err := staticNeighbor(nodes[i], end, n.peer().nodeIP, n.peer().nodeMAC); err != nil {
			return nil, err
		}
	}
	t := &topology{switchCmd: "govs-vswitchd", version: "govs-vswitchd (this tree), 2 nodes"}
	pods := [2]*podIface{&t.client, &t.server}
	for i, n := range geneveNodes {
		g, err := startGovs(e, cs, nodes[i], flags...)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.role, err)
		}
		t.switchPIDs = append(t.switchPIDs, g.proc.pid())
		if err := g.call("add-port", "br-int", "antrea-tun0", "type=geneve", fmt.Sprintf("ofport_request=%d", tunOFPort),
			"options:remote_ip=flow", "options:key=flow", "options:local_ip="+n.nodeIP); err != nil {
			return nil, err
		}
		if err := g.call("add-port", "br-int", "antrea-gw0", "type=internal", fmt.Sprintf("ofport_request=%d", gwOFPort),
			"mac="+n.gwMAC, fmt.Sprintf("mtu_request=%d", geneveMTU)); err != nil {
			return nil, err
		}
		if err := setupGateway(nodes[i], n, offloads); err != nil {
			return nil, err
		}
		pod, swEnd, err := attachGenevePod(cs, nodes[i], n, offloads)
		if err != nil {
			return nil, err
		}
		if err := g.call("add-port", "br-int", swEnd, fmt.Sprintf("ofport_request=%d", n.pod.ofport)); err != nil {
			return nil, err
		}
		*pods[i] = pod
		target, err := g.target()
		if err != nil {
			return nil, err
		}
		if err := loadPipeline(target, g.rundir, n.flows, true); err != nil {
			return nil, fmt.Errorf("node %s: %w", n.role, err)
		}
	}
	return t, finishPods(t)
}

// setupOVSGeneve is setupGovsGeneve with two Open vSwitch instances
// (userspace netdev datapath, each in its own namespace and rundir), set
// up the way OVS's userspace tunneling guide does it and the e2e test
// TestGeneveInteropWithOVS does for its OVS node: br-phy holds the
// underlay veth end and the node address (on its internal port, whose MAC
// is the node MAC), OVS's own route and neighbour tables point the tunnel
// at it, and br-int has antrea-tun0, antrea-gw0 and the pod.
func setupOVSGeneve(e *env, cs *cleanupStack, offloads bool) (*topology, error) {
	if err := ovsMissing(); err != nil {
		return nil, err
	}
	var (
		ovs   [2]*ovstest.OVS
		nodes [2]netns
	)
	for i, n := range geneveNodes {
		o, stop, err := ovstest.Launch(ovstest.Options{FailMode: "secure"}, e.logf)
		if err != nil {
			return nil, fmt.Errorf("start Open vSwitch for node %s: %w", n.role, err)
		}
		cs.push(stop)
		ovs[i], nodes[i] = o, netns(o.Netns())
	}
	u0, u1, err := vethPair(nodes[0], nodes[1])
	if err != nil {
		return nil, err
	}
	t := &topology{switchCmd: "ovs-vswitchd", version: ovsVersion() + ", 2 nodes"}
	pods := [2]*podIface{&t.client, &t.server}
	for i, n := range geneveNodes {
		o, node := ovs[i], nodes[i]
		if err := ovsUnderlay(o, node, []string{u0, u1}[i], n, offloads); err != nil {
			return nil, fmt.Errorf("node %s: %w", n.role, err)
		}
		if err := o.AddPort(ovstest.Port{Name: "antrea-tun0", Type: "geneve", OFPort: tunOFPort,
			Options: map[string]string{"remote_ip": "flow", "key": "flow"}}); err != nil {
			return nil, err
		}
		if err := o.AddPort(ovstest.Port{Name: "antrea-gw0", Type: "internal", OFPort: gwOFPort}); err != nil {
			return nil, err
		}
		if out, err := o.Vsctl("set", "interface", "antrea-gw0", fmt.Sprintf("mac=%q", n.gwMAC), fmt.Sprintf("mtu_request=%d", geneveMTU)); err != nil {
			return nil, fmt.Errorf("antrea-gw0 MAC and MTU: %w (%s)", err, out)
		}
		if err := setupGateway(node, n, offloads); err != nil {
			return nil, err
		}
		pod, swEnd, err := attachGenevePod(cs, node, n, offloads)
		if err != nil {
			return nil, err
		}
		if err := o.AddPort(ovstest.Port{Name: swEnd, OFPort: n.pod.ofport}); err != nil {
			return nil, err
		}
		*pods[i] = pod
		if err := loadPipeline(o.Target(), o.Rundir(), n.flows, true); err != nil {
			return nil, fmt.Errorf("node %s: %w", n.role, err)
		}
		pid, err := ovsVswitchdPID(o)
		if err != nil {
			return nil, err
		}
		t.switchPIDs = append(t.switchPIDs, pid)
	}
	return t, finishPods(t)
}

// ovsUnderlay gives an Open vSwitch node its underlay: br-phy (netdev,
// standalone, so NORMAL switches the underlay) with the veth end uplink as
// its port and the node address and MAC on its internal port, OVS's route
// to the node subnet through br-phy and a static tunnel neighbour entry
// for the peer node.
func ovsUnderlay(o *ovstest.OVS, node netns, uplink string, n geneveNode, offloads bool) error {
	if out, err := o.Vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev",
		"fail-mode=standalone", fmt.Sprintf("other-config:hwaddr=%q", n.nodeMAC)); err != nil {
		return fmt.Errorf("create br-phy: %w (%s)", err, out)
	}
	if err := setupIface(node, uplink, "", "", offloads); err != nil {
		return err
	}
	if out, err := o.Vsctl("add-port", "br-phy", uplink); err != nil {
		return fmt.Errorf("add %s to br-phy: %w (%s)", uplink, err, out)
	}
	if err := setupIface(node, "br-phy", "", fmt.Sprintf("%s/%d", n.nodeIP, underlayPrefixLen), offloads); err != nil {
		return err
	}
	// The peer's tunnel neighbour entry below names this MAC, so make sure
	// other-config:hwaddr took effect on the internal port.
	mac, err := node.exec("cat", "/sys/class/net/br-phy/address")
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(mac); got != n.nodeMAC {
		return fmt.Errorf("br-phy has MAC %s, want %s (other-config:hwaddr)", got, n.nodeMAC)
	}
	// OVS learns br-phy's new address from netlink a moment later and
	// refuses the route ("Error while inserting route") until it has.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := o.Appctl("ovs/route/add", underlaySubnet, "br-phy")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ovs/route/add through br-phy: %w (%s)", err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	peer := n.peer()
	if out, err := o.Appctl("tnl/arp/set", "br-phy", peer.nodeIP, peer.nodeMAC); err != nil {
		return fmt.Errorf("tnl/arp/set: %w (%s)", err, out)
	}
	return nil
}
