package afpacket

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/govs-project/govs/datapath/port"
	"golang.org/x/sys/unix"
)

const (
	testSlotSize = 2048
	// v2KernelMac is where tpacket_rcv puts an Ethernet frame in a
	// TPACKET_V2 slot: the network header at v2MacRoom, minus 14.
	v2KernelMac = v2MacRoom - port.EthHeaderLen
)

// buildFrameRing returns TPACKET_V2 ring memory of len(slots) slots of
// slotSize bytes, laid out the way tpacket_rcv writes them; a nil slot is
// left to the kernel (TP_STATUS_KERNEL).
func buildFrameRing(t testing.TB, slotSize int, slots ...*synthFrame) []byte {
	mem := make([]byte, slotSize*len(slots))
	ne := binary.NativeEndian
	for i, f := range slots {
		if f == nil {
			continue
		}
		h := mem[i*slotSize : (i+1)*slotSize]
		mac := f.mac
		if mac == 0 {
			mac = v2KernelMac
		}
		wire := f.wireLen
		if wire == 0 {
			wire = len(f.data)
		}
		if mac+len(f.data) > slotSize {
			t.Fatalf("synthetic slot %d overflows", i)
		}
		ne.PutUint32(h[v2Status:], unix.TP_STATUS_USER|f.status)
		ne.PutUint32(h[v2Len:], uint32(wire))
		ne.PutUint32(h[v2Snaplen:], uint32(f.snaplenOr()))
		ne.PutUint16(h[v2Mac:], uint16(mac))
		ne.PutUint16(h[v2VLANTCI:], uint16(f.tci))
		ne.PutUint16(h[v2VLANTPID:], f.tpid)
		h[v2Pkttype] = f.pkttype
		f.writeSockaddrVnet(h, v2Protocol, mac)
		copy(h[mac:], f.data)
	}
	return mem
}

func TestFrameRingFill(t *testing.T) {
	plain := ethFrame(60, 1)
	max1500 := ethFrame(port.MaxFrameLen(1500), 2)
	tests := []struct {
		name     string
		slots    []*synthFrame
		keepVLAN bool
		want     [][]byte
		wantMeta []port.Meta
		wantC    port.RxCounts
		wantRel  int // slots walked and waiting for release
	}{
		{
			name:  "two frames",
			slots: []*synthFrame{{data: plain}, {data: ethFrame(14, 9)}},
			want:  [][]byte{plain, ethFrame(14, 9)},
			wantC: port.RxCounts{Packets: 2, Bytes: 74}, wantRel: 2,
		},
		{
			name:  "kernel slot not ready stops the walk",
			slots: []*synthFrame{{data: plain}, nil, {data: ethFrame(30, 3)}},
			want:  [][]byte{plain}, wantC: port.RxCounts{Packets: 1, Bytes: 60}, wantRel: 1,
		},
		{
			name:  "runt dropped, slot still walked",
			slots: []*synthFrame{{data: ethFrame(13, 1)}, {data: plain}},
			want:  [][]byte{plain},
			wantC: port.RxCounts{Packets: 1, Bytes: 60, LengthErrors: 1, Errors: 1}, wantRel: 2,
		},
		{
			name:  "longest frame accepted, one byte more dropped",
			slots: []*synthFrame{{data: max1500}, {data: ethFrame(port.MaxFrameLen(1500)+1, 2)}},
			want:  [][]byte{max1500},
			wantC: port.RxCounts{Packets: 1, Bytes: uint64(len(max1500)), LengthErrors: 1, Errors: 1}, wantRel: 2,
		},
		{
			name:  "truncated by the slot dropped",
			slots: []*synthFrame{{data: plain, wireLen: 9000}},
			wantC: port.RxCounts{LengthErrors: 1, Errors: 1}, wantRel: 1,
		},
		{
			name:  "own outgoing skipped silently",
			slots: []*synthFrame{{data: plain, pkttype: unix.PACKET_OUTGOING}, {data: ethFrame(70, 4)}},
			want:  [][]byte{ethFrame(70, 4)},
			wantC: port.RxCounts{Packets: 1, Bytes: 70}, wantRel: 2,
		},
		{
			name:     "stripped 802.1Q tag re-inserted in place",
			slots:    []*synthFrame{{data: plain, status: unix.TP_STATUS_VLAN_VALID, tci: 0x2064}},
			want:     [][]byte{tagged(plain, 0x8100, 0x2064)},
			wantMeta: []port.Meta{{VLANTPID: 0x8100, VLANTCI: 0x2064, Flags: port.FlagVLAN}},
			wantC:    port.RxCounts{Packets: 1, Bytes: 64}, wantRel: 1,
		},
		{
			name:     "VLAN 0 with priority is recovered from the status bit",
			slots:    []*synthFrame{{data: plain, status: unix.TP_STATUS_VLAN_VALID, tci: 0}},
			want:     [][]byte{tagged(plain, 0x8100, 0)},
			wantMeta: []port.Meta{{VLANTPID: 0x8100, Flags: port.FlagVLAN}},
			wantC:    port.RxCounts{Packets: 1, Bytes: 64}, wantRel: 1,
		},
		{
			name: "802.1ad tag with TPID, copied when headroom is short",
			slots: []*synthFrame{{data: plain, mac: v2FixedLen + 2,
				status: unix.TP_STATUS_VLAN_VALID | unix.TP_STATUS_VLAN_TPID_VALID, tci: 7, tpid: 0x88a8}},
			want:     [][]byte{tagged(plain, 0x88a8, 7)},
			wantMeta: []port.Meta{{VLANTPID: 0x88a8, VLANTCI: 7, Flags: port.FlagVLAN}},
			wantC:    port.RxCounts{Packets: 1, Bytes: 64}, wantRel: 1,
		},
		{
			name:     "TPID ignored without TP_STATUS_VLAN_TPID_VALID",
			slots:    []*synthFrame{{data: plain, status: unix.TP_STATUS_VLAN_VALID, tci: 9, tpid: 0x88a8}},
			want:     [][]byte{tagged(plain, 0x8100, 9)},
			wantMeta: []port.Meta{{VLANTPID: 0x8100, VLANTCI: 9, Flags: port.FlagVLAN}},
			wantC:    port.RxCounts{Packets: 1, Bytes: 64}, wantRel: 1,
		},
		{
			name:     "tag only reported when asked to keep it out",
			slots:    []*synthFrame{{data: plain, status: unix.TP_STATUS_VLAN_VALID, tci: 5}},
			keepVLAN: true,
			want:     [][]byte{plain},
			wantMeta: []port.Meta{{VLANTPID: 0x8100, VLANTCI: 5, Flags: port.FlagVLAN}},
			wantC:    port.RxCounts{Packets: 1, Bytes: 60}, wantRel: 1,
		},
		{
			name:     "checksum flags",
			slots:    []*synthFrame{{data: plain, status: unix.TP_STATUS_CSUMNOTREADY | unix.TP_STATUS_CSUM_VALID}},
			want:     [][]byte{plain},
			wantMeta: []port.Meta{{Flags: port.FlagCsumNotReady | port.FlagCsumValid}},
			wantC:    port.RxCounts{Packets: 1, Bytes: 60}, wantRel: 1,
		},
		{
			name:  "tp_mac inside the header is an error",
			slots: []*synthFrame{{data: plain, mac: 40}, {data: ethFrame(20, 5)}},
			want:  [][]byte{ethFrame(20, 5)},
			wantC: port.RxCounts{Packets: 1, Bytes: 20, Errors: 1}, wantRel: 2,
		},
		{
			name:  "tp_snaplen past the slot end is an error",
			slots: []*synthFrame{{data: plain, snaplen: testSlotSize}},
			wantC: port.RxCounts{Errors: 1}, wantRel: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := frameRing{mem: buildFrameRing(t, testSlotSize, tc.slots...), frameSize: testSlotSize,
				frameNr: len(tc.slots), opts: rxOpts{maxFrame: port.MaxFrameLen(1500), reinsertV: !tc.keepVLAN}}
			b := port.NewBatch(8)
			var c port.RxCounts
			checkFill(t, b, r.fill(b, 0, &c), c, tc.want, tc.wantMeta, tc.wantC)
			if r.relN != tc.wantRel || r.relFirst != 0 {
				t.Errorf("slots to release = %d from %d, want %d from 0", r.relN, r.relFirst, tc.wantRel)
			}
			r.release()
			for i := range tc.wantRel {
				if st := *slotStatus(r.slot(i)); st != unix.TP_STATUS_KERNEL {
					t.Errorf("slot %d status after release = %#x, want TP_STATUS_KERNEL", i, st)
				}
			}
			if r.held() {
				t.Errorf("slots still held after release")
			}
		})
	}
}

// The walk follows the kernel around the ring: a small batch resumes at
// the next slot, slots are released only on the following read, and a
// slot not yet released is never walked again even when every slot is
// ours.
func TestFrameRingWrapsAndHolds(t *testing.T) {
	const nr = 4
	slots := make([]*synthFrame, nr)
	for i := range slots {
		slots[i] = &synthFrame{data: ethFrame(40+i, byte(i))}
	}
	r := frameRing{mem: buildFrameRing(t, testSlotSize, slots...), frameSize: testSlotSize, frameNr: nr, opts: rxOpts{maxFrame: 1518}}
	// kernelFills writes frame data into slot i and hands it to user space,
	// like tpacket_rcv.
	kernelFills := func(i int, data []byte) {
		s := r.slot(i)
		binary.NativeEndian.PutUint32(s[v2Len:], uint32(len(data)))
		binary.NativeEndian.PutUint32(s[v2Snaplen:], uint32(len(data)))
		binary.NativeEndian.PutUint16(s[v2Mac:], v2KernelMac)
		copy(s[v2KernelMac:], data)
		*slotStatus(s) = unix.TP_STATUS_USER
	}
	read := func(b *port.Batch) [][]byte {
		r.release()
		var c port.RxCounts
		n := r.fill(b, 0, &c)
		var out [][]byte
		for _, f := range b.Frames[:n] {
			out = append(out, append([]byte(nil), f...))
		}
		return out
	}
	check := func(step string, got [][]byte, want ...[]byte) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: read %d frames, want %d", step, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: frame %d = %x, want %x", step, i, got[i], want[i])
			}
		}
	}

	small := port.NewBatch(3)
	check("first batch", read(small), slots[0].data, slots[1].data, slots[2].data)
	if *slotStatus(r.slot(0)) != unix.TP_STATUS_USER {
		t.Fatal("slot 0 released before the next read")
	}
	// The kernel wraps: slot 0 becomes free on the next read, gets refilled.
	check("second batch", read(small), slots[3].data)
	for i := range 3 {
		if st := *slotStatus(r.slot(i)); st != unix.TP_STATUS_KERNEL {
			t.Fatalf("slot %d status %#x after the next read, want TP_STATUS_KERNEL", i, st)
		}
	}
	wrapped := ethFrame(50, 0x70)
	kernelFills(0, wrapped)
	check("wrapped", read(small), wrapped)
	if r.cur != 1 || r.relFirst != 0 || r.relN != 1 {
		t.Fatalf("walk at slot %d, releasing %d from %d; want slot 1, 1 from 0", r.cur, r.relN, r.relFirst)
	}

	// Fill every slot; a big batch takes them all, and without a release in
	// between a second fill must not walk into the held slots.
	r.release()
	for i := range nr {
		kernelFills((1+i)%nr, ethFrame(20+i, byte(0x80+i)))
	}
	big := port.NewBatch(8)
	var c port.RxCounts
	if n := r.fill(big, 0, &c); n != nr || r.relN != nr {
		t.Fatalf("fill of a full ring = %d frames, %d held; want %d, %d", n, r.relN, nr, nr)
	}
	if n := r.fill(big, 0, &c); n != 0 {
		t.Fatalf("second fill without release handed out %d held frames again", n)
	}
}

// FuzzFrameRingFill feeds arbitrary bytes as four ring slots, all handed
// to user space: the walk must never read outside a slot nor hand out a
// frame of a bad length.
func FuzzFrameRingFill(f *testing.F) {
	const slot = 256
	f.Add(buildFrameRing(f, slot, &synthFrame{data: ethFrame(60, 1), mac: 66},
		&synthFrame{data: ethFrame(14, 2), status: unix.TP_STATUS_VLAN_VALID, tci: 3}))
	f.Add(buildFrameRing(f, slot, &synthFrame{data: ethFrame(100, 1), mac: v2FixedLen, status: unix.TP_STATUS_VLAN_VALID},
		&synthFrame{data: ethFrame(30, 2), pkttype: unix.PACKET_OUTGOING}, &synthFrame{data: ethFrame(30, 2), snaplen: 500}))
	// An odd length turns upcall mode on.
	f.Add(append(buildFrameRing(f, slot, &synthFrame{data: port.EncodeUpcall(ethFrame(60, 1), false, 0, 0), proto: port.UpcallEthertype},
		&synthFrame{data: port.EncodeUpcall(ethFrame(30, 2), true, 0x8100, 0x0fff), proto: port.UpcallEthertype}), 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		const nr = 4
		mem := make([]byte, nr*slot)
		copy(mem, data)
		for i := range nr {
			s := mem[i*slot:]
			binary.NativeEndian.PutUint32(s[v2Status:], binary.NativeEndian.Uint32(s[v2Status:])|unix.TP_STATUS_USER)
		}
		const maxFrame = 200
		r := frameRing{mem: mem, frameSize: slot, frameNr: nr, opts: rxOpts{maxFrame: maxFrame, reinsertV: true, upcall: len(data)%2 == 1}}
		b := port.NewBatch(3)
		total := 0
		for range 3 {
			r.release()
			var c port.RxCounts
			n := r.fill(b, 0, &c)
			checkFuzzFill(t, b, n, c, maxFrame)
			total += n
		}
		if total > nr {
			t.Fatalf("handed out %d frames from %d slots", total, nr)
		}
	})
}
