package bench

import (
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// plotMetrics are the panels of the SVG plot: throughput and latency, one
// horizontal bar per scenario (the median) with a line over the min-max
// range of the repetitions.
var plotMetrics = []struct {
	key, title string
	scale      float64
	higher     bool // higher is better (for the caption)
}{
	{"udp_est_pps", "UDP 64 B delivered, established flow (kpps)", 1e-3, true},
	{"udp_pps", "UDP 64 B delivered, one-way (kpps)", 1e-3, true},
	{"tcp1_gbps", "TCP 1 stream (Gbit/s)", 1, true},
	{"tcp4_gbps", "TCP 4 streams (Gbit/s)", 1, true},
	{"rr_p50_us", "TCP request/response p50 (µs)", 1, false},
}

// errNothingToPlot: no scenario measured a metric of plotMetrics.
var errNothingToPlot = errors.New("svg: no scenario has a throughput or latency result to plot")

// SVG layout, in pixels.
const (
	plotWidth   = 900
	plotLabelW  = 170 // scenario names
	plotValueW  = 90  // value text right of the bars
	plotBarH    = 16
	plotBarGap  = 6
	plotTitleH  = 26
	plotPanelGp = 18
)

// WriteSVG draws the report as a standalone SVG image: one panel per
// metric of plotMetrics that some scenario measured.
func (r *Report) WriteSVG(w io.Writer) error {
	var b strings.Builder
	y := 40
	var panels strings.Builder
	for _, m := range plotMetrics {
		type bar struct {
			name          string
			med, min, max float64
		}
		var bars []bar
		top := 0.0
		for _, s := range r.Scenarios {
			st := s.Metrics[m.key]
			if st == nil || len(st.Values) == 0 {
				continue
			}
			bars = append(bars, bar{name: s.Name, med: st.Median * m.scale, min: st.Min * m.scale, max: st.Max * m.scale})
			top = math.Max(top, st.Max*m.scale)
		}
		if len(bars) == 0 {
			continue
		}
		if top <= 0 {
			top = 1
		}
		better := "higher is better"
		if !m.higher {
			better = "lower is better"
		}
		fmt.Fprintf(&panels, "<text x=\"10\" y=\"%d\" class=\"title\">%s <tspan class=\"note\">(median, min–max; %s)</tspan></text>\n",
			y+16, html.EscapeString(m.title), better)
		y += plotTitleH
		span := float64(plotWidth - plotLabelW - plotValueW - 20)
		for _, br := range bars {
			x0 := float64(plotLabelW)
			wMed := br.med / top * span
			fmt.Fprintf(&panels, "<text x=\"%d\" y=\"%d\" class=\"label\">%s</text>\n", plotLabelW-8, y+plotBarH-4, html.EscapeString(br.name))
			fmt.Fprintf(&panels, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" class=\"%s\"/>\n", x0, y, wMed, plotBarH, barClass(br.name))
			if br.max > br.min {
				xa, xb := x0+br.min/top*span, x0+br.max/top*span
				mid := y + plotBarH/2
				fmt.Fprintf(&panels, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"range\"/>\n", xa, mid, xb, mid)
			}
			fmt.Fprintf(&panels, "<text x=\"%.1f\" y=\"%d\" class=\"value\">%s</text>\n", x0+wMed+6, y+plotBarH-4, formatPlotValue(br.med))
			y += plotBarH + plotBarGap
		}
		y += plotPanelGp
	}
	if panels.Len() == 0 {
		return errNothingToPlot
	}
	height := y + 10
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
		plotWidth, height, plotWidth, height)
	b.WriteString(`<style>
.title { font-weight: bold; font-size: 13px; }
.note { font-weight: normal; fill: #555; }
.label { text-anchor: end; }
.value { fill: #333; }
.govs { fill: #2b7bba; }
.ovs { fill: #d9822b; }
.kernel { fill: #8a8a8a; }
.range { stroke: #000; stroke-width: 1.5; }
</style>
<rect width="100%" height="100%" fill="white"/>
`)
	fmt.Fprintf(&b, "<text x=\"10\" y=\"20\" class=\"title\">govs network benchmark: %d rep(s) × %s, %d CPUs, kernel %s</text>\n",
		r.Reps, html.EscapeString(r.Duration), r.CPUs, html.EscapeString(r.Kernel))
	b.WriteString(panels.String())
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// barClass colours a scenario's bar by which switch it is.
func barClass(name string) string {
	switch {
	case strings.HasPrefix(name, "govs"):
		return "govs"
	case strings.HasPrefix(name, "ovs"):
		return "ovs"
	}
	return "kernel"
}

func formatPlotValue(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
