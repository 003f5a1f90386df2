package ifioctl

import (
	"net"
	"strings"
	"testing"

	"github.com/govs-project/govs/datapath/netnstest"
	"golang.org/x/sys/unix"
)

// vethInNS is a veth in a fresh namespace and a control socket there
// (closed at the test's end).
func vethInNS(t *testing.T) (*netnstest.NS, *netnstest.Veth, int) {
	ns := netnstest.NewNS(t)
	v := netnstest.NewVeth(t, ns, nil, netnstest.VethOptions{})
	var fd int
	if err := ns.Do(func() (err error) { fd, err = ControlSocket(); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return ns, v, fd
}

// The ioctls act on a veth in a fresh namespace; `ip -j link show` is the
// independent check.
func TestIoctlsAgainstIP(t *testing.T) {
	ns, v, fd := vethInNS(t)

	mac := net.HardwareAddr{0x02, 0x12, 0x34, 0x56, 0x78, 0x9a}
	steps := []struct {
		name  string
		apply func() error
		check func(l *netnstest.Link) bool
	}{
		{"set MAC", func() error { return SetHardwareAddr(fd, v.Host, mac) },
			func(l *netnstest.Link) bool { return l.Address == mac.String() }},
		{"set MTU", func() error { return SetMTU(fd, v.Host, 1280) },
			func(l *netnstest.Link) bool { return l.MTU == 1280 }},
		{"down", func() error { return SetUp(fd, v.Host, false) },
			func(l *netnstest.Link) bool { return !l.HasFlag("UP") }},
		{"up", func() error { return SetUp(fd, v.Host, true) },
			func(l *netnstest.Link) bool { return l.HasFlag("UP") }},
	}
	for _, s := range steps {
		if err := s.apply(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		l, err := netnstest.LinkShow(ns, v.Host)
		if err != nil {
			t.Fatal(err)
		}
		if !s.check(l) {
			t.Errorf("%s: link is %+v", s.name, l)
		}
	}

	l, err := netnstest.LinkShow(ns, v.Host)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := Index(fd, v.Host)
	if err != nil || idx != l.Ifindex {
		t.Errorf("Index = %d, %v; ip says %d", idx, err, l.Ifindex)
	}
	got, err := HardwareAddr(fd, v.Host)
	if err != nil || got.String() != mac.String() {
		t.Errorf("HardwareAddr = %s, %v; want %s", got, err, mac)
	}
	mtu, err := MTU(fd, v.Host)
	if err != nil || mtu != 1280 {
		t.Errorf("MTU = %d, %v; want 1280", mtu, err)
	}
	flags, err := Flags(fd, v.Host)
	if err != nil || flags&unix.IFF_UP == 0 {
		t.Errorf("Flags = %#x, %v; want IFF_UP", flags, err)
	}
}

func TestIoctlErrors(t *testing.T) {
	netnstest.RequireRoot(t)
	fd, err := ControlSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"empty name", func() error { _, err := Index(fd, ""); return err }(), "must be 1 to 15 bytes"},
		{"long name", func() error { _, err := MTU(fd, "0123456789abcdef"); return err }(), "must be 1 to 15 bytes"},
		{"missing device", func() error { _, err := Index(fd, "gvmissing0"); return err }(), "SIOCGIFINDEX gvmissing0: no such device"},
		{"short MAC", SetHardwareAddr(fd, "lo", net.HardwareAddr{1, 2}), "not a 6-byte Ethernet address"},
		{"zero MTU", SetMTU(fd, "lo", 0), "out of range"},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, tc.err, tc.want)
		}
	}
}
