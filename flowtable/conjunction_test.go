package flowtable

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// bruteConjLookup is the specification of table.lookup (ovs-fields(7)
// conjunctive match, OVS classifier_lookup__): the best hard rule; then,
// level by level from the highest priority above it, every conjunction
// whose clauses all matched at that level, lowest id first, looked up
// again with conj_id set; the first that finds a rule wins.
func bruteConjLookup(hard, soft []*Rule, k *Key) *Rule {
	best := bruteLookup(hard, k)
	minPri := -1
	if best != nil {
		minPri = int(best.Priority)
	}
	type cid struct {
		id uint32
		n  uint8
	}
	levels := map[uint16]map[cid]uint64{}
	for _, r := range soft {
		if int(r.Priority) <= minPri || !ruleMatches(r, k) {
			continue
		}
		if levels[r.Priority] == nil {
			levels[r.Priority] = map[cid]uint64{}
		}
		for _, a := range r.Actions {
			c := a.(*Conjunction)
			levels[r.Priority][cid{c.ID, c.NClauses}] |= 1 << (c.Clause - 1)
		}
	}
	var pris []int
	for p := range levels {
		pris = append(pris, int(p))
	}
	sort.Sort(sort.Reverse(sort.IntSlice(pris)))
	for _, p := range pris {
		lv := levels[uint16(p)]
		var ids []cid
		for c, seen := range lv {
			if seen == 1<<c.n-1 {
				ids = append(ids, c)
			}
		}
		for len(ids) > 0 {
			m := 0
			for i := range ids {
				if ids[i].id < ids[m].id {
					m = i
				}
			}
			kk := *k
			kk.SetConjID(ids[m].id)
			if r := bruteLookup(hard, &kk); r != nil {
				return r
			}
			ids = append(ids[:m], ids[m+1:]...)
		}
	}
	return best
}

// TestConjunctionMatchesBruteForce fills tables with random clause flows
// (some carrying several clauses, some two clauses of one conjunction) and
// conj_id flows, and compares every lookup with bruteConjLookup, also
// after removing half of the flows.
func TestConjunctionMatchesBruteForce(t *testing.T) {
	for _, tc := range []struct {
		clauses, conjs, priorities int
		repeat                     bool
	}{
		{20, 4, 2, false},
		{300, 40, 3, false},
		{3000, 300, 20, false},
		{300, 40, 3, true},
	} {
		t.Run(fmt.Sprintf("clauses=%d/conjs=%d/priorities=%d/repeat=%v", tc.clauses, tc.conjs, tc.priorities, tc.repeat), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.clauses), uint64(tc.conjs)))
			tb := newTable(nil, defaultPrefixFields)
			var hard, soft []*Rule
			seq := uint64(0)
			// Each conjunction has 2 or 3 clauses and its own priority.
			nClauses := make([]uint8, tc.conjs+1)
			prio := make([]uint16, tc.conjs+1)
			for id := 1; id <= tc.conjs; id++ {
				nClauses[id] = uint8(2 + r.IntN(2))
				prio[id] = uint16(100 + r.IntN(tc.priorities))
				f := &Flow{Priority: prio[id] - uint16(r.IntN(2))}
				f.Match.SetUint64(FieldConjID, uint64(id))
				if r.IntN(4) == 0 {
					ipv4(&f.Match)
					f.Match.SetUint64(FieldInPort, pick(r, testPorts))
				}
				seq++
				rl := testRule(f, seq)
				tb.hard.insert(rl)
				hard = append(hard, rl)
			}
			for i := 0; i < 30; i++ {
				f := &Flow{Priority: uint16(r.IntN(100 + tc.priorities))}
				testTemplates[r.IntN(len(testTemplates))](&f.Match, r)
				if tb.hard.find(&f.Match, f.Priority) != nil {
					continue
				}
				seq++
				rl := testRule(f, seq)
				tb.hard.insert(rl)
				hard = append(hard, rl)
			}
			byKey := map[string]*Rule{}
			for i := 0; i < tc.clauses; i++ {
				id := 1 + r.IntN(tc.conjs)
				f := &Flow{Priority: prio[id]}
				testTemplates[1+r.IntN(len(testTemplates)-1)](&f.Match, r)
				c := &Conjunction{ID: uint32(id), NClauses: nClauses[id], Clause: uint8(1 + r.IntN(int(nClauses[id])))}
				key := fmt.Sprint(f.Priority, f.Match)
				if old := byKey[key]; old != nil {
					// Merge, as a controller does: one flow, many clauses.
					tb.soft.remove(old)
					if !tc.repeat {
						for _, a := range old.Actions {
							if a.(*Conjunction).ID == c.ID {
								c = nil
								break
							}
						}
					}
					if c != nil {
						old.Actions = append(old.Actions, c)
						old.conj = nil // insert computes a rule's clauses once
					}
					tb.soft.insert(old)
					continue
				}
				f.Actions = []Action{c}
				seq++
				rl := testRule(f, seq)
				tb.soft.insert(rl)
				soft = append(soft, rl)
				byKey[key] = rl
			}
			check := func() {
				t.Helper()
				for i := 0; i < 3000; i++ {
					k := randomTestKey(r)
					want := bruteConjLookup(hard, soft, &k)
					var wc Key
					if got := tb.lookup(&k, &wc); got != want {
						t.Fatalf("key %d: lookup found %s, brute force %s", i, describe(got), describe(want))
					}
					if k.ConjID() != 0 {
						t.Fatalf("lookup left conj_id %d in the key", k.ConjID())
					}
				}
			}
			check()
			if tc.repeat && tb.soft.repeated == 0 {
				t.Fatalf("no flow repeats a conjunction id")
			}
			for n := len(soft) / 2; n > 0; n-- {
				i := r.IntN(len(soft))
				tb.soft.remove(soft[i])
				soft = append(soft[:i], soft[i+1:]...)
			}
			check()
		})
	}
}
