package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets the harness re-execute this test binary as its pinned
// request/response workers.
func TestMain(m *testing.M) {
	RunWorkerIfRequested()
	os.Exit(m.Run())
}

// TestSmoke runs the harness for real, short: one repetition of every
// measurement over the direct veth pair and govs-vswitchd with
// actions=NORMAL, and requires a nonzero result for each, so CI proves the
// harness works end to end.
func TestSmoke(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the benchmark harness needs root (network namespaces, veth, AF_PACKET)")
	}
	before := benchNamespaces(t)
	rep := smokeRun(t, Config{Scenarios: []string{"direct", "govs-normal"}})
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())

	want := map[string][]string{
		"direct": {"udp_pps", "udp_est_pps", "tcp1_gbps", "tcp4_gbps", "rr_tps", "rr_p50_us", "rr_p99_us", "crr_cps",
			"tcp1_host_cores", "tcp1_host_cores_per_gbit"},
		"govs-normal": {"udp_pps", "udp_est_pps", "udp_est_switch_ns_per_pkt", "tcp1_gbps", "tcp4_gbps", "rr_tps", "rr_p50_us", "rr_p99_us", "crr_cps",
			"tcp1_host_cores", "tcp4_host_cores_per_gbit",
			"udp_switch_ns_per_pkt", "tcp1_switch_ns_per_pkt", "rr_switch_ns_per_pkt", "crr_switch_us_per_conn"},
	}
	if len(rep.Scenarios) != len(want) {
		t.Fatalf("report has %d scenarios, want %d", len(rep.Scenarios), len(want))
	}
	for _, s := range rep.Scenarios {
		if s.Skipped != "" || len(s.Errors) > 0 {
			t.Errorf("%s: skipped %q, errors %q", s.Name, s.Skipped, s.Errors)
		}
		for _, k := range want[s.Name] {
			st := s.Metrics[k]
			if st == nil || len(st.Values) != 1 || !(st.Median > 0) {
				t.Errorf("%s: %s = %+v, want one positive value", s.Name, k, st)
			}
		}
		if s.Name == "direct" && s.Metrics["udp_switch_ns_per_pkt"] != nil {
			t.Errorf("direct: a kernel path has no switch process, but udp_switch_ns_per_pkt is set")
		}
	}
	ratio := false
	for _, r := range rep.Ratios {
		if r.Num == "govs-normal" && r.Den == "direct" && r.Metric == "udp_pps" && r.Value > 0 {
			ratio = true
		}
	}
	if !ratio {
		t.Errorf("no govs-normal/direct udp_pps ratio in %+v", rep.Ratios)
	}
	for _, col := range []string{"direct", "govs-normal", "govs-normal/direct"} {
		if !strings.Contains(table.String(), col) {
			t.Errorf("table lacks %q", col)
		}
	}
	if after := benchNamespaces(t); len(after) > len(before) {
		t.Errorf("namespaces left behind: before %q, after %q", before, after)
	}
}

// TestSmokeScenarios runs single govs scenarios briefly (one repetition
// of a few measurements) and requires a positive value for each metric,
// the switches' CPU time counted, the pods' offload setting as the
// scenario needs it, and nothing left behind: the two-node Geneve
// scenario (frames and bytes cross the tunnel), userspace TSO (TCP
// super-segments through ports with offload metadata) and AF_XDP pod ports.
func TestSmokeScenarios(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the benchmark harness needs root (network namespaces, veth, AF_PACKET)")
	}
	tests := []struct {
		scenario     string
		measure      []string
		metrics      []string
		wantOffloads string
	}{
		{"govs-geneve", []string{"udp", "tcp1"}, []string{"udp_pps", "udp_offered_pps", "udp_switch_ns_per_pkt", "udp_est_pps", "udp_est_offered_pps", "tcp1_gbps", "tcp1_switch_ns_per_pkt"}, "off"},
		{"govs-antrea-tso", []string{"tcp1"}, []string{"tcp1_gbps", "tcp1_switch_ns_per_pkt"}, "on"},
		{"govs-antrea-tso-pmd", []string{"tcp1"}, []string{"tcp1_gbps", "tcp1_switch_ns_per_pkt", "tcp1_host_cores"}, "on"},
		{"direct-nooffload", []string{"tcp1"}, []string{"tcp1_gbps"}, "off"},
		{"relay", []string{"rr"}, []string{"rr_p50_us", "rr_switch_ns_per_pkt"}, "off"},
		{"govs-antrea-xdp", []string{"udp", "tcp1"}, []string{"udp_pps", "udp_switch_ns_per_pkt", "tcp1_gbps", "tcp1_switch_ns_per_pkt"}, "off"},
		// The kernel path takes the established flood, not the one-way one.
		{"govs-antrea-ebpf", []string{"udp"}, []string{"udp_pps", "udp_est_pps", "udp_est_kernel_share"}, "off"},
		{"govs-antrea-xdp-nice0", []string{"tcp1"}, []string{"tcp1_gbps", "tcp1_switch_ns_per_pkt"}, "off"},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			before := benchNamespaces(t)
			rep := smokeRun(t, Config{Scenarios: []string{tc.scenario}, Measurements: tc.measure})
			if len(rep.Scenarios) != 1 {
				t.Fatalf("report has %d scenarios, want 1", len(rep.Scenarios))
			}
			s := rep.Scenarios[0]
			if s.Skipped != "" || len(s.Errors) > 0 {
				t.Errorf("%s: skipped %q, errors %q", s.Name, s.Skipped, s.Errors)
			}
			if !strings.HasPrefix(s.Offloads, tc.wantOffloads) {
				t.Errorf("%s: offloads %q, want %s", s.Name, s.Offloads, tc.wantOffloads)
			}
			for _, k := range tc.metrics {
				st := s.Metrics[k]
				if st == nil || len(st.Values) != 1 || !(st.Median > 0) {
					t.Errorf("%s: %s = %+v, want one positive value", s.Name, k, st)
				}
			}
			if st := s.Metrics["udp_est_kernel_share"]; st != nil && st.Median < 0.9 {
				t.Errorf("%s: the kernel forwarded %.3f of the established flood, want nearly all", s.Name, st.Median)
			}
			if st := s.Metrics["udp_kernel_share"]; st != nil && st.Median != 0 {
				t.Errorf("%s: the kernel forwarded %.3f of the one-way flood, want none (it stays +new)", s.Name, st.Median)
			}
			if after := benchNamespaces(t); len(after) > len(before) {
				t.Errorf("namespaces left behind: before %q, after %q", before, after)
			}
		})
	}
}

// smokeRun runs cfg briefly (one repetition of one second), logs the
// harness's progress and fails the test on an error.
func smokeRun(t *testing.T, cfg Config) *Report {
	t.Helper()
	var log bytes.Buffer
	cfg.Reps, cfg.Duration, cfg.Log = 1, time.Second, &log
	start := time.Now()
	rep, err := Run(context.Background(), cfg)
	t.Logf("harness log (%v):\n%s", time.Since(start).Round(time.Millisecond), log.String())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// benchNamespaces lists the namespaces this process's harness runs left.
func benchNamespaces(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/run/netns")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	// Only this process's: other harness runs (other test binaries on
	// the machine) come and go meanwhile.
	mine := fmt.Sprintf("%s%d-", nsPrefix, os.Getpid())
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), mine) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCancelCleansUp cancels a run in the middle of its first measurement
// and requires that it returns promptly with nothing left behind.
func TestCancelCleansUp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the benchmark harness needs root")
	}
	before := benchNamespaces(t)
	trafgensBefore := map[string]bool{}
	for _, pid := range benchTrafgens(t, nil) {
		trafgensBefore[strings.Fields(pid)[0]] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	var log bytes.Buffer
	go func() {
		// Cancel once the udp measurement has started.
		for !strings.Contains(logString(&log), "setting up") {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(1500 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err := Run(ctx, Config{Scenarios: []string{"direct"}, Measurements: []string{"udp"}, Reps: 1, Duration: 20 * time.Second, Log: &syncWriter{b: &log}})
	if err != context.Canceled {
		t.Errorf("Run after cancel: err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Run took %v after cancel", d)
	}
	if after := benchNamespaces(t); len(after) > len(before) {
		t.Errorf("namespaces left behind: before %q, after %q", before, after)
	}
	if left := benchTrafgens(t, trafgensBefore); len(left) > 0 {
		t.Errorf("trafgen still running: %v", left)
	}
}

// benchTrafgens lists the trafgen processes not in skip that this
// process's harness runs may have started: those in one of its
// namespaces, or in a namespace no longer named (deleted under a
// survivor). Other harness runs on the machine run trafgen in their own
// named namespaces.
func benchTrafgens(t *testing.T, skip map[string]bool) []string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-f", "trafgen --dev gba").Output()
	mine := fmt.Sprintf("%s%d-", nsPrefix, os.Getpid())
	var left []string
	for _, pid := range strings.Fields(string(out)) {
		if skip[pid] {
			continue
		}
		ns, err := exec.Command("ip", "netns", "identify", pid).Output()
		if err != nil {
			continue // gone meanwhile
		}
		if name := strings.TrimSpace(string(ns)); name == "" || strings.HasPrefix(name, mine) {
			left = append(left, pid+" (netns "+name+")")
		}
	}
	return left
}

var logMu = make(chan struct{}, 1)

// syncWriter serializes writes so the test can read the log while Run
// writes it.
type syncWriter struct{ b *bytes.Buffer }

func (w *syncWriter) Write(p []byte) (int, error) {
	logMu <- struct{}{}
	defer func() { <-logMu }()
	return w.b.Write(p)
}

func logString(b *bytes.Buffer) string {
	logMu <- struct{}{}
	defer func() { <-logMu }()
	return b.String()
}

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       uint64
		err        string
	}{
		{"plain", "1234 (govs-vswitchd) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 8 0 100 0 0", 325, ""},
		{"name with spaces and parens", "99 (a b) c)) R 1 1 1 0 -1 0 0 0 0 0 7 3 0 0", 10, ""},
		{"no paren", "99 foo R 1", 0, "no ')'"},
		{"short", "99 (x) R 1 2 3", 0, "fields"},
		{"bad utime", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 zz 3 0 0", 0, "utime"},
		{"bad stime", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 3 -1 0 0", 0, "stime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU(tc.stat)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestCPUTicksOfSelf(t *testing.T) {
	// Burn some CPU so the count cannot be zero.
	deadline := time.Now().Add(50 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	ticks, err := cpuTicks(os.Getpid())
	if err != nil || ticks == 0 {
		t.Fatalf("cpuTicks(self) = %d, %v", ticks, err)
	}
	if _, err := cpuTicks(-1); err == nil {
		t.Fatal("cpuTicks(-1) succeeded")
	}
}

func TestParseHostBusy(t *testing.T) {
	for _, tc := range []struct {
		line    string
		want    uint64
		wantErr bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"cpu  100 2 30 5000 7 1 4 3 50 5", 100 + 2 + 30 + 1 + 4 + 3, false},
		{"cpu 1 2 3 4 5", 1 + 2 + 3, false},
		{"cpu0 1 2 3 4 5", 0, true},
		{"cpu 1 2 x 4 5", 0, true},
		{"cpu 1 2", 0, true},
		{"", 0, true},
	} {
		got, err := parseHostBusy(tc.line)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseHostBusy(%q) = %d, %v; want %d, error %v", tc.line, got, err, tc.want, tc.wantErr)
		}
	}
	if _, err := hostBusyTicks(); err != nil {
		t.Errorf("hostBusyTicks: %v", err)
	}
}

func FuzzParseStatCPU(f *testing.F) {
	f.Add("1234 (govs-vswitchd) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 8 0 100 0 0")
	f.Add("1 (x)) S")
	f.Fuzz(func(t *testing.T, s string) {
		parseStatCPU(s) // must not panic
	})
}

func TestUDPFrame(t *testing.T) {
	f, err := udpFrame(podIface{ip: clientPod.ip, mac: clientPod.mac}, podIface{ip: serverPod.ip, mac: serverPod.mac}, 40000, 53)
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != 60 {
		t.Fatalf("frame is %d bytes, want 60 (64 with the FCS)", len(f))
	}
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"ethertype", uint64(binary.BigEndian.Uint16(f[12:])), 0x0800},
		{"dst mac[0]", uint64(f[0]), 0xf2},
		{"src mac[0]", uint64(f[6]), 0xbe},
		{"ip total length", uint64(binary.BigEndian.Uint16(f[16:])), 46},
		{"ip proto", uint64(f[23]), 17},
		{"ip header checksum verifies", uint64(ipChecksum(f[14:34])), 0}, // over a header with its checksum: 0
		{"src ip last byte", uint64(f[29]), 48},
		{"dst ip last byte", uint64(f[33]), 47},
		{"udp dst port", uint64(binary.BigEndian.Uint16(f[36:])), 53},
		{"udp length", uint64(binary.BigEndian.Uint16(f[38:])), 26},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	if _, err := udpFrame(podIface{ip: "::1", mac: clientPod.mac}, podIface{ip: serverPod.ip, mac: serverPod.mac}, 1, 2); err == nil {
		t.Error("udpFrame accepted an IPv6 source")
	}
	if _, err := udpFrame(podIface{ip: clientPod.ip, mac: "zz"}, podIface{ip: serverPod.ip, mac: serverPod.mac}, 1, 2); err == nil {
		t.Error("udpFrame accepted a bad MAC")
	}
	// Across nodes the frame goes to the client's gateway, not the peer.
	client := podIface{ip: clientPod.ip, mac: clientPod.mac, gwIP: geneveNodes[0].gwIP, gwMAC: geneveNodes[0].gwMAC}
	g, err := udpFrame(client, podIface{ip: backend2Pod.ip, mac: backend2Pod.mac}, 40000, 53)
	if err != nil {
		t.Fatal(err)
	}
	if got := net.HardwareAddr(g[0:6]).String(); got != geneveNodes[0].gwMAC {
		t.Errorf("routed frame's destination MAC = %s, want the gateway's %s", got, geneveNodes[0].gwMAC)
	}
	if g[33] != 34 {
		t.Errorf("routed frame's destination IP ends in %d, want 34 (backend2)", g[33])
	}
	conf := trafgenConfig(f[:3])
	if conf != "{ 0xf2, 0x32, 0xd8 }\n" {
		t.Errorf("trafgenConfig = %q", conf)
	}
}

func TestParseToolOutput(t *testing.T) {
	n, err := parseTrafgenSent("Running! Hang up with ^C!\n\n   759100160 packets outgoing\n 45546009600 bytes outgoing\n")
	if err != nil || n != 759100160 {
		t.Errorf("parseTrafgenSent = %d, %v", n, err)
	}
	if _, err := parseTrafgenSent("trafgen: invalid option"); err == nil {
		t.Error("parseTrafgenSent accepted output without a count")
	}
	for _, tc := range []struct {
		name, in    string
		want, wantR float64
		err         string
	}{
		{"ok", `{"end":{"sum_received":{"bits_per_second":5.5e9},"sum_sent":{"seconds":4,"retransmits":10}}}`, 5.5e9, 2.5, ""},
		{"no sender summary", `{"end":{"sum_received":{"bits_per_second":5.5e9}}}`, 5.5e9, 0, ""},
		{"iperf error", `{"error":"unable to connect to server"}`, 0, 0, "unable to connect"},
		{"not json", `iperf3: error`, 0, 0, "JSON"},
	} {
		got, gotR, err := parseIperf([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || gotR != tc.wantR {
			t.Errorf("%s: got %v, %v, %v; want %v, %v", tc.name, got, gotR, err, tc.want, tc.wantR)
		}
	}
}

func TestPercentile(t *testing.T) {
	xs := []int64{9, 1, 8, 2, 7, 3, 6, 4, 5, 10}
	for _, tc := range []struct {
		p    float64
		want int64
	}{{50, 5}, {99, 10}, {100, 10}, {0, 1}, {10, 1}, {11, 2}} {
		if got := percentile(xs, tc.p); got != tc.want {
			t.Errorf("p%v = %d, want %d", tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %d", got)
	}
}

func TestStatSummarize(t *testing.T) {
	for _, tc := range []struct {
		vals                     []float64
		median, min, max, spread float64
	}{
		{[]float64{3, 1, 2}, 2, 1, 3, 50},
		{[]float64{4, 1, 2, 3}, 2.5, 1, 4, 60},
		{[]float64{7}, 7, 7, 7, 0},
	} {
		s := Stat{Values: tc.vals}
		s.summarize()
		if s.Median != tc.median || s.Min != tc.min || s.Max != tc.max || s.SpreadPct != tc.spread {
			t.Errorf("%v: got median %v min %v max %v spread %v", tc.vals, s.Median, s.Min, s.Max, s.SpreadPct)
		}
	}
}

func TestReportRatiosAndFiles(t *testing.T) {
	r := &Report{Reps: 2, Duration: "1s", Scenarios: []ScenarioResult{
		{Name: "direct", Offloads: offloadText(true), Metrics: map[string]*Stat{"udp_pps": {Values: []float64{1000, 1200}}}},
		{Name: "ovs-normal", Skipped: "Open vSwitch is not installed", Offloads: offloadText(false), Metrics: map[string]*Stat{}},
		{Name: "govs-normal", Offloads: offloadText(false), Metrics: map[string]*Stat{"udp_pps": {Values: []float64{550, 550}}}},
	}}
	r.finish()
	if len(r.Ratios) != 1 || r.Ratios[0].Num != "govs-normal" || r.Ratios[0].Den != "direct" || r.Ratios[0].Value != 0.5 {
		t.Fatalf("ratios = %+v, want govs-normal/direct udp_pps 0.5", r.Ratios)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1.10 ±9%", "0.55 ±0%", "skipped", "SKIPPED: Open vSwitch is not installed", "0.50"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	dir := t.TempDir()
	path := dir + "/r.json"
	others, err := r.WriteFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	csvPath, svgPath := dir+"/r.csv", dir+"/r.svg"
	if !slices.Equal(others, []string{csvPath, svgPath}) {
		t.Fatalf("WriteFiles wrote %q besides the JSON, want the CSV and the SVG", others)
	}
	checkSVG(t, svgPath, []string{"direct", "govs-normal"}, []string{"ovs-normal"})
	var back Report
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &back); err != nil || back.Scenarios[2].Metrics["udp_pps"].Median != 550 {
		t.Errorf("JSON round trip: %v %+v", err, back.Scenarios)
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// header + direct (2 values + median) + govs (2 + median) + 1 ratio
	if len(rows) != 1+3+3+1 {
		t.Errorf("CSV has %d rows: %q", len(rows), rows)
	}
}

// checkSVG parses the plot as XML and checks it has a bar (a rect with
// the scenario's label next to it) for each scenario in with, none for
// those in without, and the UDP panel.
func checkSVG(t *testing.T, path string, with, without []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name
		Rects   []struct {
			Class string `xml:"class,attr"`
			Width string `xml:"width,attr"`
		} `xml:"rect"`
		Texts []struct {
			Class string `xml:"class,attr"`
			Text  string `xml:",chardata"`
		} `xml:"text"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("plot is not well-formed XML: %v\n%s", err, b)
	}
	if doc.XMLName.Local != "svg" {
		t.Fatalf("root element %q, want svg", doc.XMLName.Local)
	}
	labels := map[string]bool{}
	for _, tx := range doc.Texts {
		if tx.Class == "label" {
			labels[tx.Text] = true
		}
	}
	for _, n := range with {
		if !labels[n] {
			t.Errorf("plot has no bar for %s: labels %v", n, labels)
		}
	}
	for _, n := range without {
		if labels[n] {
			t.Errorf("plot has a bar for %s, which has no results", n)
		}
	}
	bars := 0
	for _, r := range doc.Rects {
		if r.Class == "govs" || r.Class == "ovs" || r.Class == "kernel" {
			bars++
		}
	}
	if bars != len(with) {
		t.Errorf("plot has %d bars, want %d", bars, len(with))
	}
	if !strings.Contains(string(b), "UDP 64 B delivered") {
		t.Errorf("plot lacks the UDP panel")
	}
}

// TestRatioPairs checks that every comparison pair, the two-node one
// included, yields a ratio when both scenarios have the metric, and none
// when one is missing.
func TestRatioPairs(t *testing.T) {
	for _, p := range ratioPairs {
		t.Run(p[0]+"/"+p[1], func(t *testing.T) {
			r := &Report{Scenarios: []ScenarioResult{
				{Name: p[0], Metrics: map[string]*Stat{"tcp1_gbps": {Values: []float64{3}}, "udp_pps": {Values: []float64{10}}}},
				{Name: p[1], Metrics: map[string]*Stat{"tcp1_gbps": {Values: []float64{2}}}},
			}}
			r.finish()
			if len(r.Ratios) != 1 || r.Ratios[0] != (Ratio{Metric: "tcp1_gbps", Num: p[0], Den: p[1], Value: 1.5}) {
				t.Errorf("ratios = %+v, want only tcp1_gbps 1.5", r.Ratios)
			}
		})
	}
	for _, name := range []string{"govs-geneve", "ovs-geneve"} {
		if _, err := ScenarioByName(name); err != nil {
			t.Error(err)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{"negative reps", Config{Reps: -1}, "reps"},
		{"tiny duration", Config{Duration: time.Millisecond}, "duration"},
		{"bad offloads", Config{Offloads: "maybe"}, "offloads"},
		{"unknown scenario", Config{Scenarios: []string{"nope"}}, "unknown scenario"},
		{"unknown measurement", Config{Measurements: []string{"nope"}}, "unknown measurement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// TestUDPHandshake checks the workers that establish the UDP flow on
// loopback: the hello returns once the answer came back on the same
// 5-tuple, and fails when nothing answers.
func TestUDPHandshake(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server := pc.LocalAddr().String()
	pc.Close()
	done := make(chan error, 1)
	go func() { done <- udpAnswer(server, 5*time.Second) }()
	// udpAnswer binds in its goroutine: the hello retries until it does.
	if err := udpHello("127.0.0.1:0", server, 5*time.Second); err != nil {
		t.Fatalf("hello: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("answer: %v", err)
	}
	// The answering socket is closed now: nothing answers.
	if err := udpHello("127.0.0.1:0", server, 300*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("hello to a closed port: err = %v, want no answer", err)
	}
}
