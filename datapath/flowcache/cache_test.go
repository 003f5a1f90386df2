package flowcache_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/ofproto/flowtext"
)

type out struct {
	port  uint32
	frame []byte
}

type recSink struct{ outs []out }

func (s *recSink) Output(port uint32, pkt *flowtable.Packet) {
	s.outs = append(s.outs, out{port, slices.Clone(pkt.Frame)})
}
func (s *recSink) PacketIn(pkt *flowtable.Packet, pi *flowtable.PacketIn) {
	s.outs = append(s.outs, out{flowtable.PortController, slices.Clone(pkt.Frame)})
}

type portList []uint32

func (p portList) PortNumbers() []uint32 { return p }

func pipeline(t testing.TB, flows string) *flowtable.Pipeline {
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, flows, nil); err != nil {
		t.Fatal(err)
	}
	p.Conntrack = ctadapter.New()
	p.Ports = portList{1, 2, 3, 4, 35, 48, 49}
	return p
}

// packetGen makes seed-shaped packets: the seed's ports, pods, gateway
// and service addresses, protocols and TCP flags, mixed with random ones.
type packetGen struct{ r *rand.Rand }

var (
	genPorts = []int{1, 2, 3, 4, 35, 48, 49, 7}
	genMACs  = []string{"be:2c:bf:e4:ec:c5", "f2:32:d8:07:e2:a6", "f2:82:cc:96:da:bd", "4e:99:08:c1:53:be",
		"aa:bb:cc:dd:ee:ff", "02:d8:4e:3f:92:1d", "c6:f4:b5:76:10:38", "02:00:00:00:00:99"}
	genIPs = []string{"10.222.1.48", "10.222.1.47", "10.222.1.2", "10.222.1.1", "10.104.65.133", "10.222.2.34",
		"10.222.2.1", "10.222.0.5", "10.222.1.99", "8.8.8.8"}
	genTCPFlags = []string{"syn", "syn|ack", "ack", "psh|ack", "fin|ack", "rst"}
)

func (g *packetGen) pick(s []string) string { return s[g.r.Intn(len(s))] }

func (g *packetGen) next() string {
	in := genPorts[g.r.Intn(len(genPorts))]
	eth := fmt.Sprintf("in_port=%d,dl_src=%s,dl_dst=%s", in, g.pick(genMACs), g.pick(genMACs))
	src, dst := g.pick(genIPs), g.pick(genIPs)
	ttl := []int{64, 63, 1}[g.r.Intn(3)]
	switch g.r.Intn(10) {
	case 0:
		return fmt.Sprintf("%s,arp,arp_op=%d,arp_spa=%s,arp_tpa=%s,arp_sha=%s", eth, 1+g.r.Intn(2), src, dst, g.pick(genMACs))
	case 1:
		return fmt.Sprintf("%s,icmp,nw_src=%s,nw_dst=%s,nw_ttl=%d,icmp_type=8", eth, src, dst, ttl)
	case 2, 3:
		return fmt.Sprintf("%s,udp,nw_src=%s,nw_dst=%s,nw_ttl=%d,tp_src=%d,tp_dst=%d", eth, src, dst, ttl, 1000+g.r.Intn(4), []int{53, 80, 5000}[g.r.Intn(3)])
	}
	return fmt.Sprintf("%s,tcp,nw_src=%s,nw_dst=%s,nw_ttl=%d,tp_src=%d,tp_dst=%d,tcp_flags=%s", eth, src, dst, ttl,
		40000+g.r.Intn(4), []int{80, 8080, 53}[g.r.Intn(3)], g.pick(genTCPFlags))
}

func frameOf(t testing.TB, spec string) (flowtable.Key, []byte) {
	k, err := flowtext.ParsePacket(spec, nil)
	if err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	return k, flowtable.BuildFrame(&k, 10)
}

func runSlow(p *flowtable.Pipeline, k flowtable.Key, frame []byte) []out {
	var pkt flowtable.Packet
	pkt.Key.SetInPort(k.InPort())
	pkt.Extract(slices.Clone(frame))
	s := &recSink{}
	p.Run(&pkt, s, nil)
	return s.outs
}

func runFast(c *flowcache.Cache, k flowtable.Key, frame []byte) []out {
	var pkt flowtable.Packet
	pkt.Key.SetInPort(k.InPort())
	pkt.Extract(slices.Clone(frame))
	s := &recSink{}
	c.Process(&pkt, s)
	c.FlushStats()
	return s.outs
}

func sameOuts(a, b []out) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].port != b[i].port || !bytes.Equal(a[i].frame, b[i].frame) {
			return false
		}
	}
	return true
}

// TestCacheMatchesPipeline: random and seed-shaped packets through the
// seed pipelines give the same outputs and the same frames with the cache
// as without it, while flows are added and removed between packets; and
// the cache serves most packets.
func TestCacheMatchesPipeline(t *testing.T) {
	for _, tc := range []struct {
		name, flows string
	}{{"worker1", seeds.Worker1}, {"worker2", seeds.Worker2}} {
		t.Run(tc.name, func(t *testing.T) {
			slow, fast := pipeline(t, tc.flows), pipeline(t, tc.flows)
			cache := flowcache.New(fast)
			g := &packetGen{r: rand.New(rand.NewSource(1))}
			// A pool of packets, each sent several times, so connections
			// progress and the cache gets hits.
			pool := make([]string, 300)
			for i := range pool {
				pool[i] = g.next()
			}
			mods := []string{
				"table=50,priority=250,udp,tp_dst=53 actions=resubmit(,70)",
				"table=10,priority=300,ip,nw_src=10.222.1.99 actions=drop",
				"table=70,priority=300,ip,nw_dst=10.222.1.47 actions=mod_dl_dst:02:00:00:00:00:47,resubmit(,80)",
			}
			for i := 0; i < 6000; i++ {
				if i%1500 == 1499 {
					m := mods[(i/1500)%len(mods)]
					for _, p := range []*flowtable.Pipeline{slow, fast} {
						if err := flowtext.Load(p, m, nil); err != nil {
							t.Fatal(err)
						}
					}
				}
				spec := pool[g.r.Intn(len(pool))]
				k, frame := frameOf(t, spec)
				want := runSlow(slow, k, frame)
				got := runFast(cache, k, frame)
				if !sameOuts(want, got) {
					t.Fatalf("packet %d %s:\n pipeline: %v\n cache:    %v", i, spec, describe(want), describe(got))
				}
			}
			// Publish counters.
			cache.Flush()
			// Table statistics count cached hits as the pipeline would.
			slowTS, fastTS := slow.TableStats(), fast.TableStats()
			busy := 0
			for id := range slowTS {
				s, f := slowTS[id], fastTS[id]
				if s.Lookups != f.Lookups || s.Matched != f.Matched {
					t.Errorf("table %d: pipeline counted %d lookups %d matched, cache %d lookups %d matched", id, s.Lookups, s.Matched, f.Lookups, f.Matched)
				}
				if s.Lookups > 0 {
					busy++
				}
			}
			if slowTS[0].Lookups != 6000 || busy < 5 {
				t.Errorf("table 0 counted %d lookups of 6000 packets, %d tables looked up", slowTS[0].Lookups, busy)
			}
			st := cache.Stats()
			t.Logf("%s: %+v", tc.name, st)
			if st.Hits < st.Misses {
				t.Errorf("cache served too little: %+v", st)
			}
		})
	}
}

func describe(os []out) string {
	s := ""
	for _, o := range os {
		s += fmt.Sprintf("[port %d %x] ", o.port, o.frame)
	}
	return s
}

// TestCacheConcurrentFlowMods: packets keep flowing through the cache
// while another goroutine adds and deletes flows (race detector food); the
// cache never serves a stale decision: once the mods stop, results match
// the pipeline again.
func TestCacheConcurrentFlowMods(t *testing.T) {
	fast := pipeline(t, seeds.Worker1)
	cache := flowcache.New(fast)
	g := &packetGen{r: rand.New(rand.NewSource(2))}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f := fmt.Sprintf("table=90,priority=%d,ip,nw_src=10.9.%d.%d actions=drop", 300+i%7, i/256%256, i%256)
			flowtext.Load(fast, f, nil)
			ff := flowtable.AllFlows()
			ff.Table = 90
			ff.Cookie, ff.CookieMask = 0, 0
			if i%50 == 49 {
				m, _ := flowtext.ParseFlow("table=90,ip,nw_src=10.9.0.0/16", &flowtext.ParseOptions{Command: flowtext.CmdDelete})
				ff.Match = m.Match
				fast.DeleteFlows(&ff)
			}
		}
	}()
	for i := 0; i < 3000; i++ {
		k, frame := frameOf(t, g.next())
		runFast(cache, k, frame)
	}
	close(stop)
	wg.Wait()
	// Same flows now in a reference pipeline: from here on results agree.
	slow := flowtable.NewPipeline()
	slow.TLV = fast.TLV
	all := flowtable.AllFlows()
	var flows []*flowtable.Flow
	for _, r := range fast.Flows(&all) {
		flows = append(flows, r.Flow())
	}
	for _, gr := range fast.Groups() {
		slow.AddGroup(gr)
	}
	if err := slow.AddFlows(flows); err != nil {
		t.Fatal(err)
	}
	slow.Conntrack = ctadapter.New()
	slow.Ports = fast.Ports
	fresh := pipeline(t, seeds.Worker1)
	_ = fresh
	cache2 := flowcache.New(slow)
	ref := flowtable.NewPipeline()
	ref.TLV = slow.TLV
	ref.AddFlows(flows)
	ref.Conntrack = ctadapter.New()
	ref.Ports = fast.Ports
	for i := 0; i < 2000; i++ {
		spec := g.next()
		k, frame := frameOf(t, spec)
		want := runSlow(ref, k, frame)
		got := runFast(cache2, k, frame)
		if !sameOuts(want, got) {
			t.Fatalf("packet %d %s:\n pipeline: %v\n cache:    %v", i, spec, describe(want), describe(got))
		}
	}
}

// TestCacheNormal: NORMAL's decisions are cached (hits, not upcalls, for
// a learned conversation) yet stay exactly the pipeline's through
// learning, a MAC moving to another port, sources kept alive by cached
// traffic only, aging, and a port flush.
func TestCacheNormal(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	slow, fast := pipeline(t, "actions=NORMAL"), pipeline(t, "actions=NORMAL")
	slow.Now, fast.Now = clock, clock
	cache := flowcache.New(fast)
	const (
		a = "02:00:00:00:00:0a"
		b = "02:00:00:00:00:0b"
	)
	pkt := func(in int, src, dst string) string {
		return fmt.Sprintf("in_port=%d,dl_src=%s,dl_dst=%s,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2", in, src, dst)
	}
	steps := []struct {
		name    string
		advance time.Duration
		spec    string
		want    []uint32 // output ports
	}{
		{"a to unknown b floods", 0, pkt(1, a, b), []uint32{2, 3, 4, 35, 48, 49}},
		{"b answers a on its learned port", 0, pkt(2, b, a), []uint32{1}},
		{"a to b, learned", 0, pkt(1, a, b), []uint32{2}},
		{"a to b again (cache)", time.Millisecond, pkt(1, a, b), []uint32{2}},
		{"a to b again (cache)", time.Millisecond, pkt(1, a, b), []uint32{2}},
		{"broadcast floods", 0, pkt(1, a, "ff:ff:ff:ff:ff:ff"), []uint32{2, 3, 4, 35, 48, 49}},
		{"a moves to port 3", 0, pkt(3, a, b), []uint32{2}},
		{"b to a follows the move", 0, pkt(2, b, a), []uint32{3}},
		{"b keeps talking (cache hit learns b again)", 200 * time.Second, pkt(2, b, a), []uint32{3}},
		{"a to b still known after 400 s", 200 * time.Second, pkt(3, a, b), []uint32{2}},
		{"b aged out: flood", 400 * time.Second, pkt(3, a, b), []uint32{1, 2, 4, 35, 48, 49}},
		{"input port equals learned port: drop", 0, pkt(3, b, a), nil},
	}
	hitsBefore := uint64(0)
	for i, s := range steps {
		now = now.Add(s.advance)
		k, frame := frameOf(t, s.spec)
		want := runSlow(slow, k, frame)
		got := runFast(cache, k, frame)
		if !sameOuts(want, got) {
			t.Fatalf("step %d %s: pipeline %v, cache %v", i, s.name, describe(want), describe(got))
		}
		var ports []uint32
		for _, o := range got {
			ports = append(ports, o.port)
		}
		if !slices.Equal(ports, s.want) {
			t.Errorf("step %d %s: output to %v, want %v", i, s.name, ports, s.want)
		}
		if i == 2 {
			hitsBefore = cache.Stats().Hits
		}
		if i == 4 && cache.Stats().Hits < hitsBefore+2 {
			t.Errorf("repeated a->b missed the cache: %+v", cache.Stats())
		}
	}
	// Flushing a port's MACs (port deleted) invalidates cached decisions.
	k, frame := frameOf(t, pkt(3, a, b))
	runSlow(slow, k, frame)
	runFast(cache, k, frame)
	k, frame = frameOf(t, pkt(2, b, a))
	runSlow(slow, k, frame)
	runFast(cache, k, frame)
	slow.MACs.Flush(3)
	fast.MACs.Flush(3)
	want := runSlow(slow, k, frame)
	got := runFast(cache, k, frame)
	if !sameOuts(want, got) || len(got) < 2 {
		t.Errorf("after flushing port 3: pipeline %v, cache %v (want a flood)", describe(want), describe(got))
	}
}
