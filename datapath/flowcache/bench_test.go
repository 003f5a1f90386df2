package flowcache_test

import (
	"fmt"
	"github.com/govs-project/govs/ofproto/flowtext"
	"testing"

	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/seeds"
)

type nopSink struct{}

func (nopSink) Output(uint32, *flowtable.Packet)                {}
func (nopSink) PacketIn(*flowtable.Packet, *flowtable.PacketIn) {}

// benchEstablished pushes an established frontend -> backend1 TCP 80 flow
// (seed worker 1: 0,10,30 | ct | 31,40,50,70,80,90,105 | ct | 110) through
// either the cache or the pipeline.
func benchEstablished(b *testing.B, cached bool) {
	p := pipeline(b, seeds.Worker1)
	c := flowcache.New(p)
	k, frame := establish(b, c, 40000)
	buf := make([]byte, len(frame))
	var pkt flowtable.Packet
	process := func() {
		copy(buf, frame)
		pkt.Key = flowtable.Key{}
		pkt.Key.SetInPort(k.InPort())
		pkt.Extract(buf)
		if cached {
			c.Process(&pkt, nopSink{})
			if pkt.Key.TpSrc()&31 == 0 { // a batch ends now and then
				c.FlushStats()
			}
		} else {
			p.Run(&pkt, nopSink{}, nil)
		}
	}
	process()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		process()
	}
	b.StopTimer()
	if cached {
		c.Flush()
		st := c.Stats()
		if st.Upcalls > 4 {
			b.Fatalf("established flow kept missing the cache: %+v", st)
		}
	}
}

func BenchmarkEstablishedCacheHit(b *testing.B) { benchEstablished(b, true) }
func BenchmarkEstablishedPipeline(b *testing.B) { benchEstablished(b, false) }

// BenchmarkSimpleCacheHit is a cache hit on a one-flow pipeline
// (in_port=1 -> output:2): the cost of the cache itself.
func BenchmarkSimpleCacheHit(b *testing.B) {
	p := pipeline(b, "in_port=1,actions=output:2")
	c := flowcache.New(p)
	k, frame := frameOf(b, "in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2")
	buf := make([]byte, len(frame))
	var pkt flowtable.Packet
	process := func() {
		copy(buf, frame)
		pkt.Key = flowtable.Key{}
		pkt.Key.SetInPort(k.InPort())
		pkt.Extract(buf)
		c.Process(&pkt, nopSink{})
	}
	process()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		process()
		if i&31 == 31 {
			c.FlushStats()
		}
	}
}

// BenchmarkChurn forwards the established seed flow through the cache
// while a flow-mod arrives every `every` packets (each one invalidates the
// whole cache today: a generation number), to show what churn costs.
func BenchmarkChurn(b *testing.B) {
	for _, every := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("flowmod-every-%d", every), func(b *testing.B) {
			p := pipeline(b, seeds.Worker1)
			c := flowcache.New(p)
			k, frame := establish(b, c, 40001)
			buf := make([]byte, len(frame))
			fm, err := flowtext.ParseFlow("table=90,priority=300,ip,nw_src=10.9.9.9 actions=drop", nil)
			if err != nil {
				b.Fatal(err)
			}
			var pkt flowtable.Packet
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%every == 0 {
					p.AddFlow(&fm.Flow)
				}
				copy(buf, frame)
				pkt.Key = flowtable.Key{}
				pkt.Key.SetInPort(k.InPort())
				pkt.Extract(buf)
				c.Process(&pkt, nopSink{})
				if i&31 == 31 {
					c.FlushStats()
				}
			}
		})
	}
}

// establish opens a frontend -> backend1 TCP 80 connection from port
// sport through the seed worker 1 pipeline (SYN, SYN-ACK, ACK) and returns
// the key and frame of its next ACK.
func establish(b *testing.B, c *flowcache.Cache, sport int) (flowtable.Key, []byte) {
	fwd := fmt.Sprintf("in_port=49,dl_src=be:2c:bf:e4:ec:c5,dl_dst=f2:32:d8:07:e2:a6,tcp,nw_src=10.222.1.48,nw_dst=10.222.1.47,nw_ttl=64,tp_src=%d,tp_dst=80,tcp_flags=", sport)
	rev := fmt.Sprintf("in_port=48,dl_src=f2:32:d8:07:e2:a6,dl_dst=be:2c:bf:e4:ec:c5,tcp,nw_src=10.222.1.47,nw_dst=10.222.1.48,nw_ttl=64,tp_src=80,tp_dst=%d,tcp_flags=", sport)
	for _, s := range []string{fwd + "syn", rev + "syn|ack", fwd + "ack"} {
		k, f := frameOf(b, s)
		runFast(c, k, f)
	}
	return frameOf(b, fwd+"ack")
}
