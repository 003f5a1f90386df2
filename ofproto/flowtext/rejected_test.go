package flowtext_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// TestSeedRejected: every seed line that real Open vSwitch rejects (the
// "# ovs:" comment above it holds OVS's message) is rejected by govs too,
// with an error that names the line, the column and the field.
func TestSeedRejected(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(seedDir, "rejected.flows"))
	if err != nil {
		t.Fatal(err)
	}
	var ovsMsg string
	n := 0
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if msg, ok := strings.CutPrefix(line, "# ovs: "); ok {
			ovsMsg = msg
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		n++
		p := flowtable.NewPipeline()
		// Each line is loaded as line 1 of its own file, on a bridge with no
		// ports, no groups and no TLV mappings, as OVS saw it.
		err := flowtext.Load(p, line, nil)
		if err == nil {
			t.Errorf("line %d accepted, OVS said %q:\n  %s", i+1, ovsMsg, line)
			continue
		}
		var fe *flowtext.Error
		switch {
		case errors.As(err, &fe):
			if fe.Line != 1 || fe.Col < 1 || fe.Col > len(line)+1 || fe.Field == "" {
				t.Errorf("line %d: error %q lacks line/column/field", i+1, err)
			}
		case errors.Is(err, flowtable.ErrUnknownGroup):
			// Rejected when installed, as OVS rejects it (OFPGMFC_UNKNOWN_GROUP... ).
		default:
			t.Errorf("line %d: error %q is not a positioned flow text error", i+1, err)
		}
		t.Logf("line %d: govs: %v | ovs: %s", i+1, err, ovsMsg)
	}
	if n < 20 {
		t.Fatalf("only %d rejected lines found", n)
	}
}
