package datapath

import (
	"sync"
	"testing"

	"github.com/govs-project/govs/ofproto/flowtext"
)

// TestDumpFlows: the dump lists each megaflow the traffic made with the
// packets and bytes that hit it, and dumping while the loops forward
// (go test -race) neither races them nor loses counts.
func TestDumpFlows(t *testing.T) {
	b := newBridge(t, "priority=10,in_port=1,udp,actions=output:2\npriority=10,in_port=2,actions=output:1\npriority=0,actions=drop", false)
	ps := addMemPorts(t, b, MemPortConfig{}, 1, 2)
	udp := frameOf(t, "udp,in_port=1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2")
	if flows, _ := b.DumpFlows(); len(flows) != 0 {
		t.Fatalf("%d flows before any traffic", len(flows))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // dumps all along, as ovs-appctl would
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				b.DumpFlows()
			}
		}
	}()
	const n = 200
	for i := 0; i < n; i++ {
		inject(t, b, ps, 1, udp)
	}
	close(stop)
	wg.Wait()
	flows, now := b.DumpFlows()
	if len(flows) != 1 {
		t.Fatalf("%d flows, want the one megaflow of port 1", len(flows))
	}
	f := flows[0]
	// The first packet went up to the pipeline; the others hit the entry.
	if f.Packets != n-1 || f.Bytes != uint64(n-1)*uint64(len(udp)) {
		t.Errorf("packets %d bytes %d, want %d and %d", f.Packets, f.Bytes, n-1, (n-1)*len(udp))
	}
	if f.Used == 0 || f.Used > now {
		t.Errorf("used %d, now %d", f.Used, now)
	}
	port := func(p uint32) string { return map[uint32]string{1: "1", 2: "2"}[p] }
	if got, want := flowtext.DatapathFlow(&f.Value, &f.Mask, port), "recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth_type(0x0800),ipv4(proto=17,frag=no)"; got != want {
		t.Errorf("flow\n got %s\nwant %s", got, want)
	}
	if got := flowtext.DatapathActions(&f.Value, f.Ops, port); got != "2" {
		t.Errorf("actions %s, want 2", got)
	}
}
