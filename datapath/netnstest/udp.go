package netnstest

import (
	"net"
	"net/netip"
	"time"
)

// UDPPingPong sends n datagrams of size bytes from src (in ns a) to dst
// (in ns b), each echoed by b before the next is sent, and returns how
// many echoes a got. The echoes make the flow a connection established in
// both directions for conntrack; lockstep keeps the count exact (no
// socket buffer overflows).
func UDPPingPong(t T, a, b *NS, src, dst netip.AddrPort, n, size int) int {
	t.Helper()
	return UDPPingPongVia(t, a, b, src, dst, dst, n, size)
}

// UDPPingPongVia is UDPPingPong to the address to (a Service's, which the
// switch translates) with b listening on listen; only echoes coming back
// from to count.
func UDPPingPongVia(t T, a, b *NS, src, to, listen netip.AddrPort, n, size int) int {
	t.Helper()
	var srv, cli *net.UDPConn
	if err := b.Do(func() (err error) { srv, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(listen)); return err }); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		buf := make([]byte, 65536)
		for {
			m, from, err := srv.ReadFromUDP(buf)
			if err != nil {
				return
			}
			srv.WriteToUDP(buf[:m], from)
		}
	}()
	if err := a.Do(func() (err error) { cli, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(src)); return err }); err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	out, buf := make([]byte, size), make([]byte, 65536)
	got := 0
	for i := 0; i < n; i++ {
		if _, err := cli.WriteToUDP(out, net.UDPAddrFromAddrPort(to)); err != nil {
			t.Fatal(err)
		}
		cli.SetReadDeadline(time.Now().Add(time.Second))
		if m, from, err := cli.ReadFromUDPAddrPort(buf); err == nil && m == size && from == to {
			got++
		}
	}
	return got
}
