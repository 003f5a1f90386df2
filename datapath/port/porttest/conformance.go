package porttest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
)

// Kind describes a port kind bound to a kernel interface (AF_PACKET,
// AF_XDP) to the conformance suite (Run) and the shared benchmarks: how
// to open it on one end of a veth pair, in which variants. A kind's test
// file builds one Kind and keeps only the checks of what it does
// differently.
type Kind[P port.Port] struct {
	// HostMAC and PeerMAC are the addresses of the veth ends.
	HostMAC, PeerMAC net.HardwareAddr
	// Variants are the configurations every receive check runs in (ring
	// versions, XDP attach modes); TxVariants those of the send checks
	// (nil: Variants).
	Variants, TxVariants []Variant[P]
	// NoMeta: the kind reports no per-frame metadata for a plain frame.
	NoMeta bool
	// Load opens the load port of the benchmarks on the peer end (run
	// inside the peer's namespace): it only sends, and a tiny receive
	// ring drops what it gets.
	Load func(ifname string) (port.Port, error)
}

// Variant is one configuration of a kind: Open opens a port on ifname
// with the suite's settings o mapped onto the kind's configuration.
type Variant[P port.Port] struct {
	Name string
	Open func(ifname string, o Opts) (P, error)
}

// Opts are the settings a check asks of a port, which every kind maps
// onto its own configuration.
type Opts struct {
	ReadTimeout time.Duration // 0: ReadBatch waits for a frame or Close
	BusyPoll    time.Duration // as afpacket.Config.BusyPoll; -1: off
	NoPromisc   bool
	// RxFrames asks for a receive ring of about this many frames (0: the
	// kind's default): small enough that the kernel drops frames nobody
	// reads, or large enough for a benchmark's whole round.
	RxFrames int
}

func (k *Kind[P]) txVariants() []Variant[P] {
	if k.TxVariants != nil {
		return k.TxVariants
	}
	return k.Variants
}

// Rig opens a port with open on a fresh veth pair with the kind's MACs.
func (k *Kind[P]) Rig(t testing.TB, vo netnstest.VethOptions, open func(ifname string) (P, error)) *Rig[P] {
	t.Helper()
	return NewRig(t, vo, k.HostMAC, k.PeerMAC, open)
}

// rig opens a port of variant v with o on a fresh veth pair.
func (k *Kind[P]) rig(t testing.TB, v Variant[P], o Opts, vo netnstest.VethOptions) *Rig[P] {
	t.Helper()
	return k.Rig(t, vo, func(name string) (P, error) { return v.Open(name, o) })
}

// check is one behaviour of the suite, run once per variant.
type check[P port.Port] struct {
	name string
	tx   bool // runs in the send variants
	fn   func(t *testing.T, k *Kind[P], v Variant[P])
}

// Run checks the behaviours every port kind bound to an interface must
// show, each as a sub-test per variant: exact bytes both ways, length
// checks, counters, kernel drops counted, read timeout and Close, busy
// polling, port.Poller, promiscuity, identity, re-attachment after the
// interface is deleted and created again, and the frame-ownership rule
// under traffic (frames a reader holds stay readable after Close).
func Run[P port.Port](t *testing.T, k Kind[P]) {
	for _, c := range []check[P]{
		{"ReceiveExactBytes", false, receiveExactBytes[P]},
		{"SendArrivesOnPeer", true, sendArrivesOnPeer[P]},
		{"WriteBatchDropsBadLengths", true, writeBatchDropsBadLengths[P]},
		{"OwnOutgoingNotSeen", true, ownOutgoingNotSeen[P]},
		{"StatsCount", false, statsCount[P]},
		{"KernelDropsCounted", false, kernelDropsCounted[P]},
		{"ReadTimeoutAndClose", false, readTimeoutAndClose[P]},
		{"BusyPoll", false, busyPoll[P]},
		{"Poller", false, poller[P]},
		{"Promiscuous", false, promiscuous[P]},
		{"PortMetadata", false, portMetadata[P]},
		{"Reattach", false, reattach[P]},
		{"CloseWhileLent", false, closeWhileLent[P]},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := k.Variants
			if c.tx {
				vs = k.txVariants()
			}
			for _, v := range vs {
				t.Run(v.Name, func(t *testing.T) { c.fn(t, &k, v) })
			}
		})
	}
}

// Frames of every length from a bare header to a full MTU arrive with
// their bytes unchanged.
func receiveExactBytes[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{ReadTimeout: 20 * time.Millisecond}, netnstest.VethOptions{})
	var want [][]byte
	for i, n := range []int{14, 18, 60, 61, 64, 100, 333, 1000, 1514} {
		f := TestFrame(k.HostMAC, k.PeerMAC, uint32(i), n)
		want = append(want, f)
		if err := r.Peer.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	got, metas := ReadFrames(t, r.Port, len(want), 3*time.Second)
	if len(got) != len(want) {
		t.Fatalf("received %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("frame %d: got %d bytes %x\nwant %d bytes %x", i, len(got[i]), got[i], len(want[i]), want[i])
		}
		m := metas[i]
		if k.NoMeta && m != (port.Meta{}) || m.Flags&port.FlagVLAN != 0 {
			t.Errorf("frame %d: meta %+v, want none", i, m)
		}
	}
}

func sendArrivesOnPeer[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{}, netnstest.VethOptions{})
	var frames [][]byte
	var total uint64
	for i := range 10 {
		f := TestFrame(k.PeerMAC, k.HostMAC, uint32(i), 60+i*100)
		frames = append(frames, f)
		total += uint64(len(f))
	}
	n, err := r.Port.WriteBatch(frames)
	if err != nil || n != len(frames) {
		t.Fatalf("WriteBatch = %d, %v; want %d, nil", n, err, len(frames))
	}
	for i, want := range frames {
		got, err := r.Peer.RecvMatch(2*time.Second, IsTest)
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
}

// Runts, empty frames and frames longer than the MTU allows are skipped
// and counted as dropped; the frames around them go out.
func writeBatchDropsBadLengths[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{}, netnstest.VethOptions{MTU: 1000})
	good1 := TestFrame(k.PeerMAC, k.HostMAC, 1, 100)
	good2 := TestFrame(k.PeerMAC, k.HostMAC, 2, port.MaxFrameLen(1000)-8) // untagged, MTU-sized
	frames := [][]byte{
		good1,
		TestFrame(k.PeerMAC, k.HostMAC, 0, 13), // runt
		TestFrame(k.PeerMAC, k.HostMAC, 0, port.MaxFrameLen(1000)+1), // too long
		{}, // empty
		good2,
	}
	n, err := r.Port.WriteBatch(frames)
	if err != nil || n != len(frames) {
		t.Fatalf("WriteBatch = %d, %v; want %d, nil", n, err, len(frames))
	}
	for _, want := range [][]byte{good1, good2} {
		got, err := r.Peer.RecvMatch(2*time.Second, IsTest)
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
}

// A port does not read back the frames it sent itself.
func ownOutgoingNotSeen[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{ReadTimeout: 20 * time.Millisecond}, netnstest.VethOptions{})
	mine := TestFrame(k.PeerMAC, k.HostMAC, 0xaaaa, 80)
	if n, err := r.Port.WriteBatch([][]byte{mine, mine, mine}); n != 3 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	// The peer got them, so they did leave through the port.
	for range 3 {
		if _, err := r.Peer.RecvMatch(2*time.Second, IsTest); err != nil {
			t.Fatal(err)
		}
	}
	sentinel := TestFrame(k.HostMAC, k.PeerMAC, 0xbbbb, 80)
	if err := r.Peer.Send(sentinel); err != nil {
		t.Fatal(err)
	}
	got, _ := ReadFrames(t, r.Port, 1, 3*time.Second)
	if len(got) != 1 || !bytes.Equal(got[0], sentinel) {
		t.Fatalf("first test frame read = %x, want only the peer's sentinel %x", got, sentinel)
	}
}

// Many more frames than a small receive ring holds arrive in order while
// the reader keeps up (the ring is refilled from each read), and the
// receive counters count them all.
func statsCount[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{ReadTimeout: 20 * time.Millisecond, RxFrames: 32}, netnstest.VethOptions{})
	const n, chunk = 400, 16
	var bytesSent uint64
	var got [][]byte
	for i := 0; i < n; i += chunk {
		for j := range chunk {
			f := TestFrame(k.HostMAC, k.PeerMAC, uint32(i+j), 64+j)
			bytesSent += uint64(len(f))
			if err := r.Peer.Send(f); err != nil {
				t.Fatal(err)
			}
		}
		f, _ := ReadFrames(t, r.Port, chunk, 3*time.Second)
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
}

// With a tiny ring nobody reads, the kernel drops frames and the port
// reports them (PACKET_STATISTICS, XDP_STATISTICS); every frame is
// either read or dropped.
func kernelDropsCounted[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{ReadTimeout: 50 * time.Millisecond, RxFrames: 8}, netnstest.VethOptions{})
	const n = 300
	for i := range n {
		if err := r.Peer.Send(TestFrame(k.HostMAC, k.PeerMAC, uint32(i), 500)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // let a TPACKET_V3 retire timer hand over the last block
	got, _ := ReadFrames(t, r.Port, n, 500*time.Millisecond)
	st := r.Port.Stats()
	if st.RxDropped == 0 {
		t.Errorf("no drops counted with a tiny ring and %d frames: %+v", n, st)
	}
	if uint64(len(got))+st.RxDropped != n {
		t.Errorf("read %d + dropped %d != sent %d (%+v)", len(got), st.RxDropped, n, st)
	}
	if st.RxPackets != uint64(len(got)) {
		t.Errorf("RxPackets %d, read %d", st.RxPackets, len(got))
	}
}

// An idle read with a timeout returns (0, nil) after the timeout; a read
// without one is woken by Close (CloseWakesReader), and a second Close
// is harmless.
func readTimeoutAndClose[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{ReadTimeout: 30 * time.Millisecond}, netnstest.VethOptions{})
	b := port.NewBatch(8)
	start := time.Now()
	if n, err := r.Port.ReadBatch(b); n != 0 || err != nil {
		t.Fatalf("idle ReadBatch with timeout = %d, %v; want 0, nil", n, err)
	}
	if d := time.Since(start); d < 25*time.Millisecond {
		t.Errorf("idle ReadBatch returned after %v, before the 30ms timeout", d)
	}
	// One XDP program per interface: the rig's port goes first.
	if err := r.Port.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := v.Open(r.Veth.Host, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	CloseWakesReader(t, p, TestFrame(k.PeerMAC, k.HostMAC, 1, 60))
	if err := p.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// readTest reads in a goroutine until a test frame arrives and sends the
// number of test frames and the error on the returned channel.
func readTest(p port.Port) chan readResult {
	c := make(chan readResult, 1)
	go func() {
		b := port.NewBatch(8)
		for {
			n, err := p.ReadBatch(b)
			tests := 0
			for _, f := range b.Frames[:n] {
				if IsTest(f) {
					tests++
				}
			}
			if tests > 0 || err != nil {
				c <- readResult{tests, err}
				return
			}
		}
	}()
	return c
}

type readResult struct {
	n   int
	err error
}

// While frames stream in, a reader watches the ring instead of sleeping
// (a sleep shorter than BusyPoll sets it busy): it still takes a frame
// that lands meanwhile, and Close still stops it. BusyPoll is set far
// longer than the test may take, so a reader stuck in the busy-poll
// would fail it.
func busyPoll[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{BusyPoll: time.Hour}, netnstest.VethOptions{})
	for seq := range uint32(2) {
		c := readTest(r.Port)
		time.Sleep(20 * time.Millisecond) // the reader sleeps, then busy-polls
		if err := r.Peer.Send(TestFrame(k.HostMAC, k.PeerMAC, seq, 60)); err != nil {
			t.Fatal(err)
		}
		select {
		case res := <-c:
			if res.n != 1 || res.err != nil {
				t.Fatalf("read %d = %d test frames, %v; want the 1 test frame", seq, res.n, res.err)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("frame %d not taken by the reader", seq)
		}
	}
	c := readTest(r.Port)
	time.Sleep(20 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- r.Port.Close() }() // waits for the reader to leave
	select {
	case res := <-c:
		if !errors.Is(res.err, port.ErrClosed) {
			t.Errorf("busy-polling ReadBatch returned %v on Close, want ErrClosed", res.err)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not stop the busy-polling ReadBatch")
	}
}

// TryReadBatch never waits, and PollFd turns readable when a frame waits.
func poller[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{}, netnstest.VethOptions{})
	pl, ok := any(r.Port).(port.Poller)
	if !ok {
		t.Fatalf("%T is not a port.Poller", r.Port)
	}
	b := port.NewBatch(8)
	if n, err := pl.TryReadBatch(b); n != 0 || err != nil {
		t.Fatalf("idle TryReadBatch = %d, %v", n, err)
	}
	if err := r.Peer.Send(TestFrame(k.HostMAC, k.PeerMAC, 7, 60)); err != nil {
		t.Fatal(err)
	}
	fds := []unix.PollFd{{Fd: int32(pl.PollFd()), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 2000); n != 1 || err != nil || fds[0].Revents&unix.POLLIN == 0 {
		t.Fatalf("poll(PollFd) = %d, %v, revents %#x: want readable with a frame waiting", n, err, fds[0].Revents)
	}
	n, err := pl.TryReadBatch(b)
	if n != 1 || err != nil || !IsTest(b.Frames[0]) {
		t.Fatalf("TryReadBatch = %d, %v", n, err)
	}
}

// An open port makes the interface promiscuous (frames to other MACs
// arrive) and Close undoes it; NoPromisc leaves the interface alone.
func promiscuous[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	ns := netnstest.NewNS(t)
	vt := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{HostMAC: k.HostMAC, PeerMAC: k.PeerMAC})
	WaitUp(t, vt)
	promisc := func() int {
		l, err := netnstest.LinkShow(nil, vt.Host)
		if err != nil {
			t.Fatal(err)
		}
		return l.Promiscuity
	}
	before := promisc()
	p, err := v.Open(vt.Host, Opts{ReadTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := promisc(); got != before+1 {
		t.Errorf("promiscuity with port open = %d, want %d", got, before+1)
	}
	foreign := net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x99, 0x99}
	f := TestFrame(foreign, k.PeerMAC, 1, 64)
	if err := netnstest.NewRawSocket(t, ns, vt.Peer).Send(f); err != nil {
		t.Fatal(err)
	}
	got, _ := ReadFrames(t, p, 1, 3*time.Second)
	if len(got) != 1 || !bytes.Equal(got[0], f) {
		t.Errorf("frame to foreign MAC %s not received intact: %x", foreign, got)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := promisc(); got != before {
		t.Errorf("promiscuity after close = %d, want %d", got, before)
	}
	p2 := OpenIn(t, nil, func() (P, error) { return v.Open(vt.Host, Opts{NoPromisc: true}) })
	if got := promisc(); got != before {
		t.Errorf("promiscuity with NoPromisc = %d, want %d", got, before)
	}
	if err := p2.Close(); err != nil {
		t.Fatal(err)
	}
}

// Name, Ifindex, MTU and HardwareAddr are the interface's.
func portMetadata[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{}, netnstest.VethOptions{MTU: 1400})
	l, err := netnstest.LinkShow(nil, r.Veth.Host)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Port
	if p.Name() != r.Veth.Host || p.Ifindex() != l.Ifindex || p.MTU() != 1400 || p.HardwareAddr().String() != k.HostMAC.String() {
		t.Errorf("port %s ifindex %d mtu %d mac %s; link %+v", p.Name(), p.Ifindex(), p.MTU(), p.HardwareAddr(), l)
	}
}

// When the interface is deleted and created again under the port (same
// name, new ifindex), the port re-attaches by itself: frames arrive and
// leave again, and Ifindex is the new interface's.
func reattach[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{ReadTimeout: 20 * time.Millisecond}, netnstest.VethOptions{})
	vo := netnstest.VethOptions{HostMAC: k.HostMAC, PeerMAC: k.PeerMAC}
	peer := r.Peer
	for round := range 2 {
		oldIndex := r.Port.Ifindex()
		r.Veth.Recreate(t, vo)
		WaitUp(t, r.Veth)
		peer = netnstest.NewRawSocket(t, r.NS, r.Veth.Peer)
		f := TestFrame(k.HostMAC, k.PeerMAC, uint32(round), 60)
		b := port.NewBatch(8)
		var readErrs []string
		for deadline := time.Now().Add(5 * time.Second); ; {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no frame within 5s of the interface's return (read errors: %v)", round, readErrs)
			}
			if err := peer.Send(f); err != nil {
				t.Fatal(err)
			}
			n, err := r.Port.ReadBatch(b)
			if errors.Is(err, port.ErrClosed) {
				t.Fatal(err)
			}
			if err != nil && len(readErrs) < 4 { // the old socket's ENETDOWN, ENXIO...
				readErrs = append(readErrs, err.Error())
			}
			if n > 0 && IsTest(b.Frames[0]) {
				if !bytes.Equal(b.Frames[0], f) {
					t.Fatalf("round %d: got %x, want %x", round, b.Frames[0], f)
				}
				break
			}
		}
		l, err := netnstest.LinkShow(nil, r.Veth.Host)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Port.Ifindex(); got == oldIndex || got != l.Ifindex {
			t.Errorf("round %d: port bound to ifindex %d (before %d), interface has %d", round, got, oldIndex, l.Ifindex)
		}
		out := TestFrame(k.PeerMAC, k.HostMAC, 100+uint32(round), 60)
		if n, err := r.Port.WriteBatch([][]byte{out}); n != 1 || err != nil {
			t.Fatalf("round %d: WriteBatch = %d, %v", round, n, err)
		}
		if got, err := peer.RecvMatch(2*time.Second, IsTest); err != nil || !bytes.Equal(got, out) {
			t.Fatalf("round %d: peer got %x, %v; want %x", round, got, err, out)
		}
	}
}

// The frame-ownership rule under traffic: Close from another goroutine
// while the reader holds the frames of a read frees the sockets at once
// but leaves the frames readable (their memory mapped) until the reader
// gives them back; the next read fails with ErrClosed.
func closeWhileLent[P port.Port](t *testing.T, k *Kind[P], v Variant[P]) {
	r := k.rig(t, v, Opts{ReadTimeout: 20 * time.Millisecond}, netnstest.VethOptions{})
	stop := make(chan struct{})
	flood := make(chan error, 1)
	go func() { // the peer sends until the test is done
		f := TestFrame(k.HostMAC, k.PeerMAC, 1, 1000)
		for {
			select {
			case <-stop:
				flood <- nil
				return
			default:
			}
			if err := r.Peer.Send(f); err != nil && !errors.Is(err, unix.ENOBUFS) {
				flood <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-flood; err != nil {
			t.Errorf("peer: %v", err)
		}
	}()
	b := port.NewBatch(32)
	var held [][]byte
	for deadline := time.Now().Add(3 * time.Second); len(held) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no test frame within 3s")
		}
		n, err := r.Port.ReadBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range b.Frames[:n] {
			if IsTest(f) {
				held = append(held, f) // pointing into the port's memory
			}
		}
	}
	if err := r.Port.Close(); err != nil {
		t.Fatal(err)
	}
	want := TestFrame(k.HostMAC, k.PeerMAC, 1, 1000)
	for i, f := range held { // a fault here: the memory went with Close
		if !bytes.Equal(f, want) {
			t.Fatalf("held frame %d changed after Close: %x", i, f)
		}
	}
	r.Port.Release()
	if n, err := r.Port.ReadBatch(b); n != 0 || !errors.Is(err, port.ErrClosed) {
		t.Errorf("ReadBatch after Close and Release = %d, %v; want ErrClosed", n, err)
	}
}

// OpenError is a configuration a kind must refuse on Open.
type OpenError[C any] struct {
	Name, Ifname string
	Cfg          C
	Want         string // in the error
}

// OpenErrors checks that open fails with an error containing Want for
// each case, and for the refusals every kind shares: an interface that
// does not exist and a name longer than IFNAMSIZ.
func OpenErrors[C any, P port.Port](t *testing.T, open func(ifname string, cfg C) (P, error), cases []OpenError[C]) {
	netnstest.RequireRoot(t)
	var zero C
	common := []OpenError[C]{
		{"no such interface", "gvnone0", zero, "SIOCGIFINDEX gvnone0"},
		{"name too long", "averyveryverylongname", zero, "must be 1 to 15 bytes"},
	}
	for _, tc := range append(common, cases...) {
		t.Run(tc.Name, func(t *testing.T) {
			p, err := open(tc.Ifname, tc.Cfg)
			if err == nil {
				p.Close()
				t.Fatalf("Open succeeded, want error containing %q", tc.Want)
			}
			if !strings.Contains(err.Error(), tc.Want) {
				t.Errorf("error %q does not contain %q", err, tc.Want)
			}
		})
	}
}
