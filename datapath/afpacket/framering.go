package afpacket

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/govs-project/govs/datapath/port"
	"golang.org/x/sys/unix"
)

// Offsets inside struct tpacket2_hdr of <linux/if_packet.h>, read in host
// byte order like the V3 ones.
const (
	v2Status    = 0
	v2Len       = 4
	v2Snaplen   = 8
	v2Mac       = 12
	v2VLANTCI   = 24
	v2VLANTPID  = 26
	v2SockaddrL = unix.SizeofTpacket2Hdr // TPACKET_ALIGN(sizeof(tpacket2_hdr))
	v2Protocol  = v2SockaddrL + 2        // sll_protocol, big-endian
	v2Pkttype   = v2SockaddrL + 10
	// v2FixedLen is TPACKET2_HDRLEN: the header plus the sockaddr_ll.
	v2FixedLen = v2SockaddrL + unix.SizeofSockaddrLinklayer
	// v2MacRoom is where tpacket_rcv puts the network header of an
	// Ethernet frame (TPACKET_ALIGN(TPACKET2_HDRLEN + 16)); the frame
	// starts 14 bytes before it, so a slot must hold this much plus the
	// longest frame for nothing to be truncated.
	v2MacRoom = (v2FixedLen + 16 + unix.TPACKET_ALIGNMENT - 1) &^ (unix.TPACKET_ALIGNMENT - 1)

	// v2TxDataOff is where the kernel reads a TX frame in a TPACKET_V2 slot
	// (tp_hdrlen - sizeof(sockaddr_ll) without PACKET_TX_HAS_OFF).
	v2TxDataOff = v2SockaddrL
)

// frameRing walks a TPACKET_V2 receive ring: frameNr fixed-size slots the
// kernel fills in order, each one ours once its tp_status has
// TP_STATUS_USER and the kernel's again when set back to TP_STATUS_KERNEL.
// Unlike a V3 block, a slot is handed over (and poll woken) as soon as its
// one frame is written, so a lone frame never waits for a timer. Frames
// handed to the loop point into their slots; slots are only given back at
// the start of the next read (or on Release), like the V3 blocks.
type frameRing struct {
	mem       []byte // the RX part of the socket's mmap
	frameSize int    // slot size; slots are packed, slot i is at i*frameSize
	frameNr   int

	cur int // next slot to look at, in the kernel's fill order

	// Slots walked by the last read, waiting to be given back: relN slots
	// starting at relFirst (consecutive, modulo frameNr).
	relFirst int
	relN     int

	opts rxOpts

	// Slots are packed perBlock to a block of blockSize bytes. Unless
	// they leave a gap at the end of each block (sparse), slot i is
	// simply at i*frameSize.
	blockSize, perBlock int
	sparse              bool
}

func (r *frameRing) slot(i int) []byte {
	off := i * r.frameSize
	if r.sparse {
		off = slotOffset(i, r.frameSize, r.perBlock, r.blockSize)
	}
	return r.mem[off : off+r.frameSize : off+r.frameSize]
}

func slotStatus(s []byte) *uint32 {
	return (*uint32)(unsafe.Pointer(&s[v2Status]))
}

// ready reports whether fill would find a frame (or a dropped slot) now;
// false without a ring (TPACKET_V3, or a port detached from its deleted
// interface).
func (r *frameRing) ready() bool {
	return r.mem != nil && r.relN < r.frameNr && atomic.LoadUint32(slotStatus(r.slot(r.cur)))&unix.TP_STATUS_USER != 0
}

// held reports whether slots handed out by the last read are still ours.
func (r *frameRing) held() bool { return r.relN > 0 }

// release gives the slots walked by the last read back to the kernel.
func (r *frameRing) release() {
	for ; r.relN > 0; r.relN-- {
		atomic.StoreUint32(slotStatus(r.slot(r.relFirst)), unix.TP_STATUS_KERNEL)
		r.relFirst++
		if r.relFirst == r.frameNr {
			r.relFirst = 0
		}
	}
}

// fill hands out the frames of every ready slot, in ring order, into
// b.Frames[n:] without blocking and returns the new count. Slots whose
// frame is dropped (own outgoing, bad length) are walked too, so they go
// back to the kernel with the rest.
func (r *frameRing) fill(b *port.Batch, n int, c *port.RxCounts) int {
	// relN < frameNr: never walk into a slot still waiting for release, or
	// its frame would be handed out twice.
	for n < len(b.Frames) && r.relN < r.frameNr {
		s := r.slot(r.cur)
		status := atomic.LoadUint32(slotStatus(s))
		if status&unix.TP_STATUS_USER == 0 {
			return n
		}
		if r.frame(s, status, b, n, c) {
			n++
		}
		if r.relN == 0 {
			r.relFirst = r.cur
		}
		r.relN++
		r.cur++
		if r.cur == r.frameNr {
			r.cur = 0
		}
	}
	return n
}

// frame decodes the slot s into slot n of b and reports whether the frame
// was handed out. It never reads outside the slot.
func (r *frameRing) frame(s []byte, status uint32, b *port.Batch, n int, c *port.RxCounts) bool {
	upcall := r.opts.upcallFrame(s[v2Protocol:])
	if s[v2Pkttype] == unix.PACKET_OUTGOING {
		// Our own transmissions (kernels without PACKET_IGNORE_OUTGOING).
		return false
	}
	hf := rxHeader{
		fixedLen: v2FixedLen,
		mac:      int(binary.NativeEndian.Uint16(s[v2Mac:])),
		snaplen:  int(binary.NativeEndian.Uint32(s[v2Snaplen:])),
		wireLen:  int(binary.NativeEndian.Uint32(s[v2Len:])),
		status:   status,
		tci:      uint32(binary.NativeEndian.Uint16(s[v2VLANTCI:])),
		tpid:     binary.NativeEndian.Uint16(s[v2VLANTPID:]),
		upcall:   upcall,
	}
	return deliver(s, &hf, &r.opts, b, n, c)
}

// framesLeft counts the frames in the ring the walk has not reached: the
// slots handed over from cur on. Only exact while the kernel writes
// nothing (Port.Tap). The caller holds RxMu.
func (r *frameRing) framesLeft() int {
	n := 0
	for i := r.cur; n < r.frameNr-r.relN; n++ {
		if atomic.LoadUint32(slotStatus(r.slot(i)))&unix.TP_STATUS_USER == 0 {
			break
		}
		if i++; i == r.frameNr {
			i = 0
		}
	}
	return n
}

// slotOffset is where slot i of a ring of perBlock slots of frameSize
// bytes per blockSize-byte block starts in the mapping.
func slotOffset(i, frameSize, perBlock, blockSize int) int {
	return (i/perBlock)*blockSize + (i%perBlock)*frameSize
}

// slotGeometry picks slot and block sizes for frames up to maxFrame bytes
// after room header bytes. Slots up to a page are powers of two packed in
// page-sized blocks (slot i at i*frameSize). Bigger slots (64 KiB GSO
// frames) are rounded to TPACKET_ALIGNMENT and packed into 1 MiB blocks,
// so a ring of them wastes little memory; the kernel allocates each block
// as one piece. The frame count is rounded up to whole blocks.
func slotGeometry(room, maxFrame, frames, pageSize int) (frameSize, blockSize, blockNr int) {
	need := room + maxFrame
	if need > pageSize {
		frameSize = (need + unix.TPACKET_ALIGNMENT - 1) &^ (unix.TPACKET_ALIGNMENT - 1)
		blockSize = max(bigBlockSize, (frameSize+pageSize-1)/pageSize*pageSize)
	} else {
		frameSize = 256
		for frameSize < need {
			frameSize *= 2
		}
		blockSize = pageSize
	}
	perBlock := blockSize / frameSize
	blockNr = max(1, (frames+perBlock-1)/perBlock)
	return frameSize, blockSize, blockNr
}

// bigBlockSize is the block size for slots larger than a page.
const bigBlockSize = 1 << 20
