package geneve

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/tunnel"
	"github.com/govs-project/govs/tunnel/tunneltest"
	"golang.org/x/sys/unix"
)

// An IPv6 underlay between the two nodes (the veth also keeps its IPv4
// addresses, so a remote_ip=flow port can be asked for both families).
var (
	worker1IP6 = netip.MustParseAddr("fd00:4f::c9")
	worker2IP6 = netip.MustParseAddr("fd00:4f::ca")
)

func newUnderlay6(t *testing.T) *underlay {
	t.Helper()
	u := newUnderlayWith(t, netnstest.VethOptions{HostAddr: "fd00:4f::c9/64", PeerAddr: "fd00:4f::ca/64", KeepIPv6: true})
	u.ns1.MustExec(t, "ip", "addr", "add", "10.79.1.201/24", "dev", u.veth.Host)
	u.ns2.MustExec(t, "ip", "addr", "add", "10.79.1.202/24", "dev", u.veth.Peer)
	return u
}

// TestGeneveIPv6 sends Geneve over an IPv6 underlay, as OVS does for
// tun_ipv6_dst or an IPv6 remote_ip: the outer header is IPv6 from the
// route's source (or local_ip), the UDP checksum is computed (tshark checks
// it), and the receiver fills tun_ipv6_src/tun_ipv6_dst, tun_id and the
// mapped options into the key, with tun_src/tun_dst 0.
func TestGeneveIPv6(t *testing.T) {
	for _, tc := range []struct {
		name          string
		local, remote netip.Addr // of the sender
		recvLocal     netip.Addr
	}{
		{name: "remote_ip=flow, no local_ip"},
		{name: "fixed remote_ip and local_ip", local: worker1IP6, remote: worker2IP6, recvLocal: worker2IP6},
		{name: "fixed remote_ip, route source", remote: worker2IP6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnderlay6(t)
			tlv := tunneltest.TLVMap(t, tunneltest.AntreaTLV)
			p1 := openIn(t, u.ns1, Config{LocalIP: tc.local, RemoteIP: tc.remote, TLV: tlv})
			p2 := openIn(t, u.ns2, Config{LocalIP: tc.recvLocal, TLV: tlv, ReadTimeout: 50 * time.Millisecond})
			if tc.remote.IsValid() && p1.MTU() != 1430 {
				t.Errorf("MTU %d, want 1430 (1500 - 40 - 8 - 8 - 14)", p1.MTU())
			}
			inner := tunneltest.SeedFrame(t)
			var k flowtable.Key
			flowtable.FieldTunID.SetUint64(&k, 0x5)
			flowtable.FieldTunIPv6Dst.SetValue(&k, worker2IP6.AsSlice())
			mark := []byte{0x10, 0, 0, 0}
			copy(tunneltest.TunMetadata(t, tunneltest.AntreaTLV, 0, &k), mark)

			var got []byte
			var md tunnel.Metadata
			dump, sends := tshark(t, u.ns2, u.veth.Peer, "ip6 and udp port 6081", func() {
				if n, err := p1.WriteTunnel([][]byte{inner}, []*flowtable.Key{&k}); err != nil || n != 1 {
					t.Fatalf("WriteTunnel = %d, %v", n, err)
				}
				got, md = readOne(t, p2, 5*time.Second)
			}, "-o", "udp.check_checksum:TRUE")
			if !bytes.Equal(got, inner) {
				t.Errorf("inner frame\n got % x\nwant % x", got, inner)
			}
			if !md.IPv6 || md.Src6 != worker1IP6.As16() || md.Dst6 != worker2IP6.As16() || md.Src != 0 || md.Dst != 0 ||
				md.VNI != 5 || md.SrcPort != tunnel.SourcePort(inner) || md.DstPort != 6081 {
				t.Errorf("metadata %+v", md)
			}
			var k2 flowtable.Key
			flowtable.FieldTunDst.SetUint64(&k2, 0x01020304) // stale: FillKey clears it
			if err := p2.FillKey(&md, &k2); err != nil {
				t.Fatal(err)
			}
			if k2.TunIPv6Src() != worker1IP6.As16() || k2.TunIPv6Dst() != worker2IP6.As16() || k2.TunSrc() != 0 || k2.TunDst() != 0 ||
				k2.TunID() != 5 || !bytes.Equal(tunneltest.TunMetadata(t, tunneltest.AntreaTLV, 0, &k2), mark) {
				t.Errorf("key: tun_ipv6_src %x tun_ipv6_dst %x tun_src %#x tun_dst %#x tun_id %d", k2.TunIPv6Src(), k2.TunIPv6Dst(), k2.TunSrc(), k2.TunDst(), k2.TunID())
			}
			checkDecode(t, dump, []string{
				"Src: fd00:4f::c9, Dst: fd00:4f::ca",
				"Next Header: UDP (17)",
				"Hop Limit: 64",
				"Destination Port: 6081",
				"[Checksum Status: Good]",
				"Virtual Network Identifier (VNI): 0x000005",
				"Option Data: 10000000",
				"Src: 10.222.1.48, Dst: 10.222.2.34",
			})
			if s := p1.TunnelStats(); s.TxPackets != uint64(sends) || s.TxDropped != 0 {
				t.Errorf("sender stats %+v", s)
			}
		})
	}
}

// TestGeneveDualStack: one remote_ip=flow port without local_ip sends a
// batch that mixes tun_dst and tun_ipv6_dst frames (tun_dst wins when both
// are set, as in OVS), and the receiver's one socket gets both families.
func TestGeneveDualStack(t *testing.T) {
	u := newUnderlay6(t)
	p1 := openIn(t, u.ns1, Config{})
	p2 := openIn(t, u.ns2, Config{ReadTimeout: 50 * time.Millisecond})
	inner := tunneltest.SeedFrame(t)
	var k4, k6, both, none flowtable.Key
	flowtable.FieldTunDst.SetUint64(&k4, 0x0a4f01ca)
	flowtable.FieldTunIPv6Dst.SetValue(&k6, worker2IP6.AsSlice())
	flowtable.FieldTunID.SetUint64(&k6, 6)
	both = k6
	flowtable.FieldTunDst.SetUint64(&both, 0x0a4f01ca)
	flowtable.FieldTunID.SetUint64(&both, 7)
	keys := []*flowtable.Key{&k4, &k6, &none, &k6, &both}
	frames := [][]byte{inner, inner, inner, inner, inner}
	if n, err := p1.WriteTunnel(frames, keys); err != nil || n != len(frames) {
		t.Fatalf("WriteTunnel = %d, %v", n, err)
	}
	_, mds := readFrames(t, p2, 4, 5*time.Second)
	var v4, v6 int
	for _, md := range mds {
		switch {
		case md.IPv6 && md.Src6 == worker1IP6.As16() && md.Dst6 == worker2IP6.As16() && md.VNI == 6:
			v6++
		case !md.IPv6 && md.Src == 0x0a4f01c9 && md.Dst == 0x0a4f01ca && (md.VNI == 0 || md.VNI == 7):
			v4++
		default:
			t.Errorf("unexpected metadata %+v", md)
		}
	}
	if v4 != 2 || v6 != 2 {
		t.Errorf("received %d IPv4 and %d IPv6 datagrams, want 2 and 2", v4, v6)
	}
	if s := p1.TunnelStats(); s.TxNoDst != 1 || s.TxPackets != 4 {
		t.Errorf("sender stats %+v, want 4 sent and 1 without destination", s)
	}
}

// TestGeneveIPv6ZeroChecksum: a Geneve datagram over IPv6 without a UDP
// checksum (0, which RFC 6935 allows for tunnels and OVS's userspace
// receive accepts) is received; the kernel alone would drop it.
func TestGeneveIPv6ZeroChecksum(t *testing.T) {
	u := newUnderlay6(t)
	p2 := openIn(t, u.ns2, Config{ReadTimeout: 50 * time.Millisecond})
	inner := tunneltest.SeedFrame(t)
	var k flowtable.Key
	flowtable.FieldTunID.SetUint64(&k, 9)
	payload, _, err := tunnel.Encap(nil, inner, &k, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	var md tunnel.Metadata
	dump, _ := tshark(t, u.ns2, u.veth.Peer, "ip6 and udp port 6081", func() {
		err := u.ns1.Do(func() error {
			fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			// UDP_NO_CHECK6_TX: the kernel sends a zero checksum.
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_NO_CHECK6_TX, 1); err != nil {
				return err
			}
			return unix.Sendto(fd, payload, 0, &unix.SockaddrInet6{Addr: worker2IP6.As16(), Port: 6081})
		})
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		got, md = readOne(t, p2, 5*time.Second)
	})
	if !strings.Contains(dump, "Checksum: 0x0000") {
		t.Errorf("the datagram had a UDP checksum:\n%s", dump)
	}
	if !bytes.Equal(got, inner) || !md.IPv6 || md.VNI != 9 || md.Src6 != worker1IP6.As16() || md.Dst6 != worker2IP6.As16() {
		t.Errorf("received %d bytes, metadata %+v", len(got), md)
	}
}
