package port

import (
	"encoding/binary"
	"errors"
)

// The upcall header. On a port with the kernel fast path (docs/offload.md)
// the TCX ingress program decides every frame alone; a frame it does not
// forward (a miss, a packet-in, a frame for userspace conntrack) it sends
// up to the switch: it inserts a header after the MAC addresses and
// redirects the frame to the ingress of the same interface
// (bpf_redirect(ifindex, BPF_F_INGRESS)). eth_type_trans then sets
// skb->protocol to UpcallEthertype, so the kernel delivers the frame
// (after tc ingress, to the protocol-specific handlers) only to a packet
// socket bound to that protocol: the port's, and no ETH_P_ALL tap has to
// look at every frame any more.
//
// The frame sent up is, big-endian:
//
//	[dst MAC 6][src MAC 6][UpcallEthertype 2][X 2][rest of the original frame from its own ethertype on]
//
// X says what became of the VLAN tag the kernel held outside the frame
// (the skb's hardware-accelerated tag, which the kernel drops before it
// delivers a frame to a protocol-bound socket):
//
//   - X == UpcallNoTag (VID 4095, reserved by 802.1Q, never on the wire):
//     the frame had no such tag; the original ethertype follows.
//   - X == UpcallTagFollows: the tag follows as [TPID 2][TCI 2] (an 802.1ad
//     tag, or an 802.1Q tag with VID 4095; an 802.1Q tag with another VID
//     is accepted too), then the original ethertype: 8 header bytes in
//     all.
//   - any other X whose VID (X & 0x0fff) is not 0xfff: X is the TCI of an
//     802.1Q (TPID 0x8100) tag.
//   - any other X with VID 0xfff: malformed.
//
// The C side of datapath/offload mirrors these values.
const (
	// UpcallEthertype is IEEE 802 Local Experimental Ethertype 1.
	UpcallEthertype = 0x88b5
	// UpcallNoTag: the frame had no out-of-frame VLAN tag.
	UpcallNoTag = 0x0fff
	// UpcallTagFollows: [TPID][TCI] follow X.
	UpcallTagFollows = 0x1fff

	// UpcallHeaderLen is the header without a following tag (ethertype
	// and X); UpcallHeaderMaxLen with one.
	UpcallHeaderLen    = 4
	UpcallHeaderMaxLen = UpcallHeaderLen + VLANHeaderLen

	upcallVIDMask = 0x0fff
	tpid8021Q     = 0x8100
	tpid8021AD    = 0x88a8
)

// Upcall is what an upcall header says about the frame it precedes.
type Upcall struct {
	// HeaderLen is the number of header bytes after the source MAC:
	// UpcallHeaderLen, or UpcallHeaderMaxLen when the tag follows X.
	// Removing them leaves the original frame without its tag.
	HeaderLen int
	// Tagged: the frame had a VLAN tag outside the frame, TPID and TCI.
	Tagged    bool
	TPID, TCI uint16
}

// Errors of DecodeUpcall. They are values, so the receive path counts a
// bad frame without allocating.
var (
	ErrUpcallShort     = errors.New("upcall frame too short for its header and an ethertype")
	ErrUpcallEthertype = errors.New("upcall frame: ethertype is not 0x88b5")
	ErrUpcallX         = errors.New("upcall header: reserved X (VID 4095 other than 0x0fff and 0x1fff)")
	ErrUpcallTPID      = errors.New("upcall header: following tag's TPID is neither 0x8100 nor 0x88a8")
)

// DecodeUpcall reads the upcall header of frame (see UpcallEthertype). The
// frame must hold the whole header and the original ethertype after it.
func DecodeUpcall(frame []byte) (Upcall, error) {
	if len(frame) < 2*6+UpcallHeaderLen+2 {
		return Upcall{}, ErrUpcallShort
	}
	if binary.BigEndian.Uint16(frame[12:]) != UpcallEthertype {
		return Upcall{}, ErrUpcallEthertype
	}
	x := binary.BigEndian.Uint16(frame[14:])
	switch {
	case x == UpcallNoTag:
		return Upcall{HeaderLen: UpcallHeaderLen}, nil
	case x == UpcallTagFollows:
		if len(frame) < 2*6+UpcallHeaderMaxLen+2 {
			return Upcall{}, ErrUpcallShort
		}
		tpid := binary.BigEndian.Uint16(frame[16:])
		if tpid != tpid8021Q && tpid != tpid8021AD {
			return Upcall{}, ErrUpcallTPID
		}
		return Upcall{HeaderLen: UpcallHeaderMaxLen, Tagged: true, TPID: tpid, TCI: binary.BigEndian.Uint16(frame[18:])}, nil
	case x&upcallVIDMask == upcallVIDMask:
		return Upcall{}, ErrUpcallX
	default:
		return Upcall{HeaderLen: UpcallHeaderLen, Tagged: true, TPID: tpid8021Q, TCI: x}, nil
	}
}

// EncodeUpcall returns frame (as it would be on the wire, a VLAN tag the
// kernel held outside it given by tagged, tpid, tci) with the upcall
// header the kernel fast path inserts: what a test feeds a port in
// upcall mode, or compares with what the tc program sent up. frame holds
// at least the two MAC addresses.
func EncodeUpcall(frame []byte, tagged bool, tpid, tci uint16) []byte {
	out := append(make([]byte, 0, len(frame)+UpcallHeaderMaxLen), frame[:12]...)
	out = binary.BigEndian.AppendUint16(out, UpcallEthertype)
	switch {
	case !tagged:
		out = binary.BigEndian.AppendUint16(out, UpcallNoTag)
	case tpid == tpid8021Q && tci&upcallVIDMask != upcallVIDMask:
		out = binary.BigEndian.AppendUint16(out, tci)
	default:
		out = binary.BigEndian.AppendUint16(out, UpcallTagFollows)
		out = binary.BigEndian.AppendUint16(out, tpid)
		out = binary.BigEndian.AppendUint16(out, tci)
	}
	return append(out, frame[12:]...)
}
