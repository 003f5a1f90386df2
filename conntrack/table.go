package conntrack

import (
	"sync"
	"sync/atomic"
)

// Storage layout.
//
// Connections live in fixed-size chunks owned by a shard (the shard of the
// original-direction key); chunks hold no Go pointers, so a million
// connections cost the garbage collector nothing to scan. A connection is
// named by a 32-bit ref: shard number in the top bits, index in the shard's
// chunks below. Each shard also has an open-addressing index (linear probing,
// backward-shift deletion) of 64-bit entries: the low 32 bits of the key hash
// (also used as the home slot), the direction and the ref. Every connection
// has two entries, one per direction key, usually in two different shards.
//
// Locking. A shard's RWMutex guards its index, its chunk list, its free list
// and its expiry wheel, and the immutable part of the connections it owns
// (keys, NAT action) as seen through its index. A lookup holds the read lock
// of the shard it probed for as long as it uses the connection, which keeps
// the connection from being freed (freeing takes the write locks of both
// shards holding its entries, always in shard order). The mutable per-packet
// state (TCP peers, mark, label) is guarded by the connection's own mutex;
// the expiration time is atomic.
const (
	shardBits   = 6
	nShards     = 1 << shardBits
	refBits     = 31 - shardBits
	refMask     = 1<<refBits - 1
	chunkBits   = 8
	chunkSize   = 1 << chunkBits
	minSlots    = 64
	noSlot      = 0xffff
	entryDirBit = 1 << 31
)

// tcpPeer is the window-tracking state of one end of a TCP connection (the
// pf/OVS model: seqlo is the highest sequence sent, seqhi the highest the
// other end allowed, maxWin the largest unscaled window seen).
type tcpPeer struct {
	seqlo, seqhi uint32
	maxWin       uint32
	wscale       uint8
	state        uint8
}

type conn struct {
	mu     sync.Mutex
	exp    atomic.Int64 // expiration, ns; <= now means gone
	keys   [2]key       // [0] original direction, [1] reply direction (after NAT)
	mark   uint32
	label  Label
	tcp    [2]tcpPeer
	state  uint8 // ICMP / other protocols state
	nat    uint8 // natSrc or natDst (0: none)
	live   bool
	rshard uint8 // shard of keys[1]
	wslot  uint16
	gen    uint32 // bumped when the slot is freed (see lockConn)
	next   uint32 // expiry wheel list (local index) or free list
	prev   uint32
}

type connChunk [chunkSize]conn

type shard struct {
	mu    sync.RWMutex
	slots []uint64
	used  int
	// chunks is replaced (copy on grow) under mu and read atomically by
	// lookups that hold another shard's lock.
	chunks   atomic.Pointer[[]*connChunk]
	nAlloc   uint32 // next never-used local index; index 0 is never used
	freeHead uint32
	wheel    [wheelSlots]uint32
	tick     int64 // last wheel tick fully processed (-1: not started)
	_        [64]byte
}

func (s *shard) init() {
	s.slots = make([]uint64, minSlots)
	empty := make([]*connChunk, 0)
	s.chunks.Store(&empty)
	s.nAlloc = 1
	s.tick = -1
}

func mkRef(sh int, idx uint32) uint32 { return uint32(sh)<<refBits | idx }

func (t *Tracker) connAt(ref uint32) *conn {
	s := &t.shards[ref>>refBits]
	idx := ref & refMask
	ch := *s.chunks.Load()
	return &ch[idx>>chunkBits][idx&(chunkSize-1)]
}

func (s *shard) local(idx uint32) *conn {
	ch := *s.chunks.Load()
	return &ch[idx>>chunkBits][idx&(chunkSize-1)]
}

// find returns the live, unexpired connection one of whose keys is k, and
// which key (0 original, 1 reply). The caller holds s.mu (read or write).
func (t *Tracker) find(s *shard, k *key, h uint64, now int64) (*conn, int, uint32) {
	mask := uint64(len(s.slots) - 1)
	tag := uint32(h)
	for i := uint64(tag) & mask; ; i = (i + 1) & mask {
		e := s.slots[i]
		if e == 0 {
			return nil, 0, 0
		}
		if uint32(e>>32) != tag {
			continue
		}
		ref := uint32(e) &^ entryDirBit
		c := t.connAt(ref)
		d := 0
		if uint32(e)&entryDirBit != 0 {
			d = 1
		}
		if c.keys[d] == *k && c.exp.Load() > now {
			return c, d, ref
		}
	}
}

// exists reports whether some unexpired connection has key k in either
// direction. It takes the read lock of k's shard.
func (t *Tracker) exists(k *key, now int64) bool {
	h := k.hash(t.seed)
	s := &t.shards[h>>(64-shardBits)]
	s.mu.RLock()
	c, _, _ := t.find(s, k, h, now)
	s.mu.RUnlock()
	return c != nil
}

// insertEntry adds an index entry; the caller holds s.mu for writing.
func (s *shard) insertEntry(h uint64, ref uint32, dir int) {
	if (s.used+1)*4 > len(s.slots)*3 {
		s.grow()
	}
	e := uint64(uint32(h))<<32 | uint64(ref)
	if dir == 1 {
		e |= entryDirBit
	}
	mask := uint64(len(s.slots) - 1)
	i := uint64(uint32(h)) & mask
	for s.slots[i] != 0 {
		i = (i + 1) & mask
	}
	s.slots[i] = e
	s.used++
}

func (s *shard) grow() {
	old := s.slots
	s.slots = make([]uint64, len(old)*2)
	mask := uint64(len(s.slots) - 1)
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := (e >> 32) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = e
	}
}

// removeEntry deletes the entry (h, ref, dir); the caller holds s.mu for
// writing. Backward-shift deletion keeps probe chains without tombstones.
func (s *shard) removeEntry(h uint64, ref uint32, dir int) {
	want := uint64(uint32(h))<<32 | uint64(ref)
	if dir == 1 {
		want |= entryDirBit
	}
	mask := uint64(len(s.slots) - 1)
	i := uint64(uint32(h)) & mask
	for {
		e := s.slots[i]
		if e == 0 {
			return // not present (cannot happen for a live conn)
		}
		if e == want {
			break
		}
		i = (i + 1) & mask
	}
	s.used--
	for {
		s.slots[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			e := s.slots[j]
			if e == 0 {
				return
			}
			home := (e >> 32) & mask
			// Move e back into the hole at i unless its home lies
			// cyclically in (i, j].
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				s.slots[i] = e
				i = j
				break
			}
		}
	}
}

// alloc takes a free connection slot; the caller holds s.mu for writing.
func (s *shard) alloc(sh int) (uint32, *conn) {
	if s.freeHead != 0 {
		idx := s.freeHead
		c := s.local(idx)
		s.freeHead = c.next
		return mkRef(sh, idx), c
	}
	idx := s.nAlloc
	if idx > refMask {
		return 0, nil
	}
	chunks := *s.chunks.Load()
	if int(idx>>chunkBits) >= len(chunks) {
		n := make([]*connChunk, len(chunks)+1, len(chunks)+1)
		copy(n, chunks)
		n[len(chunks)] = new(connChunk)
		s.chunks.Store(&n)
		chunks = n
	}
	s.nAlloc++
	return mkRef(sh, idx), &chunks[idx>>chunkBits][idx&(chunkSize-1)]
}

// lockPair write-locks shards a and b in order (once if equal).
func (t *Tracker) lockPair(a, b int) {
	if a == b {
		t.shards[a].mu.Lock()
		return
	}
	if a > b {
		a, b = b, a
	}
	t.shards[a].mu.Lock()
	t.shards[b].mu.Lock()
}

func (t *Tracker) unlockPair(a, b int) {
	t.shards[a].mu.Unlock()
	if a != b {
		t.shards[b].mu.Unlock()
	}
}

// lockConn write-locks both shards of the connection ref if it is still the
// incarnation gen. On success the caller must unlockPair(a, b).
func (t *Tracker) lockConn(ref, gen uint32) (c *conn, a, b int, ok bool) {
	a = int(ref >> refBits)
	sa := &t.shards[a]
	sa.mu.Lock()
	c = t.connAt(ref)
	if !c.live || c.gen != gen {
		sa.mu.Unlock()
		return nil, 0, 0, false
	}
	b = int(c.rshard)
	if b == a {
		return c, a, b, true
	}
	if b > a {
		t.shards[b].mu.Lock()
		return c, a, b, true
	}
	sa.mu.Unlock()
	t.shards[b].mu.Lock()
	sa.mu.Lock()
	if !c.live || c.gen != gen {
		t.unlockPair(a, b)
		return nil, 0, 0, false
	}
	return c, a, b, true
}

// freeConn removes a connection from both indexes and the wheel and returns
// its slot. The caller holds the write locks of both of its shards.
func (t *Tracker) freeConn(ref uint32, c *conn) {
	a := int(ref >> refBits)
	sa := &t.shards[a]
	h0 := c.keys[0].hash(t.seed)
	h1 := c.keys[1].hash(t.seed)
	sa.removeEntry(h0, ref, 0)
	t.shards[c.rshard].removeEntry(h1, ref, 1)
	sa.wheelUnlink(c)
	zone := c.keys[0].zone
	c.mu.Lock()
	c.live = false
	c.gen++
	c.exp.Store(0)
	c.mu.Unlock()
	c.next = sa.freeHead
	sa.freeHead = ref & refMask
	t.count.Add(-1)
	t.zoneCount[zone].Add(-1)
}
