package ofproto_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/wire"
)

// fakeDP is a datapath with no ports.
type fakeDP struct{ p *flowtable.Pipeline }

func (f *fakeDP) Name() string                                       { return "br-test" }
func (f *fakeDP) DatapathID() uint64                                 { return 0x42 }
func (f *fakeDP) Pipeline() *flowtable.Pipeline                      { return f.p }
func (f *fakeDP) Ports() []ofproto.PortInfo                          { return nil }
func (f *fakeDP) SetPortConfig(no, config, mask uint32) error        { return nil }
func (f *fakeDP) PacketOut([]byte, uint32, []flowtable.Action) error { return nil }

func connect(t *testing.T, version uint8) (*oftest.Client, *flowtable.Pipeline) {
	return connectB(t, version)
}

func connectB(t testing.TB, version uint8) (*oftest.Client, *flowtable.Pipeline) {
	t.Helper()
	p := flowtable.NewPipeline()
	return connectTo(t, ofproto.NewBridge(&fakeDP{p}, nil), version), p
}

// connectTo opens one more in-process connection to bridge b.
func connectTo(t testing.TB, b *ofproto.Bridge, version uint8) *oftest.Client {
	t.Helper()
	srv, cli := net.Pipe()
	return serveConn(t, b, version, srv, cli)
}

// connectUnix is connectTo over a real AF_UNIX socket pair, buffered by
// the kernel like the management socket real clients use (net.Pipe hands
// every write over synchronously).
func connectUnix(t testing.TB, b *ofproto.Bridge, version uint8) *oftest.Client {
	t.Helper()
	srv, cli, err := oftest.SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	return serveConn(t, b, version, srv, cli)
}

// serveConn serves srv as a connection of b and handshakes on cli.
func serveConn(t testing.TB, b *ofproto.Bridge, version uint8, srv, cli net.Conn) *oftest.Client {
	t.Helper()
	return serveConnOpts(t, b, version, srv, cli, ofproto.ConnOptions{})
}

// serveConnOpts is serveConn with connection options.
func serveConnOpts(t testing.TB, b *ofproto.Bridge, version uint8, srv, cli net.Conn, opts ofproto.ConnOptions) *oftest.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		ofproto.NewConn(srv, b, opts).Serve(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		cli.Close()
		<-done
	})
	c, err := oftest.Handshake(cli, version)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMalformedMessages: bad requests get the OpenFlow error Open vSwitch
// sends (internal/e2e checks the same bytes against a real Open vSwitch),
// nothing is half-applied, and the connection keeps serving.
func TestMalformedMessages(t *testing.T) {
	want := map[string][2]uint16{
		"unknown OXM field":                        {4, 6}, // OFPBMC_BAD_FIELD
		"NXAST_DEC_TTL in OpenFlow 1.3":            {2, 3}, // OFPBAC_BAD_EXP_TYPE
		"NXAST_NAT with a bad length (os-ken 2.5)": {2, 1}, // OFPBAC_BAD_LEN
		"ipv4_src without eth_type":                {4, 9}, // OFPBMC_BAD_PREREQ
		"unknown message type":                     {1, 1}, // OFPBRC_BAD_TYPE
	}
	for _, m := range oftest.MalformedRequests() {
		t.Run(m.Name, func(t *testing.T) {
			c, p := connect(t, wire.OFP13)
			if err := c.Send(m.Type, 0x1234, m.Body); err != nil {
				t.Fatal(err)
			}
			typ, code, err := c.Error(0x1234)
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := want[m.Name]; ok && (typ != w[0] || code != w[1]) {
				t.Errorf("error type %d code %d, want type %d code %d", typ, code, w[0], w[1])
			}
			if err := c.Alive(); err != nil {
				t.Fatalf("connection dead after the bad message: %v", err)
			}
			if n := p.NumFlows(); n != 0 {
				t.Errorf("rejected request left %d flows", n)
			}
			// A good flow-mod still works.
			c.Send(wire.OFPT_FLOW_MOD, 0x99, oftest.FlowMod13(nil, oftest.Output13(1)))
			c.Send(wire.OFPT_BARRIER_REQUEST, 0x9a, nil)
			if h, _, err := c.Recv(); err != nil || h.Type != wire.OFPT_BARRIER_REPLY || h.Xid != 0x9a {
				t.Fatalf("got type %d xid %#x (%v), want the barrier reply", h.Type, h.Xid, err)
			}
			if n := p.NumFlows(); n != 1 {
				t.Errorf("good flow-mod: %d flows, want 1", n)
			}
		})
	}
	t.Run("wrong version after the handshake", func(t *testing.T) {
		c, _ := connect(t, wire.OFP13)
		c.Version = wire.OFP10
		c.Send(wire.OFPT_ECHO_REQUEST, 6, nil)
		typ, code, err := c.Error(6)
		if err != nil || typ != 1 || code != 0 {
			t.Errorf("got %d/%d (%v), want OFPBRC_BAD_VERSION", typ, code, err)
		}
		c.Version = wire.OFP13
		if err := c.Alive(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("length below the header closes", func(t *testing.T) {
		c, _ := connect(t, wire.OFP13)
		c.NC.Write([]byte{wire.OFP13, wire.OFPT_ECHO_REQUEST, 0, 4, 0, 0, 0, 7})
		typ, code, err := c.Error(7)
		if err != nil || typ != 1 || code != 6 {
			t.Errorf("got %d/%d (%v), want OFPBRC_BAD_LEN", typ, code, err)
		}
		c.NC.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.NC.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("connection not closed after an unrecoverable length: %v", err)
		}
	})
}
