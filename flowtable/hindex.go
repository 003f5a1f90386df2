package flowtable

import "math/bits"

// hindex is a small open-addressing hash table from a 64-bit hash to the
// rules whose masked value has that hash. It replaces a Go map on the
// lookup path: a probe is a shift and a compare, which matters because a
// lookup probes one of these per subtable. The slot is the hash's top
// bits: the subtable hash is multiplicative, and a multiply carries every
// input bit up to the top, never down to the bottom.
type hindex struct {
	slots []hslot
	n     int   // used slots
	shift uint8 // 64 - log2(len(slots))
}

// home is the slot a hash starts probing at.
func (h *hindex) home(hash uint64) uint64 { return hash >> h.shift }

type hslot struct {
	hash  uint64
	rules []*Rule // nil: empty slot
}

func (h *hindex) get(hash uint64) []*Rule {
	if len(h.slots) == 0 {
		return nil
	}
	mask := uint64(len(h.slots) - 1)
	for i := h.home(hash); ; i = (i + 1) & mask {
		s := &h.slots[i]
		if s.rules == nil {
			return nil
		}
		if s.hash == hash {
			return s.rules
		}
	}
}

// set stores rules under hash (nil or empty removes the entry).
func (h *hindex) set(hash uint64, rules []*Rule) {
	if len(rules) == 0 {
		h.remove(hash)
		return
	}
	if (h.n+1)*2 > len(h.slots) {
		h.grow()
	}
	mask := uint64(len(h.slots) - 1)
	for i := h.home(hash); ; i = (i + 1) & mask {
		s := &h.slots[i]
		if s.rules == nil {
			s.hash, s.rules = hash, rules
			h.n++
			return
		}
		if s.hash == hash {
			s.rules = rules
			return
		}
	}
}

func (h *hindex) grow() {
	old := h.slots
	size, shift := grownSize(len(old))
	h.slots, h.shift, h.n = make([]hslot, size), shift, 0
	for _, s := range old {
		if s.rules != nil {
			h.set(s.hash, s.rules)
		}
	}
}

// remove deletes hash with backward-shift deletion (no tombstones).
func (h *hindex) remove(hash uint64) {
	if len(h.slots) == 0 {
		return
	}
	mask := uint64(len(h.slots) - 1)
	i := h.home(hash)
	for {
		s := &h.slots[i]
		if s.rules == nil {
			return
		}
		if s.hash == hash {
			break
		}
		i = (i + 1) & mask
	}
	h.n--
	backshift(h.slots, i, func(s *hslot) (uint64, bool) { return h.home(s.hash), s.rules != nil })
}

// grownSize is the next size of an open-addressing table of size n (16
// at first, then doubling) and the shift that takes a hash to a slot.
func grownSize(n int) (int, uint8) {
	size := 16
	if n > 0 {
		size = n * 2
	}
	return size, uint8(64 - bits.TrailingZeros(uint(size)))
}

// backshift empties slot i of an open-addressing table and moves the
// entries after it back where their probe runs need them (backward-shift
// deletion, no tombstones). home gives a slot's home, false if it is empty.
func backshift[S any](slots []S, i uint64, home func(*S) (uint64, bool)) {
	mask := uint64(len(slots) - 1)
	var empty S
	for {
		slots[i] = empty
		j := i
		for {
			j = (j + 1) & mask
			hj, used := home(&slots[j])
			if !used {
				return
			}
			// Move slot j back into the hole at i if its home is not in (i, j].
			if (j > i && (hj <= i || hj > j)) || (j < i && hj <= i && hj > j) {
				slots[i] = slots[j]
				i = j
				break
			}
		}
	}
}

// reset removes every entry and keeps the slots for new ones.
func (h *hindex) reset() {
	clear(h.slots)
	h.n = 0
}

// each calls fn for every bucket.
func (h *hindex) each(fn func([]*Rule) bool) {
	for _, s := range h.slots {
		if s.rules != nil && !fn(s.rules) {
			return
		}
	}
}
