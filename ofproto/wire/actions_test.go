package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func ref(t testing.TB, name string, v uint8) FieldRef { return RefTo(mustField(t, name), v) }

// sampleActions returns one instance of every typed action, with the
// versions it can be encoded in.
func sampleActions(t testing.TB) []struct {
	a        Action
	versions []uint8
} {
	all := []uint8{OFP10, OFP13, OFP15}
	v11 := []uint8{OFP13, OFP15}
	nx0 := []uint8{OFP10, OFP13}
	reg := func(v uint8) FieldRef { return ref(t, "reg1", v) }
	_ = reg
	type S = struct {
		a        Action
		versions []uint8
	}
	out := []S{
		{&ActionOutput{Port: 0xfffd, MaxLen: 128}, []uint8{OFP10}},
		{&ActionOutput{Port: OFPP_CONTROLLER, MaxLen: 0xffff}, v11},
		{&ActionEnqueue{Port: 1, QueueID: 7}, []uint8{OFP10}},
		{&ActionSetVlanVID{VID: 10}, all},
		{&ActionSetVlanPCP{PCP: 3}, all},
		{&ActionPushVLAN{EthType: 0x8100}, v11},
		{&ActionPopVLAN{}, all},
		{&ActionSetDlAddr{MAC: [6]byte{1, 2, 3, 4, 5, 6}}, all},
		{&ActionSetDlAddr{Dst: true, MAC: [6]byte{1, 2, 3, 4, 5, 6}}, all},
		{&ActionSetNwSrc{IPv4: 0x0a000001}, all},
		{&ActionSetNwDst{IPv4: 0x0a000002}, all},
		{&ActionSetNwTos{TOS: 0x20}, all},
		{&ActionSetNwEcn{ECN: 1}, v11},
		{&ActionSetTpSrc{Port: 80}, all},
		{&ActionSetTpDst{Port: 443}, all},
		{&ActionSetMplsLabel{Label: 5}, all},
		{&ActionSetMplsTC{TC: 1}, all},
		{&ActionSetMplsTTL{TTL: 9}, all},
		{&ActionDecMplsTTL{}, all},
		{&ActionPushMPLS{EthType: 0x8847}, all},
		{&ActionPopMPLS{EthType: 0x0800}, all},
		{&ActionCopyTTL{}, v11},
		{&ActionCopyTTL{In: true}, v11},
		{&ActionSetQueue{QueueID: 3}, all},
		{&ActionGroup{GroupID: 5}, all},
		{&ActionSetNwTTL{TTL: 64}, v11},
		{&ActionDecNwTTL{}, all},
		{&ActionMeter{MeterID: 1}, []uint8{OFP15}},
		{&ActionPopQueue{}, all},
		{&ActionExit{}, all},
		{&ActionCTClear{}, all},
		{&ActionDecNshTTL{}, v11},
		{&ActionSetTunnel{TunID: 42}, all},
		{&ActionSetTunnel{TunID: 1 << 40}, all},
		{&ActionResubmit{InPort: 0xfff8, Table: 10}, all},
		{&ActionResubmit{InPort: 3, Table: 0xff}, all},
		{&ActionResubmit{InPort: 0xfff8, Table: 10, WithCT: true}, all},
		{&ActionNote{Note: []byte{1, 2, 3, 4, 5, 6}}, all},
		{&ActionMultipath{Fields: 1, Basis: 50, Algorithm: 2, MaxLink: 3, Dst: ref(t, "reg0", OFP10), NBits: 16}, all},
		{&ActionOutputReg{Src: ref(t, "reg1", OFP10), NBits: 32, MaxLen: 0xffff}, all},
		{&ActionOutputReg{Src: ref(t, "reg1", OFP10), NBits: 16, Reg2: true}, all},
		{&ActionFinTimeout{IdleTimeout: 1, HardTimeout: 2}, all},
		{&ActionController{MaxLen: 128, ControllerID: 1, Reason: 1}, all},
		{&ActionController2{Props: []Property{{NXAC2PT_MAX_LEN, []byte{0, 128}}, {NXAC2PT_USERDATA, []byte{1, 2, 3}}, {NXAC2PT_PAUSE, nil}}}, all},
		{&ActionWriteMetadata{Metadata: 1, Mask: 0xff}, all},
		{&ActionStack{Field: ref(t, "reg2", OFP10), NBits: 32}, all},
		{&ActionStack{Pop: true, Field: ref(t, "reg2", OFP10), NBits: 32}, all},
		{&ActionSample{Probability: 100, CollectorSetID: 1, ObsDomainID: 2, ObsPointID: 3}, all},
		{&ActionConjunction{Clause: 1, NClauses: 2, ID: 9}, all},
		{&ActionNAT{Flags: NX_NAT_F_DST, RangePresent: NX_NAT_RANGE_IPV4_MIN | NX_NAT_RANGE_PROTO_MIN, IPv4Min: [4]byte{10, 0, 0, 1}, ProtoMin: 80}, all},
		{&ActionNAT{Flags: NX_NAT_F_SRC, RangePresent: NX_NAT_RANGE_IPV6_MIN | NX_NAT_RANGE_IPV6_MAX, IPv6Min: [16]byte{15: 1}, IPv6Max: [16]byte{15: 2}}, all},
		{&ActionDecTTLCntIDs{IDs: []uint16{1, 2, 3}}, all},
		{&ActionRegLoad{Dst: ref(t, "reg0", OFP10), Ofs: 0, NBits: 16, Value: 0x1234}, nx0},
		{&ActionRegLoad2{Field: MatchField{Field: mustField(t, "pkt_mark"), Value: []byte{0, 0, 0, 1}, Mask: []byte{0, 0, 0, 1}}}, nx0},
		{&ActionSetField{Field: MatchField{Field: mustField(t, "eth_dst"), Value: []byte{1, 2, 3, 4, 5, 6}}}, v11},
		{&ActionSetField{Field: MatchField{Field: mustField(t, "reg4"), Value: []byte{0, 0, 0x23, 0xc1}, Mask: []byte{0, 0, 0xff, 0xff}}}, []uint8{OFP15}},
		{&ActionMove{Src: ref(t, "eth_src", OFP10), Dst: ref(t, "eth_dst", OFP10), NBits: 48}, all},
		{&ActionCT{Flags: NX_CT_F_COMMIT, ZoneImm: 65520, RecircTable: 31, Actions: []Action{
			&ActionNAT{Flags: NX_NAT_F_DST, RangePresent: NX_NAT_RANGE_IPV4_MIN, IPv4Min: [4]byte{1, 2, 3, 4}},
		}}, all},
		{&ActionCT{ZoneSrc: ref(t, "reg0", OFP10), ZoneNBits: 16, RecircTable: NX_CT_RECIRC_NONE}, all},
		{&ActionLearn{TableID: 40}, all},
	}
	// A learn action like Antrea's (match imm16/imm8/field, load field).
	learn := &ActionLearn{TableID: 40, HardTimeout: 300, Priority: 200, Cookie: 0x2040000000008, Flags: NX_LEARN_F_DELETE_LEARNED, Specs: []LearnSpec{
		{SrcImm: true, Dst: NX_LEARN_DST_MATCH, NBits: 16, Imm: []byte{0x08, 0x00}, DstRef: ref(t, "eth_type", OFP10)},
		{SrcImm: true, Dst: NX_LEARN_DST_MATCH, NBits: 8, Imm: []byte{0, 6}, DstRef: ref(t, "nw_proto", OFP10)},
		{Dst: NX_LEARN_DST_MATCH, NBits: 16, Src: ref(t, "tcp_dst", OFP10), DstRef: ref(t, "tcp_dst", OFP10)},
		{Dst: NX_LEARN_DST_LOAD, NBits: 32, Src: ref(t, "reg3", OFP10), DstRef: ref(t, "reg3", OFP10)},
		{Dst: NX_LEARN_DST_OUTPUT, NBits: 16, Src: ref(t, "in_port", OFP10)},
	}}
	out[len(out)-1] = S{learn, all}
	return out
}

func TestActionRoundTrip(t *testing.T) {
	for i, s := range sampleActions(t) {
		for _, v := range s.versions {
			t.Run(fmt.Sprintf("%d-%T-v%d", i, s.a, v), func(t *testing.T) {
				b, err := AppendActions(nil, v, []Action{s.a})
				if err != nil {
					t.Fatal(err)
				}
				if len(b)%8 != 0 || int(be16(b[2:])) != len(b) {
					t.Fatalf("bad length in %x", b)
				}
				got, err := DecodeActions(v, b)
				if err != nil {
					t.Fatalf("decode %x: %v", b, err)
				}
				if len(got) != 1 || reflect.TypeOf(got[0]) != reflect.TypeOf(s.a) {
					t.Fatalf("decoded %T", got)
				}
				again, err := AppendActions(nil, v, got)
				if err != nil || !bytes.Equal(again, b) {
					t.Fatalf("re-encode %x, %v; want %x", again, err, b)
				}
				if got[0].Name(v) == "" {
					t.Fatal("empty name")
				}
			})
		}
	}
}

// TestActionVersionRules checks actions OVS only accepts in some versions.
func TestActionVersionRules(t *testing.T) {
	regLoad, _ := AppendActions(nil, OFP13, []Action{&ActionRegLoad{Dst: ref(t, "reg0", OFP13), NBits: 8, Value: 1}})
	meter, _ := AppendActions(nil, OFP15, []Action{&ActionMeter{MeterID: 1}})
	decTTL10, _ := AppendActions(nil, OFP10, []Action{&ActionDecNwTTL{}})
	group10, _ := AppendActions(nil, OFP10, []Action{&ActionGroup{GroupID: 1}})
	maskedSet, _ := AppendActions(nil, OFP15, []Action{&ActionSetField{Field: MatchField{Field: mustField(t, "reg0"), Value: []byte{0, 0, 0, 1}, Mask: []byte{0, 0, 0, 1}}}})
	tests := []struct {
		name string
		v    uint8
		in   []byte
		want ErrorCode
	}{
		{"NXAST_DEC_TTL in 1.3", OFP13, decTTL10, OFPBAC_BAD_VENDOR_TYPE},
		{"NXAST_DEC_TTL in 1.5", OFP15, decTTL10, OFPBAC_BAD_VENDOR_TYPE},
		{"NX group (40) in 1.3", OFP13, group10, OFPBAC_BAD_VENDOR_TYPE},
		{"REG_LOAD in 1.5", OFP15, regLoad, OFPBAC_BAD_VENDOR_TYPE},
		{"OFPAT_METER in 1.3", OFP13, meter, OFPBAC_BAD_TYPE},
		{"masked set_field in 1.3", OFP13, maskedSet, OFPBAC_BAD_SET_MASK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeActions(tc.v, tc.in)
			if !errors.Is(err, NewError(tc.v, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var oe *OFPError
			if !errors.As(err, &oe) || oe.Version != tc.v {
				t.Fatalf("not an *OFPError for the version: %v", err)
			}
		})
	}
	if _, err := DecodeActions(OFP10, decTTL10); err != nil {
		t.Fatalf("NXAST_DEC_TTL in 1.0: %v", err)
	}
}

func TestActionErrors(t *testing.T) {
	// os-ken 2.5's NXActionNAT bug: 28 bytes of content but len 32,
	// nested in a ct action whose own length then is 24+28.
	natBody := []byte{0xff, 0xff, 0, 32, 0, 0, 0x23, 0x20, 0, 36, 0, 0, 0, 2, 0, 0x33, 10, 0, 0, 1, 10, 0, 0, 2, 0, 80, 0, 90}
	ct := append([]byte{0xff, 0xff, 0, byte(24 + len(natBody)), 0, 0, 0x23, 0x20, 0, 35, 0, 1, 0, 0, 0, 0, 0xff, 0xf0, 45, 0, 0, 0, 0, 0}, natBody...)
	ct = append(ct, 0, 0, 0, 0) // the instruction is padded, the ct length is not
	tests := []struct {
		name string
		v    uint8
		in   []byte
		want ErrorCode
	}{
		{"os-ken NAT length", OFP13, ct, OFPBAC_BAD_LEN},
		{"nat len beyond buffer", OFP13, append([]byte(nil), natBody[:24]...), OFPBAC_BAD_LEN},
		{"short header", OFP13, []byte{0, 0, 0, 16, 0, 0, 0, 0}[:4], OFPBRC_BAD_LEN},
		{"zero length", OFP13, []byte{0, 0, 0, 0, 0, 0, 0, 0}, OFPBAC_BAD_LEN},
		{"output wrong length", OFP13, []byte{0, 0, 0, 8, 0, 0, 0, 1}, OFPBAC_BAD_LEN},
		{"unknown type", OFP13, []byte{0, 99, 0, 8, 0, 0, 0, 0}, OFPBAC_BAD_TYPE},
		{"unknown vendor", OFP13, []byte{0xff, 0xff, 0, 16, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0}, OFPBAC_BAD_VENDOR},
		{"unknown nx subtype", OFP13, []byte{0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 200, 0, 0, 0, 0, 0, 0}, OFPBAC_BAD_VENDOR_TYPE},
		{"bad output port", OFP13, []byte{0, 0, 0, 16, 0, 0, 0xff, 0x01, 0, 0, 0, 0, 0, 0, 0, 0}, OFPBAC_BAD_OUT_PORT},
		{"conjunction clause", OFP13, []byte{0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 34, 2, 2, 0, 0, 0, 1}, NXBAC_BAD_CONJUNCTION},
		{"reg_load unknown field", OFP13, []byte{0xff, 0xff, 0, 24, 0, 0, 0x23, 0x20, 0, 7, 0, 7, 0, 1, 0xfe, 4, 0, 0, 0, 0, 0, 0, 0, 1}, OFPBAC_BAD_SET_TYPE},
		{"reg_load value too wide", OFP13, []byte{0xff, 0xff, 0, 24, 0, 0, 0x23, 0x20, 0, 7, 0, 7, 0, 1, 0, 4, 0, 0, 0, 0, 0, 0, 1, 0}, OFPBAC_BAD_ARGUMENT},
		{"reg_load beyond field", OFP13, []byte{0xff, 0xff, 0, 24, 0, 0, 0x23, 0x20, 0, 7, 0x08, 0x1f, 0, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 1}, OFPBAC_BAD_SET_LEN},
		{"resubmit padding", OFP13, []byte{0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 14, 0xff, 0xf8, 1, 1, 0, 0}, OFPBAC_BAD_ARGUMENT},
		{"set_field read-only", OFP13, []byte{0, 25, 0, 16, 0x80, 0, 0x0a, 2, 0x08, 0x00, 0, 0, 0, 0, 0, 0}, OFPBAC_BAD_SET_ARGUMENT},
		{"set_field unknown", OFP13, []byte{0, 25, 0, 16, 0x80, 0, 0xfe, 2, 0x08, 0x00, 0, 0, 0, 0, 0, 0}, OFPBAC_BAD_SET_TYPE},
		{"ct force without commit", OFP13, []byte{0xff, 0xff, 0, 24, 0, 0, 0x23, 0x20, 0, 35, 0, 2, 0, 0, 0, 0, 0, 0, 0xff, 0, 0, 0, 0, 0}, OFPBAC_BAD_ARGUMENT},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeActions(tc.v, tc.in)
			if !errors.Is(err, NewError(tc.v, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestInstructions(t *testing.T) {
	insts := []Instruction{
		{Type: OFPIT_APPLY_ACTIONS, Actions: []Action{&ActionOutput{Port: 1}}},
		{Type: OFPIT_WRITE_ACTIONS, Actions: []Action{&ActionGroup{GroupID: 2}}},
		{Type: OFPIT_CLEAR_ACTIONS},
		{Type: OFPIT_WRITE_METADATA, Metadata: 1, MetadataMask: 3},
		{Type: OFPIT_METER, MeterID: 4},
		{Type: OFPIT_GOTO_TABLE, TableID: 9},
	}
	b, err := AppendInstructions(nil, OFP13, insts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeInstructions(OFP13, b)
	if err != nil || len(got) != len(insts) {
		t.Fatalf("%v %v", got, err)
	}
	again, _ := AppendInstructions(nil, OFP13, got)
	if !bytes.Equal(again, b) {
		t.Fatal("instruction round trip differs")
	}
	goto8 := []byte{0, 1, 0, 8, 9, 0, 0, 0}
	tests := []struct {
		name string
		v    uint8
		in   []byte
		want ErrorCode
	}{
		{"duplicate", OFP13, append(append([]byte(nil), goto8...), goto8...), OFPBIC_DUP_INST},
		{"unknown", OFP13, []byte{0, 77, 0, 8, 0, 0, 0, 0}, OFPBIC_UNKNOWN_INST},
		{"goto wrong size", OFP13, []byte{0, 1, 0, 16, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, OFPBIC_BAD_LEN},
		{"length overrun", OFP13, []byte{0, 4, 0, 16, 0, 0, 0, 0}, OFPBIC_BAD_LEN},
		{"meter instruction in 1.5", OFP15, []byte{0, 6, 0, 8, 0, 0, 0, 1}, OFPBIC_UNKNOWN_INST},
		{"experimenter", OFP13, []byte{0xff, 0xff, 0, 8, 0, 0, 0, 1}, OFPBIC_BAD_EXPERIMENTER},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeInstructions(tc.v, tc.in); !errors.Is(err, NewError(tc.v, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
