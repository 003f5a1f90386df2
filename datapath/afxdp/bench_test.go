package afxdp

import (
	"fmt"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/port/porttest"
)

// Benchmarks run on a veth pair as datapath/afpacket's do, with the same
// names, frame sizes, batch sizes and load port (an afpacket port on the
// peer end), so the two can be compared from one run:
//
//	go test -run '^$' -bench . -benchmem ./datapath/afpacket/ ./datapath/afxdp/
//
// b.N counts frames, so ns/op is ns per frame. Sub-benchmarks are the XDP
// attach modes.

const benchFrameLen = 64

// benchRig opens the measured AF_XDP port on the host end and an afpacket
// load port on the peer end.
func benchRig(b *testing.B, cfg Config) (host *Port, peer *afpacket.Port) {
	ns := netnstest.NewNS(b)
	v := netnstest.NewVeth(b, nil, ns, netnstest.VethOptions{HostMAC: hostMAC, PeerMAC: peerMAC})
	host, err := Open(v.Host, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { host.Close() })
	err = ns.Do(func() (err error) {
		// The load port never reads: a tiny ring drops what it gets.
		peer, err = afpacket.Open(v.Peer, afpacket.Config{NoPromisc: true, FrameCount: 8})
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

// prefill makes the peer send k frames and gives the kernel time to put
// them on the RxRing, so the timed part only measures taking them out.
func prefill(b *testing.B, peer *afpacket.Port, load [][]byte, k int) {
	for sent := 0; sent < k; {
		n, err := peer.WriteBatch(load[:min(len(load), k-sent)])
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	time.Sleep(3 * time.Millisecond)
}

const rxRound = 2048 // frames per untimed fill / timed drain round

// forEachBenchMode runs fn as a sub-benchmark per XDP mode.
func forEachBenchMode(b *testing.B, cfg Config, fn func(b *testing.B, cfg Config)) {
	for _, m := range xdpModes {
		c := cfg
		c.Mode = m
		b.Run(string(m), func(b *testing.B) { fn(b, c) })
	}
}

// BenchmarkRxRing: user-space cost of taking frames off the RxRing and
// giving their UMEM frames back to the FillRing. The RxRing has room for a
// whole round, so nothing is dropped.
func BenchmarkRxRing(b *testing.B) {
	forEachBenchMode(b, Config{ReadTimeout: time.Second, RxFrames: 2 * rxRound}, benchRxRing)
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
		b.Fatalf("kernel dropped %d frames; numbers are not comparable", st.RxDropped)
	}
}

// BenchmarkRxStreaming: frames/s with a concurrent sender; includes the
// kernel's work for both ends on a shared machine (the XDP program and the
// copy into the UMEM included), so it is the end-to-end rate of one veth.
func BenchmarkRxStreaming(b *testing.B) {
	cfg := Config{ReadTimeout: 100 * time.Millisecond}
	forEachBenchMode(b, cfg, benchRxStreaming)
	b.Run("native_no_busy_poll", func(b *testing.B) {
		c := cfg
		c.Mode, c.BusyPoll = ModeNative, -1
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

// BenchmarkTxRing: WriteBatch of 32 frames: copy into the UMEM, post on
// the TxRing, one sendto, in which the kernel (copy mode) builds an skb
// per frame and hands it to the veth.
func BenchmarkTxRing(b *testing.B) {
	forEachBenchMode(b, Config{}, benchTx)
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

// BenchmarkLoneFrameLatency: one frame at a time, sent by the peer and
// then read; ns/op is one round.
func BenchmarkLoneFrameLatency(b *testing.B) {
	forEachBenchMode(b, Config{ReadTimeout: time.Second}, benchLoneFrame)
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
