package rtnl

import (
	"bytes"
	"fmt"
	"testing"
)

func TestAppendAttr(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want []byte
	}{
		{"empty", nil, []byte{4, 0, 7, 0}},
		{"four bytes", []byte{10, 0, 0, 1}, []byte{8, 0, 7, 0, 10, 0, 0, 1}},
		{"padded", []byte{1, 2, 3, 4, 5, 6}, []byte{10, 0, 7, 0, 1, 2, 3, 4, 5, 6, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := AppendAttr([]byte{}, 7, tc.data)
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("AppendAttr = % x, want % x", got, tc.want)
			}
		})
	}
}

func TestNewMessage(t *testing.T) {
	got := NewMessage(24, 0x5, 7, []byte{1, 2, 3, 4})
	want := []byte{20, 0, 0, 0, 24, 0, 5, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}
	if !bytes.Equal(got, want) {
		t.Fatalf("NewMessage = % x, want % x", got, want)
	}
}

func TestAckError(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"ack", []byte{0, 0, 0, 0}, ""},
		{"EEXIST", []byte{0xef, 0xff, 0xff, 0xff}, "file exists"},
		{"short", []byte{0}, "netlink: short error message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := AckError(tc.data)
			if got := fmt.Sprint(err); tc.want == "" && err != nil || tc.want != "" && got != tc.want {
				t.Fatalf("AckError = %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzParseAttrs: rtnetlink answers split into attributes never panic,
// and every attribute lies inside the input.
func FuzzParseAttrs(f *testing.F) {
	f.Add(AppendAttr(AppendAttr(nil, 1, []byte{10, 0, 0, 1}), 4, []byte{2, 0, 0, 0}))
	f.Add([]byte{3, 0, 1, 0})
	f.Add([]byte{0xff, 0xff, 1, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, a := range ParseAttrs(b) {
			if len(a.Value) > len(b) || (len(a.Value) > 0 && !bytes.Contains(b, a.Value)) {
				t.Fatalf("attribute %d of %d bytes is not in the input", a.Type, len(a.Value))
			}
		}
	})
}
