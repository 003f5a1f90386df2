package afpacket

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"github.com/govs-project/govs/datapath/port"
	"golang.org/x/sys/unix"
)

// txRing is a PACKET_TX_RING: fixed-size frame slots the kernel sends when
// their tp_status is TP_STATUS_SEND_REQUEST and send(2) kicks it; it sets
// the slot back to TP_STATUS_AVAILABLE once the frame left. The slot
// header is the socket's PACKET_VERSION layout (tpacket2_hdr or
// tpacket3_hdr); frame data starts at dataOff (tp_hdrlen -
// sizeof(sockaddr_ll), the kernel's default when PACKET_TX_HAS_OFF is off).
type txRing struct {
	mem       []byte // the TX part of the socket's mmap
	blockSize int
	frameSize int
	perBlock  int // frames per block
	nr        int // frames in the ring
	cur       int // next slot to fill

	// Header layout.
	statusOff, lenOff, snaplenOff, dataOff int
	v3                                     bool // tp_next_offset must be written 0
}

const txDataOff = unix.SizeofTpacket3Hdr // 48, TPACKET_V3

// newTxRing lays out a TX ring of about frames slots for frames up to
// maxFrame bytes, with the header layout of ring version ver.
func newTxRing(ver, maxFrame, frames, pageSize int) txRing {
	t := txRing{statusOff: hdrStatus, lenOff: hdrLen, snaplenOff: hdrSnaplen, dataOff: txDataOff, v3: true}
	if ver == TPacketV2 {
		t = txRing{statusOff: v2Status, lenOff: v2Len, snaplenOff: v2Snaplen, dataOff: v2TxDataOff}
	}
	fs, bs, bn := slotGeometry(t.dataOff, maxFrame, frames, pageSize)
	t.frameSize, t.blockSize, t.perBlock, t.nr = fs, bs, bs/fs, bs/fs*bn
	return t
}

func (t *txRing) slot(i int) []byte {
	off := slotOffset(i, t.frameSize, t.perBlock, t.blockSize)
	return t.mem[off : off+t.frameSize]
}

func (t *txRing) status(s []byte) *uint32 {
	return (*uint32)(unsafe.Pointer(&s[t.statusOff]))
}

// writeRing implements WriteBatch on the TX ring: copy each frame into the
// next free slot, mark it, and kick the kernel once per batch (or when the
// ring is full).
func (p *Port) writeRing(frames [][]byte) (int, error) {
	t := &p.tx
	var pkts, bytes, dropped uint64
	defer func() {
		p.Ctr.TxPackets.Add(pkts)
		p.Ctr.TxBytes.Add(bytes)
		p.Ctr.TxDropped.Add(dropped)
	}()
	queued := 0 // frames marked but not yet kicked
	var queuedBytes uint64
	for i := 0; i < len(frames); {
		f := frames[i]
		if !port.LengthOK(len(f), p.maxFrame) {
			dropped++
			i++
			continue
		}
		s := t.slot(t.cur)
		st := atomic.LoadUint32(t.status(s))
		if st == unix.TP_STATUS_WRONG_FORMAT {
			// The kernel refused what we put there earlier (PACKET_LOSS
			// makes it skip such slots); reuse it.
			p.Ctr.TxErrors.Add(1)
			st = unix.TP_STATUS_AVAILABLE
		}
		if st != unix.TP_STATUS_AVAILABLE {
			// Ring full: send what is queued, wait for the kernel to
			// free slots, retry the same frame.
			if err := p.kickTx(); err != nil {
				return i, err
			}
			pkts, bytes = pkts+uint64(queued), bytes+queuedBytes
			queued, queuedBytes = 0, 0
			if atomic.LoadUint32(t.status(s)) != unix.TP_STATUS_AVAILABLE {
				if err := p.waitWritable(); err != nil {
					return i, err
				}
			}
			continue
		}
		copy(s[t.dataOff:], f)
		if t.v3 {
			binary.NativeEndian.PutUint32(s[hdrNextOffset:], 0) // V3 TX requires 0
		}
		binary.NativeEndian.PutUint32(s[t.lenOff:], uint32(len(f)))
		binary.NativeEndian.PutUint32(s[t.snaplenOff:], uint32(len(f)))
		atomic.StoreUint32(t.status(s), unix.TP_STATUS_SEND_REQUEST)
		queued++
		queuedBytes += uint64(len(f))
		t.cur++
		if t.cur == t.nr {
			t.cur = 0
		}
		i++
	}
	if queued > 0 {
		// The last kick blocks until the kernel took every marked slot: a
		// non-blocking one can return EAGAIN and leave frames in the ring
		// until the next WriteBatch, which may never come.
		if err := p.kickTxFlags(0); err != nil {
			return len(frames) - queued, err
		}
		pkts, bytes = pkts+uint64(queued), bytes+queuedBytes
	}
	return len(frames), nil
}

// kickTx asks the kernel to send every slot marked TP_STATUS_SEND_REQUEST.
func (p *Port) kickTx() error { return p.kickTxFlags(unix.MSG_DONTWAIT) }

func (p *Port) kickTxFlags(flags int) error {
	for {
		// With the upcall address when the socket is bound to
		// port.UpcallEthertype (setTxAddr): tpacket_snd takes the
		// protocol and device from it like packet_snd.
		var addr, addrLen uintptr
		if p.txNamed {
			addr, addrLen = uintptr(unsafe.Pointer(&p.txAddr)), unix.SizeofSockaddrLinklayer
		}
		_, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(p.fd), 0, 0, uintptr(flags), addr, addrLen)
		switch errno {
		case 0, unix.EAGAIN, unix.ENOBUFS:
			// EAGAIN/ENOBUFS: the kernel keeps the unsent slots marked
			// and takes them on the next kick.
			return nil
		case unix.EINTR:
		default:
			return p.Errorf("send tx ring: %w", errno)
		}
	}
}
