package conntrack

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentCommitLookupExpiry runs committing, looking-up, NATing,
// flushing and sweeping goroutines at once (run it with -race), then checks
// that the tables are consistent: every connection is found from both
// directions and, after everything expired, nothing is left.
func TestConcurrentCommitLookupExpiry(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	tr := New(Config{Clock: func() int64 { return now.Load() }, Timeouts: Timeouts{UDPFirst: 2 * time.Second, UDPSingle: 2 * time.Second, UDPMultiple: 2 * time.Second}})
	const workers = 4
	const perWorker = 400
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { // clock + sweeper
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			now.Add(int64(50 * time.Millisecond))
			tr.Sweep(now.Load())
			time.Sleep(100 * time.Microsecond)
		}
	}()
	bg.Add(1)
	go func() { // management
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			tr.Dump(DumpFilter{})
			tr.FlushZone(99)
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	var bad atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			snat := &Args{Zone: 7, Commit: true, NAT: &NAT{Action: NATSrc, MinAddr: mustAddr("192.168.0.1"), MinPort: 10000, MaxPort: 10200}}
			for i := 0; i < perWorker; i++ {
				sport := uint16(1000 + i)
				src := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}[w]
				// Shared connections: every worker commits and looks up
				// the same 50 tuples, in both directions.
				shared := build(udpPk("10.9.0.1", "10.9.0.2", uint16(2000+i%50), 53))
				var md Meta
				tr.Execute(shared, ethLen, EthTypeIPv4, &md, &Args{Zone: 1, Commit: true}, now.Load())
				if md.State&StateInv != 0 {
					bad.Add(1)
				}
				rep := build(udpPk("10.9.0.2", "10.9.0.1", 53, uint16(2000+i%50)))
				md = Meta{}
				tr.Execute(rep, ethLen, EthTypeIPv4, &md, &Args{Zone: 1}, now.Load())
				// Own connections with SNAT out of a shared port range.
				f := build(udpPk(src, "8.8.8.8", sport, 53))
				md = Meta{}
				tr.Execute(f, ethLen, EthTypeIPv4, &md, snat, now.Load())
				// Zone 99 is flushed concurrently.
				md = Meta{}
				tr.Execute(build(udpPk(src, "9.9.9.9", sport, 53)), ethLen, EthTypeIPv4, &md, &Args{Zone: 99, Commit: true}, now.Load())
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d shared commits were invalid", bad.Load())
	}
	// Every live connection is reachable through both of its keys.
	n := now.Load()
	for _, e := range tr.Dump(DumpFilter{}) {
		for _, tup := range []Tuple{e.Orig, e.Reply} {
			if !tr.lookupTuple(e.Zone, tup, n) {
				t.Fatalf("%v not found by %+v", e, tup)
			}
		}
	}
	// SNAT never handed one translated tuple to two connections.
	seen := map[Tuple]bool{}
	for _, e := range tr.Dump(DumpFilter{Zone: ptr(uint16(7))}) {
		if seen[e.Reply] {
			t.Fatalf("reply tuple %+v used twice", e.Reply)
		}
		seen[e.Reply] = true
	}
	// Everything expires and is freed.
	now.Add(int64(48 * time.Hour))
	tr.Sweep(now.Load())
	if tr.Count() != 0 {
		t.Fatalf("count %d after expiry", tr.Count())
	}
	for i := range tr.shards {
		if u := tr.shards[i].used; u != 0 {
			t.Fatalf("shard %d still has %d index entries", i, u)
		}
	}
	for z := 0; z < 65536; z++ {
		if c := tr.zoneCount[z].Load(); c != 0 {
			t.Fatalf("zone %d count %d", z, c)
		}
	}
}

// lookupTuple reports whether a tuple finds a live connection (test helper).
func (t *Tracker) lookupTuple(zone uint16, tup Tuple, now int64) bool {
	k, err := keyOfTuple(zone, &tup)
	if err != nil {
		return false
	}
	return t.exists(&k, k.hash(t.seed), now)
}
