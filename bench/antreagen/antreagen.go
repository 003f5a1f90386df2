// Package antreagen generates the OpenFlow pipeline of one Antrea node of a
// large cluster, shaped like Antrea v1.15's (docs/design/ovs-pipeline.md):
// local pods, Kubernetes and Antrea-native network policies as conjunctive
// flows in the four policy tables, Services with their endpoints as select
// groups, and the routes to remote nodes over the tunnel.
//
// The output is deterministic for a seed and written the way Open vSwitch
// prints Antrea's flows in OpenFlow 1.5 (set_field, goto_table, numeric
// table ids), so `ovs-ofctl -O OpenFlow15 add-groups` and `add-flows`
// accept every line. The benchmarks of flowtable, `govs bench` and the e2e
// test that compares govs with Open vSwitch all load the same text.
package antreagen

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
)

// Tables of the Antrea v1.15 pipeline (encap mode, AntreaProxy and
// AntreaPolicy on; the optional features' tables are left out and the
// numbers are the ones Antrea allocates then).
const (
	TablePipelineRootClassifier = 0
	TableARPSpoofGuard          = 1
	TableARPResponder           = 2
	TableClassifier             = 3
	TableSpoofGuard             = 4
	TableUnSNAT                 = 5
	TableConntrackZone          = 6
	TableConntrackState         = 7
	TablePreRoutingClassifier   = 8
	TableSessionAffinity        = 9
	TableServiceLB              = 10
	TableEndpointDNAT           = 11
	TableAntreaPolicyEgressRule = 12
	TableEgressRule             = 13
	TableEgressDefaultRule      = 14
	TableEgressMetric           = 15
	TableL3Forwarding           = 16
	TableEgressMark             = 17
	TableL3DecTTL               = 18
	TableSNATMark               = 19
	TableSNAT                   = 20
	TableL2ForwardingCalc       = 21
	TableIngressSecurityClass   = 22
	TableAntreaPolicyIngress    = 23
	TableIngressRule            = 24
	TableIngressDefaultRule     = 25
	TableIngressMetric          = 26
	TableConntrackCommit        = 27
	TableOutput                 = 28
)

// Ports and addresses every generated node shares.
const (
	TunnelPort       = 1 // antrea-tun0
	GatewayPort      = 2 // antrea-gw0
	GlobalVirtualMAC = "aa:bb:cc:dd:ee:ff"
	ctZone           = 65520
	snatCtZone       = 65521
)

// Config sizes the node. The zero value of a field takes its default.
type Config struct {
	Seed        uint64
	Pods        int // local pods (default 1,000)
	Policies    int // network policies with a rule on this node (default 2,000)
	Services    int // ClusterIP Services (default 500)
	Endpoints   int // endpoints per Service (default 3)
	RemoteNodes int // other nodes of the cluster (default 100)
}

// Default is the size of issue 23: ~118k flows and 500 groups.
func Default() Config {
	return Config{Seed: 1, Pods: 1000, Policies: 2000, Services: 500, Endpoints: 3, RemoteNodes: 100}
}

// Small is a pipeline small enough to compare dumps line by line in a test.
func Small() Config {
	return Config{Seed: 7, Pods: 20, Policies: 30, Services: 10, Endpoints: 3, RemoteNodes: 5}
}

func (c *Config) fill() {
	d := Default()
	if c.Pods == 0 {
		c.Pods = d.Pods
	}
	if c.Policies == 0 {
		c.Policies = d.Policies
	}
	if c.Services == 0 {
		c.Services = d.Services
	}
	if c.Endpoints == 0 {
		c.Endpoints = d.Endpoints
	}
	if c.RemoteNodes == 0 {
		c.RemoteNodes = d.RemoteNodes
	}
}

// Pod is a local pod: its OpenFlow port, MAC and IPv4 address.
type Pod struct {
	Port uint32
	MAC  [6]byte
	IP   uint32
}

// Node is a remote node: its transport IP and pod CIDR (a /22).
type Node struct {
	IP      uint32
	PodCIDR uint32
}

// Service is a ClusterIP Service with its group's endpoints.
type Service struct {
	IP        uint32
	Proto     uint8 // 6 or 17
	Port      uint16
	Group     uint32
	Endpoints []Endpoint
}

// Endpoint is one backend of a Service.
type Endpoint struct {
	IP   uint32
	Port uint16
}

// Rule is one policy rule as installed: a conjunction whose clauses are
// the applied-to pods (local), the peers and the L4 ports. A packet from
// From[i] to To[j] on Ports[k] hits it.
type Rule struct {
	ConjID   uint32
	Ingress  bool
	Native   bool // Antrea-native (own priority, allow or drop) vs Kubernetes NP
	Priority uint16
	Drop     bool
	Local    []int    // indexes into Pods: the applied-to pods on this node
	Peers    []uint32 // peer IPv4 addresses
	Proto    uint8
	Ports    []uint16
}

// Pipeline is a generated node.
type Pipeline struct {
	Config   Config
	NodeIP   uint32
	PodCIDR  uint32 // local /22
	GwIP     uint32
	GwMAC    [6]byte
	Pods     []Pod
	Nodes    []Node
	Services []Service
	Rules    []Rule
	// Flows is the add-flows text, one flow a line; Groups the add-groups
	// text. NumFlows counts distinct flows (what a dump shows).
	Flows, Groups string
	NumFlows      int
}

// Text is the whole pipeline as one flows file: "# group:" header lines
// (flowtext.Load and internal/ovstest read them) then the flows.
func (p *Pipeline) Text() string {
	var b strings.Builder
	for _, g := range strings.Split(strings.TrimSpace(p.Groups), "\n") {
		if g != "" {
			b.WriteString("# group: " + g + "\n")
		}
	}
	b.WriteString(p.Flows)
	return b.String()
}

// IP formats an IPv4 address held in a uint32.
func IP(a uint32) string {
	return fmt.Sprintf("%d.%d.%d.%d", a>>24, a>>16&0xff, a>>8&0xff, a&0xff)
}

// MAC formats a MAC address.
func MAC(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// nodePodCIDR is node i's /22 (node 0 is the local node): 10.64.0.0/22,
// 10.64.4.0/22, ...
func nodePodCIDR(i int) uint32 { return 10<<24 | 64<<16 + uint32(i)<<10 }

// builder collects flows keyed by table, priority and match so that, as
// in Antrea, two rules needing the same match share one flow whose actions
// list both conjunction clauses.
type builder struct {
	order []string
	flows map[string][]string
}

func (b *builder) add(table int, priority int, match, actions string) {
	// As OVS prints it: table 0 is not named.
	key := fmt.Sprintf("table=%d, priority=%d", table, priority)
	if table == 0 {
		key = fmt.Sprintf("priority=%d", priority)
	}
	if match != "" {
		key += "," + match
	}
	acts, ok := b.flows[key]
	if !ok {
		b.order = append(b.order, key)
	}
	for _, a := range acts {
		if a == actions {
			return // the same endpoint twice in one Service
		}
	}
	b.flows[key] = append(acts, actions)
}

// conj adds a conjunction clause, merged into an existing flow with the
// same match (Antrea's conjunctive match flows).
func (b *builder) conj(table, priority int, match string, id uint32, clause, n int) {
	b.add(table, priority, match, fmt.Sprintf("conjunction(%d,%d/%d)", id, clause, n))
}

func (b *builder) text() (string, int) {
	var sb strings.Builder
	for _, k := range b.order {
		acts := b.flows[k]
		sort.Strings(acts) // deterministic order of merged clauses
		sb.WriteString(k + " actions=" + strings.Join(acts, ",") + "\n")
	}
	return sb.String(), len(b.order)
}

// Generate builds the pipeline of cfg.
func Generate(cfg Config) *Pipeline {
	cfg.fill()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x616e74726561)) // "antrea"
	p := &Pipeline{Config: cfg, NodeIP: 192<<24 | 168<<16 | 77<<8 | 10, PodCIDR: nodePodCIDR(0)}
	p.GwIP = p.PodCIDR + 1
	p.GwMAC = randMAC(rng)
	for i := 0; i < cfg.Pods; i++ {
		p.Pods = append(p.Pods, Pod{Port: uint32(3 + i), MAC: randMAC(rng), IP: p.PodCIDR + 2 + uint32(i)})
	}
	for i := 1; i <= cfg.RemoteNodes; i++ {
		p.Nodes = append(p.Nodes, Node{IP: p.NodeIP + uint32(i), PodCIDR: nodePodCIDR(i)})
	}
	b := &builder{flows: map[string][]string{}}
	p.base(b)
	p.podFlows(b)
	p.nodeFlows(b)
	groups := p.services(b, rng)
	p.policies(b, rng)
	p.Flows, p.NumFlows = b.text()
	p.Groups = groups
	return p
}

func randMAC(rng *rand.Rand) [6]byte {
	var m [6]byte
	v := rng.Uint64()
	for i := range m {
		m[i] = byte(v >> (8 * i))
	}
	m[0] = m[0]&^1 | 2 // unicast, locally administered
	return m
}

// randomPodIP picks a pod address anywhere in the cluster (local or
// remote node), as policy peers and Service endpoints are.
func (p *Pipeline) randomPodIP(rng *rand.Rand) uint32 {
	n := rng.IntN(len(p.Nodes) + 1)
	if n == 0 {
		return p.Pods[rng.IntN(len(p.Pods))].IP
	}
	return p.Nodes[n-1].PodCIDR + 2 + uint32(rng.IntN(len(p.Pods)))
}

// base is the node's fixed part: table misses, conntrack, the gateway and
// tunnel ports.
func (p *Pipeline) base(b *builder) {
	gwMAC, gwIP := MAC(p.GwMAC), IP(p.GwIP)
	t := func(n int) string { return fmt.Sprintf("goto_table:%d", n) }
	b.add(TablePipelineRootClassifier, 200, "arp", t(TableARPSpoofGuard))
	b.add(TablePipelineRootClassifier, 200, "ip", t(TableClassifier))
	b.add(TablePipelineRootClassifier, 0, "", "drop")
	b.add(TableARPSpoofGuard, 200, fmt.Sprintf("arp,in_port=%d,arp_spa=%s,arp_sha=%s", GatewayPort, gwIP, gwMAC), t(TableARPResponder))
	b.add(TableARPSpoofGuard, 200, fmt.Sprintf("arp,in_port=%d", TunnelPort), t(TableARPResponder))
	b.add(TableARPSpoofGuard, 0, "", "drop")
	b.add(TableARPResponder, 190, "arp", "NORMAL")
	b.add(TableARPResponder, 0, "", "drop")
	b.add(TableClassifier, 210, fmt.Sprintf("ip,in_port=%d,nw_dst=%s", GatewayPort, gwIP), "set_field:0x2/0xf->reg0,set_field:0x8000000/0x8000000->reg4,"+t(TableSpoofGuard))
	b.add(TableClassifier, 200, fmt.Sprintf("in_port=%d", GatewayPort), "set_field:0x2/0xf->reg0,"+t(TableSpoofGuard))
	b.add(TableClassifier, 200, fmt.Sprintf("in_port=%d", TunnelPort), "set_field:0x1/0xf->reg0,set_field:0x200/0x200->reg0,"+t(TableUnSNAT))
	b.add(TableClassifier, 0, "", "drop")
	b.add(TableSpoofGuard, 200, fmt.Sprintf("ip,in_port=%d", GatewayPort), t(TableUnSNAT))
	b.add(TableSpoofGuard, 0, "", "drop")
	b.add(TableUnSNAT, 200, "ip,nw_dst=169.254.0.253", fmt.Sprintf("ct(table=%d,zone=%d,nat)", TableConntrackZone, snatCtZone))
	b.add(TableUnSNAT, 200, "ip,nw_dst="+gwIP, fmt.Sprintf("ct(table=%d,zone=%d,nat)", TableConntrackZone, snatCtZone))
	b.add(TableUnSNAT, 0, "", t(TableConntrackZone))
	b.add(TableConntrackZone, 200, "ip", fmt.Sprintf("ct(table=%d,zone=%d,nat)", TableConntrackState, ctZone))
	b.add(TableConntrackZone, 0, "", t(TableConntrackState))
	b.add(TableConntrackState, 200, "ct_state=+inv+trk,ip", "drop")
	b.add(TableConntrackState, 190, "ct_state=-new+trk,ct_mark=0x10/0x10,ip", "set_field:0x200/0x200->reg0,"+t(TableAntreaPolicyEgressRule))
	b.add(TableConntrackState, 190, "ct_state=-new+trk,ip", t(TableAntreaPolicyEgressRule))
	b.add(TableConntrackState, 0, "", t(TablePreRoutingClassifier))
	b.add(TablePreRoutingClassifier, 200, "ip", fmt.Sprintf("resubmit(,%d),resubmit(,%d)", TableSessionAffinity, TableServiceLB))
	b.add(TablePreRoutingClassifier, 0, "", t(TableSessionAffinity))
	b.add(TableSessionAffinity, 0, "", "set_field:0x10000/0x70000->reg4")
	b.add(TableServiceLB, 0, "", t(TableEndpointDNAT))
	b.add(TableEndpointDNAT, 190, "reg4=0x20000/0x70000", fmt.Sprintf("set_field:0x10000/0x70000->reg4,resubmit(,%d)", TableServiceLB))
	b.add(TableEndpointDNAT, 0, "", t(TableAntreaPolicyEgressRule))
	for _, tb := range []struct{ table, next int }{
		{TableAntreaPolicyEgressRule, TableEgressMetric}, {TableAntreaPolicyIngress, TableIngressMetric},
	} {
		b.add(tb.table, 64990, "ct_state=-new+est,ip", t(tb.next))
		b.add(tb.table, 64990, "ct_state=-new+rel,ip", t(tb.next))
	}
	b.add(TableAntreaPolicyEgressRule, 0, "", t(TableEgressRule))
	b.add(TableEgressRule, 0, "", t(TableEgressDefaultRule))
	b.add(TableEgressDefaultRule, 0, "", t(TableEgressMetric))
	b.add(TableEgressMetric, 0, "", t(TableL3Forwarding))
	b.add(TableL3Forwarding, 210, "ip,nw_dst="+gwIP, "set_field:"+gwMAC+"->eth_dst,set_field:0x20/0xf0->reg0,"+t(TableL3DecTTL))
	b.add(TableL3Forwarding, 210, "ct_state=+rpl+trk,ct_mark=0x2/0xf,ip", "set_field:"+gwMAC+"->eth_dst,set_field:0x20/0xf0->reg0,"+t(TableL3DecTTL))
	b.add(TableL3Forwarding, 190, "ct_state=-rpl+trk,ip,reg0=0x3/0xf,reg4=0/0x100000", t(TableEgressMark))
	b.add(TableL3Forwarding, 0, "", "set_field:0x20/0xf0->reg0,"+t(TableL2ForwardingCalc))
	b.add(TableEgressMark, 0, "", "set_field:0x20/0xf0->reg0,"+t(TableL2ForwardingCalc))
	b.add(TableL3DecTTL, 210, "ip,reg0=0x2/0xf", t(TableSNATMark))
	b.add(TableL3DecTTL, 200, "ip", "dec_ttl,"+t(TableSNATMark))
	b.add(TableL3DecTTL, 0, "", t(TableSNATMark))
	b.add(TableSNATMark, 200, "ct_state=+new+trk,ip,reg0=0x22/0xff", fmt.Sprintf("ct(commit,table=%d,zone=%d,exec(set_field:0x20/0x20->ct_mark,set_field:0x40/0x40->ct_mark))", TableSNAT, ctZone))
	b.add(TableSNATMark, 0, "", t(TableSNAT))
	b.add(TableSNAT, 0, "", t(TableL2ForwardingCalc))
	b.add(TableL2ForwardingCalc, 200, "dl_dst="+gwMAC, fmt.Sprintf("set_field:0x%x->reg1,set_field:0x200000/0x600000->reg0,%s", GatewayPort, t(TableIngressSecurityClass)))
	b.add(TableL2ForwardingCalc, 200, "dl_dst="+GlobalVirtualMAC, fmt.Sprintf("set_field:0x%x->reg1,set_field:0x200000/0x600000->reg0,%s", TunnelPort, t(TableIngressSecurityClass)))
	b.add(TableL2ForwardingCalc, 0, "", t(TableIngressSecurityClass))
	b.add(TableIngressSecurityClass, 200, "reg0=0x20/0xf0", t(TableIngressMetric))
	b.add(TableIngressSecurityClass, 200, "reg0=0x10/0xf0", t(TableIngressMetric))
	b.add(TableIngressSecurityClass, 0, "", t(TableAntreaPolicyIngress))
	b.add(TableAntreaPolicyIngress, 0, "", t(TableIngressRule))
	b.add(TableIngressRule, 0, "", t(TableIngressDefaultRule))
	b.add(TableIngressDefaultRule, 0, "", t(TableIngressMetric))
	b.add(TableIngressMetric, 0, "", t(TableConntrackCommit))
	b.add(TableConntrackCommit, 200, "ct_state=+new+trk-snat,ct_mark=0/0x10,ip", fmt.Sprintf("ct(commit,table=%d,zone=%d,exec(set_field:0x1/0xf->ct_mark))", TableOutput, ctZone))
	b.add(TableConntrackCommit, 0, "", t(TableOutput))
	b.add(TableOutput, 200, "reg0=0x200000/0x600000", "output:NXM_NX_REG1[]")
	b.add(TableOutput, 0, "", "drop")
}

// podFlows are the five flows of each local pod.
func (p *Pipeline) podFlows(b *builder) {
	gwMAC := MAC(p.GwMAC)
	for _, pod := range p.Pods {
		mac, ip := MAC(pod.MAC), IP(pod.IP)
		b.add(TableARPSpoofGuard, 200, fmt.Sprintf("arp,in_port=%d,arp_spa=%s,arp_sha=%s", pod.Port, ip, mac), fmt.Sprintf("goto_table:%d", TableARPResponder))
		b.add(TableClassifier, 190, fmt.Sprintf("in_port=%d", pod.Port), fmt.Sprintf("set_field:0x3/0xf->reg0,goto_table:%d", TableSpoofGuard))
		b.add(TableSpoofGuard, 200, fmt.Sprintf("ip,in_port=%d,dl_src=%s,nw_src=%s", pod.Port, mac, ip), fmt.Sprintf("goto_table:%d", TableUnSNAT))
		b.add(TableL3Forwarding, 200, "ip,reg0=0x200/0x200,nw_dst="+ip,
			fmt.Sprintf("set_field:%s->eth_src,set_field:%s->eth_dst,set_field:0x30/0xf0->reg0,goto_table:%d", gwMAC, mac, TableL3DecTTL))
		b.add(TableL2ForwardingCalc, 200, "dl_dst="+mac,
			fmt.Sprintf("set_field:0x%x->reg1,set_field:0x200000/0x600000->reg0,goto_table:%d", pod.Port, TableIngressSecurityClass))
	}
}

// nodeFlows route each remote node's pod CIDR over the tunnel and answer
// ARP for its gateway.
func (p *Pipeline) nodeFlows(b *builder) {
	gwMAC := MAC(p.GwMAC)
	for _, n := range p.Nodes {
		b.add(TableARPResponder, 200, fmt.Sprintf("arp,arp_tpa=%s,arp_op=1", IP(n.PodCIDR+1)),
			fmt.Sprintf("move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:%s->eth_src,set_field:2->arp_op,move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],set_field:%s->arp_sha,move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:%s->arp_spa,IN_PORT",
				GlobalVirtualMAC, GlobalVirtualMAC, IP(n.PodCIDR+1)))
		b.add(TableL3Forwarding, 200, fmt.Sprintf("ip,nw_dst=%s/22", IP(n.PodCIDR)),
			fmt.Sprintf("set_field:%s->eth_src,set_field:%s->eth_dst,set_field:%s->tun_dst,set_field:0x10/0xf0->reg0,goto_table:%d",
				gwMAC, GlobalVirtualMAC, IP(n.IP), TableL3DecTTL))
	}
}

// services installs each Service's ServiceLB flow, its endpoints' DNAT
// flows and its select group, and returns the groups text.
func (p *Pipeline) services(b *builder, rng *rand.Rand) string {
	var gs strings.Builder
	ports := []uint16{80, 443, 8080, 9090, 53}
	for i := 0; i < p.Config.Services; i++ {
		s := Service{IP: 10<<24 | 96<<16 + uint32(i+1), Proto: 6, Port: ports[i%len(ports)], Group: uint32(i + 1)}
		if s.Port == 53 {
			s.Proto = 17
		}
		target := s.Port
		if i%3 == 1 {
			target = 8000 + uint16(i%1000)
		}
		proto := protoName(s.Proto)
		fmt.Fprintf(&gs, "group_id=%d,type=select", s.Group)
		for j := 0; j < p.Config.Endpoints; j++ {
			ep := Endpoint{IP: p.randomPodIP(rng), Port: target}
			s.Endpoints = append(s.Endpoints, ep)
			fmt.Fprintf(&gs, ",bucket=bucket_id:%d,weight:100,actions=set_field:0x%x->reg3,set_field:0x%x/0xffff->reg4,resubmit(,%d)",
				j, ep.IP, ep.Port, TableEndpointDNAT)
			b.add(TableEndpointDNAT, 200, fmt.Sprintf("%s,reg3=0x%x,reg4=0x%x/0x7ffff", proto, ep.IP, 0x20000|uint32(ep.Port)),
				fmt.Sprintf("ct(commit,table=%d,zone=%d,nat(dst=%s:%d),exec(set_field:0x10/0x10->ct_mark))", TableAntreaPolicyEgressRule, ctZone, IP(ep.IP), ep.Port))
		}
		gs.WriteString("\n")
		b.add(TableServiceLB, 200, fmt.Sprintf("%s,reg4=0x10000/0x70000,nw_dst=%s,tp_dst=%d", proto, IP(s.IP), s.Port),
			fmt.Sprintf("set_field:0x200/0x200->reg0,set_field:0x20000/0x70000->reg4,set_field:0x%x->reg7,group:%d", s.Group, s.Group))
		p.Services = append(p.Services, s)
	}
	return gs.String()
}

func protoName(proto uint8) string {
	if proto == 17 {
		return "udp"
	}
	return "tcp"
}

// policies installs the rules: every policy selects a few local pods and
// has an ingress rule (peers -> applied-to pods on some ports) and, for
// half of them, an egress rule. Even policies are Kubernetes
// NetworkPolicies (IngressRule/EgressRule tables, priority 200, allow,
// isolating their pods by default); odd ones are Antrea-native, each rule
// with its own priority in the AntreaPolicy tables, a tenth of them drops.
func (p *Pipeline) policies(b *builder, rng *rand.Rand) {
	ports := []uint16{80, 443, 8080, 8443, 3306, 5432, 6379, 9092, 53, 5353}
	isolatedIn := map[int]bool{}
	isolatedOut := map[int]bool{}
	conj := uint32(0)
	for i := 0; i < p.Config.Policies; i++ {
		native := i%2 == 1
		local := pickDistinct(rng, len(p.Pods), 1+rng.IntN(6))
		for dir := 0; dir < 2; dir++ {
			ingress := dir == 0
			if !ingress && rng.IntN(2) == 0 {
				continue
			}
			conj++
			r := Rule{ConjID: conj, Ingress: ingress, Native: native, Priority: 200, Local: local, Proto: 6}
			if native {
				r.Priority = uint16(14000 - i/2%2000)
				r.Drop = rng.IntN(10) == 0
			}
			for _, k := range pickDistinct(rng, len(ports), 1+rng.IntN(2)) {
				r.Ports = append(r.Ports, ports[k])
			}
			if r.Ports[0] == 53 || r.Ports[0] == 5353 {
				r.Proto = 17
			}
			npeers := 8 + rng.IntN(50)
			seen := map[uint32]bool{}
			for len(r.Peers) < npeers {
				ip := p.randomPodIP(rng)
				if !seen[ip] {
					seen[ip] = true
					r.Peers = append(r.Peers, ip)
				}
			}
			p.rule(b, &r)
			p.Rules = append(p.Rules, r)
			if !native {
				for _, l := range local {
					if ingress {
						isolatedIn[l] = true
					} else {
						isolatedOut[l] = true
					}
				}
			}
		}
	}
	for l := range p.Pods {
		if isolatedIn[l] {
			b.add(TableIngressDefaultRule, 200, fmt.Sprintf("ip,reg1=0x%x", p.Pods[l].Port), "drop")
		}
		if isolatedOut[l] {
			b.add(TableEgressDefaultRule, 200, "ip,nw_src="+IP(p.Pods[l].IP), "drop")
		}
	}
}

// rule installs one rule's conjunction: clause 1 the source side, 2 the
// destination side, 3 the ports; then the conj_id flow and the two metric
// flows.
func (p *Pipeline) rule(b *builder, r *Rule) {
	table, metric, reg := TableIngressRule, TableIngressMetric, "reg6"
	label := fmt.Sprintf("0x%x/0xffffffff", r.ConjID)
	if r.Native {
		table = TableAntreaPolicyIngress
	}
	if !r.Ingress {
		table, metric, reg = TableEgressRule, TableEgressMetric, "reg5"
		label = fmt.Sprintf("0x%x00000000/0xffffffff00000000", r.ConjID)
		if r.Native {
			table = TableAntreaPolicyEgressRule
		}
	}
	pri := int(r.Priority)
	var src, dst []string
	for _, peer := range r.Peers {
		src = append(src, "ip,nw_src="+IP(peer))
	}
	for _, l := range r.Local {
		if r.Ingress {
			dst = append(dst, fmt.Sprintf("ip,reg1=0x%x", p.Pods[l].Port))
		} else {
			dst = append(dst, "ip,nw_src="+IP(p.Pods[l].IP))
		}
	}
	if !r.Ingress {
		// Egress: the applied-to pods are the sources, the peers the
		// destinations.
		src, dst = dst, nil
		for _, peer := range r.Peers {
			dst = append(dst, "ip,nw_dst="+IP(peer))
		}
	}
	for _, m := range src {
		b.conj(table, pri, m, r.ConjID, 1, 3)
	}
	for _, m := range dst {
		b.conj(table, pri, m, r.ConjID, 2, 3)
	}
	for _, port := range r.Ports {
		b.conj(table, pri, fmt.Sprintf("%s,tp_dst=%d", protoName(r.Proto), port), r.ConjID, 3, 3)
	}
	switch {
	case !r.Native:
		b.add(table, pri-10, fmt.Sprintf("conj_id=%d,ip", r.ConjID),
			fmt.Sprintf("set_field:0x%x->%s,ct(commit,table=%d,zone=%d,exec(set_field:%s->ct_label))", r.ConjID, reg, metric, ctZone, label))
	case r.Drop:
		b.add(table, pri, fmt.Sprintf("conj_id=%d", r.ConjID),
			fmt.Sprintf("set_field:0x%x->reg3,set_field:0x400/0x400->reg0,set_field:0x800/0x1800->reg0,goto_table:%d", r.ConjID, metric))
		b.add(metric, 200, fmt.Sprintf("reg0=0x400/0x400,reg3=0x%x", r.ConjID), "drop")
		return
	default:
		b.add(table, pri, fmt.Sprintf("conj_id=%d,ip", r.ConjID),
			fmt.Sprintf("set_field:0x%x->reg3,set_field:0x400/0x400->reg0,ct(commit,table=%d,zone=%d,exec(set_field:%s->ct_label))", r.ConjID, metric, ctZone, label))
	}
	next := TableConntrackCommit
	if !r.Ingress {
		next = TableL3Forwarding
	}
	b.add(metric, 200, fmt.Sprintf("ct_state=+new+trk,ct_label=%s,ip", label), fmt.Sprintf("goto_table:%d", next))
	b.add(metric, 200, fmt.Sprintf("ct_state=-new+trk,ct_label=%s,ip", label), fmt.Sprintf("goto_table:%d", next))
}

// pickDistinct returns k distinct indexes in [0, n), in increasing order.
func pickDistinct(rng *rand.Rand, n, k int) []int {
	if k > n {
		k = n
	}
	seen := map[int]bool{}
	var out []int
	for len(out) < k {
		i := rng.IntN(n)
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	sort.Ints(out)
	return out
}
