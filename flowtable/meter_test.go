package flowtable_test

import (
	"errors"
	"testing"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

type countSink struct{ outputs, packetIns int }

func (s *countSink) Output(uint32, *flowtable.Packet)                { s.outputs++ }
func (s *countSink) PacketIn(*flowtable.Packet, *flowtable.PacketIn) { s.packetIns++ }

// TestMeterRates: a meter passes its rate once its burst is spent, as
// OVS's userspace datapath meters do (token buckets refilled every
// millisecond, full at the start), in packets and in kilobits per
// second; the band counts what it drops and nothing after a dropped
// packet's meter runs. A fake clock makes the rates exact.
func TestMeterRates(t *testing.T) {
	for _, tc := range []struct {
		name      string
		flags     uint16
		bands     []flowtable.MeterBand
		pps, size int // offered load
		wantPPS   int // what passes once the burst is spent
		burst     int // packets the full bucket passes at the start
	}{
		{"500 pktps", flowtable.MeterPktps, []flowtable.MeterBand{{Type: flowtable.MeterBandDrop, Rate: 500}}, 5000, 60, 500, 500},
		{"500 pktps burst 100", flowtable.MeterPktps | flowtable.MeterBurst, []flowtable.MeterBand{{Type: flowtable.MeterBandDrop, Rate: 500, Burst: 100}}, 5000, 60, 500, 100},
		{"1000 kbps", flowtable.MeterKbps, []flowtable.MeterBand{{Type: flowtable.MeterBandDrop, Rate: 1000}}, 1000, 1000, 125, 125},
		{"two bands", flowtable.MeterPktps, []flowtable.MeterBand{{Type: flowtable.MeterBandDrop, Rate: 800}, {Type: flowtable.MeterBandDrop, Rate: 200}}, 5000, 60, 200, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			p := flowtable.NewPipeline()
			p.Now = func() time.Time { return now }
			m := &flowtable.MeterEntry{ID: 1, Flags: tc.flags, Bands: tc.bands}
			if err := p.AddMeter(m); err != nil {
				t.Fatal(err)
			}
			if err := flowtext.Load(p, "priority=1 actions=meter:1,controller", nil); err != nil {
				t.Fatal(err)
			}
			k, frame := packetSpec(t, p, "in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2")
			frame = append(frame, make([]byte, max(0, tc.size-len(frame)))...)
			sink := &countSink{}
			run := func(seconds int) int {
				before := sink.packetIns
				step := time.Second / time.Duration(tc.pps)
				for range seconds * tc.pps {
					var pkt flowtable.Packet
					pkt.Key = k
					if err := pkt.Extract(frame); err != nil {
						t.Fatal(err)
					}
					p.Run(&pkt, sink, nil)
					now = now.Add(step)
				}
				return sink.packetIns - before
			}
			first := run(1)
			steady := run(4)
			if want := tc.burst + tc.wantPPS; first < want*95/100 || first > want*105/100 {
				t.Errorf("first second passed %d, want about %d (burst %d + rate %d)", first, want, tc.burst, tc.wantPPS)
			}
			if want := 4 * tc.wantPPS; steady < want*98/100 || steady > want*102/100 {
				t.Errorf("4 s at %d pps passed %d, want about %d", tc.pps, steady, want)
			}
			sent := 5 * tc.pps
			var dropped uint64
			for i := range m.Bands {
				dropped += m.BandPackets[i].Load()
			}
			if got := m.Packets.Load(); got != uint64(sent) {
				t.Errorf("meter counted %d packets in, want %d", got, sent)
			}
			if int(dropped) != sent-first-steady {
				t.Errorf("bands dropped %d, want %d", dropped, sent-first-steady)
			}
		})
	}
}

// TestMeterTable: meter-mod semantics as OVS's (errors, a flow naming a
// missing meter refused, deleting a meter deletes its flows).
func TestMeterTable(t *testing.T) {
	p := flowtable.NewPipeline()
	drop := []flowtable.MeterBand{{Type: flowtable.MeterBandDrop, Rate: 10}}
	if err := p.AddMeter(&flowtable.MeterEntry{ID: 1, Flags: flowtable.MeterPktps, Bands: drop}); err != nil {
		t.Fatal(err)
	}
	if err := p.AddMeter(&flowtable.MeterEntry{ID: 1, Flags: flowtable.MeterPktps, Bands: drop}); !errors.Is(err, flowtable.ErrMeterExists) {
		t.Errorf("adding meter 1 twice: %v", err)
	}
	if err := p.ModifyMeter(&flowtable.MeterEntry{ID: 7, Flags: flowtable.MeterPktps, Bands: drop}); !errors.Is(err, flowtable.ErrUnknownMeter) {
		t.Errorf("modifying a missing meter: %v", err)
	}
	var me *flowtable.MeterError
	for _, bad := range []*flowtable.MeterEntry{
		{ID: 0, Flags: flowtable.MeterPktps, Bands: drop},
		{ID: flowtable.MeterAllID, Flags: flowtable.MeterPktps, Bands: drop},
		{ID: 2, Flags: flowtable.MeterPktps | flowtable.MeterKbps, Bands: drop},
		{ID: 2, Flags: flowtable.MeterPktps, Bands: []flowtable.MeterBand{{Type: flowtable.MeterBandDSCPRemark, Rate: 10}}},
		{ID: 2, Flags: flowtable.MeterPktps, Bands: []flowtable.MeterBand{{Type: flowtable.MeterBandDrop}}},
	} {
		if err := p.AddMeter(bad); !errors.As(err, &me) {
			t.Errorf("meter %d flags %#x bands %+v accepted (%v)", bad.ID, bad.Flags, bad.Bands, err)
		}
	}
	if err := flowtext.Load(p, "table=1,priority=1 actions=meter:9,output:1", nil); !errors.Is(err, flowtable.ErrUnknownMeter) {
		t.Errorf("flow naming meter 9: %v", err)
	}
	// Priority 3 meters its packets too, but as in OVS (ofpacts_get_meter)
	// a meter after another action neither counts in flow_count nor
	// takes the flow with it when the meter goes.
	if err := flowtext.Load(p, "table=1,priority=1 actions=meter:1,output:1\ntable=1,priority=2 actions=output:2", nil); err != nil {
		t.Fatal(err)
	}
	late, err := flowtext.ParseFlow("table=1,priority=3 actions=meter:1,output:3", nil)
	if err != nil {
		t.Fatal(err)
	}
	late.Actions[0], late.Actions[1] = late.Actions[1], late.Actions[0] // output:3,meter:1 (OpenFlow 1.5)
	if err := p.AddFlow(&late.Flow); err != nil {
		t.Fatal(err)
	}
	if n := p.MeterFlowCounts()[1]; n != 1 {
		t.Errorf("meter 1 flow count %d", n)
	}
	if gone := p.DeleteMeter(1); len(gone) != 1 || gone[0].Priority != 1 || p.NumFlows() != 2 {
		t.Errorf("deleting meter 1 removed %d flows, %d left", len(gone), p.NumFlows())
	}
	if len(p.Meters(flowtable.MeterAllID)) != 0 || p.DeleteMeter(55) != nil {
		t.Error("meters left after delete")
	}
}
