package geneve

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/tunnel"
	"github.com/govs-project/govs/tunnel/tunneltest"
	"golang.org/x/sys/unix"
)

// ipAddr is s (IPv4 or IPv6) as the table sees it; "" is no address.
func ipAddr(s string) addr {
	if s == "" {
		return addr{}
	}
	return addrOf(netip.MustParseAddr(s))
}

// tnlPort is a port that only has a name and a match, for the table.
func tnlPort(name, remote string, key KeyOption, local string) *Port {
	p := &Port{}
	p.Init("tunnel", name, 0)
	p.match.remote = ipAddr(remote)
	p.match.local = ipAddr(local)
	p.match.keyFlow = !key.Fixed
	p.match.vni = key.VNI
	return p
}

var keyFlow = KeyOption{}

func vni(n uint32) KeyOption { return KeyOption{Fixed: true, VNI: n} }

// TestTableLookup: the port a datagram goes to is the one Open vSwitch's
// tnl_find (ofproto/tunnel.c) picks: a fixed in_key before key=flow, and
// within each a fixed remote_ip before remote_ip=flow; nothing matches,
// nil (dropped). The ports are those of a node of OVN (one per remote
// chassis, key=flow) with a remote_ip=flow port and fixed-key ports, and
// the same over IPv6 and both families on one dual-stack socket, where an
// IPv4 peer is v4-mapped and so never an IPv6 port's.
func TestTableLookup(t *testing.T) {
	toB := tnlPort("ovn-b", "10.0.0.2", keyFlow, "")
	toC := tnlPort("ovn-c", "10.0.0.3", keyFlow, "")
	flow := tnlPort("flow", "", keyFlow, "")
	key5 := tnlPort("key5", "", vni(5), "")
	key5toB := tnlPort("key5-b", "10.0.0.2", vni(5), "")
	key0 := tnlPort("key0", "", vni(0), "") // no options:key at all, in OVS
	local := tnlPort("local", "10.0.0.2", keyFlow, "10.0.0.1")
	toB6 := tnlPort("ovn-b6", "fd00::2", keyFlow, "")
	toC6 := tnlPort("ovn-c6", "fd00::3", keyFlow, "")
	key5toB6 := tnlPort("key5-b6", "fd00::2", vni(5), "")
	local6 := tnlPort("local6", "fd00::2", keyFlow, "fd00::1")
	local6key5 := tnlPort("local6-key5", "", vni(5), "fd00::1")

	// Ports on the same socket with a local_ip, without, and with
	// local_ip=flow.
	at1 := tnlPort("at-1", "", keyFlow, "10.0.0.1")
	at9 := tnlPort("at-9", "", keyFlow, "10.0.0.9")
	anyDst := tnlPort("any", "", keyFlow, "")
	flowDst := tnlPort("local-flow", "", keyFlow, "")
	flowDst.match.localFlow = true
	flowDstToB := tnlPort("local-flow-b", "10.0.0.2", keyFlow, "")
	flowDstToB.match.localFlow = true
	at1key5 := tnlPort("at-1-key5", "", vni(5), "10.0.0.1")
	anyToB := tnlPort("any-b", "10.0.0.2", keyFlow, "")
	at1ToB := tnlPort("at-1-b", "10.0.0.2", keyFlow, "10.0.0.1")

	type pkt struct {
		src  string
		vni  uint32
		want *Port
		dst  string // "": 10.0.0.1 or fd00::1
	}
	cases := []struct {
		name  string
		ports []*Port
		pkts  []pkt
	}{
		{"one port per remote chassis", []*Port{toB, toC}, []pkt{
			{"10.0.0.2", 1, toB, ""}, {"10.0.0.3", 7, toC, ""}, {"10.0.0.4", 1, nil, ""},
		}},
		{"fixed remote_ip before remote_ip=flow", []*Port{flow, toB, toC}, []pkt{
			{"10.0.0.2", 1, toB, ""}, {"10.0.0.3", 1, toC, ""}, {"10.0.0.4", 1, flow, ""}, {"10.0.0.9", 0xffffff, flow, ""},
		}},
		{"fixed in_key before key=flow, whatever remote_ip", []*Port{toB, flow, key5}, []pkt{
			{"10.0.0.2", 5, key5, ""}, {"10.0.0.2", 6, toB, ""}, {"10.0.0.4", 5, key5, ""}, {"10.0.0.4", 6, flow, ""},
		}},
		{"fixed in_key and remote_ip first of all", []*Port{toB, flow, key5, key5toB}, []pkt{
			{"10.0.0.2", 5, key5toB, ""}, {"10.0.0.3", 5, key5, ""}, {"10.0.0.2", 4, toB, ""},
		}},
		{"no key option: VNI 0 only", []*Port{key0}, []pkt{
			{"10.0.0.2", 0, key0, ""}, {"10.0.0.2", 1, nil, ""},
		}},
		{"a lone fixed-remote port drops the others", []*Port{toB}, []pkt{
			{"10.0.0.2", 3, toB, ""}, {"10.0.0.3", 3, nil, ""},
		}},
		{"a lone port with local_ip", []*Port{local}, []pkt{
			{"10.0.0.2", 3, local, ""},
		}},
		{"no ports", nil, []pkt{{"10.0.0.2", 3, nil, ""}}},
		{"one port per remote chassis, IPv6", []*Port{toB6, toC6}, []pkt{
			{"fd00::2", 1, toB6, ""}, {"fd00::3", 7, toC6, ""}, {"fd00::4", 1, nil, ""}, {"10.0.0.2", 1, nil, ""},
		}},
		{"both families on the dual-stack socket", []*Port{toB, toB6, flow, key5toB6}, []pkt{
			{"10.0.0.2", 1, toB, ""}, {"fd00::2", 1, toB6, ""}, {"fd00::2", 5, key5toB6, ""}, {"10.0.0.2", 5, toB, ""},
			// IPv4-compatible and NAT64 forms of 10.0.0.2 are other addresses.
			{"::10.0.0.2", 1, flow, ""}, {"64:ff9b::10.0.0.2", 1, flow, ""}, {"fd00::9", 1, flow, ""},
		}},
		{"a lone fixed-remote IPv6 port", []*Port{toB6}, []pkt{
			{"fd00::2", 3, toB6, ""}, {"fd00::3", 3, nil, ""}, {"10.0.0.2", 3, nil, ""},
		}},
		{"IPv6 local_ip", []*Port{local6, local6key5}, []pkt{
			{"fd00::2", 3, local6, ""}, {"fd00::2", 5, local6key5, ""}, {"fd00::3", 3, nil, ""},
			{"fd00::2", 3, nil, "fd00::9"}, {"fd00::2", 3, nil, "10.0.0.1"},
		}},
		// ip_src_type: IP_SRC_CFG, then IP_SRC_ANY, then IP_SRC_FLOW.
		{"local_ip before none before local_ip=flow", []*Port{flowDst, anyDst, at1, at9}, []pkt{
			{"10.0.0.2", 3, at1, "10.0.0.1"}, {"10.0.0.2", 3, at9, "10.0.0.9"}, {"10.0.0.2", 3, anyDst, "10.0.0.7"},
			{"fd00::2", 3, anyDst, "fd00::1"},
		}},
		{"local_ip=flow takes what no other port does", []*Port{flowDst, at1}, []pkt{
			{"10.0.0.2", 3, at1, "10.0.0.1"}, {"10.0.0.2", 3, flowDst, "10.0.0.7"}, {"fd00::2", 3, flowDst, "fd00::1"},
		}},
		{"a lone local_ip port drops other destinations", []*Port{at1}, []pkt{
			{"10.0.0.2", 3, at1, "10.0.0.1"}, {"10.0.0.2", 3, nil, "10.0.0.9"}, {"10.0.0.2", 3, nil, "::ffff:0.0.0.0"},
		}},
		// The local_ip comes last: a fixed remote_ip without local_ip
		// wins over a local_ip with remote_ip=flow, a fixed key over both.
		{"in_key, then remote_ip, then local_ip", []*Port{at1, anyToB, at1key5, flowDstToB}, []pkt{
			{"10.0.0.2", 3, anyToB, "10.0.0.1"}, {"10.0.0.3", 3, at1, "10.0.0.1"}, {"10.0.0.2", 5, at1key5, "10.0.0.1"},
			{"10.0.0.3", 3, nil, "10.0.0.9"}, {"10.0.0.2", 5, anyToB, "10.0.0.9"},
		}},
		{"fixed remote_ip: local_ip before none before flow", []*Port{flowDstToB, anyToB, at1ToB}, []pkt{
			{"10.0.0.2", 3, at1ToB, "10.0.0.1"}, {"10.0.0.2", 3, anyToB, "10.0.0.9"},
		}},
		{"local_ip=flow without other ports", []*Port{flowDstToB}, []pkt{
			{"10.0.0.2", 3, flowDstToB, "10.0.0.9"}, {"10.0.0.3", 3, nil, "10.0.0.9"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl := newTable(c.ports)
			for _, p := range c.pkts {
				dst := p.dst
				if dst == "" {
					dst = "10.0.0.1"
					if netip.MustParseAddr(p.src).Is6() {
						dst = "fd00::1"
					}
				}
				got := tbl.lookup(ipAddr(p.src), ipAddr(dst), p.vni)
				if got != p.want {
					t.Errorf("from %s to %s VNI %d: port %v, want %v", p.src, dst, p.vni, portName(got), portName(p.want))
				}
			}
		})
	}
}

func portName(p *Port) string {
	if p == nil {
		return "none"
	}
	return p.Name()
}

// BenchmarkTableLookup is the per-datagram cost of finding the port: one
// port (Antrea), and a node of a 100-chassis OVN (one fixed-remote port
// per chassis) receiving from one of them.
func BenchmarkTableLookup(b *testing.B) {
	one := []*Port{tnlPort("flow", "", keyFlow, "")}
	var ovn []*Port
	for i := range 100 {
		ovn = append(ovn, tnlPort("ovn", netip.AddrFrom4([4]byte{10, 0, 1, byte(i)}).String(), keyFlow, ""))
	}
	for _, c := range []struct {
		name  string
		ports []*Port
	}{{"one port", one}, {"100 chassis", ovn}} {
		b.Run(c.name, func(b *testing.B) {
			tbl := newTable(c.ports)
			src, dst := ipAddr("10.0.1.42"), ipAddr("10.0.0.1")
			for b.Loop() {
				if tbl.lookup(src, dst, 7) == nil {
					b.Fatal("no port")
				}
			}
		})
	}
}

// BenchmarkDecapShared is BenchmarkDecap on a socket shared by three
// ports, as on an OVN chassis: fixed remote_ip 127.0.0.2 and 127.0.0.3 and
// a fixed VNI 9, the datagrams (VNI 7) from 127.0.0.2 for the second port.
func BenchmarkDecapShared(b *testing.B) {
	ns := netnstest.NewNS(b)
	var ps []*Port
	if err := ns.Do(func() error {
		for _, c := range []Config{
			{Name: "to-c", RemoteIP: netip.MustParseAddr("127.0.0.3")},
			{Name: "to-b", RemoteIP: netip.MustParseAddr("127.0.0.2")},
			{Name: "key9", InKey: vni(9)},
		} {
			c.LocalIP = netip.MustParseAddr("127.0.0.1")
			p, err := Open(c)
			if err != nil {
				return err
			}
			ps = append(ps, p)
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for _, p := range ps {
			p.Close()
		}
	})
	benchDecap(b, ps[0])
	if ps[1].Stats().RxPackets < uint64(b.N) {
		b.Fatalf("to-b received %d of %d", ps[1].Stats().RxPackets, b.N)
	}
}

// genevePacket is a Geneve header with VNI vni (no options) and frame.
func genevePacket(vni uint32, frame []byte) []byte {
	h := []byte{0, 0, 0x65, 0x58, byte(vni >> 16), byte(vni >> 8), byte(vni), 0}
	return append(h, frame...)
}

// sendFrom sends datagrams from src (any port) to dst:6081 in the
// caller's namespace, over IPv4 or IPv6 (both of one family).
func sendFrom(src, dst string, datagrams ...[]byte) error {
	from, to := netip.MustParseAddr(src), netip.MustParseAddr(dst)
	family := unix.AF_INET6
	var bind, sa unix.Sockaddr = &unix.SockaddrInet6{Addr: from.As16()}, &unix.SockaddrInet6{Addr: to.As16(), Port: 6081}
	if from.Is4() {
		family = unix.AF_INET
		bind, sa = &unix.SockaddrInet4{Addr: from.As4()}, &unix.SockaddrInet4{Addr: to.As4(), Port: 6081}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, bind); err != nil {
		return err
	}
	for _, d := range datagrams {
		if err := unix.Sendto(fd, d, 0, sa); err != nil {
			return err
		}
	}
	return nil
}

// sendAll sends datagrams from each source address in ns to the one of
// dsts of the source's family.
func sendAll(t *testing.T, ns *netnstest.NS, dsts []string, datagrams map[string][][]byte) {
	t.Helper()
	if err := ns.Do(func() error {
		for src, d := range datagrams {
			i := slices.IndexFunc(dsts, func(dst string) bool {
				return netip.MustParseAddr(dst).Is4() == netip.MustParseAddr(src).Is4()
			})
			if err := sendFrom(src, dsts[i], d...); err != nil {
				return fmt.Errorf("from %s: %w", src, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// readShared reads from p until n frames came or d passed, and returns
// how many were for each port ("port" or, with bySource, "port<-source",
// the outer source of the frame's metadata).
func readShared(t *testing.T, p *Port, n int, d time.Duration, bySource bool) map[string]int {
	t.Helper()
	b := port.NewBatch(8)
	md := make([]tunnel.Metadata, 8)
	got := map[string]int{}
	total := 0
	for end := time.Now().Add(d); total < n && time.Now().Before(end); {
		k, err := p.ReadTunnelBatch(b, md)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < k; i++ {
			name := p.RxPort(i).Name()
			if bySource {
				src := netip.AddrFrom4([4]byte{byte(md[i].Src >> 24), byte(md[i].Src >> 16), byte(md[i].Src >> 8), byte(md[i].Src)})
				if md[i].IPv6 {
					src = netip.AddrFrom16(md[i].Src6)
				}
				name += "<-" + src.String()
			}
			got[name]++
		}
		total += k
	}
	return got
}

// TestSharedSocket: three ports on one address and UDP port (two with a
// fixed remote_ip, one remote_ip=flow) open, all of them, where each
// used to need its own socket; the first reads for all, each frame
// named with the port it is for and counted there, one from nobody's
// remote with a fixed key counted as no port's. Closing the reader hands
// the socket to the next port; closing the last frees the UDP port.
func TestSharedSocket(t *testing.T) {
	ns := netnstest.NewNS(t)
	var toB, toC, flow *Port
	frame := tunneltest.SeedFrame(t)
	err := ns.Do(func() error {
		var err error
		cfg := Config{LocalIP: netip.MustParseAddr("127.0.0.1"), ReadTimeout: 20 * time.Millisecond}
		open := func(name, remote string, key KeyOption) *Port {
			if err != nil {
				return nil
			}
			c := cfg
			c.Name, c.InKey = name, key
			if remote != "" {
				c.RemoteIP = netip.MustParseAddr(remote)
			}
			var p *Port
			p, err = Open(c)
			return p
		}
		toB = open("to-b", "127.0.0.2", keyFlow)
		toC = open("to-c", "127.0.0.3", keyFlow)
		flow = open("flow", "", vni(9))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*Port{toB, toC, flow} {
		t.Cleanup(func() { p.Close() })
	}
	send := func(datagrams map[string][][]byte) {
		t.Helper()
		sendAll(t, ns, []string{"127.0.0.1"}, datagrams)
	}
	// read reads from p until n frames came and returns whom they were for.
	read := func(p *Port, n int, d time.Duration) map[string]int {
		t.Helper()
		return readShared(t, p, n, d, false)
	}
	if toB.PollFd() != toB.rx.fd || toC.PollFd() != toC.inbox.fd || flow.PollFd() != flow.inbox.fd {
		t.Fatalf("poll descriptors %d %d %d: only the first port reads the socket, the others poll their inboxes", toB.PollFd(), toC.PollFd(), flow.PollFd())
	}
	send(map[string][][]byte{
		"127.0.0.2": {genevePacket(1, frame), genevePacket(9, frame)},
		"127.0.0.3": {genevePacket(1, frame)},
		"127.0.0.4": {genevePacket(9, frame), genevePacket(1, frame)},
	})
	// From .2 with VNI 9: the fixed key wins over the fixed remote_ip
	// (tnl_find tries in_key first). From .4 with VNI 1: no port.
	if got := read(toB, 4, 5*time.Second); got["to-b"] != 1 || got["to-c"] != 1 || got["flow"] != 2 {
		t.Errorf("frames for %v, want to-b 1, to-c 1, flow 2", got)
	}
	if n := read(toC, 1, 300*time.Millisecond); len(n) != 0 {
		t.Errorf("a port that is not the reader read %v", n)
	}
	for _, c := range []struct {
		p          *Port
		rx, noPort uint64
	}{{toB, 1, 1}, {toC, 1, 0}, {flow, 2, 0}} {
		if st := c.p.TunnelStats(); st.RxPackets != c.rx || st.RxNoPort != c.noPort || st.RxDropped != c.noPort {
			t.Errorf("%s: stats %+v, want %d received, %d for no port", c.p.Name(), st, c.rx, c.noPort)
		}
	}

	// The reader goes: to-c reads now, and to-b's datagrams are no
	// port's.
	if err := toB.Close(); err != nil {
		t.Fatal(err)
	}
	send(map[string][][]byte{"127.0.0.2": {genevePacket(1, frame)}, "127.0.0.3": {genevePacket(1, frame)}})
	if got := read(toC, 1, 5*time.Second); got["to-c"] != 1 || len(got) != 1 {
		t.Errorf("after closing to-b, to-c read %v, want one frame of its own", got)
	}
	if st := toC.TunnelStats(); st.RxNoPort != 1 {
		t.Errorf("to-c: %d datagrams for no port, want 1 (to-b's)", st.RxNoPort)
	}
	toC.Close()
	flow.Close()
	// The last port closed the socket: the UDP port is free again.
	if err := ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Bind(fd, &unix.SockaddrInet4{Port: 6081})
	}); err != nil {
		t.Errorf("bind 0.0.0.0:6081 after the last port closed: %v", err)
	}
}

// TestSharedSocketIPv6: ports without local_ip share one dual-stack socket
// whatever the family of their remote_ip, and ports with an IPv6 local_ip
// one IPv6 socket: each datagram goes to the port of its sender, IPv4
// (v4-mapped on the dual-stack socket) or IPv6, with the outer source of
// its family in the metadata; a sender no port claims is dropped.
func TestSharedSocketIPv6(t *testing.T) {
	frame := tunneltest.SeedFrame(t)
	type port struct {
		name, remote string
		key          KeyOption
	}
	for _, tc := range []struct {
		name, local string
		dsts        []string // where the datagrams go, by family
		ports       []port
		send        map[string][][]byte
		want        map[string]int // "port<-source": frames
		noPort      uint64
	}{
		{
			name: "no local_ip: one dual-stack socket", dsts: []string{"127.0.0.1", "fd00:6::1"},
			ports: []port{{"to-b4", "127.0.0.2", keyFlow}, {"to-b6", "fd00:6::2", keyFlow}, {"to-c6", "fd00:6::3", keyFlow}, {"flow", "", keyFlow}},
			send: map[string][][]byte{
				"127.0.0.2": {genevePacket(1, frame)},
				"127.0.0.4": {genevePacket(1, frame)},
				"fd00:6::2": {genevePacket(1, frame), genevePacket(2, frame)},
				"fd00:6::3": {genevePacket(1, frame)},
				"fd00:6::4": {genevePacket(1, frame)},
			},
			want: map[string]int{"to-b4<-127.0.0.2": 1, "flow<-127.0.0.4": 1, "to-b6<-fd00:6::2": 2, "to-c6<-fd00:6::3": 1, "flow<-fd00:6::4": 1},
		},
		{
			name: "IPv6 local_ip", local: "fd00:6::1", dsts: []string{"fd00:6::1"},
			ports: []port{{"to-b6", "fd00:6::2", keyFlow}, {"key9", "", vni(9)}},
			send: map[string][][]byte{
				"fd00:6::2": {genevePacket(1, frame), genevePacket(9, frame)},
				"fd00:6::3": {genevePacket(9, frame), genevePacket(1, frame)},
			},
			want:   map[string]int{"to-b6<-fd00:6::2": 1, "key9<-fd00:6::2": 1, "key9<-fd00:6::3": 1},
			noPort: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := netnstest.NewNS(t)
			for _, a := range []string{"fd00:6::1", "fd00:6::2", "fd00:6::3", "fd00:6::4"} {
				ns.MustExec(t, "ip", "addr", "add", a+"/128", "dev", "lo", "nodad")
			}
			var ps []*Port
			for _, pc := range tc.ports {
				c := Config{Name: pc.name, InKey: pc.key, ReadTimeout: 20 * time.Millisecond}
				if tc.local != "" {
					c.LocalIP = netip.MustParseAddr(tc.local)
				}
				if pc.remote != "" {
					c.RemoteIP = netip.MustParseAddr(pc.remote)
				}
				ps = append(ps, openIn(t, ns, c))
			}
			for _, p := range ps[1:] {
				if p.rx != ps[0].rx {
					t.Fatalf("%s has a socket of its own", p.Name())
				}
			}
			sendAll(t, ns, tc.dsts, tc.send)
			want := 0
			for _, n := range tc.want {
				want += n
			}
			if got := readShared(t, ps[0], want, 5*time.Second, true); !maps.Equal(got, tc.want) {
				t.Errorf("frames %v, want %v", got, tc.want)
			}
			if st := ps[0].TunnelStats(); st.RxNoPort != tc.noPort {
				t.Errorf("%d datagrams for no port, want %d", st.RxNoPort, tc.noPort)
			}
		})
	}
}

// TestHandoffToOtherGroup: the reader of a shared socket hands a datagram
// for a port of another group (another bridge) to that port's inbox, as it
// came off the socket: that port's own read returns it, decapsulated, as
// its own, with the outer source, destination and VNI; a full inbox drops
// what comes next, counted on its port; a port of the reader's group gets
// its frames from the reader, as before.
func TestHandoffToOtherGroup(t *testing.T) {
	ns := netnstest.NewNS(t)
	frame := tunneltest.SeedFrame(t)
	cfg := func(name, remote string) Config {
		return Config{Name: name, RemoteIP: netip.MustParseAddr(remote), ReadTimeout: 20 * time.Millisecond}
	}
	a := openIn(t, ns, cfg("a", "127.0.0.2"))
	a2 := openIn(t, ns, cfg("a2", "127.0.0.4"))
	b := openIn(t, ns, cfg("b", "127.0.0.3"))
	var ga, gb RxGroup
	a.SetRxGroup(&ga)
	a2.SetRxGroup(&ga)
	b.SetRxGroup(&gb)
	if b.PollFd() != b.inbox.fd {
		t.Fatalf("b polls %d, want its inbox %d", b.PollFd(), b.inbox.fd)
	}
	sendAll(t, ns, []string{"127.0.0.1"}, map[string][][]byte{
		"127.0.0.2": {genevePacket(1, frame)},
		"127.0.0.3": {genevePacket(2, frame), genevePacket(3, frame)},
		"127.0.0.4": {genevePacket(4, frame)},
	})
	if got := readShared(t, a, 2, 5*time.Second, false); got["a"] != 1 || got["a2"] != 1 || len(got) != 2 {
		t.Errorf("the reader returned %v, want a 1, a2 1", got)
	}
	bt := port.NewBatch(8)
	md := make([]tunnel.Metadata, 8)
	n, err := b.ReadTunnelBatch(bt, md)
	if err != nil || n != 2 {
		t.Fatalf("b read %d frames (%v), want its 2 from its inbox", n, err)
	}
	for i := range n {
		if b.RxPort(i) != b || md[i].VNI != uint32(i+2) || md[i].Src != 0x7f000003 || md[i].Dst != 0x7f000001 || string(bt.Frames[i]) != string(frame) {
			t.Errorf("frame %d: port %s VNI %d %x->%x, want b VNI %d 127.0.0.3->127.0.0.1 and the frame sent", i, portName(b.RxPort(i)), md[i].VNI, md[i].Src, md[i].Dst, i+2)
		}
	}
	if st := b.Stats(); st.RxPackets != 2 || st.RxDropped != 0 {
		t.Errorf("b: %+v, want 2 received", st)
	}
	// A critical option only b's bridge maps: a's refuses it, b's loop
	// takes it.
	if err := b.SetTLVMap(tunneltest.TLVMap(t, tunneltest.AntreaTLV)); err != nil {
		t.Fatal(err)
	}
	opt := []byte{0x01, 0x04, 0x80, 0x01, 0xa0, 0, 0, 0} // class 0x104, critical type 0x80, 4 bytes
	withOpt := append([]byte{0x02, 0, 0x65, 0x58, 0, 0, 6, 0}, append(opt, frame...)...)
	sendAll(t, ns, []string{"127.0.0.1"}, map[string][][]byte{"127.0.0.3": {withOpt}})
	readShared(t, a, 1, 200*time.Millisecond, false)
	if n, err := b.ReadTunnelBatch(bt, md); err != nil || n != 1 || md[0].VNI != 6 || len(md[0].Options) != 8 {
		t.Errorf("b read %d frames (%v), want the one with an option a's bridge does not map", n, err)
	}
	if st := a.TunnelStats(); st.RxHeaderErrors != 0 {
		t.Errorf("a counted %d header errors for b's datagram", st.RxHeaderErrors)
	}
	// b reads nothing: its inbox fills up, then drops (sent in rounds
	// that the socket's own queue holds).
	deadline := time.Now().Add(5 * time.Second)
	for b.Stats().RxDropped == 0 && time.Now().Before(deadline) {
		sendAll(t, ns, []string{"127.0.0.1"}, map[string][][]byte{"127.0.0.3": slices.Repeat([][]byte{genevePacket(5, frame)}, 64)})
		readShared(t, a, 1, 20*time.Millisecond, false)
	}
	if q, st := b.inbox.queued.Load(), b.Stats(); q != inboxSlots || st.RxDropped == 0 {
		t.Errorf("b's inbox holds %d (want %d) and dropped %d (want some)", q, inboxSlots, st.RxDropped)
	}
	got := 0
	for got < inboxSlots {
		n, err := b.ReadTunnelBatch(bt, md)
		if err != nil || n == 0 {
			t.Fatalf("b read %d (%v) after %d of its inbox", n, err, got)
		}
		got += n
	}
	if got != inboxSlots {
		t.Errorf("b read %d from its inbox, want %d", got, inboxSlots)
	}
}
