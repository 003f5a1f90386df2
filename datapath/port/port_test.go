package port

import "testing"

func TestLengthOK(t *testing.T) {
	tests := []struct {
		n, mtu int
		want   bool
	}{
		{0, 1500, false},
		{13, 1500, false},   // runt
		{14, 1500, true},    // bare header
		{1514, 1500, true},  // untagged full MTU
		{1522, 1500, true},  // QinQ full MTU
		{1523, 1500, false}, // oversize
		{9022, 9000, true},
		{9023, 9000, false},
	}
	for _, tc := range tests {
		if got := LengthOK(tc.n, MaxFrameLen(tc.mtu)); got != tc.want {
			t.Errorf("LengthOK(%d, MaxFrameLen(%d)=%d) = %v, want %v", tc.n, tc.mtu, MaxFrameLen(tc.mtu), got, tc.want)
		}
	}
}

func TestBatchBufferReuse(t *testing.T) {
	b := NewBatch(4)
	if b.Cap() != 4 || len(b.Meta) != 4 {
		t.Fatalf("NewBatch(4): cap %d, meta %d", b.Cap(), len(b.Meta))
	}
	first := b.Buffer(2, 1500)
	first[0] = 0x42
	tests := []struct {
		name     string
		size     int
		wantSame bool
	}{
		{"smaller size reuses", 100, true},
		{"same size reuses", 1500, true},
		{"larger size reallocates", 2000, false},
	}
	for _, tc := range tests {
		buf := b.Buffer(2, tc.size)
		if len(buf) != tc.size {
			t.Errorf("%s: len %d, want %d", tc.name, len(buf), tc.size)
		}
		if same := &buf[0] == &first[0]; same != tc.wantSame {
			t.Errorf("%s: reused = %v, want %v", tc.name, same, tc.wantSame)
		}
	}
	if NewBatch(0).Cap() != 1 {
		t.Errorf("NewBatch(0) must still hold one frame")
	}
	if n := testing.AllocsPerRun(100, func() { _ = b.Buffer(1, 1500) }); n != 0 {
		t.Errorf("Buffer allocates %v times per call once warmed up", n)
	}
}
