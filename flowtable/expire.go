package flowtable

import "time"

// Flow-removed reasons (OFPRR_*).
const (
	RemovedIdleTimeout = 0
	RemovedHardTimeout = 1
	RemovedDelete      = 2
	RemovedGroupDelete = 3
)

// Expired is a flow that timed out.
type Expired struct {
	Rule   *Rule
	Reason uint8 // RemovedIdleTimeout or RemovedHardTimeout
}

// timedState is what expiry tracks for a flow with a timeout.
type timedState struct {
	lastPackets uint64
	lastActive  time.Time
}

// ExpireFlows removes the flows whose hard timeout has passed or that saw
// no packet for their idle timeout, and returns them. A flow's activity is
// read from its packet counter, so packets the fast path forwarded count
// once their statistics reach the flow (after each batch).
func (p *Pipeline) ExpireFlows(now time.Time) []Expired {
	defer p.unlockWrite(p.lockWrite())
	var out []Expired
	for r, st := range p.timed {
		t := p.cur().tables[r.Table]
		if m := r.Match(); t == nil || t.cls(r).find(&m, r.Priority) != r {
			delete(p.timed, r) // replaced or deleted meanwhile
			continue
		}
		if n := r.Stats.Packets.Load(); n != st.lastPackets {
			st.lastPackets, st.lastActive = n, now
		}
		reason := -1
		switch {
		case r.HardTimeout != 0 && now.Sub(r.Stats.Created) >= time.Duration(r.HardTimeout)*time.Second:
			reason = RemovedHardTimeout
		case r.IdleTimeout != 0 && now.Sub(st.lastActive) >= time.Duration(r.IdleTimeout)*time.Second:
			reason = RemovedIdleTimeout
		}
		if reason < 0 {
			continue
		}
		p.removeRule(t, r)
		p.nRules--
		delete(p.timed, r)
		out = append(out, Expired{Rule: r, Reason: uint8(reason)})
	}
	if len(out) > 0 {
		p.bumpLocked()
	}
	p.noteBulk(len(out))
	return out
}
