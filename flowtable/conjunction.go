package flowtable

import "slices"

// Conjunctive match (ovs-fields(7) "Conjunctive Match Fields") at scale.
//
// A policy table of an Antrea node holds tens of thousands of clause flows:
// one per peer address, per applied-to pod and per port, each at its
// rule's priority, and flows with the same match merged into one flow with
// many conjunction() actions. A packet matches few of them in the selective
// dimensions (its source address, its destination pod) and many in the
// coarse one (tcp,tp_dst=80 is a clause of most rules). Collecting every
// matched clause and sorting them costs tens of microseconds per lookup.
//
// Instead, a lookup takes the matching bucket of each soft subtable, sets
// the largest one aside, and builds the candidate conjunctions from the
// others only: a conjunction can only be complete if all its clauses
// matched, so one outside the coarse bucket (usually all but the port
// clause) is missing only when it cannot match anyway. Each candidate then
// asks the coarse bucket for its remaining clauses: a binary search by
// priority, then by conjunction id in that flow's sorted clause list.

// conjClause is one conjunction(id,k/n) action packed for sorting by id:
// id<<16 | n<<8 | k.
type conjClause uint64

func (c conjClause) id() uint32    { return uint32(c >> 16) }
func (c conjClause) n() uint8      { return uint8(c >> 8) }
func (c conjClause) clause() uint8 { return uint8(c) }
func packClause(a *Conjunction) conjClause {
	return conjClause(a.ID)<<16 | conjClause(a.NClauses)<<8 | conjClause(a.Clause)
}

// conjClauses returns the clauses of a conjunctive flow sorted by id.
func conjClauses(acts []Action) []conjClause {
	var cs []conjClause
	for _, a := range acts {
		if c, ok := a.(*Conjunction); ok {
			cs = append(cs, packClause(c))
		}
	}
	slices.Sort(cs)
	return cs
}

// repeatsID reports whether sorted clauses name one conjunction twice (a
// flow that is two clauses of the same conjunction).
func repeatsID(cs []conjClause) bool {
	for i := 1; i < len(cs); i++ {
		if cs[i].id() == cs[i-1].id() {
			return true
		}
	}
	return false
}

// conjCandidate is a conjunction some clause of which matched.
type conjCandidate struct {
	priority uint16
	n        uint8
	id       uint32
	seen     uint64 // bit k-1: clause k matched
}

func (c *conjCandidate) complete() bool {
	all := uint64(1)<<c.n - 1
	if c.n == 64 {
		all = ^uint64(0)
	}
	return c.seen == all
}

// maxSoftBuckets bounds the matching buckets a lookup keeps on the stack
// (one per soft subtable, so per distinct clause mask of the table).
const maxSoftBuckets = 16

// maxConjCandidates bounds the candidates kept on the stack; a lookup with
// more goes on with a heap slice.
const maxConjCandidates = 64

// lookup finds the best rule of the table for k with conjunctive match
// semantics, ORing into wc the masks it depended on.
func (t *table) lookup(k *Key, wc *Key) *Rule {
	var tc trieCtx
	return t.lookupTries(k, wc, &tc)
}

// lookupTries is lookup with a trie context of the caller's (a walk keeps
// one: set up per lookup, its trie results are written before they are
// read).
func (t *table) lookupTries(k *Key, wc *Key, tc *trieCtx) *Rule {
	tc.k, tc.hard, tc.soft, tc.done = k, t.hard, t.soft, 0
	hard := t.hard.lookupTries(k, wc, tc)
	if t.soft.n == 0 {
		return hard
	}
	hardPri := -1
	if hard != nil {
		hardPri = int(hard.Priority)
	}
	var bstack [maxSoftBuckets]softMatch
	buckets := bstack[:0]
	for _, st := range t.soft.subtables {
		if st.maxPriority <= hardPri {
			break
		}
		b := st.probe(k, wc, tc)
		for i, r := range b {
			if st.equal(k, r) {
				buckets = append(buckets, softMatch{st, b[i:]})
				break
			}
		}
	}
	if len(buckets) == 0 {
		return hard
	}
	// The coarse bucket: the one with the most clauses. A table in which
	// a flow repeats a conjunction id has none (such a conjunction could be
	// complete inside one bucket).
	coarse := -1
	if t.soft.repeated == 0 {
		most := 0
		for i, b := range buckets {
			w := len(b.rules)
			if w == 1 {
				w = len(b.rules[0].conj)
			}
			if w > most {
				coarse, most = i, w
			}
		}
	}
	var cstack [maxConjCandidates]conjCandidate
	cands := cstack[:0]
	for i, b := range buckets {
		if i == coarse {
			continue
		}
		for _, r := range b.rules {
			if int(r.Priority) <= hardPri {
				break
			}
			if !b.st.equal(k, r) {
				continue // another value with the same hash
			}
			for _, c := range r.conj {
				cands = addClause(cands, r.Priority, c)
			}
		}
	}
	if coarse >= 0 {
		for i := range cands {
			buckets[coarse].markClauses(k, &cands[i])
		}
	}
	// Highest priority first; within a priority, the lowest id.
	sortCandidates(cands)
	for i := range cands {
		c := &cands[i]
		if !c.complete() {
			continue
		}
		saved := k.ConjID()
		k.SetConjID(c.id)
		r := t.hard.lookupTries(k, wc, tc)
		k.SetConjID(saved)
		if r != nil {
			return r
		}
	}
	return hard
}

// addClause records that clause c of a conjunction at priority matched.
func addClause(cands []conjCandidate, priority uint16, c conjClause) []conjCandidate {
	for i := range cands {
		x := &cands[i]
		if x.id == c.id() && x.priority == priority && x.n == c.n() {
			x.seen |= 1 << (c.clause() - 1)
			return cands
		}
	}
	return append(cands, conjCandidate{priority: priority, n: c.n(), id: c.id(), seen: 1 << (c.clause() - 1)})
}

// softMatch is the bucket of a soft subtable that holds the rules matching
// a key (from the first one; sorted by priority, descending).
type softMatch struct {
	st    *subtable
	rules []*Rule
}

// markClauses adds to c the clauses the bucket has for it.
func (m *softMatch) markClauses(k *Key, c *conjCandidate) {
	b := m.rules
	lo, hi := 0, len(b)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b[m].Priority > c.priority {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for ; lo < len(b) && b[lo].Priority == c.priority; lo++ {
		if !m.st.equal(k, b[lo]) {
			continue
		}
		cs := b[lo].conj
		j, _ := slices.BinarySearchFunc(cs, c.id, func(x conjClause, id uint32) int {
			switch {
			case x.id() < id:
				return -1
			case x.id() > id:
				return 1
			}
			return 0
		})
		for ; j < len(cs) && cs[j].id() == c.id; j++ {
			if cs[j].n() == c.n {
				c.seen |= 1 << (cs[j].clause() - 1)
			}
		}
	}
}

// sortCandidates orders candidates by priority (descending), then id: an
// insertion sort, since there are few and sort.Slice would allocate.
func sortCandidates(cs []conjCandidate) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && less(&cs[j], &cs[j-1]); j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

func less(a, b *conjCandidate) bool {
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	return a.id < b.id
}
