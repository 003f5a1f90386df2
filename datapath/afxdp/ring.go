package afxdp

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is the shared part of the four AF_XDP rings (Documentation/
// networking/af_xdp.rst, "Rings"): a power-of-two array plus a producer
// and a consumer index that run freely and wrap at 2^32, each written by
// one side only. The kernel produces the RxRing and the CompletionRing, we
// produce the FillRing and the TxRing.
//
// cachedProd and cachedCons are our copies of the two indexes: the one we
// own is the truth (published with submit or release), the other is
// re-read from shared memory only when the cached value says "full" or
// "empty", so a busy ring costs one atomic load per batch, not per entry.
type ring struct {
	producer *uint32 // in the mapping
	consumer *uint32
	flags    *uint32 // XDP_RING_NEED_WAKEUP
	mask     uint32
	size     uint32

	cachedProd uint32
	cachedCons uint32
}

// newRing points a ring at its mapping using the kernel's offsets.
func newRing(mem []byte, off unix.XDPRingOffset, size uint32) (ring, error) {
	if size == 0 || size&(size-1) != 0 {
		return ring{}, fmt.Errorf("ring size %d is not a power of two", size)
	}
	for _, o := range []uint64{off.Producer, off.Consumer, off.Flags} {
		if o+4 > uint64(len(mem)) {
			return ring{}, fmt.Errorf("ring offset %d beyond %d-byte mapping", o, len(mem))
		}
	}
	r := ring{
		producer: (*uint32)(unsafe.Pointer(&mem[off.Producer])),
		consumer: (*uint32)(unsafe.Pointer(&mem[off.Consumer])),
		flags:    (*uint32)(unsafe.Pointer(&mem[off.Flags])),
		mask:     size - 1,
		size:     size,
	}
	r.cachedProd = atomic.LoadUint32(r.producer)
	r.cachedCons = atomic.LoadUint32(r.consumer)
	return r, nil
}

// free is, for a ring we produce, how many entries can be written now. It
// reads the kernel's consumer index only when the cache shows fewer than
// want.
func (r *ring) free(want uint32) uint32 {
	n := r.size - (r.cachedProd - r.cachedCons)
	if n >= want {
		return n
	}
	r.cachedCons = atomic.LoadUint32(r.consumer)
	return r.size - (r.cachedProd - r.cachedCons)
}

// submit publishes the entries written since the last submit. The atomic
// store orders the entry writes before the index, as the kernel's
// smp_load_acquire on the other side expects.
func (r *ring) submit() { atomic.StoreUint32(r.producer, r.cachedProd) }

// avail is, for a ring the kernel produces, how many entries wait to be
// read. It reads the kernel's producer index only when the cache is empty.
func (r *ring) avail() uint32 {
	if n := r.cachedProd - r.cachedCons; n != 0 {
		return n
	}
	r.cachedProd = atomic.LoadUint32(r.producer)
	return r.cachedProd - r.cachedCons
}

// ready reports whether the kernel produced entries we have not read,
// always looking at shared memory (for busy-polling).
func (r *ring) ready() bool { return atomic.LoadUint32(r.producer) != r.cachedCons }

// release hands the entries read since the last release back.
func (r *ring) release() { atomic.StoreUint32(r.consumer, r.cachedCons) }

// needWakeup reports whether the kernel asked for a system call to go on
// (XDP_USE_NEED_WAKEUP): recvfrom/poll for the FillRing, sendto for the
// TxRing.
func (r *ring) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

// addrRing is a FillRing or a CompletionRing: its entries are UMEM frame
// addresses (u64).
type addrRing struct {
	ring
	addrs []uint64
}

func newAddrRing(mem []byte, off unix.XDPRingOffset, size uint32) (addrRing, error) {
	r, err := newRing(mem, off, size)
	if err != nil {
		return addrRing{}, err
	}
	if off.Desc+uint64(size)*8 > uint64(len(mem)) {
		return addrRing{}, fmt.Errorf("%d addresses at offset %d beyond %d-byte mapping", size, off.Desc, len(mem))
	}
	return addrRing{ring: r, addrs: unsafe.Slice((*uint64)(unsafe.Pointer(&mem[off.Desc])), size)}, nil
}

// descRing is an RxRing or a TxRing: its entries are struct xdp_desc
// (UMEM address, length, options).
type descRing struct {
	ring
	descs []unix.XDPDesc
}

func newDescRing(mem []byte, off unix.XDPRingOffset, size uint32) (descRing, error) {
	r, err := newRing(mem, off, size)
	if err != nil {
		return descRing{}, err
	}
	if off.Desc+uint64(size)*xdpDescLen > uint64(len(mem)) {
		return descRing{}, fmt.Errorf("%d descriptors at offset %d beyond %d-byte mapping", size, off.Desc, len(mem))
	}
	return descRing{ring: r, descs: unsafe.Slice((*unix.XDPDesc)(unsafe.Pointer(&mem[off.Desc])), size)}, nil
}

// xdpDescLen is sizeof(struct xdp_desc).
const xdpDescLen = uint64(unsafe.Sizeof(unix.XDPDesc{}))

// ringMapLen is how many bytes of the socket to map for a ring of size
// entries of entrySize bytes: the kernel puts the indexes and flags
// before the entries (at the offsets XDP_MMAP_OFFSETS reports).
func ringMapLen(off unix.XDPRingOffset, size uint32, entrySize uint64) int {
	return int(off.Desc + uint64(size)*entrySize)
}
