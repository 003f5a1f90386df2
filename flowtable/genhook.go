package flowtable

// SetGenerationHook makes every BumpGeneration call f with the new
// generation before it returns: a cache the packet loop cannot reach in
// time (the kernel fast path) invalidates its entries there. nil removes it.
func (p *Pipeline) SetGenerationHook(f func(gen uint64)) {
	if f == nil {
		p.genHook.Store(nil)
		return
	}
	p.genHook.Store(&f)
}

// BumpGeneration marks a change that can alter a lookup: caches compare
// Generation and drop stale entries.
func (p *Pipeline) BumpGeneration() {
	g := p.Generation.Add(1)
	if f := p.genHook.Load(); f != nil {
		(*f)(g)
	}
}
