package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestReadMessage(t *testing.T) {
	echo := []byte{0x04, OFPT_ECHO_REQUEST, 0x00, 0x0c, 0, 0, 0, 7, 'a', 'b', 'c', 'd'}
	tests := []struct {
		name    string
		in      []byte
		wantErr error
		wantSym ErrorCode
		body    string
	}{
		{name: "ok", in: echo, body: "abcd"},
		{name: "empty stream", in: nil, wantErr: io.EOF},
		{name: "truncated header", in: echo[:5], wantErr: io.ErrUnexpectedEOF},
		{name: "length below 8", in: []byte{4, 2, 0, 7, 0, 0, 0, 1}, wantSym: OFPBRC_BAD_LEN},
		{name: "length beyond data", in: []byte{4, 2, 0, 20, 0, 0, 0, 1, 1, 2}, wantErr: io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]byte, MaxMessageLen)
			h, body, err := ReadMessage(bytes.NewReader(tc.in), buf)
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			case tc.wantSym != 0:
				if !errors.Is(err, NewError(OFP13, tc.wantSym)) {
					t.Fatalf("err = %v, want %v", err, tc.wantSym)
				}
			default:
				if err != nil || string(body) != tc.body || h.Xid != 7 || h.Length != 12 {
					t.Fatalf("got %+v %q %v", h, body, err)
				}
			}
		})
	}
}

func TestReadMessageSmallBuffer(t *testing.T) {
	msg := append([]byte{1, 0, 0, 100, 0, 0, 0, 1}, make([]byte, 92)...)
	h, body, err := ReadMessage(bytes.NewReader(msg), make([]byte, 16))
	if err != nil || h.Length != 100 || len(body) != 92 {
		t.Fatalf("got %+v len %d err %v", h, len(body), err)
	}
}

func TestSplitMessage(t *testing.T) {
	two := []byte{1, 2, 0, 8, 0, 0, 0, 1, 1, 3, 0, 9, 0, 0, 0, 2, 'x'}
	h, body, rest, err := SplitMessage(two)
	if err != nil || h.Type != 2 || len(body) != 0 || len(rest) != 9 {
		t.Fatalf("first: %+v %v %d %v", h, body, len(rest), err)
	}
	h, body, rest, err = SplitMessage(rest)
	if err != nil || h.Type != 3 || string(body) != "x" || len(rest) != 0 {
		t.Fatalf("second: %+v %q %v", h, body, err)
	}
	if _, _, _, err := SplitMessage(two[8:12]); !errors.Is(err, ErrShortMessage) {
		t.Fatalf("partial: %v", err)
	}
}

func TestNegotiate(t *testing.T) {
	ours := VersionBitmap(OFP10, OFP13, OFP15)
	tests := []struct {
		name     string
		hdrVer   uint8
		elements []HelloElement
		want     uint8
		ok       bool
	}{
		{"of10 without bitmap", OFP10, nil, OFP10, true},
		{"of13 without bitmap falls back to 1..4", OFP13, nil, OFP13, true},
		{"of14 header without bitmap picks 1.3", OFP14, nil, OFP13, true},
		{"ofnet bitmap 1.0+1.5", OFP15, []HelloElement{{OFPHET_VERSIONBITMAP, put32(nil, VersionBitmap(OFP10, OFP15))}}, OFP15, true},
		{"bitmap only 1.4", OFP14, []HelloElement{{OFPHET_VERSIONBITMAP, put32(nil, VersionBitmap(OFP14))}}, OFP14, false},
		{"bad bitmap ignored: header version used", OFP13, []HelloElement{{OFPHET_VERSIONBITMAP, []byte{0, 0, 0, 1}}}, OFP13, true},
		{"unknown element ignored", OFP15, []HelloElement{{7, []byte{1, 2, 3}}}, OFP15, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Negotiate(ours, tc.hdrVer, &Hello{Elements: tc.elements})
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Negotiate = %#x,%v want %#x,%v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestHelloEncoding(t *testing.T) {
	// OVS sends a bitmap unless the versions are "1 through N".
	if h := NewHello(VersionBitmap(1, 2, 3, 4)); len(h.Elements) != 0 {
		t.Fatalf("contiguous versions should have no bitmap: %+v", h)
	}
	allowed := VersionBitmap(OFP10, OFP13, OFP15)
	h := NewHello(allowed)
	if HelloVersion(allowed) != OFP15 {
		t.Fatalf("hello version %#x", HelloVersion(allowed))
	}
	b, err := EncodeMessage(nil, HelloVersion(allowed), 1, h)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{6, 0, 0, 16, 0, 0, 0, 1, 0, 1, 0, 8, 0, 0, 0, 0x52}
	if !bytes.Equal(b, want) {
		t.Fatalf("hello = %x want %x", b, want)
	}
	m, err := DecodeMessage(Header{Version: 6, Type: 0, Length: 16, Xid: 1}, b[8:])
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m.(*Hello).PeerVersions(6); got != allowed || !ok {
		t.Fatalf("peer versions %#x %v", got, ok)
	}
	e := IncompatibleHelloError(VersionBitmap(OFP10), VersionBitmap(OFP13))
	if string(e.Data) != "We support version 0x01, you support version 0x04, no common versions." {
		t.Fatalf("error text %q", e.Data)
	}
}

func TestErrorEncodings(t *testing.T) {
	tests := []struct {
		sym     ErrorCode
		version uint8
		typ     uint16
		code    uint16
		exp     uint32
	}{
		{OFPBAC_BAD_LEN, OFP13, 2, 1, 0},
		{OFPBAC_BAD_VENDOR_TYPE, OFP13, 2, 3, 0},
		{OFPBMC_DUP_FIELD, OFP13, 4, 10, 0},
		{OFPBMC_BAD_FIELD, OFP15, 4, 6, 0},
		{OFPBMC_BAD_FIELD, OFP10, 0, 263, NX_VENDOR_ID},
		{OFPFMFC_BAD_COMMAND, OFP10, 3, 4, 0},
		{OFPFMFC_BAD_COMMAND, OFP13, 5, 6, 0},
		{OFPBFC_BAD_ID, OFP13, 2302, 0, ONF_VENDOR_ID},
		{OFPBFC_BAD_ID, OFP15, 17, 2, 0},
		{NXBRC_MUST_BE_ZERO, OFP13, 4, 0, NX_VENDOR_ID},
		{NXBRC_MUST_BE_ZERO, OFP10, 1, 515, NX_VENDOR_ID},
		{OFPBPC_BAD_LEN, OFP13, 13, 3, 0},
		{OFPBPC_BAD_LEN, OFP15, 14, 1, 0},
		{OFPPMFC_BAD_HW_ADDR, OFP15, 7, 1, 0},
		{OFPHFC_INCOMPATIBLE, OFP13, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.sym.String(), func(t *testing.T) {
			e := NewError(tc.version, tc.sym)
			if e.Type != tc.typ || e.Code != tc.code || e.Experimenter != tc.exp {
				t.Fatalf("%v in %#x = %d/%d/%#x, want %d/%d/%#x", tc.sym, tc.version, e.Type, e.Code, e.Experimenter, tc.typ, tc.code, tc.exp)
			}
			sym, ok := LookupError(tc.version, tc.exp, tc.typ, tc.code)
			if !ok || sym != tc.sym {
				t.Fatalf("LookupError = %v %v", sym, ok)
			}
			// Round trip through an OFPT_ERROR message.
			msg := ErrorMsgFor(e, []byte{1, 2, 3})
			b, err := EncodeMessage(nil, tc.version, 9, msg)
			if err != nil {
				t.Fatal(err)
			}
			h, body, _, err := SplitMessage(b)
			if err != nil {
				t.Fatal(err)
			}
			dm, err := DecodeMessage(h, body)
			if err != nil {
				t.Fatal(err)
			}
			got := dm.(*ErrorMsg).Err(tc.version)
			if got.Sym != tc.sym || !bytes.Equal(dm.(*ErrorMsg).Data, []byte{1, 2, 3}) {
				t.Fatalf("decoded %v data %x", got, dm.(*ErrorMsg).Data)
			}
		})
	}
	// An error that does not exist in a version falls back like OVS.
	if e := NewError(OFP10, OFPBIC_BAD_LEN); e.Sym != OFPBIC_BAD_LEN || e.Experimenter != NX_VENDOR_ID || e.Code != 521 {
		t.Fatalf("unencodable fallback = %+v", e)
	}
}
