package ovstest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// go test ./internal/ovstest -run 'TestSeed' -update-golden
var updateGolden = flag.Bool("update-golden", false, "rewrite internal/seeds/testdata/*.golden from real Open vSwitch")

// seedDir holds the seed flow files and their goldens.
const seedDir = "../seeds/testdata"

// rejectedFile lists seed lines OVS refuses; it has no goldens.
const rejectedFile = "rejected.flows"

// goldenVersions are the ovs-ofctl versions each golden is produced with.
var goldenVersions = []struct {
	suffix  string // <name>.<suffix>.golden
	version string // ovs-ofctl -O value; "" is plain ovs-ofctl, whose hello offers only OpenFlow 1.0
}{
	{"of13", "OpenFlow13"},
	{"of10", ""},
	{"of15", "OpenFlow15"}, // current Antrea speaks only 1.5: set_field everywhere
}

// TestSeedGoldens loads every seed .flows file into real OVS with
// `ovs-ofctl [-O version] add-flows` (after its "# tlv-map:" and "# group:"
// headers), dumps with `dump-flows --no-stats`, sorts the lines in byte order
// and compares with the committed <name>.<version>.golden. With -update-golden
// it rewrites the goldens instead, so every golden is real OVS output.
func TestSeedGoldens(t *testing.T) {
	all, err := filepath.Glob(filepath.Join(seedDir, "*.flows"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		if filepath.Base(f) != rejectedFile {
			files = append(files, f)
		}
	}
	if len(files) < 3 {
		t.Fatalf("found %d seed flow files in %s (%q), want worker1, worker2 and antrea-reference", len(files), seedDir, files)
	}
	o := Start(t, Options{FailMode: "secure"})
	tmp := t.TempDir()
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".flows")
		t.Run(name, func(t *testing.T) {
			ff, err := ReadFlowsFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, fl := range ff.Flows {
				if fl.OVSError != "" {
					t.Fatalf("line %d has a '# ovs:' error; rejected lines belong in %s", fl.Line, rejectedFile)
				}
			}
			for _, v := range goldenVersions {
				got, err := loadAndDump(o, path, ff, v.version)
				if err != nil {
					t.Fatalf("%s: %v", v.suffix, err)
				}
				if n := strings.Count(got, "\n"); n == 0 || n > len(ff.Flows) {
					t.Errorf("%s: dump has %d flows for %d flow lines", v.suffix, n, len(ff.Flows))
				}
				golden := filepath.Join(seedDir, name+"."+v.suffix+".golden")
				if *updateGolden {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				// The regenerated dump goes to the test's temp dir, never over
				// the committed golden.
				regen := filepath.Join(tmp, name+"."+v.suffix+".golden")
				if err := os.WriteFile(regen, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run: go test ./internal/ovstest -run TestSeedGoldens -update-golden)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from real OVS output (- golden, + OVS now; rerun with -update-golden to accept):\n%s", golden, lineDiff(string(want), got))
				}
			}
		})
	}
}

// loadAndDump resets the bridge, installs the file's TLV mappings and groups,
// adds its flows with the given ovs-ofctl version and returns the sorted dump.
func loadAndDump(o *OVS, path string, ff *FlowsFile, version string) (string, error) {
	if err := o.Reset(); err != nil {
		return "", err
	}
	for _, m := range ff.TLVMaps {
		if err := o.AddTLVMap(m); err != nil {
			return "", err
		}
	}
	for _, g := range ff.Groups {
		// Groups need OpenFlow 1.1+, whatever version the flows use.
		if err := o.AddGroup("OpenFlow13", g); err != nil {
			return "", err
		}
	}
	if err := o.AddFlowsFile(path, version); err != nil {
		return "", err
	}
	out, err := o.DumpFlows(version, "--no-stats")
	if err != nil {
		return "", err
	}
	lines := SortedLines(out)
	if len(lines) == 0 {
		return "", errors.New("empty dump")
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// TestSeedRejected replays every line of rejected.flows against real OVS (no
// ports, groups or TLV mappings) and checks that ovs-ofctl rejects it with
// exactly the recorded message.
func TestSeedRejected(t *testing.T) {
	ff, err := ReadFlowsFile(filepath.Join(seedDir, rejectedFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ff.Flows) == 0 {
		t.Fatal("no flows in rejected.flows")
	}
	o := Start(t, Options{FailMode: "secure"})
	for _, fl := range ff.Flows {
		t.Run(fmt.Sprintf("line%d", fl.Line), func(t *testing.T) {
			if fl.OVSError == "" {
				t.Fatalf("line %d has no '# ovs:' comment with the expected error", fl.Line)
			}
			if err := o.Reset(); err != nil {
				t.Fatal(err)
			}
			err := o.AddFlow("OpenFlow13", fl.Text)
			if err == nil {
				t.Fatalf("OVS accepted %q; expected rejection %q", fl.Text, fl.OVSError)
			}
			var ce *CmdError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *CmdError", err)
			}
			if ce.Stderr != fl.OVSError {
				t.Errorf("ovs-ofctl stderr:\n got %q\nwant %q", ce.Stderr, fl.OVSError)
			}
		})
	}
}

// lineDiff lists the lines only in want ("-") and only in got ("+"); the
// goldens are sorted sets of flows, so order does not matter.
func lineDiff(want, got string) string {
	count := map[string]int{}
	for _, l := range strings.Split(want, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(got, "\n") {
		count[l]--
	}
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if count[l] > 0 {
			fmt.Fprintf(&b, "- %s\n", l)
			count[l]--
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if count[l] < 0 {
			fmt.Fprintf(&b, "+ %s\n", l)
			count[l]++
		}
	}
	return b.String()
}
