package geneve

import (
	"net/netip"
	"testing"

	"github.com/govs-project/govs/datapath/netnstest"
)

// TestResolverNextHop asks the kernel of a fresh namespace for the next
// hop of a destination on a link with a permanent neighbour, one without a
// resolved neighbour, and one without a route.
func TestResolverNextHop(t *testing.T) {
	ns := netnstest.NewNS(t)
	peer := netnstest.NewNS(t)
	v := netnstest.NewVeth(t, ns, peer, netnstest.VethOptions{HostAddr: "10.93.0.1/24", PeerAddr: "10.93.0.2/24"})
	ns.MustExec(t, "ip", "neigh", "replace", "10.93.0.2", "lladdr", "02:93:00:00:00:02", "dev", v.Host, "nud", "permanent")
	ns.MustExec(t, "ip", "route", "add", "10.94.0.0/24", "via", "10.93.0.2")
	var r *Resolver
	if err := ns.Do(func() (err error) { r, err = NewResolver(); return err }); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src := netip.MustParseAddr("10.93.0.1").As4()
	for _, tc := range []struct {
		dst string
		ok  bool
	}{
		{"10.93.0.2", true},  // on link, permanent neighbour
		{"10.94.0.7", true},  // via the gateway 10.93.0.2
		{"10.93.0.3", false}, // on link, never resolved
		{"10.95.0.1", false}, // no route
	} {
		nh, err := r.NextHop(src, netip.MustParseAddr(tc.dst).As4())
		if (err == nil) != tc.ok {
			t.Errorf("%s: %+v, %v; want ok %v", tc.dst, nh, err, tc.ok)
			continue
		}
		if tc.ok && (nh.MAC != [6]byte{2, 0x93, 0, 0, 0, 2} || nh.Ifindex == 0) {
			t.Errorf("%s: next hop %+v, want 02:93:00:00:00:02 on the veth", tc.dst, nh)
		}
	}
}
