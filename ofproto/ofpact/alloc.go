package ofpact

import "github.com/govs-project/govs/flowtable"

// pool hands out action-list and byte slices for one translation from
// caller-provided backing arrays, falling back to the heap when they are
// full. Translating a flow-mod this way needs one allocation for the result
// plus one per action struct, instead of one per slice as well.
type pool struct {
	acts  []flowtable.Action
	bytes []byte
}

// actions returns a zero-length slice with capacity n.
func (p *pool) actions(n int) []flowtable.Action {
	if n == 0 {
		return nil
	}
	if cap(p.acts)-len(p.acts) >= n {
		s := p.acts[len(p.acts) : len(p.acts) : len(p.acts)+n]
		p.acts = p.acts[:len(p.acts)+n]
		return s
	}
	return make([]flowtable.Action, 0, n)
}

// byteSlice returns n zeroed bytes.
func (p *pool) byteSlice(n int) []byte {
	if cap(p.bytes)-len(p.bytes) >= n {
		s := p.bytes[len(p.bytes) : len(p.bytes)+n : len(p.bytes)+n]
		p.bytes = p.bytes[:len(p.bytes)+n]
		clear(s)
		return s
	}
	return make([]byte, n)
}
