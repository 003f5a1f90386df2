package ofpact

import "unsafe"

// typeKey identifies the dynamic type of the interface value a by its
// type word: the itab of the (interface, concrete type) pair, which Go
// keeps unique (it is what a type switch compares). Only values of one
// interface type are compared with each other here.
func typeKey[I any](a I) uintptr {
	return (*[2]uintptr)(unsafe.Pointer(&a))[0]
}

// typeIndex maps type keys to small integers: open addressing with
// Fibonacci hashing over a power-of-two table filled at init. A lookup
// costs a few instructions, about what the type switches it replaces did
// (a Go map of reflect.Type cost several times more on the flow-mod path).
type typeIndex struct {
	keys []uintptr
	vals []int32
	bits uint
	n    int
}

func (t *typeIndex) slot(k uintptr) uintptr {
	return uintptr(uint64(k)*0x9e3779b97f4a7c15>>(64-t.bits)) & uintptr(len(t.keys)-1)
}

// add maps k to v; k must not be 0 or already present.
func (t *typeIndex) add(k uintptr, v int32) {
	if 2*(t.n+1) > len(t.keys) {
		old, oldVals := t.keys, t.vals
		t.bits = max(6, t.bits+1)
		t.keys, t.vals, t.n = make([]uintptr, 1<<t.bits), make([]int32, 1<<t.bits), 0
		for i, ok := range old {
			if ok != 0 {
				t.add(ok, oldVals[i])
			}
		}
	}
	h := t.slot(k)
	for t.keys[h] != 0 {
		h = (h + 1) & uintptr(len(t.keys)-1)
	}
	t.keys[h], t.vals[h] = k, v
	t.n++
}

// find returns the value of k, or -1.
func (t *typeIndex) find(k uintptr) int32 {
	if len(t.keys) == 0 {
		return -1
	}
	for h := t.slot(k); ; h = (h + 1) & uintptr(len(t.keys)-1) {
		switch t.keys[h] {
		case k:
			return t.vals[h]
		case 0:
			return -1
		}
	}
}
