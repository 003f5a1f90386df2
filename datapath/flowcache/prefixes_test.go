package flowcache_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// TestCachePrefixMegaflows: traffic from and to many addresses through
// route and policy rules of many prefix lengths (local pods /32, remote
// nodes' /24, the Service /12, source rules) is forwarded from the cache
// as by the pipeline, for every packet, while routes come and go; and the
// prefix tries keep one megaflow per prefix, not per address.
func TestCachePrefixMegaflows(t *testing.T) {
	var b strings.Builder
	b.WriteString("table=0,priority=0 actions=drop\n")
	b.WriteString("table=0,priority=10,ip actions=resubmit(,1)\n")
	b.WriteString("table=1,priority=0 actions=output:2\n")
	b.WriteString("table=1,priority=100,ip,nw_dst=10.96.0.0/12 actions=output:3\n")
	b.WriteString("table=1,priority=300,ip,nw_src=192.168.7.9 actions=drop\n")
	b.WriteString("table=1,priority=250,ip,nw_src=192.168.8.0/24,nw_dst=10.10.0.0/16 actions=output:5\n")
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "table=1,priority=200,ip,nw_dst=10.10.%d.0/24 actions=output:4\n", i)
	}
	for i := 2; i <= 30; i++ {
		fmt.Fprintf(&b, "table=1,priority=210,ip,nw_dst=10.10.0.%d actions=output:5\n", i)
	}
	slow, fast := pipeline(t, b.String()), pipeline(t, b.String())
	cache := flowcache.New(fast)
	r := rand.New(rand.NewSource(23))
	addr := func() string {
		switch r.Intn(5) {
		case 0:
			return fmt.Sprintf("10.10.0.%d", 1+r.Intn(60))
		case 1:
			return fmt.Sprintf("10.10.%d.%d", r.Intn(30), 1+r.Intn(250))
		case 2:
			return fmt.Sprintf("10.%d.%d.%d", 96+r.Intn(20), r.Intn(256), 1+r.Intn(250))
		case 3:
			return fmt.Sprintf("192.168.%d.%d", 6+r.Intn(4), 1+r.Intn(250))
		}
		return fmt.Sprintf("%d.%d.%d.%d", 1+r.Intn(200), r.Intn(256), r.Intn(256), 1+r.Intn(250))
	}
	// Routes that come and go: a new /32 inside a /24, a /28, a /32 source.
	mods := []string{
		"table=1,priority=220,ip,nw_dst=10.10.3.77 actions=output:6",
		"table=1,priority=215,ip,nw_dst=10.10.5.16/28 actions=output:6",
		"table=1,priority=320,ip,nw_src=192.168.9.9 actions=output:6",
		"table=1,priority=205,ip,nw_dst=10.10.0.0/26 actions=output:6",
	}
	const n = 6000
	distinct := map[string]bool{}
	most := 0 // megaflows before a change flushes them
	for i := range n {
		if i%500 == 499 {
			most = max(most, cache.Len())
			m := mods[(i/500)%len(mods)]
			if (i/500/len(mods))%2 == 1 {
				m = "-" + m // the second round takes them out again
			}
			for _, p := range []*flowtable.Pipeline{slow, fast} {
				var err error
				if f, ok := strings.CutPrefix(m, "-"); ok {
					var fl *flowtext.FlowMod
					if fl, err = flowtext.ParseFlow(f, nil); err == nil {
						ff := flowtable.FlowFilter{Table: fl.Table, Match: fl.Match, Priority: fl.Priority, Strict: true,
							OutPort: flowtable.PortNone, OutGroup: 0xffffffff}
						_, err = p.Apply([]flowtable.FlowOp{{Kind: flowtable.OpDeleteStrict, Filter: &ff}})
					}
				} else {
					err = flowtext.Load(p, m, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		src, dst := addr(), addr()
		distinct[src+">"+dst] = true
		spec := fmt.Sprintf("in_port=1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,udp,nw_src=%s,nw_dst=%s,nw_ttl=64,tp_src=%d,tp_dst=53",
			src, dst, 1024+r.Intn(60000))
		k, frame := frameOf(t, spec)
		want := runSlow(slow, k, frame)
		got := runFast(cache, k, frame)
		if !sameOuts(want, got) {
			t.Fatalf("packet %d %s:\n pipeline: %v\n cache:    %v", i, spec, describe(want), describe(got))
		}
	}
	st := cache.Stats()
	t.Logf("%d packets, %d address pairs: at most %d megaflows, %d hits, %d misses", n, len(distinct), most, st.Hits, st.Misses)
	// Without prefix tracking nearly every address pair is a megaflow of
	// its own (500 per change here); with it, one per prefix pair.
	if most > 200 || st.Misses > n/3 {
		t.Errorf("at most %d megaflows, %d misses of %d packets: the tries do not narrow", most, st.Misses, n)
	}
}
