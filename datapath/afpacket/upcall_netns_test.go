package afpacket

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/port/porttest"
)

// plainEtherType is IEEE Local Experimental Ethertype 2: an ordinary
// frame nothing in the kernel reacts to (porttest.TestFrame's 0x88b5 is
// the upcall ethertype itself).
const plainEtherType = 0x88b6

func plainFrame(seq uint32, n int) []byte {
	f := porttest.TestFrame(hostMAC, peerMAC, seq, n)
	binary.BigEndian.PutUint16(f[12:], plainEtherType)
	return f
}

// readUntil reads from p until count frames arrived or timeout, copying
// them out, with their metadata but for the flow hash and the flags
// other than FlagVLAN.
func readUntil(t *testing.T, p *Port, count int, timeout time.Duration) ([][]byte, []port.Meta) {
	return readMeta(t, p, count, timeout, port.FlagVLAN)
}

// readMeta is readUntil keeping the flags of keep.
func readMeta(t *testing.T, p *Port, count int, timeout time.Duration, keep port.FrameFlags) ([][]byte, []port.Meta) {
	t.Helper()
	b := port.NewBatch(32)
	var frames [][]byte
	var metas []port.Meta
	for deadline := time.Now().Add(timeout); len(frames) < count && time.Now().Before(deadline); {
		n, err := p.ReadBatch(b)
		if err != nil {
			t.Fatalf("ReadBatch: %v", err)
		}
		for i := range n {
			frames = append(frames, append([]byte(nil), b.Frames[i]...))
			m := b.Meta[i]
			m.RxHash, m.Flags = 0, m.Flags&keep
			metas = append(metas, m)
		}
	}
	return frames, metas
}

// A port in upcall mode on a real veth: it receives only frames whose
// ethertype is 0x88b5 (here sent by the peer, as the tc program's
// redirect to ingress would deliver them), not the ordinary traffic an
// ETH_P_ALL socket on the same interface sees, and hands them out
// decoded; after Tap it is an ordinary tap again.
func TestUpcallPortReceive(t *testing.T) {
	type sent struct {
		tagged    bool
		tpid, tci uint16
	}
	tags := []sent{{}, {true, 0x8100, 0x2064}, {true, 0x8100, 0}, {true, 0x88a8, 0x0ffe}, {true, 0x8100, 0x0fff}}
	for _, rv := range rxRings {
		for _, keep := range []bool{false, true} {
			name := rv.name
			if keep {
				name += " KeepVLANStripped"
			}
			t.Run(name, func(t *testing.T) {
				cfg := withRing(Config{Upcall: true, ReadTimeout: 20 * time.Millisecond, KeepVLANStripped: keep}, rv)
				r := newRig(t, cfg, netnstest.VethOptions{})
				if !r.Port.Upcall() {
					t.Fatal("Upcall() = false on a port opened with Config.Upcall")
				}
				tap := netnstest.NewRawSocket(t, nil, r.Veth.Host)

				// Ordinary frames: the tap sees them, the port not.
				ordinary := plainFrame(1, 80)
				if err := r.Peer.Send(ordinary); err != nil {
					t.Fatal(err)
				}
				if _, err := tap.RecvMatch(2*time.Second, func(f []byte) bool { return bytes.Equal(f, ordinary) }); err != nil {
					t.Fatalf("ETH_P_ALL socket on the same end: %v", err)
				}
				if got, _ := readUntil(t, r.Port, 1, 200*time.Millisecond); len(got) != 0 {
					t.Fatalf("upcall port received ordinary frames: %x", got)
				}

				// Frames sent up, one malformed among them.
				bad := port.EncodeUpcall(plainFrame(99, 80), false, 0, 0)
				binary.BigEndian.PutUint16(bad[14:], 0x7fff)
				if err := r.Peer.Send(bad); err != nil {
					t.Fatal(err)
				}
				for i, tag := range tags {
					orig := plainFrame(uint32(10+i), 100)
					if err := r.Peer.Send(port.EncodeUpcall(orig, tag.tagged, tag.tpid, tag.tci)); err != nil {
						t.Fatal(err)
					}
				}
				got, metas := readUntil(t, r.Port, len(tags), 3*time.Second)
				if len(got) != len(tags) {
					t.Fatalf("received %d frames, want %d", len(got), len(tags))
				}
				for i, tag := range tags {
					want, wantMeta := plainFrame(uint32(10+i), 100), port.Meta{}
					if tag.tagged {
						wantMeta = port.Meta{VLANTPID: tag.tpid, VLANTCI: tag.tci, Flags: port.FlagVLAN}
						if !keep {
							want = tagged(want, tag.tpid, tag.tci)
						}
					}
					if !bytes.Equal(got[i], want) {
						t.Errorf("frame %d (%+v):\n got %x\nwant %x", i, tag, got[i], want)
					}
					if metas[i] != wantMeta {
						t.Errorf("frame %d meta = %+v, want %+v", i, metas[i], wantMeta)
					}
				}
				if st := r.Port.Stats(); st.RxErrors != 1 || st.RxPackets != uint64(len(tags)) {
					t.Errorf("stats: %d errors, %d packets; want 1 (the malformed header), %d", st.RxErrors, st.RxPackets, len(tags))
				}

				// Frames sent up and still in the ring when the port
				// turns into a tap are decoded; those after are not.
				left := plainFrame(20, 90)
				if err := r.Peer.Send(port.EncodeUpcall(left, true, 0x88a8, 5)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond) // in the ring
				if err := r.Port.Tap(); err != nil {
					t.Fatal(err)
				}
				if r.Port.Upcall() {
					t.Fatal("Upcall() = true after Tap")
				}
				after := port.EncodeUpcall(plainFrame(21, 90), false, 0, 0)
				if err := r.Peer.Send(after); err != nil {
					t.Fatal(err)
				}
				if err := r.Peer.Send(ordinary); err != nil {
					t.Fatal(err)
				}
				got, metas = readUntil(t, r.Port, 3, 3*time.Second)
				wantLeft := tagged(left, 0x88a8, 5)
				if keep {
					wantLeft = left
				}
				want := [][]byte{wantLeft, after, ordinary}
				if len(got) != len(want) {
					t.Fatalf("after Tap: received %d frames, want %d: %x", len(got), len(want), got)
				}
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Errorf("after Tap, frame %d:\n got %x\nwant %x", i, got[i], want[i])
					}
				}
				if m := (port.Meta{VLANTPID: 0x88a8, VLANTCI: 5, Flags: port.FlagVLAN}); metas[0] != m {
					t.Errorf("frame left from upcall mode: meta %+v, want %+v", metas[0], m)
				}
			})
		}
	}
}

// A port in upcall mode sends like a tap: plain frames on every send
// path, and TCP super-segments with a virtio_net_hdr, which the kernel
// segments on the host end (offloads off) only if it knows their
// protocol: sent with the socket's bound protocol (0x88b5) instead of
// an ETH_P_ALL address, they are dropped.
func TestUpcallPortTransmit(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.name, func(t *testing.T) {
			cfg := mode.cfg
			cfg.Upcall = true
			r := newRig(t, cfg, netnstest.VethOptions{})
			frames := [][]byte{porttest.TestFrame(peerMAC, hostMAC, 1, 60), porttest.TestFrame(peerMAC, hostMAC, 2, 1514)}
			if n, err := r.Port.WriteBatch(frames); n != len(frames) || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			for _, f := range frames {
				if _, err := r.Peer.RecvMatch(2*time.Second, func(g []byte) bool { return bytes.Equal(g, f) }); err != nil {
					t.Fatalf("frame %x...: %v", f[:18], err)
				}
			}
			if err := r.Port.Tap(); err != nil {
				t.Fatal(err)
			}
			if n, err := r.Port.WriteBatch(frames[:1]); n != 1 || err != nil {
				t.Fatalf("WriteBatch after Tap = %d, %v", n, err)
			}
			if _, err := r.Peer.RecvMatch(2*time.Second, func(g []byte) bool { return bytes.Equal(g, frames[0]) }); err != nil {
				t.Fatalf("after Tap: %v", err)
			}
		})
	}
	t.Run("GSO", func(t *testing.T) {
		for _, rv := range rxRings[2:] {
			t.Run(rv.name, func(t *testing.T) {
				r := newRig(t, withRing(Config{Upcall: true}, rv), netnstest.VethOptions{})
				const payload, mss = 60000, 1448
				frame, hdr := tcpSuperSegment(payload, mss)
				if n, err := r.Port.WriteBatchVnet([][]byte{frame}, []port.VnetHdr{hdr}); n != 1 || err != nil {
					t.Fatalf("WriteBatchVnet = %d, %v", n, err)
				}
				var got []byte
				segs := 0
				for len(got) < payload {
					seg, err := r.Peer.RecvMatch(3*time.Second, func(f []byte) bool {
						return len(f) > 54 && binary.BigEndian.Uint16(f[12:]) == 0x0800 && binary.BigEndian.Uint16(f[34:]) == 4711
					})
					if err != nil {
						t.Fatalf("after %d segments, %d payload bytes: %v", segs, len(got), err)
					}
					if len(seg) > 1514 {
						t.Fatalf("segment %d is %d bytes: not segmented", segs, len(seg))
					}
					got = append(got, seg[54:]...)
					segs++
				}
				if !bytes.Equal(got, frame[54:]) {
					t.Errorf("payload of %d segments differs from the super-segment's", segs)
				}
				if want := (payload + mss - 1) / mss; segs != want {
					t.Errorf("%d segments, want %d", segs, want)
				}
			})
		}
	})
}

// tcpSuperSegment is an Ethernet/IPv4/TCP frame with payload bytes of
// data from host to peer and the virtio_net_hdr that has the kernel cut
// it into segments of mss bytes and fill in their TCP checksums.
func tcpSuperSegment(payload, mss int) ([]byte, port.VnetHdr) {
	f := make([]byte, 54+payload)
	copy(f, peerMAC)
	copy(f[6:], hostMAC)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+20+payload))
	ip[8], ip[9] = 64, 6 // TTL, TCP
	copy(ip[12:], []byte{10, 99, 0, 1})
	copy(ip[16:], []byte{10, 99, 0, 2})
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	binary.BigEndian.PutUint16(ip[10:], ^fold(sum))
	tcp := f[34:54]
	binary.BigEndian.PutUint16(tcp[0:], 4711)
	binary.BigEndian.PutUint16(tcp[2:], 80)
	binary.BigEndian.PutUint32(tcp[4:], 1000)
	tcp[12], tcp[13] = 5<<4, 0x18 // data offset, PSH|ACK
	binary.BigEndian.PutUint16(tcp[14:], 65535)
	// A partial checksum holds the pseudo-header sum without the length
	// the kernel adds per segment (as the stack leaves it for GSO).
	pseudo := uint32(10<<8+99) + 1 + uint32(10<<8+99) + 2 + 6
	binary.BigEndian.PutUint16(tcp[16:], fold(pseudo))
	for i := range payload {
		f[54+i] = byte(i*13 + i>>8)
	}
	return f, port.VnetHdr{Flags: port.VnetFlagNeedsCsum, GSOType: port.VnetGSOTCPv4, GSOSize: uint16(mss),
		HdrLen: 54, CsumStart: 34, CsumOffset: 16}
}

func fold(sum uint32) uint16 {
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

// A port re-attaching to its re-created interface becomes a tap: the tc
// program was on the interface that is gone, nothing sends the new one's
// frames up. It receives ordinary frames and sends to the new interface,
// after Tap as well.
func TestUpcallPortReattach(t *testing.T) {
	r := newRig(t, Config{Upcall: true, ReadTimeout: 20 * time.Millisecond}, netnstest.VethOptions{})
	vo := netnstest.VethOptions{HostMAC: hostMAC, PeerMAC: peerMAC}
	for round := range 2 {
		if round == 1 {
			if err := r.Port.Tap(); err != nil {
				t.Fatal(err)
			}
		}
		old := r.Port.Ifindex()
		r.Veth.Recreate(t, vo)
		porttest.WaitUp(t, r.Veth)
		peer := netnstest.NewRawSocket(t, r.NS, r.Veth.Peer)
		orig := plainFrame(uint32(round), 70)
		send := orig
		b := port.NewBatch(8)
		var seen [][]byte
	wait:
		for deadline := time.Now().Add(5 * time.Second); ; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no %x within 5s of the interface's return; got %x", round, orig, seen)
			}
			if err := peer.Send(send); err != nil {
				t.Fatal(err)
			}
			n, _ := r.Port.ReadBatch(b)
			for _, f := range b.Frames[:n] {
				if bytes.Equal(f, orig) {
					break wait
				}
				if len(seen) < 4 {
					seen = append(seen, append([]byte(nil), f...))
				}
			}
		}
		if r.Port.Ifindex() == old || r.Port.Upcall() {
			t.Errorf("round %d: ifindex %d (before %d), Upcall() = %v", round, r.Port.Ifindex(), old, r.Port.Upcall())
		}
		out := porttest.TestFrame(peerMAC, hostMAC, 100+uint32(round), 60)
		if n, err := r.Port.WriteBatch([][]byte{out}); n != 1 || err != nil {
			t.Fatalf("round %d: WriteBatch = %d, %v", round, n, err)
		}
		if _, err := peer.RecvMatch(2*time.Second, func(f []byte) bool { return bytes.Equal(f, out) }); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// Tap does not wait for a reader asleep in ReadBatch without a read
// timeout (it holds the reader's lock until a frame comes, and none comes
// to a socket in upcall mode without the tc program): the reader then
// takes the ordinary frames that wake it.
func TestUpcallTapWithSleepingReader(t *testing.T) {
	for _, rv := range rxRings[:2] {
		t.Run(rv.name, func(t *testing.T) {
			r := newRig(t, withRing(Config{Upcall: true}, rv), netnstest.VethOptions{})
			got := make(chan []byte, 1)
			go func() {
				b := port.NewBatch(8)
				for {
					n, err := r.Port.ReadBatch(b)
					if err != nil {
						close(got)
						return
					}
					for _, f := range b.Frames[:n] {
						if binary.BigEndian.Uint16(f[12:]) == plainEtherType {
							got <- append([]byte(nil), f...)
							return
						}
					}
				}
			}()
			time.Sleep(50 * time.Millisecond) // asleep in poll(2)
			done := make(chan error, 1)
			go func() { done <- r.Port.Tap() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Tap still waiting after 2s")
			}
			f := plainFrame(1, 64)
			if err := r.Peer.Send(f); err != nil {
				t.Fatal(err)
			}
			select {
			case g, ok := <-got:
				if !ok || !bytes.Equal(g, f) {
					t.Fatalf("reader got %x (open %v), want %x", g, ok, f)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("sleeping reader got no frame after Tap")
			}
			if r.Port.Upcall() || r.Port.v2.opts.upcall || r.Port.ring.opts.upcall {
				t.Error("still in upcall mode after Tap")
			}
		})
	}
}
