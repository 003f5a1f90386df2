package flowtable

import "slices"

// Staged lookup (OVS lib/classifier.c, "staged lookup"): a subtable's mask
// is split into the stages of a flow, metadata, L2, L3 and L4, and the
// subtable keeps, for every stage but the last, the hashes of its rules'
// values masked up to that stage. A lookup hashes the packet stage by
// stage and gives up on the subtable at the first stage no rule has; the
// megaflow then depends only on the stages it examined. Without it, a
// packet that looks into `tcp,nw_dst=10.96.0.1,tp_dst=80` un-wildcards
// tp_dst whatever its nw_dst, and the reply of every connection (its
// tp_dst is the client's ephemeral port) needs a megaflow of its own.
//
// The stages only decide which bits a rejection depends on: any split is
// correct, because a packet that agrees with the rejected one on those
// bits hashes the same and is rejected too.

const nStages = 4 // metadata, L2, L3, L4

// stageOf is the stage of every byte of a Key, as OVS's struct flow
// segments (lib/flow.h FLOW_SEGMENT_*): L3 ends where tp_src starts, so
// tcp_flags, nd_target and arp_sha/tha are L3 as in OVS.
var stageOf = func() (s [KeySize]uint8) {
	set := func(off, n int, stage uint8) {
		for i := off; i < off+n; i++ {
			s[i] = stage
		}
	}
	// Everything not named below (in_port, regs, tunnel, ct_*, tun_metadata)
	// is metadata, stage 0.
	set(offVlanTCI, 2, 1)
	set(offEthSrc, 6, 1)
	set(offEthType, 2, 1)
	set(offEthDst, 6, 1)
	set(offNwProto, 1, 2)
	set(offNwTos, 1, 2)
	set(offNwTTL, 1, 2)
	set(offNwFrag, offVlanTCI-offNwFrag, 2)
	set(offTCPFlags, 2, 2)
	set(offNwSrc, 8, 2)
	set(offIPv6Label, offCtIPv6Src-offIPv6Label, 2) // IPv6, ND, ARP, ipv6_exthdr
	set(offTpSrc, 4, 3)
	return s
}()

// stageWordMask[s][w] is the part of key word w that belongs to stage s.
var stageWordMask = func() (m [nStages][KeyWords]uint64) {
	for off, s := range stageOf {
		var k Key
		k[off] = 0xff
		m[s][off/8] |= k.Word(off / 8)
	}
	return m
}()

// stageWord is one word of a stage: the position in the subtable's word
// list and the part of its mask the stage covers.
type stageWord struct {
	i    uint8
	mask uint64
}

// stageIndex is a stage of a subtable that can reject it.
type stageIndex struct {
	words []stageWord // the stage's own words; the hash chains from earlier stages
	// upto is the subtable's mask through this stage: what a rejection
	// here un-wildcards.
	upto   []stageWord
	hashes hcount
}

// buildStages splits st's mask into stages. Only the stages before the
// last one present get an index; a mask within one stage has none.
func (st *subtable) buildStages() {
	var per [nStages][]stageWord
	for i, w := range st.words {
		for s := range nStages {
			if m := st.maskw[i] & stageWordMask[s][w]; m != 0 {
				per[s] = append(per[s], stageWord{uint8(i), m})
			}
		}
	}
	var upto []stageWord
	for s := range nStages {
		if len(per[s]) == 0 {
			continue
		}
		upto = mergeStageWords(upto, per[s])
		st.stageIDs[len(st.stages)] = uint8(s)
		st.stages = append(st.stages, stageIndex{words: per[s], upto: upto})
	}
	// The last stage is the full probe of the buckets: the bucket hash
	// chains on from the earlier stages' (hash), so a probe hashes each
	// word once.
	if n := len(st.stages); n > 0 {
		st.last = st.stages[n-1].words
		st.stages = st.stages[:n-1]
	}
}

// hash is the bucket hash of k: the stages' hashes chained, then the last
// stage's words.
func (st *subtable) hash(k *Key) uint64 {
	h := hashStart
	for si := range st.stages {
		h = st.hashStage(h, k, st.stages[si].words)
	}
	return st.hashStage(h, k, st.last)
}

func (st *subtable) hashStage(h uint64, k *Key, words []stageWord) uint64 {
	for _, w := range words {
		h = hashWord(h, k.Word(int(st.words[w.i]))&w.mask)
	}
	return h
}

// hashValues is hash of a rule's sparse match values (in the order of
// st.words).
func (st *subtable) hashValues(vals []uint64) uint64 {
	h := hashStart
	for si := range st.stages {
		h = hashStageValues(h, vals, st.stages[si].words)
	}
	return hashStageValues(h, vals, st.last)
}

func hashStageValues(h uint64, vals []uint64, words []stageWord) uint64 {
	for _, w := range words {
		h = hashWord(h, vals[w.i]&w.mask)
	}
	return h
}

// mergeStageWords returns a new list: a with b's masks added.
func mergeStageWords(a, b []stageWord) []stageWord {
	out := append([]stageWord(nil), a...)
	for _, x := range b {
		found := false
		for j := range out {
			if out[j].i == x.i {
				out[j].mask |= x.mask
				found = true
			}
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}

// stageHashes calls fn with the hash of vals (a rule's values, in the
// order of st.words) through each stage index.
func (st *subtable) stageHashes(vals []uint64, fn func(s *stageIndex, h uint64)) {
	h := hashStart
	for si := range st.stages {
		s := &st.stages[si]
		h = hashStageValues(h, vals, s.words)
		fn(s, h)
	}
}

func (st *subtable) addStages(vals []uint64) {
	st.stageHashes(vals, func(s *stageIndex, h uint64) { s.hashes.add(h) })
}

func (st *subtable) removeStages(vals []uint64) {
	st.stageHashes(vals, func(s *stageIndex, h uint64) { s.hashes.remove(h) })
}

// probe returns the bucket of st that k's masked value hashes to (nil if
// a stage rejects k), ORing into wc the bits it examined.
//
// With prefix tracking (prefix.go), OVS asks the tries before hashing a
// stage that holds a tracked field, and skips the subtable when no rule's
// prefix of the subtable's length matches: then only the stages before
// and the leading bits of the field the trie walk read go into wc. The
// tries are asked here only when the stage rejects k: a stage that passes
// has a rule with that prefix, so the tries would not have skipped it.
// Same masks, and no trie walk for the subtables that match.
func (st *subtable) probe(k *Key, wc *Key, tc *trieCtx) []*Rule {
	h := hashStart
	for si := range st.stages {
		s := &st.stages[si]
		h = st.hashStage(h, k, s.words)
		if !s.hashes.has(h) {
			if wc != nil {
				st.reject(si, tc, wc)
			}
			return nil
		}
	}
	n := len(st.stages)
	b := st.buckets.get(st.hashStage(h, k, st.last))
	if wc != nil {
		if b == nil {
			st.reject(n, tc, wc)
			return nil
		}
		for i, w := range st.words {
			wc.SetWord(int(w), wc.Word(int(w))|st.maskw[i])
		}
	}
	return b
}

// reject ORs into wc what a rejection at stage si depends on: the stages
// through si, or, if the tries skip the subtable there, the stages before
// si and the trie's bits.
func (st *subtable) reject(si int, tc *trieCtx, wc *Key) {
	if st.prefixes.at&(1<<si) != 0 && !st.covered(si, wc) && st.skipByPrefix(si, tc, wc) {
		st.maskBefore(si, wc)
		return
	}
	if si == len(st.stages) {
		for i, w := range st.words {
			wc.SetWord(int(w), wc.Word(int(w))|st.maskw[i])
		}
		return
	}
	st.maskBefore(si+1, wc)
}

// covered reports whether wc holds the subtable's mask through stage si
// already (a table before looked at those bits): then a skip by the tries
// could not narrow wc, and the trie walk is not worth it.
func (st *subtable) covered(si int, wc *Key) bool {
	if si == len(st.stages) {
		for i, w := range st.words {
			if wc.Word(int(w))&st.maskw[i] != st.maskw[i] {
				return false
			}
		}
		return true
	}
	for _, w := range st.stages[si].upto {
		if wc.Word(int(st.words[w.i]))&w.mask != w.mask {
			return false
		}
	}
	return true
}

// maskBefore ORs into wc the subtable's mask through the stages before n.
func (st *subtable) maskBefore(n int, wc *Key) {
	if n == 0 {
		return
	}
	for _, w := range st.stages[n-1].upto {
		i := int(st.words[w.i])
		wc.SetWord(i, wc.Word(i)|w.mask)
	}
}

// hcount is a counted set of 64-bit hashes (open addressing, as hindex):
// how many rules of a subtable have each partial hash.
type hcount struct {
	slots []hcslot
	n     int
	shift uint8
}

type hcslot struct {
	hash uint64
	n    uint32 // 0: empty slot
}

func (h *hcount) home(hash uint64) uint64 { return hash >> h.shift }

func (h *hcount) has(hash uint64) bool {
	if len(h.slots) == 0 {
		return false
	}
	mask := uint64(len(h.slots) - 1)
	for i := h.home(hash); ; i = (i + 1) & mask {
		s := &h.slots[i]
		if s.n == 0 {
			return false
		}
		if s.hash == hash {
			return true
		}
	}
}

func (h *hcount) add(hash uint64) {
	if (h.n+1)*2 > len(h.slots) {
		h.grow()
	}
	mask := uint64(len(h.slots) - 1)
	for i := h.home(hash); ; i = (i + 1) & mask {
		s := &h.slots[i]
		if s.n == 0 {
			s.hash, s.n = hash, 1
			h.n++
			return
		}
		if s.hash == hash {
			s.n++
			return
		}
	}
}

func (h *hcount) grow() {
	old := h.slots
	size, shift := grownSize(len(old))
	h.slots, h.shift, h.n = make([]hcslot, size), shift, 0
	for _, s := range old {
		if s.n != 0 {
			h.add(s.hash)
			h.slots[h.find(s.hash)].n = s.n
		}
	}
}

// find returns the slot of a hash that is present.
func (h *hcount) find(hash uint64) uint64 {
	mask := uint64(len(h.slots) - 1)
	i := h.home(hash)
	for h.slots[i].hash != hash || h.slots[i].n == 0 {
		i = (i + 1) & mask
	}
	return i
}

// remove drops one count of hash; at zero the slot is freed with
// backward-shift deletion (no tombstones).
func (h *hcount) remove(hash uint64) {
	if !h.has(hash) {
		return
	}
	i := h.find(hash)
	if h.slots[i].n--; h.slots[i].n > 0 {
		return
	}
	h.n--
	backshift(h.slots, i, func(s *hcslot) (uint64, bool) { return h.home(s.hash), s.n != 0 })
}

// clone returns a copy that shares nothing with h.
func (h *hcount) clone() hcount {
	return hcount{slots: slices.Clone(h.slots), n: h.n, shift: h.shift}
}

func (h *hcount) reset() {
	clear(h.slots)
	h.n = 0
}
