package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/internal/sharedspec"
	"github.com/govs-project/govs/ofproto/wire"
)

// hostileSeeds returns real OpenFlow messages to mutate: every message of
// the protocol captures (clients' and switches' alike) and a few the
// project encodes itself, in each version.
func hostileSeeds(t *testing.T) [][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(sharedspec.Captures(), "*.pcap.gz"))
	var out [][]byte
	for _, f := range files {
		ms, err := sharedspec.ReadCapture(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if len(m.Raw) <= 4096 {
				out = append(out, m.Raw)
			}
		}
	}
	if len(out) < 1000 {
		t.Fatalf("only %d messages in the captures under %s", len(out), sharedspec.Captures())
	}
	own := []wire.Message{
		&wire.EchoRequest{Data: []byte("hostile")}, &wire.FeaturesRequest{}, &wire.BarrierRequest{},
		&wire.NXSetFlowFormat{Format: 2}, &wire.NXTLVTableRequest{},
		&wire.NXTLVTableMod{Maps: []wire.NXTLVMap{{OptClass: 0x104, OptType: 0x80, OptLen: 4, Index: 0}}},
		&wire.Multipart{Type: wire.OFPMP_DESC}, &wire.Multipart{Type: wire.OFPMP_PORT_DESC},
		&wire.Multipart{Type: wire.OFPMP_GROUP_DESC}, &wire.Multipart{Type: wire.OFPMP_FLOW, FlowRequest: &wire.FlowStatsRequest{}},
		&wire.PacketOut{BufferID: wire.OFP_NO_BUFFER, InPort: 0xfffffffd, Data: make([]byte, 60)},
	}
	for _, m := range own {
		for _, v := range []uint8{wire.OFP10, wire.OFP13, wire.OFP15} {
			if b, err := wire.EncodeMessage(nil, v, 7, m); err == nil {
				out = append(out, b)
			}
		}
	}
	return out
}

// mutate returns a damaged copy of a seed (or pure noise): byte flips,
// truncations, extensions, splices and wrong lengths. Most keep the header
// length consistent so that the decoders, not the framing, see the damage,
// and the connection's version (a message of another version makes the
// daemon close the connection, as OVS's vconn does).
func mutate(rng *rand.Rand, seeds [][]byte, version uint8, buf []byte) []byte {
	src := seeds[rng.IntN(len(seeds))]
	b := append(buf[:0], src...)
	switch rng.IntN(8) {
	case 0, 1, 2: // flip a few bytes, more often near the front
		for n := 1 + rng.IntN(4); n > 0; n-- {
			i := 8 + rng.IntN(len(b)-7)
			if rng.IntN(2) == 0 && len(b) > 40 {
				i = 8 + rng.IntN(32)
			}
			if i < len(b) {
				b[i] = byte(rng.Uint32())
			}
		}
	case 3: // truncate
		b = b[:8+rng.IntN(len(b)-7)]
	case 4: // extend with noise
		for n := rng.IntN(64); n > 0; n-- {
			b = append(b, byte(rng.Uint32()))
		}
	case 5: // splice the tail of another message
		o := seeds[rng.IntN(len(seeds))]
		cut := 8 + rng.IntN(len(b)-7)
		b = append(b[:cut], o[8+rng.IntN(len(o)-7):]...)
	case 6: // a random header type and noise body
		b = b[:8]
		b[1] = byte(rng.IntN(40))
		for n := rng.IntN(128); n > 0; n-- {
			b = append(b, byte(rng.Uint32()))
		}
	case 7: // an interesting small value in a 16- or 32-bit field
		if len(b) >= 12 {
			i := 8 + rng.IntN(len(b)-11)
			v := []uint32{0, 1, 4, 7, 8, 0xffff, 0xfffffff8, 0xffffffff}[rng.IntN(8)]
			binary.BigEndian.PutUint32(b[i:], v)
		}
	}
	if len(b) > 0xffff {
		b = b[:0xffff]
	}
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	if rng.IntN(200) == 0 { // now and then a length that breaks the framing
		binary.BigEndian.PutUint16(b[2:], uint16(rng.IntN(len(b)+16)))
	}
	binary.BigEndian.PutUint32(b[4:], rng.Uint32())
	if rng.IntN(200) != 0 {
		b[0] = version
	}
	return b
}

// hostileConn is one attacking connection. A reader goroutine drops the
// replies and signals the echo replies that close each batch.
type hostileConn struct {
	nc      net.Conn
	version uint8
	echoes  chan uint32 // xids of echo replies
	done    chan struct{}
	recent  [][]byte // the messages sent since the last answered echo
}

func dialHostile(dial func() (net.Conn, error), version uint8) (*hostileConn, error) {
	nc, err := dial()
	if err != nil {
		return nil, err
	}
	hello, _ := wire.EncodeMessage(nil, version, 1, wire.NewHello(1<<version))
	if _, err := nc.Write(hello); err != nil {
		nc.Close()
		return nil, err
	}
	c := &hostileConn{nc: nc, version: version, echoes: make(chan uint32, 16), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, wire.MaxMessageLen)
		for {
			h, _, err := wire.ReadMessage(nc, buf)
			if err != nil {
				return
			}
			if h.Type == wire.OFPT_ECHO_REPLY && h.Xid>>24 == 0xec {
				select {
				case c.echoes <- h.Xid:
				default:
				}
			}
		}
	}()
	return c, nil
}

// sync sends an echo request and waits for its reply: every message sent
// before it has been handled. false: the daemon closed the connection.
func (c *hostileConn) sync(t *testing.T, xid uint32) bool {
	echo, _ := wire.EncodeMessage(nil, c.version, 0xec000000|xid&0xffffff, &wire.EchoRequest{})
	c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.nc.Write(echo); err != nil {
		return false
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-c.echoes:
			if got == 0xec000000|xid&0xffffff {
				c.recent = c.recent[:0]
				return true
			}
		case <-c.done:
			return false
		case <-timeout:
			var hex []string
			for _, m := range c.recent {
				hex = append(hex, fmt.Sprintf("%x", m))
			}
			t.Fatalf("connection wedged: no echo reply in 10s; the messages since the last answered echo:\n%s", strings.Join(hex, "\n"))
		}
	}
}

func (c *hostileConn) close() { c.nc.Close(); <-c.done }

// TestHostileClients sends mutated and random OpenFlow messages (at least
// 100,000; GOVS_HOSTILE_MESSAGES raises it) to a running govs-vswitchd,
// alternating between its unix .mgmt socket and a ptcp listener, and
// reconnects whenever the daemon closes a connection on a bad message.
// Between rounds a well-behaved ovs-ofctl must get its answers, and the
// daemon must never die (issue 15).
func TestHostileClients(t *testing.T) {
	total := 100_000
	if s := os.Getenv("GOVS_HOSTILE_MESSAGES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("GOVS_HOSTILE_MESSAGES: %v", err)
		}
		total = n
	}
	var extra []string // e.g. GOVS_HOSTILE_DAEMON_ARGS=--log-level=debug to see why connections end
	if a := os.Getenv("GOVS_HOSTILE_DAEMON_ARGS"); a != "" {
		extra = strings.Fields(a)
	}
	n := startNode(t, extra...)
	n.mustRun("add-br", "br-int", "listener=ptcp:6653:127.0.0.1")
	mgmt := filepath.Join(n.rundir, "br-int.mgmt")
	seeds := hostileSeeds(t)
	dials := map[string]func() (net.Conn, error){
		"unix": func() (net.Conn, error) { return net.DialTimeout("unix", mgmt, 5*time.Second) },
		"ptcp": func() (net.Conn, error) {
			var nc net.Conn
			err := n.ns.Do(func() (err error) { nc, err = net.DialTimeout("tcp", "127.0.0.1:6653", 5*time.Second); return })
			return nc, err
		},
	}
	rng := rand.New(rand.NewPCG(15, uint64(time.Now().UnixNano())))
	const round, batch = 2000, 100
	versions := []uint8{wire.OFP10, wire.OFP13, wire.OFP15}
	handled, lost, reconnects := map[string]int{}, map[string]int{}, map[string]int{}
	buf := make([]byte, 0, 0x10000)
	start := time.Now()
	for done := 0; done < total; {
		for _, name := range []string{"unix", "ptcp"} {
			var c *hostileConn
			pending := 0 // sent since the last answered echo
			for i := 0; i < round/2; i++ {
				if c == nil {
					var err error
					if c, err = dialHostile(dials[name], versions[rng.IntN(3)]); err != nil {
						t.Fatalf("after %d messages: %s: cannot connect: %v", done, name, err)
					}
				}
				msg := mutate(rng, seeds, c.version, buf)
				framed := int(binary.BigEndian.Uint16(msg[2:])) == len(msg)
				if !framed && pending > 0 {
					// Account for what came before the broken framing.
					if c.sync(t, uint32(done)) {
						handled[name] += pending
					} else {
						lost[name] += pending
					}
					pending = 0
				}
				c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
				_, err := c.nc.Write(msg)
				c.recent = append(c.recent, bytes.Clone(msg))
				pending++
				done++
				// A broken framing leaves the stream unreadable (the
				// daemon waits for bytes or closes): start afresh.
				if err == nil && framed && pending < batch {
					continue
				}
				if err == nil && framed && c.sync(t, uint32(done)) {
					handled[name] += pending
				} else {
					lost[name] += pending
					c.close()
					c = nil
					reconnects[name]++
				}
				pending = 0
			}
			if c != nil {
				if c.sync(t, uint32(done)) {
					handled[name] += pending
				} else {
					lost[name] += pending
				}
				c.close()
			}
		}
		// The well-behaved client is answered, and the daemon lives.
		// (The hostile messages add and delete flows too: only the answer
		// is checked, not the flows.)
		if out, err := ofctl("unix:"+mgmt, "dump-flows"); err != nil || !strings.Contains(out, "NXST_FLOW reply") {
			t.Fatalf("after %d hostile messages ovs-ofctl dump-flows: %v\n%s", done, err, out)
		}
		if out, err := n.run("show"); err != nil || !strings.Contains(out, "br-int") {
			t.Fatalf("after %d hostile messages govs show: %v\n%s", done, err, out)
		}
	}
	sum := func(m map[string]int) int { return m["unix"] + m["ptcp"] }
	if sum(handled) < total/2 {
		t.Errorf("only %d of %d messages were followed by an answered echo (%d lost with a closed connection)", sum(handled), sum(handled)+sum(lost), sum(lost))
	}
	t.Logf("%d hostile messages in %v: %d handled before an answered echo (unix %d, ptcp %d), %d on connections the daemon closed; %d reconnects (unix %d, ptcp %d); ovs-ofctl answered after each %d",
		sum(handled)+sum(lost), time.Since(start).Round(time.Millisecond), sum(handled), handled["unix"], handled["ptcp"], sum(lost),
		sum(reconnects), reconnects["unix"], reconnects["ptcp"], round)
	log, _ := os.ReadFile(filepath.Join(n.rundir, "govs-vswitchd.log"))
	if strings.Contains(string(log), "panic") {
		t.Errorf("the daemon log mentions a panic:\n%s", log)
	}
}
