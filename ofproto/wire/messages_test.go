package wire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// TestMessageRoundTrip builds messages the captures do not (or only
// partly) contain and checks encode -> decode -> encode is identical and
// decodes to the same Go type.
func TestMessageRoundTrip(t *testing.T) {
	eth := mustField(t, "eth_type")
	inPort := mustField(t, "in_port_oxm")
	port := Port{PortNo: 3, HWAddr: [6]byte{0xaa, 0x55, 0, 0, 0, 1}, Name: [16]byte{'p', '1'}, Curr: 0x800, CurrSpeed: 10000000}
	port10 := port
	port10.CurrSpeed = 0
	match := []MatchField{{Field: inPort, Value: []byte{0, 0, 0, 1}}, {Field: eth, Value: []byte{8, 0}}}
	acts := func(v uint8) []Action {
		if v == OFP10 {
			return []Action{&ActionOutput{Port: 0xfffa}}
		}
		return []Action{&ActionOutput{Port: OFPP_NORMAL}}
	}
	tests := []struct {
		v uint8
		m Message
	}{
		{OFP13, &EchoRequest{Data: []byte("hi")}},
		{OFP13, &EchoReply{}},
		{OFP10, &BarrierRequest{}},
		{OFP15, &BarrierReply{}},
		{OFP10, &FeaturesReply{DatapathID: 0xa1, NBuffers: 256, NTables: 254, Capabilities: 0xc7, Actions: 0xfff, Ports: []Port{port10}}},
		{OFP13, &FeaturesReply{DatapathID: 0xa1, NTables: 254, Capabilities: 0x4f}},
		{OFP13, &GetConfigRequest{}},
		{OFP13, &SwitchConfig{Reply: true, MissSendLen: 128}},
		{OFP15, &SwitchConfig{Flags: OFPC_FRAG_NORMAL, MissSendLen: 0xffff}},
		{OFP13, &RoleMsg{Role: OFPCR_ROLE_MASTER, GenerationID: 7}},
		{OFP13, &RoleMsg{Reply: true, Role: OFPCR_ROLE_SLAVE, GenerationID: 8}},
		{OFP13, &GetAsyncRequest{}},
		{OFP13, &AsyncConfig{Reply: true, PacketInMask: [2]uint32{7, 0}, PortStatusMask: [2]uint32{7, 7}, FlowRemovedMask: [2]uint32{15, 0}}},
		{OFP15, &AsyncConfig{Props: []Property{{0, []byte{0, 0, 0, 7}}, {1, []byte{0, 0, 0, 0}}}}},
		{OFP13, &TableMod{TableID: 3, Config: 3}},
		{OFP15, &TableMod{TableID: 3, Props: []Property{{2, []byte{0, 0, 0, 1}}}}},
		{OFP10, &PortMod{PortNo: 1, HWAddr: [6]byte{1}, Config: 1, Mask: 1}},
		{OFP13, &PortMod{PortNo: 1, HWAddr: [6]byte{1}, Config: 1, Mask: 1, Advertise: 4}},
		{OFP15, &PortMod{PortNo: 1, HWAddr: [6]byte{1}, Config: 1, Mask: 1, Props: []Property{{0, []byte{0, 0, 0, 4}}}}},
		{OFP10, &PortStatus{Reason: 2, Port: port10}},
		{OFP13, &PortStatus{Reason: 0, Port: port}},
		{OFP15, &PortStatus{Reason: 1, Port: port}},
		{OFP10, &PacketIn{BufferID: OFP_NO_BUFFER, TotalLen: 4, InPort: 1, Reason: 1, Data: []byte{1, 2, 3, 4}}},
		{OFP13, &PacketIn{BufferID: OFP_NO_BUFFER, TotalLen: 4, Reason: 1, TableID: 3, Cookie: 9, Match: match[:1], Data: []byte{1, 2, 3, 4}}},
		{OFP15, &NXPacketIn2{Props: []Property{{NXPINT_PACKET, []byte{1, 2, 3}}, {NXPINT_TABLE_ID, []byte{5}}, {NXPINT_METADATA, tlv(0x8000, 0, false, 0, 0, 0, 1)}}}},
		{OFP15, &NXResume{Props: []Property{{NXPINT_PACKET, []byte{1, 2, 3}}}}},
		{OFP10, &PacketOut{BufferID: OFP_NO_BUFFER, InPort: 0xfffd, Actions: acts(OFP10), Data: []byte{1, 2}}},
		{OFP13, &PacketOut{BufferID: OFP_NO_BUFFER, InPort: OFPP_CONTROLLER, Actions: acts(OFP13), Data: []byte{1, 2}}},
		{OFP15, &PacketOut{BufferID: OFP_NO_BUFFER, Match: match[:1], Actions: acts(OFP15), Data: []byte{1, 2}}},
		{OFP10, &FlowRemoved{Cookie: 1, Priority: 2, Reason: 1, DurationSec: 3, IdleTimeout: 4, PacketCount: 5, ByteCount: 6, Match10: Match10{Wildcards: OFPFW10_ALL}}},
		{OFP13, &FlowRemoved{Cookie: 1, Priority: 2, Reason: 1, TableID: 4, DurationSec: 3, HardTimeout: 4, PacketCount: 5, ByteCount: 6, Match: match}},
		{OFP15, &FlowRemoved{Cookie: 1, Priority: 2, Reason: 1, TableID: 4, Match: match, Stats: []byte{0, 0, 0, 4, 0, 0, 0, 0}}},
		{OFP10, &FlowMod{Format: FlowModOF10, Command: OFPFC_ADD, Priority: 100, BufferID: OFP_NO_BUFFER, OutPort: 0xffff, Match10: Match10{Wildcards: OFPFW10_ALL}, Actions: acts(OFP10)}},
		{OFP10, &FlowMod{Format: FlowModNX, Command: OFPFC_ADD | 5<<8, Priority: 100, BufferID: OFP_NO_BUFFER, OutPort: 0xffff, Match: []MatchField{{Field: eth, Value: []byte{8, 0}}}, Actions: acts(OFP10)}},
		{OFP15, &FlowMod{Command: OFPFC_DELETE, TableID: OFPTT_ALL, Cookie: 1 << 48, CookieMask: 0xffff << 48, BufferID: OFP_NO_BUFFER, OutPort: OFPP_ANY, OutGroup: OFPG_ANY, Importance: 3}},
		{OFP13, &GroupMod{Command: OFPGC_ADD, Type: OFPGT_SELECT, GroupID: 5, Buckets: []Bucket{{Weight: 100, WatchPort: OFPP_ANY, WatchGroup: OFPG_ANY, Actions: acts(OFP13)}}}},
		{OFP15, &GroupMod{Command: OFPGC_ADD, Type: OFPGT_SELECT, GroupID: 5, CommandBucketID: 0xffffffff, Buckets: []Bucket{{BucketID: 0, Actions: acts(OFP15), Props: []Property{{OFPGBPT15_WEIGHT, []byte{0, 100, 0, 0}}}}}}},
		{OFP10, &GroupMod{NX: true, Command: OFPGC_DELETE, GroupID: OFPG_ALL, CommandBucketID: 0xffffffff}},
		{OFP15, &MeterMod{Command: OFPMC_ADD, Flags: OFPMF_PKTPS | OFPMF_STATS, MeterID: 1, Bands: []MeterBand{{Type: OFPMBT_DROP, Rate: 100, Extra: make([]byte, 4)}}}},
		{OFP15, &BundleControl{BundleID: 1, Type: OFPBCT_OPEN_REQUEST, Flags: OFPBF_ATOMIC | OFPBF_ORDERED}},
		{OFP13, &BundleControl{ONF: true, BundleID: 1, Type: OFPBCT_COMMIT_REPLY}},
		{OFP13, &BundleAdd{ONF: true, BundleID: 1, Flags: OFPBF_ATOMIC, InnerHeader: Header{Version: OFP13, Xid: 4}, Inner: &FlowMod{BufferID: OFP_NO_BUFFER, OutPort: OFPP_ANY, OutGroup: OFPG_ANY}}},
		{OFP10, &NXSetFlowFormat{Format: NXFF_NXM}},
		{OFP10, &NXFlowModTableID{Set: 1}},
		{OFP15, &NXSetPacketInFormat{Format: NXPIF_NXT_PACKET_IN2}},
		{OFP15, &NXSetControllerID{ControllerID: 7}},
		{OFP10, &FlowRemoved{NX: true, Cookie: 1, Priority: 2, Reason: 2, TableID: 3, DurationSec: 4, DurationNsec: 5, IdleTimeout: 6, PacketCount: 7, ByteCount: 8,
			Match: []MatchField{{Field: eth, Value: []byte{8, 0}}}}},
		{OFP10, &AsyncConfig{NX: true, PacketInMask: [2]uint32{3, 0}, PortStatusMask: [2]uint32{7, 7}, FlowRemovedMask: [2]uint32{7, 0}}},
		{OFP15, &AsyncConfig{NX: true, PacketInMask: [2]uint32{0x3b, 1}, PortStatusMask: [2]uint32{5, 0}, FlowRemovedMask: [2]uint32{0x3f, 4}}},
		{OFP13, &NXTLVTableMod{Command: 0, Maps: []NXTLVMap{{OptClass: 0x104, OptType: 0x80, OptLen: 4, Index: 0}}}},
		{OFP13, &NXTLVTableRequest{}},
		{OFP13, &NXTLVTableReply{MaxOptionSpace: 256, MaxFields: 64, Maps: []NXTLVMap{{OptClass: 0x104, OptType: 0x80, OptLen: 4}}}},
		{OFP13, &Multipart{Type: OFPMP_FLOW, FlowRequest: &FlowStatsRequest{TableID: OFPTT_ALL, OutPort: OFPP_ANY, OutGroup: OFPG_ANY, Match: match}}},
		{OFP10, &Multipart{Type: OFPMP_EXPERIMENTER, Experimenter: NX_VENDOR_ID, ExpType: NXST_FLOW, FlowRequest: &FlowStatsRequest{TableID: OFPTT_ALL, OutPort: 0xffff}}},
		{OFP10, &Multipart{Type: OFPMP_FLOW, FlowRequest: &FlowStatsRequest{TableID: OFPTT_ALL, OutPort: 0xffff, Match10: Match10{Wildcards: OFPFW10_ALL}}}},
		{OFP13, &Multipart{Reply: true, Type: OFPMP_FLOW, Flows: []FlowStats{{TableID: 1, Priority: 5, Match: match, Instructions: []Instruction{{Type: OFPIT_GOTO_TABLE, TableID: 2}}}}}},
		{OFP15, &Multipart{Reply: true, Type: OFPMP_FLOW, Flows: []FlowStats{{TableID: 1, Priority: 5, Match: match, Stats: []byte{0, 0, 0, 4, 0, 0, 0, 0}}}}},
		{OFP10, &Multipart{Reply: true, Type: OFPMP_EXPERIMENTER, Experimenter: NX_VENDOR_ID, ExpType: NXST_FLOW, Flows: []FlowStats{{Priority: 5, IdleAge: 3, Actions: acts(OFP10)}}}},
		{OFP13, &Multipart{Reply: true, Type: OFPMP_DESC, Desc: &DescStats{MfrDesc: [256]byte{'g', 'o', 'v', 's'}}}},
		{OFP15, &Multipart{Reply: true, Type: OFPMP_PORT_DESC, Ports: []Port{port}}},
		{OFP13, &Multipart{Reply: true, Type: OFPMP_GROUP_DESC, GroupDescs: []GroupDesc{{Type: OFPGT_ALL, GroupID: 1, Buckets: []Bucket{{WatchPort: OFPP_ANY, WatchGroup: OFPG_ANY, Actions: acts(OFP13)}}}}}},
		{OFP15, &Multipart{Reply: true, Type: OFPMP_GROUP_DESC, GroupDescs: []GroupDesc{{Type: OFPGT_ALL, GroupID: 1, Buckets: []Bucket{{Actions: acts(OFP15)}}}}}},
		{OFP13, &Multipart{Type: OFPMP_PORT_STATS, Body: []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}}},
		{OFP13, &ExperimenterMsg{Experimenter: NX_VENDOR_ID, ExpType: 99, Data: []byte{1, 2, 3, 4}}},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprintf("%d-%T-v%d", i, tc.m, tc.v), func(t *testing.T) {
			b, err := EncodeMessage(nil, tc.v, 42, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			h, body, rest, err := SplitMessage(b)
			if err != nil || len(rest) != 0 {
				t.Fatalf("split: %v", err)
			}
			m, err := DecodeMessage(h, body)
			if err != nil {
				t.Fatalf("decode %x: %v", b, err)
			}
			if reflect.TypeOf(m) != reflect.TypeOf(tc.m) {
				t.Fatalf("decoded %T, want %T", m, tc.m)
			}
			again, err := EncodeMessage(nil, tc.v, 42, m)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("re-encode differs: %v\n got %x\nwant %x", err, again, b)
			}
		})
	}
}

func TestDecodeMessageErrors(t *testing.T) {
	tests := []struct {
		name string
		h    Header
		body []byte
		want ErrorCode
	}{
		{"length mismatch", Header{Version: OFP13, Type: OFPT_ECHO_REQUEST, Length: 20}, []byte{1}, OFPBRC_BAD_LEN},
		{"unsupported version", Header{Version: OFP12, Type: OFPT_ECHO_REQUEST, Length: 8}, nil, OFPBRC_BAD_VERSION},
		{"unknown type", Header{Version: OFP13, Type: 200, Length: 8}, nil, OFPBRC_BAD_TYPE},
		{"barrier with body", Header{Version: OFP13, Type: OFPT_BARRIER_REQUEST, Length: 9}, []byte{0}, OFPBRC_BAD_LEN},
		{"unknown experimenter", Header{Version: OFP13, Type: OFPT_EXPERIMENTER, Length: 16}, []byte{0, 0, 0, 1, 0, 0, 0, 0}, OFPBRC_BAD_VENDOR},
		{"flow mod truncated", Header{Version: OFP13, Type: OFPT_FLOW_MOD, Length: 12}, []byte{0, 0, 0, 0}, OFPBRC_BAD_LEN},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeMessage(tc.h, tc.body)
			if !errors.Is(err, NewError(tc.h.Version, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}
