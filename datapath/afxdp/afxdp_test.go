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

// newRig opens an AF_XDP port on a veth pair (porttest.Rig).
func newRig(t testing.TB, cfg Config, opts netnstest.VethOptions) *porttest.Rig[*Port] {
	t.Helper()
	return porttest.NewRig(t, opts, hostMAC, peerMAC, func(name string) (*Port, error) { return Open(name, cfg) })
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

func TestReceiveExactBytes(t *testing.T) {
	forEachMode(t, Config{ReadTimeout: 20 * time.Millisecond}, func(t *testing.T, cfg Config) {
		r := newRig(t, cfg, netnstest.VethOptions{})
		if got := r.Port.Mode(); got != cfg.Mode {
			t.Fatalf("bound in %s mode, asked %s", got, cfg.Mode)
		}
		lens := []int{14, 18, 60, 61, 64, 100, 1000, 1514}
		var want [][]byte
		for i, n := range lens {
			f := porttest.TestFrame(hostMAC, peerMAC, uint32(i), n)
			want = append(want, f)
			if err := r.Peer.Send(f); err != nil {
				t.Fatal(err)
			}
		}
		got, metas := porttest.ReadFrames(t, r.Port, len(want), 3*time.Second)
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
			f := porttest.TestFrame(peerMAC, hostMAC, uint32(i), 60+i*100)
			frames = append(frames, f)
			total += uint64(len(f))
		}
		n, err := r.Port.WriteBatch(frames)
		if err != nil || n != len(frames) {
			t.Fatalf("WriteBatch = %d, %v; want %d, nil", n, err, len(frames))
		}
		for i, want := range frames {
			got, err := r.Peer.RecvMatch(2*time.Second, porttest.IsTest)
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("frame %d: got %x\nwant %x", i, got, want)
			}
		}
		st := r.Port.Stats()
		if st.TxPackets != 10 || st.TxBytes != total || st.TxDropped != 0 || st.TxErrors != 0 {
			t.Errorf("stats = %+v, want 10 tx packets, %d bytes, no drops or errors", st, total)
		}
	})
}

func TestWriteBatchDropsBadLengths(t *testing.T) {
	forEachMode(t, Config{}, func(t *testing.T, cfg Config) {
		r := newRig(t, cfg, netnstest.VethOptions{MTU: 1000})
		good1 := porttest.TestFrame(peerMAC, hostMAC, 1, 100)
		good2 := porttest.TestFrame(peerMAC, hostMAC, 2, port.MaxFrameLen(1000)-8) // untagged, MTU-sized
		frames := [][]byte{
			good1,
			porttest.TestFrame(peerMAC, hostMAC, 0, 13),                       // runt
			porttest.TestFrame(peerMAC, hostMAC, 0, port.MaxFrameLen(1000)+1), // too long
			{}, // empty
			good2,
		}
		n, err := r.Port.WriteBatch(frames)
		if err != nil || n != len(frames) {
			t.Fatalf("WriteBatch = %d, %v; want %d, nil", n, err, len(frames))
		}
		for _, want := range [][]byte{good1, good2} {
			got, err := r.Peer.RecvMatch(2*time.Second, porttest.IsTest)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d-byte frame, want %d-byte seq %d", len(got), len(want), want[17])
			}
		}
		if st := r.Port.Stats(); st.TxPackets != 2 || st.TxDropped != 3 {
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
				batch[j] = porttest.TestFrame(peerMAC, hostMAC, uint32(i+j), 60)
			}
			if n, err := r.Port.WriteBatch(batch); err != nil || n != len(batch) {
				t.Fatalf("WriteBatch at %d = %d, %v", i, n, err)
			}
		}
		st := r.Port.Stats()
		if st.TxPackets != total || st.TxDropped != 0 || st.TxErrors != 0 {
			t.Errorf("stats = %+v, want %d sent, no drops or errors", st, total)
		}
		r.Port.TxMu.Lock()
		r.Port.reclaim()
		free := len(r.Port.txFree)
		r.Port.TxMu.Unlock()
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
				f := porttest.TestFrame(hostMAC, peerMAC, uint32(i+j), 64+j)
				bytesSent += uint64(len(f))
				if err := r.Peer.Send(f); err != nil {
					t.Fatal(err)
				}
			}
			f, _ := porttest.ReadFrames(t, r.Port, chunk, 3*time.Second)
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
		st := r.Port.Stats()
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
			if err := r.Peer.Send(porttest.TestFrame(hostMAC, peerMAC, uint32(i), 500)); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := porttest.ReadFrames(t, r.Port, n, 500*time.Millisecond)
		st := r.Port.Stats()
		if st.RxDropped == 0 {
			t.Errorf("no drops counted with 8 RX frames and %d sent: %+v", n, st)
		}
		if uint64(len(got))+st.RxDropped != n {
			t.Errorf("read %d + dropped %d != sent %d (%+v)", len(got), st.RxDropped, n, r.Port.xdpStats)
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
		n, err := r.Port.ReadBatch(b)
		if n != 0 || err != nil {
			t.Fatalf("idle ReadBatch with timeout = %d, %v; want 0, nil", n, err)
		}
		if d := time.Since(start); d < 25*time.Millisecond {
			t.Errorf("idle ReadBatch returned after %v, before the 30ms timeout", d)
		}
		// One XDP program per interface: the rig's port must go first.
		if err := r.Port.Close(); err != nil {
			t.Fatal(err)
		}
		cfg.ReadTimeout = 0
		p, err := Open(r.Veth.Host, cfg)
		if err != nil {
			t.Fatal(err)
		}
		porttest.CloseWakesReader(t, p, porttest.TestFrame(peerMAC, hostMAC, 1, 60))
		if err := p.Close(); err != nil {
			t.Errorf("second Close = %v", err)
		}
	})
}

// While frames stream in, the reader watches the RxRing instead of
// sleeping; Close still stops it.
func TestBusyPoll(t *testing.T) {
	r := newRig(t, Config{BusyPoll: time.Hour}, netnstest.VethOptions{})
	p := r.Port
	p.rxBusy = true // as after a short sleep; set before the reader runs
	done := make(chan int, 1)
	go func() {
		b := port.NewBatch(8)
		n, _ := p.ReadBatch(b)
		if n > 0 && !porttest.IsTest(b.Frames[0]) {
			n = -1
		}
		done <- n
	}()
	time.Sleep(20 * time.Millisecond) // let the reader reach the busy-poll
	if err := r.Peer.Send(porttest.TestFrame(hostMAC, peerMAC, 1, 60)); err != nil {
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
		if n, err := r.Port.TryReadBatch(b); n != 0 || err != nil {
			t.Fatalf("idle TryReadBatch = %d, %v", n, err)
		}
		if err := r.Peer.Send(porttest.TestFrame(hostMAC, peerMAC, 7, 60)); err != nil {
			t.Fatal(err)
		}
		fds := []unix.PollFd{{Fd: int32(r.Port.PollFd()), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 2000); n != 1 || err != nil || fds[0].Revents&unix.POLLIN == 0 {
			t.Fatalf("poll(PollFd) = %d, %v, revents %#x: want readable with a frame waiting", n, err, fds[0].Revents)
		}
		n, err := r.Port.TryReadBatch(b)
		if n != 1 || err != nil || !porttest.IsTest(b.Frames[0]) {
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
	l, err := netnstest.LinkShow(nil, r.Veth.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Port
	if p.Name() != r.Veth.Host || p.Ifindex() != l.Ifindex || p.MTU() != 1400 || p.HardwareAddr().String() != hostMAC.String() {
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
	if r.Port.frameSize != 4096 {
		t.Fatalf("MTU 3000 got %d-byte UMEM frames, want 4096", r.Port.frameSize)
	}
	want := porttest.TestFrame(hostMAC, peerMAC, 1, 3014)
	if err := r.Peer.Send(want); err != nil {
		t.Fatal(err)
	}
	got, _ := porttest.ReadFrames(t, r.Port, 1, 3*time.Second)
	if len(got) != 1 || !bytes.Equal(got[0], want) {
		t.Fatalf("got %d frames, want the one 3014-byte frame", len(got))
	}
	if n, err := r.Port.WriteBatch([][]byte{porttest.TestFrame(peerMAC, hostMAC, 2, 3014)}); n != 1 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	if f, err := r.Peer.RecvMatch(2*time.Second, porttest.IsTest); err != nil || len(f) != 3014 {
		t.Fatalf("peer got %d bytes, %v", len(f), err)
	}
}
