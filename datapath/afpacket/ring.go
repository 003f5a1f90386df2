package afpacket

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/govs-project/govs/datapath/port"
	"golang.org/x/sys/unix"
)

// Offsets inside the TPACKET_V3 structures of <linux/if_packet.h>. The ring
// is shared with the kernel, so fields are read in host byte order.
const (
	// struct tpacket_block_desc: version, offset_to_priv, then
	// struct tpacket_hdr_v1.
	bdBlockStatus      = 8
	bdNumPkts          = 12
	bdOffsetToFirstPkt = 16
	bdHeaderLen        = 48 // version .. ts_last_pkt, rounded like the kernel

	// struct tpacket3_hdr.
	hdrNextOffset = 0
	hdrSnaplen    = 12
	hdrLen        = 16
	hdrStatus     = 20
	hdrMac        = 24
	hdrRxHash     = 28
	hdrVLANTCI    = 32
	hdrVLANTPID   = 36
	// struct sockaddr_ll follows the header at TPACKET_ALIGN(sizeof(tpacket3_hdr)).
	hdrSockaddrLL = unix.SizeofTpacket3Hdr
	sllProtocol   = hdrSockaddrLL + 2 // big-endian, like on the wire
	sllPkttype    = hdrSockaddrLL + 10
	// hdrFixedLen is what the kernel writes before the frame's headroom:
	// the header plus the sockaddr_ll. Re-inserting a VLAN tag may use the
	// bytes between this and tp_mac, never the header itself.
	hdrFixedLen = hdrSockaddrLL + unix.SizeofSockaddrLinklayer
)

// ring walks the blocks of a TPACKET_V3 receive ring. A block belongs to
// the kernel until its status has TP_STATUS_USER; then it holds num_pkts
// frames chained by tp_next_offset, and goes back to the kernel when its
// status is set to TP_STATUS_KERNEL again. Frames handed to the loop point
// into the block, so a block is only given back at the start of the next
// read (or on Release), when the loop is done with the previous batch.
type ring struct {
	mem       []byte // the whole mmap'ed ring
	blockSize int
	blockNr   int

	cur     int  // block the walk is in, or waits for
	inBlock bool // cur is owned by us and partly consumed
	pktLeft int  // frames of cur not yet handed out
	next    int  // ring offset of the next frame header of cur

	// Blocks fully walked by the last read, waiting to be given back:
	// relN blocks starting at relFirst (consecutive, modulo blockNr).
	relFirst int
	relN     int

	opts rxOpts
}

func (r *ring) blockStatus(i int) *uint32 {
	return (*uint32)(unsafe.Pointer(&r.mem[i*r.blockSize+bdBlockStatus]))
}

// ready reports whether the block the walk waits for is ours to read.
func (r *ring) ready() bool {
	return r.inBlock || atomic.LoadUint32(r.blockStatus(r.cur))&unix.TP_STATUS_USER != 0
}

// held reports whether blocks walked by the last read are still ours.
func (r *ring) held() bool { return r.relN > 0 }

// release gives the blocks walked by the last read back to the kernel.
func (r *ring) release() {
	for ; r.relN > 0; r.relN-- {
		// The kernel zeroes num_pkts when it opens the block again;
		// doing it now keeps a block it has not opened yet from
		// showing a stale count to Port.Tap (framesLeft).
		binary.NativeEndian.PutUint32(r.mem[r.relFirst*r.blockSize+bdNumPkts:], 0)
		atomic.StoreUint32(r.blockStatus(r.relFirst), unix.TP_STATUS_KERNEL)
		r.relFirst++
		if r.relFirst == r.blockNr {
			r.relFirst = 0
		}
	}
}

// framesLeft counts the frames in the ring the walk has not reached: the
// rest of the current block, every block handed over after it, and the
// block the kernel is filling. Only exact while the kernel writes
// nothing (Port.Tap). The caller holds RxMu.
func (r *ring) framesLeft() int {
	n, i := 0, r.cur
	for k := 0; k < r.blockNr-r.relN; k++ {
		user := atomic.LoadUint32(r.blockStatus(i))&unix.TP_STATUS_USER != 0
		switch {
		case k == 0 && r.inBlock:
			n += r.pktLeft
		default:
			// A block the kernel owns is the one it fills (or one it has
			// not opened, whose count release zeroed).
			n += int(binary.NativeEndian.Uint32(r.mem[i*r.blockSize+bdNumPkts:]))
		}
		if !user {
			break
		}
		if i++; i == r.blockNr {
			i = 0
		}
	}
	return n
}

// finishBlock marks the current block as walked and moves to the next one.
func (r *ring) finishBlock() {
	if r.relN == 0 {
		r.relFirst = r.cur
	}
	r.relN++
	r.inBlock = false
	r.pktLeft = 0
	r.cur++
	if r.cur == r.blockNr {
		r.cur = 0
	}
}

// fill hands out frames from ready blocks into b.Frames[n:] without
// blocking and returns the new count. It never reads outside the ring: a
// block whose offsets do not add up is counted as one error and skipped.
func (r *ring) fill(b *port.Batch, n int, c *port.RxCounts) int {
	for n < len(b.Frames) {
		if !r.inBlock {
			// The walk may only reach a block that is not waiting to be
			// released, or it would hand out frames twice.
			if r.relN == r.blockNr || !r.ready() {
				return n
			}
			start := r.cur * r.blockSize
			blk := r.mem[start : start+r.blockSize]
			r.pktLeft = int(binary.NativeEndian.Uint32(blk[bdNumPkts:]))
			first := int(binary.NativeEndian.Uint32(blk[bdOffsetToFirstPkt:]))
			if first < bdHeaderLen || first >= r.blockSize {
				c.Errors++
				r.finishBlock()
				continue
			}
			r.next = start + first
			r.inBlock = true
		}
		for r.pktLeft > 0 && n < len(b.Frames) {
			hdr := r.next
			ok, nextOff := r.frame(hdr, b, n, c)
			if ok {
				n++
			}
			r.pktLeft--
			if r.pktLeft == 0 {
				break
			}
			if nextOff == 0 {
				// The chain ends before num_pkts: a corrupt block.
				c.Errors++
				r.pktLeft = 0
				break
			}
			r.next = hdr + nextOff
		}
		if r.pktLeft == 0 {
			r.finishBlock()
		}
	}
	return n
}

// frame decodes the frame header at ring offset hdr into slot n of b. It
// reports whether the frame was handed out and the offset of the next
// header relative to this one (0 when it would leave the block).
func (r *ring) frame(hdr int, b *port.Batch, n int, c *port.RxCounts) (bool, int) {
	blockEnd := (r.cur + 1) * r.blockSize
	if hdr < 0 || hdr+hdrFixedLen > blockEnd {
		r.opts.skipFrame() // walked all the same
		return false, 0
	}
	h := r.mem[hdr:blockEnd]
	upcall := r.opts.upcallFrame(h[sllProtocol:])
	nextOff := int(binary.NativeEndian.Uint32(h[hdrNextOffset:]))
	if nextOff < hdrFixedLen || nextOff >= len(h) {
		nextOff = 0
	}
	if h[sllPkttype] == unix.PACKET_OUTGOING {
		// Our own transmissions (kernels without PACKET_IGNORE_OUTGOING).
		return false, nextOff
	}
	snaplen := int(binary.NativeEndian.Uint32(h[hdrSnaplen:]))
	wireLen := int(binary.NativeEndian.Uint32(h[hdrLen:]))
	mac := int(binary.NativeEndian.Uint16(h[hdrMac:]))
	hf := rxHeader{
		fixedLen: hdrFixedLen, mac: mac, snaplen: snaplen, wireLen: wireLen,
		status: binary.NativeEndian.Uint32(h[hdrStatus:]),
		tci:    binary.NativeEndian.Uint32(h[hdrVLANTCI:]),
		tpid:   binary.NativeEndian.Uint16(h[hdrVLANTPID:]),
		rxHash: binary.NativeEndian.Uint32(h[hdrRxHash:]),
		upcall: upcall,
	}
	return deliver(h, &hf, &r.opts, b, n, c), nextOff
}

// rxHeader is what a ring frame header (tpacket2_hdr or tpacket3_hdr)
// says about one received frame, in layout-independent form.
type rxHeader struct {
	fixedLen int    // header plus sockaddr_ll: tp_mac may not point below
	mac      int    // tp_mac: frame start, relative to the header
	snaplen  int    // tp_snaplen: bytes in the ring
	wireLen  int    // tp_len: bytes on the wire
	status   uint32 // tp_status
	tci      uint32 // tp_vlan_tci
	tpid     uint16 // tp_vlan_tpid
	rxHash   uint32 // tp_rxhash (TPACKET_V3 only)
	// upcall: the frame carries the kernel fast path's upcall header
	// (port.UpcallEthertype): the socket was bound to that protocol
	// when the kernel wrote it, and sll_protocol says so.
	upcall bool
}

// rxOpts is how a receive ring treats the frames it hands out.
type rxOpts struct {
	maxFrame  int  // longest frame accepted (port.MaxFrameLen of the MTU)
	reinsertV bool // put stripped VLAN tags back into the frame
	// vnet: a virtio_net_hdr precedes each frame (PACKET_VNET_HDR), and
	// GSO frames up to port.MaxGSOFrameLen are accepted.
	vnet bool
	// upcall: the socket is bound to port.UpcallEthertype (Config.Upcall
	// and no Port.Tap since), so a frame whose sll_protocol is that
	// carries the kernel fast path's upcall header. upcallLeft: after
	// Port.Tap, the frames still in the ring from before, which decode
	// the same way. The reader's, guarded by RxMu.
	upcall     bool
	upcallLeft int
}

// upcallFrame reports whether the next frame of the ring, whose
// sll_protocol (big-endian) starts proto, carries an upcall header.
// Every frame the ring walks must be asked about, in order, for
// upcallLeft to count right. A tap reads nothing more.
func (o *rxOpts) upcallFrame(proto []byte) bool {
	if !o.upcall && o.upcallLeft == 0 {
		return false
	}
	if o.upcallLeft > 0 {
		o.upcallLeft--
	}
	return binary.BigEndian.Uint16(proto) == port.UpcallEthertype
}

// skipFrame is upcallFrame for a frame the ring walks without reading it.
func (o *rxOpts) skipFrame() {
	if o.upcallLeft > 0 {
		o.upcallLeft--
	}
}

// deliver checks one frame whose header starts h (h ends where the frame's
// slot or block ends) and, if it is good, stores it in slot n of b with
// its metadata. Both ring versions share it so they treat VLAN tags,
// checksum flags, offload headers and bad lengths identically.
func deliver(h []byte, f *rxHeader, o *rxOpts, b *port.Batch, n int, c *port.RxCounts) bool {
	mac, snaplen := f.mac, f.snaplen
	fixedLen := f.fixedLen
	if o.vnet {
		fixedLen += port.VnetHdrLen // the header sits right before tp_mac
	}
	if mac < fixedLen || snaplen < 0 || mac+snaplen > len(h) {
		c.Errors++
		return false
	}
	if snaplen < f.wireLen {
		// The kernel truncated the frame to fit the ring: forwarding a
		// partial frame would corrupt it, so it is a length error.
		c.LengthErrors++
		c.Errors++
		return false
	}

	m := &b.Meta[n]
	*m = port.Meta{RxHash: f.rxHash}
	maxFrame := o.maxFrame
	if o.vnet {
		// Read before a VLAN tag is put back: that moves the MACs into
		// the bytes the header occupies.
		m.Vnet = port.DecodeVnetHdr(h[mac-port.VnetHdrLen : mac])
		m.Flags |= port.FlagVnet
		maxFrame = m.Vnet.MaxLen(maxFrame)
	}
	if f.status&unix.TP_STATUS_CSUMNOTREADY != 0 {
		m.Flags |= port.FlagCsumNotReady
	}
	if f.status&unix.TP_STATUS_CSUM_VALID != 0 {
		m.Flags |= port.FlagCsumValid
	}
	frame := h[mac : mac+snaplen]

	if f.upcall {
		var ok bool
		if frame, ok = stripUpcall(frame, m, o.reinsertV); !ok {
			c.Errors++
			return false
		}
	} else if f.tci != 0 || f.status&unix.TP_STATUS_VLAN_VALID != 0 {
		// Like OVS, a zero TCI without TP_STATUS_VLAN_VALID means no
		// tag (kernels before 3.0 had no such bit).
		tpid := uint16(unix.ETH_P_8021Q)
		if f.status&unix.TP_STATUS_VLAN_TPID_VALID != 0 {
			tpid = f.tpid
		}
		m.VLANTPID, m.VLANTCI, m.Flags = tpid, uint16(f.tci), m.Flags|port.FlagVLAN
		if o.reinsertV && len(frame) >= port.EthHeaderLen {
			frame = insertVLAN(h, f.fixedLen, mac, snaplen, tpid, uint16(f.tci), b, n)
			if m.Vnet.Flags&port.VnetFlagNeedsCsum != 0 {
				m.Vnet.CsumStart += port.VLANHeaderLen // the kernel counted without the tag
			}
		}
	}

	if !port.LengthOK(len(frame), maxFrame) {
		c.LengthErrors++
		c.Errors++
		return false
	}
	b.Frames[n] = frame
	c.Packets++
	c.Bytes += uint64(len(frame))
	return true
}

// stripUpcall turns a frame the kernel fast path sent up (port.DecodeUpcall)
// into the frame and metadata an ETH_P_ALL tap would have delivered: the
// header goes, the VLAN tag it carries goes into m (and back into the
// frame when reinsertV), all in place by moving the two MAC addresses
// forward over the bytes removed. An 802.1Q tag put back costs nothing:
// the header's X already sits where the TCI goes. The kernel counted the
// header in the virtio_net_hdr's offsets, so they lose the bytes removed.
// It reports false for a malformed header.
func stripUpcall(frame []byte, m *port.Meta, reinsertV bool) ([]byte, bool) {
	u, err := port.DecodeUpcall(frame)
	if err != nil {
		return nil, false
	}
	remove := u.HeaderLen
	if u.Tagged {
		m.VLANTPID, m.VLANTCI, m.Flags = u.TPID, u.TCI, m.Flags|port.FlagVLAN
		if reinsertV {
			// The tag stays: its 4 bytes end where the header ends.
			remove -= port.VLANHeaderLen
			binary.BigEndian.PutUint16(frame[remove+12:], u.TPID)
			binary.BigEndian.PutUint16(frame[remove+14:], u.TCI)
		}
	}
	if v := &m.Vnet; m.Flags&port.FlagVnet != 0 {
		if v.Flags&port.VnetFlagNeedsCsum != 0 {
			if int(v.CsumStart) < 12+remove {
				return nil, false // the checksum would start in the MACs
			}
			v.CsumStart -= uint16(remove)
		}
		if int(v.HdrLen) >= remove {
			v.HdrLen -= uint16(remove)
		}
	}
	if remove > 0 {
		copy(frame[remove:remove+12], frame[:12])
		frame = frame[remove:]
	}
	return frame, true
}

// insertVLAN puts the tag the kernel moved into the frame header back
// after the source MAC. The kernel leaves at least 14 bytes of headroom
// between the sockaddr_ll (ending at fixedLen) and tp_mac, so this
// normally moves the two MACs 4 bytes towards the header in place; if the
// headroom is too small the frame is copied into the batch's own buffer
// instead.
func insertVLAN(h []byte, fixedLen, mac, snaplen int, tpid, tci uint16, b *port.Batch, n int) []byte {
	var out []byte
	if mac-port.VLANHeaderLen >= fixedLen {
		start := mac - port.VLANHeaderLen
		copy(h[start:start+12], h[mac:mac+12])
		out = h[start : mac+snaplen]
	} else {
		out = b.Buffer(n, snaplen+port.VLANHeaderLen)
		copy(out[:12], h[mac:mac+12])
		copy(out[16:], h[mac+12:mac+snaplen])
	}
	binary.BigEndian.PutUint16(out[12:], tpid)
	binary.BigEndian.PutUint16(out[14:], tci)
	return out
}
