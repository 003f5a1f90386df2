package ofproto_test

import (
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/wire"
)

// pinSink hands the pipeline's packet-ins to the bridge, as the datapath does.
type pinSink struct{ b *ofproto.Bridge }

func (s pinSink) Output(uint32, *flowtable.Packet) {}
func (s pinSink) PacketIn(pkt *flowtable.Packet, pi *flowtable.PacketIn) {
	s.b.PacketIn(pkt.Frame, pkt.Key.InPort(), pi, &pkt.Key)
}

// TestMeterPacketInStorm (issue 17.3): a packet-in storm (5,000 pps) into
// a flow behind a 500 pps meter reaches the controller at 500 pps ±10%.
// The meter is set with a meter-mod over the connection, as Antrea does.
func TestMeterPacketInStorm(t *testing.T) {
	p := flowtable.NewPipeline()
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	srv, cli := unixPair(t)
	c := serveConnOpts(t, b, wire.OFP13, srv, cli, ofproto.ConnOptions{PacketInQueueLimit: 10000})
	// No burst size: the bucket holds a second at the rate, which also
	// rides out the generator's stalls on a busy machine.
	mm := &wire.MeterMod{Command: 0, Flags: flowtable.MeterPktps, MeterID: 256,
		Bands: []wire.MeterBand{{Type: flowtable.MeterBandDrop, Rate: 500}}}
	if err := c.Send(wire.OFPT_METER_MOD, 3, encode(t, wire.OFP13, 3, mm)[wire.HeaderLen:]); err != nil {
		t.Fatal(err)
	}
	if err := c.Alive(); err != nil {
		t.Fatal(err)
	}
	if err := flowtext.Load(p, "priority=1 actions=meter:256,controller", nil); err != nil {
		t.Fatal(err)
	}
	k, err := flowtext.ParsePacket("in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2", nil)
	if err != nil {
		t.Fatal(err)
	}
	frame := flowtable.BuildFrame(&k, 0)

	const offered, seconds = 5000, 3
	done := make(chan struct{})
	var genTime time.Duration // how long the storm lasted, stalls included
	go func() {
		defer close(done)
		start := time.Now()
		defer func() { genTime = time.Since(start) }()
		sent := 0
		for sent < offered*seconds {
			due := int(time.Since(start) * offered / time.Second)
			for ; sent < due && sent < offered*seconds; sent++ {
				var pkt flowtable.Packet
				pkt.Key = k
				if pkt.Extract(frame) == nil {
					p.Run(&pkt, pinSink{b}, nil)
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	start := time.Now()
	var arrivals []time.Duration
	go func() {
		<-done // the storm is over: an echo reply ends the reading
		c.Send(wire.OFPT_ECHO_REQUEST, 0xec, nil)
	}()
	for {
		h, _, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if h.Type == wire.OFPT_PACKET_IN {
			arrivals = append(arrivals, time.Since(start))
		}
		if h.Type == wire.OFPT_ECHO_REPLY && h.Xid == 0xec {
			break
		}
	}
	// The meter passes its bucket (a second at the rate, full at the
	// start) and then the rate: the rate is what came beyond the bucket
	// over the storm's duration (a busy machine may stretch it).
	<-done
	rate := float64(len(arrivals)-500) / genTime.Seconds()
	t.Logf("%d packet-ins in %v: %.0f pps beyond the initial bucket", len(arrivals), genTime, rate)
	if rate < 450 || rate > 550 {
		t.Fatalf("controller got %.0f pps behind a 500 pps meter", rate)
	}
}

// TestMeterAction15 (issue 17.3): in OpenFlow 1.5 the meter is an action
// and may follow other actions, as ofnet sends `controller(...),meter:N`;
// OVS keeps it where it is, and so does govs (1.3 refuses that order).
func TestMeterAction15(t *testing.T) {
	p := flowtable.NewPipeline()
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	if err := p.AddMeter(&flowtable.MeterEntry{ID: 1, Flags: flowtable.MeterPktps,
		Bands: []flowtable.MeterBand{{Type: flowtable.MeterBandDrop, Rate: 5}}}); err != nil {
		t.Fatal(err)
	}
	c := connectTo(t, b, wire.OFP15)
	fm := &wire.FlowMod{Format: wire.FlowModOF11, TableID: 7, Priority: 9, BufferID: wire.OFP_NO_BUFFER,
		OutPort: wire.OFPP_ANY, OutGroup: wire.OFPG_ANY,
		Instructions: []wire.Instruction{{Type: wire.OFPIT_APPLY_ACTIONS, Actions: []wire.Action{
			&wire.ActionOutput{Port: 1}, &wire.ActionMeter{MeterID: 1}, &wire.ActionOutput{Port: 2}}}}}
	if err := c.Send(wire.OFPT_FLOW_MOD, 5, encode(t, wire.OFP15, 5, fm)[wire.HeaderLen:]); err != nil {
		t.Fatal(err)
	}
	if err := c.Alive(); err != nil {
		t.Fatal(err)
	}
	got := flowtext.DumpFlows(p, nil)
	if len(got) != 1 || !strings.Contains(got[0], "actions=output:1,meter:1,output:2") {
		t.Fatalf("flows %q", got)
	}
}
