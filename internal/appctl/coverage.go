package appctl

import (
	"context"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strings"
	"sync"
	"time"
)

func parseAddr(s string) (netip.Addr, error) { return netip.ParseAddr(s) }

// coverage keeps counter totals sampled every 5 s for an hour, from which
// coverage/show prints OVS's three average rates.
type coverage struct {
	mu      sync.Mutex
	samples []map[string]uint64 // oldest first, at most coverageSamples
}

const (
	coverageInterval = 5 * time.Second
	coverageSamples  = 720 + 1 // an hour of 5 s samples, plus the start
)

// counters are govs's event counters under coverage/show names.
func (a *App) counters() (names []string, vals map[string]uint64) {
	vals = map[string]uint64{}
	for _, dp := range a.D.BridgeDatapaths() {
		st, _ := dp.CacheStats()
		vals["flowcache_hit"] += st.Hits
		vals["flowcache_miss"] += st.Misses
		vals["flowcache_upcall"] += st.Upcalls
		vals["flowcache_install"] += st.Installed
		vals["flowcache_evict"] += st.Evictions
		vals["flowcache_flush"] += st.Flushes
		vals["flowcache_uncachable"] += st.Uncachable
		stalls, reopened := dp.WatchdogStats()
		vals["datapath_port_stall"] += stalls
		vals["datapath_port_reopen"] += reopened
	}
	cs := a.D.Conntrack().Stats()
	vals["conntrack_invalid"] = cs.Invalid
	vals["conntrack_full"] = cs.Full
	vals["conntrack_nat_fail"] = cs.NATFail
	vals["conntrack_fragment"] = cs.Fragments
	vals["unixctl_panic"] = a.Server.Panics.Load()
	names = []string{"flowcache_hit", "flowcache_miss", "flowcache_upcall", "flowcache_install", "flowcache_evict",
		"flowcache_flush", "flowcache_uncachable", "conntrack_invalid", "conntrack_full", "conntrack_nat_fail",
		"conntrack_fragment", "unixctl_panic", "datapath_port_stall", "datapath_port_reopen"}
	return names, vals
}

// RunCoverage samples the counters until ctx ends.
func (a *App) RunCoverage(ctx context.Context) {
	t := time.NewTicker(coverageInterval)
	defer t.Stop()
	a.sample()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.sample()
		}
	}
}

func (a *App) sample() {
	_, v := a.counters()
	a.cov.mu.Lock()
	defer a.cov.mu.Unlock()
	a.cov.samples = append(a.cov.samples, v)
	if len(a.cov.samples) > coverageSamples {
		a.cov.samples = a.cov.samples[1:]
	}
}

// rate is the average per second of a counter over the last n intervals
// (fewer when the daemon is younger: the oldest sample then).
func (c *coverage) rate(name string, now uint64, n int) float64 {
	if len(c.samples) == 0 {
		return 0
	}
	i := max(len(c.samples)-n, 0)
	return float64(now-min(c.samples[i][name], now)) / (float64(n) * coverageInterval.Seconds())
}

func (a *App) coverageShow([]string) (string, error) {
	names, vals := a.counters()
	h := fnv.New32a()
	for _, n := range names {
		h.Write([]byte(n))
	}
	a.cov.mu.Lock()
	defer a.cov.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=%08x:\n", h.Sum32())
	never := 0
	for _, n := range names {
		v := vals[n]
		if v == 0 {
			never++
			continue
		}
		fmt.Fprintf(&b, "%-24s %5.1f/sec %9.3f/sec %13.4f/sec   total: %d\n", n,
			a.cov.rate(n, v, 1), a.cov.rate(n, v, 12), a.cov.rate(n, v, 720), v)
	}
	fmt.Fprintf(&b, "%d events never hit\n", never)
	return b.String(), nil
}
