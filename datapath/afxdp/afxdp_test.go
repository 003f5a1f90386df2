package afxdp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/port/porttest"
	"golang.org/x/sys/unix"
)

var (
	hostMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x02, 0x01}
	peerMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x02, 0x02}
)

// testEtherType is the IEEE "local experimental" EtherType: nothing in the
// kernel reacts to it.
const testEtherType = 0x88b5

// rig is a veth pair with the host end in the test's namespace, attached
// to an AF_XDP Port, and a raw socket on the peer end in a fresh netns.
type rig struct {
	ns   *netnstest.NS
	veth *netnstest.Veth
	port *Port
	peer *netnstest.RawSocket
}

func newRig(t testing.TB, cfg Config, opts netnstest.VethOptions) *rig {
	t.Helper()
	ns := netnstest.NewNS(t)
	if opts.HostMAC == nil {
		opts.HostMAC = hostMAC
	}
	if opts.PeerMAC == nil {
		opts.PeerMAC = peerMAC
	}
	v := netnstest.NewVeth(t, nil, ns, opts)
	p, err := Open(v.Host, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &rig{ns: ns, veth: v, port: p, peer: netnstest.NewRawSocket(t, ns, v.Peer)}
}

// xdpModes are the attach modes that bind on a veth. Every I/O test runs
// in both: they differ in where the kernel runs the program (the veth's
// NAPI poll on an xdp_buff, or the core stack on the skb).
var xdpModes = []Mode{ModeNative, ModeGeneric}

func forEachMode(t *testing.T, cfg Config, fn func(t *testing.T, cfg Config)) {
	for _, m := range xdpModes {
		t.Run(string(m), func(t *testing.T) {
			c := cfg
			c.Mode = m
			fn(t, c)
		})
	}
}

// testFrame builds an Ethernet frame of total length n whose payload starts
// with a 4-byte sequence number, so frames can be told apart.
func testFrame(dst, src net.HardwareAddr, seq uint32, n int) []byte {
	f := make([]byte, max(n, 14))
	copy(f, dst)
	copy(f[6:], src)
	binary.BigEndian.PutUint16(f[12:], testEtherType)
	if n >= 18 {
		binary.BigEndian.PutUint32(f[14:], seq)
	}
	for i := 18; i < n; i++ {
		f[i] = byte(i * 7)
	}
	return f[:n]
}

func isTest(f []byte) bool {
	return len(f) >= 14 && binary.BigEndian.Uint16(f[12:]) == testEtherType
}

// readFrames reads from p until count test frames arrived or timeout,
// copying them out of the UMEM.
func readFrames(t testing.TB, p port.Port, count int, timeout time.Duration) ([][]byte, []port.Meta) {
	t.Helper()
	b := port.NewBatch(32)
	var frames [][]byte
	var metas []port.Meta
	deadline := time.Now().Add(timeout)
	for len(frames) < count && time.Now().Before(deadline) {
		n, err := p.ReadBatch(b)
		if err != nil {
			t.Fatalf("ReadBatch: %v", err)
		}
		for i := range n {
			if isTest(b.Frames[i]) {
				frames = append(frames, append([]byte(nil), b.Frames[i]...))
				metas = append(metas, b.Meta[i])
			}
		}
	}
	return frames, metas
}

func TestReceiveExactBytes(t *testing.T) {
	forEachMode(t, Config{ReadTimeout: 20 * time.Millisecond}, func(t *testing.T, cfg Config) {
		r := newRig(t, cfg, netnstest.VethOptions{})
		if got := r.port.Mode(); got != cfg.Mode {
			t.Fatalf("bound in %s mode, asked %s", got, cfg.Mode)
		}
		lens := []int{14, 18, 60, 61, 64, 100, 1000, 1514}
		var want [][]byte
		for i, n := range lens {
			f := testFrame(hostMAC, peerMAC, uint32(i), n)
			want = append(want, f)
			if err := r.peer.Send(f); err != nil {
				t.Fatal(err)
			}
		}
		got, metas := readFrames(t, r.port, len(want), 3*time.Second)
		if len(got) != len(want) {
			t.Fatalf("received %d frames, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("frame %d: got %d bytes %x\nwant %d bytes %x", i, len(got[i]), got[i], len(want[i]), want[i])
			}
			if metas[i] != (port.Meta{}) {
				t.Errorf("frame %d: meta %+v, want none", i, metas[i])
			}
		}
	})
}

func TestSendArrivesOnPeer(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, cfg Config) {
		r := newRig(t, cfg, netnstest.VethOptions{})
		var frames [][]byte
		var total uint64
		for i := range 10 {
			f := testFrame(peerMAC, hostMAC, uint32(i), 60+i*100)
			frames = append(frames, f)
			total += uint64(len(f))
		}
		n, err := r.port.WriteBatch(frames)
		if err != nil || n != len(frames) {
			t.Fatalf("WriteBatch = %d, %v; want %d, nil", n, err, len(frames))
		}
		for i, want := range frames {
			got, err := r.peer.RecvMatch(2*time.Second, isTest)
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("frame %d: got %x\nwant %x", i, got, want)
			}
		}
		st := r.port.Stats()
		if st.TxPackets != 10 || st.TxBytes != total || st.TxDropped != 0 || st.TxErrors != 0 {
			t.Errorf("stats = %+v, want 10 tx packets, %d bytes, no drops or errors", st, total)
		}
	})
}

func TestWriteBatchDropsBadLengths(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, cfg Config) {
		r := newRig(t, cfg, netnstest.VethOptions{MTU: 1000})
		good1 := testFrame(peerMAC, hostMAC, 1, 100)
		good2 := testFrame(peerMAC, hostMAC, 2, port.MaxFrameLen(1000)-8) // untagged, MTU-sized
		frames := [][]byte{
			good1,
			testFrame(peerMAC, hostMAC, 0, 13), // runt
			testFrame(peerMAC, hostMAC, 0, port.MaxFrameLen(1000)+1), // too long
			{}, // empty
			good2,
		}
		n, err := r.port.WriteBatch(frames)
		if err != nil || n != len(frames) {
			t.Fatalf("WriteBatch = %d, %v; want %d, nil", n, err, len(frames))
		}
		for _, want := range [][]byte{good1, good2} {
			got, err := r.peer.RecvMatch(2*time.Second, isTest)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d-byte frame, want %d-byte seq %d", len(got), len(want), want[17])
			}
		}
		if st := r.port.Stats(); st.TxPackets != 2 || st.TxDropped != 3 {
			t.Errorf("stats = %+v, want 2 sent and 3 dropped", st)
		}
	})
}

// Far more frames than there are TX frames in the UMEM go out: the
// CompletionRing gives every frame back for reuse, and none is lost.
func TestSendReusesTxFrames(t *testing.T) {
	forEachMode(t, Config{TxFrames: 16}, func(t *testing.T, cfg Config) {
		r := newRig(t, cfg, netnstest.VethOptions{})
		const total = 2000
		batch := make([][]byte, 50)
		for i := 0; i < total; i += len(batch) {
			for j := range batch {
				batch[j] = testFrame(peerMAC, hostMAC, uint32(i+j), 60)
			}
			if n, err := r.port.WriteBatch(batch); err != nil || n != len(batch) {
				t.Fatalf("WriteBatch at %d = %d, %v", i, n, err)
			}
		}
		st := r.port.Stats()
		if st.TxPackets != total || st.TxDropped != 0 || st.TxErrors != 0 {
			t.Errorf("stats = %+v, want %d sent, no drops or errors", st, total)
		}
		r.port.TxMu.Lock()
		r.port.reclaim()
		free := len(r.port.txFree)
		r.port.TxMu.Unlock()
		if free != cfg.TxFrames {
			t.Errorf("%d of %d TX frames free after the sends completed", free, cfg.TxFrames)
		}
	})
}

// A small FillRing is refilled from each read's frames: many more frames
// than RX frames arrive in order while the reader keeps up.
func TestStatsCountAndFillRingRefill(t *testing.T) {
	forEachMode(t, Config{ReadTimeout: 20 * time.Millisecond, RxFrames: 32}, func(t *testing.T, cfg Config) {
		r := newRig(t, cfg, netnstest.VethOptions{})
		const n, chunk = 400, 16
		var bytesSent uint64
		var got [][]byte
		for i := 0; i < n; i += chunk {
			for j := range chunk {
				f := testFrame(hostMAC, peerMAC, uint32(i+j), 64+j)
				bytesSent += uint64(len(f))
				if err := r.peer.Send(f); err != nil {
					t.Fatal(err)
				}
			}
			f, _ := readFrames(t, r.port, chunk, 3*time.Second)
			got = append(got, f...)
		}
		if len(got) != n {
			t.Fatalf("received %d, want %d", len(got), n)
		}
		for i, f := range got {
			if seq := binary.BigEndian.Uint32(f[14:]); seq != uint32(i) {
				t.Fatalf("frame %d has sequence %d: reordered or lost", i, seq)
			}
		}
		st := r.port.Stats()
		if st.RxPackets != n || st.RxBytes != bytesSent || st.RxDropped != 0 || st.RxErrors != 0 {
			t.Errorf("stats = %+v, want %d packets, %d bytes, no drops/errors", st, n, bytesSent)
		}
	})
}

// With 8 RX frames nobody hands back, the kernel drops frames and
// XDP_STATISTICS reports them; every frame is either read or dropped.
func TestKernelDropsCounted(t *testing.T) {
	forEachMode(t, Config{ReadTimeout: 50 * time.Millisecond, RxFrames: 8}, func(t *testing.T, cfg Config) {
		r := newRig(t, cfg, netnstest.VethOptions{})
		const n = 300
		for i := range n {
			if err := r.peer.Send(testFrame(hostMAC, peerMAC, uint32(i), 500)); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := readFrames(t, r.port, n, 500*time.Millisecond)
		st := r.port.Stats()
		if st.RxDropped == 0 {
			t.Errorf("no drops counted with 8 RX frames and %d sent: %+v", n, st)
		}
		if uint64(len(got))+st.RxDropped != n {
			t.Errorf("read %d + dropped %d != sent %d (%+v)", len(got), st.RxDropped, n, r.port.xdpStats)
		}
		if st.RxPackets != uint64(len(got)) {
			t.Errorf("RxPackets %d, read %d", st.RxPackets, len(got))
		}
	})
}

func TestReadTimeoutAndClose(t *testing.T) {
	forEachMode(t, Config{ReadTimeout: 30 * time.Millisecond}, func(t *testing.T, cfg Config) {
		r := newRig(t, cfg, netnstest.VethOptions{})
		b := port.NewBatch(8)
		start := time.Now()
		n, err := r.port.ReadBatch(b)
		if n != 0 || err != nil {
			t.Fatalf("idle ReadBatch with timeout = %d, %v; want 0, nil", n, err)
		}
		if d := time.Since(start); d < 25*time.Millisecond {
			t.Errorf("idle ReadBatch returned after %v, before the 30ms timeout", d)
		}
		// One XDP program per interface: the rig's port must go first.
		if err := r.port.Close(); err != nil {
			t.Fatal(err)
		}
		cfg.ReadTimeout = 0
		p, err := Open(r.veth.Host, cfg)
		if err != nil {
			t.Fatal(err)
		}
		porttest.CloseWakesReader(t, p, testFrame(peerMAC, hostMAC, 1, 60))
		if err := p.Close(); err != nil {
			t.Errorf("second Close = %v", err)
		}
	})
}

// While frames stream in, the reader watches the RxRing instead of
// sleeping; Close still stops it.
func TestBusyPoll(t *testing.T) {
	r := newRig(t, Config{BusyPoll: time.Hour}, netnstest.VethOptions{})
	p := r.port
	p.rxBusy = true // as after a short sleep; set before the reader runs
	done := make(chan int, 1)
	go func() {
		b := port.NewBatch(8)
		n, _ := p.ReadBatch(b)
		if n > 0 && !isTest(b.Frames[0]) {
			n = -1
		}
		done <- n
	}()
	time.Sleep(20 * time.Millisecond) // let the reader reach the busy-poll
	if err := r.peer.Send(testFrame(hostMAC, peerMAC, 1, 60)); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-done:
		if n != 1 {
			t.Fatalf("busy-polling ReadBatch = %d, want the 1 test frame", n)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("frame not taken by the busy-polling reader")
	}
	p.rxBusy = true
	go func() {
		n, _ := p.ReadBatch(port.NewBatch(8))
		done <- n
	}()
	time.Sleep(20 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not stop the busy-polling ReadBatch")
	}
}

// TryReadBatch never waits, and PollFd turns readable when a frame waits.
func TestPoller(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, cfg Config) {
		r := newRig(t, cfg, netnstest.VethOptions{})
		b := port.NewBatch(8)
		if n, err := r.port.TryReadBatch(b); n != 0 || err != nil {
			t.Fatalf("idle TryReadBatch = %d, %v", n, err)
		}
		if err := r.peer.Send(testFrame(hostMAC, peerMAC, 7, 60)); err != nil {
			t.Fatal(err)
		}
		fds := []unix.PollFd{{Fd: int32(r.port.PollFd()), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 2000); n != 1 || err != nil || fds[0].Revents&unix.POLLIN == 0 {
			t.Fatalf("poll(PollFd) = %d, %v, revents %#x: want readable with a frame waiting", n, err, fds[0].Revents)
		}
		n, err := r.port.TryReadBatch(b)
		if n != 1 || err != nil || !isTest(b.Frames[0]) {
			t.Fatalf("TryReadBatch = %d, %v", n, err)
		}
	})
}

// What binds on a veth: native and generic XDP in copy mode, best-effort
// picks native, zero-copy is refused with a clear error. While a port is
// open the interface shows the program, afterwards it does not.
func TestModesOnVeth(t *testing.T) {
	ns := netnstest.NewNS(t)
	v := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{})
	for _, tc := range []struct {
		mode     Mode
		bound    Mode
		linkWord string // in `ip link show`
		err      string
	}{
		{ModeNative, ModeNative, "xdp ", ""},
		{ModeGeneric, ModeGeneric, "xdpgeneric", ""},
		{ModeBestEffort, ModeNative, "xdp ", ""},
		{"", ModeNative, "xdp ", ""},
		{ModeNativeZeroCopy, "", "", "bind queue 0 in zero-copy"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			p, err := Open(v.Host, Config{Mode: tc.mode})
			if tc.err != "" {
				if err == nil {
					p.Close()
					t.Fatalf("Open succeeded, want error %q", tc.err)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %q does not contain %q", err, tc.err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if p.Mode() != tc.bound || p.ZeroCopy() {
					t.Errorf("bound %s zero-copy %v, want %s in copy mode", p.Mode(), p.ZeroCopy(), tc.bound)
				}
				out := netnstest.MustRun(t, "ip", "link", "show", v.Host)
				if !strings.Contains(out, tc.linkWord) {
					t.Errorf("ip link show lacks %q while open:\n%s", tc.linkWord, out)
				}
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			}
			// The program is gone (also after a failed Open): the next
			// mode can attach.
			if out := netnstest.MustRun(t, "ip", "link", "show", v.Host); strings.Contains(out, "xdp") {
				t.Errorf("XDP program still attached after Close:\n%s", out)
			}
		})
	}
}

// best-effort falls back to generic XDP where the driver refuses native:
// loopback has no XDP support in its driver.
func TestBestEffortFallsBackToGeneric(t *testing.T) {
	ns := netnstest.NewNS(t)
	ns.MustExec(t, "ip", "link", "set", "lo", "mtu", "1500")
	var p *Port
	err := ns.Do(func() (err error) {
		p, err = Open("lo", Config{NoPromisc: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Mode() != ModeGeneric {
		t.Errorf("best-effort on lo bound %s, want generic", p.Mode())
	}
	err = ns.Do(func() error {
		q, err := Open("lo", Config{Mode: ModeNative, NoPromisc: true})
		if err == nil {
			q.Close()
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "native mode") {
		t.Errorf("native on lo: %v, want an attach error naming native mode", err)
	}
}

func TestPromiscuous(t *testing.T) {
	for _, noPromisc := range []bool{false, true} {
		t.Run(fmt.Sprint("NoPromisc ", noPromisc), func(t *testing.T) {
			ns := netnstest.NewNS(t)
			v := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{})
			promisc := func() int {
				l, err := netnstest.LinkShow(nil, v.Host)
				if err != nil {
					t.Fatal(err)
				}
				return l.Promiscuity
			}
			before := promisc()
			p, err := Open(v.Host, Config{NoPromisc: noPromisc})
			if err != nil {
				t.Fatal(err)
			}
			want := before + 1
			if noPromisc {
				want = before
			}
			if got := promisc(); got != want {
				t.Errorf("promiscuity with port open = %d, want %d", got, want)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if got := promisc(); got != before {
				t.Errorf("promiscuity after close = %d, want %d", got, before)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	netnstest.RequireRoot(t)
	ns := netnstest.NewNS(t)
	jumbo := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{MTU: 9000})
	tests := []struct {
		name, ifname string
		cfg          Config
		want         string
	}{
		{"no such interface", "gvnone0", Config{}, "SIOCGIFINDEX gvnone0"},
		{"name too long", "averyveryverylongname", Config{}, "must be 1 to 15 bytes"},
		{"unknown mode", "lo", Config{Mode: "turbo"}, `xdp-mode "turbo": want best-effort, native, native-with-zerocopy or generic`},
		{"rx frames not power of two", "lo", Config{RxFrames: 100}, "rx frames 100: want a power of two"},
		{"negative tx frames", "lo", Config{TxFrames: -1}, "tx frames -1"},
		{"frame size", "lo", Config{FrameSize: 3000}, "frame size 3000: want 2048 or 4096"},
		{"MTU beyond a frame", jumbo.Host, Config{}, "MTU 9000 needs 9022-byte frames, a 4096-byte UMEM frame holds 3840"},
		{"MTU beyond a small frame", jumbo.Host, Config{FrameSize: 2048}, "a 2048-byte UMEM frame holds 1792"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Open(tc.ifname, tc.cfg)
			if err == nil {
				p.Close()
				t.Fatalf("Open succeeded, want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestPortMetadata(t *testing.T) {
	r := newRig(t, Config{}, netnstest.VethOptions{MTU: 1400})
	l, err := netnstest.LinkShow(nil, r.veth.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := r.port
	if p.Name() != r.veth.Host || p.Ifindex() != l.Ifindex || p.MTU() != 1400 || p.HardwareAddr().String() != hostMAC.String() {
		t.Errorf("port %s ifindex %d mtu %d mac %s; link %+v", p.Name(), p.Ifindex(), p.MTU(), p.HardwareAddr(), l)
	}
	if p.frameSize != 2048 {
		t.Errorf("MTU 1400 got %d-byte UMEM frames, want 2048", p.frameSize)
	}
}

// A frame size that holds MTU 3000 needs 4096-byte UMEM frames; the
// frames still arrive whole (generic mode: native XDP on veth refuses an
// MTU that large for a program without multi-buffer support).
func TestLargeMTUUsesPageFrames(t *testing.T) {
	r := newRig(t, Config{Mode: ModeGeneric, ReadTimeout: 20 * time.Millisecond}, netnstest.VethOptions{MTU: 3000})
	if r.port.frameSize != 4096 {
		t.Fatalf("MTU 3000 got %d-byte UMEM frames, want 4096", r.port.frameSize)
	}
	want := testFrame(hostMAC, peerMAC, 1, 3014)
	if err := r.peer.Send(want); err != nil {
		t.Fatal(err)
	}
	got, _ := readFrames(t, r.port, 1, 3*time.Second)
	if len(got) != 1 || !bytes.Equal(got[0], want) {
		t.Fatalf("got %d frames, want the one 3014-byte frame", len(got))
	}
	if n, err := r.port.WriteBatch([][]byte{testFrame(peerMAC, hostMAC, 2, 3014)}); n != 1 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	if f, err := r.peer.RecvMatch(2*time.Second, isTest); err != nil || len(f) != 3014 {
		t.Fatalf("peer got %d bytes, %v", len(f), err)
	}
}
