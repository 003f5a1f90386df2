package ofpact_test

import (
	"encoding/hex"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpact"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

// sample is one action in flow text with how it prints per version ("" =
// same as text) and, when the wire changes its form, how it prints after
// a trip through the wire (`ovs-ofctl -O <version> parse-flows` of Open
// vSwitch 3.1 prints the same, checked by hand; the differential tests
// against real OVS are the seed goldens of internal/ovstest).
type sample struct {
	text             string
	of10, of13, of15 string
	wire             string // printed after the wire in 1.3 and 1.5, if not as before
	wirePad          string // printed after the wire in every version, if not as before
	match            string // match fields the action's prerequisites need
	skip10           bool   // 1.0 printing differs from OVS's (vlan legacy actions), not checked
}

// samples cover every keyword of the registry (TestEveryKeywordSampled).
var samples = []sample{
	{text: "output:3"},
	{text: "output:NXM_NX_REG1[]"},
	{text: "output:NXM_NX_REG1[0..15]"},
	{text: "LOCAL"},
	{text: "3", of10: "output:3", of13: "output:3", of15: "output:3"},
	{text: "CONTROLLER:65535"},
	{text: "controller(reason=no_match,max_len=128,id=3)"},
	{text: "controller(userdata=01.02,pause)"},
	// meter_id: the NXAC2PT_METER_ID property; 0 is NX_CTLR_NO_METER.
	{text: "controller(pause,meter_id=5)"},
	{text: "controller(reason=invalid_ttl,max_len=90,id=2,userdata=0a,meter_id=4294967295)"},
	{text: "controller(meter_id=0)", of10: "CONTROLLER:65535", of13: "CONTROLLER:65535", of15: "CONTROLLER:65535"},
	{text: "enqueue:1:2", wire: "set_queue:2,output:1,pop_queue"},
	{text: "set_queue:5"},
	{text: "pop_queue"},
	{text: "resubmit:4"},
	{text: "resubmit(,10)"},
	{text: "resubmit(3,10,ct)"},
	{text: "goto_table:5", of10: "resubmit(,5)"},
	{text: "write_metadata:0x10/0xff"},
	{text: "clear_actions"},
	{text: "write_actions(output:3)"},
	{text: "meter:2"},
	{text: "set_field:10.0.0.1->ip_dst", of10: "mod_nw_dst:10.0.0.1", match: "ip"},
	{text: "load:0x5->NXM_NX_REG0[0..3]", of15: "set_field:0x5/0xf->reg0"},
	{text: "set_field:0x1/0x1->reg2", of13: "load:0x1->NXM_NX_REG2[0]", of10: "load:0x1->NXM_NX_REG2[0]"},
	{text: "mod_dl_src:00:11:22:33:44:55", of13: "set_field:00:11:22:33:44:55->eth_src", of15: "set_field:00:11:22:33:44:55->eth_src"},
	{text: "mod_dl_dst:00:11:22:33:44:55", of13: "set_field:00:11:22:33:44:55->eth_dst", of15: "set_field:00:11:22:33:44:55->eth_dst"},
	{text: "mod_nw_src:1.2.3.4", of13: "set_field:1.2.3.4->ip_src", of15: "set_field:1.2.3.4->ip_src", match: "ip"},
	{text: "mod_nw_dst:1.2.3.4", of13: "set_field:1.2.3.4->ip_dst", of15: "set_field:1.2.3.4->ip_dst", match: "ip"},
	{text: "mod_nw_tos:16", of13: "set_field:4->ip_dscp", of15: "set_field:4->ip_dscp", match: "ip"},
	{text: "mod_nw_ecn:2", of13: "set_field:2->nw_ecn", of15: "set_field:2->nw_ecn", of10: "load:0x2->NXM_NX_IP_ECN[]", match: "ip"},
	{text: "mod_nw_ttl:9", of13: "set_field:9->nw_ttl", of15: "set_field:9->nw_ttl", of10: "load:0x9->NXM_NX_IP_TTL[]", match: "ip"},
	{text: "mod_tp_src:80", of13: "set_field:80->tcp_src", of15: "set_field:80->tcp_src", match: "tcp"},
	{text: "mod_tp_dst:80", of13: "set_field:80->tcp_dst", of15: "set_field:80->tcp_dst", match: "tcp"},
	{text: "mod_vlan_vid:10", of13: "set_field:4106->vlan_vid", of15: "set_field:4106->vlan_vid", skip10: true},
	{text: "set_vlan_vid:10", of13: "set_field:4106->vlan_vid", of15: "set_field:4106->vlan_vid", skip10: true},
	{text: "mod_vlan_pcp:3", of13: "set_field:3->vlan_pcp", of15: "set_field:3->vlan_pcp", match: "vlan", skip10: true},
	{text: "set_vlan_pcp:3", of13: "set_field:3->vlan_pcp", of15: "set_field:3->vlan_pcp", match: "vlan", skip10: true},
	{text: "move:NXM_NX_REG0[0..3]->NXM_NX_REG1[4..7]"},
	{text: "push_vlan:0x8100"},
	{text: "clone(output:1,set_field:10.0.0.1->ip_dst,output:2)", of10: "clone(output:1,mod_nw_dst:10.0.0.1,output:2)", match: "ip"},
	{text: "push_mpls:0x8847"},
	{text: "copy_ttl_out", match: "mpls", skip10: true}, // 1.1+ only, not in OVS
	{text: "copy_ttl_in", match: "mpls", skip10: true},
	{text: "push_mpls:0x8848", match: "ip"},
	{text: "pop_mpls:0x0800", match: "mpls"},
	{text: "pop_mpls:0x8847", match: "mplsm"},
	{text: "set_mpls_ttl(9)", match: "mpls"},
	{text: "dec_mpls_ttl", match: "mpls"},
	{text: "set_mpls_label(7)", of13: "set_field:7->mpls_label", of15: "set_field:7->mpls_label", match: "mpls"},
	{text: "set_mpls_tc(2)", of13: "set_field:2->mpls_tc", of15: "set_field:2->mpls_tc", match: "mpls"},
	{text: "pop_vlan", of10: "strip_vlan"},
	{text: "strip_vlan", wire: "pop_vlan"},
	{text: "dec_ttl", match: "ip"},
	{text: "dec_ttl(1,2)", match: "ip"},
	{text: "ct(commit,zone=5,exec(load:0x1->NXM_NX_CT_MARK[]))", of15: "ct(commit,zone=5,exec(set_field:0x1->ct_mark))", match: "ip"},
	{text: "ct(table=3,zone=NXM_NX_REG5[0..15],nat)", match: "ip"},
	{text: "ct(commit,exec(set_field:0x10/0x10->ct_mark,move:NXM_NX_REG0[0..3]->NXM_NX_CT_MARK[0..3]))",
		of10: "ct(commit,exec(load:0x1->NXM_NX_CT_MARK[4],move:NXM_NX_REG0[0..3]->NXM_NX_CT_MARK[0..3]))",
		of13: "ct(commit,exec(load:0x1->NXM_NX_CT_MARK[4],move:NXM_NX_REG0[0..3]->NXM_NX_CT_MARK[0..3]))", match: "ip"},
	{text: "ct(commit,exec(move:NXM_NX_XXREG0[]->NXM_NX_CT_LABEL[]))", match: "ip"},
	{text: "ct_clear"},
	{text: "push:NXM_NX_REG0[]"},
	{text: "pop:NXM_NX_REG1[0..15]"},
	{text: "push:NXM_OF_IP_SRC[]", match: "ip"},
	{text: "check_pkt_larger(1500)->NXM_NX_REG0[0]"},
	{text: "check_pkt_larger(100)->NXM_NX_XXREG1[64]"},
	{text: "conjunction(7,1/2)"},
	{text: "group:3"},
	{text: "note:01.02.03", wirePad: "note:01.02.03.00.00.00"},
	{text: "exit"},
	{text: "fin_timeout(idle_timeout=10,hard_timeout=20)"},
	{text: "learn(table=5,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[])"},
	{text: "set_tunnel:0x5", of13: "set_field:0x5->tun_id", of15: "set_field:0x5->tun_id"},
	{text: "set_tunnel:0", of13: "set_field:0->tun_id", of15: "set_field:0->tun_id"},
	{text: "set_tunnel64:0x5", of13: "set_field:0x5->tun_id", of15: "set_field:0x5->tun_id"},
	{text: "set_tunnel:0x123456789", of10: "set_tunnel64:0x123456789", of13: "set_field:0x123456789->tun_id", of15: "set_field:0x123456789->tun_id"},
	// An all-zero mask: no NXAST_REG_LOAD at all before 1.5, as OVS
	// prints it (ovs-ofctl parse-flow: "output:1"; OVS 1.5 prints the
	// value as ANY).
	{text: "set_field:0/0->reg0,output:1", of10: "output:1", of13: "output:1"},
}

func (s sample) want(v ofptext.Version) string {
	w := map[ofptext.Version]string{ofptext.OF10: s.of10, ofptext.OF13: s.of13, ofptext.OF15: s.of15}[v]
	if w == "" {
		return s.text
	}
	return w
}

var versions = []struct {
	text ofptext.Version
	wire uint8
}{{ofptext.OF10, wire.OFP10}, {ofptext.OF13, wire.OFP13}, {ofptext.OF15, wire.OFP15}}

// TestSamples parses each sample, prints it per version, and sends it
// through the wire encoding of that version and back: the same registry
// entry owns all four, so one table checks an action end to end.
func TestSamples(t *testing.T) {
	for _, s := range samples {
		t.Run(s.text, func(t *testing.T) {
			acts, err := ofpact.Parser{}.ParseActions(s.text, 0)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			fl := &flowtable.Flow{Table: 1, Actions: acts}
			if s.match != "" {
				setPrereq(t, &fl.Match, s.match)
			}
			if err := ofpact.Validate(fl); err != nil {
				t.Fatalf("validate: %v", err)
			}
			for _, v := range versions {
				if v.wire == wire.OFP10 && s.skip10 {
					continue
				}
				o := &ofptext.PrintOptions{Version: v.text}
				if got := ofpact.ActionsString(acts, o); got != s.want(v.text) {
					t.Errorf("%#x: printed %q, want %q", v.wire, got, s.want(v.text))
				}
				back := wireRoundTrip(t, v.wire, acts)
				if back == nil {
					continue
				}
				want := s.want(v.text)
				if s.wire != "" && v.wire != wire.OFP10 {
					want = s.wire
				}
				if s.wirePad != "" {
					want = s.wirePad
				}
				if got := ofpact.ActionsString(back, o); got != want {
					t.Errorf("%#x: after the wire printed %q, want %q", v.wire, got, want)
				}
			}
		})
	}
}

// wireRoundTrip encodes acts in version (as instructions in 1.1+) and
// decodes them back; nil when version cannot carry them.
func wireRoundTrip(t *testing.T, version uint8, acts []flowtable.Action) []flowtable.Action {
	t.Helper()
	if version == wire.OFP10 {
		w, err := ofpact.ActionsToWire(version, acts, nil)
		if err != nil {
			if ofpact.RankOf(acts[0]) != ofpact.RankApply && ofpact.RankOf(acts[0]) != ofpact.RankGoto && ofpact.RankOf(acts[0]) != ofpact.RankWriteMetadata {
				return nil // clear_actions, write_actions, meter: no 1.0 form
			}
			t.Fatalf("encode %#x: %v", version, err)
		}
		b, err := wire.AppendActions(nil, version, w)
		if err != nil {
			t.Fatalf("append %#x: %v", version, err)
		}
		dw, err := wire.DecodeActions(version, b)
		if err != nil {
			t.Fatalf("decode %#x: %v", version, err)
		}
		back, err := ofpact.ActionsFromWire(version, dw, nil)
		if err != nil {
			t.Fatalf("translate back %#x: %v", version, err)
		}
		return back
	}
	insts, err := ofpact.InstructionsToWire(version, acts, nil)
	if err != nil {
		t.Fatalf("encode %#x: %v", version, err)
	}
	for i := range insts {
		if len(insts[i].Actions) == 0 {
			continue
		}
		b, err := wire.AppendActions(nil, version, insts[i].Actions)
		if err != nil {
			t.Fatalf("append %#x: %v", version, err)
		}
		if insts[i].Actions, err = wire.DecodeActions(version, b); err != nil {
			t.Fatalf("decode %#x: %v", version, err)
		}
	}
	back, err := ofpact.InstructionsFromWire(version, insts, nil)
	if err != nil {
		t.Fatalf("translate back %#x: %v", version, err)
	}
	return back
}

func setPrereq(t *testing.T, m *flowtable.Match, proto string) {
	t.Helper()
	if proto == "vlan" {
		m.Set(flowtable.FieldVlanTCI, []byte{0x10, 0}, []byte{0x10, 0})
		return
	}
	switch proto {
	case "mpls":
		m.SetUint64(flowtable.FieldEthType, flowtable.EthTypeMPLS)
		return
	case "mplsm":
		m.SetUint64(flowtable.FieldEthType, flowtable.EthTypeMPLSMcast)
		return
	}
	m.SetUint64(flowtable.FieldEthType, flowtable.EthTypeIPv4)
	if proto == "tcp" {
		m.SetUint64(flowtable.FieldIPProto, flowtable.IPProtoTCP)
	}
}

// TestEveryKeywordSampled: adding an action keyword without a sample
// above fails here.
func TestEveryKeywordSampled(t *testing.T) {
	for _, k := range ofpact.Keywords() {
		found := slices.ContainsFunc(samples, func(s sample) bool {
			return strings.HasPrefix(strings.ToLower(s.text), k+":") || strings.HasPrefix(s.text, k+"(") || s.text == k
		})
		if !found {
			t.Errorf("keyword %q has no sample", k)
		}
	}
}

// TestEveryModelActionRegistered: each action type of the model prints,
// encodes and parses through the registry (no "<name>" placeholder).
func TestEveryModelActionRegistered(t *testing.T) {
	seen := map[reflect.Type]bool{}
	for _, s := range samples {
		acts, err := ofpact.Parser{}.ParseActions(s.text, 0)
		if err != nil {
			t.Fatalf("%s: %v", s.text, err)
		}
		for _, a := range acts {
			seen[reflect.TypeOf(a)] = true
		}
	}
	all := []flowtable.Action{&flowtable.Output{}, &flowtable.OutputReg{}, &flowtable.Controller{}, &flowtable.Enqueue{},
		&flowtable.Resubmit{}, &flowtable.GotoTable{}, &flowtable.WriteMetadata{}, &flowtable.ClearActions{},
		&flowtable.WriteActions{}, &flowtable.Meter{}, &flowtable.SetField{}, &flowtable.Move{}, &flowtable.DecTTL{},
		&flowtable.PushVLAN{}, &flowtable.PopVLAN{}, &flowtable.CT{}, &flowtable.CTClear{}, &flowtable.Conjunction{},
		&flowtable.Group{}, &flowtable.Note{}, &flowtable.Exit{}, &flowtable.SetQueue{}, &flowtable.PopQueue{},
		&flowtable.FinTimeout{}, &flowtable.Learn{}, &flowtable.StackPush{}, &flowtable.StackPop{},
		&flowtable.CheckPktLarger{}}
	for _, a := range all {
		if !seen[reflect.TypeOf(a)] {
			t.Errorf("%T: no sample parses to it", a)
		}
	}
}

// TestCTExecFromWire: a ct action arriving on the wire may nest moves and
// set-fields into ct_mark and ct_label, nothing else (OFPBAC_BAD_ARGUMENT,
// as OVS's ofpacts_verify_nested answers).
func TestCTExecFromWire(t *testing.T) {
	reg := func(name string, v uint8) wire.FieldRef { return wire.RefTo(wire.FieldByName(name), v) }
	for _, v := range versions {
		for _, c := range []struct {
			name   string
			nested wire.Action
			ok     bool
		}{
			{"move to ct_mark", &wire.ActionMove{Src: reg("reg0", v.wire), Dst: reg("ct_mark", v.wire), NBits: 4}, true},
			{"move to ct_label", &wire.ActionMove{Src: reg("reg0", v.wire), Dst: reg("ct_label", v.wire), NBits: 32, DstOfs: 32}, true},
			{"move to reg1", &wire.ActionMove{Src: reg("reg0", v.wire), Dst: reg("reg1", v.wire), NBits: 4}, false},
			{"output", &wire.ActionOutput{Port: 1, MaxLen: 0}, false},
		} {
			ct := &wire.ActionCT{Flags: wire.NX_CT_F_COMMIT, RecircTable: wire.NX_CT_RECIRC_NONE, Actions: []wire.Action{c.nested}}
			b, err := wire.AppendActions(nil, v.wire, []wire.Action{ct})
			if err != nil {
				t.Fatalf("%s %#x: %v", c.name, v.wire, err)
			}
			dw, err := wire.DecodeActions(v.wire, b)
			if err != nil {
				t.Fatalf("%s %#x: decode: %v", c.name, v.wire, err)
			}
			acts, err := ofpact.ActionsFromWire(v.wire, dw, nil)
			if c.ok {
				if err != nil {
					t.Errorf("%s %#x: %v", c.name, v.wire, err)
				} else if m := acts[0].(*flowtable.CT).Exec[0].(*flowtable.Move); m.Dst.Field.Name != c.nested.(*wire.ActionMove).Dst.Field.Name {
					t.Errorf("%s %#x: nested move to %s", c.name, v.wire, m.Dst.Field.Name)
				}
				continue
			}
			var oe *wire.OFPError
			if !errors.As(err, &oe) || oe.Sym != wire.OFPBAC_BAD_ARGUMENT {
				t.Errorf("%s %#x: got %v, want OFPBAC_BAD_ARGUMENT", c.name, v.wire, err)
			}
		}
	}
}

// TestCTExecTextRefusals: OVS's own words for what ct(exec(...)) refuses.
func TestCTExecTextRefusals(t *testing.T) {
	for text, want := range map[string]string{
		"ct(commit,exec(move:NXM_NX_REG0[0..3]->NXM_NX_REG1[0..3]))": "ct action doesn't support nested modification of reg1",
		"ct(commit,exec(set_field:1->reg2))":                         "ct action doesn't support nested modification of reg2",
		"ct(commit,exec(output:1))":                                  "ct action doesn't support nested action output",
	} {
		_, err := ofpact.Parser{}.ParseActions(text, 0)
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: got %v, want ...%q", text, err, want)
		}
	}
}

// TestCheckPktLargerFromWire: the body of NXAST_CHECK_PKT_LARGER is
// checked as decode_NXAST_RAW_CHECK_PKT_LARGER does.
func TestCheckPktLargerFromWire(t *testing.T) {
	nx := func(body ...byte) []byte {
		b := wire.AppendNXHeader(nil, wire.NXAST_CHECK_PKT_LARGER, 24)
		return append(b, body...)
	}
	reg0 := []byte{0x00, 0x01, 0x00, 0x04}    // NXM_NX_REG0
	ethType := []byte{0x00, 0x00, 0x06, 0x02} // NXM_OF_ETH_TYPE
	for _, c := range []struct {
		name string
		b    []byte
		want wire.ErrorCode // 0: accepted
		text string
	}{
		{"reg0 bit 3", nx(append(append([]byte{0x05, 0xdc, 0, 3}, reg0...), 0, 0, 0, 0, 0, 0)...), 0, "check_pkt_larger(1500)->NXM_NX_REG0[3]"},
		{"nonzero padding", nx(append(append([]byte{0x05, 0xdc, 0, 3}, reg0...), 0, 0, 0, 0, 0, 1)...), wire.NXBRC_MUST_BE_ZERO, ""},
		{"bit beyond the field", nx(append(append([]byte{0x05, 0xdc, 0, 32}, reg0...), 0, 0, 0, 0, 0, 0)...), wire.OFPBAC_BAD_SET_LEN, ""},
		{"read-only destination", nx(append(append([]byte{0x05, 0xdc, 0, 0}, ethType...), 0, 0, 0, 0, 0, 0)...), wire.OFPBAC_BAD_SET_ARGUMENT, ""},
		{"unknown field", nx(0x05, 0xdc, 0, 0, 0x7f, 0x7f, 0x00, 0x04, 0, 0, 0, 0, 0, 0), wire.OFPBMC_BAD_FIELD, ""},
	} {
		for _, v := range versions {
			dw, err := wire.DecodeActions(v.wire, c.b)
			if err == nil {
				var acts []flowtable.Action
				acts, err = ofpact.ActionsFromWire(v.wire, dw, nil)
				if err == nil && c.want == 0 {
					if got := ofpact.ActionsString(acts, nil); got != c.text {
						t.Errorf("%s %#x: %q, want %q", c.name, v.wire, got, c.text)
					}
					continue
				}
			}
			var oe *wire.OFPError
			if !errors.As(err, &oe) || oe.Sym != c.want {
				t.Errorf("%s %#x: got %v, want %v", c.name, v.wire, err, c.want)
			}
		}
	}
}

// TestCTFieldsOnlyInCT: ct_mark and ct_label are written only inside
// ct(exec(...)); elsewhere OVS answers OFPBAC_BAD_SET_ARGUMENT (the
// channel maps ReadOnlyField to it).
func TestCTFieldsOnlyInCT(t *testing.T) {
	for text, ok := range map[string]bool{
		"set_field:1->ct_mark":                                  false,
		"move:NXM_NX_REG0[]->NXM_NX_CT_MARK[]":                  false,
		"load:1->NXM_NX_CT_LABEL[3]":                            false,
		"ct(commit,exec(set_field:1->ct_mark))":                 true,
		"ct(commit,exec(move:NXM_NX_REG0[]->NXM_NX_CT_MARK[]))": true,
		"write_actions(set_field:1->ct_mark)":                   false,
	} {
		acts, err := ofpact.Parser{}.ParseActions(text, 0)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		fl := &flowtable.Flow{Actions: acts}
		setPrereq(t, &fl.Match, "ip")
		err = ofpact.Validate(fl)
		var ve *flowtable.ValidationError
		switch {
		case ok && err != nil:
			t.Errorf("%s: %v", text, err)
		case !ok && (!errors.As(err, &ve) || ve.Kind != flowtable.ReadOnlyField || ve.Msg != "cannot set CT fields outside of ct action"):
			t.Errorf("%s: got %v, want the CT fields refusal", text, err)
		}
	}
}

// TestDecTTLEmptyCntIDs: ovn-controller sends NXAST_DEC_TTL_CNT_IDS with
// no controller ids; OVS keeps that form (it dumps as "dec_ttl()" and goes
// back on the wire as NXAST_DEC_TTL_CNT_IDS), while the text "dec_ttl()"
// parses as plain dec_ttl.
func TestDecTTLEmptyCntIDs(t *testing.T) {
	for _, v := range versions {
		b, err := wire.AppendActions(nil, v.wire, []wire.Action{&wire.ActionDecTTLCntIDs{}})
		if err != nil {
			t.Fatal(err)
		}
		dw, err := wire.DecodeActions(v.wire, b)
		if err != nil {
			t.Fatalf("%#x: decode: %v", v.wire, err)
		}
		acts, err := ofpact.ActionsFromWire(v.wire, dw, nil)
		if err != nil {
			t.Fatalf("%#x: %v", v.wire, err)
		}
		var sb strings.Builder
		ofpact.FormatActions(&sb, acts, &ofptext.PrintOptions{Version: v.text})
		if sb.String() != "dec_ttl()" {
			t.Errorf("%#x: prints %q, want dec_ttl()", v.wire, sb.String())
		}
		back, err := ofpact.ActionsToWire(v.wire, acts, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := back[0].(*wire.ActionDecTTLCntIDs); !ok || len(back) != 1 {
			t.Errorf("%#x: re-encoded as %T, want NXAST_DEC_TTL_CNT_IDS", v.wire, back[0])
		}
	}
	acts, err := ofpact.Parser{}.ParseActions("dec_ttl()", 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := acts[0].(*flowtable.DecTTL); d.CntIDs || len(d.IDs) != 0 {
		t.Errorf("dec_ttl() parses as %+v, want plain dec_ttl as OVS", d)
	}
}

// TestMPLSActionsNeedMPLS: the MPLS actions other than push_mpls are
// refused on a flow that is not MPLS (OFPBAC_MATCH_INCONSISTENT), and
// accepted after a push_mpls, whose ethertype later actions see; a pop to
// IPv4 makes IPv4 set_field legal and MPLS ones not.
func TestMPLSActionsNeedMPLS(t *testing.T) {
	for _, c := range []struct {
		actions string
		ok      bool
	}{
		{"pop_mpls:0x0800", false},
		{"dec_mpls_ttl", false},
		{"set_mpls_ttl(3)", false},
		{"set_field:5->mpls_label", false},
		{"push_mpls:0x8847,set_mpls_ttl(3),set_field:5->mpls_label,dec_mpls_ttl,pop_mpls:0x0800", true},
		{"push_mpls:0x8847,pop_mpls:0x0800,set_field:10.0.0.1->ip_dst", true},
		{"push_mpls:0x8847,pop_mpls:0x0800,dec_mpls_ttl", false},
		{"write_actions(push_mpls:0x8847,set_mpls_ttl(3))", true},
	} {
		acts, err := ofpact.Parser{}.ParseActions(c.actions, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.actions, err)
		}
		fl := &flowtable.Flow{Table: 1, Actions: acts}
		setPrereq(t, &fl.Match, "ip")
		err = ofpact.Validate(fl)
		var ve *flowtable.ValidationError
		switch {
		case c.ok && err != nil:
			t.Errorf("%s: refused: %v", c.actions, err)
		case !c.ok && (!errors.As(err, &ve) || ve.Kind != flowtable.MatchInconsistent):
			t.Errorf("%s: got %v, want a match-inconsistent refusal", c.actions, err)
		}
	}
}

// TestOutputToAnyRefused: "65535" and "ANY" parse as output to NONE and
// print back as ANY (the fuzzer's round trip), and a flow with it is
// refused with OFPBAC_BAD_OUT_PORT, as OVS's ofpact_check_output_port.
func TestOutputToAnyRefused(t *testing.T) {
	for _, text := range []string{"65535", "ANY", "output:65535"} {
		acts, err := ofpact.Parser{}.ParseActions(text, 0)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if s := ofpact.ActionsString(acts, &ofptext.PrintOptions{Version: ofptext.OF15}); s != "ANY" {
			t.Errorf("%s prints as %q, want ANY", text, s)
		}
		var ve *flowtable.ValidationError
		if err := ofpact.Validate(&flowtable.Flow{Actions: acts}); !errors.As(err, &ve) || ve.Kind != flowtable.BadOutPort {
			t.Errorf("%s: Validate = %v, want a bad-out-port refusal", text, err)
		}
	}
}

// TestSetTunnelWire: in OpenFlow 1.0 set_tunnel and set_tunnel64 travel
// as the bytes `ovs-ofctl -O OpenFlow10 add-flow` of Open vSwitch 3.1
// sends for them (captured from its flow-mods), and those bytes decode
// to the same text.
func TestSetTunnelWire(t *testing.T) {
	for _, c := range []struct{ text, ovs, back string }{
		{"set_tunnel:5", "ffff0010000023200002000000000005", "set_tunnel:0x5"},
		{"set_tunnel64:5", "ffff00180000232000090000000000000000000000000005", "set_tunnel64:0x5"},
		{"set_tunnel:0x123456789", "ffff00180000232000090000000000000000000123456789", "set_tunnel64:0x123456789"},
	} {
		acts, err := ofpact.Parser{}.ParseActions(c.text, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		w, err := ofpact.ActionsToWire(wire.OFP10, acts, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		b, err := wire.AppendActions(nil, wire.OFP10, w)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		if got := hex.EncodeToString(b); got != c.ovs {
			t.Errorf("%s: encoded %s, Open vSwitch sends %s", c.text, got, c.ovs)
		}
		ovs, _ := hex.DecodeString(c.ovs)
		for _, v := range versions { // NXAST_SET_TUNNEL(64) is valid in every version
			dw, err := wire.DecodeActions(v.wire, ovs)
			if err != nil {
				t.Fatalf("%s %#x: %v", c.text, v.wire, err)
			}
			back, err := ofpact.ActionsFromWire(v.wire, dw, nil)
			if err != nil {
				t.Fatalf("%s %#x: %v", c.text, v.wire, err)
			}
			want := c.back
			if v.wire != wire.OFP10 {
				want = "set_field:" + strings.TrimPrefix(strings.TrimPrefix(c.back, "set_tunnel64:"), "set_tunnel:") + "->tun_id"
			}
			if got := ofpact.ActionsString(back, &ofptext.PrintOptions{Version: v.text}); got != want {
				t.Errorf("%s %#x: decoded %q, want %q", c.text, v.wire, got, want)
			}
		}
	}
}
