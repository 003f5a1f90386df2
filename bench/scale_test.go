package bench

import (
	"strings"
	"testing"
)

// TestScalePipeline: the scale scenarios find two local pods of the
// generated node that may talk TCP on tcpPort, with the generated
// addresses, and both in one /22 so they reach each other without a
// gateway.
func TestScalePipeline(t *testing.T) {
	pl, err := scalePipeline()
	if err != nil {
		t.Fatal(err)
	}
	c, s := pl.client, pl.server
	if c.ip == s.ip || c.ofport == s.ofport || c.ofport < 3 || s.ofport < 3 {
		t.Fatalf("client %+v server %+v: want two distinct pod ports (>= 3)", c, s)
	}
	if !strings.HasPrefix(c.cidr(), "10.64.") || !strings.HasSuffix(c.cidr(), "/22") || !strings.HasSuffix(s.cidr(), "/22") {
		t.Errorf("pods %s and %s are not in the local /22", c.cidr(), s.cidr())
	}
}

// TestParseCacheStats reads the megaflow counters both switches print.
func TestParseCacheStats(t *testing.T) {
	govs := "br-int:\n  entries: 12\n  hits: 3456\n  misses: 78 (97.8% hit rate)\n  upcalls: 78\n"
	if v, err := number(govsEntries, govs, 1); err != nil || v != 12 {
		t.Errorf("govs entries: %v %v", v, err)
	}
	if v, err := number(govsMisses, govs, 1); err != nil || v != 78 {
		t.Errorf("govs misses: %v %v", v, err)
	}
	ovs := "netdev@ovs-netdev:\n  lookups: hit:1234 missed:56 lost:0\n  flows: 7\n  port 0: ovs-netdev (tap)\n"
	if v, err := number(ovsLookups, ovs, 2); err != nil || v != 56 {
		t.Errorf("ovs missed: %v %v", v, err)
	}
	if v, err := number(ovsFlows, ovs, 1); err != nil || v != 7 {
		t.Errorf("ovs flows: %v %v", v, err)
	}
	if _, err := number(ovsFlows, "nothing", 1); err == nil {
		t.Error("no error for output without the counter")
	}
	m := map[string]float64{}
	reportCache(m, "crr", cacheStats{hits: 10, misses: 10}, cacheStats{flows: 4, hits: 100, misses: 20}, 25)
	if m["crr_megaflows"] != 4 || m["crr_hit_rate"] != 0.9 || m["crr_lookups_per_conn"] != 4 {
		t.Errorf("reportCache: %v", m)
	}
}
