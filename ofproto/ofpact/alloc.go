package ofpact

import "github.com/govs-project/govs/flowtable"

// Pool is inline backing for the action lists and set-field values of a
// typical flow: a translation takes its slices here while they last and
// from the heap after, so translating a flow-mod costs one allocation for
// the result plus one per action struct, instead of one per slice as well.
// A translate.FlowMod embeds one; a nil *Pool always uses the heap.
type Pool struct {
	acts          [8]flowtable.Action
	bytes         [64]byte
	nActs, nBytes int
}

// actions returns a zero-length slice with capacity n.
func (p *Pool) actions(n int) []flowtable.Action {
	if n == 0 {
		return nil
	}
	if p != nil && len(p.acts)-p.nActs >= n {
		s := p.acts[p.nActs : p.nActs : p.nActs+n]
		p.nActs += n
		return s
	}
	return make([]flowtable.Action, 0, n)
}

// byteSlice returns n zeroed bytes.
func (p *Pool) byteSlice(n int) []byte {
	if p != nil && len(p.bytes)-p.nBytes >= n {
		s := p.bytes[p.nBytes : p.nBytes+n : p.nBytes+n]
		p.nBytes += n
		clear(s)
		return s
	}
	return make([]byte, n)
}
