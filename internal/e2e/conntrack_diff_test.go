package e2e

import (
	"bufio"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// holdServer answers "hello" on port and keeps each connection open
// until the test ends, so conntrack shows it ESTABLISHED.
func holdServer(t *testing.T, ns *netnstest.NS, port int) {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() error {
		var err error
		ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "hello\n")
			go func() { <-done; c.Close() }()
		}
	}()
}

// dialFrom connects from ns with a fixed source port (so both switches
// see the same tuple), reads the greeting and keeps the connection.
func dialFrom(t *testing.T, ns *netnstest.NS, sport int, addr string) {
	t.Helper()
	var c net.Conn
	err := ns.Do(func() error {
		d := net.Dialer{Timeout: 3 * time.Second, LocalAddr: &net.TCPAddr{Port: sport}}
		var err error
		c, err = d.Dial("tcp4", addr)
		return err
	})
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "hello\n" {
		t.Fatalf("from %s: %q %v", addr, line, err)
	}
}

// serviceWalk is seed 001's service walk with a fixed source port:
// kube-proxy's DNAT of backendsvc to backend1 in the node's namespace
// (the gateway's), backend1 holding its connections, the frontend
// connecting to backendsvc:80.
func serviceWalk(t *testing.T, w *worker1, sport int) {
	t.Helper()
	w.ns.MustExec(t, "iptables", "-t", "nat", "-A", "PREROUTING", "-d", "10.104.65.133", "-p", "tcp", "--dport", "80",
		"-j", "DNAT", "--to-destination", "10.222.1.47:80")
	holdServer(t, w.pods["backend1"].ns, 80)
	dialFrom(t, w.pods["frontend"].ns, sport, "10.104.65.133:80")
	time.Sleep(200 * time.Millisecond) // the final ACKs
}

// TestDumpConntrackMatchesOVS: after the seed service walk (frontend ->
// backendsvc:80, DNATed to backend1 by the gateway), `ovs-appctl
// dpctl/dump-conntrack -m` on govs-vswitchd lists the same connections,
// in the same line format, as on Open vSwitch (Antrea's flow exporter
// parses these lines).
func TestDumpConntrackMatchesOVS(t *testing.T) {
	const sport = 41000
	o := startWorker1OVSDB(t, "")
	serviceWalk(t, o, sport)

	w := startWorker1(t)
	serviceWalk(t, w, sport)

	// Only the walk's connections: the pods' own (coredns, IPv6) are not
	// part of it.
	walk := regexp.MustCompile(`sport=` + fmt.Sprint(sport) + `|dport=` + fmt.Sprint(sport))
	lines := func(out string) []string {
		var ls []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if walk.MatchString(l) {
				ls = append(ls, l)
			}
		}
		sort.Strings(ls)
		return ls
	}
	for _, args := range [][]string{{"-m"}, {}, {"zone=65520"}, {"-m", "zone=65520"}} {
		ovsOut, rc := o.appctl(t, append([]string{"dpctl/dump-conntrack"}, args...)...)
		if rc != 0 {
			t.Fatal(ovsOut)
		}
		govsOut, rc := w.appctl(t, append([]string{"dpctl/dump-conntrack"}, args...)...)
		if rc != 0 {
			t.Fatalf("govs dump-conntrack: %d %s", rc, govsOut)
		}
		want, got := lines(ovsOut), lines(govsOut)
		if len(want) == 0 {
			t.Fatalf("Open vSwitch tracked none of the walk's connections:\n%s", ovsOut)
		}
		t.Logf("dump-conntrack %s on both:\n%s", strings.Join(args, " "), strings.Join(want, "\n"))
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("dpctl/dump-conntrack %s:\n--- govs\n%s\n--- Open vSwitch\n%s", strings.Join(args, " "), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// -s adds timeout= as OVS does (the values differ with timing).
	govsOut, _ := w.appctl(t, "dpctl/dump-conntrack", "-m", "-s", "zone=65520")
	if !regexp.MustCompile(`,id=0,zone=65520,status=0,timeout=\d+,mark=32,protoinfo=\(state_orig=`).MatchString(govsOut) {
		t.Errorf("dump-conntrack -m -s:\n%s", govsOut)
	}
}

// TestDumpFlowsMatchesOVS: after the seed service walk, `ovs-appctl
// dpif/dump-flows br-int` and `dpctl/dump-flows` on govs-vswitchd list
// the megaflows the walk's packets went through, in OVS's line format,
// with the same datapath actions per input port as Open vSwitch (port
// numbers mapped to OpenFlow ports, recirc ids numbered by appearance;
// the masks are each datapath's own).
func TestDumpFlowsMatchesOVS(t *testing.T) {
	const sport = 41001
	o := startWorker1OVSDB(t, "")
	serviceWalk(t, o, sport)
	// Now: OVS's revalidators drop megaflows idle for 10 s.
	ovsOut, rc := o.appctl(t, "dpif/dump-flows", "br-int")
	if rc != 0 {
		t.Fatal(ovsOut)
	}
	ovsShow, rc := o.appctl(t, "dpif/show")
	if rc != 0 {
		t.Fatal(ovsShow)
	}
	ovsPorts := map[string]string{} // datapath port -> OpenFlow port
	for _, m := range regexp.MustCompile(`(?m)^    \S+ (\d+)/(\d+): `).FindAllStringSubmatch(ovsShow, -1) {
		ovsPorts[m[2]] = m[1]
	}

	w := startWorker1(t)
	serviceWalk(t, w, sport)
	govsOut, rc := w.appctl(t, "dpif/dump-flows", "br-int")
	if rc != 0 {
		t.Fatalf("dpif/dump-flows: %d %s", rc, govsOut)
	}
	t.Logf("govs:\n%s\nOpen vSwitch:\n%s", govsOut, ovsOut)
	line := regexp.MustCompile(`^(\S+,)?recirc_id\((0|0x[0-9a-f]+)\),(in_port\((\d+)\),)?packet_type\(ns=0,id=0\),(eth\(\S*\),)?eth_type\(0x[0-9a-f]{4}\)\S*, packets:(\d+), bytes:(\d+), used:(\d+\.\d{3}s|never)(, flags:\S+)?, actions:(\S+)$`)
	// shapes are the datapath actions of the IPv4 megaflows (the walk's),
	// ports as OpenFlow numbers, recirc ids left out: the masks and so
	// which entries there are differ (govs's recirculated entries need not
	// look at in_port), what they do must not.
	shapes := func(out string, ports map[string]string) (map[string]bool, int) {
		s, packets := map[string]bool{}, 0
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			m := line.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("not a dump-flows line: %q", l)
				continue
			}
			if !strings.Contains(l, "eth_type(0x0800)") {
				continue
			}
			mapPort := func(p string) string {
				if q, ok := ports[p]; ok {
					return q
				}
				return p
			}
			var acts []string
			for _, a := range flowtext.SplitDatapathActions(m[10]) {
				acts = append(acts, mapPort(a))
			}
			act := recircRE.ReplaceAllString(strings.Join(acts, ","), "recirc(N")
			n, _ := strconv.Atoi(m[6])
			packets += n
			s[act] = true
		}
		return s, packets
	}
	govsShapes, govsPackets := shapes(govsOut, nil)
	ovsShapes, _ := shapes(ovsOut, ovsPorts)
	if len(ovsShapes) == 0 {
		t.Fatalf("Open vSwitch shows no IPv4 megaflow after the walk")
	}
	for s := range ovsShapes {
		if !govsShapes[s] {
			t.Errorf("Open vSwitch has a megaflow %q that govs lacks", s)
		}
	}
	for s := range govsShapes {
		if !ovsShapes[s] {
			t.Errorf("govs has a megaflow %q that Open vSwitch lacks", s)
		}
	}
	if govsPackets == 0 {
		t.Errorf("govs's IPv4 megaflows counted no packets after the walk")
	}
	// dpctl/dump-flows lists the same flows under OVS's header.
	dp, rc := w.appctl(t, "dpctl/dump-flows")
	if rc != 0 || !strings.HasPrefix(dp, "flow-dump from the main thread:\n") {
		t.Errorf("dpctl/dump-flows: %d\n%s", rc, dp)
	}
	if got, _ := shapes(strings.TrimPrefix(dp, "flow-dump from the main thread:\n"), nil); len(got) != len(govsShapes) {
		t.Errorf("dpctl/dump-flows has %d IPv4 megaflow shapes, dpif/dump-flows %d", len(got), len(govsShapes))
	}
	// -m: the ufid first, as OVS.
	if m, _ := w.appctl(t, "dpif/dump-flows", "-m", "br-int"); !regexp.MustCompile(`(?m)^ufid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}, recirc_id\(0\),`).MatchString(m) {
		t.Errorf("dpif/dump-flows -m:\n%s", m)
	}
	if out, rc := w.appctl(t, "dpif/dump-flows", "nosuchbr"); rc != 2 || !strings.HasPrefix(out, "no such bridge\n") {
		t.Errorf("dpif/dump-flows nosuchbr: %d %q", rc, out)
	}
}
