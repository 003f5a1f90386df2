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
	reportLatency(b, lat)
}

// reportLatency reports the median and p99 of lat (sorted in place).
func reportLatency(b *testing.B, lat []time.Duration) {
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

// BenchmarkEchoLatency measures an echo request's round trip on an idle
// AF_UNIX connection, one at a time: on its own, and right after a bundle
// add in a bundle already big enough for the switch to let its messages
// accumulate before it reads again (coalesceAfter adds: that wait must
// stay bounded by coalesceWait); it reports the median and p99.
func BenchmarkEchoLatency(b *testing.B) {
	for _, afterAdd := range []bool{false, true} {
		name := "idle"
		if afterAdd {
			name = "after-bundle-add"
		}
		b.Run(name, func(b *testing.B) {
			srv, cli := unixPair(b)
			p := flowtable.NewPipeline()
			c := serveConnOpts(b, ofproto.NewBridge(&fakeDP{p}, nil), wire.OFP15, srv, cli, ofproto.ConnOptions{})
			var add []byte
			bigBundleAdds := 0
			if afterAdd {
				add = ovnBundle(b, p)[0] // a bundle add of a flow-mod
				bigBundleAdds = 20       // more than coalesceAfter in a row
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				for range bigBundleAdds {
					c.Send(wire.OFPT_BUNDLE_ADD_MESSAGE, 0x600, add)
				}
				start := time.Now()
				c.Send(wire.OFPT_ECHO_REQUEST, uint32(i), nil)
				h, _, err := c.Recv()
				if err != nil || h.Type != wire.OFPT_ECHO_REPLY {
					b.Fatalf("type %d: %v", h.Type, err)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
		})
	}
}
