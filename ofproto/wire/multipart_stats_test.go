package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// statsCase is one typed multipart message, the body length (after the
// multipart header) its layout must have, and text ovs-ofctl ofp-print
// must show for it (empty: not checked with ovs-ofctl).
type statsCase struct {
	name    string
	v       uint8
	m       *Multipart
	bodyLen int
	print   []string
}

func portStatsSample(no uint32) PortStats {
	return PortStats{PortNo: no, DurationSec: 3, DurationNsec: 500000000, RxPackets: 11, TxPackets: 21, RxBytes: 12, TxBytes: 22,
		RxDropped: 13, TxDropped: 23, RxErrors: 14, TxErrors: 24, RxFrameErr: 15, RxOverErr: 16, RxCRCErr: 17, Collisions: 25}
}

func statsCases() []statsCase {
	nx := func(sub uint32, reply bool) *Multipart {
		return &Multipart{Reply: reply, Type: OFPMP_EXPERIMENTER, Experimenter: NX_VENDOR_ID, ExpType: sub}
	}
	with := func(m *Multipart, f func(*Multipart)) *Multipart { f(m); return m }
	tables10 := []TableStats{{TableID: 0, Name: TableNameBytes("classifier"), Wildcards: 0x3fffff, MaxEntries: 1000000, ActiveCount: 9, LookupCount: 100, MatchedCount: 90},
		{TableID: 1, Name: TableNameBytes("table1"), Wildcards: 0x3fffff, MaxEntries: 1000000, ActiveCount: 2}}
	tables13 := []TableStats{{TableID: 0, ActiveCount: 9, LookupCount: 100, MatchedCount: 90}, {TableID: 1, ActiveCount: 2}}
	groups := []GroupStats{{GroupID: 5, RefCount: 1, PacketCount: 7, ByteCount: 8, DurationSec: 40, DurationNsec: 231000000,
		Buckets: []BucketCounter{{PacketCount: 3, ByteCount: 4}, {PacketCount: 5, ByteCount: 6}}}}
	groupPrint := []string{"group_id=5,duration=40.231s,ref_count=1,packet_count=7,byte_count=8,bucket0:packet_count=3,byte_count=4,bucket1:packet_count=5,byte_count=6"}
	gf := &GroupFeatures{Types: 0xf, Capabilities: 0x7, MaxGroups: [4]uint32{0xffffff00, 0xffffff00, 0xffffff00, 0xffffff00},
		Actions: [4]uint32{1, 1, 1, 1 << OFPAT_GROUP}}
	meters := []MeterStats{{MeterID: 1, FlowCount: 2, PacketInCount: 3, ByteInCount: 4, DurationSec: 5, DurationNsec: 6,
		Bands: []MeterBandStats{{PacketBandCount: 7, ByteBandCount: 8}}}}
	meterCfg := []MeterConfig{{Flags: OFPMF_PKTPS | OFPMF_STATS, MeterID: 1, Bands: []MeterBand{{Type: OFPMBT_DROP, Rate: 100, BurstSize: 0, Extra: make([]byte, 4)}}}}
	flows10 := []FlowStats{{TableID: 0, DurationSec: 2, Priority: 100, IdleTimeout: 0, Cookie: 0x1234, PacketCount: 5, ByteCount: 300,
		Match10: Match10{Wildcards: OFPFW10_ALL &^ OFPFW10_DL_TYPE, DlType: 0x0806}, Actions: []Action{&ActionOutput{Port: uint32(OFPP10_NORMAL)}}}}
	return []statsCase{
		// Table stats.
		{"table request 1.0", OFP10, &Multipart{Type: OFPMP_TABLE}, 0, []string{"OFPST_TABLE request"}},
		{"table reply 1.0", OFP10, &Multipart{Reply: true, Type: OFPMP_TABLE, Tables: tables10}, 2 * 64,
			[]string{`table 0 ("classifier")`, "active=9, lookup=100, matched=90", "max_entries=1000000", `table 1 ("table1")`}},
		{"table reply 1.3", OFP13, &Multipart{Reply: true, Type: OFPMP_TABLE, Tables: tables13}, 2 * 24,
			[]string{"table 0:", "active=9, lookup=100, matched=90", "table 1:", "active=2, lookup=0, matched=0"}},
		{"table reply 1.5", OFP15, &Multipart{Reply: true, Type: OFPMP_TABLE, Tables: tables13}, 2 * 24,
			[]string{"OFPST_TABLE reply (OF1.5)", "active=9, lookup=100, matched=90"}},
		// Port stats.
		{"port request 1.0", OFP10, &Multipart{Type: OFPMP_PORT_STATS, Object: &ObjectRequest{ID: uint32(OFPP10_NONE)}}, 8, []string{"port_no=ANY"}},
		{"port request 1.3", OFP13, &Multipart{Type: OFPMP_PORT_STATS, Object: &ObjectRequest{ID: 7}}, 8, []string{"port_no=7"}},
		{"port request 1.5", OFP15, &Multipart{Type: OFPMP_PORT_STATS, Object: &ObjectRequest{ID: OFPP_ANY}}, 8, []string{"port_no=ANY"}},
		{"port reply 1.0", OFP10, &Multipart{Reply: true, Type: OFPMP_PORT_STATS, PortStats: []PortStats{with2(portStatsSample(1), func(p *PortStats) { p.DurationSec, p.DurationNsec = 0, 0 })}}, 104,
			[]string{"port  1: rx pkts=11, bytes=12, drop=13, errs=14, frame=15, over=16, crc=17", "tx pkts=21, bytes=22, drop=23, errs=24, coll=25"}},
		{"port reply 1.3", OFP13, &Multipart{Reply: true, Type: OFPMP_PORT_STATS, PortStats: []PortStats{portStatsSample(1), portStatsSample(OFPP_LOCAL)}}, 2 * 112,
			[]string{"2 ports", "port LOCAL: rx pkts=11", "port  1: rx pkts=11, bytes=12, drop=13, errs=14, frame=15, over=16, crc=17", "coll=25", "duration=3.500s"}},
		{"port reply 1.5", OFP15, &Multipart{Reply: true, Type: OFPMP_PORT_STATS, PortStats: []PortStats{portStatsSample(2)}}, 80 + 40,
			[]string{"port  2: rx pkts=11, bytes=12, drop=13, errs=14, frame=15, over=16, crc=17", "tx pkts=21, bytes=22, drop=23, errs=24, coll=25", "duration=3.500s"}},
		// Queue stats.
		{"queue request 1.0", OFP10, &Multipart{Type: OFPMP_QUEUE, Object: &ObjectRequest{ID: uint32(OFPP10_ALL), QueueID: OFPQ_ALL}}, 8, []string{"OFPST_QUEUE request", "port=ANY queue=ALL"}},
		{"queue request 1.3", OFP13, &Multipart{Type: OFPMP_QUEUE, Object: &ObjectRequest{ID: 3, QueueID: 4}}, 8, []string{"port=3 queue=4"}},
		{"queue reply 1.0", OFP10, &Multipart{Reply: true, Type: OFPMP_QUEUE, Queues: []QueueStats{{PortNo: 3, QueueID: 4, TxBytes: 5, TxPackets: 6, TxErrors: 7}}}, 32,
			[]string{"port 3 queue 4: bytes=5, pkts=6, errors=7, duration=?"}},
		{"queue reply 1.3", OFP13, &Multipart{Reply: true, Type: OFPMP_QUEUE, Queues: []QueueStats{{PortNo: 3, QueueID: 4, TxBytes: 5, TxPackets: 6, TxErrors: 7, DurationSec: 8}}}, 40,
			[]string{"port 3 queue 4: bytes=5, pkts=6, errors=7, duration=8s"}},
		{"queue reply 1.5", OFP15, &Multipart{Reply: true, Type: OFPMP_QUEUE, Queues: []QueueStats{{PortNo: 3, QueueID: 4, TxBytes: 5, TxPackets: 6, TxErrors: 7, DurationSec: 8}}}, 48,
			[]string{"port 3 queue 4: bytes=5, pkts=6, errors=7, duration=8s"}},
		// Aggregate.
		{"aggregate request 1.0", OFP10, &Multipart{Type: OFPMP_AGGREGATE, FlowRequest: &FlowStatsRequest{TableID: OFPTT_ALL, OutPort: uint32(OFPP10_NONE), Match10: Match10{Wildcards: OFPFW10_ALL}}}, 44, []string{"OFPST_AGGREGATE request"}},
		{"aggregate reply 1.0", OFP10, &Multipart{Reply: true, Type: OFPMP_AGGREGATE, Aggregate: &AggregateStats{PacketCount: 5, ByteCount: 6, FlowCount: 150}}, 24,
			[]string{"packet_count=5 byte_count=6 flow_count=150"}},
		{"aggregate reply NX", OFP10, with(nx(NXST_AGGREGATE, true), func(m *Multipart) { m.Aggregate = &AggregateStats{PacketCount: 5, ByteCount: 6, FlowCount: 150} }), 24,
			[]string{"NXST_AGGREGATE reply", "packet_count=5 byte_count=6 flow_count=150"}},
		{"aggregate reply 1.3", OFP13, &Multipart{Reply: true, Type: OFPMP_AGGREGATE, Aggregate: &AggregateStats{PacketCount: 5, ByteCount: 6, FlowCount: 150}}, 24,
			[]string{"packet_count=5 byte_count=6 flow_count=150"}},
		{"aggregate reply 1.5", OFP15, &Multipart{Reply: true, Type: OFPMP_AGGREGATE, Aggregate: &AggregateStats{PacketCount: 5, ByteCount: 6, FlowCount: 150}}, 40,
			[]string{"OFPST_AGGREGATE reply (OF1.5)", "packet_count=5 byte_count=6 flow_count=150"}},
		// Groups.
		{"group request NX", OFP10, with(nx(NXST_GROUP, false), func(m *Multipart) { m.Object = &ObjectRequest{ID: OFPG_ALL} }), 8, []string{"NXST_GROUP request", "group_id=ALL"}},
		{"group request 1.3", OFP13, &Multipart{Type: OFPMP_GROUP, Object: &ObjectRequest{ID: OFPG_ALL}}, 8, []string{"group_id=ALL"}},
		{"group desc request 1.5", OFP15, &Multipart{Type: OFPMP_GROUP_DESC, Object: &ObjectRequest{ID: 5}}, 8, []string{"OFPST_GROUP_DESC request", "group_id=5"}},
		{"group desc request NX", OFP10, with(nx(NXST_GROUP_DESC, false), func(m *Multipart) { m.Object = &ObjectRequest{ID: OFPG_ALL} }), 8, []string{"NXST_GROUP_DESC request", "group_id=ALL"}},
		{"group reply NX", OFP10, with(nx(NXST_GROUP, true), func(m *Multipart) { m.Groups = groups }), 40 + 32, groupPrint},
		{"group reply 1.3", OFP13, &Multipart{Reply: true, Type: OFPMP_GROUP, Groups: groups}, 40 + 32, groupPrint},
		{"group reply 1.5", OFP15, &Multipart{Reply: true, Type: OFPMP_GROUP, Groups: groups}, 40 + 32, groupPrint},
		{"group features reply 1.3", OFP13, &Multipart{Reply: true, Type: OFPMP_GROUP_FEATURES, GroupFeatures: gf}, 40,
			[]string{"Types:  0xf", "Capabilities:  0x7", "max_groups=0xffffff00", "fast failover group:"}},
		{"group features reply NX", OFP10, with(nx(NXST_GROUP_FEATURES, true), func(m *Multipart) { m.GroupFeatures = gf }), 40, []string{"NXST_GROUP_FEATURES reply", "Types:  0xf"}},
		{"port desc request 1.5", OFP15, &Multipart{Type: OFPMP_PORT_DESC, Object: &ObjectRequest{ID: OFPP_ANY}}, 8, []string{"OFPST_PORT_DESC request", "port=ANY"}},
		// Meters.
		{"meter request 1.3", OFP13, &Multipart{Type: OFPMP_METER, Object: &ObjectRequest{ID: OFPM_ALL}}, 8, []string{"OFPST_METER request", "meter=all"}},
		{"meter config request 1.5", OFP15, &Multipart{Type: OFPMP_METER_CONFIG, Object: &ObjectRequest{ID: 1}}, 8, []string{"OFPST_METER_CONFIG request", "meter=1"}},
		{"meter reply 1.3", OFP13, &Multipart{Reply: true, Type: OFPMP_METER, Meters: meters}, 56,
			[]string{"meter:1 flow_count:2 packet_in_count:3 byte_in_count:4 duration:5.000000006s bands:", "0: packet_count:7 byte_count:8"}},
		{"meter reply 1.5", OFP15, &Multipart{Reply: true, Type: OFPMP_METER, Meters: meters}, 56, []string{"meter:1 flow_count:2"}},
		{"meter config reply 1.3", OFP13, &Multipart{Reply: true, Type: OFPMP_METER_CONFIG, MeterConfigs: meterCfg}, 24, []string{"meter=1 pktps stats bands=", "type=drop rate=100"}},
		{"meter config reply 1.5", OFP15, &Multipart{Reply: true, Type: OFPMP_METER_CONFIG, MeterConfigs: meterCfg}, 24, []string{"meter=1 pktps stats bands="}},
		{"meter features reply 1.3", OFP13, &Multipart{Reply: true, Type: OFPMP_METER_FEATURES, MeterFeatures: &MeterFeatures{MaxMeter: 200000, BandTypes: 1 << OFPMBT_DROP, Capabilities: 0xf, MaxBands: 1, MaxColor: 0}}, 16,
			[]string{"max_meter:200000 max_bands:1 max_color:0", "band_types: drop", "capabilities: kbps pktps burst stats"}},
		{"meter features reply 1.5", OFP15, &Multipart{Reply: true, Type: OFPMP_METER_FEATURES, MeterFeatures: &MeterFeatures{MaxMeter: 5, BandTypes: 1 << OFPMBT_DROP, Capabilities: 0x3, MaxBands: 2, MaxColor: 1}}, 16,
			[]string{"max_meter:5 max_bands:2 max_color:1"}},
		// Plain OF1.0 flow stats.
		{"flow reply 1.0", OFP10, &Multipart{Reply: true, Type: OFPMP_FLOW, Flows: flows10}, 88 + 8,
			[]string{"cookie=0x1234, duration=2", "table=0, n_packets=5, n_bytes=300", "priority=100,arp actions=NORMAL"}},
		{"flow reply 1.0 empty", OFP10, &Multipart{Reply: true, Type: OFPMP_FLOW, Flows: []FlowStats{}}, 0, []string{"OFPST_FLOW reply"}},
	}
}

func with2[T any](x T, f func(*T)) T { f(&x); return x }

// multipartBody returns the body after the multipart header of an encoded
// message.
func multipartBody(t *testing.T, v uint8, m *Multipart, msg []byte) []byte {
	t.Helper()
	n := HeaderLen + 8
	if v == OFP10 {
		n = HeaderLen + 4
	}
	if m.Type == OFPMP_EXPERIMENTER {
		n += 8
		if v == OFP10 {
			n += 4
		}
	}
	return msg[n:]
}

// TestStatsMultipartRoundTrip encodes every typed body in every version,
// checks the layout size, decodes it back into the same typed value and
// re-encodes identically.
func TestStatsMultipartRoundTrip(t *testing.T) {
	for _, tc := range statsCases() {
		t.Run(tc.name, func(t *testing.T) {
			b, err := EncodeMessage(nil, tc.v, 7, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(multipartBody(t, tc.v, tc.m, b)); got != tc.bodyLen {
				t.Fatalf("body %d bytes, want %d", got, tc.bodyLen)
			}
			h, body, _, err := SplitMessage(b)
			if err != nil {
				t.Fatal(err)
			}
			msg, err := DecodeMessage(h, body)
			if err != nil {
				t.Fatalf("decode %x: %v", b, err)
			}
			got := msg.(*Multipart)
			want := *tc.m
			normalizeDecoded(&want, got)
			if !reflect.DeepEqual(got, &want) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", got, &want)
			}
			again, err := EncodeMessage(nil, tc.v, 7, got)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("re-encode differs: %v\n got %x\nwant %x", err, again, b)
			}
		})
	}
}

// normalizeDecoded copies into want what decoding legitimately adds: the
// synthesized 1.5 properties / OXS fields, and empty Body for bodiless
// requests.
func normalizeDecoded(want, got *Multipart) {
	if want.PortStats != nil && got.PortStats != nil && len(want.PortStats) == len(got.PortStats) {
		ps := append([]PortStats(nil), want.PortStats...)
		for i := range ps {
			if ps[i].Props == nil {
				ps[i].Props = got.PortStats[i].Props
			}
		}
		want.PortStats = ps
	}
	if want.Aggregate != nil && want.Aggregate.Stats == nil && got.Aggregate != nil {
		a := *want.Aggregate
		a.Stats = got.Aggregate.Stats
		want.Aggregate = &a
	}
	if want.Body == nil && got.Body != nil && len(got.Body) == 0 {
		want.Body = got.Body
	}
	if want.FlowRequest != nil && got.FlowRequest != nil && want.FlowRequest.Match == nil {
		want.FlowRequest.Match = got.FlowRequest.Match
	}
}

// TestStatsOVSPrint has Open vSwitch's own parser (ovs-ofctl ofp-print,
// package openvswitch-common) decode every encoding and checks the values
// it prints.
func TestStatsOVSPrint(t *testing.T) {
	ofctl, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		t.Fatalf("ovs-ofctl is required (apt-get install openvswitch-common): %v", err)
	}
	for _, tc := range statsCases() {
		if len(tc.print) == 0 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			b, err := EncodeMessage(nil, tc.v, 7, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(ofctl, "ofp-print", hex.EncodeToString(b)).CombinedOutput()
			text := string(out)
			if err != nil || strings.Contains(text, "***") {
				t.Fatalf("ovs-ofctl rejects %x: %v\n%s", b, err, text)
			}
			for _, want := range tc.print {
				if !strings.Contains(text, want) {
					t.Errorf("ofp-print output lacks %q:\n%s", want, text)
				}
			}
		})
	}
}

func TestStatsDecodeErrors(t *testing.T) {
	mp := func(v uint8, reply bool, typ uint16, body ...byte) (Header, []byte) {
		b := []byte{byte(typ >> 8), byte(typ), 0, 0}
		if v != OFP10 {
			b = append(b, 0, 0, 0, 0)
		}
		b = append(b, body...)
		ht := OFPT_MULTIPART_REQUEST
		switch {
		case v == OFP10 && reply:
			ht = OFPT10_STATS_REPLY
		case v == OFP10:
			ht = OFPT10_STATS_REQUEST
		case reply:
			ht = OFPT_MULTIPART_REPLY
		}
		return Header{Version: v, Type: ht, Length: uint16(HeaderLen + len(b))}, b
	}
	ps14 := make([]byte, 80)
	ps14[1] = 88 // length beyond the body
	ps14eth := append(make([]byte, 80), 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0)
	ps14eth[1] = 92
	gs := make([]byte, 48)
	gs[1] = 48 // 8 bytes of bucket counters: not a whole counter
	ms := make([]byte, 40)
	ms[5] = 30
	mc := []byte{0, 20, 0, 1, 0, 0, 0, 1, 0, 1, 0, 12, 0, 0, 0, 1, 0, 0, 0, 0}
	mc[11] = 4                                                     // band length below 12
	oxs := []byte{0, 0, 0, 12, 0x80, 0x02, 0x08, 0x08, 0, 0, 0, 0} // packet count with 4 value bytes, want 8
	tests := []struct {
		name string
		v    uint8
		rep  bool
		typ  uint16
		body []byte
		want ErrorCode
	}{
		{"table stats 1.0 not a multiple of 64", OFP10, true, OFPMP_TABLE, make([]byte, 65), OFPBRC_BAD_LEN},
		{"table stats 1.3 not a multiple of 24", OFP13, true, OFPMP_TABLE, make([]byte, 23), OFPBRC_BAD_LEN},
		{"port stats 1.0 short", OFP10, true, OFPMP_PORT_STATS, make([]byte, 103), OFPBRC_BAD_LEN},
		{"port stats 1.3 short", OFP13, true, OFPMP_PORT_STATS, make([]byte, 104), OFPBRC_BAD_LEN},
		{"port stats 1.5 truncated", OFP15, true, OFPMP_PORT_STATS, make([]byte, 79), OFPBRC_BAD_LEN},
		{"port stats 1.5 length overruns", OFP15, true, OFPMP_PORT_STATS, ps14, OFPBRC_BAD_LEN},
		{"port stats 1.5 short ethernet prop", OFP15, true, OFPMP_PORT_STATS, ps14eth, OFPBPC_BAD_LEN},
		{"port stats request 1.3 short", OFP13, false, OFPMP_PORT_STATS, make([]byte, 4), OFPBRC_BAD_LEN},
		{"port stats request 1.0 long", OFP10, false, OFPMP_PORT_STATS, make([]byte, 9), OFPBRC_BAD_LEN},
		{"queue stats 1.3 short", OFP13, true, OFPMP_QUEUE, make([]byte, 39), OFPBRC_BAD_LEN},
		{"aggregate 1.3 short", OFP13, true, OFPMP_AGGREGATE, make([]byte, 16), OFPBRC_BAD_LEN},
		{"aggregate 1.5 bad OXS width", OFP15, true, OFPMP_AGGREGATE, append(oxs, 0, 0, 0, 0), OFPBMC_BAD_LEN},
		{"aggregate 1.5 stats overrun", OFP15, true, OFPMP_AGGREGATE, []byte{0, 0, 0, 40, 0, 0, 0, 0}, OFPBMC_BAD_LEN},
		{"group stats partial bucket", OFP13, true, OFPMP_GROUP, gs, OFPBRC_BAD_LEN},
		{"group features short", OFP13, true, OFPMP_GROUP_FEATURES, make([]byte, 36), OFPBRC_BAD_LEN},
		{"meter stats length below 40", OFP13, true, OFPMP_METER, ms, OFPBRC_BAD_LEN},
		{"meter config bad band", OFP13, true, OFPMP_METER_CONFIG, mc, OFPMMFC_BAD_BAND},
		{"meter features long", OFP15, true, OFPMP_METER_FEATURES, make([]byte, 24), OFPBRC_BAD_LEN},
		{"flow stats 1.0 entry short", OFP10, true, OFPMP_FLOW, append([]byte{0, 80}, make([]byte, 78)...), OFPBRC_BAD_LEN},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, body := mp(tc.v, tc.rep, tc.typ, tc.body...)
			_, err := DecodeMessage(h, body)
			if !errors.Is(err, NewError(tc.v, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// captureMultiparts decodes the multipart messages of one capture
// (messages that do not decode are TestCaptures' business: the captures
// hold requests OVS rejected).
func captureMultiparts(t *testing.T, name string) []*Multipart {
	t.Helper()
	var out []*Multipart
	for _, m := range readCapture(t, filepath.Join(capturesDir, name)) {
		msg, err := DecodeMessage(m.h, m.raw[8:])
		if err != nil {
			continue
		}
		if mp, ok := msg.(*Multipart); ok {
			out = append(out, mp)
		}
	}
	return out
}

// TestCaptureStatsTyped checks typed fields of the stats exchanges
// ovs-ofctl and ofnet had with OVS 3.1 against what ovs-ofctl printed
// (captures/*.cmd.txt).
func TestCaptureStatsTyped(t *testing.T) {
	t.Run("dump-ports 1.3", func(t *testing.T) {
		mps := captureMultiparts(t, "t1_16_dump_ports.pcap.gz")
		req, rep := mps[0], mps[1]
		if req.Object == nil || req.Object.ID != OFPP_ANY {
			t.Fatalf("request %+v, want port OFPP_ANY", req.Object)
		}
		if len(rep.PortStats) != 11 {
			t.Fatalf("%d ports, want 11", len(rep.PortStats))
		}
		local := rep.PortStats[0]
		if local.PortNo != OFPP_LOCAL || local.RxDropped != 0 || local.DurationSec != 31 || local.DurationNsec/1000000 != 884 {
			t.Errorf("LOCAL stats %+v", local)
		}
		p10 := rep.PortStats[1] // "drop=?" is all ones
		if p10.PortNo != 10 || p10.RxDropped != ^uint64(0) || p10.Collisions != ^uint64(0) || p10.RxPackets != 0 {
			t.Errorf("port 10 stats %+v", p10)
		}
	})
	t.Run("dump-tables 1.3", func(t *testing.T) {
		rep := captureMultiparts(t, "t1_18_dump_tables.pcap.gz")[1]
		if len(rep.Tables) != DefaultNumTables {
			t.Fatalf("%d tables, want %d", len(rep.Tables), DefaultNumTables)
		}
		want := map[uint8]uint32{0: 9, 1: 0, 10: 16, 20: 3, 23: 2, 31: 6, 50: 17, 70: 20}
		for id, active := range want {
			if ts := rep.Tables[id]; ts.TableID != id || ts.ActiveCount != active {
				t.Errorf("table %d: %+v, want active=%d", id, ts, active)
			}
		}
	})
	t.Run("OF1.0 table stats", func(t *testing.T) {
		var rep *Multipart
		for _, m := range captureMultiparts(t, "t1_30_of10_add_flow.pcap.gz") {
			if m.Reply && m.Type == OFPMP_TABLE {
				rep = m
			}
		}
		if rep == nil || len(rep.Tables) != DefaultNumTables {
			t.Fatalf("no 254-table OFPST_TABLE reply: %+v", rep)
		}
		// OVS 3.1 leaves unnamed tables' names empty and advertises all
		// 22 OFPFW10 wildcard bits.
		for _, id := range []uint8{0, 5, 253} {
			if ts := rep.Tables[id]; ts.TableID != id || ts.NameString() != "" || ts.MaxEntries != 1000000 || ts.Wildcards != OFPFW10_ALL {
				t.Errorf("table %d: %+v", id, ts)
			}
		}
	})
	t.Run("dump-aggregate 1.3", func(t *testing.T) {
		mps := captureMultiparts(t, "t1_15_dump_aggregate.pcap.gz")
		if r := mps[0].FlowRequest; r == nil || r.TableID != OFPTT_ALL {
			t.Fatalf("request %+v", r)
		}
		if a := mps[1].Aggregate; a == nil || a.PacketCount != 0 || a.ByteCount != 0 || a.FlowCount != 150 || a.Stats != nil {
			t.Fatalf("aggregate %+v, want flow_count=150", a)
		}
	})
	t.Run("dump-group-stats 1.3", func(t *testing.T) {
		var req, rep *Multipart
		for _, m := range captureMultiparts(t, "t1_24_dump_group_stats.pcap.gz") {
			if m.Type == OFPMP_GROUP {
				if m.Reply {
					rep = m
				} else {
					req = m
				}
			}
		}
		if req == nil || req.Object == nil || req.Object.ID != OFPG_ALL {
			t.Fatalf("request %+v", req)
		}
		if rep == nil || len(rep.Groups) != 2 {
			t.Fatalf("reply %+v", rep)
		}
		g := rep.Groups[0]
		if g.GroupID != 5 || g.RefCount != 1 || g.DurationSec != 40 || g.DurationNsec/1000000 != 231 || len(g.Buckets) != 3 {
			t.Errorf("group 5: %+v", g)
		}
		if g := rep.Groups[1]; g.GroupID != 6 || g.RefCount != 0 || len(g.Buckets) != 3 {
			t.Errorf("group 6: %+v", g)
		}
	})
	t.Run("dump-group-features 1.3", func(t *testing.T) {
		gf := captureMultiparts(t, "t1_25_dump_group_features.pcap.gz")[1].GroupFeatures
		if gf == nil || gf.Types != 0xf || gf.Capabilities != 0x7 || gf.MaxGroups != [4]uint32{0xffffff00, 0xffffff00, 0xffffff00, 0xffffff00} {
			t.Fatalf("group features %+v", gf)
		}
		if gf.Actions[0]&(1<<OFPAT_OUTPUT) == 0 || gf.Actions[0]&(1<<OFPAT_GROUP) == 0 || gf.Actions[0] != gf.Actions[3] {
			t.Errorf("actions %#x", gf.Actions)
		}
	})
	t.Run("ofnet meter stats 1.5", func(t *testing.T) {
		var req, rep *Multipart
		for _, m := range captureMultiparts(t, "t2_ofnet_connect.pcap.gz") {
			if m.Type == OFPMP_METER {
				if m.Reply {
					rep = m
				} else {
					req = m
				}
			}
		}
		if req == nil || req.Object == nil || rep == nil || len(rep.Meters) != 1 {
			t.Fatalf("meter exchange: %+v / %+v", req, rep)
		}
		// ofnet asks for all meters; OVS has meter 1 with one drop band.
		if req.Object.ID != OFPM_ALL {
			t.Errorf("request for meter %#x, want OFPM_ALL", req.Object.ID)
		}
		if ms := rep.Meters[0]; ms.MeterID != 1 || len(ms.Bands) != 1 || ms.FlowCount != 0 {
			t.Errorf("meter stats %+v", ms)
		}
	})
}

// TestCapturesStatsTypedEverywhere checks that no stats multipart of any
// capture is left as raw bytes any more (only bodiless requests and the
// ONF flow monitor keep Body).
func TestCapturesStatsTypedEverywhere(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(capturesDir, "*.pcap.gz"))
	n := 0
	for _, f := range files {
		for _, m := range captureMultiparts(t, filepath.Base(f)) {
			if m.Body == nil {
				n++
				continue
			}
			if len(m.Body) == 0 || (m.Type == OFPMP_EXPERIMENTER && m.Experimenter == ONF_VENDOR_ID) {
				continue
			}
			t.Errorf("%s: multipart type %d reply=%v left untyped (%d bytes)", filepath.Base(f), m.Type, m.Reply, len(m.Body))
		}
	}
	if n < 200 {
		t.Fatalf("only %d typed multiparts in the captures", n)
	}
}

func FuzzDecodeMultipart(f *testing.F) {
	for _, tc := range statsCases() {
		if b, err := EncodeMessage(nil, tc.v, 1, tc.m); err == nil {
			f.Add(b)
		}
	}
	for _, m := range seedMessages(&testing.T{}) {
		if t := m[1]; t == OFPT_MULTIPART_REQUEST || t == OFPT_MULTIPART_REPLY || t == OFPT10_STATS_REQUEST || t == OFPT10_STATS_REPLY {
			f.Add(m)
		}
	}
	t1 := DefaultTableFeatures(1, "t", OFP13)
	t1.Props = t1.Props[:3]
	for _, v := range []uint8{OFP13, OFP15} {
		b, _ := EncodeMessage(nil, v, 1, &Multipart{Reply: true, Type: OFPMP_TABLE_FEATURES, TableFeatures: []TableFeatures{t1}})
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, body, _, err := SplitMessage(data)
		if err != nil {
			return
		}
		m, err := DecodeMessage(h, body)
		if err != nil {
			var oe *OFPError
			if !errors.As(err, &oe) {
				t.Fatalf("error without an OFPError: %v", err)
			}
			return
		}
		enc, err := EncodeMessage(nil, h.Version, h.Xid, m)
		if err != nil {
			return
		}
		h2, body2, _, err := SplitMessage(enc)
		if err != nil {
			t.Fatalf("re-encoded message does not split: %v", err)
		}
		m2, err := DecodeMessage(h2, body2)
		if err != nil {
			t.Fatalf("re-encoded message does not decode: %v\n%x", err, enc)
		}
		enc2, err := EncodeMessage(nil, h.Version, h.Xid, m2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %v\n%x\n%x", err, enc, enc2)
		}
	})
}

func TestTableNameBytes(t *testing.T) {
	long := strings.Repeat("x", 40)
	for _, tc := range []struct{ in, want string }{{"", ""}, {"classifier", "classifier"}, {long, long[:31]}} {
		b := TableNameBytes(tc.in)
		ts := TableStats{Name: b}
		if got := ts.NameString(); got != tc.want || b[31] != 0 {
			t.Errorf("TableNameBytes(%q) -> %q (last byte %d), want %q", tc.in, got, b[31], tc.want)
		}
	}
}
