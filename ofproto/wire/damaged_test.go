package wire

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"
)

// damageSources returns distinct valid messages: one of each (version,
// type, first body word) from the captures plus the encoded stats cases.
func damageSources(t *testing.T) [][]byte {
	files, err := filepath.Glob(filepath.Join(capturesDir, "*.pcap.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures in %s", capturesDir)
	}
	seen := map[[3]uint32]int{}
	var out [][]byte
	add := func(raw []byte) {
		if len(raw) > 2048 {
			return
		}
		var sub uint32
		if len(raw) >= 16 {
			sub = binary.BigEndian.Uint32(raw[8:]) ^ binary.BigEndian.Uint32(raw[12:])
		}
		k := [3]uint32{uint32(raw[0]), uint32(raw[1]), sub}
		if seen[k] >= 3 {
			return
		}
		seen[k]++
		out = append(out, raw)
	}
	for _, f := range files {
		for _, m := range readCapture(t, f) {
			add(m.raw)
		}
	}
	for _, tc := range statsCases() {
		if b, err := EncodeMessage(nil, tc.v, 1, tc.m); err == nil {
			add(b)
		}
	}
	return out
}

// TestDecodeDamagedMessages decodes every truncation of real messages, and
// copies with one byte of the first 96 set to 0x00, 0x01, 0x7f and 0xff, in
// each version: every decoder must check lengths before reading, so none of
// these may panic (issue 15.1). A panic fails the test with the input.
func TestDecodeDamagedMessages(t *testing.T) {
	srcs := damageSources(t)
	if len(srcs) < 100 {
		t.Fatalf("only %d source messages", len(srcs))
	}
	var d Decoder
	n := 0
	try := func(msg []byte) {
		n++
		binary.BigEndian.PutUint16(msg[2:], uint16(len(msg)))
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("decode panicked: %v\ninput %x", r, msg)
			}
		}()
		h, body, _, err := SplitMessage(msg)
		if err != nil {
			return
		}
		d.Reset()
		_, _ = d.DecodeMessage(h, body)
	}
	buf := make([]byte, 0, 4096)
	for _, src := range srcs {
		for _, v := range []uint8{OFP10, OFP13, OFP15} {
			for cut := HeaderLen; cut <= len(src); cut++ {
				buf = append(buf[:0], src[:cut]...)
				buf[0] = v
				try(buf)
			}
			for i := HeaderLen; i < len(src) && i < HeaderLen+96; i++ {
				for _, x := range []byte{0x00, 0x01, 0x7f, 0xff} {
					buf = append(buf[:0], src...)
					buf[0], buf[i] = v, x
					try(buf)
				}
			}
		}
	}
	t.Logf("%d damaged messages from %d sources decoded without a panic", n, len(srcs))
}

// TestShortNXSetFlowFormat is issue 15.1's crash: an NXT_SET_FLOW_FORMAT
// with fewer than 4 body bytes read the format before the length check.
// It must be refused with OFPBRC_BAD_LEN, as Open vSwitch does.
func TestShortNXSetFlowFormat(t *testing.T) {
	for _, hexLen := range []int{16, 18, 19, 21} {
		msg := make([]byte, hexLen)
		copy(msg, []byte{OFP10, OFPT_EXPERIMENTER, 0, 0, 0, 0, 0x12, 0x34, 0, 0, 0x23, 0x20, 0, 0, 0, 0x0c})
		binary.BigEndian.PutUint16(msg[2:], uint16(hexLen))
		h, body, _, err := SplitMessage(msg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeMessage(h, body)
		var oe *OFPError
		if !errors.As(err, &oe) || oe.Sym != OFPBRC_BAD_LEN {
			t.Errorf("length %d: got %v, want OFPBRC_BAD_LEN", hexLen, err)
		}
	}
}
