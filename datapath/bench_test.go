package datapath

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// tcpFrame builds an IPv4/TCP frame of worker 1's frontend <-> backend1
// connection with the given sequence numbers, flags and payload length.
func tcpFrame(tb testing.TB, fromFrontend bool, flags string, seq, ack uint32, payload int) []byte {
	tb.Helper()
	spec := "tcp,dl_src=" + frontendMAC + ",dl_dst=" + backend1MAC +
		",nw_src=10.222.1.48,nw_dst=10.222.1.47,nw_ttl=64,tp_src=40000,tp_dst=80,tcp_flags=" + flags
	if !fromFrontend {
		spec = "tcp,dl_src=" + backend1MAC + ",dl_dst=" + frontendMAC +
			",nw_src=10.222.1.47,nw_dst=10.222.1.48,nw_ttl=64,tp_src=80,tp_dst=40000,tcp_flags=" + flags
	}
	k, err := flowtext.ParsePacket(spec, nil)
	if err != nil {
		tb.Fatal(err)
	}
	f := flowtable.BuildFrame(&k, payload)
	setTCPSeq(f, seq, ack)
	return f
}

// setTCPSeq writes sequence and acknowledgment numbers into an untagged
// IPv4/TCP frame (20-byte IP header) and recomputes the TCP checksum.
func setTCPSeq(f []byte, seq, ack uint32) {
	const l3, l4 = 14, 34
	binary.BigEndian.PutUint32(f[l4+4:], seq)
	binary.BigEndian.PutUint32(f[l4+8:], ack)
	f[l4+16], f[l4+17] = 0, 0
	seg := f[l4:]
	var s uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			s += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			s += uint32(b[len(b)-1]) << 8
		}
	}
	add(f[l3+12 : l3+20]) // source and destination addresses
	s += uint32(flowtable.IPProtoTCP) + uint32(len(seg))
	add(seg)
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	binary.BigEndian.PutUint16(f[l4+16:], ^uint16(s))
}

// establishedBridge is worker 1's bridge with counting memory ports and a
// frontend -> backend1 TCP 80 connection through its 3-way handshake. It
// returns the bridge, the ports and a data segment of that connection.
// With record, the ports keep what they send (MemPort.Sent).
func establishedBridge(b testing.TB, record bool) (*Bridge, map[uint32]*MemPort, []byte) {
	br := newBridge(b, seeds.Worker1, true)
	ps := map[uint32]*MemPort{}
	for _, n := range []uint32{portTun, portGW, portBackend1, portFrontend} {
		// Bad lengths reach the loop, which must cope (hostile frames).
		mp := NewMemPort(MemPortConfig{Name: "mem", PassBadLengths: true, MTU: 9000, Record: record})
		if _, err := br.AddPort(n, mp, KindMemory); err != nil {
			b.Fatal(err)
		}
		ps[n] = mp
	}
	const cISN, sISN = 1000, 5000
	inject(b, br, ps, portFrontend, tcpFrame(b, true, "syn", cISN, 0, 0))
	inject(b, br, ps, portBackend1, tcpFrame(b, false, "syn|ack", sISN, cISN+1, 0))
	inject(b, br, ps, portFrontend, tcpFrame(b, true, "ack", cISN+1, sISN+1, 0))
	if got := ps[portBackend1].Stats().TxPackets; got != 2 {
		b.Fatalf("handshake: backend1 got %d frames, want 2", got)
	}
	data := tcpFrame(b, true, "ack|psh", cISN+1, sISN+1, 64)
	// Check the data segment is +est (a trace run; the packet is a
	// retransmission for conntrack, which keeps the state).
	var pkt flowtable.Packet
	pkt.Key.SetInPort(portFrontend)
	if err := pkt.Extract(append([]byte(nil), data...)); err != nil {
		b.Fatal(err)
	}
	var tr flowtable.Trace
	if res := br.pipeline.Run(&pkt, nil, &tr); res.Outputs != 1 {
		b.Fatalf("data segment: %d outputs, want 1", res.Outputs)
	}
	if st := tr.Final.CtState(); st&flowtable.CtStateEst == 0 || st&flowtable.CtStateNew != 0 {
		b.Fatalf("data segment ct_state %#x, want +est-new", st)
	}
	return br, ps, data
}

// BenchmarkProcessEstablished is one port goroutine's work per packet
// (extract, the seed pipeline with conntrack, queueing, WriteBatch to a
// memory port) for an established frontend -> backend1 TCP flow, driven
// synchronously in batches of 64. One op is one packet.
func BenchmarkProcessEstablished(b *testing.B) {
	br, ps, data := establishedBridge(b, false)
	l := newLoop(br, br.ports.Load().byNo[portFrontend])
	out := ps[portBackend1]
	before := out.Stats().TxPackets
	benchProcess(b, l, data)
	if got := out.Stats().TxPackets - before; got != uint64(b.N) {
		b.Fatalf("backend1 sent %d frames, want %d", got, b.N)
	}
}

// BenchmarkBridgeEstablished is the same flow through the real port
// goroutine: a replaying memory port feeds the loop, the benchmark waits
// for backend1's port to have sent every packet.
func BenchmarkBridgeEstablished(b *testing.B) {
	br, ps, data := establishedBridge(b, false)
	_ = br
	in, out := ps[portFrontend], ps[portBackend1]
	before := out.Stats().TxPackets
	frames := [][]byte{data}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	in.Replay(frames, b.N)
	if !out.WaitTxPackets(before+uint64(b.N), time.Minute) {
		b.Fatalf("backend1 sent %d of %d frames", out.Stats().TxPackets-before, b.N)
	}
}

// BenchmarkProcessSimple is the loop's own overhead: a one-flow pipeline
// (in_port=1 -> output:2), so extract, queueing, copy and WriteBatch
// dominate. One op is one packet.
func BenchmarkProcessSimple(b *testing.B) {
	br := newBridge(b, "in_port=1,actions=output:2", false)
	for _, n := range []uint32{1, 2} {
		if _, err := br.AddPort(n, NewMemPort(MemPortConfig{Name: "mem"}), KindMemory); err != nil {
			b.Fatal(err)
		}
	}
	data := tcpFrame(b, true, "ack", 1, 1, 64)
	l := newLoop(br, br.ports.Load().byNo[1])
	benchProcess(b, l, data)
}

// BenchmarkProcessNormal is a learned conversation through
// actions=NORMAL: after the first packets (a flood, the answer) the
// destination is known and the megaflow cache serves NORMAL's decision.
// One op is one packet.
func BenchmarkProcessNormal(b *testing.B) {
	br := newBridge(b, "actions=NORMAL", false)
	ps := map[uint32]*MemPort{}
	for _, n := range []uint32{1, 2, 3} {
		mp := NewMemPort(MemPortConfig{Name: "mem"})
		if _, err := br.AddPort(n, mp, KindMemory); err != nil {
			b.Fatal(err)
		}
		ps[n] = mp
	}
	inject(b, br, ps, 1, tcpFrame(b, true, "syn", 1, 0, 0))
	inject(b, br, ps, 2, tcpFrame(b, false, "syn|ack", 1, 2, 0))
	data := tcpFrame(b, true, "ack", 2, 2, 64)
	l := newLoop(br, br.ports.Load().byNo[1])
	before := ps[2].Stats().TxPackets
	flooded := ps[3].Stats().TxPackets
	benchProcess(b, l, data)
	if got := ps[2].Stats().TxPackets - before; got != uint64(b.N) {
		b.Fatalf("port 2 sent %d frames, want %d", got, b.N)
	}
	if ps[3].Stats().TxPackets != flooded {
		b.Fatalf("a learned destination was flooded")
	}
}

// benchProcess drives l.process synchronously with b.N copies of data in
// batches of BatchSize, as a port's ReadBatch would hand them over; one op
// is one packet. The timer runs only around the loop.
func benchProcess(b *testing.B, l *loop, data []byte) {
	b.Helper()
	batch := port.NewBatch(BatchSize)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(BatchSize, b.N-done)
		for i := range n {
			buf := batch.Buffer(i, len(data))
			copy(buf, data)
			batch.Frames[i] = buf
		}
		l.process(batch.Frames[:n])
		done += n
	}
	b.StopTimer()
}

// BenchmarkProcessVLAN is BenchmarkProcessSimple through a cached
// push_vlan (or pop_vlan of a tagged frame): the megaflow cache replays
// the tag change without allocating. One op is one packet.
func BenchmarkProcessVLAN(b *testing.B) {
	untagged := tcpFrame(b, true, "ack", 1, 1, 64)
	tagged := append(append(append([]byte{}, untagged[:12]...), 0x81, 0, 0, 10), untagged[12:]...)
	for _, bc := range []struct {
		name, actions string
		frame         []byte
	}{
		{"push", "push_vlan:0x8100,mod_vlan_vid:10,output:2", untagged},
		{"pop", "pop_vlan,output:2", tagged},
	} {
		b.Run(bc.name, func(b *testing.B) {
			br := newBridge(b, "in_port=1,actions="+bc.actions, false)
			for _, n := range []uint32{1, 2} {
				if _, err := br.AddPort(n, NewMemPort(MemPortConfig{Name: "mem"}), KindMemory); err != nil {
					b.Fatal(err)
				}
			}
			l := newLoop(br, br.ports.Load().byNo[1])
			benchProcess(b, l, bc.frame)
			if st := l.cache.Stats(); b.N > 1 && st.Hits == 0 {
				b.Fatalf("no cache hits: %+v", st)
			}
		})
	}
}
