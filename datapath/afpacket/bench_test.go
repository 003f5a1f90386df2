package afpacket

import (
	"testing"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port/porttest"
	"golang.org/x/sys/unix"
)

// The port benchmarks shared by every kind (porttest), on a veth pair,
// plus the plain-socket baselines the rings replace. b.N counts frames,
// so ns/op is ns per frame.
//
//	go test -run '^$' -bench . -benchmem ./datapath/afpacket/

// benchRings are the receive ring layouts, with base: TPACKET_V2's ring
// has room for a whole round (plus stray frames) so nothing is dropped,
// TPACKET_V3's has its default blocks.
func benchRings(base Config) []porttest.Variant[*Port] {
	v2 := base
	v2.FrameCount = 2 * porttest.RxRound
	return []porttest.Variant[*Port]{
		{Name: rxRings[0].name, Open: rxRings[0].open(v2)},
		{Name: rxRings[1].name, Open: rxRings[1].open(base)},
	}
}

// BenchmarkRxRing: user-space cost of taking frames out of the receive
// ring (the kernel's receive work happened while the timer was stopped).
func BenchmarkRxRing(b *testing.B) { porttest.BenchRxRing(b, &kind, benchRings(Config{})) }

// BenchmarkRxRecvfrom: the same drain with one recvfrom(2) per frame on a
// plain AF_PACKET socket, the classic approach the ring replaces.
func BenchmarkRxRecvfrom(b *testing.B) {
	host, peer := kind.BenchRig(b, func(name string) (*Port, error) { return Open(name, Config{}) })
	host.Close() // only the veth pair and the load port are needed
	raw := netnstest.NewRawSocket(b, nil, host.Name())
	if err := unix.SetsockoptInt(raw.FD(), unix.SOL_SOCKET, unix.SO_RCVBUF, 16<<20); err != nil {
		b.Fatal(err)
	}
	load := porttest.BenchFrames(64, hostMAC, peerMAC)
	buf := make([]byte, 2048)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		k := min(porttest.RxRound, b.N-done)
		b.StopTimer()
		porttest.Prefill(b, peer, load, k)
		b.StartTimer()
		for got := 0; got < k; got++ {
			// read(2) rather than recvfrom(2): x/sys's Recvfrom allocates
			// the source address, which would distort allocs/op.
			if _, err := unix.Read(raw.FD(), buf); err != nil {
				b.Fatalf("recvfrom after %d of %d: %v", got, k, err)
			}
		}
		done += k
	}
}

// BenchmarkRxStreaming: frames/s with a concurrent sender (the end-to-end
// rate of one veth). TPACKET_V2 wakes the reader per frame unless
// Config.BusyPoll keeps it watching the ring while frames stream in; the
// last sub-benchmark shows the rate without it.
func BenchmarkRxStreaming(b *testing.B) { porttest.BenchRxStreaming(b, &kind, benchRings(Config{})) }

// BenchmarkTxSendmmsg: WriteBatch of 32 frames per sendmmsg(2).
func BenchmarkTxSendmmsg(b *testing.B) {
	porttest.BenchTxSizes(b, &kind, func(name string) (*Port, error) { return Open(name, Config{}) })
}

// BenchmarkTxSendmmsgUpcall: the same on a socket bound to the upcall
// ethertype, whose frames name an ETH_P_ALL address (the kernel looks the
// device up per frame).
func BenchmarkTxSendmmsgUpcall(b *testing.B) {
	porttest.BenchTxSizes(b, &kind, func(name string) (*Port, error) { return Open(name, Config{Upcall: true}) })
}

// BenchmarkTxRing: WriteBatch of 32 frames through PACKET_TX_RING, whose
// slot layout follows the socket's ring version.
func BenchmarkTxRing(b *testing.B) {
	porttest.BenchTx(b, &kind, benchRings(Config{TxRing: true}))
}

// BenchmarkTxSendPerFrame: one send(2) per frame on a plain socket.
func BenchmarkTxSendPerFrame(b *testing.B) {
	porttest.BenchTxPerFrame(b, &kind, func(name string) (*Port, error) { return Open(name, Config{}) })
}

// BenchmarkLoneFrameLatency: one frame at a time, sent by the peer and then
// read; ns/op is one round. TPACKET_V3 hands a block over when it is full
// or when the retire timer (Config.BlockTimeout, default and minimum 1 ms)
// fires, so at low rates each frame waits for the timer. A TPACKET_V2
// slot is handed over, and the reader woken, as soon as its frame is
// written: the round is the cost of the two system calls and the veth.
func BenchmarkLoneFrameLatency(b *testing.B) { porttest.BenchLoneFrame(b, &kind, benchRings(Config{})) }
