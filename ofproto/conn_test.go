package ofproto_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/wire"
)

// unixPair returns the two ends of a kernel-buffered AF_UNIX stream
// connection, like the bridge's .mgmt socket.
func unixPair(t testing.TB) (srv, cli net.Conn) {
	t.Helper()
	path := t.TempDir() + "/mgmt"
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	cli, err = net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv = <-acc
	if srv == nil {
		t.Fatal("accept failed")
	}
	return srv, cli
}

func encode(t testing.TB, version uint8, xid uint32, m wire.Message) []byte {
	t.Helper()
	b, err := wire.EncodeMessage(nil, version, xid, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConnTableFeaturesBurst is the ofnet session's burst (issue 17.1):
// the controller asks for the table features and, before it reads any of
// the replies, writes the 20 parts of a table features set. A switch that
// stops reading while its replies wait deadlocks with such a client; govs
// keeps reading and answers both.
func TestConnTableFeaturesBurst(t *testing.T) {
	p := flowtable.NewPipeline()
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	srv, cli := unixPair(t)
	c := serveConnOpts(t, b, wire.OFP15, srv, cli, ofproto.ConnOptions{})

	var tables []wire.TableFeatures
	for id := 0; id < wire.DefaultNumTables; id++ {
		tables = append(tables, wire.DefaultTableFeatures(uint8(id), "T"+string(rune('a'+id%26)), wire.OFP15))
	}
	sets, err := wire.TableFeaturesReplies(wire.OFP15, tables, 0)
	if err != nil {
		t.Fatal(err)
	}
	var burst []byte
	burst = append(burst, encode(t, wire.OFP15, 1, &wire.Multipart{Type: wire.OFPMP_TABLE_FEATURES})...)
	for i, s := range sets {
		req := &wire.Multipart{Type: wire.OFPMP_TABLE_FEATURES, TableFeatures: s.TableFeatures}
		if i < len(sets)-1 {
			req.Flags = wire.OFPMPF_REQ_MORE
		}
		burst = append(burst, encode(t, wire.OFP15, 2, req)...)
	}
	if len(burst) < 1<<20 {
		t.Fatalf("burst of %d bytes is too small to fill the socket buffers", len(burst))
	}
	// Write the whole burst before reading anything.
	cli.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := cli.Write(burst); err != nil {
		t.Fatalf("writing the burst without reading: %v (the switch stopped reading)", err)
	}
	counts := map[uint32]int{}
	last := map[uint32]bool{}
	for !last[1] || !last[2] {
		h, body, err := c.Recv()
		if err != nil {
			t.Fatalf("after %v replies: %v", counts, err)
		}
		if h.Type != wire.OFPT_MULTIPART_REPLY {
			t.Fatalf("xid %d: message type %d", h.Xid, h.Type)
		}
		counts[h.Xid]++
		flags := uint16(body[2])<<8 | uint16(body[3])
		last[h.Xid] = flags&wire.OFPMPF_REPLY_MORE == 0
	}
	if counts[1] != len(sets) || counts[2] != len(sets) {
		t.Fatalf("replies per request %v, want %d each", counts, len(sets))
	}
	if err := c.Alive(); err != nil {
		t.Fatal(err)
	}
}

// TestConnFloodWithoutReading: a client that writes requests and never
// reads its replies does not stop the switch reading (its flow-mods are
// applied while its echo replies wait), does not slow a second client,
// and is disconnected once its backlog passes the bound, so the memory
// it holds stays bounded.
func TestConnFloodWithoutReading(t *testing.T) {
	p := flowtable.NewPipeline()
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	const maxBacklog = 1 << 20
	srv, cli := unixPair(t)
	flooder := serveConnOpts(t, b, wire.OFP13, srv, cli, ofproto.ConnOptions{MaxBacklogBytes: maxBacklog})
	other := connectTo(t, b, wire.OFP13)
	before := ofproto.BacklogDisconnects.Load()

	echo := encode(t, wire.OFP13, 7, &wire.EchoRequest{Data: bytes.Repeat([]byte{0xee}, 32000)})
	flowMod := func(port uint32) []byte {
		h := wire.Header{Version: wire.OFP13, Type: wire.OFPT_FLOW_MOD, Xid: port}
		body := oftest.FlowMod13(nil, oftest.Output13(port))
		h.Length = uint16(wire.HeaderLen + len(body))
		return append(h.Append(nil), body...)
	}
	// Half a megabyte of echo replies: more than the socket buffers hold,
	// less than the bound. Then a flow-mod: it is applied although none of
	// the replies before it was read.
	var burst []byte
	for range 16 {
		burst = append(burst, echo...)
	}
	burst = append(burst, flowMod(1)...)
	cli.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := cli.Write(burst); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the flow-mod behind unread replies", func() bool { return p.NumFlows() == 1 })
	if err := other.Alive(); err != nil {
		t.Fatalf("second client while the first floods: %v", err)
	}

	// Keep flooding: the switch gives the flooder up at the bound.
	deadline := time.Now().Add(10 * time.Second)
	var werr error
	for time.Now().Before(deadline) {
		cli.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		if _, werr = cli.Write(echo); werr != nil && !errors.Is(werr, context.DeadlineExceeded) && !isTimeout(werr) {
			break
		}
		if err := other.Alive(); err != nil {
			t.Fatalf("second client while the first floods: %v", err)
		}
	}
	if got := ofproto.BacklogDisconnects.Load() - before; got != 1 {
		t.Fatalf("backlog disconnects %d, want 1 (last write error %v)", got, werr)
	}
	// What the flooder reads ends (EOF) within the bound plus the socket
	// buffers: the switch held no more than that for it.
	n := 0
	cli.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1<<16)
	for {
		k, err := flooder.NC.Read(buf)
		n += k
		if err != nil {
			break
		}
	}
	if n > 4*maxBacklog {
		t.Fatalf("read %d bytes of backlog, bound %d", n, maxBacklog)
	}
	if err := other.Alive(); err != nil {
		t.Fatal(err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestConnPacketInQueue: packet-ins to a controller that does not read
// never block the datapath. Up to the queue limit they wait and all
// arrive once the controller reads (10,000 here); past it they are
// dropped and counted, as OVS's rconn does.
func TestConnPacketInQueue(t *testing.T) {
	for _, tc := range []struct {
		name     string
		limit    int
		sent     int
		wantDrop bool
	}{
		{"10000 queued", 10000, 10000, false},
		{"over the default limit", 0, 10000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := flowtable.NewPipeline()
			b := ofproto.NewBridge(&fakeDP{p}, nil)
			srv, cli := unixPair(t)
			c := serveConnOpts(t, b, wire.OFP13, srv, cli, ofproto.ConnOptions{PacketInQueueLimit: tc.limit})
			if err := c.Alive(); err != nil { // registered with the bridge
				t.Fatal(err)
			}
			dropped := ofproto.PacketInsDropped.Load()
			frame := bytes.Repeat([]byte{0xab}, 100)
			var k flowtable.Key
			start := time.Now()
			for range tc.sent {
				b.PacketIn(frame, 1, &flowtable.PacketIn{Reason: flowtable.ReasonNoMatch}, &k)
			}
			// A deadlock guard, not a speed check (BenchmarkPacketInBurst
			// measures the cost): queueing must never wait for the reader.
			if d := time.Since(start); d > 30*time.Second {
				t.Fatalf("%d packet-ins to a controller that does not read took %v", tc.sent, d)
			}
			drops := int(ofproto.PacketInsDropped.Load() - dropped)
			got := 0
			for got+drops < tc.sent {
				h, _, err := c.Recv()
				if err != nil {
					t.Fatalf("after %d packet-ins (%d dropped): %v", got, drops, err)
				}
				if h.Type == wire.OFPT_PACKET_IN {
					got++
				}
			}
			if tc.wantDrop != (drops > 0) || got+drops != tc.sent {
				t.Fatalf("received %d, dropped %d of %d", got, drops, tc.sent)
			}
			if err := c.Alive(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// panicky is a handler with a bug: it panics on every flow-mod.
type panicky struct{ *ofproto.Bridge }

func (p panicky) HandleMessage(c *ofproto.Conn, h wire.Header, raw []byte, m wire.Message) error {
	if _, ok := m.(*wire.FlowMod); ok {
		var rules []int
		_ = rules[len(raw)] // index out of range
	}
	return p.Bridge.HandleMessage(c, h, raw, m)
}

// TestConnRecoversPanics (issue 15): a request whose decoding or handling
// panics gets an OFPT_ERROR, is counted, and the connection and the
// daemon go on.
func TestConnRecoversPanics(t *testing.T) {
	p := flowtable.NewPipeline()
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	srv, cli := unixPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		ofproto.NewConn(srv, panicky{b}, ofproto.ConnOptions{}).Serve(ctx)
		close(done)
	}()
	t.Cleanup(func() { cancel(); cli.Close(); <-done })
	c, err := oftest.Handshake(cli, wire.OFP13)
	if err != nil {
		t.Fatal(err)
	}
	before := ofproto.PanicsRecovered.Load()
	if err := c.Send(wire.OFPT_FLOW_MOD, 0x99, oftest.FlowMod13(nil, oftest.Output13(1))); err != nil {
		t.Fatal(err)
	}
	typ, code, err := c.Error(0x99)
	if err != nil || typ != 1 || code != 5 { // OFPET_BAD_REQUEST, OFPBRC_EPERM
		t.Fatalf("error %d/%d (%v), want 1/5", typ, code, err)
	}
	if got := ofproto.PanicsRecovered.Load() - before; got != 1 {
		t.Fatalf("panics recovered %d, want 1", got)
	}
	if err := c.Alive(); err != nil {
		t.Fatal(err)
	}
}

// TestConnRepliesInOrderPastSocketBuffer: replies written at once while
// nothing is queued, partly written when the socket fills and finished
// by the writer, reach a client that reads late whole and in order.
func TestConnRepliesInOrderPastSocketBuffer(t *testing.T) {
	p := flowtable.NewPipeline()
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	srv, cli := unixPair(t)
	c := serveConnOpts(t, b, wire.OFP13, srv, cli, ofproto.ConnOptions{})
	const n = 40 // 40 x 30 KB: several times what the socket buffers hold
	var burst []byte
	for i := range n {
		data := bytes.Repeat([]byte{byte(i)}, 30000+i)
		burst = append(burst, encode(t, wire.OFP13, uint32(i), &wire.EchoRequest{Data: data})...)
	}
	cli.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := cli.Write(burst); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the switch fills the socket before anything is read
	for i := range n {
		h, body, err := c.Recv()
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if h.Type != wire.OFPT_ECHO_REPLY || h.Xid != uint32(i) || !bytes.Equal(body, bytes.Repeat([]byte{byte(i)}, 30000+i)) {
			t.Fatalf("reply %d: type %d xid %d, %d bytes of data", i, h.Type, h.Xid, len(body))
		}
	}
}

// TestTableFeaturesKeptEncoded: the table features replies, kept encoded
// between requests (ovs-ofctl asks before every flow command), carry each
// request's xid and the connection's version, and follow a set of the
// table names.
func TestTableFeaturesKeptEncoded(t *testing.T) {
	p := flowtable.NewPipeline()
	b := ofproto.NewBridge(&fakeDP{p}, nil)
	names := func(c *oftest.Client, version uint8, xid uint32) []string {
		t.Helper()
		body, _ := (&wire.Multipart{Type: wire.OFPMP_TABLE_FEATURES}).EncodeBody(version, nil)
		c.Send(wire.OFPT_MULTIPART_REQUEST, xid, body)
		var out []string
		for {
			h, body, err := c.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if h.Xid != xid || h.Version != version || h.Type != wire.OFPT_MULTIPART_REPLY {
				t.Fatalf("reply xid %#x version %d type %d, want xid %#x version %d", h.Xid, h.Version, h.Type, xid, version)
			}
			m, err := wire.DecodeMessage(h, body)
			if err != nil {
				t.Fatal(err)
			}
			rep := m.(*wire.Multipart)
			for i := range rep.TableFeatures {
				out = append(out, rep.TableFeatures[i].NameString())
			}
			if rep.Flags&wire.OFPMPF_REPLY_MORE == 0 {
				return out
			}
		}
	}
	c15, c13 := connectTo(t, b, wire.OFP15), connectTo(t, b, wire.OFP13)
	first := names(c15, wire.OFP15, 1)
	if len(first) != wire.DefaultNumTables || first[0] != "" {
		t.Fatalf("%d tables, table 0 named %q", len(first), first[0])
	}
	if again := names(c15, wire.OFP15, 2); !slices.Equal(again, first) {
		t.Errorf("second reply differs")
	}
	if v13 := names(c13, wire.OFP13, 3); !slices.Equal(v13, first) {
		t.Errorf("OpenFlow 1.3 reply differs")
	}
	set := wire.DefaultTableFeatures(0, "Classifier", wire.OFP15)
	body, _ := (&wire.Multipart{Type: wire.OFPMP_TABLE_FEATURES, TableFeatures: []wire.TableFeatures{set}}).EncodeBody(wire.OFP15, nil)
	c15.Send(wire.OFPT_MULTIPART_REQUEST, 4, body)
	for {
		_, body, err := c15.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if (uint16(body[2])<<8|uint16(body[3]))&wire.OFPMPF_REPLY_MORE == 0 {
			break
		}
	}
	for _, tc := range []struct {
		c *oftest.Client
		v uint8
	}{{c15, wire.OFP15}, {c13, wire.OFP13}} {
		if got := names(tc.c, tc.v, 5); got[0] != "Classifier" {
			t.Errorf("version %d after the set: table 0 named %q", tc.v, got[0])
		}
	}
}
