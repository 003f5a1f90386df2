package translate_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// antreaCTFlowMod returns the flow-mod of the Antrea add-flows capture
// (OpenFlow 1.3) whose actions are ct(commit,...,exec(load:...->NXM_NX_CT_MARK[])).
func antreaCTFlowMod(tb testing.TB) capMsg {
	tlv := captureTLV(tb)
	for _, m := range readCapture(tb, filepath.Join(capturesDir, "t1_08_add_flows_antrea.pcap.gz")) {
		if !m.fromClient || m.h.Type != wire.OFPT_FLOW_MOD {
			continue
		}
		msg, err := wire.DecodeMessage(m.h, m.raw[wire.HeaderLen:])
		if err != nil {
			continue
		}
		fm, err := translate.FlowModFromWire(msg.(*wire.FlowMod), m.h.Version, tlv)
		if err != nil || len(fm.Flow.Actions) == 0 {
			continue
		}
		s := flowtext.ActionsString(fm.Flow.Actions[:1], &flowtext.PrintOptions{Version: flowtext.OF13})
		if strings.HasPrefix(s, "ct(commit,") && strings.Contains(s, "exec(load:0x20->NXM_NX_CT_MARK[])") {
			return m
		}
	}
	tb.Fatal("no ct(commit,...,exec(load:0x20->NXM_NX_CT_MARK[])) flow-mod in the capture")
	return capMsg{}
}

func TestBenchmarkFlow(t *testing.T) {
	m := antreaCTFlowMod(t)
	msg, err := wire.DecodeMessage(m.h, m.raw[wire.HeaderLen:])
	if err != nil {
		t.Fatal(err)
	}
	fm, err := translate.FlowModFromWire(msg.(*wire.FlowMod), m.h.Version, captureTLV(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("benchmark flow (%d bytes): %s", len(m.raw), flowtext.FormatFlow(&fm.Flow, nil))
}

// BenchmarkDecodeTranslateCTFlowMod is what a switch does per Antrea
// flow-mod: wire-decode (pooled decoder) and translate to the model.
func BenchmarkDecodeTranslateCTFlowMod(b *testing.B) {
	m := antreaCTFlowMod(b)
	tlv := captureTLV(b)
	body := m.raw[wire.HeaderLen:]
	var d wire.Decoder
	b.ReportAllocs()
	b.SetBytes(int64(len(m.raw)))
	for b.Loop() {
		d.Reset()
		msg, err := d.DecodeMessage(m.h, body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := translate.FlowModFromWire(msg.(*wire.FlowMod), m.h.Version, tlv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranslateCTFlowMod is the translation alone.
func BenchmarkTranslateCTFlowMod(b *testing.B) {
	m := antreaCTFlowMod(b)
	tlv := captureTLV(b)
	var d wire.Decoder
	d.Reset()
	msg, err := d.DecodeMessage(m.h, m.raw[wire.HeaderLen:])
	if err != nil {
		b.Fatal(err)
	}
	wfm := msg.(*wire.FlowMod)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := translate.FlowModFromWire(wfm, m.h.Version, tlv); err != nil {
			b.Fatal(err)
		}
	}
}
