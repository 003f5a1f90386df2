package offload

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/flowtable"
)

// TestPinnedRestart: a retained Kernel's entry keeps forwarding after the
// Kernel and its port link are closed (the process gone); a new Manager
// on the same directory adopts the entry, moves the pinned link to its
// own program in place, hands the entry's connection to conntrack and
// removes the entry the new pipeline does not produce; closed without
// retaining, it leaves nothing pinned and no program attached. Maps of
// another layout are unpinned at load.
func TestPinnedRestart(t *testing.T) {
	netnstest.RequireRoot(t)
	p := newPair(t)
	root := netnstest.MountBPFFS(t)
	dir := PinDir(filepath.Join(root, "govs"), "/run/govs-test", "br0")
	if err := os.MkdirAll(filepath.Join(dir, "vold"), 0o700); err != nil {
		t.Fatal(err)
	}
	old, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Pin(filepath.Join(dir, "vold", "flows")); err != nil {
		t.Fatal(err)
	}
	old.Close()

	k, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if k.Adopted() {
		t.Fatal("a fresh directory's maps reported adopted")
	}
	if _, err := os.Stat(filepath.Join(dir, "vold")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("maps of another layout still pinned: %v", err)
	}
	var l interface{ Close() error }
	if err := p.sw.Do(func() (err error) { l, err = k.Attach(p.ifA, p.va.Host); return err }); err != nil {
		t.Fatal(err)
	}
	fk := p.flowKey(4000, 9999)
	conn := conntrack.Entry{
		Orig:  conntrack.Tuple{Src: p.ipA, Dst: p.ipB, Proto: 17, SrcPort: 4000, DstPort: 9999},
		Reply: conntrack.Tuple{Src: p.ipB, Dst: p.ipA, Proto: 17, SrcPort: 9999, DstPort: 4000},
		Zone:  7, Mark: 0x20,
	}
	key, _ := fk.kernel()
	if err := k.install(&key, Action{OutIfindex: uint32(p.ifB), Flags: ActSetEth, EthSrc: [6]byte(p.macHB), EthDst: [6]byte(p.macB)}, k.gen, &conn); err != nil {
		t.Fatal(err)
	}
	k.Retain()
	if err := k.Hold(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	k.Close()

	// Nobody holds the program or maps but the pins: the kernel forwards
	// every datagram, with no keepalive handed to (absent) userspace.
	srv := udpListen(t, p.b, "10.77.0.2:9999")
	cli := udpListen(t, p.a, "10.77.0.1:4000")
	sendSpread(t, cli, 30, 1500*time.Millisecond)
	if got := recvCount(srv, 300*time.Millisecond); got != 30 {
		t.Fatalf("B got %d of 30 datagrams sent over 1.5s with the daemon gone, want all (no keepalives)", got)
	}

	m, err := NewManager(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Adopting() || m.Stats().Entries != 1 {
		t.Fatalf("adopting %v with %d entries, want the pinned entry adopted", m.Adopting(), m.Stats().Entries)
	}
	before := pinnedLinkProgram(t, filepath.Join(dir, "links", p.va.Host))
	if err := p.sw.Do(func() (err error) { l, err = m.Attach(p.ifA, p.va.Host); return err }); err != nil {
		t.Fatal(err)
	}
	if after := pinnedLinkProgram(t, filepath.Join(dir, "links", p.va.Host)); after == before {
		t.Errorf("the pinned link still runs program %d: want the new Kernel's", before)
	}
	// Pipeline changes while adopting leave the entry alone.
	m.Invalidate(5)
	sendSpread(t, cli, 30, 1500*time.Millisecond)
	if got := recvCount(srv, 300*time.Millisecond); got != 30 {
		t.Fatalf("B got %d of 30 datagrams while adopting, want all (no keepalives)", got)
	}
	var adopted []conntrack.Entry
	kept, removed := m.Revalidate(func(e conntrack.Entry) error { adopted = append(adopted, e); return nil },
		func(FlowKey) (start, final flowtable.Key, hits []*flowcache.Entry, ok bool) {
			return start, final, nil, true
		},
		func(uint32) (int, bool) { return 0, false })
	if kept != 0 || removed != 1 {
		t.Errorf("Revalidate kept %d, removed %d; want 0, 1 (the replay decides nothing offloadable)", kept, removed)
	}
	if len(adopted) != 1 || adopted[0] != conn {
		t.Errorf("conntrack adopted %+v, want %+v", adopted, conn)
	}
	sendUDP(t, cli, 3)
	if got := recvCount(srv, 300*time.Millisecond); got != 0 {
		t.Errorf("B got %d datagrams after the entry was removed", got)
	}
	// Revalidated, the links run the Kernel's own program (keepalives on).
	info, err := m.k.objs.GovsOffload.Info()
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := info.ID(); pinnedLinkProgram(t, filepath.Join(dir, "links", p.va.Host)) != id {
		t.Errorf("after Revalidate the link runs program %d, want the Kernel's %d", pinnedLinkProgram(t, filepath.Join(dir, "links", p.va.Host)), id)
	}

	l.Close()
	m.Close()
	// The pin root stays (as iproute2's /sys/fs/bpf/tc), empty.
	if es, _ := os.ReadDir(filepath.Join(root, "govs")); len(es) != 0 {
		t.Errorf("left in bpffs after a close without retaining: %v", es)
	}
	// The kernel frees the link (and detaches the program) soon after
	// the last reference goes.
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, _ := netnstest.Run("ip", "-n", p.sw.Name, "link", "show", "dev", p.va.Host)
		if !strings.Contains(out, "xdp") {
			break
		}
		if time.Now().After(end) {
			t.Errorf("%s still has an XDP program", p.va.Host)
			break
		}
	}
}

// sendSpread sends n datagrams from c to B evenly over d.
func sendSpread(t *testing.T, c *net.UDPConn, n int, d time.Duration) {
	t.Helper()
	for i := 0; i < n; i++ {
		sendUDP(t, c, 1)
		time.Sleep(d / time.Duration(n))
	}
}

// sendUDP sends n datagrams from c to B's 10.77.0.2:9999.
func sendUDP(t *testing.T, c *net.UDPConn, n int) {
	t.Helper()
	to := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.77.0.2:9999"))
	for i := 0; i < n; i++ {
		if _, err := c.WriteToUDP([]byte("pinned"), to); err != nil {
			t.Fatal(err)
		}
	}
}

func pinnedLinkProgram(t *testing.T, path string) ebpf.ProgramID {
	t.Helper()
	l, err := link.LoadPinnedLink(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		t.Fatal(err)
	}
	return info.Program
}

// TestPinIncompatibleMaps: maps pinned under the current layout's name
// that the kernel finds incompatible (here a hand-made array) are
// replaced, not adopted, and do not stop the load.
func TestPinIncompatibleMaps(t *testing.T) {
	netnstest.RequireRoot(t)
	dir := filepath.Join(netnstest.MountBPFFS(t), "govs", "_run", "br0")
	spec, err := loadOffload()
	if err != nil {
		t.Fatal(err)
	}
	vdir := filepath.Join(dir, layoutVersion(spec))
	if err := os.MkdirAll(vdir, 0o700); err != nil {
		t.Fatal(err)
	}
	bad, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Pin(filepath.Join(vdir, offloadMapFlows)); err != nil {
		t.Fatal(err)
	}
	bad.Close()
	k, err := Load(dir)
	if err != nil {
		t.Fatalf("load over incompatible pinned maps: %v", err)
	}
	defer k.Close()
	if k.Adopted() || k.objs.Flows.Type() != ebpf.Hash {
		t.Errorf("adopted %v, flows map %v: want fresh maps of the program's own", k.Adopted(), k.objs.Flows.Type())
	}
}

// TestRevalidateRemovesGeneve: a restart cannot replay a Geneve
// decapsulation entry (the replay has no tunnel metadata), so Revalidate
// removes it from the kernel without replaying it; its connection is
// still adopted, so the flow's next packet through userspace is +est.
func TestRevalidateRemovesGeneve(t *testing.T) {
	netnstest.RequireRoot(t)
	dir := PinDir(filepath.Join(netnstest.MountBPFFS(t), "govs"), "/run/govs-test", "br-gnv")
	k, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, b := netip.MustParseAddr("10.78.0.1"), netip.MustParseAddr("10.78.0.2")
	conn := conntrack.Entry{
		Orig:  conntrack.Tuple{Src: a, Dst: b, Proto: 17, SrcPort: 4000, DstPort: 9999},
		Reply: conntrack.Tuple{Src: b, Dst: a, Proto: 17, SrcPort: 9999, DstPort: 4000},
		Zone:  1,
	}
	plain := FlowKey{Ifindex: 7, Src: a, Dst: b, Proto: 17, SrcPort: 4000, DstPort: 9999, TTL: 64}
	decap := plain
	decap.Ifindex = 8
	decap.Tun = TunKey{Src: [4]byte{10, 79, 0, 1}, Dst: [4]byte{10, 79, 0, 2}, VNI: 5}
	for _, fk := range []FlowKey{plain, decap} {
		key, err := fk.kernel()
		if err != nil {
			t.Fatal(err)
		}
		act := Action{OutIfindex: 9}
		if fk.Tun.Dst != [4]byte{} {
			act.Flags |= ActDecap
		}
		if err := k.install(&key, act, k.gen, &conn); err != nil {
			t.Fatal(err)
		}
	}
	k.Retain()
	k.Close()

	m, err := NewManager(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.Adopting() || m.Stats().Entries != 2 {
		t.Fatalf("adopting %v with %d entries, want both pinned entries", m.Adopting(), m.Stats().Entries)
	}
	var adopted int
	var replayed []uint32
	kept, removed := m.Revalidate(func(conntrack.Entry) error { adopted++; return nil },
		func(fk FlowKey) (start, final flowtable.Key, hits []*flowcache.Entry, ok bool) {
			replayed = append(replayed, fk.Ifindex)
			return start, final, nil, true
		},
		func(uint32) (int, bool) { return 9, true })
	if kept != 0 || removed != 2 {
		t.Errorf("Revalidate kept %d, removed %d; want 0, 2", kept, removed)
	}
	if len(replayed) != 1 || replayed[0] != plain.Ifindex {
		t.Errorf("replayed the entries of ifindex %v, want only the plain one's (%d)", replayed, plain.Ifindex)
	}
	if adopted != 2 {
		t.Errorf("conntrack adopted %d connections, want both entries' (2)", adopted)
	}
	if st := m.Stats(); st.Entries != 0 {
		t.Errorf("%d entries left after the revalidation", st.Entries)
	}
	var key offloadFlowKey
	var v offloadFlowAction
	if m.k.objs.Flows.Iterate().Next(&key, &v) {
		t.Errorf("kernel map still has the entry of ifindex %d", key.Ifindex)
	}
}
