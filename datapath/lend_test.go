package datapath

import (
	"slices"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
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
		{"push and pop vlan", "output:2,push_vlan:0x8100,mod_vlan_vid:7,output:3,pop_vlan,output:4", true},
		{"pop vlan of a tagged frame", "push_vlan:0x8100,mod_vlan_vid:5,output:2,pop_vlan,output:3", true},
		{"dec_ttl", "output:2,dec_ttl,output:3,output:4", true},
		{"nat in ct", "output:2,ct(commit,zone=3,nat(dst=10.9.9.9:99)),output:3", true},
		{"same frame twice", "output:2,output:3,mod_nw_tos:32,output:4", true},
		{"clone", "output:2,clone(mod_nw_dst:10.6.6.6,output:4),output:3,clone(push_vlan:0x8100,output:4)", false},
	} {
		for _, cacheOff := range []bool{true, false} {
			name := tc.name + "/cache"
			if cacheOff {
				name += "-off"
			}
			t.Run(name, func(t *testing.T) {
				b := checkLend(t, "tcp,in_port=1,actions="+tc.actions, cacheOff)
				if !cacheOff && tc.cached {
					if st, _ := b.CacheStats(); st.Hits == 0 {
						t.Errorf("no cache hits: %+v", st)
					}
				}
			})
		}
	}
}

// lendFrames are two TCP SYNs from port 1, of different connections.
func lendFrames(t testing.TB) [][]byte {
	return [][]byte{
		frameOf(t, "tcp,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_ttl=64,tp_src=5,tp_dst=6,tcp_flags=+syn"),
		frameOf(t, "tcp,dl_src=02:00:00:00:00:03,dl_dst=02:00:00:00:00:04,nw_src=10.0.0.3,nw_dst=10.0.0.4,nw_ttl=9,tp_src=7,tp_dst=8,tcp_flags=+syn"),
	}
}

// checkLend sends lendFrames twice from port 1 through a bridge with
// flows and requires the outputs of ports 2-4 to equal those of the
// pipeline alone with a sink that copies each output when it is made. It
// returns the bridge, for its cache counters.
func checkLend(t *testing.T, flows string, cacheOff bool) *Bridge {
	t.Helper()
	frames := lendFrames(t)
	ref := newPipeline(t, flows, true)
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
	return b
}

// lendActions are the pieces FuzzOutputThenChange strings together:
// outputs, and every kind of action that changes a packet in place.
var lendActions = []string{
	"output:2", "output:3", "output:4",
	"mod_nw_dst:10.9.9.9", "mod_dl_src:02:00:00:00:00:99", "mod_tp_dst:99", "mod_nw_tos:32",
	"set_field:10.8.8.8->ip_src", "push_vlan:0x8100", "mod_vlan_vid:7", "pop_vlan", "dec_ttl",
	"ct(commit,zone=3,nat(dst=10.9.9.9:99))", "ct(commit,zone=4,nat(src=10.7.7.7))",
	"clone(mod_nw_dst:10.6.6.6,output:4)", "clone(push_vlan:0x8100,mod_vlan_vid:9,output:3)",
}

// FuzzOutputThenChange is TestOutputThenChange over random action lists
// (each byte picks one of lendActions; bit 7 of the first turns the
// megaflow cache off): outputs queued without a copy must never see a
// later change.
func FuzzOutputThenChange(f *testing.F) {
	f.Add([]byte{0, 3, 1})
	f.Add([]byte{0x80, 8, 9, 0, 10, 1})
	f.Add([]byte{0, 12, 1, 11, 2})
	f.Fuzz(func(t *testing.T, sel []byte) {
		if len(sel) == 0 || len(sel) > 8 {
			return
		}
		acts := make([]string, len(sel))
		for i, c := range sel {
			acts[i] = lendActions[int(c&0x7f)%len(lendActions)]
		}
		checkLend(t, "tcp,in_port=1,actions="+strings.Join(acts, ","), sel[0]&0x80 != 0)
	})
}

// TestCacheMaxEntries: a loop started after SetCacheMaxEntries(1) starts
// its megaflow cache over when a second megaflow comes (both frames are
// still forwarded).
func TestCacheMaxEntries(t *testing.T) {
	b := newBridge(t, "tcp,in_port=1,nw_dst=10.0.0.2,actions=output:2\ntcp,in_port=1,nw_dst=10.0.0.4,actions=output:3", true)
	b.SetCacheMaxEntries(1)
	ps := addMemPorts(t, b, MemPortConfig{}, 1, 2, 3)
	frames := lendFrames(t)
	inject(t, b, ps, 1, frames...)
	inject(t, b, ps, 1, frames...)
	st, entries := b.CacheStats()
	if st.Evictions == 0 || entries > 1 {
		t.Errorf("cache of at most 1 entry: %d entries, %+v", entries, st)
	}
	if out := sent(ps); len(out[2]) != 2 || len(out[3]) != 2 {
		t.Errorf("forwarded %d to port 2 and %d to port 3, want 2 each", len(out[2]), len(out[3]))
	}
}
