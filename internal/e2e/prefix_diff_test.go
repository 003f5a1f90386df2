package e2e

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/govs-project/govs/internal/ovstest"
)

// prefixFlows is a pipeline with IPv4 prefix rules of many lengths in
// one table, as Antrea's routes and policy tables have: local pods (/32),
// remote nodes' pod CIDRs (/24), the Service CIDR (/12), a cluster CIDR
// (/16) and source rules (/32, /24, /8).
func prefixFlows() []string {
	fl := []string{
		"table=0,priority=0,actions=drop",
		"table=0,priority=10,ip,actions=resubmit(,1)",
		"table=1,priority=0,actions=output:2",
		"table=1,priority=100,ip,nw_dst=10.96.0.0/12,actions=output:3",
		"table=1,priority=90,ip,nw_dst=10.10.0.0/16,actions=output:48",
		"table=1,priority=300,ip,nw_src=192.168.7.9,actions=drop",
		"table=1,priority=250,ip,nw_src=192.168.8.0/24,nw_dst=10.10.0.0/16,actions=output:49",
		"table=1,priority=50,ip,nw_src=172.16.0.0/12,actions=output:49",
	}
	for i := 1; i <= 20; i++ {
		fl = append(fl, fmt.Sprintf("table=1,priority=200,ip,nw_dst=10.10.%d.0/24,actions=output:48", i))
	}
	for i := 2; i <= 30; i++ {
		fl = append(fl, fmt.Sprintf("table=1,priority=210,ip,nw_dst=10.10.0.%d,actions=output:49", i))
	}
	return fl
}

// TestPrefixTrackingLikeOVS (issue 23): packets from and to many
// addresses through a table of IPv4 prefix rules of different lengths
// get the megaflows Open vSwitch 3.1 gives them with its default prefix
// tracking (Flow_Table prefixes empty: ip_dst,ip_src, ovs-vswitchd.conf.db(5)):
// the same nw_src/nw_dst bits un-wildcarded for every packet, and as many
// distinct megaflows, not one per address.
func TestPrefixTrackingLikeOVS(t *testing.T) {
	var ovsPorts []ovstest.Port
	for _, p := range tracePorts {
		ovsPorts = append(ovsPorts, ovstest.Port{Name: p.name, Type: "internal", OFPort: p.ofport})
	}
	o := ovstest.Start(t, ovstest.Options{FailMode: "secure", Ports: ovsPorts})
	n := startNode(t)
	n.mustRun("add-br", "br-int", "fail_mode=secure")
	for _, p := range tracePorts {
		n.mustRun("add-port", "br-int", p.name, "type=internal", fmt.Sprintf("ofport_request=%d", p.ofport))
	}
	mgmt := "unix:" + filepath.Join(n.rundir, "br-int.mgmt")
	for _, f := range prefixFlows() {
		if err := o.AddFlow("OpenFlow15", f); err != nil {
			t.Fatal(err)
		}
		if out, err := ofctl(mgmt, "add-flow", f); err != nil {
			t.Fatalf("add-flow %s: %v %s", f, err, out)
		}
	}
	r := rand.New(rand.NewSource(23))
	srcs := []func() string{
		func() string { return fmt.Sprintf("10.10.0.%d", 2+r.Intn(40)) },
		func() string { return fmt.Sprintf("192.168.8.%d", 1+r.Intn(250)) },
		func() string { return fmt.Sprintf("172.%d.%d.%d", 16+r.Intn(16), r.Intn(256), 1+r.Intn(250)) },
		func() string { return fmt.Sprintf("100.64.%d.%d", r.Intn(256), 1+r.Intn(250)) },
	}
	dsts := []func() string{
		func() string { return fmt.Sprintf("10.10.0.%d", 40+r.Intn(200)) },
		func() string { return fmt.Sprintf("10.10.%d.%d", 1+r.Intn(3), 1+r.Intn(250)) },
		func() string { return fmt.Sprintf("10.%d.%d.%d", 96+r.Intn(16), r.Intn(256), 1+r.Intn(250)) },
		func() string { return fmt.Sprintf("10.10.%d.%d", 21+r.Intn(200), 1+r.Intn(250)) },
	}
	addrRE := regexp.MustCompile(`\bnw_(src|dst)=[^,]*`)
	megaflow := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if m, ok := strings.CutPrefix(l, "Megaflow: "); ok {
				return m
			}
		}
		return ""
	}
	ovsFlows, govsFlows := map[string]bool{}, map[string]bool{}
	const packets = 160
	mismatches := 0
	for i := range packets {
		pkt := fmt.Sprintf("udp,in_port=49,dl_src=be:2c:bf:e4:ec:c5,dl_dst=4e:99:08:c1:53:be,nw_src=%s,nw_dst=%s,nw_ttl=64,udp_src=%d,udp_dst=53",
			srcs[i%len(srcs)](), dsts[(i/len(srcs))%len(dsts)](), 1024+r.Intn(60000))
		ovsOut, err := o.Appctl("ofproto/trace", "br-int", pkt)
		if err != nil {
			t.Fatalf("%s: OVS: %v", pkt, err)
		}
		govsOut, rc := n.appctl(t, "ofproto/trace", "br-int", pkt)
		if rc != 0 {
			t.Fatalf("%s: govs rc %d: %s", pkt, rc, govsOut)
		}
		want, got := megaflow(ovsOut), megaflow(govsOut)
		if want == "" || got == "" {
			t.Fatalf("%s: no megaflow line\n--- govs\n%s\n--- Open vSwitch\n%s", pkt, govsOut, ovsOut)
		}
		ovsFlows[want], govsFlows[got] = true, true
		wantAddr := strings.Join(addrRE.FindAllString(want, -1), ",")
		gotAddr := strings.Join(addrRE.FindAllString(got, -1), ",")
		if gotAddr != wantAddr {
			if mismatches++; mismatches <= 10 {
				t.Errorf("%s: megaflow addresses govs %q, Open vSwitch %q", pkt, gotAddr, wantAddr)
			}
		}
	}
	t.Logf("%d packets: %d distinct megaflows on govs, %d on Open vSwitch", packets, len(govsFlows), len(ovsFlows))
	if mismatches > 0 {
		t.Errorf("%d of %d packets got other nw_src/nw_dst megaflow bits than on Open vSwitch", mismatches, packets)
	}
	if len(govsFlows) != len(ovsFlows) {
		t.Errorf("%d distinct megaflows on govs, %d on Open vSwitch", len(govsFlows), len(ovsFlows))
	}
	if len(ovsFlows) >= packets/2 {
		t.Errorf("Open vSwitch made %d megaflows for %d packets: the traffic does not show prefix tracking", len(ovsFlows), packets)
	}
}

// TestOVSDBPrefixesLikeOVS: a Flow_Table's prefixes column, set and
// changed with ovs-vsctl on the running bridge, changes the megaflows of
// that table in govs as in Open vSwitch 3.1: ip_src only (nw_dst
// un-wildcarded whole), none, and back to the default when the bridge's
// flow_tables is cleared.
func TestOVSDBPrefixesLikeOVS(t *testing.T) {
	results := map[string]string{}
	for _, sw := range []string{"govs", "ovs"} {
		r := newOVSDBRig(t)
		ctl := filepath.Join(r.dir, "ovs-vswitchd.ctl")
		if sw == "govs" {
			ctl = "ovs-vswitchd" // its pidfile names its control socket
			r.startGovs()
		} else {
			r.startOVS()
		}
		r.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev", "fail_mode=secure",
			"--", "--id=@ft", "create", "Flow_Table", "prefixes=ip_src", "--", "set", "bridge", "br0", "flow_tables:1=@ft")
		target := "unix:" + filepath.Join(r.dir, "br0.mgmt")
		for _, f := range prefixFlows() {
			if out, err := ofctl(target, "add-flow", f); err != nil {
				t.Fatalf("%s: add-flow %s: %v %s", sw, f, err, out)
			}
		}
		addrRE := regexp.MustCompile(`\bnw_(src|dst)=[^,]*`)
		var log []string
		trace := func(phase string) {
			for _, pkt := range []string{
				"udp,in_port=LOCAL,nw_src=192.168.8.7,nw_dst=10.10.0.77,udp_src=1,udp_dst=53",
				"udp,in_port=LOCAL,nw_src=172.20.1.1,nw_dst=10.10.3.9,udp_src=1,udp_dst=53",
				"udp,in_port=LOCAL,nw_src=100.64.9.9,nw_dst=10.100.0.1,udp_src=1,udp_dst=53",
				"udp,in_port=LOCAL,nw_src=10.10.0.9,nw_dst=10.10.77.1,udp_src=1,udp_dst=53",
			} {
				out, err := r.tool("ovs-appctl", "-t", ctl, "ofproto/trace", "br0", pkt)
				if err != nil {
					t.Fatalf("%s: %v", sw, err)
				}
				mf := ""
				for _, l := range strings.Split(out, "\n") {
					if m, ok := strings.CutPrefix(l, "Megaflow: "); ok {
						mf = strings.Join(addrRE.FindAllString(m, -1), ",")
					}
				}
				log = append(log, phase+": "+pkt+": "+mf)
			}
		}
		trace("ip_src")
		r.vsctl("set", "Flow_Table", strings.TrimSpace(r.vsctl("get", "bridge", "br0", "flow_tables:1")), "prefixes=none")
		trace("none")
		r.vsctl("clear", "bridge", "br0", "flow_tables")
		trace("default")
		results[sw] = strings.Join(log, "\n")
	}
	if results["govs"] != results["ovs"] {
		t.Errorf("megaflow addresses differ\n--- govs\n%s\n--- Open vSwitch\n%s", results["govs"], results["ovs"])
	}
	// The column must matter: each setting gives other masks (ip_src
	// only: nw_dst whole; none: nw_src whole too; default: both narrow).
	for _, want := range []string{
		"ip_src: udp,in_port=LOCAL,nw_src=172.20.1.1,nw_dst=10.10.3.9,udp_src=1,udp_dst=53: nw_src=172.16.0.0/12,nw_dst=10.10.3.9",
		"none: udp,in_port=LOCAL,nw_src=172.20.1.1,nw_dst=10.10.3.9,udp_src=1,udp_dst=53: nw_src=172.20.1.1,nw_dst=10.10.3.9",
		"default: udp,in_port=LOCAL,nw_src=172.20.1.1,nw_dst=10.10.3.9,udp_src=1,udp_dst=53: nw_src=172.16.0.0/12,nw_dst=10.10.3.0/24",
	} {
		if !strings.Contains(results["govs"], want) {
			t.Errorf("govs has no line %q", want)
		}
	}
	t.Logf("both:\n%s", results["govs"])
}
