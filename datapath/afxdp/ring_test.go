package afxdp

import (
	"sync/atomic"
	"testing"

	"github.com/govs-project/govs/datapath/port"
	"golang.org/x/sys/unix"
)

// fakeOffsets lay a ring out in plain memory the way the kernel does in
// its mapping: indexes and flags on their own cache lines, then entries.
var fakeOffsets = unix.XDPRingOffset{Producer: 0, Consumer: 64, Flags: 128, Desc: 192}

func fakeDescRing(t *testing.T, size uint32) descRing {
	t.Helper()
	mem := make([]byte, ringMapLen(fakeOffsets, size, xdpDescLen))
	r, err := newDescRing(mem, fakeOffsets, size)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fakeAddrRing(t *testing.T, size uint32) addrRing {
	t.Helper()
	mem := make([]byte, ringMapLen(fakeOffsets, size, 8))
	r, err := newAddrRing(mem, fakeOffsets, size)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewRingChecks(t *testing.T) {
	if _, err := newDescRing(make([]byte, 4096), fakeOffsets, 12); err == nil {
		t.Error("ring of 12 entries accepted")
	}
	if _, err := newDescRing(make([]byte, 256), fakeOffsets, 16); err == nil {
		t.Error("16 descriptors accepted in a 256-byte mapping")
	}
	if _, err := newAddrRing(make([]byte, 100), fakeOffsets, 4); err == nil {
		t.Error("flags offset beyond the mapping accepted")
	}
}

// The indexes run freely and wrap at 2^32: free and avail stay right
// across the wrap.
func TestRingIndexesWrap(t *testing.T) {
	r := fakeAddrRing(t, 8)
	start := ^uint32(0) - 2 // three entries before the wrap
	atomic.StoreUint32(r.producer, start)
	atomic.StoreUint32(r.consumer, start)
	r.cachedProd, r.cachedCons = start, start

	// Producer side: we fill 8, the consumer has taken none.
	if got := r.free(8); got != 8 {
		t.Fatalf("free on an empty ring = %d, want 8", got)
	}
	for i := range 8 {
		r.addrs[r.cachedProd&r.mask] = uint64(i)
		r.cachedProd++
	}
	r.submit()
	if got := r.free(1); got != 0 {
		t.Fatalf("free on a full ring = %d, want 0", got)
	}
	// The other side consumes 5; free re-reads the consumer index.
	atomic.StoreUint32(r.consumer, start+5)
	if got := r.free(1); got != 5 {
		t.Fatalf("free after 5 consumed = %d, want 5", got)
	}

	// Consumer side of the same ring: 3 entries wait, past the wrap.
	r.cachedCons = start + 5
	if got := r.avail(); got != 3 {
		t.Fatalf("avail = %d, want 3", got)
	}
	for want := uint64(5); want < 8; want++ {
		if got := r.addrs[r.cachedCons&r.mask]; got != want {
			t.Fatalf("entry %d, want %d", got, want)
		}
		r.cachedCons++
	}
	r.release()
	if got := atomic.LoadUint32(r.consumer); got != start+8 {
		t.Fatalf("consumer index %d, want %d", got, start+8)
	}
	if r.avail() != 0 || r.ready() {
		t.Fatal("drained ring reports entries")
	}
}

// rxPort is a Port over plain memory: a UMEM of 8 frames and an RxRing
// and FillRing the test plays the kernel for.
func rxPort(t *testing.T) *Port {
	t.Helper()
	const frames, frameSize = 8, 2048
	p := &Port{
		umem:      make([]byte, frames*frameSize),
		frameSize: frameSize,
		rx:        fakeDescRing(t, frames),
		fill:      fakeAddrRing(t, frames),
		maxFrame:  port.MaxFrameLen(1500),
		held:      make([]uint64, 0, frames),
	}
	p.Init("afxdp", "fake", 0)
	// All frames were given to the kernel at open.
	p.fill.cachedProd = frames
	p.fill.submit()
	atomic.StoreUint32(p.fill.consumer, frames)
	return p
}

// kernelRx plays the kernel receiving: descriptors onto the RxRing.
func kernelRx(p *Port, descs ...unix.XDPDesc) {
	prod := atomic.LoadUint32(p.rx.producer)
	for _, d := range descs {
		p.rx.descs[prod&p.rx.mask] = d
		prod++
	}
	atomic.StoreUint32(p.rx.producer, prod)
}

func TestRxFillDropsBadFrames(t *testing.T) {
	p := rxPort(t)
	hr := uint64(unix.XDP_PACKET_HEADROOM)
	kernelRx(p,
		unix.XDPDesc{Addr: 0*2048 + hr, Len: 60},                     // good
		unix.XDPDesc{Addr: 1*2048 + hr, Len: 13},                     // runt
		unix.XDPDesc{Addr: 2*2048 + hr, Len: uint32(p.maxFrame + 1)}, // too long
		unix.XDPDesc{Addr: uint64(len(p.umem)) - 10, Len: 60},        // beyond the UMEM
		unix.XDPDesc{Addr: 3*2048 + hr, Len: uint32(p.maxFrame)},     // good, longest
		unix.XDPDesc{Addr: 4*2048 + hr, Len: 100},                    // good, next batch
	)
	b := port.NewBatch(2)
	var c port.RxCounts
	n := p.Fill(b, 0, &c)
	if n != 2 || c.Packets != 2 || c.Errors != 3 || c.Bytes != uint64(60+p.maxFrame) {
		t.Fatalf("Fill = %d, counts %+v; want 2 frames, 3 errors", n, c)
	}
	if &b.Frames[0][0] != &p.umem[hr] || len(b.Frames[0]) != 60 || cap(b.Frames[0]) != 60 {
		t.Errorf("frame 0 does not point at its UMEM bytes (len %d cap %d)", len(b.Frames[0]), cap(b.Frames[0]))
	}
	if len(b.Frames[1]) != p.maxFrame {
		t.Errorf("frame 1 is %d bytes, want %d", len(b.Frames[1]), p.maxFrame)
	}
	// Five descriptors were taken; the RxRing slots are released at once.
	if got := atomic.LoadUint32(p.rx.consumer); got != 5 {
		t.Errorf("RxRing consumer %d, want 5", got)
	}
	// Four UMEM frames are ours until recycled (not the bogus address).
	if len(p.held) != 4 {
		t.Fatalf("held %v, want 4 frames", p.held)
	}
	p.Recycle()
	if len(p.held) != 0 {
		t.Fatalf("held %v after recycle", p.held)
	}
	if got := atomic.LoadUint32(p.fill.producer); got != 8+4 {
		t.Fatalf("FillRing producer %d, want 12", got)
	}
	for i, want := range []uint64{0, 2048, 4096, 6144} {
		if got := p.fill.addrs[(8+uint32(i))&p.fill.mask]; got != want {
			t.Errorf("FillRing entry %d = %d, want chunk start %d", i, got, want)
		}
	}

	n = p.Fill(b, 0, &c)
	if n != 1 || len(b.Frames[0]) != 100 {
		t.Fatalf("second Fill = %d frames, want the 100-byte one", n)
	}
}

func TestRecycleKeepsWhatDoesNotFit(t *testing.T) {
	p := rxPort(t)
	// The kernel has taken only 2 of the 8 fill entries back.
	atomic.StoreUint32(p.fill.consumer, 2)
	p.held = append(p.held, 100, 2048+256, 4096+256)
	p.Recycle()
	if len(p.held) != 1 || p.held[0] != 4096+256 {
		t.Fatalf("held %v, want the one frame that did not fit", p.held)
	}
}
