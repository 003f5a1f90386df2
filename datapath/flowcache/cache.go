// Package flowcache is the fast path of govs: a megaflow cache in front of
// the OpenFlow pipeline, like the dpcls of Open vSwitch's dpif-netdev.
//
// A miss runs the pipeline once (an "upcall") with a recording of what
// each recirculation segment consulted and did; each cacheable segment
// becomes an entry keyed by its megaflow mask and masked start key. A hit
// replays the entry's datapath operations (field writes, outputs, ct()
// with recirculation, which looks the packet up again with its new ct
// state) without touching the OpenFlow tables.
//
// A Cache belongs to one packet-loop goroutine (no locks on the hot path).
// Any change to the pipeline bumps its generation, which empties the cache
// before the next packet can use a stale entry.
package flowcache

import (
	"slices"
	"sync"
	"time"

	"github.com/govs-project/govs/flowtable"
)

// DefaultMaxEntries bounds a cache.
const DefaultMaxEntries = 65536

// Stats are a cache's counters.
type Stats struct {
	Hits       uint64 // segments served from the cache
	Misses     uint64 // segments that needed the pipeline
	Upcalls    uint64 // pipeline runs
	Installed  uint64 // entries added
	Evictions  uint64 // entries dropped for space or age
	Flushes    uint64 // whole-cache invalidations (pipeline changes)
	Uncachable uint64 // segments the pipeline said not to cache
	Entries    uint64 // entries at the last publication
}

// Entry is one megaflow.
type Entry struct {
	st    *subtable
	value flowtable.Key // masked start key
	ops   []flowtable.DPOp
	rules []*flowtable.Rule
	// lookups are the table lookups the segment made: each hit counts
	// them again in the table statistics (at FlushStats).
	lookups []flowtable.TableLookup
	used    int64 // clock of the last hit
	// Counters not yet added to the rules (see FlushStats).
	packets, bytes uint64
	dirty          bool
	// For dumps: the packets and bytes flushed so far, and the batch
	// time (the loop's clock, SetBatchTime) of the last hit; 0: never.
	nPackets, nBytes uint64
	usedAt           int64

	// NORMAL's decisions (flowtable.Segment.UsesMACs): valid while the
	// MAC table has generation macGen and until expires (Unix ns, 0:
	// no bound); learns are refreshed at most every learnRefresh.
	usesMACs  bool
	macGen    uint64
	expires   int64
	learns    []flowtable.MACLearn
	lastLearn int64
}

// learnRefresh is how often a cached NORMAL flow learns its source MAC
// again: often enough that no MAC ages out (300 s) while its traffic hits
// the cache, seldom enough to cost nothing per packet.
const learnRefresh = int64(time.Second)

// maxRecirc is the largest recirc_id: RecircID of table 255.
const maxRecirc = 256

// subtableKey identifies a subtable: its segment's recirc_id and mask.
type subtableKey struct {
	recirc uint32
	mask   flowtable.Key
}

type subtable struct {
	mask  flowtable.Key
	words []uint8
	index map[uint64][]*Entry
	n     int
}

// Cache is a megaflow cache for one pipeline.
type Cache struct {
	p   *flowtable.Pipeline
	ct  flowtable.Conntrack
	gen uint64
	// subtables holds every subtable; bySeg[r] those of the segments
	// that start with recirc_id r (the mask always has recirc_id, so a
	// lookup only visits the subtables its segment can match, like
	// dpif-netdev's per-recirc_id classification).
	subtables  []*subtable
	bySeg      [maxRecirc + 1][]*subtable
	byMask     map[subtableKey]*subtable
	n          int
	MaxEntries int
	clock      int64
	stats      Stats
	rec        flowtable.Recording
	savedCt    flowtable.Key
	req        flowtable.CTRequest
	pubMu      sync.Mutex
	pub        Stats // the counters as of the last batch, for Stats
	dirty      []*Entry
	lastExpire int64
	// batchTime is the loop's time of the current batch (SetBatchTime).
	batchTime int64
	// now is the pipeline's clock, read at most once per batch (when a
	// NORMAL entry needs it); nowOK says it was read in this batch.
	now   int64
	nowOK bool

	// TraceHits makes Process record in Hits the entries the packet went
	// through (the kernel fast path's input); Hits is nil after a miss.
	TraceHits bool
	Hits      []*Entry
	// counters are this cache's (its packet loop's) share of the table
	// statistics, for upcalls and hits alike.
	counters *flowtable.TableCounters
}

// Ops are the entry's datapath operations.
func (e *Entry) Ops() []flowtable.DPOp { return e.ops }

// Rules are the flows the entry's segment went through.
func (e *Entry) Rules() []*flowtable.Rule { return e.rules }

// Mask is the entry's megaflow mask.
func (e *Entry) Mask() *flowtable.Key { return &e.st.mask }

// UsesMACs says the entry holds NORMAL decisions (valid while the MAC
// table does not change).
func (e *Entry) UsesMACs() bool { return e.usesMACs }

// New returns an empty cache in front of p.
func New(p *flowtable.Pipeline) *Cache {
	c := &Cache{p: p, byMask: map[subtableKey]*subtable{}, MaxEntries: DefaultMaxEntries, counters: p.NewTableCounters()}
	c.rec.Counters = c.counters
	return c
}

// Stats returns the counters as of the end of the last batch (safe from
// any goroutine).
func (c *Cache) Stats() Stats {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	return c.pub
}

func (c *Cache) publish() {
	c.pubMu.Lock()
	c.pub = c.stats
	c.pub.Entries = uint64(c.n)
	c.pubMu.Unlock()
}

// Len returns the number of entries.
func (c *Cache) Len() int { return c.n }

// Close pushes the entries' counters and gives the cache's table counters
// back to the pipeline; the owning loop has stopped.
func (c *Cache) Close() {
	c.FlushStats()
	c.p.ReleaseTableCounters(c.counters)
}

// FlushStats adds the packets the cache forwarded since the last call to
// the counters of the flows they went through: once per megaflow rather
// than once per packet. The packet loop calls it after every batch.
func (c *Cache) FlushStats() {
	c.nowOK = false // the next batch reads the clock again
	for _, e := range c.dirty {
		for _, r := range e.rules {
			r.Stats.Packets.Add(e.packets)
			r.Stats.Bytes.Add(e.bytes)
		}
		c.counters.AddLookups(e.lookups, e.packets)
		e.nPackets += e.packets
		e.nBytes += e.bytes
		e.usedAt = c.batchTime
		e.packets, e.bytes, e.dirty = 0, 0, false
	}
	c.dirty = c.dirty[:0]
	c.publish()
}

// SetBatchTime tells the cache the time of the batch the loop is about
// to process (any monotonic clock in ns): the "used" of the entries it
// hits, for dumps. The loop reads its clock once per batch anyway.
func (c *Cache) SetBatchTime(ns int64) { c.batchTime = ns }

// DumpEntry is one megaflow as dpctl/dump-flows shows it.
type DumpEntry struct {
	Mask  flowtable.Key // the megaflow's mask
	Value flowtable.Key // the masked key
	Ops   []flowtable.DPOp
	// Packets and Bytes went through the entry (installs count from the
	// first hit: the upcalled packet is the pipeline's).
	Packets, Bytes uint64
	// Used is the batch time of the last hit (SetBatchTime), 0: never.
	Used int64
}

// Dump copies every entry. Like every other method it runs on the
// cache's own goroutine or while that goroutine is held between batches.
func (c *Cache) Dump() []DumpEntry {
	out := make([]DumpEntry, 0, c.n)
	for _, st := range c.subtables {
		for _, es := range st.index {
			for _, e := range es {
				out = append(out, DumpEntry{Mask: st.mask, Value: e.value, Ops: slices.Clone(e.ops),
					Packets: e.nPackets + e.packets, Bytes: e.nBytes + e.bytes, Used: e.usedAt})
			}
		}
	}
	return out
}

// Flush drops every entry.
func (c *Cache) Flush() {
	c.FlushStats()
	c.dropSubtables()
	c.stats.Flushes++
	c.publish()
}

func hashMasked(st *subtable, k *flowtable.Key) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, w := range st.words {
		h ^= k.Word(int(w)) & st.mask.Word(int(w))
		h *= 0xff51afd7ed558ccd
		h ^= h >> 32
	}
	return h
}

func (st *subtable) matches(k *flowtable.Key, e *Entry) bool {
	for _, w := range st.words {
		if k.Word(int(w))&st.mask.Word(int(w)) != e.value.Word(int(w)) {
			return false
		}
	}
	return true
}

// dropSubtables empties the cache.
func (c *Cache) dropSubtables() {
	for i := range c.bySeg {
		c.bySeg[i] = c.bySeg[i][:0]
	}
	c.subtables = c.subtables[:0]
	clear(c.byMask)
	c.n = 0
}

// lookup finds an entry matching k.
func (c *Cache) lookup(k *flowtable.Key) *Entry {
	for _, st := range c.bySeg[min(k.RecircID(), maxRecirc)] {
		for _, e := range st.index[hashMasked(st, k)] {
			if st.matches(k, e) {
				return e
			}
		}
	}
	return nil
}

func (c *Cache) install(s *flowtable.Segment) {
	if c.n >= c.MaxEntries {
		c.FlushStats()
		// Full: start over (simple and bounded; a cache rebuilds quickly).
		c.stats.Evictions += uint64(c.n)
		c.dropSubtables()
	}
	recirc := min(s.Start.RecircID(), maxRecirc)
	sk := subtableKey{recirc: recirc, mask: s.Mask}
	st := c.byMask[sk]
	if st == nil {
		st = &subtable{mask: s.Mask, index: map[uint64][]*Entry{}}
		for i := 0; i < flowtable.KeyWords; i++ {
			if s.Mask.Word(i) != 0 {
				st.words = append(st.words, uint8(i))
			}
		}
		c.byMask[sk] = st
		c.subtables = append(c.subtables, st)
		c.bySeg[recirc] = append(c.bySeg[recirc], st)
	}
	h := hashMasked(st, &s.Start)
	for _, e := range st.index[h] {
		if st.matches(&s.Start, e) {
			if e.usesMACs {
				c.fill(e, s) // a stale NORMAL decision, recorded again
			}
			return // else another packet of the batch installed it already
		}
	}
	e := &Entry{st: st, value: s.Start}
	c.fill(e, s)
	st.index[h] = append(st.index[h], e)
	st.n++
	c.n++
	c.stats.Installed++
}

// fill sets e's operations from the recorded segment s.
func (c *Cache) fill(e *Entry, s *flowtable.Segment) {
	e.ops = append(e.ops[:0], s.Ops...)
	for i := range e.ops {
		e.ops[i].Compile()
	}
	e.rules = append(e.rules[:0], s.Rules...)
	e.lookups = append(e.lookups[:0], s.Lookups...)
	e.used = c.clock
	e.usesMACs, e.macGen, e.expires = s.UsesMACs, s.MACGen, 0
	if !s.Expires.IsZero() {
		e.expires = s.Expires.UnixNano()
	}
	e.learns = append(e.learns[:0], s.Learns...)
	e.lastLearn = 0
	if s.UsesMACs {
		e.lastLearn = c.clockNow() // the run itself just learned
	}
}

// clockNow is the pipeline's time in Unix ns, read once per batch.
func (c *Cache) clockNow() int64 {
	if !c.nowOK {
		c.now, c.nowOK = c.p.Now().UnixNano(), true
	}
	return c.now
}

// normalValid reports whether e's NORMAL decisions still hold, and
// learns its source MACs again when due.
func (c *Cache) normalValid(e *Entry) bool {
	macs := c.p.MACs
	if macs == nil || macs.Gen() != e.macGen {
		return false
	}
	now := c.clockNow()
	if e.expires != 0 && now >= e.expires {
		return false
	}
	if now-e.lastLearn >= learnRefresh {
		t := time.Unix(0, now)
		for _, l := range e.learns {
			macs.Learn(l.VLAN, l.MAC, l.Port, t)
		}
		e.lastLearn = now
		// A relearned MAC that had been forgotten changed the table.
		return macs.Gen() == e.macGen
	}
	return true
}

// Process sends pkt (extracted, in_port set) through the cache, running
// the pipeline for the segments it misses, and delivers outputs to sink
// exactly as Pipeline.Run would.
func (c *Cache) Process(pkt *flowtable.Packet, sink flowtable.Sink) {
	c.clock++
	if gen := c.p.Generation.Load(); gen != c.gen {
		if c.n > 0 {
			c.Flush()
		}
		c.gen = gen
	}
	k := &pkt.Key
	c.Hits = c.Hits[:0]
	for hops := 0; hops < flowtable.MaxSegments+1; hops++ {
		e := c.lookup(k)
		if e == nil || (e.usesMACs && !c.normalValid(e)) {
			c.Hits = c.Hits[:0]
			c.upcall(pkt, sink)
			return
		}
		if c.TraceHits {
			c.Hits = append(c.Hits, e)
		}
		c.stats.Hits++
		e.used = c.clock
		e.packets++
		e.bytes += uint64(len(pkt.Frame))
		if !e.dirty {
			e.dirty = true
			c.dirty = append(c.dirty, e)
		}
		recirc := false
		for i := range e.ops {
			op := &e.ops[i]
			op.ApplyWrites(k)
			switch op.Kind {
			case flowtable.DPOutput:
				port := op.Port
				if op.InPort {
					port = k.InPort()
				}
				pkt.Commit()
				if sink != nil {
					sink.Output(port, pkt)
				}
			case flowtable.DPCT:
				pkt.Commit()
				c.req = op.CT // a field, not a local: the interface call would make a local escape
				if op.Table == flowtable.TableNone {
					c.savedCt = *k
					c.conntrack(pkt, &c.req)
					restoreCt(k, &c.savedCt)
					continue
				}
				c.conntrack(pkt, &c.req)
				k.SetRecircID(flowtable.RecircID(op.Table))
				recirc = true
			case flowtable.DPPushVLAN:
				pkt.PushVLAN(op.VLANType)
			case flowtable.DPPopVLAN:
				pkt.PopVLAN()
			}
		}
		if !recirc {
			return
		}
	}
	c.Hits = c.Hits[:0]
	c.upcall(pkt, sink)
}

func (c *Cache) conntrack(pkt *flowtable.Packet, req *flowtable.CTRequest) {
	if ct := c.p.Conntrack; ct != nil {
		ct.Execute(pkt, req)
		return
	}
	k := &pkt.Key
	k.SetCtState(flowtable.CtStateTrk | flowtable.CtStateInv)
	k.SetCtZone(req.Zone)
}

// restoreCt puts back the ct fields of saved (ct() without table= leaves
// the packet's ct state as it was).
func restoreCt(k, saved *flowtable.Key) {
	for i := 0; i < flowtable.KeyWords; i++ {
		m := flowtable.CtFieldsMask.Word(i)
		if m != 0 {
			k.SetWord(i, k.Word(i)&^m|saved.Word(i)&m)
		}
	}
}

// upcall runs the pipeline for the current segment and installs what it
// recorded.
func (c *Cache) upcall(pkt *flowtable.Packet, sink flowtable.Sink) {
	c.stats.Misses++
	c.stats.Upcalls++
	table := uint8(0)
	if id := pkt.Key.RecircID(); id != 0 {
		table = uint8(id - 1)
	}
	c.p.RunRecorded(pkt, table, sink, &c.rec)
	if c.p.Generation.Load() != c.gen {
		return // the run itself changed the pipeline (learn): cache nothing
	}
	for i := range c.rec.Segments {
		s := &c.rec.Segments[i]
		if !s.Cacheable {
			c.stats.Uncachable++
			continue
		}
		c.install(s)
	}
}

// ExpireEvery and ExpireIdle pace MaybeExpire: every ExpireEvery packets,
// entries not hit in the last ExpireIdle packets go.
const (
	ExpireEvery = 1 << 16
	ExpireIdle  = 1 << 18
)

// MaybeExpire drops idle entries now and then (the loop calls it after
// each batch).
func (c *Cache) MaybeExpire() {
	if c.clock-c.lastExpire >= ExpireEvery {
		c.lastExpire = c.clock
		c.Expire(ExpireIdle)
	}
}

// Expire drops entries not hit in the last idle packets of this cache.
func (c *Cache) Expire(idle int64) {
	c.FlushStats()
	for _, st := range c.subtables {
		for h, es := range st.index {
			keep := es[:0]
			for _, e := range es {
				if c.clock-e.used <= idle {
					keep = append(keep, e)
				} else {
					st.n--
					c.n--
					c.stats.Evictions++
				}
			}
			if len(keep) == 0 {
				delete(st.index, h)
			} else {
				st.index[h] = keep
			}
		}
	}
}
