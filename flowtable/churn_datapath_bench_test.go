package flowtable_test

import (
	"encoding/binary"
	"runtime"
	"runtime/metrics"
	"slices"
	"testing"
	"time"

	"github.com/govs-project/govs/bench/antreagen"
	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"golang.org/x/sys/unix"
)

// BenchmarkScaleChurnDatapath is BenchmarkScaleChurn through what a port
// loop of the datapath runs, with the stalls govs itself causes measured
// rather than inferred from wall time (which the VM's scheduler makes
// noisy): new TCP connections (a new source port each) between the node's
// pods go through a megaflow cache (datapath/flowcache) with govs's
// conntrack, 32 packets a batch with the cache's per-batch statistics
// flush, for 2 s quiet and 2 s while 1,000 flow-mods per second go into
// the 119k-flow node (each flow-mod's thread CPU time is reported too:
// what it does with the lock held, without the OS's delays). Each flow-mod bumps the pipeline generation, so the
// cache empties and the next packets walk the pipeline again.
//
// Reported per window (quiet-, churn-): the per-packet latency p50/p99/
// max; the longest a packet walk was held up by a flow-mod (walkwait:
// walks take no lock, so only a retry when a writer publishes between the
// two loads that pick a side), the longest write-lock hold of a flow-mod
// and the longest a writer waited for walks to leave the side it had just
// replaced (flowtable.LockStats); the Go runtime's stop-the-world
// GC pauses and scheduling latencies (runtime/metrics histograms: the
// upper bound of the bucket of the longest and of the p99).
//
//	go test -run '^$' -bench ScaleChurnDatapath -benchtime 1x ./flowtable/
func BenchmarkScaleChurnDatapath(b *testing.B) {
	n := loadScale(b, antreagen.Default())
	pkts := scalePackets(b, n, "pod-to-pod")
	ops := churnOps(n, 2000)
	ct := ctadapter.New()
	n.p.Conntrack = ct
	defer func() { n.p.Conntrack = nil }()
	d := &churnDatapath{p: n.p, cache: flowcache.New(n.p), pkts: pkts, buf: make([]byte, 2048)}
	defer d.cache.Close()
	lat := make([]time.Duration, 0, 8<<20)
	for i := 0; i < b.N; i++ {
		report := func(prefix string, from int, rt0 runtimeStalls) {
			rt := readRuntimeStalls().since(rt0)
			ls := n.p.LockStats(true)
			l := lat[from:]
			slices.Sort(l)
			b.ReportMetric(float64(len(l))/2, prefix+"pkts/s")
			b.ReportMetric(float64(l[len(l)/2].Nanoseconds()), prefix+"p50-ns")
			b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds()), prefix+"p99-ns")
			b.ReportMetric(float64(l[len(l)-1].Nanoseconds()), prefix+"max-ns")
			b.ReportMetric(float64(ls.ReadWaitMax.Nanoseconds()), prefix+"walkwait-max-ns")
			b.ReportMetric(float64(ls.DrainMax.Nanoseconds()), prefix+"drain-max-ns")
			b.ReportMetric(float64(ls.WriteHoldQuantile(0.99).Nanoseconds()), prefix+"writehold-p99-ns")
			b.ReportMetric(float64(ls.WriteHoldMax.Nanoseconds()), prefix+"writehold-max-ns")
			b.ReportMetric(rt.gcPauses.quantile(0.99)*1e9, prefix+"gcpause-p99-ns")
			b.ReportMetric(rt.gcPauses.quantile(1)*1e9, prefix+"gcpause-max-ns")
			b.ReportMetric(float64(rt.gcPauses.n), prefix+"gcpauses")
			// The part of a pause spent waiting for the threads to stop
			// (the OS scheduling them), not doing the collector's work.
			b.ReportMetric(rt.gcStopping.quantile(1)*1e9, prefix+"gcstopping-max-ns")
			b.ReportMetric(rt.sched.quantile(0.99)*1e9, prefix+"schedlat-p99-ns")
			b.ReportMetric(rt.sched.quantile(1)*1e9, prefix+"schedlat-max-ns")
			b.Logf("%s: %d walks held up by a writer (max %v); %d write holds, max %v; %d writers waited for walks (max %v); %d GC pauses, max < %.0f µs",
				prefix, ls.ReadWaits, ls.ReadWaitMax, ls.WriteHolds, ls.WriteHoldMax, ls.Drains, ls.DrainMax, rt.gcPauses.n, rt.gcPauses.quantile(1)*1e6)
		}
		n.p.LockStats(true)
		rt0 := readRuntimeStalls()
		lat = d.run(2*time.Second, lat[:0])
		report("quiet-", 0, rt0)

		stop, done := make(chan struct{}), make(chan []time.Duration)
		go churn(n.p, ops, stop, done)
		quiet := len(lat)
		rt0 = readRuntimeStalls()
		lat = d.run(2*time.Second, lat)
		close(stop)
		modCPU := <-done
		report("churn-", quiet, rt0)
		b.ReportMetric(float64(len(modCPU))/2, "flowmods/s")
		// What a flow-mod does with the lock held, without the time the
		// OS keeps its thread off the CPU: its thread's CPU time.
		slices.Sort(modCPU)
		b.ReportMetric(float64(modCPU[len(modCPU)*99/100].Nanoseconds()), "flowmod-cpu-p99-ns")
		b.ReportMetric(float64(modCPU[len(modCPU)-1].Nanoseconds()), "flowmod-cpu-max-ns")
		st := d.cache.Stats()
		b.ReportMetric(float64(st.Flushes), "cache-flushes")
		if got := n.p.NumFlows(); got != n.gen.NumFlows {
			b.Fatalf("after churn the node holds %d flows, want %d", got, n.gen.NumFlows)
		}
	}
}

// churnDatapath forwards new connections through a flow cache as a port
// loop does.
type churnDatapath struct {
	p     *flowtable.Pipeline
	cache *flowcache.Cache
	pkts  []scalePacket
	buf   []byte
	pkt   flowtable.Packet
	sink  benchSink
	sport uint16
}

// run forwards packets for d, in batches of 32, and appends each packet's
// latency (its batch's time divided evenly would hide a stall: each packet
// is timed on its own).
func (d *churnDatapath) run(dur time.Duration, out []time.Duration) []time.Duration {
	end := time.Now().Add(dur)
	for i := 0; ; {
		if time.Now().After(end) {
			return out
		}
		for j := 0; j < 32; j, i = j+1, i+1 {
			t0 := time.Now()
			d.forward(&d.pkts[i%len(d.pkts)])
			out = append(out, time.Since(t0))
		}
		d.cache.FlushStats()
		d.cache.MaybeExpire()
	}
}

// forward sends one packet of a new connection: sp with the next source
// port (its TCP checksum patched, RFC 1624).
func (d *churnDatapath) forward(sp *scalePacket) {
	b := d.buf[:len(sp.frame)]
	copy(b, sp.frame)
	d.sport++
	if d.sport < 1024 {
		d.sport = 1024
	}
	const l4 = 14 + 20
	old := binary.BigEndian.Uint16(b[l4:])
	binary.BigEndian.PutUint16(b[l4:], d.sport)
	sum := uint32(^binary.BigEndian.Uint16(b[l4+16:])) + uint32(^old) + uint32(d.sport)
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	binary.BigEndian.PutUint16(b[l4+16:], ^uint16(sum))
	d.pkt.Key = flowtable.Key{}
	d.pkt.Key.SetInPort(sp.inPort)
	if err := d.pkt.Extract(b); err != nil {
		panic(err)
	}
	d.cache.Process(&d.pkt, &d.sink)
}

// churn applies ops (one per Apply) at 1,000 per second until stop, then
// sends the thread CPU time of each Apply; it stops after an add, leaving
// the node whole.
func churn(p *flowtable.Pipeline, ops [][]flowtable.FlowOp, stop <-chan struct{}, done chan<- []time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	var cpu []time.Duration
	for {
		select {
		case <-stop:
			if len(cpu)%2 == 0 {
				done <- cpu
				return
			}
		default:
		}
		if due := int(time.Since(start) / time.Millisecond); len(cpu) >= due {
			time.Sleep(200 * time.Microsecond)
			continue
		}
		c0 := threadCPUTime()
		if _, err := p.Apply(ops[len(cpu)%len(ops)]); err != nil {
			panic(err)
		}
		cpu = append(cpu, threadCPUTime()-c0)
	}
}

// threadCPUTime is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Duration(ts.Nano())
}

// runtimeStalls are the Go runtime's pause and scheduling-latency
// histograms.
type runtimeStalls struct{ gcPauses, gcStopping, sched histogram }

type histogram struct {
	counts  []uint64
	buckets []float64
	n       uint64
}

func readRuntimeStalls() runtimeStalls {
	s := []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}, {Name: "/sched/pauses/stopping/gc:seconds"}, {Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	h := func(v metrics.Value) histogram {
		fh := v.Float64Histogram()
		return histogram{counts: slices.Clone(fh.Counts), buckets: fh.Buckets}
	}
	return runtimeStalls{gcPauses: h(s[0].Value), gcStopping: h(s[1].Value), sched: h(s[2].Value)}
}

// since returns the histograms of what happened after a.
func (s runtimeStalls) since(a runtimeStalls) runtimeStalls {
	sub := func(x, y histogram) histogram {
		out := histogram{counts: make([]uint64, len(x.counts)), buckets: x.buckets}
		for i := range x.counts {
			out.counts[i] = x.counts[i] - y.counts[i]
			out.n += out.counts[i]
		}
		return out
	}
	return runtimeStalls{gcPauses: sub(s.gcPauses, a.gcPauses), gcStopping: sub(s.gcStopping, a.gcStopping), sched: sub(s.sched, a.sched)}
}

// quantile returns the upper bound (seconds) of the bucket holding the
// q-quantile; 0 when empty.
func (h histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n-1))
	var c uint64
	for i, n := range h.counts {
		c += n
		if c > rank {
			return h.buckets[i+1]
		}
	}
	return h.buckets[len(h.buckets)-1]
}
