package translate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/internal/sharedspec"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/wire"
)

// capturesDir is ../shared/protocol/captures from the module root.
var capturesDir = sharedspec.Captures()

var versions = []struct {
	name string
	wire uint8
	text flowtext.Version
}{{"of10", wire.OFP10, flowtext.OF10}, {"of13", wire.OFP13, flowtext.OF13}, {"of15", wire.OFP15, flowtext.OF15}}

// seedFile reads a seed flows file and installs its "# tlv-map:" header in
// a fresh TLV map, as flowtext.Load does.
func seedFile(t testing.TB, name string) (string, *flowtable.TLVMap) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(seeds.Dir(), name))
	if err != nil {
		t.Fatal(err)
	}
	tlv := flowtable.NewTLVMap()
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "# tlv-map:"); ok {
			ms, err := flowtable.ParseTLVMappings(strings.TrimSpace(rest))
			if err != nil {
				t.Fatal(err)
			}
			if err := tlv.Add(ms...); err != nil {
				t.Fatal(err)
			}
		}
	}
	return string(b), tlv
}

// goldenLines reads a golden dump (one flow per line, leading space).
func goldenLines(t testing.TB, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(seeds.Dir(), name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		out = append(out, strings.TrimPrefix(l, " "))
	}
	return out
}

// flowKey identifies a flow the way a flow table does (a later add with
// the same key replaces the earlier flow).
type flowKey struct {
	table    uint8
	priority uint16
	match    flowtable.Match
}

// capMsg is one OpenFlow message of a capture.
type capMsg struct {
	fromClient bool
	h          wire.Header
	raw        []byte
}

// readCapture splits the TCP payloads of an Ethernet/IPv4 pcap.gz into
// OpenFlow messages, per direction, in capture order. The switch side is
// the one that answered the SYN.
func readCapture(t testing.TB, path string) []capMsg {
	t.Helper()
	ms, err := sharedspec.ReadCapture(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]capMsg, 0, len(ms))
	for _, m := range ms {
		h, err := wire.ParseHeader(m.Raw)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, m.Conn, err)
		}
		out = append(out, capMsg{fromClient: m.FromClient, h: h, raw: m.Raw})
	}
	return out
}
