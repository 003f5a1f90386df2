package conntrack

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Timeout classes (OVS' CT_TM_*), indexes into Tracker.timeouts.
const (
	tmTCPFirst = iota
	tmTCPOpening
	tmTCPEstablished
	tmTCPClosing
	tmTCPFinWait
	tmTCPClosed
	tmOtherFirst
	tmOtherMultiple
	tmOtherBidir
	tmICMPFirst
	tmICMPReply
	nTimeouts
)

// Results of a connection update, as in OVS.
type updateRes uint8

const (
	updInvalid  updateRes = iota
	updValid              // established
	updNew                // the old connection is over, start a new one
	updValidNew           // valid, but the connection is not established yet
)

// Tracker is a connection tracker: all zones, all connections. It is safe for
// concurrent use by any number of goroutines.
type Tracker struct {
	shards   [nShards]shard
	seed     uint64
	tick     int64
	timeouts [nTimeouts]int64
	seqCheck bool
	verifyCs bool
	clock    Clock
	_        [64]byte
	// approx is the connection count, reported by the shards in steps of
	// countBatch so that committing cores do not all write one cache line:
	// the sum over shards of their counts rounded down to a multiple of
	// countBatch, so at most nShards*countBatch below the truth (see
	// hasRoom).
	approx    atomic.Int64
	_         [56]byte
	maxConns  atomic.Int64
	defLimit  atomic.Int64 // default per-zone limit, 0 none
	zoneLimit [65536]atomic.Int32
	zoneCount [65536]atomic.Int32

	frags fragTable

	stats struct {
		invalid, full, natFail, fragments atomic.Uint64
	}
	onFull   func(zone uint16, zoneLimit bool)
	lastFull atomic.Int64
}

// New returns an empty tracker.
func New(cfg Config) *Tracker {
	t := &Tracker{
		seed:     cfg.Seed,
		seqCheck: !cfg.NoTCPSeqCheck,
		verifyCs: cfg.VerifyChecksums,
		clock:    cfg.Clock,
		tick:     int64(cfg.SweepTick),
		onFull:   cfg.OnFull,
	}
	if t.seed == 0 {
		t.seed = rand.Uint64() | 1
	}
	if t.clock == nil {
		t.clock = MonotonicClock
	}
	if t.tick <= 0 {
		t.tick = int64(250 * time.Millisecond)
	}
	max := cfg.MaxConns
	if max <= 0 {
		max = DefaultMaxConns
	}
	t.maxConns.Store(int64(max))
	def := DefaultTimeouts()
	to := cfg.Timeouts
	pick := func(v, d time.Duration) int64 {
		if v > 0 {
			return int64(v)
		}
		return int64(d)
	}
	t.timeouts = [nTimeouts]int64{
		tmTCPFirst:       pick(to.TCPSynSent, def.TCPSynSent),
		tmTCPOpening:     pick(to.TCPSynRecv, def.TCPSynRecv),
		tmTCPEstablished: pick(to.TCPEstablished, def.TCPEstablished),
		tmTCPClosing:     pick(to.TCPFinWait, def.TCPFinWait),
		tmTCPFinWait:     pick(to.TCPTimeWait, def.TCPTimeWait),
		tmTCPClosed:      pick(to.TCPClose, def.TCPClose),
		tmOtherFirst:     pick(to.UDPFirst, def.UDPFirst),
		tmOtherMultiple:  pick(to.UDPSingle, def.UDPSingle),
		tmOtherBidir:     pick(to.UDPMultiple, def.UDPMultiple),
		tmICMPFirst:      pick(to.ICMPFirst, def.ICMPFirst),
		tmICMPReply:      pick(to.ICMPReply, def.ICMPReply),
	}
	for i := range t.shards {
		t.shards[i].init()
	}
	return t
}

// Now returns the tracker clock's current time (ns), for callers that have
// no batch timestamp of their own.
func (t *Tracker) Now() int64 { return t.clock() }

// expSlack is how much an expiration may lag behind the packets refreshing
// it: an atomic store is a full barrier on amd64, so a busy connection
// stores its new deadline at most once per expSlack. Shortened deadlines
// (a state change to a shorter timeout) are always stored.
const expSlack = int64(10 * time.Millisecond)

func (t *Tracker) setExp(c *conn, tm int, now int64) {
	exp := now + t.timeouts[tm]
	if old := c.exp.Load(); exp < old || exp-old > expSlack {
		c.exp.Store(exp)
	}
}

// Execute runs the ct() action a on one packet: frame is the Ethernet frame
// (rewritten in place when NAT applies), l3 the offset of its IP header and
// ethType its EtherType (0x0800 or 0x86dd; anything else is +inv). md is the
// packet's ct metadata, read on entry and replaced by the result. now is the
// current time in nanoseconds on the Tracker's clock.
//
// Execute does not allocate.
func (t *Tracker) Execute(frame []byte, l3 int, ethType uint16, md *Meta, a *Args, now int64) {
	var p pkt
	var k key
	r := parse(frame, l3, ethType, a.Zone, &k, &p, t.verifyCs && !a.CsumPartial)
	t.executeParsed(frame, r, &p, &k, k.hash(t.seed), md, a, now)
}

// executeParsed is Execute after parse; h is k.hash(t.seed), computed by
// the caller so that ExecuteBatch hashes each packet once.
func (t *Tracker) executeParsed(frame []byte, r parseResult, p *pkt, k *key, h uint64, md *Meta, a *Args, now int64) {
	p.csumPartial = a.CsumPartial
	zone := a.Zone
	// Only the translation bits of an earlier ct() carry over, and only in
	// the same zone (OVS resets ct_state when a packet enters another zone):
	// they say the packet was already translated. The rest is recomputed.
	st := md.State & (StateSNAT | StateDNAT)
	if md.Zone != zone || md.State&StateTracked == 0 {
		st = 0
	}
	switch r {
	case parseOK:
		if p.frag == fragFirst {
			t.firstFragment(frame, p, k, st, md, a, now)
			return
		}
	case parseFragment:
		if p.frag == fragLater {
			t.laterFragment(frame, p, k, st, md, a, now)
			return
		}
		t.stats.fragments.Add(1)
		t.setInvalid(md, zone)
		return
	default:
		t.setInvalid(md, zone)
		return
	}
	for attempt := 0; attempt < 3; attempt++ {
		if t.execute(frame, p, k, h, st, md, a, now) {
			return
		}
		// A concurrent commit of the same connection won the race: look
		// it up again.
	}
	t.setInvalid(md, zone)
}

// Packet is one packet of a batch for ExecuteBatch.
type Packet struct {
	Frame   []byte
	L3      int
	EthType uint16
	Meta    *Meta
}

// batchGroup is how many packets ExecuteBatch prepares at once.
const batchGroup = 32

// batchProbe is how many index slots ExecuteBatch's warm-up scans for a
// packet's entry: the home slot's cache line holds 8 entries, and at the
// index's load factor (at most 5/8) nearly every chain is shorter.
const batchProbe = 8

// ExecuteBatch runs the ct() action a on each packet, with the same results
// as calling Execute on them in order. It does not allocate.
//
// With a large table a lookup is two dependent cache misses (the index
// slot, then the connection), which Execute takes one after the other for
// each packet. ExecuteBatch works on groups of batchGroup packets in three
// passes, as OVS's batched dpcls/EMC lookups do: (1) parse and hash every
// packet and load its home index slot, (2) find each packet's entry in
// the now cached probe chain and load the connection's first two lines,
// (3) run the packets. The loads of each pass do not depend on each other,
// so the CPU overlaps their misses: a group pays about two miss latencies,
// not two per packet. The warm-up only reads (atomically, without locks);
// pass 3 does the real, locked lookup, so a warm-up that raced with a
// writer costs a miss, never a wrong result.
func (t *Tracker) ExecuteBatch(pkts []Packet, a *Args, now int64) {
	var ks [batchGroup]key
	var ps [batchGroup]pkt
	var rs [batchGroup]parseResult
	var hs [batchGroup]uint64
	var tabs [batchGroup][]atomic.Uint64
	var refs [batchGroup]uint32
	for len(pkts) > 0 {
		n := min(len(pkts), batchGroup)
		var sink uint64
		// Pass 1: keys and hashes, then the home slots in a loop of
		// their own: a loop of a few instructions per packet keeps all
		// the group's loads in the CPU's window at once, where one that
		// also parses would hold two or three.
		for i := 0; i < n; i++ {
			q := &pkts[i]
			rs[i] = parse(q.Frame, q.L3, q.EthType, a.Zone, &ks[i], &ps[i], t.verifyCs && !a.CsumPartial)
			hs[i] = ks[i].hash(t.seed)
			tabs[i] = nil
			if rs[i] == parseOK {
				tabs[i] = *t.shards[hs[i]>>(64-shardBits)].tab.Load()
			}
		}
		for i := 0; i < n; i++ {
			if tab := tabs[i]; tab != nil {
				sink += tab[uint64(uint32(hs[i]))&uint64(len(tab)-1)].Load()
			}
		}
		// Pass 2: the entries (their slots are cached now), then, again in
		// a loop of their own, the connections' first two lines (lock,
		// expiration and original key; TCP state, mark and label) through
		// an atomic field of each. The reply key of a NAT connection
		// (third line) is not warmed: it has no atomic field to read it
		// through.
		for i := 0; i < n; i++ {
			refs[i] = 0
			tab := tabs[i]
			if tab == nil {
				continue
			}
			tag := uint32(hs[i])
			mask := uint64(len(tab) - 1)
			j := uint64(tag) & mask
			for probe := 0; probe < batchProbe; probe++ {
				e := tab[j].Load()
				if e == 0 {
					break
				}
				if uint32(e>>32) == tag {
					refs[i] = uint32(e) &^ entryDirBit
					break
				}
				j = (j + 1) & mask
			}
		}
		for i := 0; i < n; i++ {
			if refs[i] != 0 {
				c := t.connAt(refs[i])
				sink += uint64(c.exp.Load()) + uint64(c.mark.Load())
			}
		}
		if sink == 1 {
			// Practically never: the store only makes the loads above
			// observable, without every batch writing one shared line.
			batchSink.Store(sink)
		}
		// Pass 3: the work.
		for i := 0; i < n; i++ {
			q := &pkts[i]
			t.executeParsed(q.Frame, rs[i], &ps[i], &ks[i], hs[i], q.Meta, a, now)
		}
		pkts = pkts[n:]
	}
}

// batchSink keeps the warming loads from being optimized away.
var batchSink atomic.Uint64

// execute is one lookup-update-commit pass; it returns false when a commit
// lost a race and the packet must be looked up again.
// h is k.hash(t.seed).
func (t *Tracker) execute(frame []byte, p *pkt, k *key, h uint64, st uint8, md *Meta, a *Args, now int64) bool {
	natted := st&(StateSNAT|StateDNAT) != 0
	var c *conn
	var d int
	if natted {
		// The packet was already translated by an earlier ct(nat) in this
		// zone: its current header is the reverse of one of the keys.
		lk := k.reverse()
		c, d, _ = t.lookup(&lk, lk.hash(t.seed), now)
		natted = c != nil
	}
	// pl is the first NAT candidate of a commit, planned before the
	// lookup (pl.rev.v6 == 0xff: not planned).
	var pl natPlan
	pl.rev.v6 = 0xff
	if c == nil {
		if a.Commit {
			// Most packets of a committing action are new: load the
			// slot a commit would fill while the lookup waits for its
			// index slot (see warmFree), and with NAT the index slot
			// of the first candidate reply key, which natSelect will
			// check: these misses then overlap the lookup's instead
			// of following it. The candidate is computed first, so
			// that the loads are issued back to back, all inside the
			// CPU's window while the first one waits.
			withNAT := a.NAT != nil && a.NAT.Action != NATExisting
			if withNAT {
				t.natFirst(k, a.NAT, &pl)
			}
			sink := t.shards[h>>(64-shardBits)].warmFree()
			if withNAT && pl.ok {
				sink += t.shards[pl.h>>(64-shardBits)].homeSlot(pl.h)
			}
			if sink == 1 {
				batchSink.Store(1) // practically never; keeps the loads
			}
		}
		c, d, _ = t.lookup(k, h, now) // locked when found
	}
	if c != nil {
		reply := d == 1
		if natted {
			reply = !reply
		}
		if a.Force && reply {
			// The connection runs the other way: end it and treat the
			// packet as the start of a new one.
			c.exp.Store(0)
			c.unlock()
			c = nil
		} else {
			createNew := false
			if p.related {
				st |= StateRel
				if reply {
					st |= StateRpl
				}
			} else {
				upd := t.update(c, frame, p, reply, now)
				if upd == updNew {
					c.exp.Store(0)
					createNew = true
				}
				st = updState(upd, st, reply)
			}
			if !createNew {
				if a.NAT != nil && c.nat != 0 && st&(StateSNAT|StateDNAT) == 0 {
					dir := 0
					if reply {
						dir = 1
					}
					st |= t.natPacket(frame, p, c, dir)
				}
				t.fillMeta(md, st, c, a)
				c.unlock()
				return true
			}
			c.unlock()
		}
	}

	// No connection.
	if p.related {
		// An ICMP error for no known connection.
		t.setInvalid(md, a.Zone)
		return true
	}
	if !t.validNew(frame, p, k) {
		t.setInvalid(md, a.Zone)
		return true
	}
	st = StateNew
	if !a.Commit {
		md.State = st | StateTracked
		md.Zone = a.Zone
		md.Mark = 0
		md.Label = Label{}
		setOrig(&md.Orig, k)
		return true
	}
	c, res := t.commit(frame, p, k, h, a, &pl, now)
	switch res {
	case commitRaced:
		return false
	case commitFull, commitNATFail:
		t.setInvalid(md, a.Zone)
		return true
	}
	// The connection is not reachable by others until commit returned, but
	// lock it anyway for the mark/label update and the race detector.
	c.lock()
	if c.nat != 0 {
		st |= t.natPacket(frame, p, c, 0)
	}
	t.fillMeta(md, st, c, a)
	c.unlock()
	return true
}

// updState is the ct_state of a packet of an existing connection whose
// update gave res; st holds the bits it already has.
func updState(res updateRes, st uint8, reply bool) uint8 {
	switch res {
	case updValid:
		st = st&^StateNew | StateEst
		if reply {
			st |= StateRpl
		}
	case updInvalid:
		st = StateInv
	case updValidNew:
		st |= StateNew
	}
	return st
}

// commitMarkLabel returns the connection's mark and label after the
// exec(ct_mark/ct_label) of a (mark and label as they are now).
func commitMarkLabel(a *Args, mark uint32, label Label) (uint32, Label) {
	if a.Commit {
		if a.SetMark {
			mark = a.Mark&a.MarkMask | mark&^a.MarkMask
		}
		if a.SetLabel {
			label.Hi = a.Label.Hi&a.LabelMask.Hi | label.Hi&^a.LabelMask.Hi
			label.Lo = a.Label.Lo&a.LabelMask.Lo | label.Lo&^a.LabelMask.Lo
		}
	}
	return mark, label
}

// fillMeta writes the result for a packet of connection c (locked) and
// applies exec(ct_mark/ct_label) of a committing action.
func (t *Tracker) fillMeta(md *Meta, st uint8, c *conn, a *Args) {
	mark, label := commitMarkLabel(a, c.mark.Load(), c.label)
	if a.Commit && a.SetMark {
		c.mark.Store(mark)
	}
	if a.Commit && a.SetLabel {
		c.label = label
	}
	setMeta(md, st, a.Zone, mark, label, &c.key0)
}

// setMeta writes a packet's metadata; orig is its connection's original
// key.
func setMeta(md *Meta, st uint8, zone uint16, mark uint32, label Label, orig *key) {
	md.State = st | StateTracked
	md.Zone = zone
	md.Mark = mark
	md.Label = label
	if st&StateInv != 0 {
		md.Orig = Orig{}
	} else {
		setOrig(&md.Orig, orig)
	}
}

func (t *Tracker) setInvalid(md *Meta, zone uint16) {
	t.stats.invalid.Add(1)
	*md = Meta{State: StateInv | StateTracked, Zone: zone}
}

func setOrig(o *Orig, k *key) {
	o.Src, o.Dst = k.src, k.dst
	o.IPv6 = k.v6 != 0
	o.Proto = k.proto
	if k.isICMP() {
		o.SrcPort, o.DstPort = uint16(k.styp), 0
	} else {
		o.SrcPort, o.DstPort = k.sport, k.dport
	}
}

// validNew tells whether the packet may start a connection.
func (t *Tracker) validNew(frame []byte, p *pkt, k *key) bool {
	switch {
	case k.proto == protoTCP:
		return tcpValidNew(p.tcpFlags)
	case k.proto == protoICMP && k.v6 == 0:
		return k.styp == icmp4Echo || k.styp == icmp4InfoReq || k.styp == icmp4Timestamp
	case k.proto == protoICMPv6 && k.v6 == 1:
		return k.styp == icmp6Echo
	}
	return true
}

// update advances the protocol state of c for a packet in direction reply.
// The caller holds c's lock.
func (t *Tracker) update(c *conn, frame []byte, p *pkt, reply bool, now int64) updateRes {
	var res updateRes
	var tm int
	if c.key0.proto == protoTCP {
		res, tm = t.tcpStep(&c.tcp, frame, p, reply)
	} else {
		res, tm = otherStep(&c.state, &c.key0, reply)
	}
	if tm != noTimeout {
		t.setExp(c, tm, now)
	}
	return res
}

// otherStep is tcpStep for ICMP queries and the protocols without a state
// machine of their own (UDP and every other protocol); state is the
// connection's state byte.
func otherStep(state *uint8, k *key, reply bool) (updateRes, int) {
	if k.isICMP() {
		// ICMP query: first request(s), then a reply.
		if reply && *state == 0 {
			*state = 1
		}
		if *state == 0 {
			return updValidNew, tmICMPFirst
		}
		return updValid, tmICMPReply
	}
	// First, multiple, bidirectional.
	switch {
	case reply && *state != 2:
		*state = 2
	case *state == 0:
		*state = 1
	}
	if *state == 2 {
		return updValid, tmOtherBidir
	}
	return updValidNew, tmOtherFirst + int(*state)
}

// countBatch is the step in which shards report their count to approx.
const countBatch = 16

// hasRoom tells whether the global limit allows one more connection. Far
// from the limit the approximate count decides; near it, the exact sum of
// the shards' counts. Concurrent commits may overshoot the limit by at most
// their number.
func (t *Tracker) hasRoom() bool {
	max := t.maxConns.Load()
	if t.approx.Load()+nShards*countBatch < max {
		return true
	}
	return int64(t.Count()) < max
}

type commitRes uint8

const (
	commitOK commitRes = iota
	commitRaced
	commitFull
	commitNATFail
)

// refuse counts a commit refused by a limit and tells Config.OnFull, at
// most once a second (a SYN flood refuses millions).
func (t *Tracker) refuse(zone uint16, zoneLimit bool, now int64) {
	t.stats.full.Add(1)
	if t.onFull == nil {
		return
	}
	last := t.lastFull.Load() // now+1 of the last report, 0 for none
	if last != 0 && now+1-last < int64(time.Second) || !t.lastFull.CompareAndSwap(last, now+1) {
		return
	}
	t.onFull(zone, zoneLimit)
}

// commit creates the connection of a new packet with key k, whose hash is
// h0. With NAT, pl is the first candidate reply key if execute planned it
// (pl.rev.v6 != 0xff).
func (t *Tracker) commit(frame []byte, p *pkt, k *key, h0 uint64, a *Args, pl *natPlan, now int64) (*conn, commitRes) {
	// Zones with a limit count their connections (only those: counting
	// means a shared cache line per zone, and Antrea puts everything in
	// one zone). The global limit is checked under the shard lock below.
	zl := int64(t.zoneLimit[k.zone].Load())
	if zl == 0 {
		zl = t.defLimit.Load()
	}
	if zl > 0 {
		if n := t.zoneCount[k.zone].Add(1); int64(n) > zl {
			t.zoneCount[k.zone].Add(-1)
			t.refuse(k.zone, true, now)
			return nil, commitFull
		}
	}
	release := func() {
		if zl > 0 {
			t.zoneCount[k.zone].Add(-1)
		}
	}

	a0 := int(h0 >> (64 - shardBits))
	for try := 0; ; try++ {
		var rev key
		var h1 uint64
		nat := uint8(0)
		if a.NAT != nil && a.NAT.Action != NATExisting {
			if try > 0 || pl.rev.v6 == 0xff {
				t.natFirst(k, a.NAT, pl)
			}
			var ok bool
			nat, ok = t.natSelect(k, a.NAT, pl, now)
			if !ok {
				release()
				t.stats.natFail.Add(1)
				return nil, commitNATFail
			}
			rev = pl.rev
			h1 = rev.hash(t.seed)
		} else {
			rev = k.reverse()
			h1 = h0 // the hash is symmetric
		}
		a1 := int(h1 >> (64 - shardBits))
		t.lockPair(a0, a1)
		if c, _, _ := t.find(&t.shards[a0], k, h0, now); c != nil {
			c.unlock()
			t.unlockPair(a0, a1)
			release()
			return nil, commitRaced
		}
		if c, _, _ := t.find(&t.shards[a1], &rev, h1, now); c != nil {
			c.unlock()
			t.unlockPair(a0, a1)
			if nat != 0 && try < 3 {
				continue // the chosen tuple was just taken: choose again
			}
			release()
			if nat != 0 {
				t.stats.natFail.Add(1)
				return nil, commitNATFail
			}
			return nil, commitRaced
		}
		s0 := &t.shards[a0]
		if !t.hasRoom() {
			t.unlockPair(a0, a1)
			release()
			t.refuse(k.zone, false, now)
			return nil, commitFull
		}
		ref, c := s0.alloc(a0)
		if c == nil {
			t.unlockPair(a0, a1)
			release()
			t.refuse(k.zone, false, now)
			return nil, commitFull
		}
		c.lock()
		c.key0 = *k
		c.key1 = rev
		c.mark.Store(0)
		c.label = Label{}
		c.tcp = [2]tcpPeer{}
		c.state = 0
		c.nat = nat
		c.rshard = uint8(a1)
		c.live = true
		c.zcount = zl > 0
		if k.proto == protoTCP {
			t.tcpNew(c, frame, p, now)
		} else if k.isICMP() {
			t.setExp(c, tmICMPFirst, now)
		} else {
			t.setExp(c, tmOtherFirst, now)
		}
		c.unlock()
		t.publishConn(a0, a1, ref, c, h0, h1, nat)
		t.unlockPair(a0, a1)
		return c, commitOK
	}
}

// publishConn indexes a new connection c (ref, original key hash h0 in
// shard a0, reply key hash h1 in shard a1; a second index entry with
// NAT), links it on its expiry wheel and counts it. The caller holds both
// shards' locks.
func (t *Tracker) publishConn(a0, a1 int, ref uint32, c *conn, h0, h1 uint64, nat uint8) {
	s0 := &t.shards[a0]
	s0.insertEntry(h0, ref, 0)
	if nat != 0 {
		t.shards[a1].insertEntry(h1, ref, 1)
	}
	s0.wheelLink(ref&refMask, c, s0.slotOf(c.exp.Load(), t.tick))
	if n := s0.count.Add(1); n%countBatch == 0 {
		t.approx.Add(countBatch)
	}
}
