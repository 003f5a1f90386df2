package e2e

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/ovntest"
)

// ovnPod is a logical switch port with a namespace behind it.
type ovnPod struct {
	lsp, ls, mac, ip, gw string
}

var ovnPods = []ovnPod{
	{"p1", "ls1", "00:00:00:00:01:02", "10.0.1.2", "10.0.1.1"},
	{"p2", "ls1", "00:00:00:00:01:03", "10.0.1.3", "10.0.1.1"},
	{"p3", "ls2", "00:00:00:00:02:02", "10.0.2.2", "10.0.2.1"},
}

// ovnTopology builds the logical network: two switches joined by a
// router, an ACL on ls2 that lets only p1 reach p3 (allow-related), and a
// load balancer 172.16.0.100:80 -> p3:80 on ls1; then the pods.
func ovnTopology(t *testing.T, o *ovntest.OVN) map[string]*pod {
	t.Helper()
	for _, c := range [][]string{
		{"ls-add", "ls1"}, {"ls-add", "ls2"}, {"lr-add", "lr1"},
		{"lrp-add", "lr1", "lr1-ls1", "00:00:00:00:ff:01", "10.0.1.1/24"},
		{"lrp-add", "lr1", "lr1-ls2", "00:00:00:00:ff:02", "10.0.2.1/24"},
		{"lsp-add", "ls1", "ls1-lr1"}, {"lsp-set-type", "ls1-lr1", "router"},
		{"lsp-set-addresses", "ls1-lr1", "router"}, {"lsp-set-options", "ls1-lr1", "router-port=lr1-ls1"},
		{"lsp-add", "ls2", "ls2-lr1"}, {"lsp-set-type", "ls2-lr1", "router"},
		{"lsp-set-addresses", "ls2-lr1", "router"}, {"lsp-set-options", "ls2-lr1", "router-port=lr1-ls2"},
		{"acl-add", "ls2", "to-lport", "1002", `outport == "p3" && ip4.src == 10.0.1.3`, "drop"},
		{"acl-add", "ls2", "to-lport", "1001", `outport == "p3" && ip4`, "allow-related"},
		// The VIP is off the pods' subnet, as a Service's ClusterIP:
		// the pods send it to their router, ls1's LB translates it.
		{"lb-add", "lb1", "172.16.0.100:80", "10.0.2.2:80", "tcp"},
		{"ls-lb-add", "ls1", "lb1"},
	} {
		o.MustNbctl(c...)
	}
	chassisNS := &netnstest.NS{Name: o.Chassis.Netns()}
	pods := map[string]*pod{}
	for _, p := range ovnPods {
		o.MustNbctl("lsp-add", p.ls, p.lsp)
		o.MustNbctl("lsp-set-addresses", p.lsp, p.mac+" "+p.ip)
		ns := netnstest.NewNS(t)
		mac, _ := net.ParseMAC(p.mac)
		v := netnstest.NewVeth(t, chassisNS, ns, netnstest.VethOptions{PeerAddr: p.ip + "/24", PeerMAC: mac})
		ns.MustExec(t, "ip", "route", "add", "default", "via", p.gw)
		o.BindPort(v.Host, p.lsp)
		pods[p.lsp] = &pod{ns: ns, veth: v, ip: p.ip}
	}
	o.MustNbctl("--wait=hv", "sync")
	return pods
}

// runOVNChecks drives the traffic checks and returns which passed.
func runOVNChecks(t *testing.T, pods map[string]*pod) map[string]bool {
	t.Helper()
	tcpServer(t, pods["p3"], 80, "p3")
	ping := func(from, to string) bool {
		_, err := pods[from].ns.Exec("ping", "-c", "2", "-i", "0.2", "-W", "2", to)
		return err == nil
	}
	get := func(from, addr, server string) bool {
		got, err := tcpGet(pods[from], addr)
		return err == nil && strings.Contains(got, "hello from "+server)
	}
	results := map[string]bool{}
	// Checks that expect the traffic to pass; the drops are named "!...".
	results["p1 -> p2 ping (logical switch)"] = ping("p1", "10.0.1.3")
	results["p1 -> p3 ping (logical router)"] = ping("p1", "10.0.2.2")
	results["p1 -> p3:80 tcp (ACL allow-related)"] = get("p1", "10.0.2.2:80", "p3")
	results["p1 -> 172.16.0.100:80 tcp (load balancer to p3)"] = get("p1", "172.16.0.100:80", "p3")
	results["p1 -> router 10.0.1.1 ping"] = ping("p1", "10.0.1.1")
	results["!p2 -> p3:80 tcp (ACL drop)"] = !get("p2", "10.0.2.2:80", "p3")
	results["!p2 -> p3 ping (ACL drop)"] = !ping("p2", "10.0.2.2")
	return results
}

// ovnRun brings up the deployment with the given switch daemon ("":
// Open vSwitch), builds the topology, runs the checks, ovn-trace and
// ovn-appctl, and returns the checks' results.
func ovnRun(t *testing.T, vswitchd string) map[string]bool {
	t.Helper()
	start := time.Now()
	o := ovntest.Start(t, ovntest.Options{Vswitchd: vswitchd})
	pods := ovnTopology(t, o)
	up := time.Since(start)
	res := runOVNChecks(t, pods)
	if out, err := o.Trace("ls1", `inport == "p1" && eth.src == 00:00:00:00:01:02 && eth.dst == 00:00:00:00:ff:01 && ip4.src == 10.0.1.2 && ip4.dst == 10.0.2.2 && ip.ttl == 64 && icmp4`); err != nil || !strings.Contains(out, `output to "p3"`) {
		t.Errorf("ovn-trace p1 -> p3: %v\n%s", err, out)
	}
	if _, err := o.ControllerAppctl("version"); err != nil {
		t.Errorf("ovn-appctl against ovn-controller: %v", err)
	}
	flows, err := o.Chassis.Ofctl("-O", "OpenFlow15", "dump-flows", "--no-stats")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("topology up in %v, %d flows on br-int, checks done in %v",
		up.Round(time.Millisecond), strings.Count(flows, "\n"), time.Since(start).Round(time.Millisecond))
	return res
}

// TestOVNGovsMatchesOpenVSwitch (issue 22): a private OVN (NB/SB, northd,
// one chassis started as ovs-ctl starts it) drives Open vSwitch 3.1 and then
// govs-vswitchd through the same logical network; every traffic check
// that passes with Open vSwitch passes with govs, and Open vSwitch passes
// them all (the reference must hold, or the comparison means nothing).
func TestOVNGovsMatchesOpenVSwitch(t *testing.T) {
	netnstest.RequireRoot(t)
	var ovs, govs map[string]bool
	t.Run("openvswitch", func(t *testing.T) { ovs = ovnRun(t, "") })
	_, vswitchd := binaries(t)
	t.Run("govs", func(t *testing.T) { govs = ovnRun(t, vswitchd) })
	for name, ok := range ovs {
		if !ok {
			t.Errorf("with Open vSwitch: %s failed", name)
		}
		if ok && !govs[name] {
			t.Errorf("with govs: %s failed (passes with Open vSwitch)", name)
		}
	}
}
