package vswitchd

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// With --offload=ebpf a bridge's system ports forward established
// connections in the kernel, and dpctl/flush-conntrack removes every
// kernel entry before the next packet (the connection is tracked anew).
func TestOffloadEBPFBridge(t *testing.T) {
	nsA, nsB := netnstest.NewNS(t), netnstest.NewNS(t)
	macA, macB := net.HardwareAddr{0x02, 0xdd, 0, 0, 0, 1}, net.HardwareAddr{0x02, 0xdd, 0, 0, 0, 2}
	va := netnstest.NewVeth(t, nil, nsA, netnstest.VethOptions{PeerAddr: "10.211.0.1/24", PeerMAC: macA})
	vb := netnstest.NewVeth(t, nil, nsB, netnstest.VethOptions{PeerAddr: "10.211.0.2/24", PeerMAC: macB})
	nsA.MustExec(t, "ip", "neigh", "replace", "10.211.0.2", "lladdr", macB.String(), "dev", va.Peer, "nud", "permanent")
	nsB.MustExec(t, "ip", "neigh", "replace", "10.211.0.1", "lladdr", macA.String(), "dev", vb.Peer, "nud", "permanent")

	d := New(t.TempDir(), nil)
	d.OpenFlow = nil
	defer d.Close()
	if err := d.SetOffload(OffloadEBPF); err != nil {
		t.Fatal(err)
	}
	br := netnstest.UniqueName("brk")
	if err := d.AddBridge(BridgeConfig{Name: br}); err != nil {
		t.Fatal(err)
	}
	for i, v := range []*netnstest.Veth{va, vb} {
		if err := d.AddPort(br, PortConfig{Name: v.Host, OFPortRequest: uint32(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	dp := d.bridges[br].dp
	flows := `table=0,ip,actions=ct(table=1,zone=3)
table=1,ct_state=+new+trk,ip,in_port=1,actions=ct(commit,zone=3),output:2
table=1,ct_state=+est+trk,ip,in_port=1,actions=output:2
table=1,ct_state=+est+trk,ip,in_port=2,actions=output:1`
	if err := flowtext.Load(dp.Pipeline(), flows, nil); err != nil {
		t.Fatal(err)
	}
	src, dst := netip.MustParseAddrPort("10.211.0.1:5100"), netip.MustParseAddrPort("10.211.0.2:9100")
	if got := netnstest.UDPPingPong(t, nsA, nsB, src, dst, 50, 64); got != 50 {
		t.Fatalf("%d/50 answers", got)
	}
	st := dp.Offload().Stats()
	if st.Entries != 2 || st.Packets < 50 {
		t.Fatalf("kernel path: %+v, want 2 entries (one per direction) and most of the 100 packets", st)
	}
	out, err := d.DumpCache([]string{br})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("  kernel entries: 2\n  kernel hits: %d packets, %d bytes\n", st.Packets, st.Bytes); !strings.HasSuffix(out, want) {
		t.Errorf("dump-cache:\n%s\nwant it to end with\n%s", out, want)
	}
	if _, err := d.FlushConntrack(nil); err != nil {
		t.Fatal(err)
	}
	if st := dp.Offload().Stats(); st.Entries != 0 {
		t.Errorf("%d kernel entries after flush-conntrack, want 0", st.Entries)
	}
	if d.tracker.Count() != 0 {
		t.Fatalf("conntrack not flushed")
	}
	// The next packet goes through userspace and conntrack again: the
	// connection is new (committed) and then offloaded again.
	if got := netnstest.UDPPingPong(t, nsA, nsB, src, dst, 50, 64); got != 50 {
		t.Fatalf("after the flush: %d/50 answers", got)
	}
	if d.tracker.Count() != 1 {
		t.Errorf("%d connections after the flush and new traffic, want 1", d.tracker.Count())
	}
	if st2 := dp.Offload().Stats(); st2.Packets < st.Packets+50 {
		t.Errorf("not offloaded again after the flush: kernel packets %d -> %d", st.Packets, st2.Packets)
	}
}
