package ofproto

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// RunFailOpen runs Open vSwitch's fail-open for a bridge in
// fail_mode=standalone with controllers (ofproto/fail-open.c): once no
// controller has been connected for three inactivity probe intervals
// (one to probe, one to wait for the reply, one to reconnect), every
// packet is switched as NORMAL above all flows; when a controller is
// connected again the flows are back in charge. Service connections
// (ovs-ofctl on the management socket) are not controllers.
func (b *Bridge) RunFailOpen(ctx context.Context, probeInterval time.Duration) {
	trigger := 3 * probeInterval
	tick := max(min(probeInterval/4, time.Second), 10*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now() // as OVS: the disconnection counts from the start
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if b.hasController() {
				last = now
				if b.p.SetFailOpen(false) {
					b.log.Info("fail-open: a controller is connected, flows are in charge again")
				}
				continue
			}
			if now.Sub(last) >= trigger && b.p.SetFailOpen(true) {
				b.log.Warn("fail-open: no controller connected, switching as NORMAL (fail_mode standalone)",
					zap.Duration("disconnected", now.Sub(last)))
			}
		}
	}
}

// hasController reports whether a controller connection (not a service
// connection) is up.
func (b *Bridge) hasController() bool {
	for _, c := range b.connections() {
		if !c.opts.Service {
			return true
		}
	}
	return false
}
