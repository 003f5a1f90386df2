package afpacket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/port/porttest"
)

var (
	hostMAC    = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x01, 0x01}
	peerMAC    = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x01, 0x02}
	foreignMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x99, 0x99}
)

// newRig opens an AF_PACKET port on a veth pair (porttest.Rig).
func newRig(t testing.TB, cfg Config, opts netnstest.VethOptions) *porttest.Rig[*Port] {
	t.Helper()
	return porttest.NewRig(t, opts, hostMAC, peerMAC, func(name string) (*Port, error) { return Open(name, cfg) })
}

// rxRings runs a receive test on each ring layout.
// The vnet variants read and write with a virtio_net_hdr in front of
// every frame (Config.VnetHdr), which must not change a byte of the
// frames themselves.
var rxRings = []rxRing{
	{"TPACKET_V2", TPacketV2, false},
	{"TPACKET_V3", TPacketV3, false},
	{"TPACKET_V2 vnet", TPacketV2, true},
	{"TPACKET_V3 vnet", TPacketV3, true},
}

type rxRing struct {
	name    string
	version int
	vnet    bool
}

// withRing returns cfg receiving through ring rv.
func withRing(cfg Config, rv rxRing) Config {
	cfg.RingVersion = rv.version
	cfg.VnetHdr = rv.vnet
	return cfg
}

func TestReceiveExactBytes(t *testing.T) {
	sizes := []struct {
		name string
		len  int
	}{
		{"header only", 14},
		{"minimum Ethernet", 60},
		{"odd", 333},
		{"full MTU", 1514},
	}
	for _, rv := range rxRings {
		t.Run(rv.name, func(t *testing.T) {
			r := newRig(t, withRing(Config{ReadTimeout: 20 * time.Millisecond}, rv), netnstest.VethOptions{})
			var sent [][]byte
			for i, s := range sizes {
				f := porttest.TestFrame(hostMAC, peerMAC, uint32(i), s.len)
				sent = append(sent, f)
				if err := r.Peer.Send(f); err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
			}
			got, _ := porttest.ReadFrames(t, r.Port, len(sent), 3*time.Second)
			if len(got) != len(sent) {
				t.Fatalf("received %d test frames, want %d", len(got), len(sent))
			}
			for i, s := range sizes {
				if !bytes.Equal(got[i], sent[i]) {
					t.Errorf("%s: got %x\nwant %x", s.name, got[i], sent[i])
				}
			}
		})
	}
}

// The ring slots (V2) or blocks (V3) are sized from the interface MTU, so
// a jumbo frame arrives whole, tagged or not.
func TestReceiveJumboFrame(t *testing.T) {
	const mtu = 9000
	for _, rv := range rxRings {
		t.Run(rv.name, func(t *testing.T) {
			r := newRig(t, withRing(Config{ReadTimeout: 20 * time.Millisecond}, rv), netnstest.VethOptions{MTU: mtu})
			plain := porttest.TestFrame(hostMAC, peerMAC, 1, mtu+port.EthHeaderLen)
			tagged := append(append(append([]byte{}, plain[:12]...), 0x81, 0x00, 0x00, 0x07), plain[12:]...)
			for _, f := range [][]byte{plain, tagged} {
				if err := r.Peer.Send(f); err != nil {
					t.Fatal(err)
				}
			}
			got, _ := porttest.ReadFrames(t, r.Port, 2, 3*time.Second)
			if len(got) != 2 || !bytes.Equal(got[0], plain) || !bytes.Equal(got[1], tagged) {
				t.Fatalf("received %d frames (lengths %v), want the %d-byte frame and its %d-byte tagged copy intact",
					len(got), frameLens(got), len(plain), len(tagged))
			}
			if st := r.Port.Stats(); st.RxErrors != 0 {
				t.Errorf("stats = %+v, want no errors", st)
			}
		})
	}
}

func frameLens(fs [][]byte) []int {
	var out []int
	for _, f := range fs {
		out = append(out, len(f))
	}
	return out
}

// A lone frame must reach the reader without waiting for a block timer:
// with a 50 ms TPACKET_V3 block timeout configured (which V2 ignores), a
// V2 read with a 20 ms read timeout returns each frame instead of timing
// out. (A V3 ring fails this: its frame sits in the open block until the
// timer retires it, up to 50 ms later.) No time is measured here;
// BenchmarkLoneFrameLatency reports the latency itself.
func TestLoneFrameNotHeldByBlockTimer(t *testing.T) {
	cfg := Config{RingVersion: TPacketV2, BlockTimeout: 50 * time.Millisecond, ReadTimeout: 20 * time.Millisecond}
	r := newRig(t, cfg, netnstest.VethOptions{})
	b := port.NewBatch(8)
	for seq := range uint32(20) {
		f := porttest.TestFrame(hostMAC, peerMAC, seq, 60)
		if err := r.Peer.Send(f); err != nil {
			t.Fatal(err)
		}
		for found := false; !found; {
			n, err := r.Port.ReadBatch(b)
			if err != nil {
				t.Fatalf("frame %d: ReadBatch: %v", seq, err)
			}
			if n == 0 {
				t.Fatalf("frame %d: ReadBatch timed out after %v: the frame was held back", seq, cfg.ReadTimeout)
			}
			for _, got := range b.Frames[:n] {
				if porttest.IsTest(got) {
					if !bytes.Equal(got, f) {
						t.Fatalf("frame %d: got %x, want %x", seq, got, f)
					}
					found = true
				}
			}
		}
	}
}

// txModes runs a send test with sendmmsg and with the TX ring.
var txModes = []struct {
	name string
	cfg  Config
}{
	{"sendmmsg", Config{TxBatch: 4}},                   // 4: several sendmmsg calls per batch
	{"tx ring", Config{TxRing: true, TxRingFrames: 4}}, // 4: the ring fills and wraps
}

// forEachTxMode runs fn for every TX mode on every ring version: the TX
// ring's slot layout follows the socket's PACKET_VERSION.
func forEachTxMode(t *testing.T, fn func(t *testing.T, cfg Config)) {
	for _, mode := range txModes {
		for _, rv := range rxRings {
			if rv.vnet && mode.cfg.TxRing {
				continue // Open refuses the combination (TestOpenErrors)
			}
			t.Run(mode.name+"/"+rv.name, func(t *testing.T) { fn(t, withRing(mode.cfg, rv)) })
		}
	}
}

func TestSendArrivesOnPeer(t *testing.T) {
	forEachTxMode(t, func(t *testing.T, cfg Config) {
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
	forEachTxMode(t, func(t *testing.T, cfg Config) {
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

func TestVLANTagRecovered(t *testing.T) {
	tests := []struct {
		name     string
		tpid     uint16
		tci      uint16
		keep     bool // Config.KeepVLANStripped
		wantMeta port.Meta
	}{
		{"802.1Q re-inserted", 0x8100, 0x2064, false, port.Meta{VLANTPID: 0x8100, VLANTCI: 0x2064, Flags: port.FlagVLAN}},
		{"802.1Q VID 0 priority 5", 0x8100, 0xa000, false, port.Meta{VLANTPID: 0x8100, VLANTCI: 0xa000, Flags: port.FlagVLAN}},
		{"802.1ad re-inserted", 0x88a8, 0x0fff - 1, false, port.Meta{VLANTPID: 0x88a8, VLANTCI: 0x0ffe, Flags: port.FlagVLAN}},
		{"802.1Q exposed only", 0x8100, 42, true, port.Meta{VLANTPID: 0x8100, VLANTCI: 42, Flags: port.FlagVLAN}},
	}
	for _, tc := range tests {
		for _, rv := range rxRings {
			t.Run(tc.name+"/"+rv.name, func(t *testing.T) {
				cfg := withRing(Config{ReadTimeout: 20 * time.Millisecond, KeepVLANStripped: tc.keep}, rv)
				r := newRig(t, cfg, netnstest.VethOptions{})
				plain := porttest.TestFrame(hostMAC, peerMAC, 7, 100)
				wire := append(append(append([]byte{}, plain[:12]...), byte(tc.tpid>>8), byte(tc.tpid), byte(tc.tci>>8), byte(tc.tci)), plain[12:]...)
				if err := r.Peer.Send(wire); err != nil {
					t.Fatal(err)
				}
				got, metas := porttest.ReadFrames(t, r.Port, 1, 3*time.Second)
				if len(got) != 1 {
					t.Fatalf("received %d frames, want 1", len(got))
				}
				want := wire
				if tc.keep {
					want = plain
				}
				if !bytes.Equal(got[0], want) {
					t.Errorf("got  %x\nwant %x", got[0], want)
				}
				m := metas[0]
				m.RxHash = 0
				m.Flags &= port.FlagVLAN
				if m != tc.wantMeta {
					t.Errorf("meta = %+v, want %+v", m, tc.wantMeta)
				}
			})
		}
	}
}

func TestPromiscuous(t *testing.T) {
	for _, rv := range rxRings {
		t.Run(rv.name, func(t *testing.T) {
			ns := netnstest.NewNS(t)
			v := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{HostMAC: hostMAC, PeerMAC: peerMAC})
			promisc := func() int {
				l, err := netnstest.LinkShow(nil, v.Host)
				if err != nil {
					t.Fatal(err)
				}
				return l.Promiscuity
			}
			before := promisc()
			p, err := Open(v.Host, withRing(Config{ReadTimeout: 20 * time.Millisecond}, rv))
			if err != nil {
				t.Fatal(err)
			}
			if got := promisc(); got != before+1 {
				t.Errorf("promiscuity with port open = %d, want %d", got, before+1)
			}
			peer := netnstest.NewRawSocket(t, ns, v.Peer)
			f := porttest.TestFrame(foreignMAC, peerMAC, 1, 64)
			if err := peer.Send(f); err != nil {
				t.Fatal(err)
			}
			got, _ := porttest.ReadFrames(t, p, 1, 3*time.Second)
			if len(got) != 1 || !bytes.Equal(got[0], f) {
				t.Errorf("frame to foreign MAC %s not received intact: %x", foreignMAC, got)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if got := promisc(); got != before {
				t.Errorf("promiscuity after close = %d, want %d", got, before)
			}

			// NoPromisc leaves the interface alone.
			p2, err := Open(v.Host, withRing(Config{NoPromisc: true}, rv))
			if err != nil {
				t.Fatal(err)
			}
			defer p2.Close()
			if got := promisc(); got != before {
				t.Errorf("promiscuity with NoPromisc = %d, want %d", got, before)
			}
		})
	}
}

func TestOwnOutgoingNotSeen(t *testing.T) {
	forEachTxMode(t, func(t *testing.T, cfg Config) {
		cfg.ReadTimeout = 20 * time.Millisecond
		r := newRig(t, cfg, netnstest.VethOptions{})
		mine := porttest.TestFrame(peerMAC, hostMAC, 0xaaaa, 80)
		if n, err := r.Port.WriteBatch([][]byte{mine, mine, mine}); n != 3 || err != nil {
			t.Fatalf("WriteBatch = %d, %v", n, err)
		}
		// The peer got them, so they did leave through the port.
		for range 3 {
			if _, err := r.Peer.RecvMatch(2*time.Second, porttest.IsTest); err != nil {
				t.Fatal(err)
			}
		}
		sentinel := porttest.TestFrame(hostMAC, peerMAC, 0xbbbb, 80)
		if err := r.Peer.Send(sentinel); err != nil {
			t.Fatal(err)
		}
		got, _ := porttest.ReadFrames(t, r.Port, 1, 3*time.Second)
		if len(got) != 1 || !bytes.Equal(got[0], sentinel) {
			t.Fatalf("first test frame read = %x, want only the peer's sentinel %x", got, sentinel)
		}
	})
}

func TestStatsCount(t *testing.T) {
	for _, rv := range rxRings {
		t.Run(rv.name, func(t *testing.T) {
			r := newRig(t, withRing(Config{ReadTimeout: 20 * time.Millisecond}, rv), netnstest.VethOptions{})
			const n = 50
			var bytesSent uint64
			for i := range n {
				f := porttest.TestFrame(hostMAC, peerMAC, uint32(i), 64+i)
				bytesSent += uint64(len(f))
				if err := r.Peer.Send(f); err != nil {
					t.Fatal(err)
				}
			}
			got, _ := porttest.ReadFrames(t, r.Port, n, 3*time.Second)
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
}

// With a tiny ring nobody reads, the kernel drops frames and
// PACKET_STATISTICS reports them; every frame is either read or dropped.
func TestKernelDropsCounted(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"TPACKET_V2 4 slots", Config{RingVersion: TPacketV2, FrameCount: 4}},
		{"TPACKET_V3 8 KiB", Config{RingVersion: TPacketV3, BlockSize: 4096, BlockCount: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.ReadTimeout = 50 * time.Millisecond
			r := newRig(t, cfg, netnstest.VethOptions{})
			const n = 300
			for i := range n {
				if err := r.Peer.Send(porttest.TestFrame(hostMAC, peerMAC, uint32(i), 500)); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(20 * time.Millisecond) // let the V3 retire timer hand over the last block
			got, _ := porttest.ReadFrames(t, r.Port, n, 500*time.Millisecond)
			st := r.Port.Stats()
			if st.RxDropped == 0 {
				t.Errorf("no drops counted with a tiny ring and %d frames: %+v", n, st)
			}
			if uint64(len(got))+st.RxDropped != n {
				t.Errorf("read %d + dropped %d != sent %d", len(got), st.RxDropped, n)
			}
			if st.RxPackets != uint64(len(got)) {
				t.Errorf("RxPackets %d, read %d", st.RxPackets, len(got))
			}
		})
	}
}

func TestReadTimeoutAndClose(t *testing.T) {
	for _, rv := range rxRings {
		t.Run(rv.name, func(t *testing.T) {
			r := newRig(t, withRing(Config{ReadTimeout: 30 * time.Millisecond}, rv), netnstest.VethOptions{})
			b := port.NewBatch(8)
			n, err := r.Port.ReadBatch(b)
			if n != 0 || err != nil {
				t.Fatalf("idle ReadBatch with timeout = %d, %v; want 0, nil", n, err)
			}

			// A reader blocked without timeout wakes up on Close.
			p, err := Open(r.Veth.Host, withRing(Config{}, rv))
			if err != nil {
				t.Fatal(err)
			}
			porttest.CloseWakesReader(t, p, porttest.TestFrame(peerMAC, hostMAC, 1, 60))
			if err := p.Close(); err != nil {
				t.Errorf("second Close = %v", err)
			}
		})
	}
}

// While frames stream in, a TPACKET_V2 reader watches the ring instead of
// sleeping: it still takes a frame that lands meanwhile, and Close still
// stops it. BusyPoll is set far longer than the test may take, so a
// reader stuck in the busy-poll would fail it.
func TestBusyPoll(t *testing.T) {
	r := newRig(t, Config{RingVersion: TPacketV2, BusyPoll: time.Hour}, netnstest.VethOptions{})
	p := r.Port
	read := func() (chan int, chan error) {
		nc, ec := make(chan int, 1), make(chan error, 1)
		go func() {
			b := port.NewBatch(8)
			n, err := p.ReadBatch(b)
			if n > 0 && !porttest.IsTest(b.Frames[0]) {
				n = -1
			}
			nc <- n
			ec <- err
		}()
		return nc, ec
	}

	p.rxBusy = true // as after a short sleep; set before the reader runs
	nc, ec := read()
	time.Sleep(20 * time.Millisecond) // let the reader reach the busy-poll
	if err := r.Peer.Send(porttest.TestFrame(hostMAC, peerMAC, 1, 60)); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-nc:
		if err := <-ec; n != 1 || err != nil {
			t.Fatalf("busy-polling ReadBatch = %d, %v; want the 1 test frame", n, err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("frame not taken by the busy-polling reader")
	}

	p.rxBusy = true
	nc, ec = read()
	time.Sleep(20 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }() // waits for the reader to leave
	select {
	case <-nc:
		if err := <-ec; !errors.Is(err, port.ErrClosed) {
			t.Errorf("busy-polling ReadBatch returned %v on Close, want ErrClosed", err)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not stop the busy-polling ReadBatch")
	}
}

// The zero Config (what vswitchd's openSystem passes) receives through a
// TPACKET_V2 ring whose slots hold a whole frame of the interface MTU.
func TestDefaultRingIsV2(t *testing.T) {
	for _, mtu := range []int{1500, 9000} {
		t.Run(fmt.Sprint("MTU ", mtu), func(t *testing.T) {
			r := newRig(t, Config{}, netnstest.VethOptions{MTU: mtu})
			p := r.Port
			if p.cfg.RingVersion != TPacketV2 || p.v3 || p.v2.mem == nil || p.ring.mem != nil {
				t.Fatalf("default ring version %d (v3 %v), want TPACKET_V2", p.cfg.RingVersion, p.v3)
			}
			if p.v2.frameNr < defaultFrameCount || p.v2.frameSize < v2MacRoom+port.MaxFrameLen(mtu) {
				t.Errorf("ring of %d x %d-byte slots, want >= %d slots of >= %d bytes",
					p.v2.frameNr, p.v2.frameSize, defaultFrameCount, v2MacRoom+port.MaxFrameLen(mtu))
			}
			if p.v2.perBlock < 1 || p.v2.perBlock*p.v2.frameSize > p.v2.blockSize || p.v2.frameNr%p.v2.perBlock != 0 {
				t.Errorf("%d slots of %d bytes per %d-byte block, %d slots", p.v2.perBlock, p.v2.frameSize, p.v2.blockSize, p.v2.frameNr)
			}
			if want := p.v2.frameNr / p.v2.perBlock * p.v2.blockSize; len(p.v2.mem) != want {
				t.Errorf("ring mapping %d bytes, want %d", len(p.v2.mem), want)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	netnstest.RequireRoot(t)
	tests := []struct {
		name, ifname string
		cfg          Config
		want         string
	}{
		{"no such interface", "gvnone0", Config{}, "SIOCGIFINDEX gvnone0"},
		{"name too long", "averyveryverylongname", Config{}, "must be 1 to 15 bytes"},
		{"unknown ring version", "lo", Config{RingVersion: 1}, "ring version 1: want 2 (TPACKET_V2) or 3 (TPACKET_V3)"},
		{"negative frame count", "lo", Config{FrameCount: -1}, "frame count -1"},
		{"block not page multiple", "lo", Config{RingVersion: TPacketV3, BlockSize: 3000}, "block size 3000"},
		{"negative block count", "lo", Config{RingVersion: TPacketV3, BlockCount: -1}, "block count -1"},
		{"vnet with tx ring", "lo", Config{VnetHdr: true, TxRing: true}, "VnetHdr does not work with TxRing"},
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
	if r.Port.Name() != r.Veth.Host || r.Port.Ifindex() != l.Ifindex || r.Port.MTU() != 1400 ||
		r.Port.HardwareAddr().String() != hostMAC.String() {
		t.Errorf("port = %s ifindex %d mtu %d mac %s; link = %+v", r.Port.Name(), r.Port.Ifindex(), r.Port.MTU(), r.Port.HardwareAddr(), l)
	}
}

// WriteBatchVnet needs a port opened with VnetHdr and one header per
// frame; on a vnet port a GSO header lets a frame exceed the MTU only up
// to the 64 KiB limit.
func TestWriteBatchVnetErrors(t *testing.T) {
	plain := newRig(t, Config{}, netnstest.VethOptions{})
	f := porttest.TestFrame(peerMAC, hostMAC, 1, 100)
	if plain.Port.VnetEnabled() {
		t.Errorf("port without VnetHdr reports VnetEnabled")
	}
	if _, err := plain.Port.WriteBatchVnet([][]byte{f}, []port.VnetHdr{{}}); err == nil {
		t.Errorf("WriteBatchVnet on a port without VnetHdr: no error")
	}
	r := newRig(t, Config{VnetHdr: true}, netnstest.VethOptions{})
	if !r.Port.VnetEnabled() {
		t.Fatalf("port with VnetHdr does not report VnetEnabled")
	}
	if _, err := r.Port.WriteBatchVnet([][]byte{f, f}, []port.VnetHdr{{}}); err == nil {
		t.Errorf("two frames with one header: no error")
	}
	huge := porttest.TestFrame(peerMAC, hostMAC, 2, port.MaxGSOFrameLen+1)
	n, err := r.Port.WriteBatchVnet([][]byte{huge}, []port.VnetHdr{{GSOType: port.VnetGSOTCPv4, GSOSize: 1448}})
	if err != nil || n != 1 {
		t.Fatalf("WriteBatchVnet = %d, %v", n, err)
	}
	if st := r.Port.Stats(); st.TxDropped != 1 {
		t.Errorf("frame over the GSO limit: %d dropped, want 1", st.TxDropped)
	}
}

// An interface going down under a waiting reader is reported once as the
// socket's error (ENETDOWN); the reader then sleeps again instead of
// spinning on the stale error condition, and takes frames once the
// interface is back.
func TestInterfaceDownReported(t *testing.T) {
	for _, rv := range rxRings[:2] {
		t.Run(rv.name, func(t *testing.T) {
			const timeout = 300 * time.Millisecond
			r := newRig(t, withRing(Config{ReadTimeout: timeout}, rv), netnstest.VethOptions{})
			b := port.NewBatch(8)
			down := make(chan error, 1)
			go func() {
				time.Sleep(50 * time.Millisecond) // the reader is asleep by then
				_, err := netnstest.Run("ip", "link", "set", "dev", r.Veth.Host, "down")
				down <- err
			}()
			_, err := r.Port.ReadBatch(b)
			if derr := <-down; derr != nil {
				t.Fatal(derr)
			}
			if !errors.Is(err, syscall.ENETDOWN) {
				t.Fatalf("ReadBatch while the link went down = %v, want ENETDOWN", err)
			}
			start := time.Now()
			if n, err := r.Port.ReadBatch(b); n != 0 || err != nil {
				t.Fatalf("second ReadBatch = %d, %v; want a timeout (0, nil)", n, err)
			}
			if d := time.Since(start); d < timeout/2 {
				t.Errorf("second ReadBatch returned after %v, want a sleep of about %v", d, timeout)
			}
			if _, err := netnstest.Run("ip", "link", "set", "dev", r.Veth.Host, "up"); err != nil {
				t.Fatal(err)
			}
			f := porttest.TestFrame(hostMAC, peerMAC, 7, 60)
			deadline := time.Now().Add(5 * time.Second)
			for {
				// The veth carrier takes a moment to come back.
				if err := r.Peer.Send(f); err != nil {
					t.Fatal(err)
				}
				if got, _ := porttest.ReadFrames(t, r.Port, 1, 100*time.Millisecond); len(got) == 1 {
					if !bytes.Equal(got[0], f) {
						t.Fatalf("frame after link up = %x, want %x", got[0], f)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("no frame after the link came back up")
				}
			}
		})
	}
}
