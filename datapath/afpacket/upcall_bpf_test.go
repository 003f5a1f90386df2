package afpacket

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"golang.org/x/sys/unix"
)

// upcallAllProgram is a TCX ingress program that sends every frame up
// the way the kernel fast path sends a miss up (port.UpcallEthertype):
// bpf_skb_change_head makes room at the front, the MACs move there, the
// header follows them with the out-of-frame VLAN tag in X (or after it),
// and bpf_redirect(BPF_F_INGRESS) hands the frame to the same ingress
// again, where it passes (its protocol is now 0x88b5). A stand-in for the
// real program (datapath/offload), small enough to read next to the
// format.
func upcallAllProgram() asm.Instructions {
	const (
		skbProtocol    = 16 // struct __sk_buff
		skbVLANPresent = 20
		skbVLANTCI     = 24
		skbVLANProto   = 28
		skbIfindex     = 40
		hdr            = -16 // the header on the stack: 0x88b5, X, [TPID, TCI]
		macs           = -32
		beUpcall       = 0xb588 // htons(0x88b5) as the kernel loads it
		be8021Q        = 0x0081
	)
	prog := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbProtocol, asm.Word),
		asm.JEq.Imm(asm.R2, beUpcall, "pass"),
		asm.Mov.Imm(asm.R8, 4),
		asm.StoreImm(asm.RFP, hdr, beUpcall, asm.Half),
		asm.LoadMem(asm.R2, asm.R6, skbVLANPresent, asm.Word),
		asm.JNE.Imm(asm.R2, 0, "tagged"),
		asm.StoreImm(asm.RFP, hdr+2, 0xff0f, asm.Half), // X = 0x0fff
		asm.Ja.Label("push"),
		asm.LoadMem(asm.R7, asm.R6, skbVLANTCI, asm.Word).WithSymbol("tagged"),
		asm.LoadMem(asm.R3, asm.R6, skbVLANProto, asm.Word),
		asm.JNE.Imm(asm.R3, be8021Q, "long"),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.And.Imm(asm.R2, 0x0fff),
		asm.JEq.Imm(asm.R2, 0x0fff, "long"),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.StoreMem(asm.RFP, hdr+2, asm.R2, asm.Half), // X = TCI
		asm.Ja.Label("push"),
		asm.Mov.Imm(asm.R8, 8).WithSymbol("long"),
		asm.StoreImm(asm.RFP, hdr+2, 0xff1f, asm.Half), // X = 0x1fff
		asm.StoreMem(asm.RFP, hdr+4, asm.R3, asm.Half), // TPID, network order already
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.StoreMem(asm.RFP, hdr+6, asm.R2, asm.Half),

		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("push"),
		asm.Mov.Reg(asm.R2, asm.R8),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnSkbChangeHead.Call(),
		asm.JNE.Imm(asm.R0, 0, "drop"),
		asm.Mov.Reg(asm.R1, asm.R6), // the MACs, now r8 bytes in
		asm.Mov.Reg(asm.R2, asm.R8),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, macs),
		asm.Mov.Imm(asm.R4, 12),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "drop"),
	}
	prog = append(prog, skbStore(asm.Mov.Imm(asm.R2, 0), macs, asm.Mov.Imm(asm.R4, 12))...)
	prog = append(prog, skbStore(asm.Mov.Imm(asm.R2, 12), hdr, asm.Mov.Reg(asm.R4, asm.R8))...)
	return append(prog,
		asm.LoadMem(asm.R1, asm.R6, skbIfindex, asm.Word),
		asm.Mov.Imm(asm.R2, 1), // BPF_F_INGRESS
		asm.FnRedirect.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("pass"), // TCX_PASS
		asm.Return(),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("drop"), // TCX_DROP
		asm.Return(),
	)
}

// skbStore is bpf_skb_store_bytes(skb in r6, offset set by off, the stack
// at fp+stack, length set by n), dropping the frame on an error.
func skbStore(off asm.Instruction, stack int32, n asm.Instruction) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R6), off,
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, stack), n,
		asm.Mov.Imm(asm.R5, 0),
		asm.FnSkbStoreBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "drop"),
	}
}

// attachUpcallAll attaches upcallAllProgram at TCX ingress of ifname (in
// the test's namespace) until the test ends.
func attachUpcallAll(t *testing.T, ifname string) {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, Instructions: upcallAllProgram(), License: "GPL"})
	if err != nil {
		t.Fatalf("load upcall program: %v", err)
	}
	t.Cleanup(func() { prog.Close() })
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	l, err := link.AttachTCX(link.TCXOptions{Interface: ifi.Index, Program: prog, Attach: ebpf.AttachTCXIngress})
	if err != nil {
		t.Fatalf("attach upcall program: %v", err)
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
			for i, tag := range []struct{ tpid, tci uint16 }{{}, {0x8100, 10}, {0x8100, 0}, {0x88a8, 0xe123}, {0x8100, 0x0fff}} {
				f := plainFrame(uint32(i), 200)
				if tag.tpid != 0 {
					f = tagged(f, tag.tpid, tag.tci)
				}
				sent = append(sent, f)
			}
			// QinQ: the outer tag goes out of the frame, the inner stays.
			sent = append(sent, tagged(tagged(plainFrame(9, 200), 0x8100, 7), 0x88a8, 300))
			// Full size: sent up 4 and 8 bytes longer than the MTU
			// allows (a redirect to ingress does not check it).
			sent = append(sent, plainFrame(10, 1514), tagged(plainFrame(11, 1514), 0x8100, 0xffff))
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
