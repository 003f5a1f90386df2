package flowtable_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// benchLoadSeed installs a seed flows file the way ovs-ofctl
// add-tlv-map + add-flows would: the "# tlv-map:" header first, then every
// flow.
func benchLoadSeed(tb testing.TB, text string) *flowtable.Pipeline {
	tb.Helper()
	p := flowtable.NewPipeline()
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "# tlv-map:"); ok {
			ms, err := flowtable.ParseTLVMappings(strings.TrimSpace(rest))
			if err != nil {
				tb.Fatalf("tlv-map: %v", err)
			}
			if err := p.TLV.Add(ms...); err != nil {
				tb.Fatalf("tlv-map: %v", err)
			}
		}
	}
	fms, err := flowtext.ParseFlows(strings.NewReader(text), &flowtext.ParseOptions{TLV: p.TLV})
	if err != nil {
		tb.Fatalf("parse flows: %v", err)
	}
	flows := make([]*flowtable.Flow, len(fms))
	for i, fm := range fms {
		flows[i] = &fm.Flow
	}
	if err := p.AddFlows(flows); err != nil {
		tb.Fatalf("add flows: %v", err)
	}
	return p
}

// benchEstablishedCT is a connection tracker for which every connection is
// already established: ct() marks the packet +trk+est in the requested zone.
type benchEstablishedCT struct{}

func (benchEstablishedCT) Execute(pkt *flowtable.Packet, req *flowtable.CTRequest) {
	pkt.Key.SetCtState(flowtable.CtStateTrk | flowtable.CtStateEst)
	pkt.Key.SetCtZone(req.Zone)
}

// benchSink counts outputs and remembers the port and the tunnel
// destination and ct_state of the last one (after ct(table=...) the key
// returns to its pre-ct state, so they must be read at output time).
type benchSink struct {
	outputs, packetIns int
	lastPort           uint32
	lastTunDst         uint32
	lastCtState        uint32
}

func (s *benchSink) Output(port uint32, pkt *flowtable.Packet) {
	s.outputs++
	s.lastPort = port
	s.lastTunDst = pkt.Key.TunDst()
	s.lastCtState = pkt.Key.CtState()
}

func (s *benchSink) PacketIn(pkt *flowtable.Packet, pi *flowtable.PacketIn) { s.packetIns++ }

const (
	benchGwPort     = 2 // antrea-gw0
	benchTunnelPort = 1 // antrea-tun0
	benchGwMAC      = "4e:99:08:c1:53:be"
	benchVirtualMAC = "aa:bb:cc:dd:ee:ff"
)

func benchMAC(s string) [6]byte {
	var a [6]byte
	for i := range a {
		var v byte
		for _, c := range s[3*i : 3*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			default:
				v |= byte(c-'a') + 10
			}
		}
		a[i] = v
	}
	return a
}

// benchSeedFrame is the packet of the seed's §9 walk: frontend
// 10.222.1.48 to backend2 10.222.2.34 TCP 46490 -> 80, as it enters
// worker 1's bridge from the gateway port, on an established connection
// (ACK).
func benchSeedFrame() []byte {
	var k flowtable.Key
	k.SetEthSrc(benchMAC(benchGwMAC))
	k.SetEthDst(benchMAC(benchVirtualMAC))
	k.SetEthType(flowtable.EthTypeIPv4)
	k.SetNwProto(flowtable.IPProtoTCP)
	flowtable.FieldIPv4Src.SetUint64(&k, 0x0ade0130) // 10.222.1.48
	flowtable.FieldIPv4Dst.SetUint64(&k, 0x0ade0222) // 10.222.2.34
	flowtable.FieldTCPSrc.SetUint64(&k, 46490)
	flowtable.FieldTCPDst.SetUint64(&k, 80)
	flowtable.FieldTCPFlags.SetUint64(&k, 0x010) // ACK
	flowtable.FieldIPTTL.SetUint64(&k, 64)
	return flowtable.BuildFrame(&k, 0)
}

// benchWalker runs the seed packet through a pipeline from a fresh copy of the
// frame each time, as the datapath would for each received packet.
type benchWalker struct {
	p     *flowtable.Pipeline
	frame []byte
	buf   []byte
	pkt   flowtable.Packet
	sink  benchSink
}

func newBenchWalker(tb testing.TB) *benchWalker {
	p := benchLoadSeed(tb, seeds.Worker1)
	p.Conntrack = benchEstablishedCT{}
	f := benchSeedFrame()
	return &benchWalker{p: p, frame: f, buf: make([]byte, len(f))}
}

func (w *benchWalker) walk() flowtable.Result {
	copy(w.buf, w.frame)
	w.pkt.Key = flowtable.Key{}
	w.pkt.Key.SetInPort(benchGwPort)
	if err := w.pkt.Extract(w.buf); err != nil {
		panic(err)
	}
	return w.p.Run(&w.pkt, &w.sink, nil)
}

// TestSeedWalkEstablished checks what the benchmark measures: the §9
// packet of an established connection leaves worker 1 by the tunnel to
// worker 2 (10.79.1.202), routed (TTL 63, gateway MAC as source, the global
// virtual MAC as destination) with a valid IPv4 checksum.
func TestSeedWalkEstablished(t *testing.T) {
	w := newBenchWalker(t)
	res := w.walk()
	if res.Outputs != 1 || res.PacketIns != 0 || w.sink.lastPort != benchTunnelPort {
		t.Fatalf("outputs=%d packet-ins=%d last port=%d, want one output to port %d",
			res.Outputs, res.PacketIns, w.sink.lastPort, benchTunnelPort)
	}
	if got := w.sink.lastTunDst; got != 0x0a4f01ca {
		t.Errorf("tun_dst=%#x at output, want 0xa4f01ca (10.79.1.202)", got)
	}
	if got := w.sink.lastCtState; got != flowtable.CtStateTrk|flowtable.CtStateEst {
		t.Errorf("ct_state=%#x at output, want trk|est", got)
	}
	f := w.pkt.Frame
	if got := [6]byte(f[0:6]); got != benchMAC(benchVirtualMAC) {
		t.Errorf("eth_dst %x, want %s", got, benchVirtualMAC)
	}
	if got := [6]byte(f[6:12]); got != benchMAC(benchGwMAC) {
		t.Errorf("eth_src %x, want %s", got, benchGwMAC)
	}
	ip := f[14:34]
	if ip[8] != 63 {
		t.Errorf("TTL %d, want 63", ip[8])
	}
	if cs := flowtable.Checksum(ip); cs != 0 {
		t.Errorf("IPv4 header checksum does not verify (residue %#04x)", cs)
	}
	// A second walk from a fresh copy gives the same result: the benchmark
	// loop measures the same work every iteration.
	if res2 := w.walk(); res2.Outputs != 1 || w.sink.lastPort != benchTunnelPort {
		t.Fatalf("second walk: outputs=%d last port=%d", res2.Outputs, w.sink.lastPort)
	}
}

// BenchmarkSeedWalkEstablished is the slow-path cost of one packet of an
// established connection through Antrea's worker 1 pipeline: extract, 11
// table lookups (one conjunctive table), ct() with recirculation, dec_ttl
// and the header rewrites, output by register. Goal: ≤ 2 µs, 0 allocs.
func BenchmarkSeedWalkEstablished(b *testing.B) {
	benchSeedWalk(b, false)
}

// BenchmarkSeedWalkEstablishedLoopCounters is the walk as a packet loop
// without a flow cache runs it: the table statistics go to the loop's own
// counters (plain stores) instead of the shared set (atomic adds) that
// packet-outs and traces use.
func BenchmarkSeedWalkEstablishedLoopCounters(b *testing.B) {
	benchSeedWalk(b, true)
}

func benchSeedWalk(b *testing.B, loopCounters bool) {
	w := newBenchWalker(b)
	if loopCounters {
		w.pkt.Counters = w.p.NewTableCounters()
	}
	b.ReportAllocs()
	// The machine is shared: the CPU time of this thread per walk is what
	// other loads do not inflate (as in BenchmarkScaleWalk).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	for b.Loop() {
		w.walk()
	}
	b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	if w.sink.outputs == 0 || w.sink.lastPort != benchTunnelPort {
		b.Fatalf("benchmark walk did not output to the tunnel (outputs=%d port=%d)", w.sink.outputs, w.sink.lastPort)
	}
}
