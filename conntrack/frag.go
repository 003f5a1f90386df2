package conntrack

import (
	"encoding/binary"
	"sync"
	"time"
)

// Fragments: virtual reassembly.
//
// The tracker does not buffer fragments. The first fragment of a datagram
// carries the L4 header, so it is tracked (and translated) like a whole
// packet, and the verdict is remembered under (zone, addresses, protocol,
// IP identification). Later fragments, which have no L4 header, look that
// record up and get the same connection: its ct_state, mark, label and
// original tuple, and the same address translation (their L4 checksum lives
// in the first fragment, which NAT already adjusted for the whole datagram).
// A later fragment that arrives before its first fragment is +inv, and so
// are fragments of protocols whose tracking or NAT needs the whole datagram
// (TCP's sequence window, SCTP's CRC over the whole packet). Records live
// fragTimeout and sit in a fixed-size table; a newer datagram may evict an
// older one's record.
const (
	fragSlots   = 1024
	fragTimeout = int64(30 * time.Second)
)

type fragKey struct {
	src, dst [16]byte
	id       uint32
	zone     uint16
	proto    uint8
	v6       uint8
}

type fragEntry struct {
	fk  fragKey
	k   key   // the first fragment's connection key
	st  uint8 // the first fragment's ct_state in this zone
	exp int64
}

type fragTable struct {
	mu sync.Mutex
	e  [fragSlots]fragEntry
}

func fragKeyOf(k *key, id uint32) fragKey {
	return fragKey{src: k.src, dst: k.dst, id: id, zone: k.zone, proto: k.proto, v6: k.v6}
}

func (fk *fragKey) slot() int {
	h := mix(binary.LittleEndian.Uint64(fk.src[:8])^binary.LittleEndian.Uint64(fk.dst[:8])^0x9e3779b97f4a7c15,
		binary.LittleEndian.Uint64(fk.src[8:])^binary.LittleEndian.Uint64(fk.dst[8:])^uint64(fk.id)<<16^uint64(fk.zone)^uint64(fk.proto)<<48)
	return int(h & (fragSlots - 1))
}

func (ft *fragTable) put(fk fragKey, k *key, st uint8, now int64) {
	i := fk.slot()
	ft.mu.Lock()
	ft.e[i] = fragEntry{fk: fk, k: *k, st: st, exp: now + fragTimeout}
	ft.mu.Unlock()
}

func (ft *fragTable) get(fk *fragKey, now int64) (key, uint8, bool) {
	i := fk.slot()
	ft.mu.Lock()
	defer ft.mu.Unlock()
	e := &ft.e[i]
	if e.fk != *fk || e.exp <= now {
		return key{}, 0, false
	}
	return e.k, e.st, true
}

// fragTrackable tells whether fragments of this protocol can be tracked by
// their first fragment.
func fragTrackable(k *key) bool {
	switch k.proto {
	case protoTCP, protoSCTP, protoDCCP, protoUDPLite:
		return false
	}
	return true
}

// firstFragment runs the action on a first fragment and records the verdict.
func (t *Tracker) firstFragment(frame []byte, p *pkt, k *key, st uint8, md *Meta, a *Args, now int64) {
	t.stats.fragments.Add(1)
	if !fragTrackable(k) {
		t.setInvalid(md, a.Zone)
		return
	}
	fk := fragKeyOf(k, p.fragID) // the header as it is before this action's NAT
	for attempt := 0; ; attempt++ {
		if t.execute(frame, p, k, k.hash(t.seed), st, md, a, now) {
			break
		}
		if attempt == 2 {
			t.setInvalid(md, a.Zone)
			return
		}
	}
	if md.State&StateInv == 0 {
		t.frags.put(fk, k, md.State, now)
	}
}

// laterFragment gives a non-first fragment the verdict of its first
// fragment (k holds its addresses and protocol, no ports).
func (t *Tracker) laterFragment(frame []byte, p *pkt, k *key, st uint8, md *Meta, a *Args, now int64) {
	t.stats.fragments.Add(1)
	fk := fragKeyOf(k, p.fragID)
	fkey, fst, ok := t.frags.get(&fk, now)
	if !ok || !fragTrackable(k) {
		t.setInvalid(md, a.Zone)
		return
	}
	natted := st&(StateSNAT|StateDNAT) != 0
	var c *conn
	var d int
	if natted {
		rk := fkey.reverse()
		c, d, _ = t.lookup(&rk, rk.hash(t.seed), now)
		natted = c != nil
	}
	if c == nil {
		c, d, _ = t.lookup(&fkey, fkey.hash(t.seed), now)
	}
	if c == nil {
		if fst&StateNew == 0 {
			t.setInvalid(md, a.Zone) // its connection is gone
			return
		}
		// The first fragment was a new, uncommitted packet.
		*md = Meta{State: StateNew | StateTracked, Zone: a.Zone}
		setOrig(&md.Orig, &fkey)
		return
	}
	reply := d == 1
	if natted {
		reply = !reply
	}
	out := fst&^(StateSNAT|StateDNAT) | st&(StateSNAT|StateDNAT)
	if a.NAT != nil && c.nat != 0 && st&(StateSNAT|StateDNAT) == 0 {
		dir := 0
		if reply {
			dir = 1
		}
		out |= t.natAddrs(frame, p, c, dir)
	}
	t.fillMeta(md, out, c, a)
	c.unlock()
}

// natAddrs is natPacket for a fragment without L4 header: addresses only.
func (t *Tracker) natAddrs(frame []byte, p *pkt, c *conn, dir int) uint8 {
	act := c.nat
	if dir == 1 {
		act = natReverse(act)
	}
	other := c.key(1 - dir)
	alen, srcOff, dstOff := 4, p.l3+12, p.l3+16
	if p.v6 {
		alen, srcOff, dstOff = 16, p.l3+8, p.l3+24
	}
	if act == natSrc {
		rewrite(frame, srcOff, other.dst[:alen], p.v6, p.l3, 0, false, false)
		return StateSNAT
	}
	rewrite(frame, dstOff, other.src[:alen], p.v6, p.l3, 0, false, false)
	return StateDNAT
}
