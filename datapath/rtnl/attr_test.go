package rtnl

import (
	"bytes"
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
