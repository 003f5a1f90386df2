package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tableFeaturesExchange is one multi-part TABLE_FEATURES request or reply
// sequence of a capture: the raw messages and the decoded tables.
type tableFeaturesExchange struct {
	raws   [][]byte
	parts  []*Multipart
	tables []TableFeatures
}

// captureTableFeatures groups the TABLE_FEATURES messages of a capture by
// direction, xid and request/reply, in capture order.
func captureTableFeatures(t *testing.T, name string) map[string]*tableFeaturesExchange {
	t.Helper()
	out := map[string]*tableFeaturesExchange{}
	for i, m := range readCapture(t, filepath.Join(capturesDir, name)) {
		msg, err := DecodeMessage(m.h, m.raw[8:])
		if err != nil {
			continue
		}
		mp, ok := msg.(*Multipart)
		if !ok || mp.Type != OFPMP_TABLE_FEATURES || (!mp.Reply && mp.TableFeatures == nil) {
			continue
		}
		if mp.TableFeatures == nil {
			t.Fatalf("%s msg %d: non-empty table features left untyped", name, i)
		}
		key := fmt.Sprintf("%s/reply=%v/xid=%d", m.conn, mp.Reply, m.h.Xid)
		x := out[key]
		if x == nil {
			x = &tableFeaturesExchange{}
			out[key] = x
		}
		x.raws = append(x.raws, m.raw)
		x.parts = append(x.parts, mp)
		x.tables = append(x.tables, mp.TableFeatures...)
	}
	return out
}

// checkWholePipeline checks a complete 254-table sequence: tables 0..253
// in order, OFPMPF_(REQ|REPLY)_MORE on all parts but the last.
func checkWholePipeline(t *testing.T, key string, x *tableFeaturesExchange) {
	t.Helper()
	if len(x.tables) != DefaultNumTables || len(x.parts) != 20 {
		t.Fatalf("%s: %d tables in %d parts, want %d in 20", key, len(x.tables), len(x.parts), DefaultNumTables)
	}
	for i := range x.tables {
		if x.tables[i].TableID != uint8(i) {
			t.Fatalf("%s: table %d has id %d", key, i, x.tables[i].TableID)
		}
	}
	for i, p := range x.parts {
		if more := p.Flags&OFPMPF_REPLY_MORE != 0; more != (i < len(x.parts)-1) {
			t.Errorf("%s: part %d flags %#x", key, i, p.Flags)
		}
	}
}

// TestTableFeaturesCaptures: the 20-part replies of OVS and the 20-part
// set requests of ofnet decode into 254 typed tables, and splitting those
// tables with TableFeaturesReplies reproduces OVS's replies byte for byte.
func TestTableFeaturesCaptures(t *testing.T) {
	for _, tc := range []struct {
		file      string
		v         uint8
		exchanges int
	}{
		{"t1_19_dump_table_features.pcap.gz", OFP13, 1},
		{"t1_24_dump_group_stats.pcap.gz", OFP13, 1},
		{"t2_ofnet_connect.pcap.gz", OFP15, 3}, // get reply, set request, its reply
		{"t2_ofnet_listen.pcap.gz", OFP15, 3},
	} {
		t.Run(tc.file, func(t *testing.T) {
			xs := captureTableFeatures(t, tc.file)
			whole := 0
			for key, x := range xs {
				if len(x.tables) != DefaultNumTables {
					continue
				}
				whole++
				checkWholePipeline(t, key, x)
				if !x.parts[0].Reply {
					continue
				}
				xid := be32(x.raws[0][4:])
				replies, err := TableFeaturesReplies(tc.v, x.tables, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(replies) != len(x.raws) {
					t.Fatalf("%s: split into %d replies, OVS sent %d", key, len(replies), len(x.raws))
				}
				for i, r := range replies {
					b, err := EncodeMessage(nil, tc.v, xid, r)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(b, x.raws[i]) {
						t.Fatalf("%s: reply %d differs from OVS's (%d vs %d bytes)", key, i, len(b), len(x.raws[i]))
					}
				}
			}
			if whole < tc.exchanges {
				t.Fatalf("%d complete 254-table exchanges, want %d", whole, tc.exchanges)
			}
		})
	}
}

// TestOfnetTableFeaturesSet checks the content of ofnet's set request
// (Antrea's table names) and that OVS's answer echoes it.
func TestOfnetTableFeaturesSet(t *testing.T) {
	xs := captureTableFeatures(t, "t2_ofnet_connect.pcap.gz")
	var set *tableFeaturesExchange
	for _, x := range xs {
		if !x.parts[0].Reply && len(x.tables) == DefaultNumTables {
			set = x
		}
	}
	if set == nil {
		t.Fatal("no 254-table set request")
	}
	xid := be32(set.raws[0][4:])
	for i, raw := range set.raws {
		if be32(raw[4:]) != xid {
			t.Fatalf("part %d has xid %#x, part 0 %#x", i, be32(raw[4:]), xid)
		}
	}
	t0 := set.tables[0]
	if t0.NameString() != "PipelineRootClassifier" || t0.Command != OFPTFC_REPLACE || t0.MaxEntries != 1000000 {
		t.Errorf("table 0: name %q command %d max %d", t0.NameString(), t0.Command, t0.MaxEntries)
	}
	if p := t0.Prop(OFPTFPT_NEXT_TABLES); p == nil || len(p.NextTables) != 253 || p.NextTables[0] != 1 {
		t.Errorf("table 0 next tables %+v", p)
	}
	if p := t0.Prop(OFPTFPT_MATCH); p == nil || len(p.Fields) < 100 {
		t.Errorf("table 0 match property %+v", p)
	}
	// OVS answers the set with the same features (names included).
	var echoed *tableFeaturesExchange
	for _, x := range xs {
		if x.parts[0].Reply && be32(x.raws[0][4:]) == xid {
			echoed = x
		}
	}
	if echoed == nil || !reflect.DeepEqual(echoed.tables, set.tables) {
		t.Fatal("OVS's reply to the set request does not echo the requested features")
	}
}

// fieldKey identifies a field advertised in a table features property
// independently of the code point used for it (fields lookupCode does not
// resolve are keyed by their header).
func fieldKey(h OXMHeader) string {
	name := fmt.Sprintf("%#x/%d/%#x", h.Class, h.Field, h.Experimenter)
	if f, _ := lookupCode(h.Class, h.Field, h.Experimenter); f != nil {
		name = f.Name
	}
	if h.HasMask {
		return name + "/W"
	}
	return name
}

// normalizeTF turns empty slices into nil so that decoded and built
// values compare equal (decoding keeps empty sub-slices of the input).
func normalizeTF(ts []TableFeatures) []TableFeatures {
	out := make([]TableFeatures, len(ts))
	for i, t := range ts {
		props := make([]TableFeatureProp, len(t.Props))
		for j, p := range t.Props {
			ids := make([]TableFeatureID, len(p.IDs))
			for k, id := range p.IDs {
				if len(id.Data) == 0 {
					id.Data = nil
				}
				ids[k] = id
			}
			if len(ids) == 0 {
				ids = nil
			}
			p.IDs = ids
			if len(p.NextTables) == 0 {
				p.NextTables = nil
			}
			if len(p.Fields) == 0 {
				p.Fields = nil
			}
			if len(p.Data) == 0 {
				p.Data = nil
			}
			props[j] = p
		}
		if len(props) == 0 {
			props = nil
		}
		t.Props = props
		out[i] = t
	}
	return out
}

// TestDefaultTableFeaturesLikeOVS compares DefaultTableFeatures with the
// features OVS 3.1 advertised for unnamed tables in 1.3 and 1.5: same
// fixed fields, property order, instructions, actions and next tables;
// every field OVS lists is listed (govs's field table may know more).
func TestDefaultTableFeaturesLikeOVS(t *testing.T) {
	for _, tc := range []struct {
		file string
		v    uint8
	}{{"t1_19_dump_table_features.pcap.gz", OFP13}, {"t2_ofnet_connect.pcap.gz", OFP15}} {
		var ovs []TableFeatures
		for _, x := range captureTableFeatures(t, tc.file) {
			if x.parts[0].Reply && len(x.tables) == DefaultNumTables && x.tables[0].NameString() == "" {
				ovs = x.tables
			}
		}
		if ovs == nil {
			t.Fatalf("%s: no reply for unnamed tables", tc.file)
		}
		for _, id := range []uint8{0, 1, 100, 252, 253} {
			got, want := DefaultTableFeatures(id, "", tc.v), ovs[id]
			if got.TableID != want.TableID || got.Name != want.Name || got.MetadataMatch != want.MetadataMatch ||
				got.MetadataWrite != want.MetadataWrite || got.Capabilities != want.Capabilities || got.MaxEntries != want.MaxEntries {
				t.Errorf("v%d table %d header %+v, OVS %+v", tc.v, id, got, want)
			}
			if len(got.Props) != len(want.Props) {
				t.Fatalf("v%d table %d: %d properties, OVS %d", tc.v, id, len(got.Props), len(want.Props))
			}
			for i := range want.Props {
				g, w := &got.Props[i], &want.Props[i]
				if g.Type != w.Type {
					t.Fatalf("v%d table %d property %d type %d, OVS %d", tc.v, id, i, g.Type, w.Type)
				}
				if gi, wi := normalizeTF([]TableFeatures{{Props: []TableFeatureProp{*g}}}), normalizeTF([]TableFeatures{{Props: []TableFeatureProp{*w}}}); !reflect.DeepEqual(gi[0].Props[0].IDs, wi[0].Props[0].IDs) {
					t.Errorf("v%d table %d property %d ids %v, OVS %v", tc.v, id, g.Type, g.IDs, w.IDs)
				}
				if !bytes.Equal(g.NextTables, w.NextTables) {
					t.Errorf("v%d table %d next tables %v, OVS %v", tc.v, id, g.NextTables, w.NextTables)
				}
				have := map[string]bool{}
				for _, h := range g.Fields {
					have[fieldKey(h)] = true
				}
				for _, h := range w.Fields {
					if k := fieldKey(h); !have[k] {
						t.Errorf("v%d table %d property %d lacks %s", tc.v, id, g.Type, k)
					}
				}
			}
		}
	}
}

// TestDefaultTableFeaturesOVSPrint: a full 254-table pipeline from
// DefaultTableFeatures fits in replies of at most 64 KB that ovs-ofctl
// decodes.
func TestDefaultTableFeaturesOVSPrint(t *testing.T) {
	ofctl, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		t.Fatalf("ovs-ofctl is required (apt-get install openvswitch-common): %v", err)
	}
	for _, v := range []uint8{OFP13, OFP15} {
		tables := make([]TableFeatures, DefaultNumTables)
		for i := range tables {
			tables[i] = DefaultTableFeatures(uint8(i), "", v)
		}
		tables[3].Name = TableNameBytes("govs-ct")
		replies, err := TableFeaturesReplies(v, tables, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(replies) < 15 || len(replies) > 25 {
			t.Errorf("v%d: %d replies", v, len(replies))
		}
		for i, r := range replies {
			b, err := EncodeMessage(nil, v, 9, r)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > MaxMessageLen {
				t.Fatalf("reply %d is %d bytes", i, len(b))
			}
			if i > 0 {
				continue // ovs-ofctl output is long; one message is enough
			}
			out, err := exec.Command(ofctl, "ofp-print", hex.EncodeToString(b)).CombinedOutput()
			text := string(out)
			if err != nil || strings.Contains(text, "***") {
				t.Fatalf("ovs-ofctl rejects reply: %v\n%.2000s", err, text)
			}
			for _, want := range []string{"table 0:", "max_entries=1000000", `table 3 ("govs-ct")`, "instructions (table miss and others):", "next tables: 1-253", "arp_op"} {
				if !strings.Contains(text, want) {
					t.Errorf("v%d ofp-print output lacks %q:\n%.3000s", v, want, text)
				}
			}
		}
	}
}

func TestTableFeaturesRoundTrip(t *testing.T) {
	exp := TableFeatureID{Type: OFPIT_EXPERIMENTER, Data: []byte{0, 0, 0x23, 0x20}}
	regField := HeaderFor(FieldByName("reg0"), nil, OFP15, true, 0)
	ethSrc := HeaderFor(FieldByName("eth_src"), nil, OFP15, false, 0)
	full := TableFeatures{TableID: 7, Command: OFPTFC_MODIFY, Features: 1, Name: TableNameBytes("t7"), MetadataMatch: 0xff, MetadataWrite: 0xf0,
		Capabilities: OFPTC_EVICTION, MaxEntries: 42, Props: []TableFeatureProp{
			{Type: OFPTFPT_INSTRUCTIONS, IDs: []TableFeatureID{{Type: OFPIT_GOTO_TABLE}, exp}},
			{Type: OFPTFPT_NEXT_TABLES, NextTables: []uint8{8, 9, 10}},
			{Type: OFPTFPT_APPLY_ACTIONS_MISS, IDs: []TableFeatureID{{Type: OFPAT_OUTPUT}}},
			{Type: OFPTFPT_MATCH, Fields: []OXMHeader{regField, ethSrc}},
			{Type: OFPTFPT_TABLE_SYNC_FROM, NextTables: []uint8{1}},
			{Type: OFPTFPT_APPLY_COPYFIELD, Fields: []OXMHeader{ethSrc}},
			{Type: OFPTFPT_EXPERIMENTER, Data: []byte{0, 0, 0x23, 0x20, 0, 0, 0, 1, 9}},
		}}
	for _, v := range []uint8{OFP13, OFP15} {
		for _, m := range []*Multipart{
			{Type: OFPMP_TABLE_FEATURES, Flags: OFPMPF_REQ_MORE, TableFeatures: []TableFeatures{full, DefaultTableFeatures(0, "x", v)}},
			{Reply: true, Type: OFPMP_TABLE_FEATURES, TableFeatures: []TableFeatures{full}},
			{Reply: true, Type: OFPMP_TABLE_FEATURES, TableFeatures: []TableFeatures{{TableID: 1}}}, // no properties
		} {
			b, err := EncodeMessage(nil, v, 3, m)
			if err != nil {
				t.Fatal(err)
			}
			h, body, _, _ := SplitMessage(b)
			msg, err := DecodeMessage(h, body)
			if err != nil {
				t.Fatalf("v%d: %v", v, err)
			}
			got := msg.(*Multipart)
			want := append([]TableFeatures(nil), m.TableFeatures...)
			if v < OFP15 {
				for i := range want {
					want[i].Command = 0 // no command byte before 1.5
				}
			}
			if !reflect.DeepEqual(normalizeTF(got.TableFeatures), normalizeTF(want)) {
				t.Fatalf("v%d decoded\n%+v\nwant\n%+v", v, got.TableFeatures, want)
			}
			if got.Flags != m.Flags || got.Reply != m.Reply {
				t.Fatalf("v%d flags %#x reply %v", v, got.Flags, got.Reply)
			}
			again, _ := EncodeMessage(nil, v, 3, got)
			if !bytes.Equal(again, b) {
				t.Fatalf("v%d re-encode differs", v)
			}
			for off := HeaderLen + 8; off < len(b); {
				n := int(be16(b[off:]))
				if n%8 != 0 {
					t.Fatalf("table features record of %d bytes is not padded to 8", n)
				}
				off += n
			}
		}
	}
	// An empty request is the "get" form: no typed body.
	b, _ := EncodeMessage(nil, OFP15, 1, &Multipart{Type: OFPMP_TABLE_FEATURES})
	h, body, _, _ := SplitMessage(b)
	msg, err := DecodeMessage(h, body)
	if err != nil || len(b) != 16 {
		t.Fatalf("get request: %v (%d bytes)", err, len(b))
	}
	if mp := msg.(*Multipart); mp.TableFeatures != nil || len(mp.Body) != 0 {
		t.Fatalf("get request decoded as %+v", mp)
	}
}

func TestTableFeaturesErrors(t *testing.T) {
	valid, _ := AppendTableFeatures(nil, OFP15, &TableFeatures{TableID: 1})
	withProp := func(prop ...byte) []byte {
		b := append(append([]byte(nil), valid...), prop...)
		b = pad8(b, 0)
		b[0], b[1] = byte(len(b)>>8), byte(len(b))
		return b
	}
	mut := func(f func(b []byte)) []byte {
		b := append([]byte(nil), valid...)
		f(b)
		return b
	}
	tests := []struct {
		name string
		v    uint8
		body []byte
		want ErrorCode
	}{
		{"truncated", OFP13, valid[:40], OFPBPC_BAD_LEN},
		{"length not multiple of 8", OFP13, mut(func(b []byte) { b[1] = 60 }), OFPBPC_BAD_LEN},
		{"length beyond body", OFP13, mut(func(b []byte) { b[1] = 72 }), OFPBPC_BAD_LEN},
		{"table 255", OFP13, mut(func(b []byte) { b[2] = 255 }), OFPTFFC_BAD_TABLE},
		{"bad 1.5 command", OFP15, mut(func(b []byte) { b[3] = 4 }), OFPTFFC_BAD_COMMAND},
		{"property length below 4", OFP13, withProp(0, 2, 0, 2), OFPBPC_BAD_LEN},
		{"property overruns", OFP13, withProp(0, 2, 0, 12, 1, 2, 3, 4), OFPBPC_BAD_LEN},
		{"next table 255", OFP13, withProp(0, 2, 0, 6, 1, 255), OFPBPC_BAD_VALUE},
		{"instruction id length 2", OFP13, withProp(0, 0, 0, 8, 0, 1, 0, 2), OFPBPC_BAD_LEN},
		{"action id overruns", OFP15, withProp(0, 6, 0, 8, 0, 0, 0, 8), OFPBPC_BAD_LEN},
		{"oxm header truncated", OFP13, withProp(0, 8, 0, 6, 0x80, 0), OFPBMC_BAD_LEN},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeTableFeaturesList(tc.v, tc.body)
			if !errors.Is(err, NewError(tc.v, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			// The same through the message decoder, as a set request.
			m := append([]byte{0, byte(OFPMP_TABLE_FEATURES), 0, 0, 0, 0, 0, 0}, tc.body...)
			h := Header{Version: tc.v, Type: OFPT_MULTIPART_REQUEST, Length: uint16(HeaderLen + len(m))}
			if _, err := DecodeMessage(h, m); !errors.Is(err, NewError(tc.v, tc.want)) {
				t.Fatalf("message err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestTableFeaturesReplies(t *testing.T) {
	tables := []TableFeatures{{TableID: 0}, {TableID: 1}, {TableID: 2}, {TableID: 3}, {TableID: 4}}
	// Each bare record is 64 bytes; 16 header bytes + 2 records = 144.
	replies, err := TableFeaturesReplies(OFP13, tables, 144)
	if err != nil {
		t.Fatal(err)
	}
	var ids [][]uint8
	for _, r := range replies {
		var part []uint8
		for _, tf := range r.TableFeatures {
			part = append(part, tf.TableID)
		}
		ids = append(ids, part)
		b, _ := EncodeMessage(nil, OFP13, 1, r)
		if len(b) > 144 {
			t.Errorf("reply of %d bytes", len(b))
		}
	}
	if want := [][]uint8{{0, 1}, {2, 3}, {4}}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("split %v, want %v", ids, want)
	}
	for i, r := range replies {
		if more := r.Flags&OFPMPF_REPLY_MORE != 0; more != (i < 2) || !r.Reply || r.Type != OFPMP_TABLE_FEATURES {
			t.Errorf("reply %d: %+v", i, r)
		}
	}
	// No tables: one empty final reply.
	replies, err = TableFeaturesReplies(OFP15, nil, 0)
	if err != nil || len(replies) != 1 || replies[0].Flags != 0 || len(replies[0].TableFeatures) != 0 {
		t.Fatalf("empty: %v %+v", err, replies)
	}
	// A record that cannot fit at all is an error, not a silent drop.
	if _, err := TableFeaturesReplies(OFP13, tables, 64); !errors.Is(err, errTooLong) {
		t.Fatalf("oversized record: err = %v", err)
	}
}

func BenchmarkTableFeaturesReplies(b *testing.B) {
	tables := make([]TableFeatures, DefaultNumTables)
	for i := range tables {
		tables[i] = DefaultTableFeatures(uint8(i), "", OFP15)
	}
	buf := make([]byte, 0, MaxMessageLen)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		replies, err := TableFeaturesReplies(OFP15, tables, 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range replies {
			if buf, err = EncodeMessage(buf[:0], OFP15, 1, r); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkEncodePortStats(b *testing.B) {
	ports := make([]PortStats, 32)
	for i := range ports {
		ports[i] = portStatsSample(uint32(i + 1))
	}
	m := &Multipart{Reply: true, Type: OFPMP_PORT_STATS, PortStats: ports}
	buf := make([]byte, 0, MaxMessageLen)
	for _, v := range []uint8{OFP10, OFP13} {
		b.Run(map[uint8]string{OFP10: "of10", OFP13: "of13"}[v], func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var err error
				if buf, err = EncodeMessage(buf[:0], v, 1, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDefaultTablesFeatures: the shared-list tables of one reply are
// exactly each table's DefaultTableFeatures, in every version, and cost a
// small part of what 254 separate calls allocate.
func TestDefaultTablesFeatures(t *testing.T) {
	names := map[uint8]string{0: "classifier", 7: "Conntrack", 253: "last"}
	for _, v := range []uint8{OFP13, OFP14, OFP15} {
		tables := DefaultTablesFeatures(names, v)
		if len(tables) != DefaultNumTables {
			t.Fatalf("v%d: %d tables", v, len(tables))
		}
		for id := range tables {
			if want := DefaultTableFeatures(uint8(id), names[uint8(id)], v); !reflect.DeepEqual(tables[id], want) {
				t.Fatalf("v%d table %d:\n%+v\nwant\n%+v", v, id, tables[id], want)
			}
		}
	}
	shared := testing.AllocsPerRun(3, func() { DefaultTablesFeatures(names, OFP15) })
	separate := testing.AllocsPerRun(3, func() {
		for id := 0; id < DefaultNumTables; id++ {
			DefaultTableFeatures(uint8(id), names[uint8(id)], OFP15)
		}
	})
	if shared*10 > separate {
		t.Errorf("%.0f allocations for the shared tables, %.0f separately", shared, separate)
	}
}
