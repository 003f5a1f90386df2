package datapath

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/geneve"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/offload"
)

// TestNetnsKernelPathGeneveSharedUnderlay: two Geneve ports with one
// local_ip (one per remote chassis, as Antrea and OVN make them) share the
// program's pinned link on the underlay. Deleting the port that attached
// it leaves the program attached and decapsulating for the other;
// deleting the last one detaches it and removes its pin.
func TestNetnsKernelPathGeneveSharedUnderlay(t *testing.T) {
	const udpN, udpSize = 200, 200
	root := netnstest.MountBPFFS(t)
	dir := offload.PinDir(filepath.Join(root, "govs"), "/run/govs-ulink-test", "br-gk1")
	// Node 2's first Geneve port (ofport 3, towards a third chassis that
	// sends nothing) attaches the program; port 1 (towards node 1) finds
	// it there.
	nodes := newGeneveKPWith(t, [2]bool{true, true}, false, false, false, false, false, false, [2]string{"", dir}, func(i int, n *gkNode) error {
		if i != 1 {
			return nil
		}
		tun, err := geneve.Open(geneve.Config{Name: "tun3", LocalIP: netip.MustParseAddr(n.nodeIP),
			RemoteIP: netip.MustParseAddr("10.79.9.3"), ReadTimeout: 20 * time.Millisecond})
		if err != nil {
			return err
		}
		if _, err := n.b.AddPort(3, tun, KindTunnel); err != nil {
			tun.Close()
			return err
		}
		return nil
	})
	n := nodes[1]
	pin := filepath.Join(dir, "links", n.underlay)
	if !tcxAttached(t, n.node, n.underlay) {
		t.Fatalf("no TCX program on %s with two Geneve ports", n.underlay)
	}
	if err := n.b.DelPort(3); err != nil {
		t.Fatal(err)
	}
	if !tcxAttached(t, n.node, n.underlay) {
		t.Errorf("deleting the Geneve port that attached the program detached it from %s, which port 1 still uses", n.underlay)
	}
	if _, err := os.Stat(pin); err != nil {
		t.Errorf("the underlay's link pin is gone with the port that made it: %v", err)
	}

	src := netip.AddrPortFrom(netip.MustParseAddr(nodes[0].podIP), 5001)
	if got := netnstest.UDPPingPong(t, nodes[0].pod, n.pod, src, netip.AddrPortFrom(netip.MustParseAddr(n.podIP), 9001), udpN, udpSize); got != udpN {
		t.Errorf("delivered %d of %d datagrams", got, udpN)
	}
	settledPorts(t, nodes)
	c := n.m.PortStats(offload.PortID(1))
	t.Logf("node 2: kernel decapsulated %d datagrams for port 1", c.RxPackets)
	if c.RxPackets < udpN/2 {
		t.Errorf("node 2: the kernel decapsulated %d of the %d datagrams port 1 got", c.RxPackets, udpN)
	}

	if err := n.b.DelPort(1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pin); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the underlay's link pin outlives its last Geneve port: %v", err)
	}
	// The kernel frees the link (and detaches the program) soon after
	// its last reference goes.
	for end := time.Now().Add(2 * time.Second); tcxAttached(t, n.node, n.underlay); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Errorf("%s keeps its TCX program after the last Geneve port was deleted", n.underlay)
			break
		}
	}
}

// tcxAttached tells whether dev in ns has a program at TCX ingress (the
// underlay's decapsulation; XDP there would be the old attach mode).
func tcxAttached(t *testing.T, ns *netnstest.NS, dev string) bool {
	t.Helper()
	ids, err := netnstest.TCXIngress(ns, dev)
	if err != nil {
		t.Fatal(err)
	}
	out, err := netnstest.Run("ip", "-n", ns.Name, "link", "show", "dev", dev)
	if err != nil {
		t.Fatalf("ip link show %s: %v: %s", dev, err, out)
	}
	if strings.Contains(out, "xdp") {
		t.Errorf("%s has an XDP program: %s", dev, out)
	}
	return len(ids) > 0
}
