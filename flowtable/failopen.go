package flowtable

// failOpenActions are the actions of OVS's fail-open flow.
var failOpenActions = []Action{&Output{Port: PortNormal}}

// SetFailOpen turns fail-open mode on or off and reports whether it
// changed; a change invalidates cached forwarding decisions.
func (p *Pipeline) SetFailOpen(on bool) bool {
	if p.FailOpen.Swap(on) == on {
		return false
	}
	p.BumpGeneration()
	return true
}
