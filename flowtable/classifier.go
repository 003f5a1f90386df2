package flowtable

import (
	"slices"
	"sort"
)

// classifier is a tuple-space-search classifier (OVS lib/classifier.c in
// spirit): rules are grouped by mask into subtables, each a hash table over
// the masked key; subtables are visited in order of their highest priority,
// and the search stops as soon as no remaining subtable can beat the best
// rule found.
type classifier struct {
	subtables []*subtable // sorted by maxPriority, descending
	byMask    map[Key]*subtable
	n         int
	// last is the subtable subtableFor found last: flows added together
	// mostly share a mask, and comparing one is cheaper than hashing it.
	last *subtable
	// spare is where new buckets are carved from. Most buckets hold one
	// rule: taking them from a shared chunk costs one allocation per
	// bucketChunk flows instead of one per flow.
	spare []*Rule
	// soft: the classifier of a table's conjunctive flows; repeated counts
	// its flows that are two clauses of one conjunction.
	soft     bool
	repeated int
	// flowRem counts the rules with send_flow_rem: a delete of every
	// flow that needs no list of them takes a table without one whole
	// (stage.go).
	flowRem int
	// batch, if set, is the pipeline's batch of changes (Apply): while it
	// runs, a subtable that empties stays in byMask, out of subtables
	// (lookups never see it), so that a batch that deletes flows and adds
	// them again (ovn-controller's delete-all and re-add on reconnect)
	// finds the subtable, its mask words and its hash index as they were.
	// The batch drops the subtables still empty at its end (sweep).
	batch   *changeBatch
	dormant int // empty subtables kept in byMask
	// prefix are the fields the table tracks; tries their prefixes in
	// this classifier's rules (prefix.go).
	prefix *prefixFields
	tries  [maxPrefixFields]prefixTrie
}

// changeBatch is a batch of classifier changes in progress.
type changeBatch struct {
	on bool
	// dormant are the classifiers that kept empty subtables.
	dormant []*classifier
}

// sweep drops the subtables that are still empty at the end of a batch.
func (b *changeBatch) sweep() {
	for _, c := range b.dormant {
		for mask, st := range c.byMask {
			if st.n == 0 {
				delete(c.byMask, mask)
				if c.last == st {
					c.last = nil
				}
			}
		}
		c.dormant = 0
	}
	clear(b.dormant)
	b.dormant = b.dormant[:0]
	b.on = false
}

const bucketChunk = 64

type subtable struct {
	mask        Key
	words       []uint8  // indexes of the nonzero words of mask
	maskw       []uint64 // those words of mask
	buckets     hindex
	stages      []stageIndex   // staged lookup (stages.go)
	last        []stageWord    // the words of the last stage
	stageIDs    [nStages]uint8 // the stage (0 metadata .. 3 L4) of stages[i], then of last
	prefixes    subtablePrefixes
	maxPriority int
	nMax        int // rules at maxPriority: the maximum is searched again only when the last goes
	n           int
}

func newClassifier() *classifier {
	return &classifier{byMask: map[Key]*subtable{}, prefix: defaultPrefixFields}
}

func newSubtable(mask *Key, pf *prefixFields) *subtable {
	st := &subtable{mask: *mask, maxPriority: -1}
	for i := 0; i < KeyWords; i++ {
		if mask.Word(i) != 0 {
			st.words = append(st.words, uint8(i))
			st.maskw = append(st.maskw, mask.Word(i))
		}
	}
	st.buildStages()
	st.setPrefixes(pf)
	return st
}

// The subtable hash (stages.go) mixes the masked words of k. It is
// multiplicative: the top bits depend on every input bit, and the hash
// index uses them.

const hashStart = uint64(0x9e3779b97f4a7c15)

func hashWord(h, x uint64) uint64 { return (h ^ x) * 0xff51afd7ed558ccd }

// equal reports whether k matches r (a rule of st).
func (st *subtable) equal(k *Key, r *Rule) bool {
	vals := r.match.values()
	for i, w := range st.words {
		if k.Word(int(w))&st.maskw[i] != vals[i] {
			return false
		}
	}
	return true
}

func (c *classifier) insert(r *Rule) {
	mask := r.match.mask()
	c.insertMasked(r, &mask, c.subtableFor(&mask))
}

// insertReplacing inserts r in place of the rule of c with r's match and
// priority, if there is one, and returns that rule (else nil). It is
// findSame and insert with one mask and subtable look-up for a new flow,
// the common case of a bundle's adds (Stage).
func (c *classifier) insertReplacing(r *Rule) *Rule {
	mask := r.match.mask()
	st := c.subtableFor(&mask)
	if st != nil && st.n > 0 {
		vals := r.match.values()
		for _, x := range st.buckets.get(st.hashValues(vals)) {
			if x.Priority == r.Priority && slices.Equal(x.match.values(), vals) {
				c.remove(x)
				c.insert(r)
				return x
			}
		}
	}
	c.insertMasked(r, &mask, st)
	return nil
}

// insertMasked inserts r, whose mask is mask, into st, the subtable of
// that mask (nil if c has none yet).
func (c *classifier) insertMasked(r *Rule, mask *Key, st *subtable) {
	if c.soft {
		if r.conj == nil {
			// Set once, before any walk can see the rule: the other
			// side's insert (leftright.go) and an undo find it set.
			r.conj = conjClauses(r.Actions)
		}
		if repeatsID(r.conj) {
			c.repeated++
		}
	}
	switch {
	case st == nil:
		st = newSubtable(mask, c.prefix)
		c.byMask[*mask] = st
		c.subtables = append(c.subtables, st)
	case st.n == 0: // emptied earlier in the batch: back in use
		c.dormant--
		c.subtables = append(c.subtables, st)
	}
	h := st.hashValues(r.match.values())
	b := st.buckets.get(h)
	// Keep each bucket sorted by priority (descending), then insertion.
	i := sort.Search(len(b), func(i int) bool { return int(b[i].Priority) < int(r.Priority) })
	switch {
	case len(b) == 0:
		b = c.newBucket()
	case len(b) == cap(b):
		nb := make([]*Rule, len(b), 2*len(b))
		copy(nb, b)
		clear(b) // b may be a piece of a shared chunk: leave no reference behind
		b = nb
	}
	b = append(b, nil)
	copy(b[i+1:], b[i:])
	b[i] = r
	st.buckets.set(h, b)
	st.addStages(r.match.values())
	if st.prefixes.at != 0 {
		c.addPrefixes(st, r.match.values())
	}
	st.n++
	c.n++
	if r.Flags&FlagSendFlowRem != 0 {
		c.flowRem++
	}
	switch {
	case int(r.Priority) > st.maxPriority:
		st.maxPriority, st.nMax = int(r.Priority), 1
		c.resort(st)
	case int(r.Priority) == st.maxPriority:
		st.nMax++
	}
}

// newBucket returns an empty bucket with room for one rule.
func (c *classifier) newBucket() []*Rule {
	if len(c.spare) == 0 {
		c.spare = make([]*Rule, bucketChunk)
	}
	b := c.spare[:0:1]
	c.spare = c.spare[1:]
	return b
}

// subtableFor returns the subtable of mask, or nil. It updates last, so
// only changes (under the pipeline's write lock) use it, never lookups.
func (c *classifier) subtableFor(mask *Key) *subtable {
	if c.last != nil && c.last.mask == *mask {
		return c.last
	}
	st := c.byMask[*mask]
	if st != nil {
		c.last = st
	}
	return st
}

// clear removes every rule. In a batch the subtables stay, empty, for
// the rules the batch adds next; otherwise they go.
func (c *classifier) clear() {
	if c.n == 0 {
		return
	}
	for _, st := range c.subtables {
		st.buckets.each(func(b []*Rule) bool {
			clear(b) // bucket arrays outlive the rules: keep none alive
			return true
		})
	}
	c.n, c.repeated, c.flowRem = 0, 0, 0
	for j := range c.tries {
		c.tries[j].reset()
	}
	if c.batch == nil || !c.batch.on {
		*c = classifier{byMask: map[Key]*subtable{}, soft: c.soft, batch: c.batch, prefix: c.prefix}
		return
	}
	for _, st := range c.subtables {
		st.buckets.reset()
		for i := range st.stages {
			st.stages[i].hashes.reset()
		}
		st.n, st.maxPriority, st.nMax = 0, -1, 0
	}
	if c.dormant == 0 {
		c.batch.dormant = append(c.batch.dormant, c)
	}
	c.dormant += len(c.subtables)
	clear(c.subtables)
	c.subtables = c.subtables[:0]
}

func (c *classifier) remove(r *Rule) {
	mask := r.match.mask()
	st := c.subtableFor(&mask)
	if st == nil {
		return
	}
	if c.soft && repeatsID(r.conj) {
		c.repeated--
	}
	h := st.hashValues(r.match.values())
	b := st.buckets.get(h)
	for i, x := range b {
		if x == r {
			copy(b[i:], b[i+1:])
			b[len(b)-1] = nil // the array outlives the bucket: do not keep r alive
			b = b[:len(b)-1]
			break
		}
	}
	st.buckets.set(h, b)
	st.removeStages(r.match.values())
	if st.prefixes.at != 0 {
		c.removePrefixes(st, r.match.values())
	}
	st.n--
	c.n--
	if r.Flags&FlagSendFlowRem != 0 {
		c.flowRem--
	}
	if st.n == 0 {
		if c.batch != nil && c.batch.on {
			st.maxPriority, st.nMax = -1, 0
			if c.dormant++; c.dormant == 1 {
				c.batch.dormant = append(c.batch.dormant, c)
			}
		} else {
			delete(c.byMask, st.mask)
			if c.last == st {
				c.last = nil
			}
		}
		for i, x := range c.subtables {
			if x == st {
				c.subtables = append(c.subtables[:i], c.subtables[i+1:]...)
				break
			}
		}
		return
	}
	if int(r.Priority) == st.maxPriority {
		if st.nMax--; st.nMax > 0 {
			return
		}
		st.maxPriority = -1
		st.buckets.each(func(b []*Rule) bool {
			switch p := int(b[0].Priority); {
			case p > st.maxPriority:
				st.maxPriority, st.nMax = p, 0
				fallthrough
			case p == st.maxPriority:
				for _, x := range b {
					if int(x.Priority) == p {
						st.nMax++
					}
				}
			}
			return true
		})
		c.resort(st)
	}
}

// resort moves st, whose maxPriority just changed, to its place in
// subtables, which is sorted otherwise: after the subtables of a higher
// or equal maximum that came before it, as a stable sort would, in one
// pass and without allocating (a bundle's adds raise a maximum often).
func (c *classifier) resort(st *subtable) {
	i := slices.Index(c.subtables, st)
	for ; i > 0 && c.subtables[i-1].maxPriority < st.maxPriority; i-- {
		c.subtables[i] = c.subtables[i-1]
	}
	for ; i+1 < len(c.subtables) && c.subtables[i+1].maxPriority > st.maxPriority; i++ {
		c.subtables[i] = c.subtables[i+1]
	}
	c.subtables[i] = st
}

// lookup returns the highest-priority rule matching k, or nil. If wc is
// not nil, the bits of the key the result depends on are ORed into it:
// of each subtable it looked into, the stages it examined (probe).
func (c *classifier) lookup(k *Key, wc *Key) *Rule {
	tc := trieCtx{k: k, hard: c}
	return c.lookupTries(k, wc, &tc)
}

// lookupTries is lookup with the table's trie context.
func (c *classifier) lookupTries(k *Key, wc *Key, tc *trieCtx) *Rule {
	var best *Rule
	for _, st := range c.subtables {
		if best != nil && st.maxPriority < int(best.Priority) {
			break
		}
		for _, r := range st.probe(k, wc, tc) {
			if st.equal(k, r) {
				if best == nil || r.Priority > best.Priority ||
					(r.Priority == best.Priority && r.seq < best.seq) {
					best = r
				}
				break // bucket is sorted: the first equal rule is its best
			}
		}
	}
	return best
}

// find returns the rule with exactly this match and priority.
func (c *classifier) find(m *Match, priority uint16) *Rule {
	if c.n == 0 {
		return nil // no need to hash the mask (tables without conjunctions)
	}
	st := c.subtableFor(&m.Mask)
	if st == nil {
		return nil
	}
	for _, r := range st.buckets.get(st.hash(&m.Value)) {
		if r.Priority == priority && st.equal(&m.Value, r) {
			return r
		}
	}
	return nil
}

// findSame returns the rule with r's match and priority (r itself or the
// one r would replace), from r's compact match.
func (c *classifier) findSame(r *Rule) *Rule {
	if c.n == 0 {
		return nil
	}
	mask := r.match.mask()
	st := c.subtableFor(&mask)
	if st == nil {
		return nil
	}
	vals := r.match.values()
	for _, x := range st.buckets.get(st.hashValues(vals)) {
		if x.Priority == r.Priority && slices.Equal(x.match.values(), vals) {
			return x
		}
	}
	return nil
}

// each calls fn for every rule (in no particular order) until fn returns false.
func (c *classifier) each(fn func(*Rule) bool) {
	for _, st := range c.subtables {
		stop := false
		st.buckets.each(func(b []*Rule) bool {
			for _, r := range b {
				if !fn(r) {
					stop = true
					return false
				}
			}
			return true
		})
		if stop {
			return
		}
	}
}
