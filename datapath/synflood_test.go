package datapath

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// synFloodFlows track TCP in zone 5: port 1 opens connections to port 2,
// established traffic passes both ways, a SYN whose commit the zone limit
// refuses (+trk+inv) is dropped.
const synFloodFlows = `
table=0,priority=10,tcp actions=ct(table=1,zone=5)
table=1,priority=20,ct_state=+trk+est,tcp,in_port=1 actions=output:2
table=1,priority=20,ct_state=+trk+est,tcp,in_port=2 actions=output:1
table=1,priority=10,ct_state=+trk+new,tcp,in_port=1 actions=ct(commit,zone=5,table=2)
table=2,priority=10,ct_state=+trk+new-inv,tcp actions=output:2
`

// synFrom builds a SYN from a random source to the backend's port 80.
func synFrom(tb testing.TB, rng *rand.Rand) []byte {
	tb.Helper()
	spec := fmt.Sprintf("tcp,dl_src=02:00:00:%02x:%02x:%02x,dl_dst=%s,nw_src=10.%d.%d.%d,nw_dst=10.222.1.47,nw_ttl=64,tp_src=%d,tp_dst=80,tcp_flags=syn",
		rng.IntN(256), rng.IntN(256), rng.IntN(256), backend1MAC, rng.IntN(256), rng.IntN(256), 1+rng.IntN(254), 1024+rng.IntN(60000))
	k, err := flowtext.ParsePacket(spec, nil)
	if err != nil {
		tb.Fatal(err)
	}
	f := flowtable.BuildFrame(&k, 0)
	setTCPSeq(f, rng.Uint32(), 0)
	return f
}

// TestSynFloodFillsZoneLimit: a SYN flood from random sources fills the
// zone's conntrack limit and no more (memory bounded, each refusal counted,
// one log line a second), while a connection established before the flood
// keeps passing both ways in the middle of it (issue 15).
func TestSynFloodFillsZoneLimit(t *testing.T) {
	const limit, flood = 1000, 20000
	var reports atomic.Int32
	tr := conntrack.New(conntrack.Config{OnFull: func(zone uint16, zoneLimit bool) {
		if zone == 5 && zoneLimit {
			reports.Add(1)
		}
	}})
	tr.SetZoneLimit(5, limit)
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, synFloodFlows, nil); err != nil {
		t.Fatal(err)
	}
	p.Conntrack = ctadapter.Wrap(tr)
	b := NewBridge("br-synflood", 1, p, nil)
	t.Cleanup(func() { b.Close() })
	ps := addMemPorts(t, b, MemPortConfig{}, 1, 2)

	// The established connection: handshake, before the flood.
	inject(t, b, ps, 1, tcpFrame(t, true, "syn", 1000, 0, 0))
	inject(t, b, ps, 2, tcpFrame(t, false, "syn|ack", 5000, 1001, 0))
	inject(t, b, ps, 1, tcpFrame(t, true, "ack", 1001, 5001, 0))
	if got := sent(ps); len(got[2]) != 2 || len(got[1]) != 1 {
		t.Fatalf("handshake: port 2 got %d frames, port 1 %d", len(got[2]), len(got[1]))
	}

	rng := rand.New(rand.NewPCG(15, 4))
	seq, rseq := uint32(1001), uint32(5001)
	floodOut, dataOut, replyOut := 0, 0, 0
	const batch = 500
	syns := make([][]byte, batch)
	for sent0 := 0; sent0 < flood; sent0 += batch {
		for i := range syns {
			syns[i] = synFrom(t, rng)
		}
		inject(t, b, ps, 1, syns...)
		floodOut += len(sent(ps)[2])
		// Established traffic in the middle of the flood, both ways.
		inject(t, b, ps, 1, tcpFrame(t, true, "ack|psh", seq, rseq, 100))
		seq += 100
		inject(t, b, ps, 2, tcpFrame(t, false, "ack", rseq, seq, 0))
		got := sent(ps)
		dataOut += len(got[2])
		replyOut += len(got[1])
	}
	rounds := flood / batch
	if dataOut != rounds || replyOut != rounds {
		t.Errorf("established connection: %d of %d data segments and %d of %d acks passed during the flood", dataOut, rounds, replyOut, rounds)
	}
	if floodOut != limit-1 {
		t.Errorf("%d flood SYNs passed, want %d (the zone limit less the established connection)", floodOut, limit-1)
	}
	if n := tr.ZoneLimitCount(5); n != limit {
		t.Errorf("zone 5 holds %d connections, want its limit %d", n, limit)
	}
	if n := tr.Count(); n > limit {
		t.Errorf("the tracker holds %d connections, over the zone limit %d", n, limit)
	}
	if full := tr.Stats().Full; full != flood-(limit-1) {
		t.Errorf("%d refusals counted, want %d", full, flood-(limit-1))
	}
	if r := reports.Load(); r < 1 || r > 5 {
		t.Errorf("%d full reports (log lines), want one a second", r)
	}
	t.Logf("zone limit %d reached: %d of %d SYNs refused, %d established segments passed during the flood, %d log reports",
		limit, tr.Stats().Full, flood, dataOut+replyOut, reports.Load())
}
