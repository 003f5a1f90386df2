package translate_test

import (
	"strings"
	"testing"

	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// TestFlowStatsRoundTrip puts the seed flows in a dump-flows reply of each
// version (NXST_FLOW for 1.0) with counters, decodes the reply and checks
// flows and counters come back.
func TestFlowStatsRoundTrip(t *testing.T) {
	text, tlv := seedFile(t, "antrea-reference.flows")
	fms, err := flowtext.ParseFlows(strings.NewReader(text), &flowtext.ParseOptions{TLV: tlv})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		po := &flowtext.PrintOptions{Version: v.text, TLV: tlv}
		mp := &wire.Multipart{Reply: true, Type: wire.OFPMP_FLOW}
		if v.wire == wire.OFP10 {
			mp.Type, mp.Experimenter, mp.ExpType = wire.OFPMP_EXPERIMENTER, wire.NX_VENDOR_ID, wire.NXST_FLOW
		}
		for i, pf := range fms {
			fs := &translate.FlowStats{Flow: &pf.Flow, DurationSec: uint32(i), DurationNsec: 5, IdleAge: 3, HardAge: 4,
				PacketCount: uint64(100 + i), ByteCount: uint64(1000 + i)}
			ws, err := translate.FlowStatsToWire(fs, v.wire, tlv)
			if err != nil {
				t.Fatalf("%s line %d: %v", v.name, pf.Line, err)
			}
			mp.Flows = append(mp.Flows, ws)
		}
		b, err := wire.EncodeMessage(nil, v.wire, 3, mp)
		if err != nil {
			t.Fatalf("%s: encode: %v", v.name, err)
		}
		h, body, _, err := wire.SplitMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := wire.DecodeMessage(h, body)
		if err != nil {
			t.Fatalf("%s: decode: %v", v.name, err)
		}
		got := msg.(*wire.Multipart).Flows
		if len(got) != len(fms) {
			t.Fatalf("%s: %d flows back, want %d", v.name, len(got), len(fms))
		}
		for i := range got {
			fs, err := translate.FlowStatsFromWire(&got[i], v.wire, tlv)
			if err != nil {
				t.Fatalf("%s flow %d: %v", v.name, i, err)
			}
			if a, b := flowtext.FormatFlow(fs.Flow, po), flowtext.FormatFlow(&fms[i].Flow, po); a != b {
				t.Errorf("%s flow %d:\n got %s\nwant %s", v.name, i, a, b)
			}
			if fs.PacketCount != uint64(100+i) || fs.ByteCount != uint64(1000+i) || fs.DurationSec != uint32(i) || fs.DurationNsec != 5 {
				t.Errorf("%s flow %d: counters %+v", v.name, i, fs)
			}
			if v.wire != wire.OFP13 && fs.IdleAge != 3 {
				t.Errorf("%s flow %d: idle age %d, want 3", v.name, i, fs.IdleAge)
			}
		}
	}
}
