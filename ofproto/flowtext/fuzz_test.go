package flowtext_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// fuzzOptions are the parse and print options of the fuzz targets: worker
// 1's TLV map, so that tun_metadata0 parses.
func fuzzOptions(tb testing.TB) (*flowtext.ParseOptions, *flowtext.PrintOptions) {
	_, po := seedFlowLines(tb, seeds.Worker1)
	return po, &flowtext.PrintOptions{Version: flowtext.OF13, TLV: po.TLV}
}

// checkRoundTrip parses s; if it parses, its OF1.3 printout must parse
// again and print identically. Errors are fine, panics are not.
func checkRoundTrip(t *testing.T, s string, po *flowtext.ParseOptions, pr *flowtext.PrintOptions) {
	t.Helper()
	fm, err := flowtext.ParseFlow(s, po)
	if err != nil {
		return
	}
	printed := flowtext.FormatFlow(&fm.Flow, pr)
	fm2, err := flowtext.ParseFlow(printed, po)
	if err != nil {
		t.Fatalf("printout of %q does not parse: %v\n  printed: %s", s, err, printed)
	}
	if again := flowtext.FormatFlow(&fm2.Flow, pr); again != printed {
		t.Fatalf("round trip of %q changes the printout:\n  first:  %s\n  second: %s", s, printed, again)
	}
}

// FuzzParseFlow: ParseFlow never panics, and whatever it accepts prints
// (OpenFlow 1.3) to text that parses back to the same printout.
func FuzzParseFlow(f *testing.F) {
	w1, _ := seedFlowLines(f, seeds.Worker1)
	w2, _ := seedFlowLines(f, seeds.Worker2)
	tun6, err := os.ReadFile(filepath.Join(seeds.Dir(), "tunnel-ipv6.flows"))
	if err != nil {
		f.Fatal(err)
	}
	t6, _ := seedFlowLines(f, string(tun6)) // IPv6 tunnel underlays
	for _, l := range append(append(w1, w2...), t6...) {
		f.Add(l)
	}
	rejected, err := os.ReadFile(filepath.Join(seeds.Dir(), "rejected.flows"))
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range strings.Split(string(rejected), "\n") {
		if l = strings.TrimSpace(l); l != "" && l[0] != '#' {
			f.Add(l)
		}
	}
	for _, c := range fuzzRegressions {
		f.Add(c.line)
	}
	po, pr := fuzzOptions(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkRoundTrip(t, s, po, pr)
	})
}

// fuzzRegressions are inputs the fuzzer found that once panicked or broke
// the round trip.
var fuzzRegressions = []struct {
	name, line string
}{
	// A set_field with an all-zero mask encodes to nothing before
	// OpenFlow 1.5 (OVS prints "drop"); it printed as a whole-field load,
	// which parses back as two 64-bit loads.
	{"zero-mask set_field", "action=set_field(0::/::->tun_ipv6_src"},
	{"zero-mask set_field before output", "actions=set_field(0/0->reg0),output:1"},
}

func TestFuzzRegressions(t *testing.T) {
	po, pr := fuzzOptions(t)
	for _, c := range fuzzRegressions {
		t.Run(c.name, func(t *testing.T) {
			checkRoundTrip(t, c.line, po, pr)
		})
	}
}
