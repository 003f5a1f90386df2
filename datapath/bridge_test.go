package datapath

import (
	"bytes"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// Worker 1 of the seed (see internal/seeds/testdata/worker1.flows).
const (
	frontendMAC = "be:2c:bf:e4:ec:c5"
	backend1MAC = "f2:32:d8:07:e2:a6"
	gw1MAC      = "4e:99:08:c1:53:be"
	globalMAC   = "aa:bb:cc:dd:ee:ff"

	portTun      = 1
	portGW       = 2
	portBackend1 = 48
	portFrontend = 49
)

const waitTimeout = 2 * time.Second

// frameOf builds a frame from a packet description in match syntax.
func frameOf(t testing.TB, spec string) []byte {
	t.Helper()
	k, err := flowtext.ParsePacket(spec, nil)
	if err != nil {
		t.Fatalf("packet %q: %v", spec, err)
	}
	return flowtable.BuildFrame(&k, 0)
}

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// newPipeline returns a pipeline loaded with flows, with its own
// conntrack if ct.
func newPipeline(t testing.TB, flows string, ct bool) *flowtable.Pipeline {
	t.Helper()
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, flows, nil); err != nil {
		t.Fatalf("load flows: %v", err)
	}
	if ct {
		p.Conntrack = ctadapter.New()
	}
	return p
}

// newBridge returns a bridge over a pipeline loaded with flows, closed in
// t.Cleanup.
func newBridge(t testing.TB, flows string, ct bool) *Bridge {
	t.Helper()
	b := NewBridge("br-test", 1, newPipeline(t, flows, ct), nil)
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close bridge: %v", err)
		}
	})
	return b
}

// addMemPorts attaches a recording MemPort per number.
func addMemPorts(t testing.TB, b *Bridge, cfg MemPortConfig, nums ...uint32) map[uint32]*MemPort {
	t.Helper()
	ps := map[uint32]*MemPort{}
	for _, n := range nums {
		c := cfg
		c.Name = "mem" + strconv.Itoa(int(n))
		c.Record = true
		mp := NewMemPort(c)
		got, err := b.AddPort(n, mp, KindMemory)
		if err != nil {
			t.Fatalf("AddPort(%d): %v", n, err)
		}
		if got != n {
			t.Fatalf("AddPort(%d) = %d", n, got)
		}
		ps[n] = mp
	}
	return ps
}

// inject sends frames into port in and waits until the bridge has
// processed them completely (transmissions included).
func inject(t testing.TB, b *Bridge, ps map[uint32]*MemPort, in uint32, frames ...[]byte) {
	t.Helper()
	bp := b.ports.Load().byNo[in]
	want := bp.processed.Load() + uint64(len(frames))
	if err := ps[in].Inject(frames...); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for bp.processed.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("port %d: %d of %d frames processed", in, bp.processed.Load(), want)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// sent returns what each port transmitted since the last call.
func sent(ps map[uint32]*MemPort) map[uint32][][]byte {
	out := map[uint32][][]byte{}
	for n, p := range ps {
		if fs := p.Sent(); len(fs) > 0 {
			out[n] = fs
		}
	}
	return out
}

// checkOutputs asserts that exactly want came out, port by port.
func checkOutputs(t *testing.T, got, want map[uint32][][]byte) {
	t.Helper()
	for n, fs := range want {
		g := got[n]
		if len(g) != len(fs) {
			t.Errorf("port %d sent %d frames, want %d", n, len(g), len(fs))
			continue
		}
		for i := range fs {
			if !bytes.Equal(g[i], fs[i]) {
				t.Errorf("port %d frame %d:\n got %x\nwant %x", n, i, g[i], fs[i])
			}
		}
	}
	for n, g := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("port %d sent %d unexpected frames", n, len(g))
		}
	}
}

// The seed packet walks of worker 1, through the real loop: every frame
// must leave on the right port with exactly the bytes the flows produce.
func TestSeedWorker1Forwarding(t *testing.T) {
	b := newBridge(t, seeds.Worker1, true)
	ps := addMemPorts(t, b, MemPortConfig{}, portTun, portGW, portBackend1, portFrontend)
	tcp := func(in int, src, dst, nwSrc, nwDst string, ttl, sport, dport int, extra string) string {
		s := "in_port=" + strconv.Itoa(in) + ",tcp,dl_src=" + src + ",dl_dst=" + dst + ",nw_src=" + nwSrc + ",nw_dst=" + nwDst +
			",nw_ttl=" + strconv.Itoa(ttl) + ",tp_src=" + strconv.Itoa(sport) + ",tp_dst=" + strconv.Itoa(dport)
		if extra != "" {
			s += "," + extra
		}
		return s
	}
	cases := []struct {
		name string
		in   uint32
		pkt  string
		out  uint32
		want string // the frame that must come out (no in_port)
	}{{
		// Seed 001 §8: frontend -> backendsvc:80 goes to the gateway
		// (kube-proxy DNATs it in the host).
		name: "frontend to service via gateway",
		in:   portFrontend,
		pkt:  tcp(49, frontendMAC, gw1MAC, "10.222.1.48", "10.104.65.133", 64, 56670, 80, ""),
		out:  portGW,
		want: tcp(0, frontendMAC, gw1MAC, "10.222.1.48", "10.104.65.133", 64, 56670, 80, ""),
	}, {
		// Seed 001 §9: the DNATed packet back from the gateway to
		// backend2 on worker 2: dec_ttl, tunnel port.
		name: "gateway to remote backend2 via tunnel",
		in:   portGW,
		pkt:  tcp(2, gw1MAC, globalMAC, "10.222.1.48", "10.222.2.34", 63, 46490, 80, ""),
		out:  portTun,
		want: tcp(0, gw1MAC, globalMAC, "10.222.1.48", "10.222.2.34", 62, 46490, 80, ""),
	}, {
		// Pod to pod on the node: allowed by conj 1 (egress) and conj 3
		// (ingress), L2 forwarded to backend1 unchanged.
		name: "frontend to backend1 direct",
		in:   portFrontend,
		pkt:  tcp(49, frontendMAC, backend1MAC, "10.222.1.48", "10.222.1.47", 64, 40000, 80, "tcp_flags=syn"),
		out:  portBackend1,
		want: tcp(0, frontendMAC, backend1MAC, "10.222.1.48", "10.222.1.47", 64, 40000, 80, "tcp_flags=syn"),
	}, {
		// Its reply is +est+rpl and goes back to the frontend.
		name: "backend1 reply to frontend",
		in:   portBackend1,
		pkt:  tcp(48, backend1MAC, frontendMAC, "10.222.1.47", "10.222.1.48", 64, 80, 40000, "tcp_flags=syn|ack"),
		out:  portFrontend,
		want: tcp(0, backend1MAC, frontendMAC, "10.222.1.47", "10.222.1.48", 64, 80, 40000, "tcp_flags=syn|ack"),
	}, {
		// Seed 000: the ARP responder answers out of IN_PORT.
		name: "ARP responder",
		in:   portGW,
		pkt: "in_port=2,arp,dl_src=" + gw1MAC + ",dl_dst=ff:ff:ff:ff:ff:ff,arp_op=1,arp_spa=10.222.1.1,arp_tpa=10.222.2.1," +
			"arp_sha=" + gw1MAC + ",arp_tha=00:00:00:00:00:00",
		out: portGW,
		want: "arp,dl_src=" + globalMAC + ",dl_dst=" + gw1MAC + ",arp_op=2,arp_spa=10.222.2.1,arp_tpa=10.222.1.1," +
			"arp_sha=" + globalMAC + ",arp_tha=" + gw1MAC,
	}, {
		// Spoofguard drops a wrong source IP from the frontend port.
		name: "spoofed source dropped",
		in:   portFrontend,
		pkt:  tcp(49, frontendMAC, gw1MAC, "10.222.1.99", "10.222.1.47", 64, 1000, 80, ""),
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inject(t, b, ps, c.in, frameOf(t, c.pkt))
			want := map[uint32][][]byte{}
			if c.want != "" {
				want[c.out] = [][]byte{frameOf(t, c.want)}
			}
			checkOutputs(t, sent(ps), want)
		})
	}
}

// NORMAL across three ports: unknown destinations flood, learned ones go
// to their port only, broadcasts flood.
func TestNormalLearning(t *testing.T) {
	b := newBridge(t, "actions=NORMAL", false)
	ps := addMemPorts(t, b, MemPortConfig{}, 1, 2, 3)
	const (
		macA = "02:00:00:00:00:0a"
		macB = "02:00:00:00:00:0b"
		macC = "02:00:00:00:00:0c"
	)
	udp := func(src, dst string) []byte {
		return frameOf(t, "udp,dl_src="+src+",dl_dst="+dst+",nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2")
	}
	steps := []struct {
		name  string
		in    uint32
		frame []byte
		out   []uint32
	}{
		{"A to unknown B floods", 1, udp(macA, macB), []uint32{2, 3}},
		{"B to learned A", 2, udp(macB, macA), []uint32{1}},
		{"A to learned B", 1, udp(macA, macB), []uint32{2}},
		{"C broadcast floods", 3, udp(macC, "ff:ff:ff:ff:ff:ff"), []uint32{1, 2}},
		{"A to learned C", 1, udp(macA, macC), []uint32{3}},
		{"A moves to port 3", 3, udp(macA, macB), []uint32{2}},
		{"B to moved A", 2, udp(macB, macA), []uint32{3}},
	}
	for _, s := range steps {
		inject(t, b, ps, s.in, s.frame)
		want := map[uint32][][]byte{}
		for _, o := range s.out {
			want[o] = [][]byte{s.frame}
		}
		t.Run(s.name, func(t *testing.T) { checkOutputs(t, sent(ps), want) })
	}
}

type packetIn struct {
	frame  []byte
	inPort uint32
	pi     flowtable.PacketIn
	key    flowtable.Key
}

func TestPacketIn(t *testing.T) {
	b := newBridge(t, "in_port=1,actions=CONTROLLER:128\nin_port=2,actions=load:0x7->NXM_NX_REG3[],controller(userdata=01.02)", false)
	pins := make(chan packetIn, 16)
	b.OnPacketIn = func(pkt []byte, inPort uint32, pi *flowtable.PacketIn, key *flowtable.Key) {
		pins <- packetIn{pkt, inPort, *pi, *key}
	}
	ps := addMemPorts(t, b, MemPortConfig{}, 1, 2)
	f := frameOf(t, "udp,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=5,tp_dst=6")
	inject(t, b, ps, 1, f)
	inject(t, b, ps, 2, f)
	for _, want := range []struct {
		in       uint32
		maxLen   uint16
		reg3     uint32
		userData []byte
	}{{1, 128, 0, nil}, {2, 0xffff, 7, []byte{1, 2}}} {
		select {
		case got := <-pins:
			if !bytes.Equal(got.frame, f) {
				t.Errorf("packet-in frame %x, want %x", got.frame, f)
			}
			if got.inPort != want.in || got.key.InPort() != want.in {
				t.Errorf("packet-in in_port %d (key %d), want %d", got.inPort, got.key.InPort(), want.in)
			}
			if got.pi.Reason != flowtable.ReasonAction || got.pi.MaxLen != want.maxLen {
				t.Errorf("packet-in reason %d max_len %d, want %d %d", got.pi.Reason, got.pi.MaxLen, flowtable.ReasonAction, want.maxLen)
			}
			if got.key.Reg(3) != want.reg3 || !bytes.Equal(got.pi.UserData, want.userData) {
				t.Errorf("packet-in reg3 %d userdata %x, want %d %x", got.key.Reg(3), got.pi.UserData, want.reg3, want.userData)
			}
		case <-time.After(waitTimeout):
			t.Fatalf("no packet-in from port %d", want.in)
		}
	}
	// OFPPC_NO_PACKET_IN on port 1 silences it.
	if err := b.SetPortConfig(1, PortConfigNoPacketIn, PortConfigNoPacketIn); err != nil {
		t.Fatal(err)
	}
	inject(t, b, ps, 1, f)
	select {
	case got := <-pins:
		t.Errorf("packet-in from port %d despite no-packet-in", got.inPort)
	default:
	}
	checkOutputs(t, sent(ps), nil)
}

func parseActions(t *testing.T, s string) []flowtable.Action {
	t.Helper()
	fm, err := flowtext.ParseFlow("actions="+s, nil)
	if err != nil {
		t.Fatalf("actions %q: %v", s, err)
	}
	return fm.Flow.Actions
}

func TestPacketOut(t *testing.T) {
	b := newBridge(t, strings.Join([]string{
		"table=0,in_port=1,actions=output:3",
		"table=0,in_port=CONTROLLER,actions=mod_dl_src:02:00:00:00:00:99,output:2",
		"table=5,in_port=1,actions=output:2",
		"table=5,in_port=2,actions=output:3",
	}, "\n"), false)
	pins := make(chan packetIn, 4)
	b.OnPacketIn = func(pkt []byte, inPort uint32, pi *flowtable.PacketIn, key *flowtable.Key) {
		pins <- packetIn{pkt, inPort, *pi, *key}
	}
	ps := addMemPorts(t, b, MemPortConfig{}, 1, 2, 3)
	f := frameOf(t, "udp,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=5,tp_dst=6")
	rewritten := frameOf(t, "udp,dl_src=02:00:00:00:00:99,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=5,tp_dst=6")
	cases := []struct {
		name    string
		in      uint32
		actions string
		want    map[uint32][][]byte
	}{
		{"output to a port", flowtable.PortController, "output:1", map[uint32][][]byte{1: {f}}},
		{"resubmit", 1, "resubmit(,5)", map[uint32][][]byte{2: {f}}},
		{"resubmit with in_port", 1, "resubmit(2,5)", map[uint32][][]byte{3: {f}}},
		{"TABLE from port 1", 1, "output:TABLE", map[uint32][][]byte{3: {f}}},
		{"TABLE from CONTROLLER", flowtable.PortController, "output:TABLE", map[uint32][][]byte{2: {rewritten}}},
		{"IN_PORT and two ports", 2, "IN_PORT,output:3,output:1", map[uint32][][]byte{1: {f}, 2: {f}, 3: {f}}},
		{"FLOOD", 1, "FLOOD", map[uint32][][]byte{2: {f}, 3: {f}}},
		{"set field then output", flowtable.PortNone, "mod_dl_src:02:00:00:00:00:99,output:2", map[uint32][][]byte{2: {rewritten}}},
		{"drop", 1, "drop", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := b.PacketOut(f, c.in, parseActions(t, c.actions)); err != nil {
				t.Fatal(err)
			}
			checkOutputs(t, sent(ps), c.want)
		})
	}
	// The controller's frame is never modified.
	orig := slices.Clone(f)
	if _, err := b.PacketOut(f, 1, parseActions(t, "mod_dl_src:02:00:00:00:00:99,output:2")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f, orig) {
		t.Errorf("PacketOut modified the caller's frame")
	}
	sent(ps)
	// A packet-out can raise a packet-in.
	if _, err := b.PacketOut(f, 3, parseActions(t, "CONTROLLER:64")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-pins:
		if got.inPort != 3 || got.pi.MaxLen != 64 || got.pi.Cookie != ^uint64(0) || !bytes.Equal(got.frame, f) {
			t.Errorf("packet-in from packet-out: in_port %d max_len %d cookie %#x", got.inPort, got.pi.MaxLen, got.pi.Cookie)
		}
	default:
		t.Errorf("packet-out to CONTROLLER raised no packet-in")
	}
	if _, err := b.PacketOut(f[:10], 1, parseActions(t, "output:2")); !errors.Is(err, flowtable.ErrRunt) {
		t.Errorf("runt packet-out: err = %v, want ErrRunt", err)
	}
}

// Runts and oversized frames the port passes on are dropped and counted;
// the loop keeps forwarding.
func TestBadLengthsDropped(t *testing.T) {
	b := newBridge(t, "in_port=1,actions=output:2", false)
	ps := addMemPorts(t, b, MemPortConfig{PassBadLengths: true, MTU: 1500}, 1, 2)
	good := frameOf(t, "udp,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=5,tp_dst=6")
	bad := [][]byte{nil, {}, make([]byte, 1), make([]byte, 13), make([]byte, port.MaxFrameLen(1500)+1), make([]byte, 65536)}
	inject(t, b, ps, 1, append(bad, good)...)
	checkOutputs(t, sent(ps), map[uint32][][]byte{2: {good}})
	info, ok := b.Port(1)
	if !ok {
		t.Fatal("port 1 missing")
	}
	if info.Stats.RxLengthErrors != uint64(len(bad)) {
		t.Errorf("RxLengthErrors = %d, want %d", info.Stats.RxLengthErrors, len(bad))
	}
	// Truncated inner headers are not an error: the frame goes through
	// the pipeline like OVS does with what could be parsed.
	trunc := good[:14+10]
	inject(t, b, ps, 1, trunc)
	checkOutputs(t, sent(ps), map[uint32][][]byte{2: {trunc}})
}

func TestPortsAndStatus(t *testing.T) {
	b := newBridge(t, "actions=NORMAL", false)
	type event struct {
		reason uint8
		info   PortInfo
	}
	var events []event
	b.OnPortStatus = func(reason uint8, info PortInfo) { events = append(events, event{reason, info}) }
	mk := func(name string) *MemPort {
		return NewMemPort(MemPortConfig{Name: name, MAC: mustMAC("02:00:00:00:00:01"), Record: true})
	}
	steps := []struct {
		name   string
		ofport uint32
		want   uint32
		err    error
	}{
		{"p5", 5, 5, nil},
		{"auto1", 0, 1, nil},
		{"auto2", 0, 2, nil},
		{"dup5", 5, 0, ErrPortExists},
		{"reserved", flowtable.PortFlood, 0, ErrBadPortNo},
		{"local", flowtable.PortLocal, flowtable.PortLocal, nil},
	}
	mps := map[uint32]*MemPort{}
	for _, s := range steps {
		mp := mk(s.name)
		got, err := b.AddPort(s.ofport, mp, KindMemory)
		if !errors.Is(err, s.err) || got != s.want {
			t.Errorf("AddPort(%d, %s) = %d, %v; want %d, %v", s.ofport, s.name, got, err, s.want, s.err)
		}
		if err == nil {
			mps[got] = mp
		}
	}
	if got, want := b.PortNumbers(), []uint32{1, 2, 5, flowtable.PortLocal}; !slices.Equal(got, want) {
		t.Errorf("PortNumbers = %v, want %v", got, want)
	}
	if len(events) != 4 {
		t.Fatalf("%d port-status events, want 4", len(events))
	}
	for i, want := range []struct {
		ofport uint32
		name   string
	}{{5, "p5"}, {1, "auto1"}, {2, "auto2"}, {flowtable.PortLocal, "local"}} {
		e := events[i]
		if e.reason != PortStatusAdd || e.info.OFPort != want.ofport || e.info.Name != want.name || e.info.Kind != KindMemory ||
			e.info.MAC.String() != "02:00:00:00:00:01" || e.info.MTU != 1500 {
			t.Errorf("event %d = %+v, want add of %d %s", i, e, want.ofport, want.name)
		}
	}
	// Flood reaches LOCAL too; a no-fwd port is skipped and counted.
	if err := b.SetPortConfig(2, PortConfigNoFwd|0x80000000, PortConfigNoFwd|0x80000000); err != nil {
		t.Fatal(err)
	}
	if e := events[len(events)-1]; e.reason != PortStatusModify || e.info.OFPort != 2 || e.info.Config != PortConfigNoFwd {
		t.Errorf("port-mod event %+v, want modify of 2 with config no-fwd only", e)
	}
	f := frameOf(t, "udp,dl_src=02:00:00:00:00:0a,dl_dst=ff:ff:ff:ff:ff:ff,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=5,tp_dst=6")
	inject(t, b, mps, 1, f)
	checkOutputs(t, sent(mps), map[uint32][][]byte{5: {f}, flowtable.PortLocal: {f}})
	if info, _ := b.Port(2); info.Stats.TxDropped != 1 {
		t.Errorf("no-fwd port TxDropped = %d, want 1", info.Stats.TxDropped)
	}
	// A down port neither receives nor sends.
	if err := b.SetPortConfig(5, PortConfigDown, PortConfigDown); err != nil {
		t.Fatal(err)
	}
	inject(t, b, mps, 5, f)
	checkOutputs(t, sent(mps), nil)
	if info, _ := b.Port(5); info.Stats.RxDropped != 1 {
		t.Errorf("down port RxDropped = %d, want 1", info.Stats.RxDropped)
	}
	// Unchanged config: no event.
	n := len(events)
	if err := b.SetPortConfig(5, PortConfigDown, PortConfigDown); err != nil || len(events) != n {
		t.Errorf("repeated port-mod: err %v, %d new events", err, len(events)-n)
	}
	if err := b.SetPortConfig(77, 0, PortConfigDown); !errors.Is(err, ErrNoSuchPort) {
		t.Errorf("port-mod of a missing port: %v", err)
	}

	// Delete: event, port closed, number reusable.
	if err := b.DelPort(1); err != nil {
		t.Fatal(err)
	}
	if e := events[len(events)-1]; e.reason != PortStatusDelete || e.info.OFPort != 1 {
		t.Errorf("delete event %+v", e)
	}
	if _, err := mps[1].ReadBatch(port.NewBatch(1)); !errors.Is(err, port.ErrClosed) {
		t.Errorf("deleted port still open: %v", err)
	}
	if err := b.DelPort(1); !errors.Is(err, ErrNoSuchPort) {
		t.Errorf("second delete: %v", err)
	}
	if got, want := b.PortNumbers(), []uint32{2, 5, flowtable.PortLocal}; !slices.Equal(got, want) {
		t.Errorf("PortNumbers after delete = %v, want %v", got, want)
	}
	if got, err := b.AddPort(0, mk("again"), KindMemory); err != nil || got != 1 {
		t.Errorf("AddPort after delete = %d, %v; want 1", got, err)
	}
	infos := b.Ports()
	var nums []uint32
	for _, pi := range infos {
		nums = append(nums, pi.OFPort)
	}
	if want := []uint32{1, 2, 5, flowtable.PortLocal}; !slices.Equal(nums, want) {
		t.Errorf("Ports() numbers %v, want %v", nums, want)
	}
}

func TestCloseStopsLoops(t *testing.T) {
	p := flowtable.NewPipeline()
	b := NewBridge("br-close", 1, p, nil)
	var bps []*bridgePort
	for i := 0; i < 3; i++ {
		if _, err := b.AddPort(0, NewMemPort(MemPortConfig{Name: "m"}), KindMemory); err != nil {
			t.Fatal(err)
		}
	}
	for _, bp := range b.ports.Load().byNo {
		bps = append(bps, bp)
	}
	done := make(chan error)
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Close did not return")
	}
	for _, bp := range bps {
		select {
		case <-bp.done:
		default:
			t.Errorf("port %d goroutine still running", bp.ofport)
		}
	}
	if _, err := b.AddPort(0, NewMemPort(MemPortConfig{}), KindMemory); !errors.Is(err, ErrBridgeClose) {
		t.Errorf("AddPort after Close: %v", err)
	}
	if len(b.PortNumbers()) != 0 {
		t.Errorf("ports left after Close: %v", b.PortNumbers())
	}
}

// Frames of one batch may share memory (an AF_PACKET ring block): a
// push_vlan on one must not overwrite the next.
func TestGrowingFrameKeepsBatchNeighbours(t *testing.T) {
	b := newBridge(t, "in_port=1,actions=push_vlan:0x8100,mod_vlan_vid:10,output:2", false)
	ps := addMemPorts(t, b, MemPortConfig{}, 1, 2)
	f1 := frameOf(t, "udp,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=5,tp_dst=6")
	f2 := frameOf(t, "udp,dl_src=02:00:00:00:00:03,dl_dst=02:00:00:00:00:04,nw_src=10.0.0.3,nw_dst=10.0.0.4,tp_src=7,tp_dst=8")
	block := append(slices.Clone(f1), f2...)
	frames := [][]byte{block[:len(f1)], block[len(f1):]}
	l := newLoop(b, b.ports.Load().byNo[1])
	l.process(frames)
	if !bytes.Equal(block[len(f1):], f2) {
		t.Fatalf("second frame of the block was overwritten:\n got %x\nwant %x", block[len(f1):], f2)
	}
	tagged := func(f []byte) []byte {
		return slices.Concat(f[:12], []byte{0x81, 0x00, 0x00, 0x0a}, f[12:])
	}
	checkOutputs(t, sent(ps), map[uint32][][]byte{2: {tagged(f1), tagged(f2)}})
}

// TestPortChurnReleasesTableCounters: each port's loop registers table
// counters (its cache's or its own); deleting the port gives them back, so
// add/delete rounds keep the pipeline's list from growing.
func TestPortChurnReleasesTableCounters(t *testing.T) {
	for _, noCache := range []bool{false, true} {
		b := newBridge(t, "table=0,priority=0 actions=drop", false)
		b.CacheDisabled = noCache
		p := b.Pipeline()
		base := p.NumTableCounterSets()
		for i := 0; i < 50; i++ {
			addMemPorts(t, b, MemPortConfig{}, 7)
			if err := b.DelPort(7); err != nil {
				t.Fatal(err)
			}
		}
		if n := p.NumTableCounterSets(); n != base {
			t.Errorf("cache disabled %v: %d counter sets after 50 add/delete rounds, want %d", noCache, n, base)
		}
	}
}

// An OpenFlow 1.5 packet-out's pipeline fields (registers, metadata) are
// set on the packet before its actions run, as Open vSwitch does: the
// resubmitted packet matches on them.
func TestPacketOutMetadata(t *testing.T) {
	b := newBridge(t, strings.Join([]string{
		"table=6,reg0=5,metadata=0x3,actions=output:2",
		"table=6,priority=0,actions=output:3",
	}, "\n"), false)
	ps := addMemPorts(t, b, MemPortConfig{}, 1, 2, 3)
	f := frameOf(t, "udp,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=5,tp_dst=6")
	var md flowtable.Match
	md.SetUint64(flowtable.FieldInPort, 1)
	md.SetUint64(flowtable.FieldReg[0], 5)
	md.SetUint64(flowtable.FieldMetadata, 3)
	if _, err := b.PacketOutMetadata(f, 1, &md, parseActions(t, "resubmit(,6)")); err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, sent(ps), map[uint32][][]byte{2: {f}})
	if _, err := b.PacketOut(f, 1, parseActions(t, "resubmit(,6)")); err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, sent(ps), map[uint32][][]byte{3: {f}})
}
