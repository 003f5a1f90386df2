package wire

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeFlowMonitorRequests: any body gives requests or an error,
// never a panic; requests that decode encode their updates.
func FuzzDecodeFlowMonitorRequests(f *testing.F) {
	f.Add(uint8(OFP10), []byte{0, 0, 0, 0, 0, 0x3f, 0xff, 0xff, 0, 0, 0xff, 0, 0, 0, 0, 0})
	f.Add(uint8(OFP10), []byte{0, 0, 0, 1, 0, 0x3f, 0xff, 0xff, 0, 6, 3, 0, 0, 0, 0, 0, 0, 0, 6, 2, 8, 0, 0, 0})
	f.Add(uint8(OFP13), []byte{0, 0, 0, 0, 0, 0x3f, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1, 0, 4, 0, 0, 0, 0})
	f.Add(uint8(OFP15), []byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0x5f, 0xff, 0, 0, 1, 0, 4, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, v uint8, body []byte) {
		if v != OFP10 && v != OFP13 && v != OFP15 {
			v = OFP15
		}
		reqs, err := DecodeFlowMonitorRequests(v, body)
		if err != nil {
			return
		}
		for _, r := range reqs {
			u := FlowUpdate{Event: FlowUpdateAdded, Flow: FlowStats{TableID: r.TableID, Match: r.Match}}
			if _, err := AppendFlowUpdate(nil, v, &u); err != nil {
				t.Fatalf("request %+v decoded but its match does not encode: %v", r, err)
			}
		}
	})
}

// TestFlowUpdateBytes: updates are encoded byte for byte as Open vSwitch
// 3.1 sent them (captured with the same flows).
func TestFlowUpdateBytes(t *testing.T) {
	ethIP := []MatchField{{Field: FieldByName("eth_type"), Code: FieldCodeByName("NXM_OF_ETH_TYPE"), Value: []byte{8, 0}}}
	nx := FlowUpdate{Event: FlowUpdateInitial, Flow: FlowStats{TableID: 3, Priority: 7, Match: ethIP,
		Actions: []Action{&ActionOutput{Port: 1}}}}
	got, err := AppendFlowUpdate(nil, OFP10, &nx)
	if err != nil {
		t.Fatal(err)
	}
	want := hexBytes(t, "00280000000000070000000000060300000000000000000000000602080000000000000800010000")
	if !bytes.Equal(got, want) {
		t.Errorf("NX update\n got %x\nwant %x", got, want)
	}
	oxmIP := []MatchField{{Field: FieldByName("eth_type"), Code: FieldCodeByName("OXM_OF_ETH_TYPE"), Value: []byte{8, 0}}}
	of := FlowUpdate{Event: FlowUpdateDeleted, Reason: 2, Flow: FlowStats{TableID: 3, Priority: 7, Match: oxmIP,
		Instructions: []Instruction{{Type: OFPIT_APPLY_ACTIONS, Actions: []Action{&ActionOutput{Port: 1}}}}}}
	if got, err = AppendFlowUpdate(nil, OFP15, &of); err != nil {
		t.Fatal(err)
	}
	want = hexBytes(t, "0040000203020000000000070000000000000000000000000001000a80000a020800000000000000000400180000000000000010000000010000000000000000")
	if !bytes.Equal(got, want) {
		t.Errorf("1.5 update\n got %x\nwant %x", got, want)
	}
	// OpenFlow 1.3 (ONF extension): NX header, ofp_match, instructions.
	of.Event, of.Reason = FlowUpdateInitial, 0
	if got, err = AppendFlowUpdate(nil, OFP13, &of); err != nil {
		t.Fatal(err)
	}
	want = hexBytes(t, "004000000000000700000000000a030000000000000000000001000a80000a020800000000000000000400180000000000000010000000010000000000000000")
	if !bytes.Equal(got, want) {
		t.Errorf("1.3 update\n got %x\nwant %x", got, want)
	}
}
