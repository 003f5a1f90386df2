// Package port defines the shape every datapath port has (AF_PACKET ring on a
// veth or NIC, TAP internal port, later AF_XDP or a tunnel vport), so the packet
// loop can move batches of frames without knowing which kind of device it
// talks to. It is the userspace counterpart of OVS's struct netdev_class
// rxq_recv / send / get_stats.
package port

import (
	"errors"
	"net"
	"sync/atomic"
)

// ErrClosed is returned (wrapped) by ReadBatch and WriteBatch once Close was
// called, so a port goroutine can tell "stop" from a real I/O error.
var ErrClosed = errors.New("port closed")

// Ethernet sizes the length checks use.
const (
	EthHeaderLen  = 14 // destination MAC, source MAC, EtherType
	VLANHeaderLen = 4  // one 802.1Q / 802.1ad tag (TPID + TCI)

	// MinFrameLen is the shortest frame the datapath accepts: anything shorter
	// cannot carry an Ethernet header and is a runt.
	MinFrameLen = EthHeaderLen
)

// MaxFrameLen is the longest frame (without FCS) a port with the given MTU
// accepts: the L3 MTU plus the Ethernet header plus two VLAN tags (QinQ), the
// same slack the Linux bridge and OVS allow for tagged traffic.
func MaxFrameLen(mtu int) int {
	return mtu + EthHeaderLen + 2*VLANHeaderLen
}

// LengthOK reports whether a frame of n bytes is neither a runt nor longer
// than maxLen. Ports drop and count frames that fail it (Stats.RxLengthErrors
// on receive, Stats.TxDropped on send).
func LengthOK(n, maxLen int) bool {
	return n >= MinFrameLen && n <= maxLen
}

// Port is one switch port as seen by the packet loop. ReadBatch is called
// by exactly one goroutine (the port's reader), WriteBatch by one goroutine at
// a time; Stats, Name, HardwareAddr, MTU and Close are safe from any goroutine.
type Port interface {
	// Name is the kernel interface name (e.g. "veth1a2b", "antrea-gw0").
	Name() string
	// Ifindex is the kernel interface index the port is bound to.
	Ifindex() int
	// HardwareAddr is the interface MAC address as read when the port opened.
	HardwareAddr() net.HardwareAddr
	// MTU is the interface L3 MTU as read when the port opened.
	MTU() int

	// ReadBatch blocks until at least one frame arrived, the port's read
	// timeout expired (returns 0, nil) or the port was closed (returns an
	// error wrapping ErrClosed). It fills b.Frames[:n] and b.Meta[:n].
	// The frames may point into kernel-shared memory: they are valid only
	// until the next ReadBatch or Release on the same port. Copy what must
	// live longer (packet-in to a controller, queued frames).
	ReadBatch(b *Batch) (int, error)
	// Release gives the frames of the last ReadBatch back to the kernel
	// early (ReadBatch also does it). Frames of that batch must not be used
	// afterwards. The reader calls it once it is done with a batch, queued
	// outputs transmitted: Close frees the memory frames sit in only then.
	Release()
	// WriteBatch transmits frames in order and returns how many the kernel
	// accepted. Frames that are runts or longer than the port allows are
	// skipped, counted in Stats.TxDropped, and still count as handled in n,
	// so n < len(frames) means a real error that err describes. The frames
	// are copied by the kernel; the caller may reuse them on return.
	WriteBatch(frames [][]byte) (int, error)

	// Stats returns the counters since the port opened.
	Stats() Stats
	// Close releases the socket/device and wakes a blocked ReadBatch,
	// which then fails with ErrClosed. Memory the reader's frames point
	// into stays mapped until the reader gives them back (Release or its
	// next ReadBatch): Close may come from any goroutine while the loop
	// still reads a batch.
	Close() error
}

// Stats are a port's counters, named like OVS's struct netdev_stats so they
// map one to one onto OpenFlow port stats and `ovs-ofctl dump-ports`.
type Stats struct {
	RxPackets uint64 // frames handed to the loop
	RxBytes   uint64 // bytes of those frames (with re-inserted VLAN tags)
	// RxDropped are frames the kernel could not queue for us (ring or
	// socket buffer full: PACKET_STATISTICS tp_drops).
	RxDropped uint64
	// RxErrors is every frame received but not handed to the loop
	// (RxLengthErrors included).
	RxErrors uint64
	// RxLengthErrors are runts, frames longer than MaxFrameLen(MTU) and
	// frames the kernel truncated to fit the ring.
	RxLengthErrors uint64

	TxPackets uint64 // frames the kernel accepted for transmission
	TxBytes   uint64
	// TxDropped are frames not sent because of their length or because the
	// kernel had no room (ENOBUFS).
	TxDropped uint64
	// TxErrors are frames whose transmission failed with another error.
	TxErrors uint64
}

// FrameFlags describe per-frame facts the kernel reported on receive.
type FrameFlags uint8

const (
	// FlagVLAN: the kernel had stripped an 802.1Q/802.1ad tag (VLAN
	// acceleration); Meta.VLANTPID/VLANTCI hold it. Ports put the tag back
	// into the frame, so the bytes are as on the wire, unless configured
	// to leave it out (afpacket.Config.KeepVLANStripped).
	FlagVLAN FrameFlags = 1 << iota
	// FlagCsumNotReady: the frame was sent by a local socket with checksum
	// offload and its L4 checksum is still partial (TP_STATUS_CSUMNOTREADY).
	// Forwarding it as-is to another port yields a bad checksum there.
	FlagCsumNotReady
	// FlagCsumValid: the device already validated the L4 checksum.
	FlagCsumValid
	// FlagVnet: Meta.Vnet holds the frame's virtio_net_hdr (a port with
	// offload metadata, e.g. AF_PACKET with PACKET_VNET_HDR).
	FlagVnet
)

// Meta is per-frame receive metadata, parallel to Batch.Frames.
type Meta struct {
	VLANTPID uint16 // 0x8100 or 0x88a8 when FlagVLAN is set
	VLANTCI  uint16 // PCP(3) DEI(1) VID(12) when FlagVLAN is set
	Flags    FrameFlags
	RxHash   uint32  // kernel flow hash (skb->hash), 0 if unknown
	Vnet     VnetHdr // when FlagVnet is set
}

// Batch is a reusable set of frame slots for ReadBatch. Allocate one per
// port goroutine with NewBatch and reuse it for every read.
type Batch struct {
	// Frames[:n] are the frames of the last ReadBatch; len(Frames) is the
	// batch capacity and must not be changed.
	Frames [][]byte
	// Meta[:n] describes Frames[:n].
	Meta []Meta

	// bufs back the frames of ports that copy (TAP); ring-based ports
	// leave them alone and point Frames into the ring instead.
	bufs [][]byte
}

// NewBatch returns a batch with room for size frames.
func NewBatch(size int) *Batch {
	if size < 1 {
		size = 1
	}
	return &Batch{
		Frames: make([][]byte, size),
		Meta:   make([]Meta, size),
		bufs:   make([][]byte, size),
	}
}

// Cap is the number of frames the batch can hold.
func (b *Batch) Cap() int { return len(b.Frames) }

// Buffer returns slot i's private buffer with length size, allocating it
// only the first time (or when a larger size is requested), so ports that
// copy frames out of the kernel reuse memory across reads.
func (b *Batch) Buffer(i, size int) []byte {
	if cap(b.bufs[i]) < size {
		b.bufs[i] = make([]byte, size)
	}
	return b.bufs[i][:size]
}

// Counters are the live counters of a port, updated from the packet path
// with atomics; every port kind keeps one set and reports it with Snapshot.
type Counters struct {
	RxPackets, RxBytes, RxDropped, RxErrors, RxLengthErrors atomic.Uint64
	TxPackets, TxBytes, TxDropped, TxErrors                 atomic.Uint64
}

// Snapshot reads the counters.
func (c *Counters) Snapshot() Stats {
	return Stats{
		RxPackets:      c.RxPackets.Load(),
		RxBytes:        c.RxBytes.Load(),
		RxDropped:      c.RxDropped.Load(),
		RxErrors:       c.RxErrors.Load(),
		RxLengthErrors: c.RxLengthErrors.Load(),
		TxPackets:      c.TxPackets.Load(),
		TxBytes:        c.TxBytes.Load(),
		TxDropped:      c.TxDropped.Load(),
		TxErrors:       c.TxErrors.Load(),
	}
}

// Poller is a port a poll-mode thread can serve together with others, the
// way OVS's PMD threads poll their rx queues: TryReadBatch is ReadBatch
// without waiting (0, nil when no frame is ready), and PollFd is a
// descriptor that poll(2) reports readable when frames wait, for the
// thread to sleep on when every port is idle. Frames stay valid until the
// next TryReadBatch or Release, as with ReadBatch.
//
// PollError is called when poll(2) reports an error condition on PollFd
// (POLLERR, POLLHUP): it takes the socket's pending error, detaching the
// port if its interface was deleted (see Base), and returns it.
type Poller interface {
	TryReadBatch(b *Batch) (int, error)
	PollFd() int
	PollError() error
}
