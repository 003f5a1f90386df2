package flowcache_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/internal/seeds"
)

// crrPackets are the packets of one crr-shaped connection (bench crr:
// connect, one byte each way, RST) from frontend (port 49, 10.222.1.48)
// to backend1 (port 48, 10.222.1.47) port 80 on seed worker 1, the
// client using ephemeral port cport. The pods are on one subnet and
// address each other's MAC, as in govs bench.
func crrPackets(cport int) []string {
	const (
		front = "in_port=49,dl_src=be:2c:bf:e4:ec:c5,dl_dst=f2:32:d8:07:e2:a6,tcp,nw_src=10.222.1.48,nw_dst=10.222.1.47,nw_ttl=64"
		back  = "in_port=48,dl_src=f2:32:d8:07:e2:a6,dl_dst=be:2c:bf:e4:ec:c5,tcp,nw_src=10.222.1.47,nw_dst=10.222.1.48,nw_ttl=64"
	)
	c2s := func(flags string) string {
		return fmt.Sprintf("%s,tp_src=%d,tp_dst=80,tcp_flags=%s", front, cport, flags)
	}
	s2c := func(flags string) string {
		return fmt.Sprintf("%s,tp_src=80,tp_dst=%d,tcp_flags=%s", back, cport, flags)
	}
	return []string{c2s("syn"), s2c("syn|ack"), c2s("ack"), c2s("psh|ack"), s2c("ack"), s2c("psh|ack"), c2s("ack"), c2s("rst")}
}

// TestCacheConnectionsShareMegaflows: crr-shaped connections through the
// seed pipeline are forwarded as by the pipeline, and the megaflows do
// not grow with the number of connections: no megaflow depends on the
// client's ephemeral port, because the classifier's staged lookup
// un-wildcards a subtable's L4 fields only when the packet's metadata,
// L2 and L3 fields let a rule of it match (OVS lib/classifier.c). Before
// staged lookup, the reply direction needed one megaflow per connection.
func TestCacheConnectionsShareMegaflows(t *testing.T) {
	// govs bench's extra ingress rule (bench/scenarios.go
	// worker1BenchRule): a subtable of table 90 that matches tp_dst and
	// is looked into by every packet that reaches table 90, replies too.
	flows := seeds.Worker1 + "table=90,priority=210,udp,nw_src=10.222.1.48,reg1=0x30,tp_dst=53 actions=load:0x6->NXM_NX_REG6[],resubmit(,105)\n"
	slow, fast := pipeline(t, flows), pipeline(t, flows)
	cache := flowcache.New(fast)
	r := rand.New(rand.NewSource(3))
	megaflows := func(nConns int) int {
		for range nConns {
			for _, spec := range crrPackets(32768 + r.Intn(28000)) {
				k, frame := frameOf(t, spec)
				want := runSlow(slow, k, frame)
				got := runFast(cache, k, frame)
				if !sameOuts(want, got) {
					t.Fatalf("%s:\n pipeline: %v\n cache:    %v", spec, describe(want), describe(got))
				}
			}
		}
		return cache.Len()
	}
	after10 := megaflows(10)
	after200 := megaflows(190)
	t.Logf("megaflows after 10 connections: %d, after 200: %d", after10, after200)
	if after200 != after10 {
		t.Errorf("%d megaflows after 10 connections, %d after 200: some depend on the ephemeral port", after10, after200)
	}
	for _, e := range cache.Dump() {
		if e.Mask.TpSrc() != 0 && e.Mask.TpDst() != 0 {
			t.Errorf("a megaflow matches both TCP ports (mask tp_src %#x tp_dst %#x)", e.Mask.TpSrc(), e.Mask.TpDst())
		}
	}
}
