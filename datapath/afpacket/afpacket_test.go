package afpacket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
)

var (
	hostMAC    = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x01, 0x01}
	peerMAC    = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x01, 0x02}
	foreignMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x99, 0x99}
)

// testEtherType is the IEEE "local experimental" EtherType: nothing in the
// kernel reacts to it.
const testEtherType = 0x88b5

// rig is a veth pair with the host end in the test's namespace, attached
// to an afpacket Port, and a raw socket on the peer end in a fresh netns.
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

// isTest reports whether f (possibly VLAN tagged) carries testEtherType.
func isTest(f []byte) bool {
	if len(f) < 14 {
		return false
	}
	et := binary.BigEndian.Uint16(f[12:])
	if (et == 0x8100 || et == 0x88a8) && len(f) >= 18 {
		et = binary.BigEndian.Uint16(f[16:])
	}
	return et == testEtherType
}

// readFrames reads from p until count test frames arrived or timeout,
// copying them out of the ring. Frames of other EtherTypes are skipped.
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
	r := newRig(t, Config{ReadTimeout: 20 * time.Millisecond}, netnstest.VethOptions{})
	sizes := []struct {
		name string
		len  int
	}{
		{"header only", 14},
		{"minimum Ethernet", 60},
		{"odd", 333},
		{"full MTU", 1514},
	}
	var sent [][]byte
	for i, s := range sizes {
		f := testFrame(hostMAC, peerMAC, uint32(i), s.len)
		sent = append(sent, f)
		if err := r.peer.Send(f); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	got, _ := readFrames(t, r.port, len(sent), 3*time.Second)
	if len(got) != len(sent) {
		t.Fatalf("received %d test frames, want %d", len(got), len(sent))
	}
	for i, s := range sizes {
		if !bytes.Equal(got[i], sent[i]) {
			t.Errorf("%s: got %x\nwant %x", s.name, got[i], sent[i])
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

func TestSendArrivesOnPeer(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.name, func(t *testing.T) {
			r := newRig(t, mode.cfg, netnstest.VethOptions{})
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
}

func TestWriteBatchDropsBadLengths(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.name, func(t *testing.T) {
			r := newRig(t, mode.cfg, netnstest.VethOptions{MTU: 1000})
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
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{ReadTimeout: 20 * time.Millisecond, KeepVLANStripped: tc.keep}, netnstest.VethOptions{})
			plain := testFrame(hostMAC, peerMAC, 7, 100)
			wire := append(append(append([]byte{}, plain[:12]...), byte(tc.tpid>>8), byte(tc.tpid), byte(tc.tci>>8), byte(tc.tci)), plain[12:]...)
			if err := r.peer.Send(wire); err != nil {
				t.Fatal(err)
			}
			got, metas := readFrames(t, r.port, 1, 3*time.Second)
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

func TestPromiscuous(t *testing.T) {
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
	p, err := Open(v.Host, Config{ReadTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := promisc(); got != before+1 {
		t.Errorf("promiscuity with port open = %d, want %d", got, before+1)
	}
	peer := netnstest.NewRawSocket(t, ns, v.Peer)
	f := testFrame(foreignMAC, peerMAC, 1, 64)
	if err := peer.Send(f); err != nil {
		t.Fatal(err)
	}
	got, _ := readFrames(t, p, 1, 3*time.Second)
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
	p2, err := Open(v.Host, Config{NoPromisc: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if got := promisc(); got != before {
		t.Errorf("promiscuity with NoPromisc = %d, want %d", got, before)
	}
}

func TestOwnOutgoingNotSeen(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.name, func(t *testing.T) {
			cfg := mode.cfg
			cfg.ReadTimeout = 20 * time.Millisecond
			r := newRig(t, cfg, netnstest.VethOptions{})
			mine := testFrame(peerMAC, hostMAC, 0xaaaa, 80)
			if n, err := r.port.WriteBatch([][]byte{mine, mine, mine}); n != 3 || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			// The peer got them, so they did leave through the port.
			for range 3 {
				if _, err := r.peer.RecvMatch(2*time.Second, isTest); err != nil {
					t.Fatal(err)
				}
			}
			sentinel := testFrame(hostMAC, peerMAC, 0xbbbb, 80)
			if err := r.peer.Send(sentinel); err != nil {
				t.Fatal(err)
			}
			got, _ := readFrames(t, r.port, 1, 3*time.Second)
			if len(got) != 1 || !bytes.Equal(got[0], sentinel) {
				t.Fatalf("first test frame read = %x, want only the peer's sentinel %x", got, sentinel)
			}
		})
	}
}

func TestStatsCount(t *testing.T) {
	r := newRig(t, Config{ReadTimeout: 20 * time.Millisecond}, netnstest.VethOptions{})
	const n = 50
	var bytesSent uint64
	for i := range n {
		f := testFrame(hostMAC, peerMAC, uint32(i), 64+i)
		bytesSent += uint64(len(f))
		if err := r.peer.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := readFrames(t, r.port, n, 3*time.Second)
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
}

// With a tiny ring nobody reads, the kernel drops frames and
// PACKET_STATISTICS reports them; every frame is either read or dropped.
func TestKernelDropsCounted(t *testing.T) {
	r := newRig(t, Config{BlockSize: 4096, BlockCount: 2, ReadTimeout: 50 * time.Millisecond}, netnstest.VethOptions{})
	const n = 300
	for i := range n {
		if err := r.peer.Send(testFrame(hostMAC, peerMAC, uint32(i), 500)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // let the retire timer hand over the last block
	got, _ := readFrames(t, r.port, n, 500*time.Millisecond)
	st := r.port.Stats()
	if st.RxDropped == 0 {
		t.Errorf("no drops counted with a 8 KiB ring and %d frames: %+v", n, st)
	}
	if uint64(len(got))+st.RxDropped != n {
		t.Errorf("read %d + dropped %d != sent %d", len(got), st.RxDropped, n)
	}
	if st.RxPackets != uint64(len(got)) {
		t.Errorf("RxPackets %d, read %d", st.RxPackets, len(got))
	}
}

func TestReadTimeoutAndClose(t *testing.T) {
	r := newRig(t, Config{ReadTimeout: 30 * time.Millisecond}, netnstest.VethOptions{})
	b := port.NewBatch(8)
	n, err := r.port.ReadBatch(b)
	if n != 0 || err != nil {
		t.Fatalf("idle ReadBatch with timeout = %d, %v; want 0, nil", n, err)
	}

	// A reader blocked without timeout wakes up on Close.
	p, err := Open(r.veth.Host, Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.ReadBatch(port.NewBatch(8))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, port.ErrClosed) {
			t.Errorf("blocked ReadBatch returned %v, want ErrClosed", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not wake the blocked ReadBatch")
	}
	if _, err := p.ReadBatch(b); !errors.Is(err, port.ErrClosed) {
		t.Errorf("ReadBatch after Close = %v, want ErrClosed", err)
	}
	if _, err := p.WriteBatch([][]byte{testFrame(peerMAC, hostMAC, 1, 60)}); !errors.Is(err, port.ErrClosed) {
		t.Errorf("WriteBatch after Close = %v, want ErrClosed", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close = %v", err)
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
		{"block not page multiple", "lo", Config{BlockSize: 3000}, "block size 3000"},
		{"negative block count", "lo", Config{BlockCount: -1}, "block count -1"},
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
	if r.port.Name() != r.veth.Host || r.port.Ifindex() != l.Ifindex || r.port.MTU() != 1400 ||
		r.port.HardwareAddr().String() != hostMAC.String() {
		t.Errorf("port = %s ifindex %d mtu %d mac %s; link = %+v", r.port.Name(), r.port.Ifindex(), r.port.MTU(), r.port.HardwareAddr(), l)
	}
}
