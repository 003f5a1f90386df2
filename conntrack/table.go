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
// with NAT has two entries, one per direction key, usually in two different
// shards. The hash is symmetric, so a connection without NAT (whose reply
// key is the reverse of its original key) needs only one entry: a lookup
// compares both of its keys.
//
// Locking. A shard's mutex serializes the writers of its index, chunk
// list, free list and expiry wheel. Lookups do not take it: index entries
// and the slot array are read with atomic loads. A lockless probe can miss
// an entry that a concurrent deletion is shifting, so a miss is repeated
// under the shard's lock before the packet is called new. Writers that
// need two shards (a connection's two keys) lock them in shard order; the
// lock order is always shard(s) before connection.
//
// A connection's own mutex guards its fields that packets read and write
// (keys, live, exp, nat, state, tcp, mark, label), as conn->lock does in
// OVS: a lookup locks the candidate, checks it (live, same key, not
// expired) and keeps it locked while the packet updates it; freeing clears
// live under that mutex, so a connection cannot be freed under a packet.
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

func (a *tcpPeer) same(b *tcpPeer) bool {
	return a.seqlo == b.seqlo && a.seqhi == b.seqhi && a.maxWin == b.maxWin &&
		a.wscale == b.wscale && a.state == b.state
}

// conn is one connection: 192 bytes, three cache lines, 64-byte aligned in
// its chunk. The first line has what a lookup checks (lock, expiration,
// original key), the second what an established packet reads and updates
// (TCP peers, mark, label) and the expiry wheel links, the third the reply
// key, which only NAT connections need (without NAT it is the reverse of
// the original key, and lookups compare that instead). So a lookup of a
// connection without NAT reads two lines, not three.
type conn struct {
	mu     sync.Mutex    // 0
	exp    atomic.Int64  // 8: expiration, ns; <= now means gone
	key0   key           // 16: original direction
	nat    uint8         // 58: natSrc or natDst (0: none)
	live   bool          // 59
	state  uint8         // 60: ICMP / other protocols state
	rshard uint8         // 61: shard of key1
	_      [2]byte       // 62
	tcp    [2]tcpPeer    // 64
	label  Label         // 96
	mark   atomic.Uint32 // 112: written under mu; atomic so ExecuteBatch can touch the line
	gen    uint32        // 116: bumped when the slot is freed (see lockConn)
	next   uint32        // 120: expiry wheel list (local index)
	prev   uint32        // 124
	key1   key           // 128: reply direction (after NAT)
	wslot  uint16        // 170
	zcount bool          // 172: counted in zoneCount (a zone limit applied at commit)
	_      [3]byte       // 173
	line3  atomic.Uint32 // 176: never written; warmFree loads the third line through it
	_      [12]byte      // 180: pad to 192 = 3 cache lines
}

// key returns the original (d = 0) or reply (d = 1) key.
func (c *conn) key(d int) *key {
	if d == 0 {
		return &c.key0
	}
	return &c.key1
}

func (c *conn) lock()   { c.mu.Lock() }
func (c *conn) unlock() { c.mu.Unlock() }

// match tells whether c is live, unexpired and has key k, and in which
// direction: d is the direction of the index entry that led to c. A
// connection without NAT has one entry for both directions, and its reply
// key is the reverse of the original one. The caller holds c's lock.
func (c *conn) match(k *key, d int, now int64) (int, bool) {
	if !c.live || c.exp.Load() <= now {
		return 0, false
	}
	if c.key(d).eq(k) {
		return d, true
	}
	if c.nat == 0 && k.eqReverse(&c.key0) {
		return 1, true
	}
	return 0, false
}

type connChunk [chunkSize]conn

// shard is laid out by who writes what, so that cores do not pass cache
// lines back and forth more than they must: the first line holds what
// lockless lookups read (written only when the index or the chunk list
// grows, when entries move, and by the sweeper once per tick); the second
// everything a commit or a free writes, with the lock, so that a commit
// moves one line of the shard's state from the core that used it last
// (plus one line of the wheel); then the wheel. Its size is a multiple of
// 64 bytes and the Tracker is allocated page-aligned, so no two shards
// share a line.
type shard struct {
	// Line 0.
	tab atomic.Pointer[[]atomic.Uint64] // index slots, replaced on growth
	// chunks is replaced (copy on grow) under mu and read atomically by
	// lookups that hold another shard's lock.
	chunks atomic.Pointer[[]*connChunk]
	// moves is odd while entries are being moved (deletion shifts,
	// growth) and counts such changes, so a lockless reader can tell
	// whether its miss is trustworthy. Inserting into an empty slot moves
	// nothing and does not bump it.
	moves   atomic.Uint64
	tick    int64 // last wheel tick fully processed
	ticking bool  // tick is set (the first Sweep sets it)
	// cursor is where an interrupted sweep of slot tick+1 resumes (0 and
	// !cursorEnd: from the head; cursorEnd: the rest of the list is done).
	cursorEnd bool
	cursor    uint32
	_         [24]byte

	// Line 1. mu serializes the writers of the index, chunk list, free
	// list and wheel. A plain mutex, not an RWMutex: its lock and unlock
	// are one atomic instruction each, an RWMutex's two, and the only
	// readers (a lookup's retry after a doubtful miss, management walks)
	// are rare.
	mu sync.Mutex
	// free holds the local indexes of freed connection slots, reused
	// last-freed first. A stack apart from the connections, not a list
	// through them: popping a slot then reads no connection, so the
	// commit that reuses a cold slot takes its cache miss once (when it
	// writes the slot), not once more to find the next free one. It
	// costs 4 bytes per free slot.
	free []uint32
	// count is the exact number of connections owned by the shard; it
	// reports to Tracker.approx each time it crosses a multiple of
	// countBatch.
	count  atomic.Int64
	used   int32  // index entries
	nAlloc uint32 // next never-used local index; index 0 is never used
	// nextFree is the local index that the next alloc will return (0:
	// none yet, a new chunk is due), kept under mu and read without it
	// by warmFree: only a hint for which memory to load early.
	nextFree atomic.Uint32
	_        [12]byte

	wheel [wheelSlots]uint32
}

func (s *shard) init() {
	tab := make([]atomic.Uint64, minSlots)
	s.tab.Store(&tab)
	empty := make([]*connChunk, 0)
	s.chunks.Store(&empty)
	s.nAlloc = 1
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

// find returns the live, unexpired connection one of whose keys is k,
// locked, which key (0 original, 1 reply) and its ref. It may be called
// with or without s.mu; without it, a miss is not authoritative.
func (t *Tracker) find(s *shard, k *key, h uint64, now int64) (*conn, int, uint32) {
	tab := *s.tab.Load()
	mask := uint64(len(tab) - 1)
	tag := uint32(h)
	i := uint64(tag) & mask
	for n := 0; n < len(tab); n++ {
		e := tab[i].Load()
		if e == 0 {
			break
		}
		if uint32(e>>32) == tag {
			ref := uint32(e) &^ entryDirBit
			c := t.connAt(ref)
			c.lock()
			if d, ok := c.match(k, int(uint32(e)>>31), now); ok {
				return c, d, ref
			}
			c.unlock()
		}
		i = (i + 1) & mask
	}
	return nil, 0, 0
}

// lookup is find with the locked retry after a lockless miss.
func (t *Tracker) lookup(k *key, h uint64, now int64) (*conn, int, uint32) {
	s := &t.shards[h>>(64-shardBits)]
	m := s.moves.Load()
	if c, d, ref := t.find(s, k, h, now); c != nil {
		return c, d, ref
	}
	if m&1 == 0 && s.moves.Load() == m {
		return nil, 0, 0 // no entry moved while we looked: a true miss
	}
	s.mu.Lock()
	c, d, ref := t.find(s, k, h, now)
	s.mu.Unlock()
	return c, d, ref
}

// exists reports whether some unexpired connection has key k (hash h) in
// either direction.
func (t *Tracker) exists(k *key, h uint64, now int64) bool {
	c, _, _ := t.lookup(k, h, now)
	if c != nil {
		c.unlock()
	}
	return c != nil
}

// insertEntry adds an index entry; the caller holds s.mu for writing.
func (s *shard) insertEntry(h uint64, ref uint32, dir int) {
	tab := *s.tab.Load()
	if (int(s.used)+1)*8 > len(tab)*5 { // load factor 5/8
		tab = s.grow(tab)
	}
	e := uint64(uint32(h))<<32 | uint64(ref)
	if dir == 1 {
		e |= entryDirBit
	}
	mask := uint64(len(tab) - 1)
	i := uint64(uint32(h)) & mask
	for tab[i].Load() != 0 {
		i = (i + 1) & mask
	}
	tab[i].Store(e)
	s.used++
}

// grow doubles the slot array. Lockless readers may still be probing the
// old one; it is left intact for them.
func (s *shard) grow(old []atomic.Uint64) []atomic.Uint64 {
	tab := make([]atomic.Uint64, len(old)*2)
	mask := uint64(len(tab) - 1)
	for j := range old {
		e := old[j].Load()
		if e == 0 {
			continue
		}
		i := (e >> 32) & mask
		for tab[i].Load() != 0 {
			i = (i + 1) & mask
		}
		tab[i].Store(e)
	}
	s.moves.Add(1)
	s.tab.Store(&tab)
	s.moves.Add(1)
	return tab
}

// removeEntry deletes the entry (h, ref, dir); the caller holds s.mu for
// writing. Backward-shift deletion keeps probe chains without tombstones.
func (s *shard) removeEntry(h uint64, ref uint32, dir int) {
	tab := *s.tab.Load()
	want := uint64(uint32(h))<<32 | uint64(ref)
	if dir == 1 {
		want |= entryDirBit
	}
	mask := uint64(len(tab) - 1)
	i := uint64(uint32(h)) & mask
	for {
		e := tab[i].Load()
		if e == 0 {
			return // not present (cannot happen for a live conn)
		}
		if e == want {
			break
		}
		i = (i + 1) & mask
	}
	s.used--
	s.moves.Add(1)
	defer s.moves.Add(1)
	for {
		// Fill the hole at i with the next entry that may move back,
		// before clearing where it came from, so that a lockless reader
		// sees the entry at one place or the other most of the time.
		j := i
		for {
			j = (j + 1) & mask
			e := tab[j].Load()
			if e == 0 {
				tab[i].Store(0)
				return
			}
			home := (e >> 32) & mask
			// Move e back into the hole at i unless its home lies
			// cyclically in (i, j].
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				tab[i].Store(e)
				i = j
				break
			}
		}
	}
}

// alloc takes a free connection slot; the caller holds s.mu for writing.
func (s *shard) alloc(sh int) (uint32, *conn) {
	defer s.setNextFree()
	if n := len(s.free); n > 0 {
		idx := s.free[n-1]
		s.free = s.free[:n-1]
		return mkRef(sh, idx), s.local(idx)
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

// setNextFree updates the nextFree hint; the caller holds s.mu for writing.
func (s *shard) setNextFree() {
	var idx uint32
	if n := len(s.free); n > 0 {
		idx = s.free[n-1]
	} else if int(s.nAlloc>>chunkBits) < len(*s.chunks.Load()) {
		idx = s.nAlloc
	}
	if s.nextFree.Load() != idx {
		s.nextFree.Store(idx)
	}
}

// warmFree loads the three cache lines of the connection slot that the
// next commit into shard s will take, and returns a value that depends
// on the loads. A commit writes all three lines, under the connection's
// lock, and its unlock (a locked instruction) waits for those stores: with
// a large table each is a cache miss, taken one after the other and after
// the miss on the index slot. execute calls warmFree just before the
// lookup that precedes a commit, so that these misses and the index
// slot's overlap. Without the shard lock the hint may be stale: then the
// loads are wasted, nothing else.
func (s *shard) warmFree() uint64 {
	idx := s.nextFree.Load()
	if idx == 0 {
		return 0
	}
	ch := *s.chunks.Load()
	if int(idx>>chunkBits) >= len(ch) {
		return 0
	}
	c := &ch[idx>>chunkBits][idx&(chunkSize-1)]
	return uint64(c.exp.Load()) + uint64(c.mark.Load()) + uint64(c.line3.Load())
}

// homeSlot loads the index slot where a lookup of hash h starts, and
// returns it: a load whose only purpose is to bring the slot's cache line
// in early (see execute).
func (s *shard) homeSlot(h uint64) uint64 {
	tab := *s.tab.Load()
	return tab[uint64(uint32(h))&uint64(len(tab)-1)].Load()
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
	sa.removeEntry(c.key0.hash(t.seed), ref, 0)
	if c.nat != 0 {
		t.shards[c.rshard].removeEntry(c.key1.hash(t.seed), ref, 1)
	}
	sa.wheelUnlink(ref&refMask, c)
	zone, zcount := c.key0.zone, c.zcount
	c.lock()
	c.live = false
	c.gen++
	c.exp.Store(0)
	c.unlock()
	sa.free = append(sa.free, ref&refMask)
	sa.setNextFree()
	if n := sa.count.Add(-1); n%countBatch == countBatch-1 {
		t.approx.Add(-countBatch)
	}
	if zcount {
		t.zoneCount[zone].Add(-1)
	}
}
