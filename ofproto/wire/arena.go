package wire

// arena hands out zeroed T values and contiguous []T runs from chunks that
// are reused after reset. Pointers into a chunk stay valid until reset
// because chunks are never reallocated, only added.
type arena[T any] struct {
	chunks [][]T
	ci     int // current chunk
	used   int // slots used in the current chunk
}

// alloc returns n contiguous zeroed slots.
func (a *arena[T]) alloc(n int) []T {
	if n == 0 {
		return nil
	}
	for {
		if a.ci < len(a.chunks) {
			c := a.chunks[a.ci]
			if len(c)-a.used >= n {
				s := c[a.used : a.used+n : a.used+n]
				a.used += n
				clear(s)
				return s
			}
			if a.used == 0 {
				// A reused chunk too small for this run: replace it.
				a.chunks[a.ci] = make([]T, max(n, 2*len(c)))
				continue
			}
			a.ci++
			a.used = 0
			continue
		}
		size := 4
		if len(a.chunks) > 0 {
			size = 2 * len(a.chunks[len(a.chunks)-1])
		}
		a.chunks = append(a.chunks, make([]T, max(n, size)))
	}
}

func (a *arena[T]) reset() { a.ci, a.used = 0, 0 }

// newIn returns a zeroed *T from a, or from the heap when a is nil.
func newIn[T any](a *arena[T]) *T {
	if a == nil {
		return new(T)
	}
	return &a.alloc(1)[0]
}

// sliceIn returns n zeroed slots from a, or from the heap when a is nil.
func sliceIn[T any](a *arena[T], n int) []T {
	if a == nil {
		if n == 0 {
			return nil
		}
		return make([]T, n)
	}
	return a.alloc(n)
}
