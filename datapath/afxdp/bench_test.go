package afxdp

import (
	"testing"

	"github.com/govs-project/govs/datapath/port/porttest"
)

// The port benchmarks shared by every kind (porttest), with the same
// names, frame sizes, batch sizes and load port (an afpacket port on the
// peer end) as datapath/afpacket's, so the two can be compared from one
// run:
//
//	go test -run '^$' -bench . -benchmem ./datapath/afpacket/ ./datapath/afxdp/
//
// b.N counts frames, so ns/op is ns per frame. Sub-benchmarks are the XDP
// attach modes.

// BenchmarkRxRing: user-space cost of taking frames off the RxRing and
// giving their UMEM frames back to the FillRing.
func BenchmarkRxRing(b *testing.B) { porttest.BenchRxRing(b, &kind, kind.Variants) }

// BenchmarkRxStreaming: frames/s with a concurrent sender; includes the
// kernel's work for both ends (the XDP program and the copy into the UMEM
// included), so it is the end-to-end rate of one veth.
func BenchmarkRxStreaming(b *testing.B) { porttest.BenchRxStreaming(b, &kind, kind.Variants) }

// BenchmarkTxRing: WriteBatch of 32 frames: copy into the UMEM, post on
// the TxRing, one sendto, in which the kernel (copy mode) builds an skb
// per frame and hands it to the veth.
func BenchmarkTxRing(b *testing.B) { porttest.BenchTx(b, &kind, kind.Variants) }

// BenchmarkLoneFrameLatency: one frame at a time, sent by the peer and
// then read; ns/op is one round.
func BenchmarkLoneFrameLatency(b *testing.B) { porttest.BenchLoneFrame(b, &kind, kind.Variants) }
