package flowtext_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/ofproto/flowtext"
)

var seedDir = seeds.Dir()

// TestSeedGolden parses every seed flows file and prints it as ovs-ofctl
// dump-flows --no-stats does in OpenFlow 1.3 and 1.0; the golden files
// were produced by real Open vSwitch 3.1 (internal/ovstest re-checks them).
func TestSeedGolden(t *testing.T) {
	for _, name := range seeds.GoldenNames() {
		for _, v := range []struct {
			suffix string
			ver    flowtext.Version
		}{{"of13", flowtext.OF13}, {"of10", flowtext.OF10}, {"of15", flowtext.OF15}} {
			t.Run(name+"/"+v.suffix, func(t *testing.T) {
				text, err := os.ReadFile(filepath.Join(seedDir, name+".flows"))
				if err != nil {
					t.Fatal(err)
				}
				p := flowtable.NewPipeline()
				if err := flowtext.Load(p, string(text), nil); err != nil {
					t.Fatalf("load: %v", err)
				}
				got := flowtext.DumpFlows(p, &flowtext.PrintOptions{Version: v.ver, TLV: p.TLV})
				wantB, err := os.ReadFile(filepath.Join(seedDir, name+"."+v.suffix+".golden"))
				if err != nil {
					t.Fatal(err)
				}
				want := strings.Split(strings.TrimRight(string(wantB), "\n"), "\n")
				compareLines(t, got, want)
			})
		}
	}
}

func compareLines(t *testing.T, got, want []string) {
	t.Helper()
	wantSet := map[string]bool{}
	for _, w := range want {
		wantSet[w] = true
	}
	gotSet := map[string]bool{}
	for _, g := range got {
		gotSet[g] = true
	}
	bad := 0
	for _, g := range got {
		if !wantSet[g] {
			t.Errorf("govs printed, OVS did not:\n  %s", g)
			bad++
		}
	}
	for _, w := range want {
		if !gotSet[w] {
			t.Errorf("OVS printed, govs did not:\n  %s", w)
			bad++
		}
	}
	if len(got) != len(want) {
		t.Errorf("govs printed %d flows, OVS %d", len(got), len(want))
	}
}
