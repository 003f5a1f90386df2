package flowtable

// Execute runs an action list on pkt outside any flow, the way OVS runs
// the actions of an OpenFlow packet-out: pkt must have been extracted with
// its in_port set (CONTROLLER and LOCAL are allowed). Besides every action
// a flow may hold, the list may output to TABLE, which sends the packet
// through the pipeline from table 0 as if it had been received on in_port
// (OpenFlow 1.3 §7.3.7, OFPP_TABLE is only valid in packet-out). A
// resubmit without a table looks up table 0. Packet-ins raised here carry
// table 0 and the cookie 0xffffffffffffffff, since no flow caused them.
func (p *Pipeline) Execute(pkt *Packet, acts []Action, sink Sink, tr *Trace) Result {
	x := p.newControllerXlate(pkt, sink, tr)
	x.packetOut = true
	// Output to TABLE runs the pipeline like a resubmit: an exit action
	// or a pause inside the walk also ends the packet-out's own list, as
	// in OVS.
	return p.runActions(&x, acts)
}
