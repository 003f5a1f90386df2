package datapath

import (
	"slices"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// copySink is the reference Sink: it copies each output when it is made,
// so nothing the pipeline does later can change it.
type copySink struct{ out map[uint32][][]byte }

func (s *copySink) Output(port uint32, pkt *flowtable.Packet) {
	s.out[port] = append(s.out[port], slices.Clone(pkt.Frame))
}

func (s *copySink) PacketIn(*flowtable.Packet, *flowtable.PacketIn) {}

// The loop queues outputs without copying them (Packet.Lend): a change the
// actions make after an output must go to a copy, never into the frame
// already queued. Each action list outputs, changes the packet in one way
// (header fields, VLAN tags, NAT in conntrack, TTL) and outputs again; the
// loop's outputs must equal those of a sink that copies at once, with the
// megaflow cache off and on (the second batch hits the cache).
func TestOutputThenChange(t *testing.T) {
	for _, tc := range []struct {
		name, actions string
		cached        bool // the flowcache caches these actions
	}{
		{"set field", "output:2,mod_nw_dst:10.9.9.9,output:3", true},
		{"set fields twice", "output:2,mod_dl_src:02:00:00:00:00:99,output:3,mod_tp_dst:99,output:4", true},
		{"push and pop vlan", "output:2,push_vlan:0x8100,mod_vlan_vid:7,output:3,pop_vlan,output:4", false},
		{"pop vlan of a tagged frame", "push_vlan:0x8100,mod_vlan_vid:5,output:2,pop_vlan,output:3", false},
		{"dec_ttl", "output:2,dec_ttl,output:3,output:4", true},
		{"nat in ct", "output:2,ct(commit,zone=3,nat(dst=10.9.9.9:99)),output:3", true},
		{"same frame twice", "output:2,output:3,mod_nw_tos:32,output:4", true},
	} {
		for _, cacheOff := range []bool{true, false} {
			name := tc.name + "/cache"
			if cacheOff {
				name += "-off"
			}
			t.Run(name, func(t *testing.T) {
				flows := "tcp,in_port=1,actions=" + tc.actions
				frames := [][]byte{
					frameOf(t, "tcp,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_ttl=64,tp_src=5,tp_dst=6,tcp_flags=+syn"),
					frameOf(t, "tcp,dl_src=02:00:00:00:00:03,dl_dst=02:00:00:00:00:04,nw_src=10.0.0.3,nw_dst=10.0.0.4,nw_ttl=9,tp_src=7,tp_dst=8,tcp_flags=+syn"),
				}

				// Reference: the pipeline alone, copying at each output.
				ref := flowtable.NewPipeline()
				if err := flowtext.Load(ref, flows, nil); err != nil {
					t.Fatalf("load flows: %v", err)
				}
				ref.Conntrack = ctadapter.New()
				want := &copySink{out: map[uint32][][]byte{}}
				for range 2 {
					for _, f := range frames {
						var pkt flowtable.Packet
						pkt.Key.SetInPort(1)
						if err := pkt.Extract(slices.Clone(f)); err != nil {
							t.Fatal(err)
						}
						ref.Run(&pkt, want, nil)
					}
				}

				b := newBridge(t, flows, true)
				b.CacheDisabled = cacheOff
				ps := addMemPorts(t, b, MemPortConfig{}, 1, 2, 3, 4)
				inject(t, b, ps, 1, frames...)
				inject(t, b, ps, 1, frames...)
				checkOutputs(t, sent(ps), want.out)
				if !cacheOff && tc.cached {
					if st, _ := b.CacheStats(); st.Hits == 0 {
						t.Errorf("no cache hits: %+v", st)
					}
				}
			})
		}
	}
}
