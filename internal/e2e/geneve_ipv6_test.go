package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// The seed workers on an IPv6-only underlay: the same pods, gateways and
// pipelines, node addresses from fd00:4f::/64 on br-phy.
var (
	geneveWorker1v6 = func() geneveWorker { w := geneveWorker1; w.nodeIP = "fd00:4f::c9"; return w }()
	geneveWorker2v6 = func() geneveWorker { w := geneveWorker2; w.nodeIP = "fd00:4f::ca"; return w }()
)

// ipv6TunnelFlows are what Antrea installs for a peer node with an IPv6
// address: table 70 sends the peer's pod subnet to tun_ipv6_dst (the seed's
// table-70 flow with set_field to tun_ipv6_dst instead of a load into
// tun_dst), and table 0 takes the peer's tunnel traffic only from its
// address (the seed's table-0 tunnel flow, matching tun_ipv6_src and
// tun_ipv6_dst). The probe flows match nothing; they are there to compare
// dump-flows between the two switches with masks.
func ipv6TunnelFlows(w geneveWorker) []string {
	peer := w.peer()
	peerSubnet := strings.Replace(peer.gwCIDR, ".1/24", ".0/24", 1)
	gwMAC := w.gwMAC
	return []string{
		fmt.Sprintf("table=70,priority=210,ip,nw_dst=%s actions=dec_ttl,mod_dl_src:%s,mod_dl_dst:aa:bb:cc:dd:ee:ff,"+
			"load:0x1->NXM_NX_REG1[],load:0x1->NXM_NX_REG0[16],set_field:%s->tun_ipv6_dst,resubmit(,105)", peerSubnet, gwMAC, peer.nodeIP),
		fmt.Sprintf("table=0,priority=210,in_port=1,tun_ipv6_src=%s,tun_ipv6_dst=%s actions=move:NXM_NX_TUN_METADATA0[28..31]->NXM_NX_REG9[28..31],"+
			"load:0->NXM_NX_REG0[0..15],load:0x1->NXM_NX_REG0[19],resubmit(,30)", peer.nodeIP, w.nodeIP),
		"table=0,priority=5,in_port=1,tun_ipv6_src=fd00:4f::/64,tun_ipv6_dst=fd00:4f::c9/ffff:ffff::ffff actions=drop",
		"table=0,priority=6,tun_ipv6_dst=::1:2/::ffff:0,tun_id=0x5 actions=set_field:fd00:4f::/ffff:ffff::->tun_ipv6_src,move:NXM_NX_TUN_IPV6_SRC[0..63]->NXM_NX_XXREG1[0..63]",
	}
}

// tunIPv6FlowText is dump-flows --no-stats of w's tun_ipv6 flows, with the
// node addresses replaced by their role, so that two nodes compare.
func tunIPv6FlowText(t *testing.T, g *geneveNode, w geneveWorker) string {
	t.Helper()
	var lines []string
	for _, spec := range []string{"table=0", "table=70"} {
		out, err := ofctl(g.target, "-O", "OpenFlow13", "dump-flows", "--no-stats", spec)
		if err != nil {
			t.Fatalf("dump-flows %s: %v %s", spec, err, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "tun_ipv6") {
				l = strings.ReplaceAll(l, "="+w.peer().nodeIP+",", "=PEER,")
				l = strings.ReplaceAll(l, ":"+w.peer().nodeIP+"->", ":PEER->")
				l = strings.ReplaceAll(l, "tun_ipv6_dst="+w.nodeIP+",", "tun_ipv6_dst=SELF,")
				l = strings.ReplaceAll(l, "nw_dst="+strings.Replace(w.peer().gwCIDR, ".1/24", ".0/24", 1), "nw_dst=PEERPODS")
				l = strings.ReplaceAll(l, w.gwMAC, "GWMAC")
				lines = append(lines, strings.TrimSpace(l))
			}
		}
	}
	return strings.Join(lines, "\n")
}

// testGeneveIPv6 is the Geneve walk of testGeneveOVSDB over an IPv6-only
// underlay (the veth between the br-phy bridges carries no IPv4 and the
// nodes have only fd00:4f::c9 and fd00:4f::ca), driven by the same real
// tools: ovs-vsctl (no local_ip, remote_ip=flow), ovs-appctl ovs/route/add
// and tnl/neigh/set for IPv6, ovs-ofctl with tun_ipv6_dst flows.
func testGeneveIPv6(t *testing.T, vswitchd1, vswitchd2 string) {
	w1, w2, ns1, link := startOVSDBPair(t, vswitchd1, vswitchd2, geneveWorker1v6, geneveWorker2v6)
	w1.addFlows(t, ipv6TunnelFlows(geneveWorker1v6)...)
	w2.addFlows(t, ipv6TunnelFlows(geneveWorker2v6)...)
	frontend, backend2 := w1.pods["frontend"], w2.pods["backend2"]
	podServe(t, backend2, "backend2", 80)

	rxSpec := func(w geneveWorker) string {
		return fmt.Sprintf("table=0,in_port=1,tun_ipv6_src=%s,tun_ipv6_dst=%s", w.peer().nodeIP, w.nodeIP)
	}
	t.Run("frontend to backend2 TCP 80 over IPv6, decoded by tshark", func(t *testing.T) {
		txSpec := "table=70,ip,nw_dst=10.222.2.0/24" // the seed's tun_dst flow and ours; only ours can match
		out1, in2, in1 := w1.nPackets(t, txSpec), w2.nPackets(t, rxSpec(geneveWorker2v6)), w1.nPackets(t, rxSpec(geneveWorker1v6))
		pkt := synCaptureFrom(t, ns1, link.Host, geneveWorker1v6.nodeIP, func() { checkPodTCP(t, frontend) })
		for _, want := range []string{
			"Internet Protocol Version 6, Src: fd00:4f::c9, Dst: fd00:4f::ca",
			"Dst Port: 6081",
			"Virtual Network Identifier (VNI): 0x000000",
			"Ethernet II, Src: 4e:99:08:c1:53:be, Dst: aa:bb:cc:dd:ee:ff",
			"Internet Protocol Version 4, Src: 10.222.1.48, Dst: 10.222.2.34",
		} {
			if !strings.Contains(pkt, want) {
				t.Errorf("capture lacks %q; packet:\n%s", want, pkt)
			}
		}
		if m := regexp.MustCompile(`User Datagram Protocol.*\n(?:.*\n)*?\s+Checksum: (0x[0-9a-f]+)`).FindStringSubmatch(pkt); m == nil || m[1] == "0x0000" {
			t.Errorf("outer UDP checksum over IPv6: %v, want one computed", m)
		}
		if got := w1.nPackets(t, txSpec); got <= out1 {
			t.Errorf("worker 1 table 70 tun_ipv6_dst flow did not count (%d -> %d)", out1, got)
		}
		if got := w2.nPackets(t, rxSpec(geneveWorker2v6)); got <= in2 {
			t.Errorf("worker 2 table 0 tun_ipv6_src/dst flow did not count (%d -> %d)", in2, got)
		}
		if got := w1.nPackets(t, rxSpec(geneveWorker1v6)); got <= in1 {
			t.Errorf("worker 1 table 0 tun_ipv6_src/dst flow did not count the replies (%d -> %d)", in1, got)
		}
	})
	t.Run("ping between the pods over IPv6", func(t *testing.T) {
		// The seed's NetworkPolicies allow only DNS and TCP 80; egress
		// (table 50) and ingress (table 90) rules that allow ICMP, as
		// Antrea would add them.
		for _, g := range []*geneveNode{w1, w2} {
			g.addFlows(t, "table=50,priority=205,icmp actions=resubmit(,70)", "table=90,priority=205,icmp actions=resubmit(,105)")
		}
		for _, c := range []struct {
			from *pod
			to   string
		}{{frontend, backend2.ip}, {backend2, frontend.ip}} {
			if out, err := c.from.ns.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", c.to); err != nil {
				t.Errorf("ping %s -> %s: %v\n%s", c.from.ip, c.to, err, out)
			}
		}
	})
	checkTunMetadata(t, w1, w2, frontend)
	t.Run("dump-flows prints the tun_ipv6 flows identically on both switches", func(t *testing.T) {
		a, b := tunIPv6FlowText(t, w1, geneveWorker1v6), tunIPv6FlowText(t, w2, geneveWorker2v6)
		if a != b || strings.Count(a, "\n") != 3 {
			t.Errorf("worker 1:\n%s\nworker 2:\n%s", a, b)
		}
	})
	t.Run("dpif/dump-flows shows the tunnel's IPv6 addresses", func(t *testing.T) {
		for _, c := range []struct {
			g *geneveNode
			w geneveWorker
		}{{w1, geneveWorker1v6}, {w2, geneveWorker2v6}} {
			checkPodTCP(t, frontend)
			out, err := c.g.appctl("dpif/dump-flows", "br-int")
			if err != nil {
				t.Fatalf("dpif/dump-flows: %v %s", err, out)
			}
			// OVS goes on with geneve(...) and flags(...), which govs
			// does not print.
			want := fmt.Sprintf("tunnel(tun_id=0x0,ipv6_src=%s,ipv6_dst=%s", c.w.peer().nodeIP, c.w.nodeIP)
			if !strings.Contains(out, want) {
				t.Errorf("%s: dpif/dump-flows lacks %s...:\n%s", c.w.nodeIP, want, out)
			}
			// A packet from a plain port has no tunnel attribute, even
			// where table 0 looks at tun_ipv6_src.
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "in_port(2)") && strings.Contains(l, "tunnel(") || strings.Contains(l, "ipv6_src=::,") {
					t.Errorf("%s: a plain port's flow with a tunnel attribute: %s", c.w.nodeIP, l)
				}
			}
		}
	})
}

// TestGeneveIPv6 runs the walk over an IPv6-only underlay with govs-govs,
// govs-OVS both ways and the reference with two Open vSwitch.
func TestGeneveIPv6(t *testing.T) {
	_, govs := binaries(t)
	for _, c := range []struct{ name, vswitchd1, vswitchd2 string }{
		{"GovsGovs", govs, govs}, {"GovsOVS", govs, ""}, {"OVSGovs", "", govs}, {"OpenVSwitch", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) { testGeneveIPv6(t, c.vswitchd1, c.vswitchd2) })
	}
}
