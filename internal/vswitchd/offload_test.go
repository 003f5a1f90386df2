package vswitchd

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/offload"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// With --offload=ebpf a bridge's system ports forward established
// connections in the kernel, and dpctl/flush-conntrack removes every
// kernel entry before the next packet (the connection is tracked anew).
func TestOffloadEBPFBridge(t *testing.T) {
	nsA, nsB := netnstest.NewNS(t), netnstest.NewNS(t)
	macA, macB := net.HardwareAddr{0x02, 0xdd, 0, 0, 0, 1}, net.HardwareAddr{0x02, 0xdd, 0, 0, 0, 2}
	va := netnstest.NewVeth(t, nil, nsA, netnstest.VethOptions{PeerAddr: "10.211.0.1/24", PeerMAC: macA})
	vb := netnstest.NewVeth(t, nil, nsB, netnstest.VethOptions{PeerAddr: "10.211.0.2/24", PeerMAC: macB})
	nsA.MustExec(t, "ip", "neigh", "replace", "10.211.0.2", "lladdr", macB.String(), "dev", va.Peer, "nud", "permanent")
	nsB.MustExec(t, "ip", "neigh", "replace", "10.211.0.1", "lladdr", macA.String(), "dev", vb.Peer, "nud", "permanent")

	d := New(t.TempDir(), nil)
	d.OpenFlow = nil
	defer d.Close()
	if err := d.SetOffload(OffloadEBPF); err != nil {
		t.Fatal(err)
	}
	br := netnstest.UniqueName("brk")
	if err := d.AddBridge(BridgeConfig{Name: br}); err != nil {
		t.Fatal(err)
	}
	for i, v := range []*netnstest.Veth{va, vb} {
		if err := d.AddPort(br, PortConfig{Name: v.Host, OFPortRequest: uint32(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	dp := d.bridges[br].dp
	flows := `table=0,ip,actions=ct(table=1,zone=3)
table=1,ct_state=+new+trk,ip,in_port=1,actions=ct(commit,zone=3),output:2
table=1,ct_state=+est+trk,ip,in_port=1,actions=output:2
table=1,ct_state=+est+trk,ip,in_port=2,actions=output:1`
	if err := flowtext.Load(dp.Pipeline(), flows, nil); err != nil {
		t.Fatal(err)
	}
	src, dst := netip.MustParseAddrPort("10.211.0.1:5100"), netip.MustParseAddrPort("10.211.0.2:9100")
	if got := netnstest.UDPPingPong(t, nsA, nsB, src, dst, 50, 64); got != 50 {
		t.Fatalf("%d/50 answers", got)
	}
	st := dp.Offload().Stats()
	if st.Entries != 2 || st.Packets < 50 {
		t.Fatalf("kernel path: %+v, want 2 entries (one per direction) and most of the 100 packets", st)
	}
	out, err := d.DumpCache([]string{br})
	if err != nil {
		t.Fatal(err)
	}
	if st.Installs != 2 || st.Deletes != 0 {
		t.Errorf("kernel path: %d installs and %d deletes, want 2 (one per direction) and 0", st.Installs, st.Deletes)
	}
	if st.Upcalls == 0 || st.UpcallsLost != 0 {
		t.Errorf("kernel path: %d upcalls, %d lost; want the packets before the installs sent up, none lost", st.Upcalls, st.UpcallsLost)
	}
	if want := fmt.Sprintf("  kernel entries: 2\n  kernel hits: %d packets, %d bytes\n  kernel installs: 2, deletes: 0\n  kernel upcalls: %d, lost: 0\n", st.Packets, st.Bytes, st.Upcalls); !strings.HasSuffix(out, want) {
		t.Errorf("dump-cache:\n%s\nwant it to end with\n%s", out, want)
	}
	if _, err := d.FlushConntrack(nil); err != nil {
		t.Fatal(err)
	}
	if st := dp.Offload().Stats(); st.Entries != 0 {
		t.Errorf("%d kernel entries after flush-conntrack, want 0", st.Entries)
	}
	if d.tracker.Count() != 0 {
		t.Fatalf("conntrack not flushed")
	}
	// The next packet goes through userspace and conntrack again: the
	// connection is new (committed) and then offloaded again.
	if got := netnstest.UDPPingPong(t, nsA, nsB, src, dst, 50, 64); got != 50 {
		t.Fatalf("after the flush: %d/50 answers", got)
	}
	if d.tracker.Count() != 1 {
		t.Errorf("%d connections after the flush and new traffic, want 1", d.tracker.Count())
	}
	if st2 := dp.Offload().Stats(); st2.Packets < st.Packets+50 {
		t.Errorf("not offloaded again after the flush: kernel packets %d -> %d", st.Packets, st2.Packets)
	}
}

// SetOffload: the modes, a bad one refused, and the change of conntrack
// (no TCP window checks with the kernel path) keeps the limits set
// before it; after the first bridge the mode no longer changes.
func TestSetOffloadModes(t *testing.T) {
	d := New(t.TempDir(), nil)
	d.OpenFlow = nil
	defer d.Close()
	if err := d.SetOffload("xdp"); err == nil || !strings.Contains(err.Error(), "want auto, ebpf or none") {
		t.Fatalf("SetOffload(xdp): %v", err)
	}
	l := DefaultLimits()
	l.ConntrackMax, l.ConntrackZoneDefault = 777, 55
	d.SetLimits(l)
	for _, tc := range []struct {
		mode string
		on   bool
	}{{OffloadAuto, true}, {OffloadNone, false}, {OffloadEBPF, true}, {"", false}} {
		if err := d.SetOffload(tc.mode); err != nil {
			t.Fatalf("SetOffload(%q): %v", tc.mode, err)
		}
		if d.offload != tc.on || d.tracker.GlobalLimit() != 777 || d.tracker.DefaultZoneLimit() != 55 {
			t.Errorf("SetOffload(%q): on %v (want %v), conntrack limits %d/%d (want 777/55)", tc.mode, d.offload, tc.on,
				d.tracker.GlobalLimit(), d.tracker.DefaultZoneLimit())
		}
	}
	if err := d.AddBridge(BridgeConfig{Name: netnstest.UniqueName("brm")}); err != nil {
		t.Fatal(err)
	}
	if err := d.SetOffload(OffloadEBPF); err == nil {
		t.Errorf("SetOffload after the first bridge: no error")
	}
}

// A port configured with no_offload (YAML) or other_config:govs-offload=
// false gets no program; changing the setting reopens the port.
func TestPortNoOffload(t *testing.T) {
	ns := netnstest.NewNS(t)
	va := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{})
	vb := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{})
	path := t.TempDir() + "/c.yaml"
	br := netnstest.UniqueName("brn")
	yaml := fmt.Sprintf("bridges:\n- name: %s\n  ports:\n  - name: %s\n  - name: %s\n    no_offload: true\n", br, va.Host, vb.Host)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Bridges[0].Ports[1]; !p.NoOffload {
		t.Fatalf("no_offload not read: %+v", p)
	}
	if samePort(c.Bridges[0].Ports[1], PortConfig{Name: vb.Host}) {
		t.Errorf("samePort ignores no_offload: the port would keep its program")
	}
	d := New(t.TempDir(), nil)
	d.OpenFlow = nil
	defer d.Close()
	if err := d.SetOffload(OffloadAuto); err != nil {
		t.Fatal(err)
	}
	for name, st := range d.Reconcile(State{Bridges: c.Bridges}).Ports {
		if st.Err != nil {
			t.Fatalf("port %s: %v", name, st.Err)
		}
	}
	if !hasKernelProg(t, va.Host) || hasKernelProg(t, vb.Host) {
		t.Errorf("offload program on %s %v (want true), on %s (no_offload) %v (want false)", va.Host, hasKernelProg(t, va.Host), vb.Host, hasKernelProg(t, vb.Host))
	}
}

// hasKernelProg tells whether dev carries the kernel path's program: on
// a veth TCX ingress, elsewhere XDP.
func hasKernelProg(t *testing.T, dev string) bool {
	t.Helper()
	if strings.Contains(netnstest.MustRun(t, "ip", "link", "show", "dev", dev), "prog/xdp") {
		return true
	}
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	r, err := link.QueryPrograms(link.QueryOptions{Target: ifi.Index, Attach: ebpf.AttachTCXIngress})
	if err != nil {
		t.Fatalf("TCX programs of %s: %v", dev, err)
	}
	return len(r.Programs) > 0
}

// TestOffloadPinOwnership: with a pin root, a daemon whose stop retains
// its kernel state leaves the programs attached and the pins in place; the
// next daemon removes what its configuration no longer owns (a port
// deleted meanwhile) and keeps the rest; one without the kernel path
// removes every pin of its rundir; a stop that does not retain (exit
// --cleanup, the default) leaves nothing.
func TestOffloadPinOwnership(t *testing.T) {
	ns := netnstest.NewNS(t)
	va := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{})
	vb := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{})
	root := filepath.Join(netnstest.MountBPFFS(t), "govs")
	rundir := t.TempDir()
	br := netnstest.UniqueName("brp")
	dir := offload.PinDir(root, rundir, br)
	state := func(ports ...string) State {
		b := BridgeConfig{Name: br}
		for _, p := range ports {
			b.Ports = append(b.Ports, PortConfig{Name: p})
		}
		return State{Bridges: []BridgeConfig{b}}
	}
	start := func(mode string, want State) *Daemon {
		t.Helper()
		d := New(rundir, nil)
		d.OpenFlow = nil
		d.PinRoot = root
		if err := d.SetOffload(mode); err != nil {
			t.Fatal(err)
		}
		for name, st := range d.Reconcile(want).Ports {
			if st.Err != nil {
				t.Fatalf("port %s: %v", name, st.Err)
			}
		}
		return d
	}
	// A program goes once the kernel frees its link, which may lag the
	// unpin: wait a little for the answer expected.
	hasProg := func(dev string, want bool) bool {
		for end := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			got := hasKernelProg(t, dev)
			if got == want || time.Now().After(end) {
				return got
			}
		}
	}
	pinned := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}

	d := start(OffloadEBPF, state(va.Host, vb.Host))
	d.SetRetainKernelState(true)
	d.Close()
	if !hasProg(va.Host, true) || !hasProg(vb.Host, true) || !pinned("links/"+va.Host) || !pinned("links/"+vb.Host) {
		t.Fatalf("after a retaining stop: link pins %v %v; want the programs and pins kept",
			pinned("links/"+va.Host), pinned("links/"+vb.Host))
	}

	d = start(OffloadEBPF, state(va.Host))
	if !hasProg(va.Host, true) || !pinned("links/"+va.Host) {
		t.Errorf("the kept port lost its program or pin")
	}
	if hasProg(vb.Host, false) || pinned("links/"+vb.Host) {
		t.Errorf("the port deleted while down keeps its program or its pin (%v)", pinned("links/"+vb.Host))
	}
	d.SetRetainKernelState(true)
	d.Close()

	d = start(OffloadNone, state(va.Host))
	if hasProg(va.Host, false) {
		t.Errorf("with the kernel path off, %s keeps the previous run's program", va.Host)
	}
	if _, err := os.Stat(offload.RundirPinDir(root, rundir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("with the kernel path off the previous run's pins stay: %v", err)
	}
	d.Close()

	d = start(OffloadEBPF, state(va.Host))
	d.Close() // not retained: exit --cleanup
	if hasProg(va.Host, false) {
		t.Errorf("after a stop without retaining %s keeps its program", va.Host)
	}
	if es, _ := os.ReadDir(root); len(es) != 0 {
		t.Errorf("after a stop without retaining, pinned: %v", es)
	}
}
