package main

import (
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
)

// TestTraceTLVMerge: --tlv-map and the flows file's "# tlv-map:" line are
// merged when they agree; a conflict is an error naming both mappings.
func TestTraceTLVMerge(t *testing.T) {
	const same = "{class=0x104,type=0x80,len=4}->tun_metadata0"
	for _, tc := range []struct {
		flag, file string
		err        string
	}{
		{same, same, ""},
		{"", same, ""},
		{same, "{class=0x104,type=0x80,len=8}->tun_metadata0", "conflicts with {class=0x104,type=0x80,len=4}->tun_metadata0"},
		{same, "{class=0x104,type=0x81,len=4}->tun_metadata0", "conflicts with"},
		{same, "{class=0x104,type=0x80,len=4}->tun_metadata1", "conflicts with"},
	} {
		p := flowtable.NewPipeline()
		if tc.flag != "" {
			ms, err := flowtable.ParseTLVMappings(tc.flag)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.TLV.Add(ms...); err != nil {
				t.Fatal(err)
			}
		}
		text := "# tlv-map: " + tc.file + "\npriority=0 actions=drop\n"
		rest, err := withoutTLVLines(p, text, "f.flows")
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s + %s: %v", tc.flag, tc.file, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "f.flows: line 1")):
			t.Errorf("%s + %s: error %v, want one with %q", tc.flag, tc.file, err, tc.err)
		case tc.err == "":
			if strings.Contains(rest, "tlv-map") || len(p.TLV.Mappings()) != 1 {
				t.Errorf("%s + %s: left %q, mappings %v", tc.flag, tc.file, rest, p.TLV.Mappings())
			}
		}
	}
}
