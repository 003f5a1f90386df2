package flowtext_test

import (
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// seedFlowLines returns the flow lines of a seed file (no comments, no
// blank lines) and parse options with the file's "# tlv-map:" mappings.
func seedFlowLines(tb testing.TB, text string) ([]string, *flowtext.ParseOptions) {
	tb.Helper()
	tlv := flowtable.NewTLVMap()
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "# tlv-map:"); ok {
			ms, err := flowtable.ParseTLVMappings(strings.TrimSpace(rest))
			if err == nil {
				err = tlv.Add(ms...)
			}
			if err != nil {
				tb.Fatalf("tlv-map: %v", err)
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		lines = append(lines, line)
	}
	return lines, &flowtext.ParseOptions{TLV: tlv}
}

// BenchmarkParseFlow is the flow text parse rate over worker 1's flows
// (one op = one line). Goal: ≥ 200k lines/s.
func BenchmarkParseFlow(b *testing.B) {
	lines, opts := seedFlowLines(b, seeds.Worker1)
	if len(lines) < 50 {
		b.Fatalf("only %d flow lines in worker1.flows", len(lines))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := flowtext.ParseFlow(lines[i%len(lines)], opts); err != nil {
			b.Fatalf("line %q: %v", lines[i%len(lines)], err)
		}
		i++
	}
	rate := float64(i) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "lines/s")
	b.Logf("parsed %d lines at %.0f lines/s", i, rate)
}
