package flowtable

// TraceRun walks pkt through the pipeline from table 0 for
// `ovs-appctl ofproto/trace`: like Run, but without side effects on the
// switch (no flow or group counters, no MAC learning, no learned flows),
// and each ct() is answered by ct, which stands for the connection
// tracker (the trace decides the ct_state a recirculation resumes with).
func (p *Pipeline) TraceRun(pkt *Packet, ct Conntrack, sink Sink, tr *Trace) Result {
	x := xlate{p: p, pkt: pkt, sink: sink, tr: tr, dry: true, traceCT: ct}
	x.begin()
	p.mu.RLock()
	x.runTable(0)
	x.finish(0)
	p.mu.RUnlock()
	if tr != nil && x.res.Outputs+x.res.PacketIns == 0 {
		tr.Final = pkt.Key
	}
	return x.res
}
