package wire

import (
	"path/filepath"
	"testing"
)

// antreaCTFlowMod returns a flow-mod from the Antrea add-flows capture whose
// actions include ct(commit, ..., exec(...)).
func antreaCTFlowMod(tb testing.TB) capMsg {
	t, ok := tb.(*testing.T)
	if !ok {
		t = &testing.T{}
	}
	for _, m := range readCapture(t, filepath.Join(capturesDir, "t1_08_add_flows_antrea.pcap.gz")) {
		if m.h.Type != OFPT_FLOW_MOD {
			continue
		}
		msg, err := DecodeMessage(m.h, m.raw[8:])
		if err != nil {
			continue
		}
		for _, in := range msg.(*FlowMod).Instructions {
			for _, a := range in.Actions {
				if ct, ok := a.(*ActionCT); ok && ct.Flags&NX_CT_F_COMMIT != 0 && len(ct.Actions) > 0 {
					return m
				}
			}
		}
	}
	tb.Fatal("no ct(commit,exec(...)) flow-mod in the Antrea capture")
	return capMsg{}
}

func TestAntreaCTFlowMod(t *testing.T) {
	m := antreaCTFlowMod(t)
	var d Decoder
	d.Reset()
	msg, err := d.DecodeMessage(m.h, m.raw[8:])
	if err != nil {
		t.Fatal(err)
	}
	fm := msg.(*FlowMod)
	if fm.Format != FlowModOF11 || len(fm.Match) == 0 {
		t.Fatalf("unexpected flow-mod %+v", fm)
	}
	t.Logf("benchmark flow-mod: %d bytes, %d match fields, %d instructions", len(m.raw), len(fm.Match), len(fm.Instructions))
}

func BenchmarkDecodeAntreaCTFlowMod(b *testing.B) {
	m := antreaCTFlowMod(b)
	var d Decoder
	d.Reset()
	b.ReportAllocs()
	b.SetBytes(int64(len(m.raw)))
	for b.Loop() {
		d.Reset()
		if _, err := d.DecodeMessage(m.h, m.raw[8:]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeAntreaCTFlowMod(b *testing.B) {
	m := antreaCTFlowMod(b)
	msg, err := DecodeMessage(m.h, m.raw[8:])
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeMessage(buf[:0], m.h.Version, m.h.Xid, msg); err != nil {
			b.Fatal(err)
		}
	}
}
