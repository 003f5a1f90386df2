// Package metrics serves govs-vswitchd's counters as Prometheus metrics
// (`govs-vswitchd --metrics-address=:PORT`, path /metrics).
//
// Nothing here runs on the packet path: a scrape asks the daemon for a
// Snapshot of the counters the datapath already keeps (the same numbers
// `ovs-ofctl dump-ports`, `dump-tables` and `govs dump-cache` print) and
// turns it into metrics, so scraping costs the switch nothing between
// scrapes. Names follow the Prometheus conventions: govs_ prefix, _total
// for counters, base units (bytes).
package metrics

import (
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Snapshot is every counter of a daemon at one moment.
type Snapshot struct {
	Bridges   []Bridge
	Conntrack Conntrack
	OpenFlow  OpenFlow
}

// OpenFlow is the controller connections' counters (all bridges).
type OpenFlow struct {
	// PacketInsQueued and PacketInsDropped: packet-ins queued for a
	// controller, and dropped because its queue was full.
	PacketInsQueued, PacketInsDropped uint64
	// BacklogDisconnects: connections closed because their peer did not
	// read its replies; PanicsRecovered: requests whose handling panicked.
	BacklogDisconnects, PanicsRecovered uint64
}

// Bridge is one bridge's counters.
type Bridge struct {
	Name  string
	Ports []Port
	// Flows is the number of flows in each table that has any.
	Flows map[uint8]int
	Cache Cache
	// Drops counts frames the bridge dropped, by reason.
	Drops map[string]uint64
	// Offload is the kernel fast path (nil: off).
	Offload *Offload
}

// Offload is the kernel fast path's counters.
type Offload struct {
	Entries        int
	Packets, Bytes uint64 // forwarded by the kernel
}

// Port is one port's counters (OVS's struct netdev_stats).
type Port struct {
	Name                                    string
	OFPort                                  uint32
	RxPackets, RxBytes, RxDropped, RxErrors uint64
	TxPackets, TxBytes, TxDropped, TxErrors uint64
}

// Cache is the megaflow cache's counters summed over a bridge's readers.
type Cache struct {
	Hits, Misses, Upcalls, Installed, Evictions, Flushes uint64
	Entries                                              int
}

// Conntrack is the connection tracker's counters.
type Conntrack struct {
	Connections int
	Limit       int
	// Zones holds the connections of each zone that has any.
	Zones map[uint16]int
	// LimitHits are commits refused by a global or zone limit.
	LimitHits, Invalid, NATFailures uint64
}

// Source returns the daemon's counters now.
type Source func() Snapshot

var (
	bridgePort = []string{"bridge", "port"}

	portDescs = []struct {
		name, help string
		value      func(*Port) uint64
	}{
		{"govs_port_rx_packets_total", "Frames received on the port.", func(p *Port) uint64 { return p.RxPackets }},
		{"govs_port_rx_bytes_total", "Bytes received on the port.", func(p *Port) uint64 { return p.RxBytes }},
		{"govs_port_rx_dropped_total", "Frames the port could not receive (ring full, port config).", func(p *Port) uint64 { return p.RxDropped }},
		{"govs_port_rx_errors_total", "Frames received but not handed to the pipeline (bad length).", func(p *Port) uint64 { return p.RxErrors }},
		{"govs_port_tx_packets_total", "Frames sent on the port.", func(p *Port) uint64 { return p.TxPackets }},
		{"govs_port_tx_bytes_total", "Bytes sent on the port.", func(p *Port) uint64 { return p.TxBytes }},
		{"govs_port_tx_dropped_total", "Frames not sent (length, no room, port config).", func(p *Port) uint64 { return p.TxDropped }},
		{"govs_port_tx_errors_total", "Frames whose transmission failed.", func(p *Port) uint64 { return p.TxErrors }},
	}

	cacheDescs = []struct {
		name, help string
		value      func(*Cache) uint64
	}{
		{"govs_flowcache_hits_total", "Packets served from the megaflow cache.", func(c *Cache) uint64 { return c.Hits }},
		{"govs_flowcache_misses_total", "Packets that missed the megaflow cache.", func(c *Cache) uint64 { return c.Misses }},
		{"govs_flowcache_upcalls_total", "OpenFlow pipeline runs for cache misses.", func(c *Cache) uint64 { return c.Upcalls }},
		{"govs_flowcache_installed_total", "Megaflows installed.", func(c *Cache) uint64 { return c.Installed }},
		{"govs_flowcache_evictions_total", "Megaflows evicted for space or age.", func(c *Cache) uint64 { return c.Evictions }},
		{"govs_flowcache_flushes_total", "Whole-cache invalidations after pipeline changes.", func(c *Cache) uint64 { return c.Flushes }},
	}

	flowsDesc        = prometheus.NewDesc("govs_flows", "OpenFlow flows in the table.", []string{"bridge", "table"}, nil)
	cacheEntriesDesc = prometheus.NewDesc("govs_flowcache_entries", "Megaflows in the cache.", []string{"bridge"}, nil)
	dropsDesc        = prometheus.NewDesc("govs_datapath_drops_total", "Frames the bridge dropped, by reason.", []string{"bridge", "reason"}, nil)
	ctConnsDesc      = prometheus.NewDesc("govs_conntrack_connections", "Connections held by the connection tracker.", nil, nil)
	ctLimitDesc      = prometheus.NewDesc("govs_conntrack_connections_limit", "The global connection limit.", nil, nil)
	ctZoneDesc       = prometheus.NewDesc("govs_conntrack_zone_connections", "Connections held in the zone.", []string{"zone"}, nil)
	ctLimitHitsDesc  = prometheus.NewDesc("govs_conntrack_limit_hits_total", "Commits refused by a global or zone connection limit.", nil, nil)
	ctInvalidDesc    = prometheus.NewDesc("govs_conntrack_invalid_total", "Packets the tracker marked invalid.", nil, nil)
	ctNATFailDesc    = prometheus.NewDesc("govs_conntrack_nat_failures_total", "Commits refused because no NAT tuple was free.", nil, nil)
	offEntriesDesc   = prometheus.NewDesc("govs_offload_entries", "Megaflows installed in the kernel fast path.", []string{"bridge"}, nil)
	offPacketsDesc   = prometheus.NewDesc("govs_offload_packets_total", "Packets the kernel fast path forwarded.", []string{"bridge"}, nil)
	offBytesDesc     = prometheus.NewDesc("govs_offload_bytes_total", "Bytes the kernel fast path forwarded.", []string{"bridge"}, nil)
	pinQueuedDesc    = prometheus.NewDesc("govs_packet_ins_queued_total", "Packet-ins queued for a controller.", nil, nil)
	pinDroppedDesc   = prometheus.NewDesc("govs_packet_ins_dropped_total", "Packet-ins dropped because the controller's queue was full.", nil, nil)
	backlogDesc      = prometheus.NewDesc("govs_openflow_backlog_disconnects_total", "OpenFlow connections closed because the peer did not read its replies.", nil, nil)
	panicsDesc       = prometheus.NewDesc("govs_openflow_panics_recovered_total", "OpenFlow requests whose handling panicked and was recovered.", nil, nil)
)

// collector turns a Snapshot into metrics at scrape time.
type collector struct {
	src       Source
	portDescs []*prometheus.Desc
	cacheDesc []*prometheus.Desc
}

// NewCollector returns a prometheus.Collector over src.
func NewCollector(src Source) prometheus.Collector {
	c := &collector{src: src}
	for _, d := range portDescs {
		c.portDescs = append(c.portDescs, prometheus.NewDesc(d.name, d.help, bridgePort, nil))
	}
	for _, d := range cacheDescs {
		c.cacheDesc = append(c.cacheDesc, prometheus.NewDesc(d.name, d.help, []string{"bridge"}, nil))
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.portDescs {
		ch <- d
	}
	for _, d := range c.cacheDesc {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{flowsDesc, cacheEntriesDesc, dropsDesc, ctConnsDesc, ctLimitDesc,
		ctZoneDesc, ctLimitHitsDesc, ctInvalidDesc, ctNATFailDesc, offEntriesDesc, offPacketsDesc, offBytesDesc,
		pinQueuedDesc, pinDroppedDesc, backlogDesc, panicsDesc} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for i := range s.Bridges {
		b := &s.Bridges[i]
		for j := range b.Ports {
			p := &b.Ports[j]
			for k, d := range portDescs {
				counter(c.portDescs[k], d.value(p), b.Name, p.Name)
			}
		}
		for table, n := range b.Flows {
			gauge(flowsDesc, n, b.Name, strconv.Itoa(int(table)))
		}
		for k, d := range cacheDescs {
			counter(c.cacheDesc[k], d.value(&b.Cache), b.Name)
		}
		gauge(cacheEntriesDesc, b.Cache.Entries, b.Name)
		for reason, n := range b.Drops {
			counter(dropsDesc, n, b.Name, reason)
		}
		if o := b.Offload; o != nil {
			gauge(offEntriesDesc, o.Entries, b.Name)
			counter(offPacketsDesc, o.Packets, b.Name)
			counter(offBytesDesc, o.Bytes, b.Name)
		}
	}
	counter(pinQueuedDesc, s.OpenFlow.PacketInsQueued)
	counter(pinDroppedDesc, s.OpenFlow.PacketInsDropped)
	counter(backlogDesc, s.OpenFlow.BacklogDisconnects)
	counter(panicsDesc, s.OpenFlow.PanicsRecovered)
	ct := &s.Conntrack
	gauge(ctConnsDesc, ct.Connections)
	gauge(ctLimitDesc, ct.Limit)
	for zone, n := range ct.Zones {
		gauge(ctZoneDesc, n, strconv.Itoa(int(zone)))
	}
	counter(ctLimitHitsDesc, ct.LimitHits)
	counter(ctInvalidDesc, ct.Invalid)
	counter(ctNATFailDesc, ct.NATFailures)
}

// Handler serves src's metrics (and the Go runtime's and the process's)
// in the Prometheus text format.
func Handler(src Source) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(src), prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Serve listens on addr (host:port, ":9100") and serves /metrics until
// the listener is closed; it returns the listener so the caller can close
// it and learn the port chosen for ":0". It also serves Go's profiles
// under /debug/pprof/ (`go tool pprof http://ADDR/debug/pprof/heap`): how
// the daemon's memory is measured against Open vSwitch's.
func Serve(addr string, src Source) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler(src))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go http.Serve(ln, mux)
	return ln, nil
}
