package conntrack

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Tuple is one direction of a connection, as dumped.
type Tuple struct {
	Src, Dst         netip.Addr
	Proto            uint8
	SrcPort, DstPort uint16 // TCP/UDP/SCTP/DCCP/UDP-Lite
	ICMPID           uint16 // ICMP/ICMPv6 queries
	ICMPType         uint8
	ICMPCode         uint8
}

// Entry is a connection as dumped (OVS' struct ct_dpif_entry).
type Entry struct {
	Orig, Reply Tuple
	Zone        uint16
	Mark        uint32
	Label       Label
	// TCPStateOrig/TCPStateReply are the per-end TCP states (TCP only).
	TCPStateOrig, TCPStateReply uint8
	// TCPWscaleOrig/TCPWscaleReply are each end's window scale with the
	// flags in its high bits (negotiated, unknown: be liberal).
	TCPWscaleOrig, TCPWscaleReply uint8
	// Timeout is the time left before expiry, in seconds.
	Timeout uint32
}

func tupleOf(k *key) Tuple {
	t := Tuple{
		Src:   addrOf(k.src, k.v6 != 0),
		Dst:   addrOf(k.dst, k.v6 != 0),
		Proto: k.proto,
	}
	if k.isICMP() {
		t.ICMPID = k.sport
		t.ICMPType = k.styp
	} else {
		t.SrcPort, t.DstPort = k.sport, k.dport
	}
	return t
}

func (t *Tuple) less(o *Tuple) bool {
	if t.Proto != o.Proto {
		return t.Proto < o.Proto
	}
	if c := t.Src.Compare(o.Src); c != 0 {
		return c < 0
	}
	if c := t.Dst.Compare(o.Dst); c != 0 {
		return c < 0
	}
	if t.SrcPort != o.SrcPort {
		return t.SrcPort < o.SrcPort
	}
	if t.DstPort != o.DstPort {
		return t.DstPort < o.DstPort
	}
	if t.ICMPID != o.ICMPID {
		return t.ICMPID < o.ICMPID
	}
	return t.ICMPType < o.ICMPType
}

func protoName(p uint8) string {
	switch p {
	case protoICMP:
		return "icmp"
	case protoICMPv6:
		return "icmpv6"
	case protoTCP:
		return "tcp"
	case protoUDP:
		return "udp"
	case protoSCTP:
		return "sctp"
	case protoUDPLite:
		return "udplite"
	case protoDCCP:
		return "dccp"
	case protoIGMP:
		return "igmp"
	}
	return strconv.Itoa(int(p))
}

func (t *Tuple) format(b *strings.Builder) {
	b.WriteString("src=")
	b.WriteString(t.Src.String())
	b.WriteString(",dst=")
	b.WriteString(t.Dst.String())
	if t.Proto == protoICMP || t.Proto == protoICMPv6 {
		fmt.Fprintf(b, ",id=%d,type=%d,code=%d", t.ICMPID, t.ICMPType, t.ICMPCode)
	} else {
		fmt.Fprintf(b, ",sport=%d,dport=%d", t.SrcPort, t.DstPort)
	}
}

// TCPStateName is the state `ovs-appctl dpctl/dump-conntrack` prints: the
// further advanced end, with FIN_WAIT_2 shown as TIME_WAIT and SYN_RECV as
// ESTABLISHED (OVS coalesces them to match the kernel's view).
func (e *Entry) TCPStateName() string {
	s := max(e.TCPStateOrig, e.TCPStateReply)
	switch s {
	case tcpsFinWait2:
		s = tcpsTimeWait
	case tcpsSynRecv:
		s = tcpsEstablished
	}
	if int(s) < len(tcpStateNames) {
		return tcpStateNames[s]
	}
	return "[" + strconv.Itoa(int(s)) + "]"
}

// String formats the entry like `ovs-appctl dpctl/dump-conntrack`, e.g.
// tcp,orig=(src=10.10.0.5,dst=10.96.0.10,sport=56670,dport=80),reply=(src=10.10.0.7,dst=10.10.0.5,sport=8080,dport=56670),zone=65520,mark=32,protoinfo=(state=ESTABLISHED)
func (e Entry) String() string { return e.Format(false, false) }

// Format formats the entry like `ovs-appctl dpctl/dump-conntrack [-m]
// [-s]` for OVS's userspace datapath (lib/ct-dpif.c ct_dpif_format_entry):
// verbose adds id= and status= (0 there too) and each end's TCP state,
// window scale and flags; stats adds timeout= (seconds left).
func (e Entry) Format(verbose, stats bool) string {
	var b strings.Builder
	b.WriteString(protoName(e.Orig.Proto))
	b.WriteString(",orig=(")
	e.Orig.format(&b)
	b.WriteString("),reply=(")
	e.Reply.format(&b)
	b.WriteString(")")
	if verbose {
		b.WriteString(",id=0")
	}
	if e.Zone != 0 {
		fmt.Fprintf(&b, ",zone=%d", e.Zone)
	}
	if verbose {
		b.WriteString(",status=0")
	}
	if stats {
		fmt.Fprintf(&b, ",timeout=%d", e.Timeout)
	}
	if e.Mark != 0 {
		fmt.Fprintf(&b, ",mark=%d", e.Mark)
	}
	if !e.Label.IsZero() {
		b.WriteString(",labels=0x")
		if e.Label.Hi != 0 {
			fmt.Fprintf(&b, "%x%016x", e.Label.Hi, e.Label.Lo)
		} else {
			fmt.Fprintf(&b, "%x", e.Label.Lo)
		}
	}
	if e.Orig.Proto == protoTCP {
		if verbose {
			e.formatTCPVerbose(&b)
		} else {
			b.WriteString(",protoinfo=(state=")
			b.WriteString(e.TCPStateName())
			b.WriteString(")")
		}
	}
	return b.String()
}

// DumpFilter selects connections to dump; nil Zone means all zones.
type DumpFilter struct {
	Zone *uint16
}

// Dump returns the unexpired connections (all zones, or one), sorted by zone
// and original tuple so the output is stable.
func (t *Tracker) Dump(f DumpFilter) []Entry {
	now := t.clock()
	var out []Entry
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		tab := *s.tab.Load()
		for j := range tab {
			e := tab[j].Load()
			if e == 0 || uint32(e)&entryDirBit != 0 {
				continue
			}
			c := t.connAt(uint32(e) &^ entryDirBit)
			if f.Zone != nil && c.key0.zone != *f.Zone {
				continue
			}
			exp := c.exp.Load()
			if exp <= now {
				continue
			}
			c.lock()
			en := Entry{
				Orig:  tupleOf(&c.key0),
				Reply: tupleOf(&c.key1),
				Zone:  c.key0.zone,
				Mark:  c.mark.Load(),
				Label: c.label,
			}
			if c.key0.proto == protoTCP {
				en.TCPStateOrig, en.TCPStateReply = c.tcp[0].state, c.tcp[1].state
				en.TCPWscaleOrig, en.TCPWscaleReply = c.tcp[0].wscale, c.tcp[1].wscale
			}
			c.unlock()
			en.Timeout = uint32((exp - now) / 1e9)
			out = append(out, en)
		}
		s.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Zone != out[j].Zone {
			return out[i].Zone < out[j].Zone
		}
		return out[i].Orig.less(&out[j].Orig)
	})
	return out
}

// Count returns the number of connections held (including expired ones the
// sweeper has not freed yet), which is what the global limit counts.
func (t *Tracker) Count() int {
	n := int64(0)
	for i := range t.shards {
		n += t.shards[i].count.Load()
	}
	return int(n)
}

// ZoneCount returns the number of connections held in zone. It walks the
// table (a management operation, not for the packet path).
func (t *Tracker) ZoneCount(zone uint16) int {
	return t.scan(func(c *conn) bool { return c.key0.zone == zone })
}

// ZoneLimitCount returns how many connections count against zone's limit:
// those committed while a limit applied to the zone (as in OVS, setting a
// limit does not count the connections that already exist).
func (t *Tracker) ZoneLimitCount(zone uint16) int { return int(t.zoneCount[zone].Load()) }

// scan counts the live connections matching f.
func (t *Tracker) scan(f func(*conn) bool) int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		tab := *s.tab.Load()
		for j := range tab {
			e := tab[j].Load()
			if e != 0 && uint32(e)&entryDirBit == 0 && f(t.connAt(uint32(e)&^entryDirBit)) {
				n++
			}
		}
		s.mu.Unlock()
	}
	return n
}

// SetGlobalLimit sets the maximum number of connections (n <= 0:
// DefaultMaxConns). Existing connections are kept.
func (t *Tracker) SetGlobalLimit(n int) {
	if n <= 0 {
		n = DefaultMaxConns
	}
	t.maxConns.Store(int64(n))
}

// GlobalLimit returns the maximum number of connections.
func (t *Tracker) GlobalLimit() int { return int(t.maxConns.Load()) }

// SetZoneLimit limits the connections of one zone (0: no limit of its own,
// the default zone limit applies).
func (t *Tracker) SetZoneLimit(zone uint16, n uint32) {
	if n > 1<<31-1 {
		n = 1<<31 - 1
	}
	t.zoneLimit[zone].Store(int32(n))
}

// SetDefaultZoneLimit sets the limit of zones without one of their own
// (0: unlimited), like `ovs-appctl dpctl/ct-set-limits default=N`.
func (t *Tracker) SetDefaultZoneLimit(n uint32) { t.defLimit.Store(int64(n)) }

// ZoneLimit returns the limit in force for zone (0: none).
func (t *Tracker) ZoneLimit(zone uint16) uint32 {
	if l := t.zoneLimit[zone].Load(); l > 0 {
		return uint32(l)
	}
	return uint32(t.defLimit.Load())
}

// Flush removes every connection.
func (t *Tracker) Flush() int { return t.flush(func(*conn) bool { return true }) }

// FlushZone removes the connections of one zone.
func (t *Tracker) FlushZone(zone uint16) int {
	return t.flush(func(c *conn) bool { return c.key0.zone == zone })
}

func (t *Tracker) flush(match func(*conn) bool) int {
	n := 0
	var vs []victim
	for i := range t.shards {
		vs = vs[:0]
		s := &t.shards[i]
		s.mu.Lock()
		tab := *s.tab.Load()
		for j := range tab {
			e := tab[j].Load()
			if e == 0 || uint32(e)&entryDirBit != 0 {
				continue
			}
			ref := uint32(e) &^ entryDirBit
			c := t.connAt(ref)
			if match(c) {
				vs = append(vs, victim{ref, c.gen})
			}
		}
		s.mu.Unlock()
		for _, v := range vs {
			if c, a, b, ok := t.lockConn(v.ref, v.gen); ok {
				t.freeConn(v.ref, c)
				t.unlockPair(a, b)
				n++
			}
		}
	}
	return n
}

// ErrNotFound is returned by FlushTuple when no connection has the tuple.
var ErrNotFound = errors.New("conntrack: connection not found")

// FlushTuple removes the connection of zone having tup as its original or
// reply tuple (like `ovs-appctl dpctl/flush-conntrack zone=N 'ct_nw_src=...'`).
// For ICMP, ICMPID and ICMPType (the type of tup's direction) identify it.
func (t *Tracker) FlushTuple(zone uint16, tup Tuple) error {
	k, err := keyOfTuple(zone, &tup)
	if err != nil {
		return fmt.Errorf("flush conntrack tuple: %w", err)
	}
	now := t.clock()
	h := k.hash(t.seed)
	s := &t.shards[h>>(64-shardBits)]
	s.mu.Lock()
	c, _, ref := t.find(s, &k, h, now)
	var v victim
	if c != nil {
		c.unlock()
		v = victim{ref, c.gen}
	}
	s.mu.Unlock()
	if c == nil {
		return fmt.Errorf("flush conntrack zone %d %s %v:%d -> %v:%d: %w", zone, protoName(tup.Proto), tup.Src, tup.SrcPort, tup.Dst, tup.DstPort, ErrNotFound)
	}
	if c, a, b, ok := t.lockConn(v.ref, v.gen); ok {
		t.freeConn(v.ref, c)
		t.unlockPair(a, b)
	}
	return nil
}

// Stats are counters of packets the tracker could not give a connection.
type Stats struct {
	Invalid   uint64 // packets marked +inv
	Full      uint64 // commits refused by a limit
	NATFail   uint64 // commits refused because no NAT tuple was free
	Fragments uint64 // IP fragments (marked +inv, see the package doc)
}

// Stats returns the counters.
func (t *Tracker) Stats() Stats {
	return Stats{
		Invalid:   t.stats.invalid.Load(),
		Full:      t.stats.full.Load(),
		NATFail:   t.stats.natFail.Load(),
		Fragments: t.stats.fragments.Load(),
	}
}

// ZoneCounts returns the number of live connections in each zone that has
// any, in one walk of the table (a management operation, for metrics).
func (t *Tracker) ZoneCounts() map[uint16]int {
	counts := map[uint16]int{}
	t.scan(func(c *conn) bool {
		counts[c.key0.zone]++
		return false
	})
	return counts
}

func tcpStateString(s uint8) string {
	if int(s) < len(tcpStateNames) {
		return tcpStateNames[s]
	}
	return "[" + strconv.Itoa(int(s)) + "]"
}

// tcpWscaleFlags names an end's flags as ct-dpif does.
func tcpWscaleFlags(ws uint8) string {
	var fs []string
	if ws&wsFlag != 0 {
		fs = append(fs, "WINDOW_SCALE")
	}
	if ws&wsUnknown != 0 {
		fs = append(fs, "BE_LIBERAL")
	}
	if len(fs) == 0 {
		return "0"
	}
	return strings.Join(fs, "|")
}

func (e *Entry) formatTCPVerbose(b *strings.Builder) {
	b.WriteString(",protoinfo=(state_orig=")
	b.WriteString(tcpStateString(e.TCPStateOrig))
	b.WriteString(",state_reply=")
	b.WriteString(tcpStateString(e.TCPStateReply))
	wo, wr := e.TCPWscaleOrig&wsMask, e.TCPWscaleReply&wsMask
	if wo != 0 || wr != 0 {
		fmt.Fprintf(b, ",wscale_orig=%d,wscale_reply=%d", wo, wr)
	}
	b.WriteString(",flags_orig=")
	b.WriteString(tcpWscaleFlags(e.TCPWscaleOrig))
	b.WriteString(",flags_reply=")
	b.WriteString(tcpWscaleFlags(e.TCPWscaleReply))
	b.WriteString(")")
}

// DefaultZoneLimit returns the limit of zones without one of their own
// (0: unlimited).
func (t *Tracker) DefaultZoneLimit() uint32 { return uint32(t.defLimit.Load()) }

// LimitedZones returns the zones with a limit of their own, ascending
// (`ovs-appctl dpctl/ct-get-limits` without zones lists them).
func (t *Tracker) LimitedZones() []uint16 {
	var zs []uint16
	for z := range t.zoneLimit {
		if t.zoneLimit[z].Load() > 0 {
			zs = append(zs, uint16(z))
		}
	}
	return zs
}
