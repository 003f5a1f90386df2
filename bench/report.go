package bench

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is a whole run's results.
type Report struct {
	Started   time.Time        `json:"started"`
	Host      string           `json:"host"`
	Kernel    string           `json:"kernel"`
	CPUs      int              `json:"cpus"`
	Reps      int              `json:"reps"`
	Duration  string           `json:"duration"`
	PinnedCPU string           `json:"pinned_cpu"`
	Scenarios []ScenarioResult `json:"scenarios"`
	Ratios    []Ratio          `json:"ratios"`
}

// ScenarioResult is one scenario's results.
type ScenarioResult struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Offloads    string           `json:"offloads"`
	Switch      string           `json:"switch,omitempty"`
	Skipped     string           `json:"skipped,omitempty"`
	Errors      []string         `json:"errors,omitempty"`
	Metrics     map[string]*Stat `json:"metrics"`
}

// Stat is one metric over the repetitions.
type Stat struct {
	Unit   string    `json:"unit"`
	Values []float64 `json:"values"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	// SpreadPct is half the min-max range relative to the median.
	SpreadPct float64 `json:"spread_pct"`
}

// Ratio is govs's median over another scenario's for one metric.
type Ratio struct {
	Metric string  `json:"metric"`
	Num    string  `json:"num"`
	Den    string  `json:"den"`
	Value  float64 `json:"value"`
}

// metricInfo describes the metrics in table order.
var metricInfo = []struct {
	key, label, unit string
}{
	{"udp_est_pps", "UDP 64B delivered, established", "kpps"},
	{"udp_est_offered_pps", "UDP 64B offered, established", "kpps"},
	{"udp_est_switch_ns_per_pkt", "UDP established switch CPU/pkt", "ns"},
	{"udp_est_switch_cores", "UDP established switch CPU", "cores"},
	{"udp_est_kernel_share", "UDP established in-kernel share", "fraction"},
	{"udp_est_path_ns_per_pkt", "UDP established sender CPU/pkt", "ns"},
	{"udp_pps", "UDP 64B delivered, one-way", "kpps"},
	{"udp_offered_pps", "UDP 64B offered, one-way", "kpps"},
	{"udp_switch_ns_per_pkt", "UDP one-way switch CPU/pkt", "ns"},
	{"udp_switch_cores", "UDP one-way switch CPU", "cores"},
	{"udp_kernel_share", "UDP one-way in-kernel share", "fraction"},
	{"udp_path_ns_per_pkt", "UDP one-way sender CPU/pkt", "ns"},
	{"tcp1_gbps", "TCP 1 stream", "Gbit/s"},
	{"tcp1_switch_ns_per_pkt", "TCP 1 switch CPU/pkt", "ns"},
	{"tcp1_host_cores", "TCP 1 host CPU busy", "cores"},
	{"tcp1_host_cores_per_gbit", "TCP 1 host CPU per Gbit/s", "cores/Gbps"},
	{"tcp1_retrans_per_s", "TCP 1 retransmits", "/s"},
	{"tcp4_gbps", "TCP 4 streams", "Gbit/s"},
	{"tcp4_switch_ns_per_pkt", "TCP 4 switch CPU/pkt", "ns"},
	{"tcp4_host_cores", "TCP 4 host CPU busy", "cores"},
	{"tcp4_host_cores_per_gbit", "TCP 4 host CPU per Gbit/s", "cores/Gbps"},
	{"tcp4_retrans_per_s", "TCP 4 retransmits", "/s"},
	{"rr_tps", "TCP RR", "trans/s"},
	{"rr_p50_us", "TCP RR p50", "µs"},
	{"rr_p99_us", "TCP RR p99", "µs"},
	{"rr_switch_ns_per_pkt", "TCP RR switch CPU/pkt", "ns"},
	{"crr_cps", "TCP connections", "conn/s"},
	{"crr_switch_us_per_conn", "TCP conn switch CPU/conn", "µs"},
	{"crr_switch_ns_per_pkt", "TCP conn switch CPU/pkt", "ns"},
	{"crr_errors", "TCP conn failures", "count"},
	{"crr_connect_p50_us", "TCP connect p50", "µs"},
	{"crr_connect_p99_us", "TCP connect p99", "µs"},
	{"crr_megaflows", "Megaflows after the conns", "count"},
	{"crr_hit_rate", "Megaflow hit rate", "fraction"},
	{"crr_lookups_per_conn", "Cache lookups per conn", "count"},
	{"crr_kernel_entries", "Kernel entries after the conns", "count"},
	{"crr_kernel_installs_per_conn", "Kernel installs per conn", "count"},
}

// metricScale converts the stored unit into the table's (pps -> kpps).
func metricScale(key string) float64 {
	if strings.HasSuffix(key, "_pps") {
		return 1e-3
	}
	return 1
}

func metricUnit(key string) string {
	switch {
	case strings.HasSuffix(key, "_pps"):
		return "packets/s"
	case strings.HasSuffix(key, "_gbps"):
		return "Gbit/s"
	case strings.HasSuffix(key, "_tps"):
		return "transactions/s"
	case strings.HasSuffix(key, "_cps"):
		return "connections/s"
	case strings.HasSuffix(key, "_us"), strings.HasSuffix(key, "_us_per_conn"):
		return "µs"
	case strings.HasSuffix(key, "_ns_per_pkt"):
		return "ns"
	case strings.HasSuffix(key, "_cores"), strings.HasSuffix(key, "_cores_per_gbps"):
		return "cores"
	}
	return "count"
}

func newReport(cfg Config) *Report {
	host, kernel, cpus := hostInfo()
	return &Report{
		Started: time.Now().UTC(), Host: host, Kernel: kernel, CPUs: cpus,
		Reps: cfg.Reps, Duration: cfg.Duration.String(), PinnedCPU: cfg.CPU,
	}
}

// summarize fills Median, Min, Max and SpreadPct from Values.
func (s *Stat) summarize() {
	if len(s.Values) == 0 {
		return
	}
	v := append([]float64(nil), s.Values...)
	sort.Float64s(v)
	s.Min, s.Max = v[0], v[len(v)-1]
	if n := len(v); n%2 == 1 {
		s.Median = v[n/2]
	} else {
		s.Median = (v[n/2-1] + v[n/2]) / 2
	}
	if s.Median != 0 {
		s.SpreadPct = (s.Max - s.Min) / 2 / math.Abs(s.Median) * 100
	}
}

// ratioPairs are the comparisons the issue asks for: each govs row against
// OVS with the same flows (also two nodes through Geneve), the Linux bridge
// and the direct veth pair (with its offloads on, the kernel's default, and
// off, like the userspace rows without TSO).
var ratioPairs = [][2]string{
	{"govs-antrea", "ovs-antrea"},
	{"govs-antrea-tso", "ovs-antrea-tso"},
	{"govs-antrea-tso-pmd", "ovs-antrea-tso"},
	{"govs-antrea-pmd", "ovs-antrea"},
	{"govs-antrea-xdp", "govs-antrea"},
	{"govs-antrea-xdp-generic", "govs-antrea"},
	{"govs-antrea-xdp-nice0", "govs-antrea-xdp"},
	{"govs-antrea-xdp-nice0", "direct-nooffload"},
	{"govs-antrea-xdp-pmd", "govs-antrea-pmd"},
	{"govs-antrea-xdp-pmd", "direct-nooffload"},
	{"govs-antrea-xdp-pmd", "relay"},
	{"govs-antrea-xdp", "ovs-antrea"},
	{"govs-normal", "ovs-normal"},
	{"govs-geneve", "ovs-geneve"},
	{"govs-geneve-ebpf", "ovs-geneve"},
	{"govs-geneve-ebpf", "govs-geneve"},
	{"govs-geneve-ebpf-tso", "ovs-geneve"},
	{"govs-geneve-ebpf-tso", "govs-geneve-tso"},
	{"govs-geneve-tso", "ovs-geneve"},
	{"govs-antrea-ebpf-tso", "direct"},
	{"govs-antrea-ebpf-tso", "ovs-antrea-tso"},
	{"govs-antrea-ebpf-tso", "govs-antrea-tso"},
	{"govs-antrea-ebpf", "direct-nooffload"},
	{"govs-antrea-ebpf", "direct"},
	{"govs-antrea-ebpf", "ovs-antrea"},
	{"govs-antrea-ebpf", "govs-antrea"},
	{"govs-antrea", "bridge"},
	{"govs-normal", "bridge"},
	{"govs-antrea", "direct"},
	{"govs-antrea-tso", "direct"},
	{"govs-antrea-tso-pmd", "direct"},
	{"govs-antrea-pmd", "direct"},
	{"govs-antrea-xdp", "direct"},
	{"govs-normal", "direct"},
	{"govs-antrea", "relay"},
	{"govs-antrea-pmd", "relay"},
	{"govs-antrea", "direct-nooffload"},
	{"govs-antrea-pmd", "direct-nooffload"},
	{"govs-antrea-xdp", "direct-nooffload"},
}

// finish computes the statistics and the ratios.
func (r *Report) finish() {
	by := map[string]*ScenarioResult{}
	for i := range r.Scenarios {
		s := &r.Scenarios[i]
		for _, st := range s.Metrics {
			st.summarize()
		}
		by[s.Name] = s
	}
	r.Ratios = nil
	for _, p := range ratioPairs {
		num, den := by[p[0]], by[p[1]]
		if num == nil || den == nil {
			continue
		}
		for _, mi := range metricInfo {
			a, b := num.Metrics[mi.key], den.Metrics[mi.key]
			if a == nil || b == nil || len(a.Values) == 0 || len(b.Values) == 0 || b.Median == 0 {
				continue
			}
			r.Ratios = append(r.Ratios, Ratio{Metric: mi.key, Num: p[0], Den: p[1], Value: a.Median / b.Median})
		}
	}
}

// formatValue prints a number with about three significant digits.
func formatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func formatVals(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%s", k, formatValue(m[k]))
	}
	return b.String()
}

// WriteTable prints the results (metrics down, scenarios across, "median
// ±spread%"), the ratio table and the notes.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "govs network benchmark: %d rep(s) x %s per measurement, host %s (%d CPUs, kernel %s); cells are median ±half-range%%\n\n",
		r.Reps, r.Duration, r.Host, r.CPUs, r.Kernel)
	header := "metric\tunit\t"
	for _, s := range r.Scenarios {
		header += s.Name + "\t"
	}
	fmt.Fprintln(tw, header)
	for _, mi := range metricInfo {
		row := mi.label + "\t" + mi.unit + "\t"
		any := false
		for _, s := range r.Scenarios {
			st := s.Metrics[mi.key]
			switch {
			case s.Skipped != "":
				row += "skipped\t"
			case st == nil || len(st.Values) == 0:
				row += "-\t"
			default:
				any = true
				sc := metricScale(mi.key)
				row += fmt.Sprintf("%s ±%.0f%%\t", formatValue(st.Median*sc), st.SpreadPct)
			}
		}
		if any {
			fmt.Fprintln(tw, row)
		}
	}
	row := "offloads\t\t"
	for _, s := range r.Scenarios {
		row += strings.Fields(s.Offloads)[0] + "\t"
	}
	fmt.Fprintln(tw, row)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintf(w, "\nratios of medians (throughput: >1 means govs is faster; latency and CPU: <1 means govs is better)\n\n")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		var cols []string
		seen := map[string]bool{}
		vals := map[string]map[string]float64{}
		for _, ra := range r.Ratios {
			c := ra.Num + "/" + ra.Den
			if !seen[c] {
				seen[c] = true
				cols = append(cols, c)
			}
			if vals[ra.Metric] == nil {
				vals[ra.Metric] = map[string]float64{}
			}
			vals[ra.Metric][c] = ra.Value
		}
		fmt.Fprintln(tw, "metric\t"+strings.Join(cols, "\t")+"\t")
		for _, mi := range metricInfo {
			if vals[mi.key] == nil || mi.key == "crr_errors" {
				continue
			}
			row := mi.label + "\t"
			for _, c := range cols {
				if v, ok := vals[mi.key][c]; ok {
					row += fmt.Sprintf("%.2f\t", v)
				} else {
					row += "-\t"
				}
			}
			fmt.Fprintln(tw, row)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	for _, s := range r.Scenarios {
		fmt.Fprintf(w, "%-12s %s; offloads %s", s.Name, s.Description, s.Offloads)
		if s.Switch != "" {
			fmt.Fprintf(w, "; %s", s.Switch)
		}
		fmt.Fprintln(w)
		if s.Skipped != "" {
			fmt.Fprintf(w, "%-12s SKIPPED: %s\n", "", s.Skipped)
		}
		for _, e := range s.Errors {
			fmt.Fprintf(w, "%-12s ERROR: %s\n", "", e)
		}
	}
	return nil
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteCSV writes one row per value: scenario, offloads, metric, unit, rep
// (1-based; "median" for the summary row), value.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"scenario", "offloads", "metric", "unit", "rep", "value"}); err != nil {
		return err
	}
	for _, s := range r.Scenarios {
		keys := make([]string, 0, len(s.Metrics))
		for k := range s.Metrics {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			st := s.Metrics[k]
			for i, v := range st.Values {
				if err := cw.Write([]string{s.Name, s.Offloads, k, st.Unit, strconv.Itoa(i + 1), strconv.FormatFloat(v, 'g', -1, 64)}); err != nil {
					return err
				}
			}
			if err := cw.Write([]string{s.Name, s.Offloads, k, st.Unit, "median", strconv.FormatFloat(st.Median, 'g', -1, 64)}); err != nil {
				return err
			}
		}
	}
	for _, ra := range r.Ratios {
		if err := cw.Write([]string{ra.Num + "/" + ra.Den, "", ra.Metric, "ratio", "median", strconv.FormatFloat(ra.Value, 'g', -1, 64)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteFiles writes the JSON report to path, and next to it (same name
// with .csv and .svg) the CSV and, when there is something to draw, the
// plot. It returns the paths written besides path.
func (r *Report) WriteFiles(path string) (others []string, err error) {
	if err := writeFile(path, r.WriteJSON); err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(path, ".json")
	if base == path {
		base = path + "."
	} else {
		base += "."
	}
	csvPath, svgPath := base+"csv", base+"svg"
	if err := writeFile(csvPath, r.WriteCSV); err != nil {
		return nil, err
	}
	others = append(others, csvPath)
	var probe strings.Builder
	if err := r.WriteSVG(&probe); errors.Is(err, errNothingToPlot) {
		return others, nil
	}
	if err := writeFile(svgPath, r.WriteSVG); err != nil {
		return others, err
	}
	return append(others, svgPath), nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
