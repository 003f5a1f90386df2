package geneve

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/port/porttest"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/tunnel"
	"github.com/govs-project/govs/tunnel/tunneltest"
	"golang.org/x/sys/unix"
)

// The underlay of seed 001: worker 1 (10.79.1.201) and worker 2
// (10.79.1.202), here only inside the test's own namespaces.
var (
	worker1IP  = netip.MustParseAddr("10.79.1.201")
	worker2IP  = netip.MustParseAddr("10.79.1.202")
	worker1MAC = net.HardwareAddr{0x00, 0x50, 0x56, 0x8f, 0x4e, 0x82}
	worker2MAC = net.HardwareAddr{0x00, 0x50, 0x56, 0x8f, 0x1c, 0xf6}
)

// underlay is two namespaces joined by a veth pair, like two nodes.
type underlay struct {
	ns1, ns2 *netnstest.NS
	veth     *netnstest.Veth // Host end in ns1, Peer end in ns2
}

func newUnderlay(t *testing.T, mtu int) *underlay {
	t.Helper()
	return newUnderlayWith(t, netnstest.VethOptions{HostAddr: "10.79.1.201/24", PeerAddr: "10.79.1.202/24", MTU: mtu})
}

// newUnderlayWith is newUnderlay with the veth options (the workers' MACs
// are set here).
func newUnderlayWith(t *testing.T, opts netnstest.VethOptions) *underlay {
	t.Helper()
	u := &underlay{ns1: netnstest.NewNS(t), ns2: netnstest.NewNS(t)}
	opts.HostMAC, opts.PeerMAC = worker1MAC, worker2MAC
	u.veth = netnstest.NewVeth(t, u.ns1, u.ns2, opts)
	return u
}

// openIn opens a tunnel port inside ns and closes it in t.Cleanup.
func openIn(t *testing.T, ns *netnstest.NS, cfg Config) *Port {
	t.Helper()
	return porttest.OpenIn(t, ns, func() (*Port, error) { return Open(cfg) })
}

// readFrames reads until want frames arrived (copies) or the deadline
// passes.
func readFrames(t *testing.T, p *Port, want int, deadline time.Duration) ([][]byte, []tunnel.Metadata) {
	t.Helper()
	b := port.NewBatch(8)
	md := make([]tunnel.Metadata, 8)
	var frames [][]byte
	var mds []tunnel.Metadata
	end := time.Now().Add(deadline)
	for len(frames) < want && time.Now().Before(end) {
		n, err := p.ReadTunnelBatch(b, md)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		for i := 0; i < n; i++ {
			frames = append(frames, append([]byte(nil), b.Frames[i]...))
			mds = append(mds, md[i])
		}
	}
	if len(frames) != want {
		t.Fatalf("got %d frames within %v, want %d (stats %+v)", len(frames), deadline, want, p.TunnelStats())
	}
	return frames, mds
}

// readOne reads exactly one frame.
func readOne(t *testing.T, p *Port, deadline time.Duration) ([]byte, tunnel.Metadata) {
	t.Helper()
	f, md := readFrames(t, p, 1, deadline)
	return f[0], md[0]
}

// expectNothing reads for a while and fails if a frame arrives.
func expectNothing(t *testing.T, p *Port, d time.Duration) {
	t.Helper()
	b := port.NewBatch(8)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		n, err := p.ReadBatch(b)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if n != 0 {
			t.Fatalf("got %d unexpected frames", n)
		}
	}
}

// tshark captures one packet matching filter on ifname inside ns while
// send is called to produce it, and returns tshark's verbose decode and how
// many times send ran. tshark reports its capture as started a little
// before the kernel filter is attached, so send is repeated every second
// until tshark has its packet.
func tshark(t *testing.T, ns *netnstest.NS, ifname, filter string, send func(), extra ...string) (string, int) {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Fatalf("this test needs tshark (apt-get install tshark): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := ns.Command(append([]string{"tshark", "-i", ifname, "-c", "1", "-V", "-l", "-f", filter}, extra...)...)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	// tshark keeps a temporary pcapng; put it where t cleans up even when
	// tshark is killed.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	started := make(chan struct{})
	cmd.Stderr = &signalWriter{buf: &errOut, marker: "Capture started", signal: started}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("tshark ended before capturing: %v\n%s", err, errOut.String())
	case <-time.After(20 * time.Second):
		cancel()
		<-done
		t.Fatal("tshark did not start capturing within 20s")
	}
	for sends := 1; ; sends++ {
		send()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("tshark: %v\n%s", err, errOut.String())
			}
			return out.String(), sends
		case <-time.After(time.Second):
			if sends == 10 {
				cancel()
				<-done
				t.Fatalf("tshark saw none of %d packets\n%s", sends, errOut.String())
			}
		}
	}
}

// checkDecode checks that tshark's decode has every line of want (case
// aside: Wireshark versions differ in capitalisation, "bridging").
func checkDecode(t *testing.T, dump string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(strings.ToLower(dump), strings.ToLower(w)) {
			t.Errorf("tshark output lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("tshark:\n%s", dump)
	}
}

// signalWriter collects a command's stderr and closes signal once marker
// appears in it.
type signalWriter struct {
	mu     sync.Mutex
	buf    *bytes.Buffer
	marker string
	signal chan struct{}
	seen   bool
}

func (w *signalWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if !w.seen && strings.Contains(w.buf.String(), w.marker) {
		w.seen = true
		close(w.signal)
	}
	return len(b), nil
}

// TestGeneveBetweenNodes is seed 001 §9.10 and §9.11: worker 1 sends the
// SYN towards 10.222.2.34 through its tunnel with tun_dst=10.79.1.202 and
// Antrea's tun_metadata0 mark; worker 2 receives it with the metadata in the
// flow key, and tshark on the underlay decodes Geneve, VNI 0, TEB.
func TestGeneveBetweenNodes(t *testing.T) {
	u := newUnderlay(t, 1500)
	tlv := tunneltest.TLVMap(t, tunneltest.AntreaTLV)
	p1 := openIn(t, u.ns1, Config{Name: "antrea-tun0", LocalIP: worker1IP, TLV: tlv, ReadTimeout: 50 * time.Millisecond})
	p2 := openIn(t, u.ns2, Config{Name: "antrea-tun0", LocalIP: worker2IP, TLV: tlv, ReadTimeout: 50 * time.Millisecond})
	if p1.MTU() != 1450 || p1.UnderlayMTU() != 1500 {
		t.Errorf("MTU %d underlay %d, want 1450 and 1500 (from the veth)", p1.MTU(), p1.UnderlayMTU())
	}

	inner := tunneltest.SeedFrame(t)
	var k flowtable.Key
	// Table 70: load:0xa4f01ca->NXM_NX_TUN_IPV4_DST[]
	flowtable.FieldTunDst.SetUint64(&k, 0x0a4f01ca)
	mark := []byte{0x10, 0, 0, 0} // tun_metadata0[28..31] = 1
	copy(tunneltest.TunMetadata(t, tunneltest.AntreaTLV, 0, &k), mark)

	var got []byte
	var md tunnel.Metadata
	dump, sends := tshark(t, u.ns2, u.veth.Peer, "udp port 6081", func() {
		n, err := p1.WriteTunnel([][]byte{inner}, []*flowtable.Key{&k})
		if err != nil || n != 1 {
			t.Fatalf("WriteTunnel = %d, %v", n, err)
		}
		got, md = readOne(t, p2, 5*time.Second)
	})
	if !bytes.Equal(got, inner) {
		t.Errorf("inner frame\n got % x\nwant % x", got, inner)
	}
	if md.Src != 0x0a4f01c9 || md.Dst != 0x0a4f01ca || md.DstPort != 6081 || md.SrcPort < tunnel.SourcePortMin || md.SrcPort >= tunnel.SourcePortMax {
		t.Errorf("metadata %+v", md)
	}
	if md.SrcPort != tunnel.SourcePort(inner) {
		t.Errorf("UDP source port %d, want the flow hash port %d", md.SrcPort, tunnel.SourcePort(inner))
	}
	// Worker 2's table 0 then does move:NXM_NX_TUN_METADATA0[28..31]->NXM_NX_REG9[28..31].
	var k2 flowtable.Key
	if err := p2.FillKey(&md, &k2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tunneltest.TunMetadata(t, tunneltest.AntreaTLV, 0, &k2), mark) || k2.TunSrc() != 0x0a4f01c9 || k2.TunDst() != 0x0a4f01ca || k2.TunID() != 0 {
		t.Errorf("key: tun_metadata0 % x tun_src %#x tun_dst %#x tun_id %d", tunneltest.TunMetadata(t, tunneltest.AntreaTLV, 0, &k2), k2.TunSrc(), k2.TunDst(), k2.TunID())
	}

	checkDecode(t, dump, []string{
		"Src: 10.79.1.201, Dst: 10.79.1.202",
		"Destination Port: 6081",
		"Generic Network Virtualization Encapsulation",
		"Version: 0",
		"Protocol Type: Transparent Ethernet Bridging (0x6558)",
		"Virtual Network Identifier (VNI): 0x000000",
		"Critical Options Present: True",
		"Class: VMware (0x0104)",
		"Type: 0x80 (Critical)",
		"Option Data: 10000000",
		"Src: 4e:99:08:c1:53:be",
		"Dst: aa:bb:cc:dd:ee:ff",
		"Src: 10.222.1.48, Dst: 10.222.2.34",
		"Src Port: 46490, Dst Port: 80",
	})

	s1, s2 := p1.TunnelStats(), p2.TunnelStats()
	if s1.TxPackets != uint64(sends) || s1.TxBytes != uint64(sends*len(inner)) || s1.TxDropped != 0 {
		t.Errorf("sender stats %+v", s1)
	}
	if s2.RxPackets != uint64(sends) || s2.RxBytes != uint64(sends*len(inner)) || s2.RxErrors != 0 {
		t.Errorf("receiver stats %+v", s2)
	}
}

// TestGeneveChecksum checks csum=true: tshark validates the outer UDP
// checksum we compute, and the receiving kernel accepts it; without
// local_ip (OVN's tunnels) the checksum covers the source address the
// kernel's route gives.
func TestGeneveChecksum(t *testing.T) {
	t.Run("local_ip", func(t *testing.T) { testGeneveChecksum(t, worker1IP) })
	t.Run("route source", func(t *testing.T) { testGeneveChecksum(t, netip.Addr{}) })
}

func testGeneveChecksum(t *testing.T, local netip.Addr) {
	u := newUnderlay(t, 1500)
	p1 := openIn(t, u.ns1, Config{LocalIP: local, RemoteIP: worker2IP, Csum: true})
	p2 := openIn(t, u.ns2, Config{LocalIP: worker2IP, ReadTimeout: 50 * time.Millisecond})
	inner := tunneltest.SeedFrame(t)
	dump, _ := tshark(t, u.ns2, u.veth.Peer, "udp port 6081", func() {
		// WriteBatch: the fixed remote_ip, VNI 0, no options.
		if n, err := p1.WriteBatch([][]byte{inner}); err != nil || n != 1 {
			t.Fatalf("WriteBatch = %d, %v", n, err)
		}
		got, _ := readOne(t, p2, 5*time.Second)
		if !bytes.Equal(got, inner) {
			t.Errorf("inner frame differs")
		}
	}, "-o", "udp.check_checksum:TRUE")
	if !strings.Contains(dump, "[Checksum Status: Good]") || !strings.Contains(dump, "Generic Network Virtualization Encapsulation") {
		t.Errorf("tshark does not see a good UDP checksum:\n%s", dump)
	}
}

// TestTunnelDrops checks the counted drops: frames too big for the
// underlay, frames without tun_dst, broken Geneve headers and unknown
// critical options on receive.
func TestTunnelDrops(t *testing.T) {
	u := newUnderlay(t, 1400)
	tlv := tunneltest.TLVMap(t, tunneltest.AntreaTLV)
	p1 := openIn(t, u.ns1, Config{LocalIP: worker1IP, TLV: tlv, ReadTimeout: 50 * time.Millisecond})
	p2 := openIn(t, u.ns2, Config{LocalIP: worker2IP, TLV: tlv, ReadTimeout: 50 * time.Millisecond})
	if p1.UnderlayMTU() != 1400 {
		t.Fatalf("underlay MTU %d, want 1400 from the veth", p1.UnderlayMTU())
	}

	var k flowtable.Key
	flowtable.FieldTunDst.SetUint64(&k, 0x0a4f01ca)
	var withOpt flowtable.Key
	withOpt = k
	copy(tunneltest.TunMetadata(t, tunneltest.AntreaTLV, 0, &withOpt), []byte{0x10, 0, 0, 0})
	var noDst flowtable.Key

	// 1400 - 36 = 1364 bytes of inner frame fit without options; with the
	// 8-byte Antrea option 1356.
	frame := func(n int) []byte {
		f := append(tunneltest.SeedFrame(t), make([]byte, n)...)
		return f[:n]
	}
	frames := [][]byte{frame(1364), frame(1365), frame(1356), frame(1357), frame(100), frame(13)}
	keys := []*flowtable.Key{&k, &k, &withOpt, &withOpt, &noDst, &k}
	if n, err := p1.WriteTunnel(frames, keys); err != nil || n != len(frames) {
		t.Fatalf("WriteTunnel = %d, %v", n, err)
	}
	got2, _ := readFrames(t, p2, 2, 5*time.Second)
	for i, want := range []int{1364, 1356} {
		if len(got2[i]) != want {
			t.Errorf("received a %d-byte frame, want %d", len(got2[i]), want)
		}
	}
	s := p1.TunnelStats()
	if s.TxPackets != 2 || s.TxDropped != 4 || s.TxMTUDrops != 2 || s.TxNoDst != 1 {
		t.Errorf("sender stats %+v, want 2 sent, 4 dropped (2 MTU, 1 no tun_dst, 1 runt)", s)
	}

	// Broken datagrams sent to worker 2's Geneve port from a plain socket.
	inner := tunneltest.SeedFrame(t)
	bad := [][]byte{
		{0, 0, 0x65}, // truncated header
		append([]byte{0x40, 0, 0x65, 0x58, 0, 0, 0, 0}, inner...),                                                   // version 1
		append([]byte{0, 0, 0x08, 0x00, 0, 0, 0, 0}, inner...),                                                      // not Ethernet
		append([]byte{1, 0x40, 0x65, 0x58, 0, 0, 0, 0, 0x01, 0x05, 0x80, 0}, inner...),                              // unknown critical option
		append([]byte{2, 0x40, 0x65, 0x58, 0, 0, 0, 0, 0x01, 0x04, 0x80, 1, 0, 0, 0, 1, 0, 0, 0, 0}, inner...)[:12], // options truncated
	}
	sendUDP(t, u.ns1, bad...)
	// A good one after them proves the bad ones were read and dropped.
	good := append([]byte{2, 0x40, 0x65, 0x58, 0, 0, 0, 0, 0x01, 0x04, 0x80, 1, 0x20, 0, 0, 0}, inner...)
	sendUDP(t, u.ns1, good)
	got, md := readOne(t, p2, 5*time.Second)
	if !bytes.Equal(got, inner) {
		t.Errorf("good datagram: inner differs")
	}
	var k2 flowtable.Key
	if err := p2.FillKey(&md, &k2); err != nil || tunneltest.TunMetadata(t, tunneltest.AntreaTLV, 0, &k2)[0] != 0x20 {
		t.Errorf("good datagram: %v, tun_metadata0 % x", err, tunneltest.TunMetadata(t, tunneltest.AntreaTLV, 0, &k2))
	}
	s2 := p2.TunnelStats()
	if s2.RxHeaderErrors != uint64(len(bad)) || s2.RxErrors != uint64(len(bad)) {
		t.Errorf("receiver stats %+v, want %d header errors", s2, len(bad))
	}
	// The received frames so far: two from p1 and the good one.
	if s2.RxPackets != 3 {
		t.Errorf("receiver got %d packets, want 3", s2.RxPackets)
	}

	// Without a TLV map the Antrea option (type 0x80) is an unknown
	// critical option: the packet is dropped (RFC 8926 §3.5.1).
	if err := p2.SetTLVMap(nil); err != nil {
		t.Fatal(err)
	}
	sendUDP(t, u.ns1, good)
	expectNothing(t, p2, 300*time.Millisecond)
	if got := p2.TunnelStats().RxHeaderErrors; got != uint64(len(bad))+1 {
		t.Errorf("after removing the TLV map: %d header errors, want %d", got, len(bad)+1)
	}
}

// sendUDP sends datagrams from ns to worker 2's Geneve port.
func sendUDP(t *testing.T, ns *netnstest.NS, datagrams ...[]byte) {
	t.Helper()
	err := ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for _, d := range datagrams {
			if err := unix.Sendto(fd, d, 0, &unix.SockaddrInet4{Addr: worker2IP.As4(), Port: 6081}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("send UDP: %v", err)
	}
}

func TestCloseWakesReader(t *testing.T) {
	u := newUnderlay(t, 1500)
	var p *Port
	if err := u.ns1.Do(func() error {
		var err error
		p, err = Open(Config{LocalIP: worker1IP})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	porttest.CloseWakesReader(t, p, tunneltest.SeedFrame(t))
}

func TestOpenErrors(t *testing.T) {
	ns := netnstest.NewNS(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"bad remote_ip", Config{RemoteIP: netip.IPv4Unspecified()}, "remote_ip"},
		{"multicast IPv6 remote_ip", Config{RemoteIP: netip.MustParseAddr("ff02::1")}, "want a unicast IPv4 or IPv6 address"},
		{"families differ", Config{LocalIP: worker1IP, RemoteIP: worker2IP6}, "not the same address family"},
		{"local_ip=flow with a fixed remote_ip", Config{LocalFlow: true, RemoteIP: worker2IP}, "local_ip=flow needs remote_ip=flow"},
		{"tiny MTU", Config{UnderlayMTU: 40}, "cannot carry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ns.Do(func() error {
				p, err := Open(tc.cfg)
				if err == nil {
					p.Close()
				}
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open = %v, want an error with %q", err, tc.want)
			}
		})
	}
	// Two ports with the same match on one socket: refused, as OVS
	// refuses a tunnel "with same config as port" another. A port with a
	// local_ip, one with local_ip=flow and one on an address not on
	// this host (OVS takes it too) share the socket of one without.
	if err := ns.Do(func() error {
		p, err := Open(Config{})
		if err != nil {
			return err
		}
		defer p.Close()
		if q, err := Open(Config{Name: "again"}); err == nil || !strings.Contains(err.Error(), "same config as port genev_sys_6081 (remote_ip=flow in_key=flow)") {
			if q != nil {
				q.Close()
			}
			return fmt.Errorf("second Open: %v, want a same-config error", err)
		}
		for _, c := range []Config{{LocalIP: netip.MustParseAddr("127.0.0.1")}, {LocalFlow: true}, {LocalIP: worker1IP}, {LocalIP: netip.MustParseAddr("fd00::1")}} {
			q, err := Open(c)
			if err != nil {
				return fmt.Errorf("Open %s next to a port without local_ip: %w", q.match, err)
			}
			defer q.Close()
			if q.rx != p.rx {
				return fmt.Errorf("%s has a socket of its own", q.match)
			}
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// TestSocketDrops: with a small socket buffer (the kernel's default
// size), a burst nobody reads overflows it and RxDropped counts exactly
// what the kernel dropped.
func TestSocketDrops(t *testing.T) {
	u := newUnderlay(t, 1500)
	p2 := openIn(t, u.ns2, Config{LocalIP: worker2IP, ReadTimeout: 50 * time.Millisecond, SocketBuffer: 208 << 10})
	const sent = 2000
	sendBurst(t, u.ns1, sent)
	got := 0
	b := port.NewBatch(8)
	md := make([]tunnel.Metadata, 8)
	// On a loaded machine the kernel may deliver (and drop) the datagrams
	// well after sendUDP returned: read until the port's drop count has
	// caught up with the kernel's after a quiet spell, or the deadline.
	var kernel uint64
	for deadline := time.Now().Add(30 * time.Second); ; {
		for idle := 0; idle < 3; {
			n, err := p2.ReadTunnelBatch(b, md)
			if err != nil {
				t.Fatal(err)
			}
			if got += n; n == 0 {
				idle++
			}
		}
		kernel = socketDrops(t, u.ns2)
		if kernel != 0 && p2.TunnelStats().RxDropped == kernel || time.Now().After(deadline) {
			break
		}
	}
	s := p2.TunnelStats()
	t.Logf("sent %d, received %d, socket dropped %d (kernel %d)", sent, got, s.RxDropped, kernel)
	if kernel == 0 {
		t.Fatal("the socket dropped nothing: the test did not overflow it")
	}
	if s.RxDropped != kernel || s.RxPackets != uint64(got) || uint64(got)+kernel > sent {
		t.Errorf("RxDropped %d, RxPackets %d; want the kernel's %d and the %d received (of %d sent)", s.RxDropped, s.RxPackets, kernel, got, sent)
	}
}

// sendBurst sends n Geneve datagrams of 1,096 bytes (a seed frame padded)
// from ns to worker 2's Geneve port, 100 at a time.
func sendBurst(t *testing.T, ns *netnstest.NS, n int) {
	t.Helper()
	good := append([]byte{0, 0, 0x65, 0x58, 0, 0, 0, 0}, tunneltest.SeedFrame(t)...)
	good = append(good, make([]byte, 1000)...)
	for sent := 0; sent < n; sent += 100 {
		d := make([][]byte, min(100, n-sent))
		for i := range d {
			d[i] = good
		}
		sendUDP(t, ns, d...)
	}
}

// TestSocketBuffer: the receive socket's default buffer holds a burst of
// 2,000 datagrams nobody reads yet (about 44 TCP super-segments cut into
// MTU-sized datagrams; the kernel's default buffer holds some 90): every
// one is read afterwards, none dropped. Before the buffer was sized, a
// TCP stream from a node whose kernel path encapsulates super-segments
// lost a quarter of its segments here.
func TestSocketBuffer(t *testing.T) {
	u := newUnderlay(t, 1500)
	p2 := openIn(t, u.ns2, Config{LocalIP: worker2IP, ReadTimeout: 50 * time.Millisecond})
	var size int
	if err := u.ns2.Do(func() (err error) {
		size, err = unix.GetsockoptInt(p2.rx.fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if size < 2*DefaultSocketBuffer {
		t.Errorf("SO_RCVBUF is %d, want %d (twice DefaultSocketBuffer)", size, 2*DefaultSocketBuffer)
	}
	const sent = 2000
	sendBurst(t, u.ns1, sent)
	got := 0
	b := port.NewBatch(64)
	md := make([]tunnel.Metadata, 64)
	for idle := 0; idle < 3 && got < sent; {
		n, err := p2.ReadTunnelBatch(b, md)
		if err != nil {
			t.Fatal(err)
		}
		if got += n; n == 0 {
			idle++
		}
	}
	if kernel := socketDrops(t, u.ns2); got != sent || kernel != 0 || p2.TunnelStats().RxDropped != 0 {
		t.Errorf("received %d of %d datagrams; the socket dropped %d (RxDropped %d)", got, sent, kernel, p2.TunnelStats().RxDropped)
	}
}

// socketDrops is the drop count /proc/net/udp6 shows for the Geneve
// socket (UDP 6081) in ns.
func socketDrops(t *testing.T, ns *netnstest.NS) uint64 {
	t.Helper()
	var kernel uint64
	err := ns.Do(func() error {
		data, err := os.ReadFile("/proc/thread-self/net/udp6") // the dual-stack socket
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) > 12 && strings.HasSuffix(f[1], ":17C1") {
				kernel, err = strconv.ParseUint(f[len(f)-1], 10, 64)
				return err
			}
		}
		return errors.New("no socket on UDP 6081 in /proc/net/udp6")
	})
	if err != nil {
		t.Fatal(err)
	}
	return kernel
}

// TestLocalIPFlow: a local_ip=flow port sends an IPv4 packet from its
// flow's tun_src when that is an address of the node, as OVS's native
// tunnels do, from the route's source without one (with a correct UDP
// checksum either way), and drops it, counted, when tun_src is nobody's
// here (OVS: "native tunnel routing failed").
func TestLocalIPFlow(t *testing.T) {
	u := newUnderlay(t, 1500)
	u.ns1.MustExec(t, "ip", "addr", "add", "10.79.1.211/24", "dev", u.veth.Host)
	p1 := openIn(t, u.ns1, Config{LocalFlow: true, Csum: true, OutKey: KeyOption{Fixed: true, VNI: 9}})
	p2 := openIn(t, u.ns2, Config{LocalIP: worker2IP, ReadTimeout: 50 * time.Millisecond})
	inner := tunneltest.SeedFrame(t)
	for _, c := range []struct{ tunSrc, want string }{
		{"10.79.1.211", "10.79.1.211"},
		{"", "10.79.1.201"},
		{"10.79.1.99", ""},
	} {
		var k flowtable.Key
		flowtable.FieldTunDst.SetUint64(&k, uint64(binary.BigEndian.Uint32(worker2IP.AsSlice())))
		if c.tunSrc != "" {
			flowtable.FieldTunSrc.SetUint64(&k, uint64(binary.BigEndian.Uint32(netip.MustParseAddr(c.tunSrc).AsSlice())))
		}
		before := p1.TunnelStats()
		if n, err := p1.WriteTunnel([][]byte{inner}, []*flowtable.Key{&k}); n != 1 || err != nil {
			t.Fatalf("WriteTunnel = %d, %v", n, err)
		}
		if c.want == "" {
			expectNothing(t, p2, 200*time.Millisecond)
			if st := p1.TunnelStats(); st.TxNoSrc != before.TxNoSrc+1 || st.TxDropped != before.TxDropped+1 {
				t.Errorf("tun_src %s: TxNoSrc %d TxDropped %d, want one more each", c.tunSrc, st.TxNoSrc, st.TxDropped)
			}
			continue
		}
		_, md := readOne(t, p2, 5*time.Second)
		if got := netip.AddrFrom4([4]byte{byte(md.Src >> 24), byte(md.Src >> 16), byte(md.Src >> 8), byte(md.Src)}); got.String() != c.want || md.VNI != 9 {
			t.Errorf("tun_src %q: received from %s VNI %d, want from %s VNI 9", c.tunSrc, got, md.VNI, c.want)
		}
	}
}

// TestLocalIPNotHere: a local_ip that is no address of the node opens (as
// in OVS, which takes the configuration), receives nothing and sends
// nothing, counted, until the address appears: the raw socket would
// otherwise send from an address nobody here has, where OVS's route
// lookup fails.
func TestLocalIPNotHere(t *testing.T) {
	u := newUnderlay(t, 1500)
	p1 := openIn(t, u.ns1, Config{LocalIP: netip.MustParseAddr("10.79.1.211"), RemoteIP: worker2IP})
	p2 := openIn(t, u.ns2, Config{LocalIP: worker2IP, ReadTimeout: 50 * time.Millisecond})
	inner := tunneltest.SeedFrame(t)
	if n, err := p1.WriteBatch([][]byte{inner}); n != 1 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	expectNothing(t, p2, 200*time.Millisecond)
	if st := p1.TunnelStats(); st.TxNoSrc != 1 || st.TxDropped != 1 || st.TxPackets != 0 {
		t.Errorf("stats %+v, want one frame dropped for its source", st)
	}
	u.ns1.MustExec(t, "ip", "addr", "add", "10.79.1.211/24", "dev", u.veth.Host)
	time.Sleep(srcTTL + 100*time.Millisecond) // the last answer expires
	if n, err := p1.WriteBatch([][]byte{inner}); n != 1 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	if _, md := readOne(t, p2, 5*time.Second); md.Src != 0x0a4f01d3 {
		t.Errorf("received from %#x, want 10.79.1.211", md.Src)
	}
}
