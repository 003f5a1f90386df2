package ofproto_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"reflect"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// asyncSwitch is one bridge with in-process controller connections.
type asyncSwitch struct {
	t *testing.T
	p *flowtable.Pipeline
	b *ofproto.Bridge
}

func newAsyncSwitch(t *testing.T) *asyncSwitch {
	p := flowtable.NewPipeline()
	return &asyncSwitch{t, p, ofproto.NewBridge(&fakeDP{p}, nil)}
}

// connect opens a connection and waits until the bridge serves it (a
// barrier round trip), so that it gets asynchronous messages.
func (s *asyncSwitch) connect(version uint8) *oftest.Client {
	c := connectTo(s.t, s.b, version)
	if got := s.collectOne(c, nil); len(got) != 0 {
		s.t.Fatalf("unexpected messages after the handshake: %v", got)
	}
	return c
}

// send sends m on c and fails the test on an error reply before a barrier.
func (s *asyncSwitch) send(c *oftest.Client, m wire.Message) {
	s.t.Helper()
	if got := s.collectOne(c, func() { s.write(c, 0x51, m) }); len(got) != 0 {
		s.t.Fatalf("%T: got %v", m, got)
	}
}

func (s *asyncSwitch) write(c *oftest.Client, xid uint32, m wire.Message) {
	s.t.Helper()
	b, err := wire.EncodeMessage(nil, c.Version, xid, m)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := c.Send(b[1], xid, b[wire.HeaderLen:]); err != nil {
		s.t.Fatal(err)
	}
}

// collect runs trigger (which may make the switch send asynchronous
// messages, or send requests on a client), then a barrier on each client
// in turn, and returns what each received before its barrier reply. The
// switch writes on synchronous pipes, so every client reads all along; a
// client that sends requests in trigger must come first, so that what
// its requests send to the others arrives before their barriers.
func (s *asyncSwitch) collect(trigger func(), clients ...*oftest.Client) [][]wire.Message {
	s.t.Helper()
	const barrierXid = 0xba77
	type result struct {
		msgs []wire.Message
		err  error
	}
	done := make([]chan result, len(clients))
	for i, c := range clients {
		done[i] = make(chan result, 1)
		go func() {
			var r result
			for {
				h, body, err := c.Recv()
				if err != nil {
					r.err = err
					break
				}
				m, err := wire.DecodeMessage(h, body)
				if err != nil {
					r.err = err
					break
				}
				if _, ok := m.(*wire.BarrierReply); ok && h.Xid == barrierXid {
					break
				}
				if isAsync(m) && h.Xid != 0 {
					r.err = fmt.Errorf("asynchronous %T has xid %#x, want 0 as Open vSwitch sends", m, h.Xid)
					break
				}
				r.msgs = append(r.msgs, m)
			}
			done[i] <- r
		}()
	}
	if trigger != nil {
		trigger()
	}
	out := make([][]wire.Message, len(clients))
	for i, c := range clients {
		s.write(c, barrierXid, &wire.BarrierRequest{})
		r := <-done[i]
		if r.err != nil {
			s.t.Fatal(r.err)
		}
		out[i] = r.msgs
	}
	return out
}

// collectOne is collect for one client.
func (s *asyncSwitch) collectOne(c *oftest.Client, trigger func()) []wire.Message {
	s.t.Helper()
	return s.collect(trigger, c)[0]
}

// types lists the Go types of msgs, for comparisons.
func types(msgs []wire.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, reflect.TypeOf(m).Elem().Name())
	}
	return out
}

func (s *asyncSwitch) packetIn(reason uint8) func() {
	return func() {
		s.b.PacketIn(make([]byte, 60), 1, &flowtable.PacketIn{Reason: reason, MaxLen: 0xffff}, &flowtable.Key{})
	}
}

func (s *asyncSwitch) portStatus(reason uint8) func() {
	// Without a carrier: an added port that has one is followed by a
	// MODIFY that makes it LIVE (TestPortStatusLikeOVS).
	return func() { s.b.PortStatus(reason, ofproto.PortInfo{No: 3, Name: "p3", State: 1}) }
}

// flowMod encodes a flow in ovs-ofctl syntax as a flow-mod of c's version.
func (s *asyncSwitch) flowMod(c *oftest.Client, flow string, command uint8) wire.Message {
	fm, err := flowtext.ParseFlow(flow, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	w, err := translate.FlowModToWire(&translate.FlowMod{Flow: fm.Flow, Command: command, BufferID: wire.OFP_NO_BUFFER,
		OutPort: flowtable.PortNone, OutGroup: translate.GroupAny}, c.Version, s.p.TLV)
	if err != nil {
		s.t.Fatal(err)
	}
	return w
}

// deleteFlow adds a flow with send_flow_rem on c, then deletes it (flow
// removed reason OFPRR_DELETE) from c.
func (s *asyncSwitch) deleteFlow(c *oftest.Client) func() {
	return func() {
		s.write(c, 0x61, s.flowMod(c, "table=1,priority=7,ip,send_flow_rem actions=drop", uint8(wire.OFPFC_ADD)))
		s.write(c, 0x62, s.flowMod(c, "table=1,priority=7,ip actions=drop", uint8(wire.OFPFC_DELETE_STRICT)))
	}
}

func (s *asyncSwitch) getAsync(c *oftest.Client) *wire.AsyncConfig {
	got := s.collectOne(c, func() { s.write(c, 0x71, &wire.GetAsyncRequest{}) })
	if len(got) != 1 {
		s.t.Fatalf("get-async: got %v", types(got))
	}
	r, ok := got[0].(*wire.AsyncConfig)
	if !ok || !r.Reply {
		s.t.Fatalf("get-async: got %+v", got[0])
	}
	return r
}

func prop(typ uint16, mask uint32) wire.Property {
	return wire.Property{Type: typ, Data: binary.BigEndian.AppendUint32(nil, mask)}
}

// TestAsyncDefaults: until a controller sets its async configuration it
// gets Open vSwitch's defaults for its version: packet-ins but not for
// invalid_ttl, every port status and flow-removed, and GET_ASYNC says so.
func TestAsyncDefaults(t *testing.T) {
	s := newAsyncSwitch(t)
	c10, c13, c15 := s.connect(wire.OFP10), s.connect(wire.OFP13), s.connect(wire.OFP15)
	want13 := &wire.AsyncConfig{Reply: true, PacketInMask: [2]uint32{0x3, 0}, PortStatusMask: [2]uint32{0x7, 0x7}, FlowRemovedMask: [2]uint32{0xf, 0}}
	if got := s.getAsync(c13); !reflect.DeepEqual(got, want13) {
		t.Errorf("OpenFlow 1.3 defaults %+v, want %+v", got, want13)
	}
	want15 := &wire.AsyncConfig{Reply: true, Props: []wire.Property{
		prop(0, 0), prop(1, 0x3b), prop(2, 0x7), prop(3, 0x7), prop(4, 0), prop(5, 0x3f),
		prop(6, 0), prop(7, 0), prop(8, 0), prop(9, 0), prop(10, 0), prop(11, 0)}}
	if got := s.getAsync(c15); !reflect.DeepEqual(got, want15) {
		t.Errorf("OpenFlow 1.5 defaults %+v, want %+v", got, want15)
	}
	for _, tc := range []struct {
		name    string
		trigger func()
		want    []string // on every connection
	}{
		{"packet-in no_match", s.packetIn(flowtable.ReasonNoMatch), []string{"PacketIn"}},
		{"packet-in action", s.packetIn(flowtable.ReasonAction), []string{"PacketIn"}},
		{"packet-in invalid_ttl", s.packetIn(flowtable.ReasonInvalidTTL), nil},
		{"port-status modify", s.portStatus(2), []string{"PortStatus"}},
	} {
		for i, got := range s.collect(tc.trigger, c10, c13, c15) {
			if !reflect.DeepEqual(types(got), tc.want) {
				t.Errorf("%s, connection %d: got %v, want %v", tc.name, i, types(got), tc.want)
			}
		}
	}
}

// TestAsyncFilters: a controller's OFPT_SET_ASYNC chooses the packet-in,
// port-status and flow-removed reasons it gets.
func TestAsyncFilters(t *testing.T) {
	s := newAsyncSwitch(t)
	c := s.connect(wire.OFP13)
	other := s.connect(wire.OFP13) // keeps the defaults
	s.send(c, &wire.AsyncConfig{
		PacketInMask:    [2]uint32{1 << flowtable.ReasonInvalidTTL, 0},
		PortStatusMask:  [2]uint32{1 << 0, 0}, // OFPPR_ADD only
		FlowRemovedMask: [2]uint32{1 << 0, 0}, // OFPRR_IDLE_TIMEOUT only
	})
	for _, tc := range []struct {
		name           string
		trigger        func()
		forC, forOther []string
	}{
		{"packet-in action", s.packetIn(flowtable.ReasonAction), nil, []string{"PacketIn"}},
		{"packet-in invalid_ttl", s.packetIn(flowtable.ReasonInvalidTTL), []string{"PacketIn"}, nil},
		{"port-status add", s.portStatus(0), []string{"PortStatus"}, []string{"PortStatus"}},
		{"port-status delete", s.portStatus(1), nil, []string{"PortStatus"}},
		// c deletes a flow it added with send_flow_rem (OFPRR_DELETE).
		{"flow-removed delete", s.deleteFlow(c), nil, []string{"FlowRemoved"}},
	} {
		got := s.collect(tc.trigger, c, other)
		if !reflect.DeepEqual(types(got[0]), tc.forC) || !reflect.DeepEqual(types(got[1]), tc.forOther) {
			t.Errorf("%s: got %v and %v, want %v and %v", tc.name, types(got[0]), types(got[1]), tc.forC, tc.forOther)
		}
	}
	want := &wire.AsyncConfig{Reply: true, PacketInMask: [2]uint32{1 << flowtable.ReasonInvalidTTL, 0},
		PortStatusMask: [2]uint32{1, 0}, FlowRemovedMask: [2]uint32{1, 0}}
	if got := s.getAsync(c); !reflect.DeepEqual(got, want) {
		t.Errorf("get-async after set-async: %+v, want %+v", got, want)
	}
}

// TestAsyncRoles: a slave uses the second mask of each pair, a master or
// equal controller the first.
func TestAsyncRoles(t *testing.T) {
	s := newAsyncSwitch(t)
	master, slave := s.connect(wire.OFP13), s.connect(wire.OFP13)
	for _, x := range []struct {
		c    *oftest.Client
		role uint32
	}{{master, 2}, {slave, 3}} {
		if got := s.collectOne(x.c, func() { s.write(x.c, 0x81, &wire.RoleMsg{Role: x.role, GenerationID: 1}) }); len(got) != 1 {
			t.Fatalf("role request: got %v", types(got))
		}
	}
	for _, tc := range []struct {
		name                string
		trigger             func()
		forMaster, forSlave []string
	}{
		// By default a slave gets no packet-in but every port status.
		{"packet-in, defaults", s.packetIn(flowtable.ReasonAction), []string{"PacketIn"}, nil},
		{"port status, defaults", s.portStatus(0), []string{"PortStatus"}, []string{"PortStatus"}},
		// Both set packet-ins for the slave only, port status for the master only.
		{"set", func() {
			config := &wire.AsyncConfig{PacketInMask: [2]uint32{0, 1 << flowtable.ReasonAction}, PortStatusMask: [2]uint32{0x7, 0}}
			s.write(master, 0x82, config)
			s.write(slave, 0x83, config)
		}, nil, nil},
		{"packet-in", s.packetIn(flowtable.ReasonAction), nil, []string{"PacketIn"}},
		{"port status", s.portStatus(0), []string{"PortStatus"}, nil},
	} {
		got := s.collect(tc.trigger, master, slave)
		if !reflect.DeepEqual(types(got[0]), tc.forMaster) || !reflect.DeepEqual(types(got[1]), tc.forSlave) {
			t.Errorf("%s: master got %v, slave %v; want %v and %v", tc.name, types(got[0]), types(got[1]), tc.forMaster, tc.forSlave)
		}
	}
}

// TestAsyncNXAndProperties: OpenFlow 1.0 controllers set the masks with
// NXT_SET_ASYNC_CONFIG; 1.5 controllers with properties that change only
// the masks they name, and a bad property is refused as Open vSwitch
// refuses it, leaving the configuration as it was.
func TestAsyncNXAndProperties(t *testing.T) {
	s := newAsyncSwitch(t)
	c10, c15 := s.connect(wire.OFP10), s.connect(wire.OFP15)
	s.send(c10, &wire.AsyncConfig{NX: true, PortStatusMask: [2]uint32{1 << 1, 0}})
	s.send(c15, &wire.AsyncConfig{Props: []wire.Property{prop(1, 1<<flowtable.ReasonInvalidTTL)}}) // PACKET_IN_MASTER
	for _, tc := range []struct {
		name         string
		trigger      func()
		for10, for15 []string
	}{
		{"port status add", s.portStatus(0), nil, []string{"PortStatus"}},
		{"port status delete", s.portStatus(1), []string{"PortStatus"}, []string{"PortStatus"}},
		// The 1.3 layout replaces everything, packet-ins included; a 1.5
		// property only its own mask.
		{"packet-in action", s.packetIn(flowtable.ReasonAction), nil, nil},
		{"packet-in invalid_ttl", s.packetIn(flowtable.ReasonInvalidTTL), nil, []string{"PacketIn"}},
	} {
		got := s.collect(tc.trigger, c10, c15)
		if !reflect.DeepEqual(types(got[0]), tc.for10) || !reflect.DeepEqual(types(got[1]), tc.for15) {
			t.Errorf("%s: OpenFlow 1.0 got %v, 1.5 %v; want %v and %v", tc.name, types(got[0]), types(got[1]), tc.for10, tc.for15)
		}
	}

	before := s.getAsync(c15)
	exp := wire.Property{Type: 0xffff, Data: []byte{0, 0, 0x23, 0x20, 0, 0, 0, 1, 0, 0, 0, 0}}
	for _, tc := range []struct {
		name      string
		props     []wire.Property
		typ, code uint16
	}{
		{"reason unknown to the version", []wire.Property{prop(5, 1<<6)}, 15, 0}, // OFPACFC_INVALID
		{"unknown property type", []wire.Property{prop(12, 1)}, 15, 1},           // OFPACFC_UNSUPPORTED
		{"value of 8 bytes", []wire.Property{{Type: 1, Data: make([]byte, 8)}}, 14, 1},
		{"experimenter property", []wire.Property{exp}, 14, 6}, // OFPBPC_BAD_EXP_TYPE
		{"good then bad", []wire.Property{prop(3, 0), prop(5, 1<<7)}, 15, 0},
	} {
		got := s.collectOne(c15, func() { s.write(c15, 0x91, &wire.AsyncConfig{Props: tc.props}) })
		var em *wire.ErrorMsg
		if len(got) == 1 {
			em, _ = got[0].(*wire.ErrorMsg)
		}
		if em == nil || em.Type != tc.typ || em.Code != tc.code {
			t.Errorf("%s: got %+v, want error %d/%d", tc.name, got, tc.typ, tc.code)
		}
	}
	if after := s.getAsync(c15); !reflect.DeepEqual(after, before) {
		t.Errorf("refused set-async changed the configuration:\n%+v\nwas\n%+v", after, before)
	}
}

// TestNXFlowRemoved: an OpenFlow 1.0 connection in the NXM flow format
// gets NXT_FLOW_REMOVED, with the flow's nx_match; one in the OpenFlow 1.0
// flow format gets nothing (govs does not encode ofp10_match).
func TestNXFlowRemoved(t *testing.T) {
	s := newAsyncSwitch(t)
	c := s.connect(wire.OFP10)
	// Without NXT_FLOW_MOD_TABLE_ID a 1.0 flow-mod goes to table 0.
	addDelete := func() {
		s.write(c, 0x61, s.flowMod(c, "priority=7,ip,nw_src=10.0.0.1,send_flow_rem actions=drop", uint8(wire.OFPFC_ADD)))
		s.write(c, 0x62, s.flowMod(c, "priority=7,ip,nw_src=10.0.0.1 actions=drop", uint8(wire.OFPFC_DELETE_STRICT)))
	}
	if got := s.collectOne(c, addDelete); len(got) != 0 {
		t.Errorf("OpenFlow 1.0 flow format: got %v, want nothing", types(got))
	}
	s.send(c, &wire.NXSetFlowFormat{Format: wire.NXFF_NXM})
	got := s.collectOne(c, addDelete)
	if len(got) != 1 {
		t.Fatalf("NXM flow format: got %v, want one NXT_FLOW_REMOVED", types(got))
	}
	fr, ok := got[0].(*wire.FlowRemoved)
	if !ok || !fr.NX || fr.Reason != 2 || fr.TableID != 0 || fr.Priority != 7 {
		t.Fatalf("got %+v, want an NXT_FLOW_REMOVED for the deleted flow of table 0", got[0])
	}
	m, err := translate.MatchFromWireVersion(wire.OFP10, fr.Match, s.p.TLV)
	if err != nil {
		t.Fatal(err)
	}
	if got := flowtext.MatchString(&m, flowtable.DefaultPriority, nil); got != "ip,nw_src=10.0.0.1" {
		t.Errorf("flow-removed match %q, want ip,nw_src=10.0.0.1", got)
	}
}

// isAsync reports whether m is an asynchronous message of the switch.
func isAsync(m wire.Message) bool {
	switch m.(type) {
	case *wire.PacketIn, *wire.NXPacketIn2, *wire.FlowRemoved, *wire.PortStatus: // FlowRemoved also stands for NXT_FLOW_REMOVED
		return true
	}
	return false
}

// A service connection (one accepted on a passive listener, as ovs-ofctl
// makes on the management socket) gets no asynchronous message until it
// sets a nonzero miss_send_len, as in Open vSwitch; a controller
// connection gets them from the start.
func TestServiceConnectionAsync(t *testing.T) {
	s := newAsyncSwitch(t)
	srv, cli := net.Pipe()
	svc := serveConnOpts(t, s.b, wire.OFP13, srv, cli, ofproto.ConnOptions{Service: true})
	ctl := s.connect(wire.OFP13)
	got := s.collect(s.packetIn(flowtable.ReasonNoMatch), ctl, svc)
	if !reflect.DeepEqual(types(got[0]), []string{"PacketIn"}) || len(got[1]) != 0 {
		t.Fatalf("controller got %v, service connection got %v; want one packet-in for the controller only", types(got[0]), types(got[1]))
	}
	if got := s.collectOne(svc, func() { s.write(svc, 0x61, &wire.GetConfigRequest{}) }); len(got) != 1 ||
		got[0].(*wire.SwitchConfig).MissSendLen != 0 {
		t.Fatalf("service connection config %v, want miss_send_len 0", got)
	}
	s.send(svc, &wire.SwitchConfig{MissSendLen: 128})
	got = s.collect(s.packetIn(flowtable.ReasonNoMatch), ctl, svc)
	if !reflect.DeepEqual(types(got[0]), []string{"PacketIn"}) || !reflect.DeepEqual(types(got[1]), []string{"PacketIn"}) {
		t.Fatalf("after set-config: controller %v, service %v; want a packet-in each", types(got[0]), types(got[1]))
	}
}

// TestPacketIn2Cookie: NXPINT_COOKIE is padded to 8-byte alignment as OVS's
// ofpprop_put_be64 writes it (4 zero bytes, then the cookie; property
// length 16), which is where ofnet (libOpenflow) reads the cookie.
func TestPacketIn2Cookie(t *testing.T) {
	s := newAsyncSwitch(t)
	c := s.connect(wire.OFP15)
	s.send(c, &wire.NXSetPacketInFormat{Format: wire.NXPIF_NXT_PACKET_IN2})
	got := s.collectOne(c, func() {
		s.b.PacketIn(make([]byte, 60), 1, &flowtable.PacketIn{Reason: 1, MaxLen: 0xffff, Cookie: 0x0100050000000001}, &flowtable.Key{})
	})
	if len(got) != 1 {
		t.Fatalf("got %v", types(got))
	}
	pi, ok := got[0].(*wire.NXPacketIn2)
	if !ok {
		t.Fatalf("got %T", got[0])
	}
	want := []byte{0, 0, 0, 0, 0x01, 0x00, 0x05, 0, 0, 0, 0, 0x01}
	for _, p := range pi.Props {
		if p.Type == wire.NXPINT_COOKIE {
			if string(p.Data) != string(want) {
				t.Errorf("cookie property % x, want % x", p.Data, want)
			}
			return
		}
	}
	t.Errorf("no NXPINT_COOKIE in %+v", pi.Props)
}

// TestPacketInExplicitMiss: a packet-in from a table-miss flow is
// OFPR_NO_MATCH for an OpenFlow 1.3+ controller and OFPR_ACTION for a 1.0
// one, keeps the flow's max_len, and follows the no_match bit of the
// async configuration (OVS OFPR_EXPLICIT_MISS).
func TestPacketInExplicitMiss(t *testing.T) {
	s := newAsyncSwitch(t)
	c10, c13, c15 := s.connect(wire.OFP10), s.connect(wire.OFP13), s.connect(wire.OFP13)
	s.send(c15, &wire.AsyncConfig{PacketInMask: [2]uint32{1 << flowtable.ReasonAction, 0}})
	got := s.collect(func() {
		s.b.PacketIn(make([]byte, 200), 1, &flowtable.PacketIn{Reason: flowtable.ReasonExplicitMiss, MaxLen: 100}, &flowtable.Key{})
	}, c10, c13, c15)
	for i, want := range []uint8{flowtable.ReasonAction, flowtable.ReasonNoMatch} {
		if len(got[i]) != 1 {
			t.Fatalf("connection %d: got %v, want one packet-in", i, types(got[i]))
		}
		pi, ok := got[i][0].(*wire.PacketIn)
		if !ok || pi.Reason != want || len(pi.Data) != 100 || pi.TotalLen != 200 {
			t.Errorf("connection %d: got %+v, want reason %d with 100 of 200 bytes", i, got[i][0], want)
		}
	}
	if len(got[2]) != 0 {
		t.Errorf("a controller without no_match in its packet-in mask got %v", types(got[2]))
	}
}
