package offload

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/netnstest"
)

// pair is two pods (namespaces a, b) whose veths' host ends are in sw,
// with nothing forwarding between them but the offload program.
type pair struct {
	sw, a, b     *netnstest.NS
	va, vb       *netnstest.Veth
	ifA, ifB     int // host ends' ifindexes in sw
	macA, macB   net.HardwareAddr
	macHA, macHB net.HardwareAddr
	ipA, ipB     netip.Addr
}

func newPair(t *testing.T) *pair { return newPairWith(t, false) }

// newPairWith is newPair with the veths' checksum and segmentation
// offloads left on (keepOffloads) or turned off.
func newPairWith(t *testing.T, keepOffloads bool) *pair {
	p := &pair{
		macA: net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 1}, macB: net.HardwareAddr{0x02, 0xaa, 0, 0, 0, 2},
		macHA: net.HardwareAddr{0x02, 0xbb, 0, 0, 0, 1}, macHB: net.HardwareAddr{0x02, 0xbb, 0, 0, 0, 2},
		ipA: netip.MustParseAddr("10.77.0.1"), ipB: netip.MustParseAddr("10.77.0.2"),
	}
	p.sw, p.a, p.b = netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
	p.va = netnstest.NewVeth(t, p.sw, p.a, netnstest.VethOptions{HostMAC: p.macHA, PeerMAC: p.macA, PeerAddr: "10.77.0.1/24", KeepOffloads: keepOffloads})
	p.vb = netnstest.NewVeth(t, p.sw, p.b, netnstest.VethOptions{HostMAC: p.macHB, PeerMAC: p.macB, PeerAddr: "10.77.0.2/24", KeepOffloads: keepOffloads})
	// A sends to B's address with the host end's MAC (as through a router).
	p.a.MustExec(t, "ip", "neigh", "replace", "10.77.0.2", "lladdr", p.macHA.String(), "dev", p.va.Peer, "nud", "permanent")
	err := p.sw.Do(func() error {
		ia, err := net.InterfaceByName(p.va.Host)
		if err != nil {
			return err
		}
		ib, err := net.InterfaceByName(p.vb.Host)
		if err != nil {
			return err
		}
		p.ifA, p.ifB = ia.Index, ib.Index
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *pair) flowKey(sport, dport uint16) FlowKey {
	return FlowKey{
		Ifindex: uint32(p.ifA), EthSrc: [6]byte(p.macA), EthDst: [6]byte(p.macHA),
		Src: p.ipA, Dst: p.ipB, Proto: unix.IPPROTO_UDP, SrcPort: sport, DstPort: dport, TTL: 64,
	}
}

// udpListen opens a UDP socket in ns.
func udpListen(t *testing.T, ns *netnstest.NS, addr string) *net.UDPConn {
	var c *net.UDPConn
	err := ns.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recvCount reads datagrams until none comes for a while.
func recvCount(c *net.UDPConn, quiet time.Duration) int {
	buf := make([]byte, 2048)
	n := 0
	for {
		c.SetReadDeadline(time.Now().Add(quiet))
		if _, _, err := c.ReadFromUDP(buf); err != nil {
			return n
		}
		n++
	}
}

// tapSees counts the UDP frames to dport the raw socket on the ingress
// host end sees (a tap in the packet path, as an AF_PACKET port).
func tapSees(s *netnstest.RawSocket, dport uint16, quiet time.Duration) int {
	buf := make([]byte, 2048)
	n := 0
	for {
		m, err := s.Recv(buf, quiet)
		if err != nil {
			return n
		}
		f := buf[:m]
		if m >= 14+20+8 && binary.BigEndian.Uint16(f[12:]) == 0x0800 && f[23] == unix.IPPROTO_UDP &&
			binary.BigEndian.Uint16(f[36:]) == dport {
			n++
		}
	}
}

// TestRedirect: an installed entry forwards A's datagrams to B in the kernel
// with the recorded rewrites, counts them, and the AF_PACKET tap on the
// ingress port does not see them (each packet is handled once); a flow
// without an entry, and every flow once the generation moves on, reaches
// the tap and not B.
func TestRedirect(t *testing.T) {
	p := newPair(t)
	k, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	var l interface{ Close() error }
	if err := p.sw.Do(func() (err error) { l, err = k.Attach(p.ifA, ""); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tap := netnstest.NewRawSocket(t, p.sw, p.va.Host)
	srv := udpListen(t, p.b, "10.77.0.2:9999")
	cli := udpListen(t, p.a, "10.77.0.1:4000")
	cli2 := udpListen(t, p.a, "10.77.0.1:4001")
	send := func(c *net.UDPConn, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if _, err := c.WriteToUDP(make([]byte, 100), &net.UDPAddr{IP: net.IPv4(10, 77, 0, 2), Port: 9999}); err != nil {
				t.Fatal(err)
			}
		}
	}

	fk := p.flowKey(4000, 9999)
	act := Action{OutIfindex: uint32(p.ifB), Flags: ActSetEth | ActDecTTL, EthSrc: [6]byte(p.macHB), EthDst: [6]byte(p.macB)}
	if err := k.Install(fk, act, 1); err != nil {
		t.Fatal(err)
	}
	const n = 20
	send(cli, n)
	if got := recvCount(srv, 300*time.Millisecond); got != n {
		t.Errorf("B received %d datagrams through the kernel entry, want %d", got, n)
	}
	if got := tapSees(tap, 9999, 50*time.Millisecond); got != 0 {
		t.Errorf("the ingress tap saw %d redirected frames, want 0", got)
	}
	c, ok, err := k.Lookup(fk)
	if err != nil || !ok {
		t.Fatalf("lookup: ok %v err %v", ok, err)
	}
	if c.Packets != n || c.Bytes != n*(14+20+8+100) {
		t.Errorf("counters %+v, want %d packets of %d bytes", c, n, 14+20+8+100)
	}

	// Another source port: no entry, userspace's (the tap's).
	send(cli2, 3)
	if got := tapSees(tap, 9999, 100*time.Millisecond); got != 3 {
		t.Errorf("the tap saw %d frames without an entry, want 3", got)
	}
	if got := recvCount(srv, 100*time.Millisecond); got != 0 {
		t.Errorf("B received %d datagrams without an entry", got)
	}

	// A new generation disables the entry before it is deleted.
	if err := k.SetGeneration(2); err != nil {
		t.Fatal(err)
	}
	send(cli, 3)
	if got := tapSees(tap, 9999, 100*time.Millisecond); got != 3 {
		t.Errorf("the tap saw %d frames of a stale entry, want 3", got)
	}
	if err := k.Clear(); err != nil {
		t.Fatal(err)
	}
	if k.Len() != 0 {
		t.Errorf("%d entries after Clear", k.Len())
	}
}
