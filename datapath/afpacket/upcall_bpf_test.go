package afpacket

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/offload"
	"github.com/govs-project/govs/datapath/port"
	"golang.org/x/sys/unix"
)

// attachUpcallAll attaches the kernel fast path's tc program (datapath/
// offload, bpf/offload.c) to ifname with no entries: every frame goes up,
// as a miss does.
func attachUpcallAll(t *testing.T, ifname string) {
	t.Helper()
	k, err := offload.Load("")
	if err != nil {
		t.Fatalf("load the offload program: %v", err)
	}
	t.Cleanup(func() { k.Close() })
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	l, err := k.AttachTC(ifi.Index, ifname)
	if err != nil {
		t.Fatalf("attach the tc program: %v", err)
	}
	t.Cleanup(func() { l.Close() })
}

// The whole way up on a real kernel: a tc program sends every frame up
// and a port in upcall mode hands out exactly what a tap port on the same
// interface receives before tc: the bytes, the VLAN tag the kernel held
// outside the frame, and the virtio_net_hdr (partial checksums, GSO).
func TestUpcallFromTCProgram(t *testing.T) {
	for _, rv := range rxRings {
		t.Run(rv.name, func(t *testing.T) {
			r := newRig(t, withRing(Config{Upcall: true, ReadTimeout: 20 * time.Millisecond}, rv), netnstest.VethOptions{})
			tap := OpenInTest(t, r.Veth.Host, withRing(Config{ReadTimeout: 20 * time.Millisecond}, rv))
			attachUpcallAll(t, r.Veth.Host)

			var sent [][]byte
			// Each tag form around a frame the program grows in front
			// (bpf_skb_change_head) and around an IPv4 one, which it
			// grows after the Ethernet header (bpf_skb_adjust_room).
			for _, et := range []uint16{plainEtherType, unix.ETH_P_IP} {
				for i, tag := range []struct{ tpid, tci uint16 }{{}, {0x8100, 10}, {0x8100, 0}, {0x88a8, 0xe123}, {0x8100, 0x0fff}} {
					f := plainFrame(uint32(len(sent)+i), 200)
					binary.BigEndian.PutUint16(f[12:], et)
					if tag.tpid != 0 {
						f = tagged(f, tag.tpid, tag.tci)
					}
					sent = append(sent, f)
				}
			}
			// QinQ: the outer tag goes out of the frame, the inner stays.
			sent = append(sent, tagged(tagged(plainFrame(19, 200), 0x8100, 7), 0x88a8, 300))
			// Full size: sent up 4 and 8 bytes longer than the MTU
			// allows (a redirect to ingress does not check it).
			sent = append(sent, plainFrame(20, 1514), tagged(plainFrame(21, 1514), 0x8100, 0xffff))
			for _, f := range sent {
				if err := r.Peer.Send(f); err != nil {
					t.Fatal(err)
				}
			}
			got, gotMeta := readUntil(t, r.Port, len(sent), 3*time.Second)
			// The tap sees each frame twice: as it came, then sent up
			// (with the tag still held outside it, put back here; the
			// longest are too long for it).
			orig, origMeta := readFirstPass(t, tap, len(sent), port.FlagVLAN, func(f []byte, m port.Meta) bool {
				et := binary.BigEndian.Uint16(f[12:])
				if m.Flags&port.FlagVLAN != 0 {
					et = binary.BigEndian.Uint16(f[16:])
				}
				return et != port.UpcallEthertype
			})
			if len(got) != len(sent) || len(orig) != len(sent) {
				t.Fatalf("upcall port got %d frames, tap %d as sent, want %d", len(got), len(orig), len(sent))
			}
			for i := range sent {
				if !bytes.Equal(got[i], orig[i]) || gotMeta[i] != origMeta[i] {
					t.Errorf("frame %d: upcall port %x %+v\n tap %x %+v", i, got[i], gotMeta[i], orig[i], origMeta[i])
				}
				if !bytes.Equal(orig[i], sent[i]) {
					t.Errorf("frame %d: tap %x, sent %x", i, orig[i], sent[i])
				}
			}
		})
	}
}

// With offloads on, frames from a local socket cross the veth with
// partial checksums and as GSO super-segments: the virtio_net_hdr the
// kernel writes for a frame sent up counts the upcall header in its
// offsets, and the port takes it out again, so the header it hands out
// is the tap's.
func TestUpcallFromTCProgramOffloads(t *testing.T) {
	for _, rv := range rxRings[2:] {
		t.Run(rv.name, func(t *testing.T) {
			r := newRig(t, withRing(Config{Upcall: true, ReadTimeout: 20 * time.Millisecond}, rv), netnstest.VethOptions{KeepOffloads: true})
			tap := OpenInTest(t, r.Veth.Host, withRing(Config{ReadTimeout: 20 * time.Millisecond}, rv))
			attachUpcallAll(t, r.Veth.Host)
			// The datagrams go to a MAC nobody has: the host's stack
			// drops them (PACKET_OTHERHOST) once the sockets saw them.
			r.NS.MustExec(t, "ip", "addr", "add", "10.77.0.2/24", "dev", r.Veth.Peer)
			r.NS.MustExec(t, "ip", "neigh", "add", "10.77.0.1", "lladdr", "02:00:00:00:09:09", "dev", r.Veth.Peer, "nud", "permanent")
			err := r.NS.Do(func() error {
				fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					return err
				}
				defer unix.Close(fd)
				to := &unix.SockaddrInet4{Port: 9, Addr: [4]byte{10, 77, 0, 1}}
				if err := unix.Sendto(fd, bytes.Repeat([]byte{7}, 300), 0, to); err != nil {
					return err
				}
				if err := unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT, 1000); err != nil {
					return err
				}
				return unix.Sendto(fd, bytes.Repeat([]byte{8}, 4500), 0, to)
			})
			if err != nil {
				t.Fatal(err)
			}
			const all = port.FlagVLAN | port.FlagVnet | port.FlagCsumNotReady | port.FlagCsumValid
			got, gotMeta := readMeta(t, r.Port, 2, 3*time.Second, all)
			orig, origMeta := readFirstPass(t, tap, 2, all, func(f []byte, _ port.Meta) bool {
				return binary.BigEndian.Uint16(f[12:]) == 0x0800
			})
			if len(got) != 2 || len(orig) != 2 {
				t.Fatalf("upcall port got %d frames, tap %d as sent, want 2", len(got), len(orig))
			}
			if v := origMeta[0].Vnet; v.Flags&port.VnetFlagNeedsCsum == 0 || v.CsumStart != 34 {
				t.Errorf("tap: datagram's virtio_net_hdr %+v, want a partial checksum from byte 34", v)
			}
			if v := origMeta[1].Vnet; v.GSOType != port.VnetGSOUDPL4 || v.GSOSize != 1000 {
				t.Errorf("tap: super-segment's virtio_net_hdr %+v, want UDP GSO of 1000", v)
			}
			for i := range got {
				if !bytes.Equal(got[i], orig[i]) || gotMeta[i] != origMeta[i] {
					t.Errorf("frame %d: upcall port %d bytes %+v\n tap %d bytes %+v", i, len(got[i]), gotMeta[i], len(orig[i]), origMeta[i])
				}
			}
		})
	}
}

// readFirstPass reads from tap until it has count frames that first
// accepts (the frames as they came, not as sent up), or 3 s passed.
func readFirstPass(t *testing.T, tap *Port, count int, keep port.FrameFlags, first func([]byte, port.Meta) bool) ([][]byte, []port.Meta) {
	t.Helper()
	var frames [][]byte
	var metas []port.Meta
	for deadline := time.Now().Add(3 * time.Second); len(frames) < count && time.Now().Before(deadline); {
		fs, ms := readMeta(t, tap, 1, 50*time.Millisecond, keep)
		for i, f := range fs {
			if first(f, ms[i]) {
				frames, metas = append(frames, f), append(metas, ms[i])
			}
		}
	}
	return frames, metas
}

// OpenInTest opens an AF_PACKET port on ifname, closed at the end of t.
func OpenInTest(t *testing.T, ifname string, cfg Config) *Port {
	t.Helper()
	p, err := Open(ifname, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
