package flowtable

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// Small value domains, so that random rules overlap a lot and random keys
// match several rules of several subtables at once.
var (
	testPorts   = []uint64{1, 2, 3, 4}
	testIPs     = []uint64{0x0a000001, 0x0a000101, 0x0a010001, 0x0b000001, 0x0a0001ff}
	testTpPorts = []uint64{53, 80, 443}
	testRegs    = []uint64{0, 1, 2, 0x10001, 0x10002, 0x30}
	testCtState = []uint64{CtStateTrk | CtStateNew, CtStateTrk | CtStateEst, CtStateTrk | CtStateInv, 0}
)

func pick(r *rand.Rand, vs []uint64) uint64 { return vs[r.IntN(len(vs))] }

// testTemplates are the masks of the correctness test: exact, prefix and
// partial register masks, ct_state bit masks and the catch-all.
var testTemplates = []func(m *Match, r *rand.Rand){
	func(m *Match, r *rand.Rand) {}, // catch-all
	func(m *Match, r *rand.Rand) { m.SetUint64(FieldInPort, pick(r, testPorts)) },
	func(m *Match, r *rand.Rand) { ipv4(m) },
	func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetUint64(FieldInPort, pick(r, testPorts))
	},
	func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetMaskedUint64(FieldIPv4Dst, pick(r, testIPs), prefix32(8))
	},
	func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetMaskedUint64(FieldIPv4Dst, pick(r, testIPs), prefix32(16))
	},
	func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetMaskedUint64(FieldIPv4Dst, pick(r, testIPs), prefix32(24))
	},
	func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetUint64(FieldIPv4Dst, pick(r, testIPs))
	},
	func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetUint64(FieldIPProto, IPProtoTCP)
		m.SetUint64(FieldTCPDst, pick(r, testTpPorts))
	},
	func(m *Match, r *rand.Rand) { m.SetMaskedUint64(FieldReg[0], pick(r, testRegs), 0xffff) },
	func(m *Match, r *rand.Rand) { m.SetMaskedUint64(FieldReg[0], pick(r, testRegs), 0x10000) },
	func(m *Match, r *rand.Rand) {
		m.SetMaskedUint64(FieldReg[0], 0x10000, 0x10000)
		m.SetUint64(FieldReg[1], pick(r, testRegs))
	},
	func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetMaskedUint64(FieldCtState, pick(r, testCtState), CtStateTrk|CtStateNew)
	},
	func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetMaskedUint64(FieldCtState, pick(r, testCtState), CtStateTrk|CtStateInv)
		m.SetMaskedUint64(FieldReg[0], pick(r, testRegs), 0xffff)
	},
	func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetMaskedUint64(FieldCtState, pick(r, testCtState), CtStateEst|CtStateNew)
	},
	func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetUint64(FieldIPv4Src, pick(r, testIPs))
		m.SetUint64(FieldInPort, pick(r, testPorts))
	},
}

// randomTestKey returns a key drawn from the small domains.
func randomTestKey(r *rand.Rand) Key {
	var k Key
	k.SetInPort(uint32(pick(r, testPorts)))
	k.SetReg(0, uint32(pick(r, testRegs)))
	k.SetReg(1, uint32(pick(r, testRegs)))
	if r.IntN(8) == 0 {
		k.SetEthType(EthTypeARP)
	} else {
		k.SetEthType(EthTypeIPv4)
		k.SetNwProto([]uint8{IPProtoTCP, IPProtoUDP}[r.IntN(2)])
		FieldIPv4Src.SetUint64(&k, pick(r, testIPs))
		FieldIPv4Dst.SetUint64(&k, pick(r, testIPs))
		FieldTCPDst.SetUint64(&k, pick(r, testTpPorts))
		k.SetCtState(uint32(pick(r, testCtState)))
	}
	return k
}

// bruteLookup is the specification of classifier.lookup: among the rules
// whose match the key satisfies, the highest priority; among equal
// priorities, the earliest inserted.
func bruteLookup(rules []*Rule, k *Key) *Rule {
	var best *Rule
	for _, r := range rules {
		if !ruleMatches(r, k) {
			continue
		}
		if best == nil || r.Priority > best.Priority || r.Priority == best.Priority && r.seq < best.seq {
			best = r
		}
	}
	return best
}

func describe(r *Rule) string {
	if r == nil {
		return "no rule"
	}
	return fmt.Sprintf("rule seq=%d priority=%d", r.seq, r.Priority)
}

// checkLookups compares the classifier with bruteLookup on random keys,
// and checks the wildcards lookup reports: every key that agrees with the
// looked-up key on the wildcard bits must get the same rule (that is what
// makes the mask usable as a megaflow).
func checkLookups(t *testing.T, c *classifier, live []*Rule, r *rand.Rand, nKeys int) {
	t.Helper()
	if c.n != len(live) {
		t.Fatalf("classifier counts %d rules, %d are installed", c.n, len(live))
	}
	for i := 0; i < nKeys; i++ {
		k := randomTestKey(r)
		want := bruteLookup(live, &k)
		if got := c.lookup(&k, nil); got != want {
			t.Fatalf("key %d: lookup found %s, brute force %s", i, describe(got), describe(want))
		}
		var wc Key
		if got := c.lookup(&k, &wc); got != want {
			t.Fatalf("key %d: lookup with wildcards found %s, brute force %s", i, describe(got), describe(want))
		}
		for j := 0; j < 4; j++ {
			other := randomTestKey(r)
			var k2 Key
			for w := 0; w < KeyWords; w++ {
				k2.SetWord(w, k.Word(w)&wc.Word(w)|other.Word(w)&^wc.Word(w))
			}
			if got := bruteLookup(live, &k2); got != want {
				t.Fatalf("key %d: a key equal under the lookup's wildcards gets %s instead of %s", i, describe(got), describe(want))
			}
		}
	}
}

// TestClassifierMatchesBruteForce inserts random overlapping rules with few
// distinct priorities (so that ties across subtables are common), then
// removes and re-inserts random ones, comparing every lookup with a linear
// scan.
func TestClassifierMatchesBruteForce(t *testing.T) {
	for _, tc := range []struct {
		rules, priorities int
	}{
		{10, 3},
		{200, 4},
		{2000, 16},
		{2000, 0x10000},
	} {
		t.Run(fmt.Sprintf("rules=%d/priorities=%d", tc.rules, tc.priorities), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.rules), uint64(tc.priorities)))
			c := newClassifier()
			var live []*Rule
			seq := uint64(0)
			add := func() {
				f := &Flow{Priority: uint16(r.IntN(tc.priorities))}
				testTemplates[r.IntN(len(testTemplates))](&f.Match, r)
				seq++
				rl := testRule(f, seq)
				c.insert(rl)
				live = append(live, rl)
			}
			for i := 0; i < tc.rules; i++ {
				add()
			}
			checkLookups(t, c, live, r, 2000)

			// Remove a random half, one by one.
			for n := len(live) / 2; n > 0; n-- {
				i := r.IntN(len(live))
				c.remove(live[i])
				live = append(live[:i], live[i+1:]...)
			}
			checkLookups(t, c, live, r, 2000)

			// Insert again (new rules come after the survivors).
			for i := 0; i < tc.rules/4+1; i++ {
				add()
			}
			checkLookups(t, c, live, r, 2000)

			// Remove everything: no subtable may be left behind.
			for _, rl := range live {
				c.remove(rl)
			}
			live = nil
			if len(c.subtables) != 0 || len(c.byMask) != 0 || c.n != 0 {
				t.Fatalf("empty classifier keeps %d subtables (%d by mask), n=%d", len(c.subtables), len(c.byMask), c.n)
			}
			checkLookups(t, c, live, r, 10)
		})
	}
}

// TestClassifierDuplicateMatch: the same match and priority inserted twice
// (the pipeline replaces instead, but the classifier must stay ordered):
// the first inserted wins until it is removed.
func TestClassifierDuplicateMatch(t *testing.T) {
	c := newClassifier()
	mk := func(seq uint64, prio uint16) *Rule {
		f := &Flow{Priority: prio}
		f.Match.SetUint64(FieldInPort, 7)
		return testRule(f, seq)
	}
	a, b, hi := mk(1, 10), mk(2, 10), mk(3, 20)
	var k Key
	k.SetInPort(7)
	steps := []struct {
		op   string
		rule *Rule
		want *Rule
	}{
		{"insert", a, a},
		{"insert", b, a},
		{"insert", hi, hi},
		{"remove", hi, a},
		{"remove", a, b},
		{"remove", b, nil},
	}
	for i, s := range steps {
		if s.op == "insert" {
			c.insert(s.rule)
		} else {
			c.remove(s.rule)
		}
		if got := c.lookup(&k, nil); got != s.want {
			t.Fatalf("step %d (%s %s): lookup found %s, want %s", i, s.op, describe(s.rule), describe(got), describe(s.want))
		}
	}
}

// TestBenchTemplatesDistinct: the benchmark's 50 templates are 50 masks.
func TestBenchTemplatesDistinct(t *testing.T) {
	if len(benchTemplates) < 50 {
		t.Fatalf("%d templates, the benchmark needs 50", len(benchTemplates))
	}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[Key]string{}
	for _, tm := range benchTemplates[:50] {
		var m Match
		tm.set(&m, r)
		if o, ok := seen[m.Mask]; ok {
			t.Errorf("templates %q and %q have the same mask", o, tm.name)
		}
		seen[m.Mask] = tm.name
		if err := m.CheckPrereqs(); err != nil {
			t.Errorf("template %q: %v", tm.name, err)
		}
	}
}

// TestOrMaskSetsFieldBits: the pipeline's fast orMask (used for the
// megaflow wildcards next to the classifier's) sets exactly the bits of
// the field's slot, as ORing Field.slotMask does, for every field.
func TestOrMaskSetsFieldBits(t *testing.T) {
	for _, f := range Fields {
		if !f.Resolved() {
			continue
		}
		var x xlate
		x.res.Segments = 1
		// Start from a mask that already has other bits set.
		for i := range x.res.Masks[0] {
			x.res.Masks[0][i] = byte(i * 7)
		}
		want := x.res.Masks[0]
		sm := f.slotMask()
		want.Or(&sm)
		x.orMask(f)
		if x.res.Masks[0] != want {
			t.Errorf("%s: orMask differs from ORing the slot mask", f.Name)
		}
	}
}

// TestSubtableHashSpreads checks that the subtable hash spreads values
// that differ only in the last bytes of a word (IPv4 destinations share
// their word with the source, and a /24 of pods differs in one byte): the
// average probe of the hash index stays short. A hash whose low bits miss
// those bytes made every lookup of such a subtable walk thousands of
// slots.
func TestSubtableHashSpreads(t *testing.T) {
	for _, f := range []*Field{FieldIPv4Dst, FieldIPv4Src, FieldConjID, FieldInPort, FieldReg[3]} {
		c := newClassifier()
		for i := 0; i < 20000; i++ {
			fl := &Flow{Priority: 200}
			ipv4(&fl.Match)
			fl.Match.SetUint64(f, uint64(0x0a400000+i))
			c.insert(testRule(fl, 0))
		}
		st := c.subtables[0]
		mask := uint64(len(st.buckets.slots) - 1)
		total, n := 0, 0
		for i, s := range st.buckets.slots {
			if s.rules != nil {
				total += int((uint64(i)-st.buckets.home(s.hash))&mask) + 1
				n++
			}
		}
		if avg := float64(total) / float64(n); avg > 2 {
			t.Errorf("%s: average probe %.1f slots over %d values, want ≤ 2", f.Name, avg, n)
		}
	}
}

// testRule makes the rule of f with insertion number seq.
func testRule(f *Flow, seq uint64) *Rule {
	r := newRule(f)
	r.seq = seq
	return r
}

func ruleMatches(r *Rule, k *Key) bool { return r.match.matches(k) }

// TestApplyReusesEmptiedSubtables: a batch that deletes every flow and
// adds the same ones again (ovn-controller on reconnect) finds the
// subtables it emptied, and no batch leaves an empty subtable behind,
// whether it commits or is undone.
func TestApplyReusesEmptiedSubtables(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var flows []Flow
	type id struct {
		table    uint8
		priority uint16
		match    Match
	}
	seen := map[id]bool{} // no flow replaces another
	for i := 0; i < 300; i++ {
		f := Flow{Table: uint8(i % 2), Priority: uint16(r.IntN(5) * 100)}
		testTemplates[r.IntN(len(testTemplates))](&f.Match, r)
		if k := (id{f.Table, f.Priority, f.Match}); !seen[k] {
			seen[k] = true
			flows = append(flows, f)
		}
	}
	adds := func() []FlowOp {
		var ops []FlowOp
		for i := range flows {
			f := flows[i]
			ops = append(ops, FlowOp{Kind: OpAdd, Flow: &f})
		}
		return ops
	}
	all := AllFlows()
	deleteAll := FlowOp{Kind: OpDelete, Filter: &all}
	p := NewPipeline()
	apply := func(ops []FlowOp) []*Rule {
		t.Helper()
		res, err := p.Apply(ops)
		if err != nil {
			t.Fatal(err)
		}
		var live []*Rule
		for _, x := range res {
			if x.Added != nil {
				live = append(live, x.Added)
			}
		}
		return live
	}
	// noEmpty checks, on both sides of the pipeline (leftright.go: the
	// batch written on one, replayed on the other), that every subtable
	// of table id is in use and that lookups give the rules of live in
	// that table.
	noEmpty := func(id uint8, live []*Rule) {
		t.Helper()
		p.catchUp()
		for i := range p.sides {
			c := p.sides[i].tables[id].hard
			for _, st := range c.byMask {
				if st.n == 0 {
					t.Fatalf("side %d table %d keeps an empty subtable", i, id)
				}
			}
			if len(c.byMask) != len(c.subtables) || c.dormant != 0 {
				t.Fatalf("side %d table %d: %d subtables by mask, %d in use, %d dormant", i, id, len(c.byMask), len(c.subtables), c.dormant)
			}
			var in []*Rule
			for _, x := range live {
				if x.Table == id {
					in = append(in, x)
				}
			}
			checkLookups(t, c, in, r, 500)
		}
	}
	live := apply(adds())
	p.catchUp()
	var before [2]map[*subtable]bool
	for i := range p.sides {
		before[i] = map[*subtable]bool{}
		for _, st := range p.sides[i].tables[0].hard.byMask {
			before[i][st] = true
		}
	}
	live = apply(append([]FlowOp{deleteAll}, adds()...))
	p.catchUp()
	for i := range p.sides {
		for _, st := range p.sides[i].tables[0].hard.byMask {
			if !before[i][st] {
				t.Errorf("side %d: delete-all and re-add built a new subtable for a mask it had", i)
			}
		}
	}
	noEmpty(0, live)
	noEmpty(1, live)

	// Undone: a bad group-mod after the delete-all and the adds.
	if _, err := p.Apply(append(append([]FlowOp{deleteAll}, adds()[:50]...), FlowOp{Kind: OpGroupModify, Group: &GroupEntry{ID: 9, Type: GroupAll}})); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("Apply: %v, want ErrUnknownGroup", err)
	}
	noEmpty(0, live)
	noEmpty(1, live)

	apply([]FlowOp{deleteAll})
	noEmpty(0, nil)
	noEmpty(1, nil)
}
