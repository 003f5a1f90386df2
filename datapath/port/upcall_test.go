package port

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// wireFrame is an IPv4 frame of n bytes (MACs, ethertype 0x0800, payload).
func wireFrame(n int) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = byte(i + 1)
	}
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	return f
}

func TestDecodeUpcall(t *testing.T) {
	orig := wireFrame(60)
	withX := func(x uint16, tail ...byte) []byte {
		out := append([]byte{}, orig[:12]...)
		out = binary.BigEndian.AppendUint16(out, UpcallEthertype)
		out = binary.BigEndian.AppendUint16(out, x)
		return append(append(out, tail...), orig[12:]...)
	}
	tests := []struct {
		name    string
		frame   []byte
		want    Upcall
		wantErr error
	}{
		{name: "untagged", frame: withX(0x0fff), want: Upcall{HeaderLen: 4}},
		{name: "802.1Q VID 10", frame: withX(10), want: Upcall{HeaderLen: 4, Tagged: true, TPID: 0x8100, TCI: 10}},
		{name: "802.1Q TCI 0 (priority tag, VID 0)", frame: withX(0), want: Upcall{HeaderLen: 4, Tagged: true, TPID: 0x8100, TCI: 0}},
		{name: "802.1Q PCP 7 DEI VID 4094", frame: withX(0xfffe), want: Upcall{HeaderLen: 4, Tagged: true, TPID: 0x8100, TCI: 0xfffe}},
		{name: "802.1ad follows", frame: withX(0x1fff, 0x88, 0xa8, 0x20, 0x05), want: Upcall{HeaderLen: 8, Tagged: true, TPID: 0x88a8, TCI: 0x2005}},
		{name: "802.1Q VID 4095 follows", frame: withX(0x1fff, 0x81, 0x00, 0xef, 0xff), want: Upcall{HeaderLen: 8, Tagged: true, TPID: 0x8100, TCI: 0xefff}},
		{name: "reserved X with PCP", frame: withX(0x2fff), wantErr: ErrUpcallX},
		{name: "reserved X all ones", frame: withX(0xffff), wantErr: ErrUpcallX},
		{name: "following TPID unknown", frame: withX(0x1fff, 0x08, 0x00, 0, 1), wantErr: ErrUpcallTPID},
		{name: "not an upcall", frame: orig, wantErr: ErrUpcallEthertype},
		{name: "no ethertype after header", frame: withX(0x0fff)[:16], wantErr: ErrUpcallShort},
		{name: "no room for the following tag", frame: withX(0x1fff, 0x88, 0xa8, 0, 1)[:20], wantErr: ErrUpcallShort},
		{name: "runt", frame: orig[:10], wantErr: ErrUpcallShort},
		{name: "shortest untagged", frame: withX(0x0fff)[:18], want: Upcall{HeaderLen: 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeUpcall(tc.frame)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("DecodeUpcall = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// EncodeUpcall picks the short form for every 802.1Q tag but VID 4095,
// and DecodeUpcall gives back what it was told.
func TestEncodeUpcallRoundTrip(t *testing.T) {
	orig := wireFrame(64)
	for _, tc := range []struct {
		tagged    bool
		tpid, tci uint16
		hdrLen    int
	}{
		{false, 0, 0, 4},
		{true, 0x8100, 0, 4},
		{true, 0x8100, 0xe00a, 4},
		{true, 0x8100, 0x0fff, 8},
		{true, 0x8100, 0xffff, 8},
		{true, 0x88a8, 100, 8},
	} {
		enc := EncodeUpcall(orig, tc.tagged, tc.tpid, tc.tci)
		if len(enc) != len(orig)+tc.hdrLen {
			t.Errorf("%+v: encoded %d bytes, want %d", tc, len(enc), len(orig)+tc.hdrLen)
		}
		u, err := DecodeUpcall(enc)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		want := Upcall{HeaderLen: tc.hdrLen, Tagged: tc.tagged, TPID: tc.tpid, TCI: tc.tci}
		if u != want {
			t.Errorf("%+v: decoded %+v, want %+v", tc, u, want)
		}
		if !bytes.Equal(enc[:12], orig[:12]) || !bytes.Equal(enc[12+u.HeaderLen:], orig[12:]) {
			t.Errorf("%+v: encoded %x does not wrap %x", tc, enc, orig)
		}
	}
}

func TestDecodeUpcallAllocs(t *testing.T) {
	f := EncodeUpcall(wireFrame(60), true, 0x88a8, 7)
	bad := EncodeUpcall(wireFrame(60), false, 0, 0)[:16]
	if n := testing.AllocsPerRun(100, func() {
		_, _ = DecodeUpcall(f)
		_, _ = DecodeUpcall(bad)
	}); n != 0 {
		t.Errorf("DecodeUpcall allocates %v times", n)
	}
}

// FuzzUpcall: DecodeUpcall never panics, and what it accepts is a header
// EncodeUpcall writes the same way, leaving an Ethernet header's worth of
// frame. (It also accepts an 802.1Q tag of any VID in the long form.)
func FuzzUpcall(f *testing.F) {
	for _, seed := range [][]byte{
		EncodeUpcall(wireFrame(60), false, 0, 0),
		EncodeUpcall(wireFrame(60), true, 0x8100, 5),
		EncodeUpcall(wireFrame(18), true, 0x88a8, 0xffff),
		EncodeUpcall(wireFrame(14), true, 0x8100, 0x0fff),
		append(wireFrame(14)[:12], 0x88, 0xb5, 0x3f, 0xff, 0x08, 0x00),
		append(wireFrame(14)[:12], 0x88, 0xb5, 0x1f, 0xff, 0x88),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		u, err := DecodeUpcall(frame)
		if err != nil {
			if u != (Upcall{}) {
				t.Fatalf("error %v with %+v", err, u)
			}
			return
		}
		if len(frame) < 12+u.HeaderLen+2 {
			t.Fatalf("accepted %d bytes with a %d-byte header", len(frame), u.HeaderLen)
		}
		orig := append(append([]byte{}, frame[:12]...), frame[12+u.HeaderLen:]...)
		re := EncodeUpcall(orig, u.Tagged, u.TPID, u.TCI)
		if u.HeaderLen == UpcallHeaderMaxLen && u.TPID == 0x8100 && u.TCI&0x0fff != 0x0fff {
			// The long form of a tag the short one could carry: not what
			// EncodeUpcall writes, but it says the same.
			if u2, err := DecodeUpcall(re); err != nil || u2.TCI != u.TCI || !u2.Tagged || u2.TPID != u.TPID {
				t.Fatalf("%x decodes to %+v; re-encoded %x to %+v, %v", frame, u, re, u2, err)
			}
			return
		}
		if !bytes.Equal(re, frame) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", frame, u, re)
		}
	})
}
