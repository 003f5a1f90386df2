package e2e

import (
	"bufio"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape fetches the daemon's /metrics from inside its namespace (the
// listener lives there) and returns the samples by name{labels}.
func (n *node) scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	var body string
	err := n.ns.Do(func() error {
		// net.Dial makes the socket on this goroutine's thread, which Do
		// has moved into the namespace.
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("GET /metrics: %s", resp.Status)
		}
		var b strings.Builder
		_, err = bufio.NewReader(resp.Body).WriteTo(&b)
		body = b.String()
		return err
	})
	if err != nil {
		t.Fatalf("scraping %s: %v", addr, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

var rxPktsRE = regexp.MustCompile(`rx pkts=(\d+)`)

// ofRxPackets is the rx packet count `ovs-ofctl dump-ports` prints.
func ofRxPackets(t *testing.T, mgmt string, port int) float64 {
	t.Helper()
	out, err := ofctl(mgmt, "dump-ports", strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	m := rxPktsRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no rx pkts in dump-ports:\n%s", out)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestMetricsEndpoint: govs-vswitchd --metrics-address serves Prometheus
// metrics whose port counters move as the OpenFlow port stats do, with
// the flows, cache and conntrack families present.
func TestMetricsEndpoint(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.Intn(20000))
	n := startNode(t, "--metrics-address", addr)
	n.mustRun("add-br", "br0", "fail_mode=standalone")
	a := n.addPod(t, "10.232.0.1/24", "")
	b := n.addPod(t, "10.232.0.2/24", "")
	n.mustRun("add-port", "br0", a.veth.Host, "ofport_request=3")
	n.mustRun("add-port", "br0", b.veth.Host, "ofport_request=4")
	mgmt := "unix:" + filepath.Join(n.rundir, "br0.mgmt")
	if _, err := ofctl(mgmt, "add-flow", "table=0,priority=0,actions=NORMAL"); err != nil {
		t.Fatal(err)
	}
	rx := fmt.Sprintf(`govs_port_rx_packets_total{bridge="br0",port="%s"}`, a.veth.Host)

	before := n.scrape(t, addr)
	if _, ok := before[rx]; !ok {
		t.Fatalf("no %s in the metrics", rx)
	}
	const pings = 20
	if out, err := a.ns.Exec("ping", "-c", strconv.Itoa(pings), "-i", "0.01", "-W", "2", b.ip); err != nil {
		t.Fatalf("ping through the bridge: %v\n%s", err, out)
	}
	of1 := ofRxPackets(t, mgmt, 3)
	after := n.scrape(t, addr)
	of2 := ofRxPackets(t, mgmt, 3)
	if got := after[rx] - before[rx]; got < pings {
		t.Errorf("%s moved by %v during %d pings", rx, got, pings)
	}
	// The same counter as the OpenFlow port stats, read between two reads of them.
	if v := after[rx]; v < of1 || v > of2 {
		t.Errorf("%s = %v, OpenFlow port stats %v..%v", rx, v, of1, of2)
	}
	for _, name := range []string{
		`govs_flows{bridge="br0",table="0"}`,
		`govs_flowcache_hits_total{bridge="br0"}`,
		`govs_flowcache_entries{bridge="br0"}`,
		`govs_conntrack_connections`,
		`govs_conntrack_connections_limit`,
		`govs_conntrack_limit_hits_total`,
		`govs_packet_ins_queued_total`,
		`govs_packet_ins_dropped_total`,
		`govs_openflow_panics_recovered_total`,
		`govs_datapath_drops_total{bridge="br0",reason="panic"}`,
		fmt.Sprintf(`govs_port_tx_packets_total{bridge="br0",port="%s"}`, b.veth.Host),
	} {
		if _, ok := after[name]; !ok {
			t.Errorf("no %s in the metrics", name)
		}
	}
	if after[`govs_flows{bridge="br0",table="0"}`] != 1 {
		t.Errorf("govs_flows table 0 = %v, want 1", after[`govs_flows{bridge="br0",table="0"}`])
	}
	tx := fmt.Sprintf(`govs_port_tx_packets_total{bridge="br0",port="%s"}`, b.veth.Host)
	if after[tx]-before[tx] < pings {
		t.Errorf("%s moved by %v during %d pings", tx, after[tx]-before[tx], pings)
	}
}
