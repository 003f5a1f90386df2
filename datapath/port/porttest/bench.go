package porttest

import (
	"fmt"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
)

// The shared benchmarks run on a veth pair: the measured port on the host
// end, Kind.Load on the peer end in a fresh netns. Every kind runs them
// under the same names, frame sizes and batch sizes, so kinds can be
// compared from one run. b.N counts frames: ns/op is ns per frame.

// BenchFrameLen is the frame length of the receive benchmarks.
const BenchFrameLen = 64

// RxRound is the number of frames per untimed fill / timed drain round of
// BenchRxRing.
const RxRound = 2048

// BenchRig opens the measured port on the host end of a fresh veth pair
// with open, and the load port on the peer end.
func (k *Kind[P]) BenchRig(b *testing.B, open func(ifname string) (P, error)) (host P, peer port.Port) {
	ns := netnstest.NewNS(b)
	v := netnstest.NewVeth(b, nil, ns, netnstest.VethOptions{HostMAC: k.HostMAC, PeerMAC: k.PeerMAC})
	WaitUp(b, v)
	host = OpenIn(b, nil, func() (P, error) { return open(v.Host) })
	peer = OpenIn(b, ns, func() (port.Port, error) { return k.Load(v.Peer) })
	return host, peer
}

// benchVariants runs fn as a sub-benchmark per variant, opened with o.
func benchVariants[P port.Port](b *testing.B, vs []Variant[P], o Opts, fn func(b *testing.B, open func(string) (P, error))) {
	for _, v := range vs {
		b.Run(v.Name, func(b *testing.B) {
			fn(b, func(name string) (P, error) { return v.Open(name, o) })
		})
	}
}

// BenchFrames returns n test frames of BenchFrameLen bytes.
func BenchFrames(n int, dst, src []byte) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = TestFrame(dst, src, uint32(i), BenchFrameLen)
	}
	return out
}

// SendN writes n frames to p, batches of load over and over.
func SendN(tb testing.TB, p port.Port, load [][]byte, n int) {
	for sent := 0; sent < n; {
		k, err := p.WriteBatch(load[:min(len(load), n-sent)])
		if err != nil {
			tb.Fatal(err)
		}
		sent += k
	}
}

// Prefill makes peer send k frames of load and gives the kernel time to
// hand them over (a TPACKET_V3 block is retired by its timer), so the
// timed part only measures taking them out.
func Prefill(b *testing.B, peer port.Port, load [][]byte, k int) {
	SendN(b, peer, load, k)
	time.Sleep(3 * time.Millisecond) // > a TPACKET_V3 BlockTimeout
}

// DrainRounds times reading b.N frames from p in rounds of round
// frames, each made ready by fill(n) while the timer is stopped.
func DrainRounds(b *testing.B, p port.Port, round int, fill func(n int)) {
	batch := port.NewBatch(64)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(round, b.N-done)
		b.StopTimer()
		fill(n)
		b.StartTimer()
		for got := 0; got < n; {
			m, err := p.ReadBatch(batch)
			if err != nil || m == 0 {
				b.Fatalf("ReadBatch = %d, %v after %d of %d", m, err, got, n)
			}
			got += m
		}
		done += n
	}
}

// BenchRxRing (BenchmarkRxRing): the user-space cost of taking frames
// out of the receive ring, per variant; the kernel's receive work
// happens while the timer is stopped. The ring has room for a whole round
// (Opts.RxFrames), so nothing is dropped.
func BenchRxRing[P port.Port](b *testing.B, k *Kind[P], vs []Variant[P]) {
	o := Opts{ReadTimeout: time.Second, RxFrames: 2 * RxRound}
	benchVariants(b, vs, o, func(b *testing.B, open func(string) (P, error)) {
		host, peer := k.BenchRig(b, open)
		load := BenchFrames(64, k.HostMAC, k.PeerMAC)
		DrainRounds(b, host, RxRound, func(n int) { Prefill(b, peer, load, n) })
		b.StopTimer()
		if st := host.Stats(); st.RxDropped != 0 {
			b.Fatalf("kernel dropped %d frames; numbers are not comparable", st.RxDropped)
		}
	})
}

// BenchRxStreaming (BenchmarkRxStreaming): frames/s with a concurrent
// sender, per variant and for the first variant without busy polling
// ("<name>_no_busy_poll"). It includes the kernel's work for both ends
// on a shared machine, so it is the end-to-end rate of one veth, not the
// reader's cost.
func BenchRxStreaming[P port.Port](b *testing.B, k *Kind[P], vs []Variant[P]) {
	o := Opts{ReadTimeout: 100 * time.Millisecond}
	fn := func(b *testing.B, open func(string) (P, error)) {
		host, peer := k.BenchRig(b, open)
		load := BenchFrames(64, k.HostMAC, k.PeerMAC)
		stop, done := make(chan struct{}), make(chan struct{})
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
	benchVariants(b, vs, o, fn)
	o.BusyPoll = -1
	benchVariants(b, []Variant[P]{{vs[0].Name + "_no_busy_poll", vs[0].Open}}, o, fn)
}

var txSizes = []int{64, 1514}

// BenchTx (BenchmarkTx*): WriteBatch of 32 frames of 64 and 1514 bytes,
// per variant.
func BenchTx[P port.Port](b *testing.B, k *Kind[P], vs []Variant[P]) {
	benchVariants(b, vs, Opts{}, func(b *testing.B, open func(string) (P, error)) { BenchTxSizes(b, k, open) })
}

// BenchTxSizes is BenchTx of one port: a sub-benchmark per frame size.
func BenchTxSizes[P port.Port](b *testing.B, k *Kind[P], open func(string) (P, error)) {
	for _, size := range txSizes {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			host, _ := k.BenchRig(b, open)
			load := make([][]byte, 32)
			for i := range load {
				load[i] = TestFrame(k.PeerMAC, k.HostMAC, uint32(i), size)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			SendN(b, host, load, b.N)
			b.StopTimer()
			if st := host.Stats(); st.TxErrors != 0 || st.TxDropped != 0 {
				b.Fatalf("tx errors/drops: %+v", st)
			}
		})
	}
}

// BenchTxPerFrame (BenchmarkTxSendPerFrame): one send(2) per frame on a
// plain socket, the classic approach batched sends replace.
func BenchTxPerFrame[P port.Port](b *testing.B, k *Kind[P], open func(string) (P, error)) {
	for _, size := range txSizes {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			host, _ := k.BenchRig(b, open)
			raw := netnstest.NewRawSocket(b, nil, host.Name())
			f := TestFrame(k.PeerMAC, k.HostMAC, 1, size)
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

// BenchLoneFrame (BenchmarkLoneFrameLatency): one frame at a time, sent
// by the peer and then read, per variant; ns/op is one round.
func BenchLoneFrame[P port.Port](b *testing.B, k *Kind[P], vs []Variant[P]) {
	benchVariants(b, vs, Opts{ReadTimeout: time.Second}, func(b *testing.B, open func(string) (P, error)) {
		host, peer := k.BenchRig(b, open)
		f := [][]byte{TestFrame(k.HostMAC, k.PeerMAC, 1, BenchFrameLen)}
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
	})
}
