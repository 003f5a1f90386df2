package translate_test

import (
	"path/filepath"
	"testing"

	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// FuzzFlowModFromWire feeds arbitrary messages through wire decoding and
// translation: bad input must give an error, never a panic, and a flow-mod
// that translates must encode again in its version.
func FuzzFlowModFromWire(f *testing.F) {
	for _, c := range []string{"t1_08_add_flows_antrea.pcap.gz", "t1b_04_of10_add_flows.pcap.gz", "t1c_02_of15_add_flows.pcap.gz"} {
		n := 0
		for _, m := range readCapture(f, filepath.Join(capturesDir, c)) {
			if m.fromClient && (m.h.Type == wire.OFPT_FLOW_MOD || m.h.Type == wire.OFPT_EXPERIMENTER) && n < 40 {
				f.Add(m.raw)
				n++
			}
		}
	}
	tlv := captureTLV(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, _, err := wire.SplitMessage(b)
		if err != nil {
			return
		}
		var d wire.Decoder
		d.Reset()
		msg, err := d.DecodeMessage(h, body)
		if err != nil {
			return
		}
		wfm, ok := msg.(*wire.FlowMod)
		if !ok {
			return
		}
		fm, err := translate.FlowModFromWire(wfm, h.Version, tlv)
		if err != nil {
			return
		}
		out, err := translate.FlowModToWire(fm, h.Version, tlv)
		if err != nil {
			return // e.g. an OpenFlow 1.0 flow-mod to all tables
		}
		if _, err := wire.EncodeMessage(nil, h.Version, h.Xid, out); err != nil {
			t.Logf("re-encode: %v", err)
		}
	})
}
