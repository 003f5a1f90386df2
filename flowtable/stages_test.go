package flowtable

import (
	"math/rand/v2"
	"testing"
)

// TestStagedLookupMegaflowsExact is the property a megaflow cache relies
// on: whatever key agrees with a looked-up key on the wildcards the lookup
// returned finds the same rule. Rules spread over every stage (reg1 and
// in_port: metadata; eth_dst: L2; nw_src/nw_dst: L3; tp_dst: L4) with
// small value sets, so that packets pass some stages and fail others,
// and rules are removed and added between lookups.
func TestStagedLookupMegaflowsExact(t *testing.T) {
	type dim struct {
		f    *Field
		vals []uint64
	}
	dims := []dim{
		{FieldInPort, []uint64{1, 2}},
		{FieldReg[1], []uint64{0x30, 0x31}},
		{FieldEthDst, []uint64{0xf232d807e2a6, 0xbe2cbfe4ecc5}},
		{FieldIPv4Src, []uint64{0x0ade012f, 0x0ade0130}},
		{FieldIPv4Dst, []uint64{0x0ade012f, 0x0ade0130, 0x0a600001}},
		{FieldTCPDst, []uint64{80, 53}},
	}
	r := rand.New(rand.NewPCG(7, 23))
	var c *classifier
	var rules []*Rule
	var masks [][]bool // the dims of each mask of the round
	addRule := func(seq uint64) {
		f := &Flow{Priority: uint16(r.IntN(4))}
		f.Match.SetUint64(FieldEthType, 0x0800)
		f.Match.SetUint64(FieldIPProto, 6)
		for i, d := range dims {
			if masks[r.IntN(len(masks))][i] {
				f.Match.SetUint64(d.f, d.vals[r.IntN(len(d.vals))])
			}
		}
		rl := testRule(f, seq)
		c.insert(rl)
		rules = append(rules, rl)
	}
	// Each round has a few masks only: with many, the wildcards of one
	// subtable hide those another one got wrong.
	newRound := func() {
		c, rules, masks = newClassifier(), nil, nil
		for range 1 + r.IntN(3) {
			m := make([]bool, len(dims))
			for i := range m {
				m[i] = r.IntN(2) == 0
			}
			masks = append(masks, m)
		}
		for i := range 1 + r.IntN(30) {
			addRule(uint64(i + 1))
		}
	}
	randomKey := func() Key {
		var m Match
		m.SetUint64(FieldEthType, 0x0800)
		m.SetUint64(FieldIPProto, 6)
		for _, d := range dims {
			v := d.vals[r.IntN(len(d.vals))]
			if r.IntN(4) == 0 {
				v = uint64(r.IntN(1 << 16)) // a value no rule has
			}
			m.SetUint64(d.f, v)
		}
		m.SetUint64(FieldTCPSrc, uint64(r.IntN(1<<16)))
		return m.Value
	}
	narrowed := 0
	for i := range 20000 {
		if i%100 == 0 {
			newRound()
		}
		if i%20 == 19 { // churn: drop a rule, add another
			j := r.IntN(len(rules))
			c.remove(rules[j])
			rules = append(rules[:j], rules[j+1:]...)
			addRule(uint64(1000 + i))
		}
		k := randomKey()
		var wc Key
		want := c.lookup(&k, &wc)
		// Another key, equal to k on wc and random elsewhere.
		o := randomKey()
		for w := range KeyWords {
			o.SetWord(w, o.Word(w)&^wc.Word(w)|k.Word(w)&wc.Word(w))
		}
		if got := c.lookup(&o, nil); got != want {
			t.Fatalf("lookup %d: a key equal on the megaflow mask finds %s, the key %s", i, describe(got), describe(want))
		}
		if wc.TpDst() == 0 {
			narrowed++
		}
	}
	// The stages must actually narrow: many lookups leave tp_dst out.
	if narrowed < 2000 {
		t.Errorf("only %d of 20000 megaflow masks leave tp_dst wildcarded", narrowed)
	}
}
