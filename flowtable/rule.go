package flowtable

import "math/bits"

// Rule is a flow installed in a table, with its counters. It keeps the
// flow's fields but not its Match: a Match is two whole keys (832 bytes),
// while an installed flow constrains a few words of the key, so a rule
// stores only the words its mask covers (sparseMatch). Match and Flow
// rebuild the full forms for dumps and flow-mod filters.
type Rule struct {
	Table       uint8
	Priority    uint16
	IdleTimeout uint16
	HardTimeout uint16
	Importance  uint16
	Flags       FlowFlags
	Cookie      uint64
	Actions     []Action
	Stats       RuleStats
	seq         uint64 // insertion order, for a stable tie-break among equal priorities
	match       sparseMatch
	// conj are the clauses of a conjunctive flow, sorted by conjunction id
	// (set while the rule is in a table's soft classifier).
	conj []conjClause
}

// newRule returns the rule of flow f (f itself is not kept).
func newRule(f *Flow) *Rule {
	return &Rule{Table: f.Table, Priority: f.Priority, IdleTimeout: f.IdleTimeout, HardTimeout: f.HardTimeout,
		Importance: f.Importance, Flags: f.Flags, Cookie: f.Cookie, Actions: detachActions(f.Actions), match: newSparseMatch(&f.Match)}
}

// NewRule returns the rule flow f becomes when added, to stage an add
// compactly (FlowOp.Rule): f itself is not kept.
func NewRule(f *Flow) *Rule { return newRule(f) }

// flowInto sets f to the rule as a flow (its actions are the rule's).
func (r *Rule) flowInto(f *Flow) {
	*f = Flow{Table: r.Table, Priority: r.Priority, Cookie: r.Cookie, IdleTimeout: r.IdleTimeout,
		HardTimeout: r.HardTimeout, Importance: r.Importance, Flags: r.Flags, Actions: r.Actions}
	r.match.expand(&f.Match)
}

// IsTableMiss says the rule is its table's table-miss flow: priority 0
// and an empty match (OpenFlow 1.3 5.4, OVS rule_is_table_miss).
func (r *Rule) IsTableMiss() bool {
	return r.Priority == 0 && r.match.n() == 0
}

// Match returns the rule's match.
func (r *Rule) Match() Match {
	var m Match
	r.match.expand(&m)
	return m
}

// Flow returns a copy of the rule as a flow.
func (r *Rule) Flow() *Flow {
	f := &Flow{}
	r.flowInto(f)
	return f
}

// IsConjunctive reports whether the rule's actions are conjunction()
// clauses only.
func (r *Rule) IsConjunctive() bool { return conjunctiveActions(r.Actions) }

// conjunctiveActions reports whether acts are conjunction() clauses only
// (a flow with such actions never matches by itself).
func conjunctiveActions(acts []Action) bool {
	if len(acts) == 0 {
		return false
	}
	for _, a := range acts {
		if _, ok := a.(*Conjunction); !ok {
			return false
		}
	}
	return true
}

// maskWords is the number of bitmap words of a sparseMatch.
const maskWords = (KeyWords + 63) / 64

// sparseMatch is a match stored by the key words its mask covers: a
// bitmap of those words, then their values, then their masks, in one
// slice. Rules of one subtable share a mask, so their values line up with
// the subtable's word list.
type sparseMatch []uint64

// catchAll is the sparse form of the empty match, shared by every
// catch-all flow.
var catchAll = make(sparseMatch, maskWords)

func newSparseMatch(m *Match) sparseMatch {
	var bitmap [maskWords]uint64
	n := 0
	for i := 0; i < KeyWords; i++ {
		if m.Mask.Word(i) != 0 {
			bitmap[i/64] |= 1 << (i % 64)
			n++
		}
	}
	if n == 0 {
		return catchAll
	}
	s := make(sparseMatch, maskWords+2*n)
	copy(s, bitmap[:])
	j := 0
	for i := 0; i < KeyWords; i++ {
		if mk := m.Mask.Word(i); mk != 0 {
			s[maskWords+j] = m.Value.Word(i) & mk
			s[maskWords+n+j] = mk
			j++
		}
	}
	return s
}

func (s sparseMatch) n() int { return (len(s) - maskWords) / 2 }

// values are the stored words' values, in key order.
func (s sparseMatch) values() []uint64 { return s[maskWords : maskWords+s.n()] }

// word returns the value and mask of key word i.
func (s sparseMatch) word(i int) (value, mask uint64) {
	b := uint(i / 64)
	bit := uint64(1) << (uint(i) % 64)
	if s[b]&bit == 0 {
		return 0, 0
	}
	j := bits.OnesCount64(s[b] & (bit - 1))
	for k := uint(0); k < b; k++ {
		j += bits.OnesCount64(s[k])
	}
	n := s.n()
	return s[maskWords+j], s[maskWords+n+j]
}

func (s sparseMatch) expand(m *Match) {
	*m = Match{}
	n := s.n()
	j := 0
	for i := 0; i < KeyWords && j < n; i++ {
		if s[i/64]&(1<<(i%64)) != 0 {
			m.Value.SetWord(i, s[maskWords+j])
			m.Mask.SetWord(i, s[maskWords+n+j])
			j++
		}
	}
}

// equal reports whether the sparse match is m.
func (s sparseMatch) equal(m *Match) bool {
	for i := 0; i < KeyWords; i++ {
		v, mk := s.word(i)
		if mk != m.Mask.Word(i) || v != m.Value.Word(i)&mk {
			return false
		}
	}
	return true
}

// mask returns the match's mask as a key.
func (s sparseMatch) mask() Key {
	var k Key
	n := s.n()
	j := 0
	for i := 0; i < KeyWords && j < n; i++ {
		if s[i/64]&(1<<(i%64)) != 0 {
			k.SetWord(i, s[maskWords+n+j])
			j++
		}
	}
	return k
}

// matches reports whether key k matches.
func (s sparseMatch) matches(k *Key) bool {
	n := s.n()
	j := 0
	for i := 0; i < KeyWords && j < n; i++ {
		if s[i/64]&(1<<(i%64)) != 0 {
			if k.Word(i)&s[maskWords+n+j] != s[maskWords+j] {
				return false
			}
			j++
		}
	}
	return true
}

// detachActions returns a copy of acts that shares no memory with the
// caller's buffers: translating a flow-mod carves action lists and
// set-field bytes from arrays inside the message's struct, and a rule that
// kept them would keep the whole message (over a kilobyte) alive. Action
// structs without such slices are shared.
func detachActions(acts []Action) []Action {
	if len(acts) == 0 {
		return nil
	}
	out := make([]Action, len(acts))
	for i, a := range acts {
		switch a := a.(type) {
		case *SetField:
			b := make([]byte, len(a.Value)+len(a.Mask))
			n := copy(b, a.Value)
			copy(b[n:], a.Mask)
			c := *a
			c.Value, c.Mask = b[:n:n], b[n:]
			out[i] = &c
		case *Note:
			c := *a
			c.Data = append([]byte(nil), a.Data...)
			out[i] = &c
		case *CT:
			c := *a
			c.Exec = detachActions(a.Exec)
			out[i] = &c
		case *WriteActions:
			out[i] = &WriteActions{Actions: detachActions(a.Actions)}
		case *Clone:
			out[i] = &Clone{Actions: detachActions(a.Actions)}
		default:
			out[i] = a
		}
	}
	return out
}
