package datapath

import (
	"testing"

	"github.com/govs-project/govs/internal/seeds"
)

// FuzzProcessFrame feeds arbitrary bytes as received frames through the
// seed pipeline (with conntrack) on every port of worker 1: the loop must
// never panic, and must account for every frame.
func FuzzProcessFrame(f *testing.F) {
	f.Add(uint8(portFrontend), []byte(nil))
	f.Add(uint8(portGW), make([]byte, 13))
	f.Add(uint8(portFrontend), tcpFrame(f, true, "syn", 1, 0, 0))
	f.Add(uint8(portBackend1), tcpFrame(f, false, "syn|ack", 1, 2, 10))
	f.Add(uint8(portGW), frameOf(f, "in_port=2,arp,dl_src="+gw1MAC+",dl_dst=ff:ff:ff:ff:ff:ff,arp_op=1,"+
		"arp_spa=10.222.1.1,arp_tpa=10.222.2.1,arp_sha="+gw1MAC))
	f.Add(uint8(portTun), frameOf(f, "udp6,ipv6_src=fe80::1,ipv6_dst=ff02::1,tp_src=1,tp_dst=2"))
	b := newBridge(f, seeds.Worker1, true)
	loops := map[uint32]*loop{}
	for _, n := range []uint32{portTun, portGW, portBackend1, portFrontend} {
		if _, err := b.AddPort(n, NewMemPort(MemPortConfig{Name: "fuzz"}), KindMemory); err != nil {
			f.Fatal(err)
		}
		loops[n] = newLoop(b, b.ports.Load().byNo[n])
	}
	nums := []uint32{portTun, portGW, portBackend1, portFrontend}
	f.Fuzz(func(t *testing.T, sel uint8, frame []byte) {
		in := nums[int(sel)%len(nums)]
		l := loops[in]
		before := l.in.processed.Load()
		l.process([][]byte{frame})
		if got := l.in.processed.Load() - before; got != 1 {
			t.Fatalf("processed %d frames, want 1", got)
		}
	})
}
