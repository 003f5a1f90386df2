package datapath

import (
	"testing"

	"github.com/govs-project/govs/flowtable"
)

// panickyCT is a conntrack that panics on frames from 10.0.0.66, standing
// for a bug the pipeline hits on one frame.
type panickyCT struct{}

func (panickyCT) Execute(pkt *flowtable.Packet, _ *flowtable.CTRequest) {
	if pkt.Key.NwSrc() == 10<<24|66 {
		panic("conntrack bug")
	}
}

// A frame whose processing panics is dropped and counted; the frames
// around it in the same batch and later batches still go, with and
// without the megaflow cache.
func TestPanicInPipelineDropsFrame(t *testing.T) {
	for _, cacheOff := range []bool{false, true} {
		b := newBridge(t, "ip,actions=ct(commit),output:2", false)
		b.CacheDisabled = cacheOff
		b.pipeline.Conntrack = panickyCT{}
		ps := addMemPorts(t, b, MemPortConfig{MTU: 1500}, 1, 2)
		good := frameOf(t, "udp,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=5,tp_dst=6")
		bad := frameOf(t, "udp,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.66,nw_dst=10.0.0.2,tp_src=5,tp_dst=6")
		inject(t, b, ps, 1, good, bad, good, bad)
		checkOutputs(t, sent(ps), map[uint32][][]byte{2: {good, good}})
		inject(t, b, ps, 1, good)
		checkOutputs(t, sent(ps), map[uint32][][]byte{2: {good}})
		if got := b.Panics(); got != 2 {
			t.Errorf("cache off %v: Panics() = %d, want 2", cacheOff, got)
		}
		if info, _ := b.Port(1); info.Stats.RxErrors != 2 {
			t.Errorf("cache off %v: port 1 RxErrors = %d, want 2", cacheOff, info.Stats.RxErrors)
		}
	}
}
