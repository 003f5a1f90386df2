package translate_test

import (
	"errors"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

func field(t *testing.T, name string, value, mask []byte) wire.MatchField {
	t.Helper()
	f := wire.FieldByName(name)
	if f == nil {
		t.Fatalf("wire has no field %s", name)
	}
	return wire.MatchField{Field: f, Value: value, Mask: mask}
}

// wantErr checks that err is the OVS error sym (as encoded in version).
func wantErr(t *testing.T, err error, version uint8, sym wire.ErrorCode) {
	t.Helper()
	var oe *wire.OFPError
	if !errors.As(err, &oe) {
		t.Fatalf("got %v, want %v", err, sym)
	}
	want := wire.NewError(version, sym)
	if oe.Sym != sym || oe.Type != want.Type || oe.Code != want.Code || oe.Experimenter != want.Experimenter {
		t.Fatalf("got %v, want %v (type %d code %d)", oe, sym, want.Type, want.Code)
	}
}

func TestMatchFromWireErrors(t *testing.T) {
	mapped := flowtable.NewTLVMap()
	ms, _ := flowtable.ParseTLVMappings("{class=0x104,type=0x80,len=4}->tun_metadata0")
	if err := mapped.Add(ms...); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		fields []wire.MatchField
		tlv    *flowtable.TLVMap
		want   wire.ErrorCode
	}{
		{"tcp_dst without nw_proto", []wire.MatchField{field(t, "eth_type", []byte{8, 0}, nil), field(t, "tcp_dst", []byte{0, 80}, nil)}, nil, wire.OFPBMC_BAD_PREREQ},
		{"nw_src without eth_type", []wire.MatchField{field(t, "ip_src", []byte{10, 0, 0, 1}, nil)}, nil, wire.OFPBMC_BAD_PREREQ},
		{"ct_nw_src without ct_state", []wire.MatchField{field(t, "eth_type", []byte{8, 0}, nil), field(t, "ct_nw_src", []byte{10, 0, 0, 1}, nil)}, nil, wire.OFPBMC_BAD_PREREQ},
		{"unmapped tun_metadata0", []wire.MatchField{field(t, "tun_metadata0", []byte{0, 0, 0, 5}, nil)}, flowtable.NewTLVMap(), wire.NXFMFC_INVALID_TLV_FIELD},
		{"unmapped tun_metadata1, nil map", []wire.MatchField{field(t, "tun_metadata1", []byte{5}, nil)}, nil, wire.NXFMFC_INVALID_TLV_FIELD},
		{"tun_metadata0 wider than its option", []wire.MatchField{field(t, "tun_metadata0", []byte{1, 0, 0, 0, 5}, nil)}, mapped, wire.OFPBMC_BAD_VALUE},
		{"field govs does not model", []wire.MatchField{field(t, "tun_gbp_id", []byte{0, 1}, nil)}, nil, wire.OFPBMC_BAD_FIELD},
		{"in_port_oxm out of range", []wire.MatchField{field(t, "in_port_oxm", []byte{0, 0, 0xff, 0x10}, nil)}, nil, wire.OFPBMC_BAD_VALUE},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range versions {
				_, err := translate.MatchFromWireVersion(v.wire, c.fields, c.tlv)
				wantErr(t, err, v.wire, c.want)
			}
		})
	}
}

// TestTunMetadataShortValue: ovs-ofctl, which does not know the TLV map,
// sends the minimal length; the value is right-aligned in the option.
func TestTunMetadataShortValue(t *testing.T) {
	tlv := captureTLV(t)
	m, err := translate.MatchFromWire([]wire.MatchField{field(t, "tun_metadata0", []byte{0x12, 0x34}, nil)}, tlv)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := tlv.Resolve(flowtable.FieldTunMetadataN[0])
	v, mk := m.Uint64(f)
	if v != 0x1234 || mk != 0xffff {
		t.Fatalf("tun_metadata0 = %#x/%#x, want 0x1234/0xffff", v, mk)
	}
}

// flowModBytes builds an OFPT_FLOW_MOD in version with raw action bytes in
// an apply-actions instruction (1.1+) or an NXT_FLOW_MOD (1.0).
func flowModBytes(t *testing.T, version uint8, match []wire.MatchField, actions []byte) []byte {
	t.Helper()
	fm := &wire.FlowMod{Format: wire.FlowModOF11, Command: wire.OFPFC_ADD, Priority: 1, BufferID: wire.OFP_NO_BUFFER,
		OutPort: wire.OFPP_ANY, OutGroup: wire.OFPG_ANY, Match: match}
	if version == wire.OFP10 {
		fm.Format, fm.OutPort = wire.FlowModNX, uint32(wire.OFPP10_NONE)
	}
	b, err := wire.EncodeMessage(nil, version, 1, fm)
	if err != nil {
		t.Fatal(err)
	}
	if version != wire.OFP10 {
		// Append an apply-actions instruction by hand.
		inst := []byte{0, byte(wire.OFPIT_APPLY_ACTIONS), 0, byte(8 + len(actions)), 0, 0, 0, 0}
		b = append(append(b, inst...), actions...)
	} else {
		b = append(b, actions...)
	}
	b[2], b[3] = byte(len(b)>>8), byte(len(b))
	return b
}

// decodeAndTranslate runs what a switch does with a flow-mod message.
func decodeAndTranslate(b []byte, tlv *flowtable.TLVMap) (*translate.FlowMod, error) {
	h, body, _, err := wire.SplitMessage(b)
	if err != nil {
		return nil, err
	}
	var d wire.Decoder
	msg, err := d.DecodeMessage(h, body)
	if err != nil {
		return nil, err
	}
	fm, ok := msg.(*wire.FlowMod)
	if !ok {
		return nil, errors.New("not a flow-mod")
	}
	return translate.FlowModFromWire(fm, h.Version, tlv)
}

func nxAction(subtype uint16, body ...byte) []byte {
	a := []byte{0xff, 0xff, 0, 0, 0x00, 0x00, 0x23, 0x20, byte(subtype >> 8), byte(subtype)}
	a = append(a, body...)
	for len(a)%8 != 0 || len(a) < 16 {
		a = append(a, 0)
	}
	a[3] = byte(len(a))
	return a
}

func TestFlowModErrors(t *testing.T) {
	decTTL := nxAction(wire.NXAST_DEC_TTL)
	// NXAST_DEC_TTL is the OpenFlow 1.0 encoding of dec_ttl; OVS rejects
	// it in 1.3 (os-ken's NXActionDecTtl hits this).
	_, err := decodeAndTranslate(flowModBytes(t, wire.OFP13, nil, decTTL), nil)
	wantErr(t, err, wire.OFP13, wire.OFPBAC_BAD_VENDOR_TYPE)
	fm, err := decodeAndTranslate(flowModBytes(t, wire.OFP10, nil, decTTL), nil)
	if err != nil {
		t.Fatalf("NXAST_DEC_TTL in OpenFlow 1.0: %v", err)
	}
	if s := flowtext.ActionsString(fm.Flow.Actions, &flowtext.PrintOptions{Version: flowtext.OF10}); s != "dec_ttl" {
		t.Fatalf("NXAST_DEC_TTL in 1.0 prints %q", s)
	}

	// move from an unmapped tun_metadata0 (NXAST_REG_MOVE, 4 bits, NXM
	// headers class 1 field 40 length 124 and NXM_NX_REG9).
	move := nxAction(wire.NXAST_REG_MOVE, 0, 4, 0, 28, 0, 28, 0x00, 0x01, 40<<1, 124, 0x00, 0x01, 9<<1, 4)
	for _, v := range []uint8{wire.OFP10, wire.OFP13} {
		_, err = decodeAndTranslate(flowModBytes(t, v, nil, move), flowtable.NewTLVMap())
		wantErr(t, err, v, wire.NXFMFC_INVALID_TLV_FIELD)
		fm, err := decodeAndTranslate(flowModBytes(t, v, nil, move), captureTLV(t))
		if err != nil {
			t.Fatalf("move with a mapped tun_metadata0: %v", err)
		}
		if s := flowtext.ActionsString(fm.Flow.Actions, nil); s != "move:NXM_NX_TUN_METADATA0[28..31]->NXM_NX_REG9[28..31]" {
			t.Fatalf("move prints %q", s)
		}
	}

	// Bad prerequisite inside a flow-mod's match.
	bad := []wire.MatchField{field(t, "eth_type", []byte{8, 0}, nil), field(t, "nw_proto", []byte{17}, nil), field(t, "udp_dst", []byte{0, 53}, nil)}
	if _, err := translate.MatchFromWire(bad, nil); err != nil {
		t.Fatalf("valid udp match rejected: %v", err)
	}
	_, err = translate.MatchFromWire(bad[1:], nil)
	wantErr(t, err, wire.OFP13, wire.OFPBMC_BAD_PREREQ)

	// table=255 is only for deletes in 1.1+.
	wfm := &wire.FlowMod{Format: wire.FlowModOF11, Command: wire.OFPFC_ADD, TableID: 255, OutPort: wire.OFPP_ANY, OutGroup: wire.OFPG_ANY}
	_, err = translate.FlowModFromWire(wfm, wire.OFP13, nil)
	wantErr(t, err, wire.OFP13, wire.OFPFMFC_BAD_TABLE_ID)
	wfm.Command = wire.OFPFC_DELETE
	got, err := translate.FlowModFromWire(wfm, wire.OFP13, nil)
	if err != nil || got.Flow.Table != translate.TableAll || got.Command != uint8(wire.OFPFC_DELETE) {
		t.Fatalf("delete in all tables: %+v %v", got, err)
	}

	// Unknown command and flags.
	wfm = &wire.FlowMod{Format: wire.FlowModOF11, Command: 9, OutPort: wire.OFPP_ANY}
	_, err = translate.FlowModFromWire(wfm, wire.OFP15, nil)
	wantErr(t, err, wire.OFP15, wire.OFPFMFC_BAD_COMMAND)
	wfm = &wire.FlowMod{Format: wire.FlowModOF11, Flags: 0x80, OutPort: wire.OFPP_ANY}
	_, err = translate.FlowModFromWire(wfm, wire.OFP13, nil)
	wantErr(t, err, wire.OFP13, wire.OFPFMFC_BAD_FLAGS)
}

// TestNXCookie checks NXT_FLOW_MOD cookie handling: a delete keeps the
// NXM_NX_COOKIE filter, an add with a cookie match is NXBRC_NXM_INVALID.
func TestNXCookie(t *testing.T) {
	fm := &translate.FlowMod{Command: uint8(wire.OFPFC_DELETE), Cookie: 0x1000, CookieMask: 0xff00, OutPort: flowtable.PortNone, OutGroup: translate.GroupAny, BufferID: wire.OFP_NO_BUFFER}
	wfm, err := translate.FlowModToWire(fm, wire.OFP10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeMessage(nil, wire.OFP10, 1, wfm)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeAndTranslate(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cookie != 0x1000 || got.CookieMask != 0xff00 || got.Command != uint8(wire.OFPFC_DELETE) {
		t.Fatalf("NX delete cookie filter: %#x/%#x command %d", got.Cookie, got.CookieMask, got.Command)
	}
	wfm.Command = uint16(wire.OFPFC_ADD)
	_, err = translate.FlowModFromWire(wfm, wire.OFP10, nil)
	wantErr(t, err, wire.OFP10, wire.NXBRC_NXM_INVALID)
}

func TestCTExecOnlySetsCtFields(t *testing.T) {
	// ct(commit,exec(output:1)) is not allowed (decode_NXAST_RAW_CT).
	ct := &wire.ActionCT{Flags: wire.NX_CT_F_COMMIT, RecircTable: 0xff, Actions: []wire.Action{&wire.ActionOutput{Port: 1}}}
	_, err := translate.ActionsFromWire(wire.OFP13, []wire.Action{ct}, nil)
	wantErr(t, err, wire.OFP13, wire.OFPBAC_BAD_ARGUMENT)
	_, err = translate.ActionsFromWire(wire.OFP13, []wire.Action{&wire.ActionNAT{}}, nil)
	wantErr(t, err, wire.OFP13, wire.OFPBAC_BAD_ARGUMENT)
}

// TestEncodingPerVersion checks the encodings OVS chooses per version for
// the actions PROTOCOL.md section 2 lists.
func TestEncodingPerVersion(t *testing.T) {
	tlv := captureTLV(t)
	for _, c := range []struct {
		text             string
		of10, of13, of15 string
		back11           string // what 1.3/1.5 print when it differs from the text (OVS prints from the raw action)
	}{
		{"load:0x23c1->NXM_NX_REG4[0..15]", "NXAST_REG_LOAD", "NXAST_REG_LOAD", "OFPAT_SET_FIELD", ""},
		{"set_field:0x5->reg4", "NXAST_REG_LOAD", "OFPAT_SET_FIELD", "OFPAT_SET_FIELD", ""},
		{"mod_dl_dst:aa:bb:cc:dd:ee:ff", "OFPAT_SET_DL_DST", "OFPAT_SET_FIELD", "OFPAT_SET_FIELD", ""},
		{"mod_nw_src:10.0.0.1", "OFPAT_SET_NW_SRC", "OFPAT_SET_FIELD", "OFPAT_SET_FIELD", ""},
		{"move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]", "NXAST_REG_MOVE", "NXAST_REG_MOVE", "OFPAT_COPY_FIELD", ""},
		{"dec_ttl", "NXAST_DEC_TTL", "OFPAT_DEC_NW_TTL", "OFPAT_DEC_NW_TTL", ""},
		{"group:5", "NXAST_GROUP", "OFPAT_GROUP", "OFPAT_GROUP", ""},
		{"goto_table:3", "NXAST_RESUBMIT_TABLE", "OFPIT_GOTO_TABLE", "OFPIT_GOTO_TABLE", ""},
		{"resubmit(,3)", "NXAST_RESUBMIT_TABLE", "NXAST_RESUBMIT_TABLE", "NXAST_RESUBMIT_TABLE", ""},
		{"output:NXM_NX_REG1[]", "NXAST_OUTPUT_REG", "NXAST_OUTPUT_REG", "NXAST_OUTPUT_REG", ""},
		{"CONTROLLER:128", "OFPAT_OUTPUT", "OFPAT_OUTPUT", "OFPAT_OUTPUT", ""},
		{"controller(reason=no_match)", "NXAST_CONTROLLER", "NXAST_CONTROLLER", "NXAST_CONTROLLER", ""},
		{"controller(userdata=01.02,pause)", "NXAST_CONTROLLER2", "NXAST_CONTROLLER2", "NXAST_CONTROLLER2", ""},
		{"conjunction(7,1/2)", "NXAST_CONJUNCTION", "NXAST_CONJUNCTION", "NXAST_CONJUNCTION", ""},
		{"ct(commit,zone=65520,exec(load:0x20->NXM_NX_CT_MARK[]))", "NXAST_CT", "NXAST_CT", "NXAST_CT", ""},
		{"strip_vlan", "OFPAT_STRIP_VLAN", "OFPAT_POP_VLAN", "OFPAT_POP_VLAN", "pop_vlan"},
		{"write_metadata:0x1/0xff", "NXAST_WRITE_METADATA", "OFPIT_WRITE_METADATA", "OFPIT_WRITE_METADATA", ""},
		{"meter:1", "", "OFPIT_METER", "OFPAT_METER", ""},
	} {
		fm, err := flowtext.ParseFlow("ip,actions="+c.text, &flowtext.ParseOptions{TLV: tlv})
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		for _, v := range versions {
			want := map[uint8]string{wire.OFP10: c.of10, wire.OFP13: c.of13, wire.OFP15: c.of15}[v.wire]
			var names []string
			if v.wire == wire.OFP10 {
				acts, err := translate.ActionsToWire(v.wire, fm.Actions, tlv)
				if want == "" {
					if err == nil {
						t.Errorf("%s in %s: encoded, want an error", c.text, v.name)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s in %s: %v", c.text, v.name, err)
				}
				for _, a := range acts {
					names = append(names, wireName(t, v.wire, a))
				}
			} else {
				insts, err := translate.InstructionsToWire(v.wire, fm.Actions, tlv)
				if err != nil {
					t.Fatalf("%s in %s: %v", c.text, v.name, err)
				}
				for _, in := range insts {
					if in.Type != wire.OFPIT_APPLY_ACTIONS {
						names = append(names, in.Name())
					}
					for _, a := range in.Actions {
						names = append(names, a.Name(v.wire))
					}
				}
			}
			if len(names) == 0 || names[0] != want {
				t.Errorf("%s in %s: encoded as %v, want %s first", c.text, v.name, names, want)
			}
			// And it comes back printing like OVS prints it in that version.
			rt := wireRoundTrip(t, &translate.FlowMod{Flow: fm.Flow, OutPort: flowtable.PortNone, OutGroup: translate.GroupAny, BufferID: wire.OFP_NO_BUFFER}, v.wire, tlv)
			po := &flowtext.PrintOptions{Version: v.text, TLV: tlv}
			want = flowtext.ActionsString(fm.Actions, po)
			if c.back11 != "" && v.wire != wire.OFP10 {
				want = c.back11
			}
			if a, b := flowtext.ActionsString(rt.Flow.Actions, po), want; a != b {
				t.Errorf("%s in %s: came back as %q, want %q", c.text, v.name, a, b)
			}
		}
	}
}

// wireName names the encoding of a as it goes on the wire in version (the
// NX subtype for vendor actions: wire's Name is the OVS raw action name,
// the same for OFPAT_GROUP in 1.3 and its NX encoding in 1.0).
func wireName(t *testing.T, version uint8, a wire.Action) string {
	b, err := wire.AppendActions(nil, version, []wire.Action{a})
	if err != nil {
		t.Fatal(err)
	}
	if b[0] == 0xff && b[1] == 0xff && b[7] == 0x20 {
		switch uint16(b[8])<<8 | uint16(b[9]) {
		case wire.NXAST_DEC_TTL:
			return "NXAST_DEC_TTL"
		case wire.NXAST_GROUP:
			return "NXAST_GROUP"
		}
	}
	return a.Name(version)
}
