package afpacket

import (
	"encoding/binary"
	"testing"

	"github.com/govs-project/govs/datapath/port"
	"golang.org/x/sys/unix"
)

// synthRing lays frames out in one ring of a version and walks it with
// opts, the way Port.Fill does.
type synthRing struct {
	name string
	// fill builds the ring and walks it into b; reset (from the ring
	// memory as built) lets a benchmark walk the same frames again.
	build func(t testing.TB, opts rxOpts, frames ...*synthFrame) (fill func(b *port.Batch, c *port.RxCounts) int, reset func())
}

var synthRings = []synthRing{
	{"TPACKET_V2", func(t testing.TB, opts rxOpts, frames ...*synthFrame) (func(*port.Batch, *port.RxCounts) int, func()) {
		mem := buildFrameRing(t, testSlotSize, frames...)
		pristine := append([]byte(nil), mem...)
		r := &frameRing{mem: mem, frameSize: testSlotSize, frameNr: len(frames), opts: opts}
		return func(b *port.Batch, c *port.RxCounts) int { return r.fill(b, 0, c) },
			func() { copy(mem, pristine); r.cur, r.relN, r.opts = 0, 0, opts }
	}},
	{"TPACKET_V3", func(t testing.TB, opts rxOpts, frames ...*synthFrame) (func(*port.Batch, *port.RxCounts) int, func()) {
		blk := make([]synthFrame, len(frames))
		for i, f := range frames {
			blk[i] = *f
		}
		mem := buildRing(t, blk)
		pristine := append([]byte(nil), mem...)
		r := &ring{mem: mem, blockSize: testBlockSize, blockNr: 1, opts: opts}
		return func(b *port.Batch, c *port.RxCounts) int { return r.fill(b, 0, c) },
			func() { copy(mem, pristine); r.cur, r.relN, r.inBlock, r.opts = 0, 0, false, opts }
	}},
}

// upcallCase is an original frame as an ETH_P_ALL tap receives it: the
// frame without the tag the kernel held outside it, that tag, and the
// virtio_net_hdr the kernel writes for it.
type upcallCase struct {
	name      string
	orig      []byte // as on the wire without the out-of-frame tag
	tagged    bool
	tpid, tci uint16
	vnet      *port.VnetHdr
}

// tapSlot is the slot tpacket_rcv writes for c on an ETH_P_ALL socket.
func (c *upcallCase) tapSlot() *synthFrame {
	f := &synthFrame{data: c.orig, proto: binary.BigEndian.Uint16(c.orig[12:]), vnet: c.vnet}
	if c.tagged {
		f.status = unix.TP_STATUS_VLAN_VALID | unix.TP_STATUS_VLAN_TPID_VALID
		f.tci, f.tpid = uint32(c.tci), c.tpid
	}
	return f
}

// upcallSlot is the slot for c sent up by the tc program: the header
// inserted, and the kernel's offsets counting it.
func (c *upcallCase) upcallSlot() *synthFrame {
	data := port.EncodeUpcall(c.orig, c.tagged, c.tpid, c.tci)
	f := &synthFrame{data: data, proto: port.UpcallEthertype}
	if c.vnet != nil {
		v := *c.vnet
		grown := uint16(len(data) - len(c.orig))
		if v.Flags&port.VnetFlagNeedsCsum != 0 {
			v.CsumStart += grown
		}
		if v.HdrLen != 0 {
			v.HdrLen += grown
		}
		f.vnet = &v
	}
	return f
}

func ipv4Frame(n int) []byte {
	f := ethFrame(n, 0x10)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	return f
}

var upcallCases = []upcallCase{
	{name: "untagged", orig: ipv4Frame(60)},
	{name: "802.1Q VID 10", orig: ipv4Frame(60), tagged: true, tpid: 0x8100, tci: 10},
	{name: "802.1Q TCI 0", orig: ipv4Frame(60), tagged: true, tpid: 0x8100, tci: 0},
	{name: "802.1Q PCP 5 DEI VID 4094", orig: ipv4Frame(100), tagged: true, tpid: 0x8100, tci: 0xbffe},
	{name: "802.1ad", orig: ipv4Frame(60), tagged: true, tpid: 0x88a8, tci: 0x2064},
	{name: "802.1Q VID 4095", orig: ipv4Frame(60), tagged: true, tpid: 0x8100, tci: 0x0fff},
	{name: "shortest", orig: ipv4Frame(14)},
	{name: "full size 802.1ad", orig: ipv4Frame(port.MaxFrameLen(1500) - 4), tagged: true, tpid: 0x88a8, tci: 7},
	{name: "partial checksum untagged", orig: ipv4Frame(80),
		vnet: &port.VnetHdr{Flags: port.VnetFlagNeedsCsum, CsumStart: 34, CsumOffset: 16, HdrLen: 54}},
	{name: "partial checksum 802.1Q", orig: ipv4Frame(80), tagged: true, tpid: 0x8100, tci: 3,
		vnet: &port.VnetHdr{Flags: port.VnetFlagNeedsCsum, CsumStart: 34, CsumOffset: 16}},
	{name: "GSO 802.1ad", orig: ipv4Frame(200), tagged: true, tpid: 0x88a8, tci: 9,
		vnet: &port.VnetHdr{Flags: port.VnetFlagNeedsCsum, GSOType: port.VnetGSOTCPv4, GSOSize: 100, CsumStart: 34, CsumOffset: 16, HdrLen: 66}},
	{name: "checksum valid", orig: ipv4Frame(80), tagged: true, tpid: 0x8100, tci: 3,
		vnet: &port.VnetHdr{Flags: port.VnetFlagDataValid}},
}

// A frame sent up by the tc program comes out of the port exactly as an
// ETH_P_ALL tap hands out the same frame: same bytes, same metadata, with
// the tag put back into the frame or left in the metadata alike.
func TestUpcallDeliverLikeTap(t *testing.T) {
	for _, sr := range synthRings {
		for _, keep := range []bool{false, true} {
			for _, tc := range upcallCases {
				name := sr.name + "/" + tc.name
				if keep {
					name += "/KeepVLANStripped"
				}
				t.Run(name, func(t *testing.T) {
					opts := rxOpts{maxFrame: port.MaxFrameLen(1500), reinsertV: !keep, vnet: tc.vnet != nil}
					tapFill, _ := sr.build(t, opts, tc.tapSlot())
					want, wantMeta := port.NewBatch(1), port.RxCounts{}
					if n := tapFill(want, &wantMeta); n != 1 {
						t.Fatalf("tap mode handed out %d frames (%+v)", n, wantMeta)
					}
					if tc.vnet != nil && tc.tagged && !keep && want.Meta[0].Vnet.HdrLen != 0 {
						// The one difference: the kernel counts hdr_len
						// (a hint) with the upcall header, so it counts
						// the tag put back, which tap mode leaves out.
						want.Meta[0].Vnet.HdrLen += port.VLANHeaderLen
					}
					opts.upcall = true
					fill, _ := sr.build(t, opts, tc.upcallSlot())
					b := port.NewBatch(1)
					var c port.RxCounts
					checkFill(t, b, fill(b, &c), c, [][]byte{want.Frames[0]}, []port.Meta{want.Meta[0]}, wantMeta)
				})
			}
		}
	}
}

// Only a frame with sll_protocol 0x88b5 on a socket in upcall mode (or
// left in the ring from it, upcallLeft) is decoded; a bad header is an
// error, and the walk goes on.
func TestUpcallDeliverSelects(t *testing.T) {
	orig := ipv4Frame(60)
	up := port.EncodeUpcall(orig, true, 0x88a8, 5)
	badX := port.EncodeUpcall(orig, false, 0, 0)
	binary.BigEndian.PutUint16(badX[14:], 0x2fff)
	wantUp := tagged(orig, 0x88a8, 5)
	upMeta := port.Meta{Flags: port.FlagVLAN, VLANTPID: 0x88a8, VLANTCI: 5}
	tests := []struct {
		name     string
		upcall   bool
		left     int
		slots    []*synthFrame
		want     [][]byte
		wantMeta []port.Meta
		wantC    port.RxCounts
	}{
		{name: "upcall mode decodes 0x88b5 only", upcall: true,
			slots:    []*synthFrame{{data: up, proto: port.UpcallEthertype}, {data: orig, proto: 0x0800}},
			want:     [][]byte{wantUp, orig},
			wantMeta: []port.Meta{upMeta, {}},
			wantC:    port.RxCounts{Packets: 2, Bytes: 124}},
		{name: "tap mode leaves 0x88b5 alone",
			slots: []*synthFrame{{data: up, proto: port.UpcallEthertype}},
			want:  [][]byte{up}, wantMeta: []port.Meta{{}},
			wantC: port.RxCounts{Packets: 1, Bytes: 68}},
		{name: "frames left from upcall mode are decoded, then tap", left: 2,
			slots: []*synthFrame{
				{data: up, proto: port.UpcallEthertype}, {data: orig, proto: 0x0800},
				{data: port.EncodeUpcall(orig, true, 0x88a8, 5), proto: port.UpcallEthertype}},
			want:     [][]byte{wantUp, orig, up},
			wantMeta: []port.Meta{upMeta, {}, {}},
			wantC:    port.RxCounts{Packets: 3, Bytes: 64 + 60 + 68}},
		{name: "malformed X", upcall: true,
			slots: []*synthFrame{{data: badX, proto: port.UpcallEthertype}, {data: orig, proto: 0x0800}},
			want:  [][]byte{orig}, wantMeta: []port.Meta{{}},
			wantC: port.RxCounts{Packets: 1, Bytes: 60, Errors: 1}},
		{name: "too short", upcall: true,
			slots: []*synthFrame{{data: up[:17], proto: port.UpcallEthertype}},
			wantC: port.RxCounts{Errors: 1}},
		{name: "not 0x88b5 inside", upcall: true,
			slots: []*synthFrame{{data: orig, proto: port.UpcallEthertype}},
			wantC: port.RxCounts{Errors: 1}},
		{name: "checksum starting in the header", upcall: true,
			slots: []*synthFrame{{data: port.EncodeUpcall(orig, false, 0, 0), proto: port.UpcallEthertype,
				vnet: &port.VnetHdr{Flags: port.VnetFlagNeedsCsum, CsumStart: 14}}},
			wantC: port.RxCounts{Errors: 1}},
	}
	for _, sr := range synthRings {
		for _, tc := range tests {
			t.Run(sr.name+"/"+tc.name, func(t *testing.T) {
				opts := rxOpts{maxFrame: port.MaxFrameLen(1500), reinsertV: true, upcall: tc.upcall, upcallLeft: tc.left}
				for _, s := range tc.slots {
					opts.vnet = opts.vnet || s.vnet != nil
				}
				if opts.vnet {
					for _, s := range tc.slots {
						if s.vnet == nil {
							s.vnet = &port.VnetHdr{}
						}
					}
					for i := range tc.wantMeta {
						tc.wantMeta[i].Flags |= port.FlagVnet
					}
				}
				fill, _ := sr.build(t, opts, tc.slots...)
				b := port.NewBatch(4)
				var c port.RxCounts
				n := fill(b, &c)
				for i := range n {
					b.Meta[i].RxHash = 0 // the synthetic V3 ring's, not checked here
				}
				checkFill(t, b, n, c, tc.want, tc.wantMeta, tc.wantC)
			})
		}
	}
}

// Taking a frame sent up out of the ring allocates nothing, tag put back
// or not.
func TestUpcallDeliverAllocs(t *testing.T) {
	for _, sr := range synthRings {
		for _, keep := range []bool{false, true} {
			var slots []*synthFrame
			for _, tc := range upcallCases {
				if tc.vnet == nil {
					slots = append(slots, tc.upcallSlot())
				}
			}
			opts := rxOpts{maxFrame: port.MaxFrameLen(1500), reinsertV: !keep, upcall: true}
			fill, reset := sr.build(t, opts, slots...)
			b := port.NewBatch(len(slots))
			var c port.RxCounts
			allocs := testing.AllocsPerRun(100, func() {
				reset()
				c = port.RxCounts{}
				if n := fill(b, &c); n != len(slots) {
					t.Fatalf("handed out %d of %d frames", n, len(slots))
				}
			})
			if allocs != 0 {
				t.Errorf("%s keep=%v: %v allocations per fill", sr.name, keep, allocs)
			}
		}
	}
}

// framesLeft counts what Port.Tap leaves to decode: every slot handed
// over (V2); the rest of the current block, the blocks after it and the
// block the kernel fills (V3), not a stale count in a block released.
func TestFramesLeft(t *testing.T) {
	f := &synthFrame{data: ipv4Frame(60)}
	v2 := frameRing{mem: buildFrameRing(t, testSlotSize, f, f, f, nil), frameSize: testSlotSize, frameNr: 4, opts: rxOpts{maxFrame: 1518}}
	if n := v2.framesLeft(); n != 3 {
		t.Errorf("V2: framesLeft = %d, want 3", n)
	}
	b := port.NewBatch(2)
	var c port.RxCounts
	v2.fill(b, 0, &c)
	if n := v2.framesLeft(); n != 1 {
		t.Errorf("V2 after 2 walked: framesLeft = %d, want 1", n)
	}

	three := []synthFrame{*f, *f, *f}
	mem := buildRing(t, three, three, three)
	// Block 2 is the one the kernel fills: not handed over yet.
	binary.NativeEndian.PutUint32(mem[2*testBlockSize+bdBlockStatus:], unix.TP_STATUS_KERNEL)
	v3 := ring{mem: mem, blockSize: testBlockSize, blockNr: 3, opts: rxOpts{maxFrame: 1518}}
	if n := v3.framesLeft(); n != 9 {
		t.Errorf("V3: framesLeft = %d, want 9", n)
	}
	v3.fill(b, 0, &c) // 2 of block 0
	if n := v3.framesLeft(); n != 7 {
		t.Errorf("V3 in block 0: framesLeft = %d, want 7", n)
	}
	v3.fill(b, 0, &c) // the last of block 0, then 1 of block 1
	v3.release()
	if got := binary.NativeEndian.Uint32(mem[bdNumPkts:]); got != 0 {
		t.Errorf("num_pkts of released block 0 = %d, want 0", got)
	}
	if n := v3.framesLeft(); n != 5 {
		t.Errorf("V3 in block 1: framesLeft = %d, want 5", n)
	}
	v3.fill(b, 0, &c)
	v3.fill(b, 0, &c)
	v3.release()
	// Block 1 walked and released, block 2 still the kernel's: 3 left,
	// block 0's old count not among them.
	if n := v3.framesLeft(); n != 3 {
		t.Errorf("V3 waiting for block 2: framesLeft = %d, want 3", n)
	}
}
