package flowtable

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
)

// refPrefix is a stored prefix of refLookup.
type refPrefix struct {
	v    prefixValue
	plen uint
}

// refLookup is what a prefix trie must answer, from the prefixes alone:
// the lengths at which a stored prefix equals the value, and the bits a
// walk needs: the longest common prefix D of the value with any stored
// prefix, plus one if a stored prefix goes on past D (its next bit tells
// the value apart).
func refLookup(set map[refPrefix]int, v *prefixValue, nBits uint) (uint, [2]uint64) {
	var plens [2]uint64
	d, past := uint(0), false
	for p, n := range set {
		if n == 0 {
			continue
		}
		c := uint(0)
		for c < p.plen && p.v.bitAt(c) == v.bitAt(c) {
			c++
		}
		if c == p.plen {
			plens[(c-1)/64] |= 1 << ((c - 1) % 64)
		}
		switch {
		case c > d:
			d, past = c, c < p.plen
		case c == d && c < p.plen:
			past = true
		}
	}
	if past && d < nBits {
		d++
	}
	return d, plens
}

func randomPrefixValue(r *rand.Rand, nBits uint, base *prefixValue) prefixValue {
	v := *base
	// Flip a few bits, mostly late ones, so that prefixes share heads.
	for range 1 + r.IntN(3) {
		b := nBits - 1 - min(uint(r.ExpFloat64()*8), nBits-1)
		v[b/32] ^= 1 << (31 - b%32)
	}
	return v
}

func maskPrefix(v prefixValue, plen uint) prefixValue {
	for i := range v {
		lo := uint(i * 32)
		switch {
		case plen <= lo:
			v[i] = 0
		case plen < lo+32:
			v[i] &= ^(^uint32(0) >> (plen - lo))
		}
	}
	return v
}

// TestPrefixTrieLookup: insertions and removals in random order, and
// every lookup equals trieRef's answer, for IPv4- and IPv6-wide fields.
func TestPrefixTrieLookup(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 5))
	for _, nBits := range []uint{32, 64, 128} {
		for round := range 200 {
			var tr prefixTrie
			set := map[refPrefix]int{}
			var live []refPrefix
			base := prefixValue{r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}
			base = maskPrefix(base, nBits)
			for op := range 60 {
				if len(live) > 0 && r.IntN(3) == 0 {
					i := r.IntN(len(live))
					p := live[i]
					live = append(live[:i], live[i+1:]...)
					tr.remove(&p.v, p.plen)
					set[p]--
				} else {
					plen := 1 + uint(r.IntN(int(nBits)))
					if r.IntN(2) == 0 {
						plen = nBits - uint(r.IntN(8)) // mostly long ones, as host routes
					}
					p := refPrefix{maskPrefix(randomPrefixValue(r, nBits, &base), plen), plen}
					tr.insert(&p.v, p.plen)
					set[p]++
					live = append(live, p)
				}
				for range 8 {
					v := randomPrefixValue(r, nBits, &base)
					var plens [2]uint64
					got := tr.lookup(&v, nBits, &plens)
					want, wantPlens := refLookup(set, &v, nBits)
					if got != want || plens != wantPlens {
						t.Fatalf("%d bits, round %d op %d: lookup %08x = %d bits %x, want %d bits %x (%d prefixes)",
							nBits, round, op, v, got, plens, want, wantPlens, len(live))
					}
				}
			}
			// Removing everything leaves no node behind.
			for _, p := range live {
				tr.remove(&p.v, p.plen)
			}
			if tr.root != 0 {
				t.Fatalf("%d bits, round %d: nodes left after removing every prefix", nBits, round)
			}
		}
	}
}

// TestPrefixMegaflowsExact: tables with IPv4 and IPv6 prefix rules of many
// lengths, hard and conjunctive, with churn. Lookups through the tries
// find what lookups without them (no megaflow: no tries, as OVS) find,
// and any key equal to a looked-up one on the megaflow mask finds the
// same rule; a too-wide skip or too-narrow mask fails here. The tries
// must narrow: many masks keep part of nw_dst wildcarded.
func TestPrefixMegaflowsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 29))
	v4 := func(s string) uint64 { return uint64(binary.BigEndian.Uint32(netip.MustParseAddr(s).AsSlice())) }
	nets4 := []uint64{v4("10.10.0.0"), v4("10.10.3.0"), v4("10.96.0.0"), v4("192.168.8.0"), v4("172.16.0.0")}
	nets6 := []netip.Addr{netip.MustParseAddr("fd00:10:10::"), netip.MustParseAddr("fd00:10:96::"), netip.MustParseAddr("2001:db8::")}
	addr4 := func() uint64 {
		return nets4[r.IntN(len(nets4))] | uint64(r.IntN(1<<(4+r.IntN(12))))
	}
	addr6 := func() [16]byte {
		a := nets6[r.IntN(len(nets6))].As16()
		for i := 16 - 1 - r.IntN(3); i < 16; i++ {
			a[i] = byte(r.IntN(256))
		}
		return a
	}
	var tb *table
	var rules []*Rule
	v6 := false
	addRule := func(seq uint64) {
		f := &Flow{Priority: uint16(r.IntN(6))}
		if v6 {
			f.Match.SetUint64(FieldEthType, 0x86dd)
			for _, fd := range []*Field{FieldIPv6Src, FieldIPv6Dst} {
				if r.IntN(3) != 0 {
					plen := 128 - r.IntN(40)
					a := addr6()
					var m [16]byte
					for i := range plen {
						m[i/8] |= 0x80 >> (i % 8)
					}
					for i := range a {
						a[i] &= m[i]
					}
					f.Match.Set(fd, a[:], m[:])
				}
			}
		} else {
			f.Match.SetUint64(FieldEthType, 0x0800)
			for _, fd := range []*Field{FieldIPv4Src, FieldIPv4Dst} {
				if r.IntN(3) != 0 {
					plen := []int{8, 12, 16, 20, 24, 28, 32, 32, 32}[r.IntN(9)]
					m := uint64(^uint32(0) << (32 - plen))
					f.Match.SetMaskedUint64(fd, addr4()&m, m)
				}
			}
		}
		if r.IntN(4) == 0 {
			f.Match.SetUint64(FieldIPProto, 6)
			f.Match.SetUint64(FieldTCPDst, uint64(80+r.IntN(2)))
		}
		if r.IntN(5) == 0 {
			f.Actions = []Action{&Conjunction{ID: uint32(1 + r.IntN(3)), Clause: uint8(1 + r.IntN(2)), NClauses: 2}}
		} else if r.IntN(4) == 0 {
			f.Match.SetUint64(FieldConjID, uint64(1+r.IntN(3)))
		}
		rl := testRule(f, seq)
		tb.cls(rl).insert(rl)
		rules = append(rules, rl)
	}
	newRound := func(round int) {
		v6 = round%3 == 2
		pf := defaultPrefixFields
		if v6 {
			pf = newPrefixFields([]*Field{FieldIPv6Dst, FieldIPv6Src})
		}
		tb, rules = newTable(nil, pf), nil
		for i := range 1 + r.IntN(60) {
			addRule(uint64(i + 1))
		}
	}
	randomKey := func() Key {
		var m Match
		switch {
		case v6:
			m.SetUint64(FieldEthType, 0x86dd)
			a, b := addr6(), addr6()
			m.Set(FieldIPv6Src, a[:], nil)
			m.Set(FieldIPv6Dst, b[:], nil)
		case r.IntN(10) == 0: // ARP: its addresses share nw_src/nw_dst's bytes
			m.SetUint64(FieldEthType, 0x0806)
			m.SetUint64(FieldIPv4Src, addr4())
			m.SetUint64(FieldIPv4Dst, addr4())
		default:
			m.SetUint64(FieldEthType, 0x0800)
			m.SetUint64(FieldIPv4Src, addr4())
			m.SetUint64(FieldIPv4Dst, addr4())
		}
		m.SetUint64(FieldIPProto, 6)
		m.SetUint64(FieldTCPDst, uint64(80+r.IntN(2)))
		m.SetUint64(FieldTCPSrc, uint64(r.IntN(1<<16)))
		return m.Value
	}
	narrowed := 0
	const n = 30000
	for i := range n {
		if i%150 == 0 {
			newRound(i / 150)
		}
		if i%10 == 9 && len(rules) > 0 { // churn
			j := r.IntN(len(rules))
			tb.cls(rules[j]).remove(rules[j])
			rules = append(rules[:j], rules[j+1:]...)
			addRule(uint64(1000 + i))
		}
		k := randomKey()
		var wc Key
		got := tb.lookup(&k, &wc)
		if want := tb.lookup(&k, nil); got != want {
			t.Fatalf("lookup %d: with tries %s, without %s", i, describe(got), describe(want))
		}
		o := randomKey()
		if r.IntN(2) == 0 {
			o = k
			for j := range 8 { // flip address bits the mask leaves out
				o[offNwSrc+j] ^= byte(r.IntN(256)) &^ wc[offNwSrc+j]
			}
			for j := range 32 {
				o[offIPv6Src+j] ^= byte(r.IntN(256)) &^ wc[offIPv6Src+j]
			}
		}
		for w := range KeyWords {
			o.SetWord(w, o.Word(w)&^wc.Word(w)|k.Word(w)&wc.Word(w))
		}
		if other := tb.lookup(&o, nil); other != got {
			t.Fatalf("lookup %d: a key equal on the megaflow mask finds %s, the key %s", i, describe(other), describe(got))
		}
		if f := FieldIPv4Dst; !v6 && k.EthType() == 0x0800 && wc.u32(f.Off) != 0 && wc.u32(f.Off) != ^uint32(0) {
			narrowed++
		}
	}
	if narrowed < n/10 {
		t.Errorf("only %d of %d megaflow masks keep part of nw_dst wildcarded", narrowed, n)
	}
	t.Logf("%d of %d masks with part of nw_dst", narrowed, n)
}

// TestStagedTableTakesPrefixFields: a bundle staged before its table's
// prefix fields change is committed with the new fields on both sides.
func TestStagedTableTakesPrefixFields(t *testing.T) {
	p := NewPipeline()
	var ops []FlowOp
	for i, plen := range []int{32, 24, 16} {
		f := &Flow{Table: 3, Priority: uint16(10 + i), Actions: []Action{out(uint32(i + 1))}}
		f.Match.SetUint64(FieldEthType, 0x0800)
		m := uint64(^uint32(0) << (32 - plen))
		f.Match.SetMaskedUint64(FieldIPv4Dst, 0x0a0a0005&m, m)
		ops = append(ops, FlowOp{Kind: OpAdd, Flow: f})
	}
	staged, st := stageOps(p, ops)
	if err := p.SetPrefixFields(3, []*Field{FieldIPv4Src}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ApplyStaged(staged, st); err != nil {
		t.Fatal(err)
	}
	p.catchUp()
	for side := range p.sides {
		tb := p.sides[side].tables[3]
		if tb == nil || tb.hard.n != 3 {
			t.Fatalf("side %d: table 3 not committed", side)
		}
		if got := tb.hard.prefix.fields; len(got) != 1 || got[0] != FieldIPv4Src {
			t.Errorf("side %d: table 3 tracks %v, want ip_src", side, got)
		}
		if !tb.hard.tries[0].empty() {
			t.Errorf("side %d: the ip_src trie holds nw_dst prefixes", side)
		}
	}
}
