package ofproto_test

import (
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/wire"
)

// flushRecorder is a connection tracker that records zone flushes.
type flushRecorder struct{ zones []uint16 }

func (f *flushRecorder) Execute(*flowtable.Packet, *flowtable.CTRequest) {}
func (f *flushRecorder) FlushZone(zone uint16) int {
	f.zones = append(f.zones, zone)
	return 0
}

// TestCTFlushZone: NXT_CT_FLUSH_ZONE (ovn-controller sends it when it
// claims a port) flushes the zone, with no reply, in every version; a
// short body gets OFPBRC_BAD_LEN.
func TestCTFlushZone(t *testing.T) {
	for _, v := range []uint8{wire.OFP10, wire.OFP13, wire.OFP15} {
		p := flowtable.NewPipeline()
		ct := &flushRecorder{}
		p.Conntrack = ct
		b := ofproto.NewBridge(&fakeDP{p}, nil)
		c := connectTo(t, b, v)
		gen := p.Generation.Load()
		if err := c.Send(wire.OFPT_EXPERIMENTER, 9, encode(t, v, 9, &wire.NXCTFlushZone{Zone: 3})[wire.HeaderLen:]); err != nil {
			t.Fatal(err)
		}
		if err := c.Alive(); err != nil {
			t.Fatal(err)
		}
		if len(ct.zones) != 1 || ct.zones[0] != 3 {
			t.Errorf("version %#x: flushed zones %v, want [3]", v, ct.zones)
		}
		if p.Generation.Load() == gen {
			t.Errorf("version %#x: a zone flush left the generation (kernel fast path entries) alone", v)
		}
		body := encode(t, v, 10, &wire.NXCTFlushZone{Zone: 3})[wire.HeaderLen:]
		if err := c.Send(wire.OFPT_EXPERIMENTER, 10, body[:len(body)-2]); err != nil {
			t.Fatal(err)
		}
		typ, code, err := c.Error(10)
		// OFPET_BAD_REQUEST (1), OFPBRC_BAD_LEN (6) in every version.
		if err != nil || typ != 1 || code != 6 {
			t.Errorf("version %#x: short NXT_CT_FLUSH_ZONE: error %d/%d %v, want OFPBRC_BAD_LEN", v, typ, code, err)
		}
	}
}
