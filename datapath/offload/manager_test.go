package offload

import (
	"slices"
	"testing"

	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/flowtable"
)

// TestOfferInstallsAfter: a flow gets its kernel entry at its
// InstallAfter-th established packet through userspace, not before; a
// FIN or RST (Forget) drops its count, and a count not advanced for two
// seconds (two agings) is forgotten, while one a second keeps it.
func TestOfferInstallsAfter(t *testing.T) {
	f := newOneFlow(t)
	m, fk := f.m, f.fk
	offer := func(n int) {
		for range n {
			f.offer(fk)
		}
	}
	entries := func(step string, want int) {
		t.Helper()
		if n := m.Stats().Entries; n != want {
			t.Errorf("%s: %d kernel entries, want %d", step, n, want)
		}
	}
	offer(InstallAfter - 1)
	entries("before the InstallAfter-th packet", 0)
	offer(1)
	entries("at the InstallAfter-th packet", 1)
	m.Forget(fk)
	entries("after Forget", 0)

	offer(InstallAfter - 1)
	m.Forget(fk)
	offer(1)
	entries("Forget dropped the count; one packet", 0)
	m.Forget(fk)

	offer(InstallAfter - 1)
	m.agePending()
	offer(1)
	entries("one packet a second", 1)
	m.Forget(fk)

	offer(InstallAfter - 1)
	m.agePending()
	m.agePending()
	offer(1)
	entries("idle for two agings", 0)
}

// oneFlow is a Manager and the packet of one established UDP flow
// (received on ifindex 5, sent out of 6) for the tests of its
// bookkeeping.
type oneFlow struct {
	m            *Manager
	fk           FlowKey
	gen          uint64
	start, final *flowtable.Key
	hits         []*flowcache.Entry
}

func newOneFlow(tb testing.TB) *oneFlow {
	tb.Helper()
	m, err := NewManager(nil, "")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	pkt, start, c := establish(tb, "", "output:2", "")
	fk, kind := KeyOf(5, start)
	if kind != KeyOffer {
		tb.Fatalf("key kind %d, want KeyOffer", kind)
	}
	m.mu.Lock()
	gen := m.gen
	m.mu.Unlock()
	return &oneFlow{m: m, fk: fk, gen: gen, start: start, final: &pkt.Key, hits: c.Hits}
}

// offer offers the flow's packet as fk's (the port and addresses may
// differ from the flow's).
func (f *oneFlow) offer(fk FlowKey) {
	f.m.Offer(fk, f.gen, f.start, f.final, f.hits, func(uint32, *flowtable.Key) (int, uint32, *Encap, bool) { return 6, 6, nil, true })
}

// tcpFrame is an IPv4/TCP frame with flags (no options, no payload).
func tcpFrame(src, dst [4]byte, sport, dport uint16, flags byte) []byte {
	f := ipFrame(src, dst, 6, sport, dport, 20)
	f[14+20+12], f[14+20+13] = 5<<4, flags
	return f
}

// offered is a packet's part in the kernel path, kept to be offered again.
type offered struct {
	fk           FlowKey
	start, final flowtable.Key
	hits         []*flowcache.Entry
}

// TestTCPConnectionEnds: a TCP flow gets its entry at its
// InstallAfter-th established packet, as UDP (a short connection gets
// none, and its end deletes nothing); an RST ends the connection's entries in both
// directions at once and keeps them from coming back while it closes;
// a first FIN deletes only its own direction's entry (the other may
// stream on, a half-close), the second FIN ends both; a SYN on the tuple
// lets it be offloaded again.
func TestTCPConnectionEnds(t *testing.T) {
	const (
		syn = 0x02
		ack = 0x10
		fin = 0x01
		rst = 0x04
	)
	flows := "table=0,ip,actions=ct(table=1,zone=1)\n" +
		"table=1,priority=10,ct_state=+new+trk,ip,in_port=1,actions=ct(commit,zone=1),output:2\n" +
		"table=1,priority=20,ct_state=+est+trk,ip,in_port=2,actions=output:1\n" +
		"table=1,priority=20,ct_state=+est+trk,ip,in_port=1,actions=output:2\n"
	for _, tc := range []struct {
		name string
		end  []frameIn // after both directions have entries
		left int       // entries right after end
	}{
		{"rst", []frameIn{{1, nil}}, 0},
		{"one fin", []frameIn{{1, nil}}, 1},
		{"two fins", []frameIn{{1, nil}, {2, nil}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewManager(nil, "")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			ct, c := newCachedPipeline(t, flows)
			m.mu.Lock()
			gen := m.gen
			m.mu.Unlock()
			output := func(port uint32, _ *flowtable.Key) (int, uint32, *Encap, bool) {
				return 100 + int(port), 100 + port, nil, true
			}
			a, b := [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
			frame := func(in uint32, flags byte) []byte {
				if in == 1 {
					return tcpFrame(a, b, 1000, 80, flags)
				}
				return tcpFrame(b, a, 80, 1000, flags)
			}
			var last [3]offered // by port
			send := func(in uint32, flags byte) {
				pkt := &flowtable.Packet{}
				pkt.Key.SetInPort(in)
				pkt.CtNow = ct.Now()
				if err := pkt.Extract(frame(in, flags)); err != nil {
					t.Fatal(err)
				}
				start := pkt.Key
				// Twice: the first fills the cache, which reports no hits
				// for an upcall (as for the packet loop's first packet).
				c.Process(pkt, nopSink{})
				fk, kind := KeyOf(100+int(in), &start)
				switch {
				case kind == KeyOffer:
					last[in] = offered{fk: fk, start: start, final: pkt.Key, hits: slices.Clone(c.Hits)}
					m.Offer(fk, gen, &start, &pkt.Key, c.Hits, output)
				case Ends(&start):
					m.End(fk, &start, &pkt.Key, c.Hits)
				default:
					m.Forget(fk)
				}
			}
			entries := func(step string, want int) {
				t.Helper()
				if n := m.Stats().Entries; n != want {
					t.Fatalf("%s: %d kernel entries, want %d", step, n, want)
				}
			}
			// Warm the cache with a first connection's packets, so that
			// the measured one hits it from its first packet on.
			for range 2 {
				send(1, syn)
				send(2, syn|ack)
				send(1, ack)
				send(2, ack)
				send(1, rst)
			}
			entries("after the warm-up connections", 0)
			// Short connections cost no map operation: nothing written,
			// and their RST deletes nothing it did not write.
			if st := m.Stats(); st.Installs != 0 || st.Deletes != 0 {
				t.Fatalf("short connections: %d installs, %d deletes, want none", st.Installs, st.Deletes)
			}
			send(1, syn)
			send(2, syn|ack)
			// A short connection: the handshake's ACK, a request, the
			// ACK of the answer; the answer.
			for range InstallAfter - 1 {
				send(1, ack)
			}
			send(2, ack)
			entries("after a short connection's packets", 0)
			send(1, ack)
			entries("at the client's InstallAfter-th established packet", 1)
			for range InstallAfter - 1 {
				send(2, ack)
			}
			entries("at the server's InstallAfter-th established packet", 2)
			for _, f := range tc.end {
				flags := byte(fin | ack)
				if tc.name == "rst" {
					flags = rst
				}
				send(f.in, flags)
			}
			entries("after "+tc.name, tc.left)
			// The established packets again (keepalives, late ACKs): an
			// ended connection gets no entry back.
			offer := func(in uint32) {
				o := last[in]
				for range InstallAfter {
					m.Offer(o.fk, gen, &o.start, &o.final, o.hits, output)
				}
			}
			offer(1)
			offer(2)
			if tc.left == 0 {
				entries("established packets after the end", 0)
				send(1, syn)
				offer(1)
				entries("after a new SYN on the tuple", 1)
			} else {
				entries("the half-closed direction's ACK", 2)
			}
		})
	}
}

// BenchmarkShortConnection is the kernel path's bookkeeping for one
// short connection, as the bench's crr makes them (the SYN and SYN-ACK
// Forget their flows, four established packets are counted, the RST
// ends it): what the poll thread pays per connection beyond the
// userspace path, with the counts of the last two seconds' connections
// in the maps.
func BenchmarkShortConnection(b *testing.B) {
	f := newOneFlow(b)
	m, client := f.m, f.fk
	server := client
	server.Ifindex, server.Src, server.Dst = 6, client.Dst, client.Src
	const perSecond = 8000
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%perSecond == 0 {
			m.agePending()
		}
		port := uint16(1024 + i%60000)
		client.SrcPort, server.DstPort = port, port
		m.Forget(client)
		m.Forget(server)
		f.offer(client)
		f.offer(client)
		f.offer(server)
		f.offer(client)
		m.End(client, f.start, f.final, f.hits)
	}
	if st := m.Stats(); st.Installs != 0 {
		b.Fatalf("%d installs, want none", st.Installs)
	}
}

// TestOfferAllocatesNothing: the kernel path's bookkeeping of a packet
// that installs nothing (a flow counted, forgotten, ended) does not
// allocate; the flow key used to escape to the heap with every packet.
func TestOfferAllocatesNothing(t *testing.T) {
	f := newOneFlow(t)
	m, fk := f.m, f.fk
	n := testing.AllocsPerRun(200, func() {
		m.Forget(fk)
		f.offer(fk)
		m.End(fk, f.start, f.final, f.hits)
	})
	if n != 0 {
		t.Errorf("%.1f allocations per short flow, want 0", n)
	}
	if st := m.Stats(); st.Installs != 0 {
		t.Errorf("%d installs, want none", st.Installs)
	}
}
