package flowtable

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
)

// Prefix tracking (OVS lib/classifier.c "prefix tries", Flow_Table
// prefixes in ovs-vswitchd.conf.db(5)). A table of routes and policies
// has rules on nw_dst with many prefix lengths: 10.10.0.5, 10.10.3.0/24,
// 10.96.0.0/12. Without tracking, a packet that looks into the /32
// subtable and finds nothing un-wildcards all 32 bits of nw_dst, so every
// destination address gets a megaflow of its own. With it, each table
// keeps a binary trie of the prefixes its rules match on the field; one
// walk of the trie per lookup tells which prefix lengths can match the
// packet and how many leading bits decided that. A subtable whose prefix
// length cannot match is skipped, and the megaflow gets only those
// leading bits: one megaflow per prefix, not per address.

// maxPrefixFields is OVS's CLS_MAX_TRIES.
const maxPrefixFields = 3

// DefaultPrefixFields are the fields tracked when a table's Flow_Table row names
// none: ip_dst and ip_src, as ovs-vswitchd's default_prefix_fields.
var DefaultPrefixFields = []*Field{FieldIPv4Dst, FieldIPv4Src}

// prefixFieldOK reports whether f can be tracked: the fields OVS accepts
// (ovs-vswitchd.conf.db(5) Flow_Table prefixes).
func prefixFieldOK(f *Field) bool {
	switch f {
	case FieldTunID, FieldTunSrc, FieldTunDst, FieldTunIPv6Src, FieldTunIPv6Dst,
		FieldIPv4Src, FieldIPv4Dst, FieldIPv6Src, FieldIPv6Dst:
		return true
	}
	return false
}

// ParsePrefixFields reads a Flow_Table prefixes column as ovs-vswitchd's
// bridge_configure_tables does: "none" tracks nothing, a name OVS does
// not take is skipped with a warning, and a column with no field it takes
// (or an empty one) means the default (nil).
func ParsePrefixFields(names []string) (fields []*Field, warnings []string) {
	for _, n := range names {
		if n == "none" {
			return []*Field{}, warnings
		}
		f := FieldByName(n)
		switch {
		case f == nil:
			warnings = append(warnings, "'prefixes' with unknown field: "+n)
		case !prefixFieldOK(f):
			warnings = append(warnings, "'prefixes' with incompatible field: "+n)
		case len(fields) == maxPrefixFields:
			warnings = append(warnings, "'prefixes' with too many fields, field not used: "+n)
		default:
			fields = append(fields, f)
		}
	}
	return fields, warnings
}

// prefixValue is a field's value as big-endian 32-bit words, the first
// bit most significant (OVS's be32 view of struct flow).
type prefixValue [4]uint32

func keyPrefixValue(k *Key, f *Field) (v prefixValue) {
	if f.Size == 4 {
		v[0] = binary.BigEndian.Uint32(k[f.Off:])
		return v
	}
	for i := 0; i < f.Size/4; i++ {
		v[i] = binary.BigEndian.Uint32(k[f.Off+4*i:])
	}
	return v
}

// bitsAt returns n (1..32) bits of v from bit ofs, left-aligned.
func (v *prefixValue) bitsAt(ofs, n uint) uint32 {
	w, s := ofs/32, ofs%32
	x := v[w] << s
	if s != 0 && w < 3 {
		x |= v[w+1] >> (32 - s)
	}
	return x & ^(^uint32(0) >> n)
}

func (v *prefixValue) bitAt(ofs uint) int { return int(v[ofs/32]>>(31-ofs%32)) & 1 }

// prefixLen is the length of mask over f if it is a CIDR mask (leading
// ones only), else 0 (OVS minimask_get_prefix_len).
func prefixLen(mask *Key, f *Field) uint8 {
	v := keyPrefixValue(mask, f)
	n, ended := 0, false
	for i := 0; i < f.Size/4; i++ {
		m := v[i]
		if ended {
			if m != 0 {
				return 0
			}
			continue
		}
		if ^m&(^m+1) != 0 {
			return 0 // not contiguous
		}
		tz := bits.TrailingZeros32(m)
		n += 32 - tz
		ended = tz != 0
	}
	return uint8(n)
}

// prefixTrie is a path-compressed binary trie of prefixes with counts
// (OVS struct cls_trie), nodes in one slice: index 0 means none.
type prefixTrie struct {
	nodes []trieNode
	root  int32
	free  int32 // a list of unused nodes, linked by edges[0]
}

type trieNode struct {
	prefix uint32 // the node's bits, left-aligned
	// info is the rules whose prefix ends here (<<8) and the node's
	// number of bits, 0..32 (0 only at a branch made above the root):
	// 16 bytes a node.
	info  uint32
	edges [2]int32
}

func (nd *trieNode) nBits() uint      { return uint(nd.info & 0xff) }
func (nd *trieNode) nRules() uint32   { return nd.info >> 8 }
func (nd *trieNode) setBits(n uint)   { nd.info = nd.info&^0xff | uint32(n) }
func (nd *trieNode) addRules(d int32) { nd.info += uint32(d) << 8 }

func (t *prefixTrie) node(i int32) *trieNode { return &t.nodes[i] }

func (t *prefixTrie) alloc(n trieNode) int32 {
	if t.free != 0 {
		i := t.free
		t.free = t.nodes[i].edges[0]
		t.nodes[i] = n
		return i
	}
	if len(t.nodes) == 0 {
		t.nodes = append(t.nodes, trieNode{})
	}
	t.nodes = append(t.nodes, n)
	return int32(len(t.nodes) - 1)
}

func (t *prefixTrie) release(i int32) {
	t.nodes[i] = trieNode{edges: [2]int32{t.free}}
	t.free = i
}

// branch makes a chain of nodes for bits ofs..plen of v, the last with
// nRules rules, and returns its first node.
func (t *prefixTrie) branch(v *prefixValue, ofs, plen uint, nRules uint32) int32 {
	n := min(plen-ofs, 32)
	node := trieNode{prefix: v.bitsAt(ofs, n), info: uint32(n)}
	if ofs+n < plen {
		next := t.branch(v, ofs+n, plen, nRules)
		node.edges[v.bitAt(ofs+n)] = next
	} else {
		node.info |= nRules << 8
	}
	return t.alloc(node)
}

// equalBits is how many of node's bits v has from ofs on, at most plen-ofs.
func equalBits(nd *trieNode, v *prefixValue, ofs, plen uint) uint {
	n := min(nd.nBits(), plen-ofs)
	if n == 0 {
		return 0
	}
	return min(uint(bits.LeadingZeros32(nd.prefix^v.bitsAt(ofs, n))), n)
}

// edgeRef names the link to a node: the root or a node's edge.
type edgeRef struct {
	parent int32 // 0: the root
	bit    int
}

func (t *prefixTrie) get(e edgeRef) int32 {
	if e.parent == 0 {
		return t.root
	}
	return t.nodes[e.parent].edges[e.bit]
}

func (t *prefixTrie) set(e edgeRef, i int32) {
	if e.parent == 0 {
		t.root = i
	} else {
		t.nodes[e.parent].edges[e.bit] = i
	}
}

// insert adds one rule with the first plen bits of v (OVS trie_insert_prefix).
func (t *prefixTrie) insert(v *prefixValue, plen uint) {
	e, ofs := edgeRef{}, uint(0)
	for {
		i := t.get(e)
		if i == 0 {
			t.set(e, t.branch(v, ofs, plen, 1))
			return
		}
		nd := t.node(i)
		eq := equalBits(nd, v, ofs, plen)
		ofs += eq
		if eq < nd.nBits() {
			// Mismatch or the prefix ends inside the node: a new node
			// above it takes the equal bits.
			old := int(nd.prefix>>(31-eq)) & 1
			parent := trieNode{prefix: nd.prefix & ^(^uint32(0) >> eq), info: uint32(eq)}
			if ofs == plen {
				parent.addRules(1)
			}
			nd.prefix <<= eq
			nd.setBits(nd.nBits() - eq)
			parent.edges[old] = i
			p := t.alloc(parent)
			if ofs < plen {
				b := t.branch(v, ofs, plen, 1)
				t.nodes[p].edges[1-old] = b
			}
			t.set(e, p)
			return
		}
		if ofs == plen {
			nd.addRules(1)
			return
		}
		e = edgeRef{i, v.bitAt(ofs)}
	}
}

// remove drops one rule with the first plen bits of v and prunes what no
// rule needs any more (OVS trie_remove_prefix).
func (t *prefixTrie) remove(v *prefixValue, plen uint) {
	var path [130]edgeRef
	depth, ofs := 0, uint(0)
	for {
		i := t.get(path[depth])
		if i == 0 {
			return // not there: only rules of the classifier are removed
		}
		nd := t.node(i)
		eq := equalBits(nd, v, ofs, plen)
		if eq < nd.nBits() {
			return
		}
		ofs += eq
		if ofs < plen {
			depth++
			path[depth] = edgeRef{i, v.bitAt(ofs)}
			continue
		}
		if nd.nRules() == 0 {
			return
		}
		nd.addRules(-1)
		for nd.nRules() == 0 {
			e0, e1 := nd.edges[0], nd.edges[1]
			if e0 != 0 && e1 != 0 {
				return // a branch point stays
			}
			next := e0 | e1
			if next != 0 {
				nx := t.node(next)
				if nd.nBits()+nx.nBits() > 32 {
					return
				}
				nx.prefix = nd.prefix | nx.prefix>>nd.nBits()
				nx.setBits(nx.nBits() + nd.nBits())
			}
			t.set(path[depth], next)
			t.release(i)
			if next != 0 || depth == 0 {
				return
			}
			depth--
			i = t.get(path[depth])
			nd = t.node(i)
		}
		return
	}
}

// lookup walks v (nBits wide) down the trie (OVS trie_lookup_value): it
// sets bit l-1 of plens for every length l at which some rule's prefix
// equals v's first l bits, and returns how many leading bits of v the
// walk depended on.
func (t *prefixTrie) lookup(v *prefixValue, nBits uint, plens *[2]uint64) uint {
	if nBits <= 32 {
		return t.lookup32(v[0], nBits, plens)
	}
	prev, i := int32(0), t.root
	ofs := uint(0)
	for i != 0 {
		nd := &t.nodes[i]
		eq := equalBits(nd, v, ofs, nBits)
		ofs += eq
		if eq < nd.nBits() {
			return ofs + 1 // includes the first bit that differs
		}
		if nd.nRules() > 0 {
			plens[(ofs-1)/64] |= 1 << ((ofs - 1) % 64)
		}
		if ofs >= nBits {
			return nBits
		}
		prev, i = i, nd.edges[v.bitAt(ofs)]
	}
	return t.missing(prev, ofs)
}

// missing is the answer of a walk that ends at a branch that does not
// exist: the bit that chose it counts, unless the last node had no
// branches at all.
func (t *prefixTrie) missing(prev int32, ofs uint) uint {
	if prev == 0 || t.nodes[prev].edges == [2]int32{} {
		return ofs
	}
	return ofs + 1
}

// lookup32 is lookup for fields of one word (IPv4 addresses): the same
// walk with plain shifts.
func (t *prefixTrie) lookup32(v uint32, nBits uint, plens *[2]uint64) uint {
	nodes := t.nodes
	prev, i := int32(0), t.root
	ofs := uint(0)
	var found uint64
	for i != 0 {
		nd := &nodes[i]
		n := uint(nd.info & 0xff)
		if x := (nd.prefix ^ v<<ofs) & ^(^uint32(0) >> n); x != 0 {
			plens[0] |= found
			return ofs + uint(bits.LeadingZeros32(x)) + 1
		}
		ofs += n
		if nd.info > 0xff { // rules end here (never at a 0-bit node)
			found |= 1 << ((ofs - 1) & 63)
		}
		if ofs >= nBits {
			plens[0] |= found
			return nBits
		}
		prev, i = i, nd.edges[(v>>(31-ofs))&1]
	}
	plens[0] |= found
	return t.missing(prev, ofs)
}

func (t *prefixTrie) reset() { *t = prefixTrie{} }

// empty reports whether no rule is in the trie.
func (t *prefixTrie) empty() bool { return t.root == 0 }

func (t *prefixTrie) clone() prefixTrie {
	return prefixTrie{nodes: append([]trieNode(nil), t.nodes...), root: t.root, free: t.free}
}

// prefixFields are the fields a table tracks, shared by its classifiers.
type prefixFields struct {
	fields []*Field
	// at are the fields' places, for lookups: byte offset, size, bits
	// and the ethertype the field needs (0: none).
	at [maxPrefixFields]prefixAt
}

type prefixAt struct {
	off       uint16
	size      uint8
	bits      uint8
	ethType   uint16
	ethTypeOK bool // ethType is a prerequisite
}

func newPrefixFields(fs []*Field) *prefixFields {
	pf := &prefixFields{fields: fs}
	for j, f := range fs {
		a := prefixAt{off: uint16(f.Off), size: uint8(f.Size), bits: uint8(f.Bits)}
		switch f.Prereq {
		case PrereqIPv4:
			a.ethType, a.ethTypeOK = 0x0800, true
		case PrereqIPv6:
			a.ethType, a.ethTypeOK = 0x86dd, true
		}
		pf.at[j] = a
	}
	return pf
}

var defaultPrefixFields = newPrefixFields(DefaultPrefixFields)

// subtablePrefixes is what a subtable needs of the tries: for each tracked
// field, its prefix length in the mask (0: not a prefix, not tracked) and
// the stage (index into stages, or len(stages) for the last) that holds
// it; at has bit s set when stage s has one.
type subtablePrefixes struct {
	plen  [maxPrefixFields]uint8
	stage [maxPrefixFields]uint8
	at    uint8
}

func (st *subtable) setPrefixes(pf *prefixFields) {
	st.prefixes = subtablePrefixes{}
	for j, f := range pf.fields {
		p := prefixLen(&st.mask, f)
		if p == 0 {
			continue
		}
		var s uint8
		for si := 0; si <= len(st.stages); si++ {
			if st.stageIDs[si] == stageOf[f.Off] {
				s = uint8(si)
			}
		}
		st.prefixes.plen[j], st.prefixes.stage[j] = p, s
		st.prefixes.at |= 1 << s
	}
}

// rulePrefixValue is the value of the field at a in a rule of st (vals
// in st.words order).
func (st *subtable) rulePrefixValue(vals []uint64, a *prefixAt) (v prefixValue) {
	var buf [24]byte // the key words the field spans (at most 16 bytes)
	base, end := int(a.off)&^7, int(a.off)+int(a.size)
	for i, w := range st.words {
		if off := int(w) * 8; off >= base && off < end {
			binary.NativeEndian.PutUint64(buf[off-base:], vals[i])
		}
	}
	for i := 0; i < int(a.size)/4; i++ {
		v[i] = binary.BigEndian.Uint32(buf[int(a.off)-base+4*i:])
	}
	return v
}

// addPrefixes and removePrefixes keep the tries in step with the rules.
func (c *classifier) addPrefixes(st *subtable, vals []uint64) {
	for j, p := range st.prefixes.plen {
		if p != 0 {
			v := st.rulePrefixValue(vals, &c.prefix.at[j])
			c.tries[j].insert(&v, uint(p))
		}
	}
}

func (c *classifier) removePrefixes(st *subtable, vals []uint64) {
	for j, p := range st.prefixes.plen {
		if p != 0 {
			v := st.rulePrefixValue(vals, &c.prefix.at[j])
			c.tries[j].remove(&v, uint(p))
		}
	}
}

// setPrefixFields changes the tracked fields and rebuilds the tries (OVS
// classifier_set_prefix_fields).
func (c *classifier) setPrefixFields(pf *prefixFields) {
	c.prefix = pf
	for j := range c.tries {
		c.tries[j].reset()
	}
	for _, st := range c.byMask {
		st.setPrefixes(pf)
		st.buckets.each(func(b []*Rule) bool {
			for _, r := range b {
				c.addPrefixes(st, r.match.values())
			}
			return true
		})
	}
}

// trieCtx is one table lookup's view of the tries (OVS struct trie_ctx):
// each trie is walked on demand, once, over the hard and soft classifiers
// together (what one trie over both would give: the lengths found are the
// union, the bits needed the larger).
type trieCtx struct {
	k          *Key
	hard, soft *classifier
	done       uint8 // bit j: trie j walked
	maskbits   [maxPrefixFields]uint8
	plens      [maxPrefixFields][2]uint64
}

func (tc *trieCtx) walk(j int) {
	tc.done |= 1 << j
	a := &tc.hard.prefix.at[j]
	if a.ethTypeOK && tc.k.u16(offEthType) != a.ethType {
		// Another protocol shares the field's bytes: every length may
		// match, nothing is skipped.
		tc.plens[j] = [2]uint64{^uint64(0), ^uint64(0)}
		tc.maskbits[j] = 0
		return
	}
	tc.plens[j] = [2]uint64{}
	hard, soft := &tc.hard.tries[j], (*prefixTrie)(nil)
	if tc.soft != nil && !tc.soft.tries[j].empty() {
		soft = &tc.soft.tries[j]
	}
	n := uint(0)
	if a.size == 4 { // IPv4 addresses: one word
		v := tc.k.u32(int(a.off))
		if !hard.empty() {
			n = hard.lookup32(v, uint(a.bits), &tc.plens[j])
		}
		if soft != nil {
			n = max(n, soft.lookup32(v, uint(a.bits), &tc.plens[j]))
		}
		tc.maskbits[j] = uint8(n)
		return
	}
	var v prefixValue
	for i := 0; i < int(a.size)/4; i++ {
		v[i] = tc.k.u32(int(a.off) + 4*i)
	}
	if !hard.empty() {
		n = hard.lookup(&v, uint(a.bits), &tc.plens[j])
	}
	if soft != nil {
		n = max(n, soft.lookup(&v, uint(a.bits), &tc.plens[j]))
	}
	tc.maskbits[j] = uint8(n)
}

// skipByPrefix reports whether the tries show that no rule of st can
// match k, before st's stage si is hashed (OVS check_tries). If so, wc
// gets the leading bits of the field the trie walk depended on; a skip
// never un-wildcards more of the field than the subtable's own prefix,
// or the bits are in wc already.
func (st *subtable) skipByPrefix(si int, tc *trieCtx, wc *Key) bool {
	for j, p := range st.prefixes.plen {
		if p == 0 || int(st.prefixes.stage[j]) != si {
			continue
		}
		if tc.done&(1<<j) == 0 {
			tc.walk(j)
		}
		if tc.plens[j][(p-1)/64]&(1<<((p-1)%64)) != 0 {
			continue // a rule of that length may match
		}
		a, mb := &tc.hard.prefix.at[j], int(tc.maskbits[j])
		if mb <= int(p) {
			setPrefixBits(wc, a, mb)
		} else if !hasPrefixBits(wc, a, mb) {
			continue
		}
		// The walk read the field only for packets of its protocol.
		if a.ethTypeOK {
			wc.setU16(offEthType, 0xffff)
		}
		return true
	}
	return false
}

func setPrefixBits(wc *Key, a *prefixAt, n int) {
	if a.size == 4 {
		wc.setU32(int(a.off), wc.u32(int(a.off))|^(^uint32(0)>>n))
		return
	}
	b := wc[a.off : int(a.off)+int(a.size)]
	for i := 0; n > 0; i, n = i+1, n-8 {
		b[i] |= ^byte(0xff >> min(n, 8))
	}
}

func hasPrefixBits(wc *Key, a *prefixAt, n int) bool {
	b := wc[a.off : int(a.off)+int(a.size)]
	for i := 0; n > 0; i, n = i+1, n-8 {
		m := ^byte(0xff >> min(n, 8))
		if b[i]&m != m {
			return false
		}
	}
	return true
}

// SetPrefixFields sets the fields table id tracks (Flow_Table prefixes):
// nil is the default (DefaultPrefixFields), an empty list none. The
// table's tries are rebuilt on a copy that replaces it, so walks never
// see them change, and cached megaflows are dropped (Generation).
func (p *Pipeline) SetPrefixFields(id uint8, fields []*Field) error {
	if int(id) >= NumTables {
		return ErrBadTable
	}
	if len(fields) > maxPrefixFields {
		return fmt.Errorf("table %d: %d prefix fields, at most %d", id, len(fields), maxPrefixFields)
	}
	for _, f := range fields {
		if !prefixFieldOK(f) {
			return fmt.Errorf("table %d: %s cannot be a prefix field", id, f.Name)
		}
	}
	pf := defaultPrefixFields
	if fields != nil {
		pf = newPrefixFields(slices.Clone(fields))
	}
	defer p.unlockWrite(p.lockWrite())
	if old := p.prefixFor(id); slices.Equal(old.fields, pf.fields) && (old == defaultPrefixFields) == (pf == defaultPrefixFields) {
		return nil
	}
	p.prefixes[id].Store(pf)
	cur := p.cur()
	t := cur.tables[id]
	if t == nil {
		return nil
	}
	nt := t.clone(cur.batch)
	nt.setPrefixFields(pf)
	cur.tables[id] = nt
	p.w.detached = append(p.w.detached, idTable{id, t})
	p.w.log = append(p.w.log, sideOp{put: nt, table: id, clone: true})
	p.bumpLocked()
	return nil
}

// PrefixFields returns the fields table id tracks.
func (p *Pipeline) PrefixFields(id uint8) []*Field {
	return slices.Clone(p.prefixFor(id).fields)
}

func (p *Pipeline) prefixFor(id uint8) *prefixFields {
	if pf := p.prefixes[id].Load(); pf != nil {
		return pf
	}
	return defaultPrefixFields
}

func (t *table) setPrefixFields(pf *prefixFields) {
	if t.hard.prefix != pf {
		t.hard.setPrefixFields(pf)
	}
	if t.soft.prefix != pf {
		t.soft.setPrefixFields(pf)
	}
}
