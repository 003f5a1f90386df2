package afpacket

import (
	"fmt"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/port/porttest"
	"golang.org/x/sys/unix"
)

// Benchmarks run on a veth pair: host end in the test namespace, peer end
// in a fresh netns. b.N counts frames, so ns/op is ns per frame.
//
//	go test -run '^$' -bench . -benchmem ./datapath/afpacket/

const benchFrameLen = 64

// benchRig opens ports on both ends: host (measured) and peer (load).
func benchRig(b *testing.B, cfg Config) (host, peer *Port) {
	ns := netnstest.NewNS(b)
	v := netnstest.NewVeth(b, nil, ns, netnstest.VethOptions{HostMAC: hostMAC, PeerMAC: peerMAC})
	host, err := Open(v.Host, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { host.Close() })
	err = ns.Do(func() (err error) {
		// The load port never reads: a tiny ring drops what it gets.
		peer, err = Open(v.Peer, Config{NoPromisc: true, FrameCount: 8})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { peer.Close() })
	return host, peer
}

func frames(n int, dst, src []byte) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = porttest.TestFrame(dst, src, uint32(i), benchFrameLen)
	}
	return out
}

// prefill makes the peer send k frames to the host end and waits until the
// kernel retired the TPACKET_V3 block holding the last of them (V2 slots
// are ready at once), so the timed part only measures taking frames out.
func prefill(b *testing.B, peer *Port, load [][]byte, k int) {
	for sent := 0; sent < k; {
		n, err := peer.WriteBatch(load[:min(len(load), k-sent)])
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	time.Sleep(3 * time.Millisecond) // > BlockTimeout
}

const rxRound = 2048 // frames per untimed fill / timed drain round

// benchRings runs a receive benchmark on each ring layout. The V2 ring has
// room for a whole rxRound (plus stray frames) so nothing is dropped.
var benchRings = []struct {
	name string
	cfg  Config
}{
	{"TPACKET_V2", Config{RingVersion: TPacketV2, FrameCount: 2 * rxRound}},
	{"TPACKET_V3", Config{RingVersion: TPacketV3}},
}

// forEachRing runs fn as a sub-benchmark per ring version, with cfg's
// receive ring settings replaced by the version's.
func forEachRing(b *testing.B, cfg Config, fn func(b *testing.B, cfg Config)) {
	for _, r := range benchRings {
		c := cfg
		c.RingVersion, c.FrameCount = r.cfg.RingVersion, r.cfg.FrameCount
		b.Run(r.name, func(b *testing.B) { fn(b, c) })
	}
}

// BenchmarkRxRing: user-space cost of taking frames out of the receive
// ring (the kernel's receive work happened while the timer was stopped).
func BenchmarkRxRing(b *testing.B) {
	forEachRing(b, Config{ReadTimeout: time.Second}, benchRxRing)
}

func benchRxRing(b *testing.B, cfg Config) {
	host, peer := benchRig(b, cfg)
	load := frames(64, hostMAC, peerMAC)
	batch := port.NewBatch(64)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		k := min(rxRound, b.N-done)
		b.StopTimer()
		prefill(b, peer, load, k)
		b.StartTimer()
		for got := 0; got < k; {
			n, err := host.ReadBatch(batch)
			if err != nil || n == 0 {
				b.Fatalf("ReadBatch = %d, %v after %d of %d", n, err, got, k)
			}
			got += n
		}
		done += k
	}
	b.StopTimer()
	if st := host.Stats(); st.RxDropped != 0 {
		b.Fatalf("ring dropped %d frames; numbers are not comparable", st.RxDropped)
	}
}

// BenchmarkRxRecvfrom: the same drain with one recvfrom(2) per frame on a
// plain AF_PACKET socket, the classic approach the ring replaces.
func BenchmarkRxRecvfrom(b *testing.B) {
	host, peer := benchRig(b, Config{})
	host.Close() // only the veth pair and the load port are needed
	raw := netnstest.NewRawSocket(b, nil, host.Name())
	if err := unix.SetsockoptInt(raw.FD(), unix.SOL_SOCKET, unix.SO_RCVBUF, 16<<20); err != nil {
		b.Fatal(err)
	}
	load := frames(64, hostMAC, peerMAC)
	buf := make([]byte, 2048)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		k := min(rxRound, b.N-done)
		b.StopTimer()
		prefill(b, peer, load, k)
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

// BenchmarkRxStreaming: frames/s with a concurrent sender; includes the
// kernel's work for both ends on a shared machine, so it is the end-to-end
// rate of one veth, not the reader's cost.
//
// TPACKET_V2 wakes the reader per frame unless Config.BusyPoll keeps it
// watching the ring while frames stream in; the last sub-benchmark shows
// the rate without it.
func BenchmarkRxStreaming(b *testing.B) {
	cfg := Config{ReadTimeout: 100 * time.Millisecond}
	forEachRing(b, cfg, benchRxStreaming)
	b.Run("TPACKET_V2_no_busy_poll", func(b *testing.B) {
		c := cfg
		c.RingVersion, c.BusyPoll = TPacketV2, -1
		benchRxStreaming(b, c)
	})
}

func benchRxStreaming(b *testing.B, cfg Config) {
	host, peer := benchRig(b, cfg)
	load := frames(64, hostMAC, peerMAC)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := peer.WriteBatch(load); err != nil {
				return
			}
		}
	}()
	batch := port.NewBatch(64)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for got := 0; got < b.N; {
		n, err := host.ReadBatch(batch)
		if err != nil {
			b.Fatal(err)
		}
		got += n
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "frames/s")
	b.StopTimer()
	close(stop)
	<-done
}

// BenchmarkTxSendmmsg: WriteBatch of 32 frames per sendmmsg(2).
func BenchmarkTxSendmmsg(b *testing.B) { benchTx(b, Config{}) }

// BenchmarkTxRing: WriteBatch of 32 frames through PACKET_TX_RING, whose
// slot layout follows the socket's ring version.
func BenchmarkTxRing(b *testing.B) {
	forEachRing(b, Config{TxRing: true}, benchTx)
}

var txSizes = []int{64, 1514}

func benchTx(b *testing.B, cfg Config) {
	for _, size := range txSizes {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			host, _ := benchRig(b, cfg)
			load := make([][]byte, 32)
			for i := range load {
				load[i] = porttest.TestFrame(peerMAC, hostMAC, uint32(i), size)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for sent := 0; sent < b.N; {
				k := min(len(load), b.N-sent)
				n, err := host.WriteBatch(load[:k])
				if err != nil {
					b.Fatal(err)
				}
				sent += n
			}
			b.StopTimer()
			if st := host.Stats(); st.TxErrors != 0 || st.TxDropped != 0 {
				b.Fatalf("tx errors/drops: %+v", st)
			}
		})
	}
}

// BenchmarkTxSendPerFrame: one send(2) per frame on a plain socket.
func BenchmarkTxSendPerFrame(b *testing.B) {
	for _, size := range txSizes {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			host, _ := benchRig(b, Config{})
			raw := netnstest.NewRawSocket(b, nil, host.Name())
			f := porttest.TestFrame(peerMAC, hostMAC, 1, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := raw.Send(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoneFrameLatency: one frame at a time, sent by the peer and then
// read; ns/op is one round. TPACKET_V3 hands a block over when it is full
// or when the retire timer (Config.BlockTimeout, default and minimum 1 ms)
// fires, so at low rates each frame waits for the timer. A TPACKET_V2
// slot is handed over, and the reader woken, as soon as its frame is
// written: the round is the cost of the two system calls and the veth.
func BenchmarkLoneFrameLatency(b *testing.B) {
	forEachRing(b, Config{ReadTimeout: time.Second}, benchLoneFrame)
}

func benchLoneFrame(b *testing.B, cfg Config) {
	host, peer := benchRig(b, cfg)
	f := [][]byte{porttest.TestFrame(hostMAC, peerMAC, 1, benchFrameLen)}
	batch := port.NewBatch(64)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := peer.WriteBatch(f); err != nil {
			b.Fatal(err)
		}
		if n, err := host.ReadBatch(batch); n != 1 || err != nil {
			b.Fatalf("ReadBatch = %d, %v", n, err)
		}
	}
}
