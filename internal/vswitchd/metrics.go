package vswitchd

import (
	"github.com/govs-project/govs/internal/metrics"
)

// MetricsSnapshot reads every counter the Prometheus endpoint serves:
// the numbers of dump-ports, dump-tables, dump-cache and the conntrack
// counters, read the same way those commands read them.
func (d *Daemon) MetricsSnapshot() metrics.Snapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	var s metrics.Snapshot
	for name, b := range d.bridges {
		mb := metrics.Bridge{Name: name, Flows: b.dp.Pipeline().TableStats(), Drops: map[string]uint64{}}
		for _, pi := range b.dp.Ports() {
			st := pi.Stats
			mb.Ports = append(mb.Ports, metrics.Port{
				Name: pi.Name, OFPort: pi.OFPort,
				RxPackets: st.RxPackets, RxBytes: st.RxBytes, RxDropped: st.RxDropped, RxErrors: st.RxErrors,
				TxPackets: st.TxPackets, TxBytes: st.TxBytes, TxDropped: st.TxDropped, TxErrors: st.TxErrors,
			})
			mb.Drops["rx_length"] += st.RxLengthErrors
			mb.Drops["rx_no_room"] += st.RxDropped
			mb.Drops["tx_no_room"] += st.TxDropped
			mb.Drops["tx_error"] += st.TxErrors
		}
		cs, entries := b.dp.CacheStats()
		mb.Cache = metrics.Cache{Hits: cs.Hits, Misses: cs.Misses, Upcalls: cs.Upcalls, Installed: cs.Installed,
			Evictions: cs.Evictions, Flushes: cs.Flushes, Entries: entries}
		s.Bridges = append(s.Bridges, mb)
	}
	ct := d.tracker.Stats()
	s.Conntrack = metrics.Conntrack{
		Connections: d.tracker.Count(), Limit: d.tracker.GlobalLimit(), Zones: d.tracker.ZoneCounts(),
		LimitHits: ct.Full, Invalid: ct.Invalid, NATFailures: ct.NATFail,
	}
	return s
}
