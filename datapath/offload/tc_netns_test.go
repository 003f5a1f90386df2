package offload

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
)

// seqCounter counts the datagrams of a flood by their sequence number.
type seqCounter struct {
	mu sync.Mutex
	n  []int
}

func (c *seqCounter) add(seq uint32) {
	c.mu.Lock()
	if int(seq) < len(c.n) {
		c.n[seq]++
	}
	c.mu.Unlock()
}

// tapSeqs reads the frames the raw socket s gets until stop, counting
// the UDP datagrams to dport by the sequence number in their payload.
// Upcalls (an untagged frame behind the upcall header) count as the
// frame they carry.
func tapSeqs(s *netnstest.RawSocket, dport uint16, c *seqCounter, stop *atomic.Bool, done *sync.WaitGroup) {
	defer done.Done()
	buf := make([]byte, 65536)
	for !stop.Load() {
		m, err := s.Recv(buf, 50*time.Millisecond)
		if err != nil {
			continue
		}
		f := buf[:m]
		if u, err := port.DecodeUpcall(f); err == nil && !u.Tagged {
			f = f[u.HeaderLen:] // the MACs are not read
		}
		if len(f) >= 14+20+8+4 && binary.BigEndian.Uint16(f[12:]) == 0x0800 && f[23] == unix.IPPROTO_UDP &&
			binary.BigEndian.Uint16(f[36:]) == dport {
			c.add(binary.BigEndian.Uint32(f[42:]))
		}
	}
}

// udpSeqs is tapSeqs for a UDP socket.
func udpSeqs(u *net.UDPConn, c *seqCounter, stop *atomic.Bool, done *sync.WaitGroup) {
	defer done.Done()
	buf := make([]byte, 2048)
	for !stop.Load() {
		u.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		m, _, err := u.ReadFromUDP(buf)
		if err == nil && m >= 4 {
			c.add(binary.BigEndian.Uint32(buf))
		}
	}
}

// bigBuffers lets a socket queue a whole flood (root: SO_RCVBUFFORCE).
func bigBuffers(t *testing.T, fd int) {
	t.Helper()
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20); err != nil {
		t.Fatal(err)
	}
}

// tcPath loads the program, attaches the tc path to A's port and opens
// the port's socket: a raw socket bound to the upcall ethertype, as a
// port's. Everything goes in t.Cleanup.
func (p *pair) tcPath(t *testing.T) (*Kernel, *netnstest.RawSocket) {
	k, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	var l io.Closer
	if err := p.sw.Do(func() (err error) { l, err = k.AttachTC(p.ifA, "a"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return k, netnstest.NewRawSocketProto(t, p.sw, p.va.Host, port.UpcallEthertype)
}

// floodSockets opens B's receiving socket, which can queue a whole
// flood, and A's sending one.
func (p *pair) floodSockets(t *testing.T) (srv, cli *net.UDPConn) {
	srv = udpListen(t, p.b, "10.77.0.2:9999")
	cli = udpListen(t, p.a, "10.77.0.1:4000")
	rc, err := srv.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	rc.Control(func(fd uintptr) { bigBuffers(t, int(fd)) })
	return srv, cli
}

// TestTCPathOnce: on the tc path every frame is handled exactly once. A
// UDP flood from A crosses the ingress port while its entry is installed
// and deleted again and again; each datagram must reach exactly one of B
// (forwarded by the tc program) and the port's socket (bound to the
// upcall ethertype, as a port's: it gets what the program sends up). A
// tap (an ETH_P_ALL socket) on the same port sees every frame: it runs
// before tc ingress, which is why the port's socket is not one. With no
// socket (no daemon) the tc program forwards as before.
func TestTCPathOnce(t *testing.T) {
	p := newPair(t)
	k, port := p.tcPath(t)
	plain := netnstest.NewRawSocket(t, p.sw, p.va.Host)
	bigBuffers(t, port.FD())
	bigBuffers(t, plain.FD())
	srv, cli := p.floodSockets(t)

	up0, lost0, err := k.Upcalls()
	if err != nil {
		t.Fatal(err)
	}
	const n = 30000
	atB, atPort, atPlain := &seqCounter{n: make([]int, n)}, &seqCounter{n: make([]int, n)}, &seqCounter{n: make([]int, n)}
	var stop atomic.Bool
	var readers sync.WaitGroup
	readers.Add(3)
	go udpSeqs(srv, atB, &stop, &readers)
	go tapSeqs(port, 9999, atPort, &stop, &readers)
	go tapSeqs(plain, 9999, atPlain, &stop, &readers)

	fk := p.flowKey(4000, 9999)
	act := Action{OutIfindex: uint32(p.ifB), Flags: ActSetEth | ActDecTTL, EthSrc: [6]byte(p.macHB), EthDst: [6]byte(p.macB)}
	// Install and delete the entry as fast as the map takes it while the
	// flood runs: many datagrams are decided next to a change.
	var flooding atomic.Bool
	flooding.Store(true)
	toggled := make(chan int)
	go func() {
		changes := 0
		for flooding.Load() {
			if err := k.Install(fk, act, 1); err != nil {
				t.Error(err)
				break
			}
			time.Sleep(time.Duration(changes%7) * 30 * time.Microsecond)
			if err := k.Delete(fk); err != nil {
				t.Error(err)
				break
			}
			changes += 2
			time.Sleep(time.Duration(changes%5) * 30 * time.Microsecond)
		}
		toggled <- changes
	}()
	sendSeqs(t, cli, n, nil)
	flooding.Store(false)
	changes := <-toggled
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	readers.Wait()

	o := countOnce(t, atB, atPort)
	// The tap sees each datagram as it came, and an upcall's again as
	// the program sent it up (what tcpdump on the port shows too).
	plainOff := 0
	for i := range n {
		if atPlain.n[i] != 1+atPort.n[i] {
			plainOff++
		}
	}
	t.Logf("%d datagrams, %d entry changes: %d forwarded by tc, %d to the port's socket", n, changes, o.fwd, o.passed)
	if o.fwd == 0 || o.passed == 0 {
		t.Errorf("forwarded %d, passed %d: the flood did not cross installs and deletes", o.fwd, o.passed)
	}
	if plainOff != 0 {
		t.Errorf("a tap saw %d datagrams other than once, plus once more when sent up; it sees every frame before tc ingress", plainOff)
	}
	up, lost, err := k.Upcalls()
	if err != nil {
		t.Fatal(err)
	}
	if up-up0 < uint64(o.passed) || lost != lost0 {
		t.Errorf("the program counted %d upcalls and %d lost, want >= %d (the datagrams at the socket) and 0", up-up0, lost-lost0, o.passed)
	}

	// No port socket (no daemon: a pinned restart): the entry forwards.
	port.Close()
	if err := k.Install(fk, act, 1); err != nil {
		t.Fatal(err)
	}
	sendSeqs(t, cli, 50, nil)
	if got := recvCount(srv, 300*time.Millisecond); got != 50 {
		t.Errorf("B received %d of 50 datagrams with no socket on the port, want 50", got)
	}
	if c, _, _ := k.Lookup(fk); c.Packets != 50 {
		t.Errorf("entry counted %d packets, want 50", c.Packets)
	}
}

// sendSeqs sends n datagrams from cli to B's 10.77.0.2:9999, each
// carrying its sequence number, paced so that the veth's backlog does
// not overflow; at(i), if given, runs before datagram i.
func sendSeqs(t *testing.T, cli *net.UDPConn, n int, at func(i int)) {
	t.Helper()
	dst := &net.UDPAddr{IP: net.IPv4(10, 77, 0, 2), Port: 9999}
	payload := make([]byte, 64)
	for i := range n {
		if at != nil {
			at(i)
		}
		binary.BigEndian.PutUint32(payload, uint32(i))
		if _, err := cli.WriteToUDP(payload, dst); err != nil {
			t.Fatal(err)
		}
		if i%64 == 63 {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// onceCounts sorts a flood's datagrams by where they arrived: forwarded
// (B only) or passed (the port's socket only).
type onceCounts struct{ fwd, passed int }

// countOnce counts where each datagram arrived and fails the test for
// any that reached both B and the port's socket, neither, or one twice.
func countOnce(t *testing.T, atB, atPort *seqCounter) onceCounts {
	t.Helper()
	var o onceCounts
	var both, neither, dupB, dupPort int
	for i := range atB.n {
		b, s := atB.n[i], atPort.n[i]
		switch {
		case b > 1:
			dupB++
		case s > 1:
			dupPort++
		case b == 1 && s == 1:
			both++
		case b == 0 && s == 0:
			neither++
		case b == 1:
			o.fwd++
		default:
			o.passed++
		}
	}
	if both != 0 || neither != 0 || dupB != 0 || dupPort != 0 {
		t.Errorf("%d datagrams at both B and the port's socket, %d at neither, %d twice at B, %d twice at the socket; want each exactly once",
			both, neither, dupB, dupPort)
	}
	return o
}

// TestTCPath: which system ports go on the tc path. Ports with offload
// metadata always; veths too where the kernel has TCX (this one does:
// 6.6 or later is required to run these tests' TCX links); others, here
// the loopback, keep XDP.
func TestTCPath(t *testing.T) {
	p := newPair(t)
	m, err := NewManager(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.k.HaveTCX() {
		t.Fatal("HaveTCX: false on a kernel that attaches TCX links (TestTCPathOnce)")
	}
	err = p.sw.Do(func() error {
		for _, c := range []struct {
			name string
			vnet bool
			want bool
		}{{p.va.Host, false, true}, {p.va.Host, true, true}, {"lo", false, false}, {"lo", true, true}, {"nonexistent0", false, false}} {
			if got := m.TCPath(c.name, c.vnet); got != c.want {
				t.Errorf("TCPath(%q, vnet=%v) = %v, want %v", c.name, c.vnet, got, c.want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPinnedXDPToTCOnce: an older govs left an XDP link pinned on a veth
// port that this one puts on the tc path. The new process adopts the
// pins (held: no keepalives), opens the port's socket (bound to the
// upcall ethertype) and attaches: the pinned XDP link gives way to a TCX
// link. A flood across the change reaches B exactly once per datagram;
// had the XDP link gone before the TCX link came, frames would have gone
// to the host's stack in between, reaching neither.
func TestPinnedXDPToTCOnce(t *testing.T) {
	netnstest.RequireRoot(t)
	p := newPair(t)
	dir := PinDir(filepath.Join(netnstest.MountBPFFS(t), "govs"), "/run/govs-test", "br0")
	old, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var l io.Closer
	if err := p.sw.Do(func() (err error) { l, err = old.Attach(p.ifA, p.va.Host); return err }); err != nil {
		t.Fatal(err)
	}
	fk := p.flowKey(4000, 9999)
	if err := old.Install(fk, Action{OutIfindex: uint32(p.ifB), Flags: ActSetEth, EthSrc: [6]byte(p.macHB), EthDst: [6]byte(p.macB)}, old.gen); err != nil {
		t.Fatal(err)
	}
	old.Retain()
	if err := old.Hold(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	old.Close()

	k, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	if !k.Adopted() {
		t.Fatal("the pinned maps were not adopted")
	}
	if err := k.Hold(); err != nil {
		t.Fatal(err)
	}
	srv, cli := p.floodSockets(t)
	const n = 20000
	atB, atPort := &seqCounter{n: make([]int, n)}, &seqCounter{n: make([]int, n)}
	var stop atomic.Bool
	var readers sync.WaitGroup
	readers.Add(1)
	go udpSeqs(srv, atB, &stop, &readers)
	// The daemon's order: the socket, then the link.
	attached := make(chan error, 1)
	sendSeqs(t, cli, n, func(i int) {
		if i != n/4 {
			return
		}
		port := netnstest.NewRawSocketProto(t, p.sw, p.va.Host, port.UpcallEthertype)
		bigBuffers(t, port.FD())
		readers.Add(1)
		go tapSeqs(port, 9999, atPort, &stop, &readers)
		go func() {
			attached <- p.sw.Do(func() (err error) {
				l, err = k.AttachTC(p.ifA, p.va.Host)
				return err
			})
		}()
	})
	if err := <-attached; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	readers.Wait()

	o := countOnce(t, atB, atPort)
	t.Logf("%d datagrams: %d forwarded, %d to the port's socket", n, o.fwd, o.passed)
	if o.fwd != n {
		t.Errorf("%d of %d datagrams forwarded: the held entry forwards every one", o.fwd, n)
	}
	pinned, err := link.LoadPinnedLink(filepath.Join(dir, "links", p.va.Host), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pinned.Close()
	if !linkOn(pinned, p.ifA, true) {
		t.Errorf("the pinned link is not the TCX link on %s", p.va.Host)
	}
	if out := p.sw.MustExec(t, "ip", "link", "show", "dev", p.va.Host); strings.Contains(out, "xdp") {
		t.Errorf("the old XDP link is still attached:\n%s", out)
	}
}

// csumAdd adds 16-bit big-endian words of b to sum.
func csumAdd(sum uint32, b []byte) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	return sum
}

func csumFold(sum uint32) uint16 {
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

// TestTCPathNATChecksums: the tc program's NAT (source and destination
// address and port) leaves the IPv4 and UDP checksums right, with the
// sender's checksum offload on (CHECKSUM_PARTIAL: the UDP check holds the
// pseudo-header sum, which must be updated for the addresses and not for
// the ports) and off (full checksums). A raw socket in B's namespace
// reads each forwarded frame with its checksum status (PACKET_AUXDATA)
// and checks it as the device or the stack would.
func TestTCPathNATChecksums(t *testing.T) {
	for _, offloads := range []bool{true, false} {
		t.Run(map[bool]string{true: "offloads-on", false: "offloads-off"}[offloads], func(t *testing.T) {
			p := newPairWith(t, offloads)
			p.a.MustExec(t, "ip", "neigh", "replace", "10.77.0.100", "lladdr", p.macHA.String(), "dev", p.va.Peer, "nud", "permanent")
			k, _ := p.tcPath(t)
			capture := netnstest.NewRawSocket(t, p.b, p.vb.Peer)
			if err := unix.SetsockoptInt(capture.FD(), unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
				t.Fatal(err)
			}
			srv := udpListen(t, p.b, "10.77.0.2:9999")
			cli := udpListen(t, p.a, "10.77.0.1:4000")

			fk := FlowKey{Ifindex: uint32(p.ifA), EthSrc: [6]byte(p.macA), EthDst: [6]byte(p.macHA),
				Src: p.ipA, Dst: netip.MustParseAddr("10.77.0.100"), Proto: unix.IPPROTO_UDP, SrcPort: 4000, DstPort: 80, TTL: 64}
			act := Action{OutIfindex: uint32(p.ifB), Flags: ActSetEth | ActDecTTL | ActNAT, EthSrc: [6]byte(p.macHB), EthDst: [6]byte(p.macB),
				NatSrc: netip.MustParseAddr("10.77.0.9"), NatDst: p.ipB, NatSrcPort: 4444, NatDstPort: 9999}
			if err := k.Install(fk, act, 1); err != nil {
				t.Fatal(err)
			}
			const n = 20
			for i := range n {
				if _, err := cli.WriteToUDP(make([]byte, 100+i), &net.UDPAddr{IP: net.IPv4(10, 77, 0, 100), Port: 80}); err != nil {
					t.Fatal(err)
				}
			}
			if got := recvCount(srv, 300*time.Millisecond); got != n {
				t.Errorf("B received %d of %d translated datagrams", got, n)
			}
			buf, oob := make([]byte, 2048), make([]byte, 256)
			var partial, full int
			for {
				fds := []unix.PollFd{{Fd: int32(capture.FD()), Events: unix.POLLIN}}
				if n, err := unix.Poll(fds, 100); err != nil || n == 0 {
					break
				}
				m, oobn, _, _, err := unix.Recvmsg(capture.FD(), buf, oob, unix.MSG_DONTWAIT)
				if err != nil {
					continue
				}
				f := buf[:m]
				if m < 42 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[23] != unix.IPPROTO_UDP || binary.BigEndian.Uint16(f[36:]) != 9999 {
					continue
				}
				var status uint32
				cms, _ := unix.ParseSocketControlMessage(oob[:oobn])
				for _, c := range cms {
					if c.Header.Level == unix.SOL_PACKET && c.Header.Type == unix.PACKET_AUXDATA && len(c.Data) >= 4 {
						status = binary.NativeEndian.Uint32(c.Data)
					}
				}
				ip, udp := f[14:34], f[34:]
				if csumFold(csumAdd(0, ip)) != 0xffff {
					t.Errorf("IPv4 header checksum wrong after NAT: % x", ip)
				}
				if !bytes.Equal(ip[12:20], []byte{10, 77, 0, 9, 10, 77, 0, 2}) || binary.BigEndian.Uint16(udp) != 4444 || ip[8] != 63 {
					t.Errorf("frame not translated: % x", f[14:38])
				}
				ulen := binary.BigEndian.Uint16(udp[4:])
				pseudo := csumAdd(0, ip[12:20]) + unix.IPPROTO_UDP + uint32(ulen)
				if status&unix.TP_STATUS_CSUMNOTREADY != 0 {
					partial++
					// The check holds the folded pseudo-header sum.
					if got, want := binary.BigEndian.Uint16(udp[6:]), csumFold(pseudo); got != want {
						t.Errorf("partial UDP checksum %#04x, want the pseudo-header sum %#04x", got, want)
					}
				} else {
					full++
					if csumFold(csumAdd(pseudo, udp[:ulen])) != 0xffff {
						t.Errorf("UDP checksum wrong after NAT: % x", udp[:8])
					}
				}
			}
			if partial+full != n {
				t.Errorf("captured %d translated frames (%d partial), want %d", partial+full, partial, n)
			}
			if offloads && partial == 0 {
				t.Errorf("no frame with a partial checksum: the sender's offloads are not exercised")
			}
		})
	}
}
