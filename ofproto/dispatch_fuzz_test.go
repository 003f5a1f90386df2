package ofproto_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// dispatchVersions are the versions FuzzDispatch speaks, by its version
// byte modulo 3.
var dispatchVersions = [3]uint8{wire.OFP10, wire.OFP13, wire.OFP15}

// FuzzDispatch sends one message of any type and body over a fresh
// connection of a fresh bridge (with conntrack, small limits) and then a
// barrier: the message's decoding and handling (meter-mods, NXT_CT_FLUSH
// and NXT_CT_FLUSH_ZONE, flow monitor requests, flow-mods with the newer
// set-fields and actions, group-mods, bundles, multiparts) must never panic
// (a recovered panic is counted in ofproto.PanicsRecovered) and the
// connection must answer the barrier within 20 s (a stall of the whole
// machine once took more than 5), or be closed by the switch, never
// wedged.
func FuzzDispatch(f *testing.F) {
	for _, s := range dispatchSeeds(f) {
		f.Add(s.v, s.typ, s.body)
	}
	f.Fuzz(func(t *testing.T, v, typ uint8, body []byte) {
		if len(body) > 4096 {
			return
		}
		version := dispatchVersions[int(v)%len(dispatchVersions)]
		p := flowtable.NewPipeline()
		p.Conntrack = ctadapter.New()
		p.SetLimits(flowtable.Limits{MaxFlowsPerTable: 64, MaxFlows: 128, MaxGroups: 16})
		b := ofproto.NewBridge(&fakeDP{p}, nil)
		srv, cli := net.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			ofproto.NewConn(srv, b, ofproto.ConnOptions{}).Serve(ctx)
			close(done)
		}()
		defer func() {
			cancel()
			cli.Close()
			<-done
		}()
		cli.SetDeadline(time.Now().Add(20 * time.Second))
		c, err := oftest.Handshake(cli, version)
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		panics := ofproto.PanicsRecovered.Load()
		if err := c.Send(typ, 0x10, body); err != nil {
			t.Fatalf("send: %v", err)
		}
		barrier := wire.OFPT_BARRIER_REQUEST
		if version == wire.OFP10 {
			barrier = wire.OFPT10_BARRIER_REQUEST
		}
		if err := c.Send(barrier, 0x11, nil); err != nil && !closed(err) {
			t.Fatalf("barrier: %v", err)
		}
		for err == nil {
			var h wire.Header
			h, _, err = c.Recv()
			if err == nil && h.Xid == 0x11 {
				break
			}
		}
		if err != nil && !closed(err) {
			t.Fatalf("type %d (%d bytes, OpenFlow 0x%02x): no barrier reply: %v", typ, len(body), version, err)
		}
		if n := ofproto.PanicsRecovered.Load() - panics; n != 0 {
			t.Fatalf("type %d (OpenFlow 0x%02x) body %x: %d panics recovered", typ, version, body, n)
		}
	})
}

// closed tells whether err is the switch closing the connection (allowed
// after a message it cannot go on from), not a timeout.
func closed(err error) bool {
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

type dispatchSeed struct {
	v, typ uint8
	body   []byte
}

// dispatchSeeds are messages of the handlers added last: meter-mods,
// conntrack flushes, flow monitor requests (in each version's framing),
// flow-mods with SCTP, ICMPv6/ND and MPLS set-fields and clone, group-mods
// and the malformed requests of internal/oftest.
func dispatchSeeds(f *testing.F) []dispatchSeed {
	var out []dispatchSeed
	for vi, version := range dispatchVersions {
		add := func(m wire.Message) {
			b, err := wire.EncodeMessage(nil, version, 1, m)
			if err != nil {
				return // not in this version
			}
			out = append(out, dispatchSeed{uint8(vi), b[1], b[wire.HeaderLen:]})
		}
		drop := wire.MeterBand{Type: wire.OFPMBT_DROP, Rate: 100, BurstSize: 10, Extra: make([]byte, 4)}
		add(&wire.MeterMod{Command: wire.OFPMC_ADD, Flags: wire.OFPMF_PKTPS | wire.OFPMF_BURST | wire.OFPMF_STATS, MeterID: 1, Bands: []wire.MeterBand{drop}})
		add(&wire.MeterMod{Command: wire.OFPMC_MODIFY, Flags: wire.OFPMF_KBPS, MeterID: 1, Bands: []wire.MeterBand{drop, drop}})
		add(&wire.MeterMod{Command: wire.OFPMC_DELETE, MeterID: 0xffffffff})
		add(&wire.NXCTFlushZone{Zone: 7})
		for _, flow := range []string{
			"table=1,priority=5,sctp,tp_src=9 actions=set_field:99->sctp_dst,output:2",
			"icmp6,icmp_type=135 actions=set_field:fe80::9->nd_target,set_field:02:00:00:00:00:09->nd_sll,output:2",
			"ip actions=push_mpls:0x8847,set_field:7->mpls_label,set_mpls_ttl:9,dec_mpls_ttl,output:2",
			"mpls,mpls_bos=1 actions=pop_mpls:0x0800,clone(set_field:10.0.0.9->ip_dst,output:3),output:2",
			"ip,ct_state=-trk actions=meter:1,ct(commit,zone=3,nat(src=10.1.1.1)),group:1",
		} {
			fm, err := flowtext.ParseFlow(flow, nil)
			if err != nil {
				f.Fatalf("%s: %v", flow, err)
			}
			w, err := translate.FlowModToWire(&translate.FlowMod{Flow: fm.Flow, Command: uint8(wire.OFPFC_ADD), BufferID: wire.OFP_NO_BUFFER,
				OutPort: flowtable.PortNone, OutGroup: translate.GroupAny}, version, nil)
			if err == nil {
				add(w)
			}
		}
		add(&wire.GroupMod{Command: wire.OFPGC_ADD, Type: 0, GroupID: 1, Buckets: []wire.Bucket{{}}})
	}
	// Flow monitor requests, one monitor of all flows each: NXST_FLOW_MONITOR
	// (1.0), ONFMP_FLOW_MONITOR (1.3), OFPMP_FLOW_MONITOR (1.5).
	out = append(out,
		dispatchSeed{0, wire.OFPT10_STATS_REQUEST, append([]byte{0xff, 0xff, 0, 0, 0, 0, 0x23, 0x20, 0, 0, 0, 2, 0, 0, 0, 0},
			0, 0, 0, 1, 0, 0x3f, 0xff, 0xff, 0, 0, 0xff, 0, 0, 0, 0, 0)},
		dispatchSeed{1, wire.OFPT_MULTIPART_REQUEST, append([]byte{0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x4f, 0x4e, 0x46, 0, 0, 0, 0x07, 0x4e},
			0, 0, 0, 1, 0, 0x3f, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1, 0, 4, 0, 0, 0, 0)},
		dispatchSeed{2, wire.OFPT_MULTIPART_REQUEST, append([]byte{0, 16, 0, 0, 0, 0, 0, 0},
			0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0x5f, 0xff, 0, 0, 1, 0, 4, 0, 0, 0, 0)},
	)
	// Meter statistics, configuration and features of all meters
	// (OFPMP_METER, _METER_CONFIG, _METER_FEATURES).
	for _, mp := range []byte{9, 10, 11} {
		for vi := 1; vi <= 2; vi++ {
			out = append(out, dispatchSeed{uint8(vi), wire.OFPT_MULTIPART_REQUEST, []byte{0, mp, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}})
		}
	}
	for _, m := range oftest.MalformedRequests() {
		out = append(out, dispatchSeed{1, m.Type, m.Body})
	}
	return out
}
