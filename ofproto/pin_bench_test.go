package ofproto_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/wire"
)

// BenchmarkPacketInLatency measures a packet-in from the datapath's call
// to the controller reading it, on an idle AF_UNIX connection (OpenFlow
// 1.3, 100-byte frame), one at a time; it reports the median and p99.
func BenchmarkPacketInLatency(b *testing.B) {
	p := flowtable.NewPipeline()
	br := ofproto.NewBridge(&fakeDP{p}, nil)
	srv, cli := unixPair(b)
	c := serveConnOpts(b, br, wire.OFP13, srv, cli, ofproto.ConnOptions{})
	if err := c.Alive(); err != nil {
		b.Fatal(err)
	}
	frame := bytes.Repeat([]byte{0xab}, 100)
	var k flowtable.Key
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		br.PacketIn(frame, 1, &flowtable.PacketIn{Reason: flowtable.ReasonNoMatch}, &k)
		h, _, err := c.Recv()
		if err != nil || h.Type != wire.OFPT_PACKET_IN {
			b.Fatalf("type %d: %v", h.Type, err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkPacketInBurst sends 10,000 packet-ins at once to a controller
// that reads them only afterwards (queue limit 10,000) and reports how
// long the datapath side spent: it must not wait for the controller.
func BenchmarkPacketInBurst(b *testing.B) {
	frame := bytes.Repeat([]byte{0xab}, 100)
	var k flowtable.Key
	for range b.N {
		b.StopTimer()
		p := flowtable.NewPipeline()
		br := ofproto.NewBridge(&fakeDP{p}, nil)
		srv, cli := unixPair(b)
		c := serveConnOpts(b, br, wire.OFP13, srv, cli, ofproto.ConnOptions{PacketInQueueLimit: 10000})
		if err := c.Alive(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		for range 10000 {
			br.PacketIn(frame, 1, &flowtable.PacketIn{Reason: flowtable.ReasonNoMatch}, &k)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/10000, "µs/packet-in")
		b.StopTimer()
		for got := 0; got < 10000; {
			h, _, err := c.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if h.Type == wire.OFPT_PACKET_IN {
				got++
			}
		}
		cli.Close()
	}
}
