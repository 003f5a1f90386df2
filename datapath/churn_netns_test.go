package datapath

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/afxdp"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/tap"
)

// churnRounds is the number of add/del/flap rounds TestNetnsPortChurn
// runs across all its modes: GOVS_CHURN_ROUNDS, or 1000 (about a minute
// under -race on two CPUs). Run it longer by hand.
func churnRounds(t *testing.T) int {
	if s := os.Getenv("GOVS_CHURN_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("GOVS_CHURN_ROUNDS=%q: want a positive number", s)
		}
		return n
	}
	return 1000
}

// churnMode is one kind of port setup the churn test runs: port 1 is
// always an AF_PACKET port to the traffic's source; port 2, the one that
// comes and goes most, is of the mode's kind.
type churnMode struct {
	name string
	pmd  bool
	// portThreads: a goroutine per AF_PACKET port rather than the poll
	// thread (Bridge.PortThreads).
	portThreads bool
	// tso: both veths keep their offloads and both AF_PACKET ports
	// exchange virtio_net_hdr (userspace TSO), so 64 KiB super-segments
	// sit in the rings while ports go.
	tso bool
	// kind of port 2: KindSystem, KindAFXDP or KindInternal (a TAP in
	// the switch namespace with the destination address).
	kind string
}

var churnModes = []churnMode{
	{name: "afpacket", kind: KindSystem},
	{name: "afpacket PMD", kind: KindSystem, pmd: true},
	{name: "afpacket port threads", kind: KindSystem, portThreads: true},
	{name: "afxdp", kind: KindAFXDP},
	{name: "tap", kind: KindInternal},
	{name: "tso", kind: KindSystem, tso: true},
}

// TestNetnsPortChurn deletes, re-adds and flaps ports of a bridge under
// ping -f and TCP traffic, for every port kind and loop mode: nothing
// crashes (frames the loop still reads or has queued are never unmapped),
// no descriptor or goroutine leaks, and both ping and TCP work at once
// after the last round.
func TestNetnsPortChurn(t *testing.T) {
	netnstest.RequireRoot(t)
	perMode := max(1, churnRounds(t)/len(churnModes))
	for i, m := range churnModes {
		t.Run(m.name, func(t *testing.T) {
			fdsBefore, gBefore := openFds(t), runtime.NumGoroutine()
			runChurn(t, m, perMode, 10+i)
			// runChurn's cleanups ran: bridge, ports, traffic, namespaces.
			checkNoLeaks(t, fdsBefore, gBefore)
		})
	}
}

// runChurn builds the setup of m in subnet 10.207.<net>.0/24, starts the
// traffic and runs rounds rounds of churn.
func runChurn(t *testing.T, m churnMode, rounds, subnet int) {
	t.Run("rounds", func(t *testing.T) {
		addr := func(host int) string { return fmt.Sprintf("10.207.%d.%d", subnet, host) }
		sw, nsA, nsB := netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
		macB := net.HardwareAddr{0x02, 0, 0x0a, 0xcf, byte(subnet), 2}
		va := netnstest.NewVeth(t, sw, nsA, netnstest.VethOptions{PeerAddr: addr(1) + "/24", KeepOffloads: m.tso})
		b := newBridge(t, "actions=NORMAL", false)
		b.PMD = PMDConfig{Enabled: m.pmd, CPU: -1}
		b.PortThreads = m.portThreads
		cfg := afpacket.Config{VnetHdr: m.tso}
		attachVethConfig(t, b, sw, va, 1, cfg)

		dst, dstNS := addr(2), nsB
		var add2 func()
		switch m.kind {
		case KindInternal:
			dstNS = sw
			name := netnstest.UniqueName("gvt")
			add2 = func() { addTap(t, b, sw, 2, tap.Config{Name: name, MAC: macB, LeaveDown: true}, addr(2)+"/24") }
		case KindAFXDP:
			vb := netnstest.NewVeth(t, sw, nsB, netnstest.VethOptions{PeerAddr: addr(2) + "/24", PeerMAC: macB})
			add2 = func() { attachXDP(t, b, sw, vb, 2, afxdp.Config{}) }
		default:
			vb := netnstest.NewVeth(t, sw, nsB, netnstest.VethOptions{PeerAddr: addr(2) + "/24", PeerMAC: macB, KeepOffloads: m.tso})
			add2 = func() { attachVethConfig(t, b, sw, vb, 2, cfg) }
		}
		add2()
		ping(t, nsA, dst)

		flood := startPingFlood(t, nsA, dst)
		// UDP both ways, sent without waiting for anything: the ports'
		// rings are full of frames whenever a port goes.
		stopAB := startUDPFlood(t, nsA, dstNS, dst+":9001")
		stopBA := startUDPFlood(t, dstNS, nsA, addr(1)+":9001")
		tcp := startTCPStream(t, nsA, dstNS, dst+":9000")
		tcp.waitBytes(t, 1<<20, 10*time.Second)

		start := time.Now()
		for r := range rounds {
			switch r % 4 {
			case 0: // the destination port goes and comes back
				delPort(t, b, 2)
				add2()
			case 1: // the source port goes and comes back
				delPort(t, b, 1)
				attachVethConfig(t, b, sw, va, 1, cfg)
			case 2: // the source interface flaps under its port
				sw.MustExec(t, "ip", "link", "set", va.Host, "down")
				sw.MustExec(t, "ip", "link", "set", va.Host, "up")
			case 3: // OFPPC_PORT_DOWN on and off (ovs-ofctl mod-port)
				for _, c := range []uint32{PortConfigDown, 0} {
					if err := b.SetPortConfig(2, c, PortConfigDown); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		stopAB()
		stopBA()
		t.Logf("%d rounds in %v; during them %d TCP bytes, ping -f %s", rounds, time.Since(start).Round(time.Millisecond), tcp.bytes.Load(), flood.summary())

		// Traffic resumes at once: ping is answered (after an ARP
		// exchange the flaps may have made necessary) without loss, and
		// a new TCP connection moves data. A connection that lost
		// segments during the rounds waits for its next retransmission,
		// which TCP backs off exponentially: that wait is the endpoints'
		// and only logged.
		end := time.Now()
		waitPing(t, nsA, dst, 3*time.Second)
		resumed := tcp.progress(250 * time.Millisecond)
		tcp.reconnect()
		tcp.waitBytes(t, 1<<20, 5*time.Second)
		t.Logf("after the last round: ping and a new TCP connection (1 MiB) in %v; the old connection moved %d bytes in its first 250 ms",
			time.Since(end).Round(time.Millisecond), resumed)
		if n := b.Panics(); n != 0 {
			t.Errorf("%d frames panicked", n)
		}
	})
}

// delPort deletes port n of b.
func delPort(t *testing.T, b *Bridge, n uint32) {
	t.Helper()
	if err := b.DelPort(n); err != nil {
		t.Fatal(err)
	}
}

// addTap creates a TAP in sw as cfg says, attaches it as ofport and gives
// it addr (IPv6 off, so only the test's traffic crosses it); DelPort
// deletes the device again.
func addTap(t *testing.T, b *Bridge, sw *netnstest.NS, ofport uint32, cfg tap.Config, addr string) {
	t.Helper()
	var tp *tap.Port
	if err := sw.Do(func() (err error) {
		tp, err = tap.Create(cfg)
		return err
	}); err != nil {
		t.Fatalf("create tap: %v", err)
	}
	if _, err := b.AddPort(ofport, tp, KindInternal); err != nil {
		tp.Close()
		t.Fatal(err)
	}
	netnstest.DisableIPv6(t, sw, tp.Name())
	sw.MustExec(t, "ip", "addr", "add", addr, "dev", tp.Name())
	sw.MustExec(t, "ip", "link", "set", tp.Name(), "up")
}

// pingFlood is a ping -f running until the test ends.
type pingFlood struct {
	cmd *exec.Cmd
	out *lockedBuffer
}

func startPingFlood(t *testing.T, ns *netnstest.NS, addr string) *pingFlood {
	t.Helper()
	args := ns.Command("ping", "-f", "-q", "-W", "1", addr)
	f := &pingFlood{cmd: exec.Command(args[0], args[1:]...), out: &lockedBuffer{}}
	f.cmd.Stdout, f.cmd.Stderr = f.out, f.out
	if err := f.cmd.Start(); err != nil {
		t.Fatalf("ping -f: %v", err)
	}
	t.Cleanup(func() {
		_ = f.cmd.Process.Kill()
		_ = f.cmd.Wait()
	})
	return f
}

// summary stops the flood and returns its statistics line.
func (f *pingFlood) summary() string {
	_ = f.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = f.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = f.cmd.Process.Kill()
		<-done
	}
	return f.out.lastLines(2)
}

// lockedBuffer collects a command's output.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) lastLines(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := string(b.buf)
	for i := len(s) - 2; i >= 0; i-- {
		if s[i] == '\n' {
			if n--; n == 0 {
				return s[i+1 : len(s)-1]
			}
		}
	}
	return s
}

// tcpStream sends bytes over one TCP connection from a namespace to a
// listener in another, for as long as the test runs, and counts what
// arrives. A connection that breaks (its RST crossed a deleted port) is
// dialled again.
type tcpStream struct {
	bytes atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup

	mu    sync.Mutex
	conns []net.Conn // both ends of every connection so far
}

func startTCPStream(t *testing.T, from, to *netnstest.NS, addr string) *tcpStream {
	t.Helper()
	var ln net.Listener
	if err := to.Do(func() (err error) { ln, err = net.Listen("tcp4", addr); return err }); err != nil {
		t.Fatal(err)
	}
	s := &tcpStream{stop: make(chan struct{})}
	track := func(c net.Conn) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		select {
		case <-s.stop:
			c.Close()
			return false
		default:
		}
		s.conns = append(s.conns, c)
		return true
	}
	s.wg.Add(2)
	go func() { // receiver
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !track(c) {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					s.bytes.Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	go func() { // sender
		defer s.wg.Done()
		buf := make([]byte, 64<<10)
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			var c net.Conn
			err := from.Do(func() (err error) { c, err = net.DialTimeout("tcp4", addr, time.Second); return err })
			if err != nil || !track(c) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			for {
				if _, err := c.Write(buf); err != nil {
					c.Close()
					break
				}
			}
		}
	}()
	t.Cleanup(func() {
		close(s.stop)
		ln.Close()
		s.reconnect()
		s.wg.Wait()
	})
	return s
}

// startUDPFlood sends UDP datagrams from ns from to a listener at addr
// in ns to that reads none, in bursts, until stopped (by the returned
// function or at the end of the test).
func startUDPFlood(t *testing.T, from, to *netnstest.NS, addr string) (stop func()) {
	t.Helper()
	var ln, c net.PacketConn
	if err := to.Do(func() (err error) { ln, err = net.ListenPacket("udp4", addr); return err }); err != nil {
		t.Fatal(err)
	}
	if err := from.Do(func() (err error) { c, err = net.ListenPacket("udp4", ":0"); return err }); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	dst, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 1400)
		for {
			select {
			case <-done:
				return
			default:
			}
			for range 32 {
				// Errors (no neighbour while a port is gone) do not matter.
				_, _ = c.WriteTo(buf, dst)
			}
			time.Sleep(200 * time.Microsecond) // leave the CPUs to the switch
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			c.Close()
			ln.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

// reconnect closes the connections; the sender dials a new one.
func (s *tcpStream) reconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// progress returns how many bytes arrive within d.
func (s *tcpStream) progress(d time.Duration) int64 {
	before := s.bytes.Load()
	time.Sleep(d)
	return s.bytes.Load() - before
}

// waitBytes waits until n more bytes arrived, failing after timeout.
func (s *tcpStream) waitBytes(t *testing.T, n int64, timeout time.Duration) {
	t.Helper()
	want := s.bytes.Load() + n
	deadline := time.Now().Add(timeout)
	for s.bytes.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("TCP: %d of %d bytes arrived in %v", s.bytes.Load()-want+n, n, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// openFds counts this process's open descriptors.
func openFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// checkNoLeaks fails when descriptors or goroutines stay above what there
// was before, after giving exiting goroutines a moment.
func checkNoLeaks(t *testing.T, fds, goroutines int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		fa, ga := openFds(t), runtime.NumGoroutine()
		if fa <= fds && ga <= goroutines {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("leak: %d open descriptors (%d before), %d goroutines (%d before)\n%s", fa, fds, ga, goroutines, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A port whose interface is deleted and created again under it (same
// name, new ifindex) re-attaches by itself, as Open vSwitch re-opens a
// netdev whose ifindex changed: traffic flows again, through the same
// OpenFlow port.
func TestNetnsReattachRecreatedInterface(t *testing.T) {
	for _, c := range []struct {
		name                  string
		xdp, pmd, portThreads bool
	}{{"afpacket", false, false, false}, {"afpacket PMD", false, true, false}, {"afpacket port threads", false, false, true},
		{"afxdp", true, false, false}, {"afxdp PMD", true, true, false}} {
		t.Run(c.name, func(t *testing.T) {
			sw, nsA, nsB := netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
			va := netnstest.NewVeth(t, sw, nsA, netnstest.VethOptions{PeerAddr: "10.206.0.1/24"})
			// A fixed MAC, so nsA's neighbour entry stays right.
			optsB := netnstest.VethOptions{PeerAddr: "10.206.0.2/24", PeerMAC: net.HardwareAddr{2, 0, 0x0a, 0xce, 0, 2}}
			vb := netnstest.NewVeth(t, sw, nsB, optsB)
			b := newBridge(t, "in_port=1,actions=output:2\nin_port=2,actions=output:1", false)
			b.PMD = PMDConfig{Enabled: c.pmd, CPU: -1}
			b.PortThreads = c.portThreads
			for n, v := range []*netnstest.Veth{va, vb} {
				if c.xdp {
					attachXDP(t, b, sw, v, uint32(n+1), afxdp.Config{})
				} else {
					attachVeth(t, b, sw, v, uint32(n+1))
				}
			}
			ping(t, nsA, "10.206.0.2")
			bp := b.ports.Load().byNo[2]
			for round := range 2 {
				oldIndex := bp.p.Ifindex()
				vb.Recreate(t, optsB)
				// 10 s: the re-attach retries every 100 ms, but a loaded CI
				// machine once took more than 5 s (afpacket PMD).
				waitPing(t, nsA, "10.206.0.2", 10*time.Second)
				if got := bp.p.Ifindex(); got == oldIndex {
					t.Errorf("round %d: port 2 still bound to ifindex %d", round, got)
				}
			}
			if cur := b.ports.Load().byNo[2]; cur != bp {
				t.Errorf("port 2 was replaced, want the same port re-attached")
			}
		})
	}
}

// waitPing waits until addr answers a ping from ns, then checks a few
// pings go through without loss.
func waitPing(t *testing.T, ns *netnstest.NS, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, err := ns.Exec("ping", "-c", "1", "-W", "1", addr)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer from %s within %v: %v", addr, ns, timeout, err)
		}
	}
	ping(t, ns, addr)
}
