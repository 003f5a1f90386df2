package wire

import (
	"bytes"
	"errors"
	"testing"
)

func mustField(t testing.TB, name string) *FieldInfo {
	t.Helper()
	f := FieldByName(name)
	if f == nil {
		t.Fatalf("no field %q", name)
	}
	return f
}

func TestFieldTable(t *testing.T) {
	tests := []struct {
		name     string
		code     string
		class    uint16
		field    uint8
		bytes    int
		maskable bool
	}{
		{"reg0", "NXM_NX_REG0", 1, 0, 4, true},
		{"reg15", "NXM_NX_REG15", 1, 15, 4, true},
		{"xxreg3", "NXM_NX_XXREG3", 1, 114, 16, true},
		{"tun_id", "NXM_NX_TUN_ID", 1, 16, 8, true},
		{"tun_src", "NXM_NX_TUN_IPV4_SRC", 1, 31, 4, true},
		{"tun_dst", "NXM_NX_TUN_IPV4_DST", 1, 32, 4, true},
		{"tun_metadata0", "NXM_NX_TUN_METADATA0", 1, 40, 124, true},
		{"tun_metadata63", "NXM_NX_TUN_METADATA63", 1, 103, 124, true},
		{"tun_flags", "NXM_NX_TUN_FLAGS", 1, 104, 2, true},
		{"pkt_mark", "NXM_NX_PKT_MARK", 1, 33, 4, true},
		{"ct_state", "NXM_NX_CT_STATE", 1, 105, 4, true},
		{"ct_zone", "NXM_NX_CT_ZONE", 1, 106, 2, false},
		{"ct_mark", "NXM_NX_CT_MARK", 1, 107, 4, true},
		{"ct_label", "NXM_NX_CT_LABEL", 1, 108, 16, true},
		{"ct_nw_proto", "NXM_NX_CT_NW_PROTO", 1, 119, 1, false},
		{"ct_nw_src", "NXM_NX_CT_NW_SRC", 1, 120, 4, true},
		{"ct_ipv6_dst", "NXM_NX_CT_IPV6_DST", 1, 123, 16, true},
		{"ct_tp_dst", "NXM_NX_CT_TP_DST", 1, 125, 2, true},
		{"conj_id", "NXM_NX_CONJ_ID", 1, 37, 4, false},
		{"arp_sha", "NXM_NX_ARP_SHA", 1, 17, 6, true},
		{"nd_target", "NXM_NX_ND_TARGET", 1, 23, 16, true},
		{"ip_frag", "NXM_NX_IP_FRAG", 1, 26, 1, true},
		{"nw_ttl", "NXM_NX_IP_TTL", 1, 29, 1, false},
		{"tcp_flags", "NXM_NX_TCP_FLAGS", 1, 34, 2, true},
		{"dp_hash", "NXM_NX_DP_HASH", 1, 35, 4, true},
		{"recirc_id", "NXM_NX_RECIRC_ID", 1, 36, 4, false},
		{"eth_src", "OXM_OF_ETH_SRC", 0x8000, 4, 6, true},
		{"eth_src", "NXM_OF_ETH_SRC", 0, 2, 6, true},
		{"ip_dst", "OXM_OF_IPV4_DST", 0x8000, 12, 4, true},
		{"in_port", "NXM_OF_IN_PORT", 0, 0, 2, false},
		{"in_port_oxm", "OXM_OF_IN_PORT", 0x8000, 0, 4, false},
		{"xreg0", "OXM_OF_PKT_REG0", 0x8001, 0, 8, true},
		{"actset_output", "ONFOXM_ET_ACTSET_OUTPUT", 0xffff, 43, 4, false},
		{"actset_output", "OXM_OF_ACTSET_OUTPUT", 0x8000, 43, 4, false},
	}
	for _, tc := range tests {
		t.Run(tc.code, func(t *testing.T) {
			f := mustField(t, tc.name)
			c := FieldCodeByName(tc.code)
			if c == nil || c.Class != tc.class || c.Field != tc.field {
				t.Fatalf("code %s = %+v", tc.code, c)
			}
			if f.Bytes != tc.bytes || f.Maskable != tc.maskable {
				t.Fatalf("%s: bytes %d maskable %v", tc.name, f.Bytes, f.Maskable)
			}
			if c.Class != OFPXMC_EXPERIMENTER && FieldByHeader(c.Class, c.Field, false) != f {
				t.Fatalf("FieldByHeader(%#x,%d) != %s", c.Class, c.Field, tc.name)
			}
		})
	}
	// Version-dependent default codes, as OVS picks them.
	as := mustField(t, "actset_output")
	if as.CodeFor(OFP13).Name != "ONFOXM_ET_ACTSET_OUTPUT" || as.CodeFor(OFP15).Name != "OXM_OF_ACTSET_OUTPUT" {
		t.Fatalf("actset_output codes: %s %s", as.CodeFor(OFP13).Name, as.CodeFor(OFP15).Name)
	}
	if c := mustField(t, "eth_src").CodeFor(OFP10); c.Name != "NXM_OF_ETH_SRC" {
		t.Fatalf("eth_src OF1.0 code %s", c.Name)
	}
	if c := mustField(t, "eth_src").CodeFor(OFP13); c.Name != "OXM_OF_ETH_SRC" {
		t.Fatalf("eth_src OF1.3 code %s", c.Name)
	}
	if mustField(t, "dl_src") != mustField(t, "eth_src") {
		t.Fatal("alias dl_src")
	}
}

// tlv builds one TLV from a header (class, field, hasmask) and payload.
func tlv(class uint16, field uint8, hasmask bool, payload ...byte) []byte {
	h := OXMHeader{Class: class, Field: field, HasMask: hasmask, Length: uint8(len(payload))}
	return append(h.Append(nil), payload...)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestDecodeMatch(t *testing.T) {
	ethIP := tlv(0x8000, 5, false, 0x08, 0x00)
	reg0 := tlv(1, 0, true, 0, 0, 0, 1, 0, 0, 0, 0xff)
	ctState := tlv(1, 105, true, 0, 0, 0, 0x21, 0, 0, 0, 0x21)
	tests := []struct {
		name    string
		in      []byte
		want    []string // field names
		wantErr ErrorCode
	}{
		{"empty", nil, nil, 0},
		{"antrea-like", cat(reg0, ethIP, tlv(0x8000, 12, true, 10, 0, 0, 0, 255, 255, 0, 0), ctState, tlv(1, 120, false, 1, 2, 3, 4)), []string{"reg0", "eth_type", "ip_dst", "ct_state", "ct_nw_src"}, 0},
		{"nxm and oxm mixed", cat(tlv(0, 2, false, 1, 2, 3, 4, 5, 6), tlv(0x8000, 3, false, 1, 2, 3, 4, 5, 6)), []string{"eth_src", "eth_dst"}, 0},
		{"experimenter xxreg4", cat(OXMHeader{Class: 0xffff, Field: 33, Length: 20, Experimenter: NX_VENDOR_ID}.Append(nil), make([]byte, 16)), []string{"xxreg4"}, 0},
		{"tun_metadata variable length", tlv(1, 40, false, 1, 2, 3, 4), []string{"tun_metadata0"}, 0},
		{"duplicate", cat(reg0, tlv(1, 0, false, 0, 0, 0, 2)), nil, OFPBMC_DUP_FIELD},
		{"duplicate across nxm/oxm", cat(tlv(0, 2, false, 1, 2, 3, 4, 5, 6), tlv(0x8000, 4, false, 1, 2, 3, 4, 5, 6)), nil, OFPBMC_DUP_FIELD},
		{"unknown field", tlv(1, 127, false, 0, 0, 0, 0), nil, OFPBMC_BAD_FIELD},
		{"wrong length", tlv(1, 0, false, 0, 0, 0), nil, OFPBMC_BAD_FIELD},
		{"truncated payload", tlv(1, 0, false, 0, 0, 0, 0)[:6], nil, OFPBMC_BAD_LEN},
		{"truncated header", []byte{0, 1, 0}, nil, OFPBMC_BAD_LEN},
		{"value outside mask", tlv(1, 0, true, 0, 0, 0, 3, 0, 0, 0, 1), nil, OFPBMC_BAD_WILDCARDS},
		{"partial mask on non-maskable", cat(ethIP, tlv(0x8000, 10, true, 6, 0x0f)), nil, OFPBMC_BAD_MASK},
		{"bad value", cat(ethIP, tlv(0x8000, 8, false, 0xff)), nil, OFPBMC_BAD_VALUE},
		{"missing prerequisite", tlv(0x8000, 12, false, 10, 0, 0, 1), nil, OFPBMC_BAD_PREREQ},
		{"tcp port needs nw_proto", cat(ethIP, tlv(0x8000, 14, false, 0, 80)), nil, OFPBMC_BAD_PREREQ},
		{"ct_nw_src needs valid ct_state", tlv(1, 120, false, 1, 2, 3, 4), nil, OFPBMC_BAD_PREREQ},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fields, err := DecodeMatch(OFP13, tc.in)
			if tc.wantErr != 0 {
				if !errors.Is(err, NewError(OFP13, tc.wantErr)) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(fields) != len(tc.want) {
				t.Fatalf("got %d fields, want %d", len(fields), len(tc.want))
			}
			for i, f := range fields {
				if f.Field.Name != tc.want[i] {
					t.Fatalf("field %d = %s, want %s", i, f.Field.Name, tc.want[i])
				}
			}
			out, err := AppendMatchTLVs(nil, OFP13, fields)
			if err != nil || !bytes.Equal(out, tc.in) {
				t.Fatalf("re-encode = %x, %v; want %x", out, err, tc.in)
			}
		})
	}
}

func TestOXMMatchPadding(t *testing.T) {
	fields := []MatchField{
		{Field: mustField(t, "in_port_oxm"), Value: []byte{0, 0, 0, 5}},
		{Field: mustField(t, "reg0"), Value: []byte{0, 0, 0, 1}, Mask: []byte{0, 0, 0, 0xff}},
	}
	b, err := AppendOXMMatch(nil, OFP13, fields)
	if err != nil {
		t.Fatal(err)
	}
	// 4 (ofp_match header) + 8 + 12 = 24 -> already aligned.
	if len(b) != 24 || be16(b[2:]) != 24 {
		t.Fatalf("match %x", b)
	}
	fields = fields[:1]
	b, _ = AppendOXMMatch(nil, OFP13, fields)
	if len(b) != 16 || be16(b[2:]) != 12 || !allZero(b[12:]) {
		t.Fatalf("padded match %x", b)
	}
	var d Decoder
	d.version = OFP13
	got, n, err := d.DecodeOXMMatch(b)
	if err != nil || n != 16 || len(got) != 1 || be32(got[0].Value) != 5 {
		t.Fatalf("decode: %v %d %v", got, n, err)
	}
	if _, _, err := d.DecodeOXMMatch([]byte{0, 0, 0, 4}); !errors.Is(err, NewError(OFP13, OFPBMC_BAD_TYPE)) {
		t.Fatalf("standard match type: %v", err)
	}
	if _, _, err := d.DecodeOXMMatch(b[:12]); !errors.Is(err, NewError(OFP13, OFPBMC_BAD_LEN)) {
		t.Fatalf("unpadded: %v", err)
	}
}

func TestNXMatchCookie(t *testing.T) {
	cookie := tlv(1, 30, true, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	var d Decoder
	d.version = OFP10
	if _, _, err := d.DecodeNXMatch(pad8copy(cookie), len(cookie), false); !errors.Is(err, NewError(OFP10, OFPBMC_BAD_FIELD)) {
		t.Fatalf("cookie not allowed: %v", err)
	}
	fields, n, err := d.DecodeNXMatch(pad8copy(cookie), len(cookie), true)
	if err != nil || n != 24 || fields[0].Field.Name != "cookie" {
		t.Fatalf("cookie: %v %d %v", fields, n, err)
	}
	out, ml, err := AppendNXMatch(nil, OFP10, fields)
	if err != nil || ml != len(cookie) || !bytes.Equal(out[:ml], cookie) {
		t.Fatalf("re-encode %x %d %v", out, ml, err)
	}
}

func pad8copy(b []byte) []byte { return pad8(append([]byte(nil), b...), 0) }

func TestMatch10RoundTrip(t *testing.T) {
	m := Match10{Wildcards: OFPFW10_ALL&^(OFPFW10_DL_TYPE|OFPFW10_NW_SRC_MASK) | 8<<OFPFW10_NW_SRC_SHIFT, DlType: 0x0800, NwSrc: 0x0a000000, InPort: 3}
	b := m.Append(nil)
	if len(b) != Match10Len {
		t.Fatalf("len %d", len(b))
	}
	got, err := DecodeMatch10(b)
	if err != nil || got != m || got.NwSrcPrefix() != 24 || got.NwDstPrefix() != 0 {
		t.Fatalf("got %+v (%d) %v", got, got.NwSrcPrefix(), err)
	}
	if _, err := DecodeMatch10(b[:39]); err == nil {
		t.Fatal("short match accepted")
	}
}
