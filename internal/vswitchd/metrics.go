package vswitchd

import (
	"github.com/govs-project/govs/internal/metrics"
	"github.com/govs-project/govs/ofproto"
)

// MetricsSnapshot reads every counter the Prometheus endpoint serves:
// the numbers of dump-ports, dump-tables, dump-cache and the conntrack
// counters, read the same way those commands read them.
func (d *Daemon) MetricsSnapshot() metrics.Snapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	var s metrics.Snapshot
	for name, b := range d.bridges {
		mb := metrics.Bridge{Name: name, Flows: b.dp.Pipeline().TableFlowCounts(), Drops: map[string]uint64{}}
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
		mb.Drops["panic"] = b.dp.Panics()
		if m := b.dp.Offload(); m != nil {
			st := m.Stats()
			mb.Offload = &metrics.Offload{Entries: st.Entries, Packets: st.Packets, Bytes: st.Bytes}
		}
		cs, entries := b.dp.CacheStats()
		mb.Cache = metrics.Cache{Hits: cs.Hits, Misses: cs.Misses, Upcalls: cs.Upcalls, Installed: cs.Installed,
			Evictions: cs.Evictions, Flushes: cs.Flushes, Entries: entries}
		s.Bridges = append(s.Bridges, mb)
	}
	s.OpenFlow = metrics.OpenFlow{
		PacketInsQueued: ofproto.PacketInsQueued.Load(), PacketInsDropped: ofproto.PacketInsDropped.Load(),
		BacklogDisconnects: ofproto.BacklogDisconnects.Load(), PanicsRecovered: ofproto.PanicsRecovered.Load(),
	}
	ct := d.tracker.Stats()
	s.Conntrack = metrics.Conntrack{
		Connections: d.tracker.Count(), Limit: d.tracker.GlobalLimit(), Zones: d.tracker.ZoneCounts(),
		LimitHits: ct.Full, Invalid: ct.Invalid, NATFailures: ct.NATFail,
	}
	return s
}
