package afpacket

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/govs-project/govs/datapath/port"
	"golang.org/x/sys/unix"
)

// synthFrame describes one frame to lay out in a synthetic ring block the
// way the kernel's tpacket_rcv does.
type synthFrame struct {
	data     []byte
	wireLen  int    // tp_len; 0 means len(data)
	snaplen  int    // tp_snaplen; 0 means len(data)
	mac      int    // tp_mac; 0 means the kernel's usual (82 for V3, 66 for V2)
	status   uint32 // tp_status bits
	tci      uint32
	tpid     uint16
	pkttype  uint8
	nextZero bool          // write tp_next_offset 0 (corrupt chain unless last)
	proto    uint16        // sll_protocol
	vnet     *port.VnetHdr // written right before tp_mac
}

// writeSockaddrVnet writes what buildRing and buildFrameRing write alike
// for f in the frame header h: sll_protocol at proto, the virtio_net_hdr.
func (f *synthFrame) writeSockaddrVnet(h []byte, proto, mac int) {
	binary.BigEndian.PutUint16(h[proto:], f.proto)
	if f.vnet != nil {
		f.vnet.Encode(h[mac-port.VnetHdrLen:])
	}
}

const testBlockSize = 8192

func (f *synthFrame) snaplenOr() int {
	if f.snaplen != 0 {
		return f.snaplen
	}
	return len(f.data)
}

// buildRing returns a ring memory of len(blocks) blocks where block i holds
// blocks[i] and is marked TP_STATUS_USER (or left to the kernel when nil).
func buildRing(t testing.TB, blocks ...[]synthFrame) []byte {
	return buildRingSized(t, testBlockSize, blocks...)
}

func buildRingSized(t testing.TB, blockSize int, blocks ...[]synthFrame) []byte {
	mem := make([]byte, blockSize*len(blocks))
	ne := binary.NativeEndian
	for bi, frames := range blocks {
		if frames == nil {
			continue
		}
		blk := mem[bi*blockSize : (bi+1)*blockSize]
		ne.PutUint32(blk[bdBlockStatus:], unix.TP_STATUS_USER)
		ne.PutUint32(blk[bdNumPkts:], uint32(len(frames)))
		ne.PutUint32(blk[bdOffsetToFirstPkt:], bdHeaderLen)
		off := bdHeaderLen
		for i, f := range frames {
			mac := f.mac
			if mac == 0 {
				mac = 82
			}
			wire := f.wireLen
			if wire == 0 {
				wire = len(f.data)
			}
			size := (mac + len(f.data) + 15) &^ 15
			if off+size > len(blk) {
				t.Fatalf("synthetic block overflows at frame %d", i)
			}
			h := blk[off:]
			if i < len(frames)-1 && !f.nextZero {
				ne.PutUint32(h[hdrNextOffset:], uint32(size))
			}
			ne.PutUint32(h[hdrSnaplen:], uint32(f.snaplenOr()))
			ne.PutUint32(h[hdrLen:], uint32(wire))
			ne.PutUint32(h[hdrStatus:], f.status)
			ne.PutUint16(h[hdrMac:], uint16(mac))
			ne.PutUint32(h[hdrRxHash:], 0xabcd0000+uint32(i))
			ne.PutUint32(h[hdrVLANTCI:], f.tci)
			ne.PutUint16(h[hdrVLANTPID:], f.tpid)
			h[sllPkttype] = f.pkttype
			f.writeSockaddrVnet(h, sllProtocol, mac)
			copy(h[mac:], f.data)
			off += size
		}
	}
	return mem
}

func ethFrame(n int, fill byte) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = fill + byte(i)
	}
	if n >= 14 {
		f[12], f[13] = 0x88, 0xb5
	}
	return f
}

// tagged returns f with an 802.1Q/802.1ad header after the source MAC.
func tagged(f []byte, tpid, tci uint16) []byte {
	out := append([]byte{}, f[:12]...)
	out = binary.BigEndian.AppendUint16(out, tpid)
	out = binary.BigEndian.AppendUint16(out, tci)
	return append(out, f[12:]...)
}

func TestRingFill(t *testing.T) {
	plain := ethFrame(60, 1)
	max1500 := ethFrame(port.MaxFrameLen(1500), 2)
	tests := []struct {
		name     string
		blocks   [][]synthFrame
		keepVLAN bool
		want     [][]byte
		wantMeta []port.Meta
		wantC    port.RxCounts
		wantRel  int // blocks walked and waiting for release
	}{
		{
			name:   "two frames",
			blocks: [][]synthFrame{{{data: plain}, {data: ethFrame(14, 9)}}},
			want:   [][]byte{plain, ethFrame(14, 9)},
			wantC:  port.RxCounts{Packets: 2, Bytes: 74}, wantRel: 1,
		},
		{
			name:    "frames across two blocks",
			blocks:  [][]synthFrame{{{data: plain}}, {{data: ethFrame(100, 3)}}},
			want:    [][]byte{plain, ethFrame(100, 3)},
			wantC:   port.RxCounts{Packets: 2, Bytes: 160},
			wantRel: 2,
		},
		{
			name:   "kernel block not ready stops the walk",
			blocks: [][]synthFrame{{{data: plain}}, nil},
			want:   [][]byte{plain}, wantC: port.RxCounts{Packets: 1, Bytes: 60}, wantRel: 1,
		},
		{
			name:   "runt dropped",
			blocks: [][]synthFrame{{{data: ethFrame(13, 1)}, {data: plain}}},
			want:   [][]byte{plain},
			wantC:  port.RxCounts{Packets: 1, Bytes: 60, LengthErrors: 1, Errors: 1}, wantRel: 1,
		},
		{
			name:   "longest frame accepted, one byte more dropped",
			blocks: [][]synthFrame{{{data: max1500}, {data: ethFrame(port.MaxFrameLen(1500)+1, 2)}}},
			want:   [][]byte{max1500},
			wantC:  port.RxCounts{Packets: 1, Bytes: uint64(len(max1500)), LengthErrors: 1, Errors: 1}, wantRel: 1,
		},
		{
			name:   "truncated by the ring dropped",
			blocks: [][]synthFrame{{{data: plain, wireLen: 9000}}},
			wantC:  port.RxCounts{LengthErrors: 1, Errors: 1}, wantRel: 1,
		},
		{
			name:   "own outgoing skipped silently",
			blocks: [][]synthFrame{{{data: plain, pkttype: unix.PACKET_OUTGOING}, {data: ethFrame(70, 4)}}},
			want:   [][]byte{ethFrame(70, 4)},
			wantC:  port.RxCounts{Packets: 1, Bytes: 70}, wantRel: 1,
		},
		{
			name:     "stripped 802.1Q tag re-inserted in place",
			blocks:   [][]synthFrame{{{data: plain, status: unix.TP_STATUS_VLAN_VALID, tci: 0x2064}}},
			want:     [][]byte{tagged(plain, 0x8100, 0x2064)},
			wantMeta: []port.Meta{{VLANTPID: 0x8100, VLANTCI: 0x2064, Flags: port.FlagVLAN, RxHash: 0xabcd0000}},
			wantC:    port.RxCounts{Packets: 1, Bytes: 64}, wantRel: 1,
		},
		{
			name:     "VLAN 0 with priority is recovered from the status bit",
			blocks:   [][]synthFrame{{{data: plain, status: unix.TP_STATUS_VLAN_VALID, tci: 0}}},
			want:     [][]byte{tagged(plain, 0x8100, 0)},
			wantMeta: []port.Meta{{VLANTPID: 0x8100, Flags: port.FlagVLAN, RxHash: 0xabcd0000}},
			wantC:    port.RxCounts{Packets: 1, Bytes: 64}, wantRel: 1,
		},
		{
			name: "802.1ad tag with TPID, copied when headroom is short",
			blocks: [][]synthFrame{{{data: plain, mac: hdrFixedLen + 2,
				status: unix.TP_STATUS_VLAN_VALID | unix.TP_STATUS_VLAN_TPID_VALID, tci: 7, tpid: 0x88a8}}},
			want:     [][]byte{tagged(plain, 0x88a8, 7)},
			wantMeta: []port.Meta{{VLANTPID: 0x88a8, VLANTCI: 7, Flags: port.FlagVLAN, RxHash: 0xabcd0000}},
			wantC:    port.RxCounts{Packets: 1, Bytes: 64}, wantRel: 1,
		},
		{
			name:     "tag only reported when asked to keep it out",
			blocks:   [][]synthFrame{{{data: plain, status: unix.TP_STATUS_VLAN_VALID, tci: 5}}},
			keepVLAN: true,
			want:     [][]byte{plain},
			wantMeta: []port.Meta{{VLANTPID: 0x8100, VLANTCI: 5, Flags: port.FlagVLAN, RxHash: 0xabcd0000}},
			wantC:    port.RxCounts{Packets: 1, Bytes: 60}, wantRel: 1,
		},
		{
			name:     "checksum flags",
			blocks:   [][]synthFrame{{{data: plain, status: unix.TP_STATUS_CSUMNOTREADY | unix.TP_STATUS_CSUM_VALID}}},
			want:     [][]byte{plain},
			wantMeta: []port.Meta{{Flags: port.FlagCsumNotReady | port.FlagCsumValid, RxHash: 0xabcd0000}},
			wantC:    port.RxCounts{Packets: 1, Bytes: 60}, wantRel: 1,
		},
		{
			name:   "broken chain abandons the block",
			blocks: [][]synthFrame{{{data: plain, nextZero: true}, {data: plain}}, {{data: ethFrame(20, 5)}}},
			want:   [][]byte{plain, ethFrame(20, 5)},
			wantC:  port.RxCounts{Packets: 2, Bytes: 80, Errors: 1}, wantRel: 2,
		},
		{
			name:   "tp_mac inside the header is an error",
			blocks: [][]synthFrame{{{data: plain, mac: 40}}},
			wantC:  port.RxCounts{Errors: 1}, wantRel: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ring{mem: buildRing(t, tc.blocks...), blockSize: testBlockSize, blockNr: len(tc.blocks),
				opts: rxOpts{maxFrame: port.MaxFrameLen(1500), reinsertV: !tc.keepVLAN}}
			b := port.NewBatch(8)
			var c port.RxCounts
			checkFill(t, b, r.fill(b, 0, &c), c, tc.want, tc.wantMeta, tc.wantC)
			if r.relN != tc.wantRel {
				t.Errorf("blocks to release = %d, want %d", r.relN, tc.wantRel)
			}
			r.release()
			for i := range tc.wantRel {
				if st := *r.blockStatus(i); st != unix.TP_STATUS_KERNEL {
					t.Errorf("block %d status after release = %#x, want TP_STATUS_KERNEL", i, st)
				}
			}
		})
	}
}

// A batch smaller than a block resumes the block on the next fill and only
// releases it once every frame was handed out.
func TestRingFillResumesBlock(t *testing.T) {
	var frames []synthFrame
	for i := range 5 {
		frames = append(frames, synthFrame{data: ethFrame(40+i, byte(i))})
	}
	r := ring{mem: buildRing(t, frames, nil), blockSize: testBlockSize, blockNr: 2, opts: rxOpts{maxFrame: 1518}}
	b := port.NewBatch(2)
	var got [][]byte
	for round, want := range []int{2, 2, 1, 0} {
		r.release()
		var c port.RxCounts
		n := r.fill(b, 0, &c)
		if n != want {
			t.Fatalf("round %d: fill = %d, want %d", round, n, want)
		}
		for _, f := range b.Frames[:n] {
			got = append(got, append([]byte(nil), f...))
		}
		wantRel := 0
		if round == 2 {
			wantRel = 1
		}
		if r.relN != wantRel {
			t.Fatalf("round %d: relN = %d, want %d", round, r.relN, wantRel)
		}
	}
	for i, f := range got {
		if !bytes.Equal(f, frames[i].data) {
			t.Errorf("frame %d = %x, want %x", i, f, frames[i].data)
		}
	}
	if r.cur != 1 || r.inBlock {
		t.Errorf("walk at block %d (inBlock %v), want waiting at block 1", r.cur, r.inBlock)
	}
}

// FuzzRingFill feeds arbitrary bytes as two ring blocks: the walk must
// never read outside the ring nor hand out a frame of a bad length. The
// blocks are small so the fuzzer's inputs stay short.
func FuzzRingFill(f *testing.F) {
	const bs = 512
	f.Add(buildRingSized(f, bs, []synthFrame{{data: ethFrame(60, 1)}, {data: ethFrame(14, 2), status: unix.TP_STATUS_VLAN_VALID, tci: 3}}))
	f.Add(buildRingSized(f, bs, []synthFrame{{data: ethFrame(60, 1), nextZero: true}}, []synthFrame{{data: ethFrame(30, 2), mac: hdrFixedLen}}))
	// An odd length turns upcall mode on.
	f.Add(append(buildRingSized(f, bs, []synthFrame{
		{data: port.EncodeUpcall(ethFrame(60, 1), true, 0x88a8, 3), proto: port.UpcallEthertype},
		{data: port.EncodeUpcall(ethFrame(14, 1), true, 0x8100, 3), proto: port.UpcallEthertype}}), 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := make([]byte, 2*bs)
		copy(mem, data)
		// Both blocks are handed to user space whatever the input says.
		binary.NativeEndian.PutUint32(mem[bdBlockStatus:], unix.TP_STATUS_USER)
		binary.NativeEndian.PutUint32(mem[bs+bdBlockStatus:], unix.TP_STATUS_USER)
		const maxFrame = 200
		r := ring{mem: mem, blockSize: bs, blockNr: 2, opts: rxOpts{maxFrame: maxFrame, reinsertV: true, upcall: len(data)%2 == 1}}
		b := port.NewBatch(4)
		for range 4 {
			r.release()
			var c port.RxCounts
			n := r.fill(b, 0, &c)
			checkFuzzFill(t, b, n, c, maxFrame)
		}
	})
}

// checkFill checks the n frames a fill handed out, their metadata
// (wantMeta nil: not checked) and the counts.
func checkFill(t *testing.T, b *port.Batch, n int, c port.RxCounts, want [][]byte, wantMeta []port.Meta, wantC port.RxCounts) {
	t.Helper()
	if n != len(want) {
		t.Fatalf("fill = %d frames, want %d (counts %+v)", n, len(want), c)
	}
	for i := range want {
		if !bytes.Equal(b.Frames[i], want[i]) {
			t.Errorf("frame %d = %x\nwant %x", i, b.Frames[i], want[i])
		}
		if wantMeta != nil && b.Meta[i] != wantMeta[i] {
			t.Errorf("meta %d = %+v, want %+v", i, b.Meta[i], wantMeta[i])
		}
	}
	if c != wantC {
		t.Errorf("counts = %+v, want %+v", c, wantC)
	}
}

// checkFuzzFill checks that a fill over fuzzed memory handed out only
// frames of a length the port accepts, and counted each.
func checkFuzzFill(t *testing.T, b *port.Batch, n int, c port.RxCounts, maxFrame int) {
	t.Helper()
	for _, fr := range b.Frames[:n] {
		if len(fr) < port.MinFrameLen || len(fr) > maxFrame {
			t.Fatalf("frame of %d bytes handed out", len(fr))
		}
	}
	if c.Packets != uint64(n) {
		t.Fatalf("counted %d packets, handed out %d", c.Packets, n)
	}
}
