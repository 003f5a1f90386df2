package datapath

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/tap"
	"github.com/govs-project/govs/flowtable"
)

// The real-device tests run the bridge in a namespace of their own (the
// "switch" namespace, standing for the host), with veth pairs whose other
// ends sit in one namespace per endpoint, so no traffic ever leaves
// namespaces the test made.

// attachVeth opens an AF_PACKET port on the switch end of v (inside sw)
// and attaches it to b as ofport.
func attachVeth(t testing.TB, b *Bridge, sw *netnstest.NS, v *netnstest.Veth, ofport uint32) {
	t.Helper()
	attachVethConfig(t, b, sw, v, ofport, afpacket.Config{})
}

// attachVethConfig is attachVeth with a port configuration.
func attachVethConfig(t testing.TB, b *Bridge, sw *netnstest.NS, v *netnstest.Veth, ofport uint32, cfg afpacket.Config) {
	t.Helper()
	var p *afpacket.Port
	err := sw.Do(func() error {
		var err error
		p, err = afpacket.Open(v.Host, cfg)
		return err
	})
	if err != nil {
		t.Fatalf("afpacket on %s: %v", v.Host, err)
	}
	if _, err := b.AddPort(ofport, p, KindSystem); err != nil {
		p.Close()
		t.Fatal(err)
	}
}

// ping runs ping inside ns and fails the test unless every echo was
// answered.
func ping(t *testing.T, ns *netnstest.NS, addr string) {
	t.Helper()
	out, err := ns.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", addr)
	if err != nil {
		t.Fatalf("ping %s from %s: %v", addr, ns, err)
	}
	if !strings.Contains(out, " 0% packet loss") {
		t.Fatalf("ping %s from %s lost packets:\n%s", addr, ns, out)
	}
}

func TestNetnsPingAcrossBridge(t *testing.T) {
	cases := []struct {
		name  string
		flows string
		reach bool
	}{
		{"NORMAL", "actions=NORMAL", true},
		{"in_port cross-connect", "in_port=1,actions=output:2\nin_port=2,actions=output:1", true},
		// The bridge is the only path: without flows nothing gets across.
		{"drop", "actions=drop", false},
	}
	for _, c := range cases {
		for _, mode := range loopModes {
			t.Run(c.name+"/"+mode.name, func(t *testing.T) {
				sw, nsA, nsB := netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
				// NewVeth turns tx checksum offload (and TSO/GSO) off, so the
				// frames the bridge reads carry final checksums.
				va := netnstest.NewVeth(t, sw, nsA, netnstest.VethOptions{PeerAddr: "10.200.0.1/24"})
				vb := netnstest.NewVeth(t, sw, nsB, netnstest.VethOptions{PeerAddr: "10.200.0.2/24"})
				b := newBridge(t, c.flows, false)
				b.PMD = PMDConfig{Enabled: mode.pmd, CPU: -1}
				b.PortThreads = mode.portThreads
				attachVeth(t, b, sw, va, 1)
				attachVeth(t, b, sw, vb, 2)

				if !c.reach {
					if out, err := nsA.Exec("ping", "-c", "1", "-W", "1", "10.200.0.2"); err == nil {
						t.Fatalf("ping got through a bridge that drops everything:\n%s", out)
					}
					return
				}
				ping(t, nsA, "10.200.0.2")
				ping(t, nsB, "10.200.0.1")
				for _, pi := range b.Ports() {
					// 6 echo requests/replies each way at least, plus ARP.
					if pi.Stats.RxPackets < 6 || pi.Stats.TxPackets < 6 {
						t.Errorf("port %d (%s): rx %d tx %d, want >= 6 each", pi.OFPort, pi.Name, pi.Stats.RxPackets, pi.Stats.TxPackets)
					}
				}
			})
		}
	}
}

// loopModes are the ways a bridge reads its AF_PACKET ports: the poll
// thread (the default), the PMD, and a goroutine per port.
var loopModes = []struct {
	name             string
	pmd, portThreads bool
}{{"poll thread", false, false}, {"pmd", true, false}, {"port threads", false, true}}

// BenchmarkNetnsUDPRoundTrip is one UDP request and its echo across the
// bridge (two veths, cross-connect flows) per op, with each way of
// reading the ports: the latency of a lone frame, wake-ups included, and
// what the poll thread saves by finding the echo's frames in the rings.
func BenchmarkNetnsUDPRoundTrip(b *testing.B) {
	netnstest.RequireRoot(b)
	for _, mode := range loopModes {
		b.Run(strings.ReplaceAll(mode.name, " ", "-"), func(b *testing.B) {
			sw, nsA, nsB := netnstest.NewNS(b), netnstest.NewNS(b), netnstest.NewNS(b)
			va := netnstest.NewVeth(b, sw, nsA, netnstest.VethOptions{PeerAddr: "10.215.0.1/24"})
			vb := netnstest.NewVeth(b, sw, nsB, netnstest.VethOptions{PeerAddr: "10.215.0.2/24"})
			br := newBridge(b, "in_port=1,actions=output:2\nin_port=2,actions=output:1", false)
			br.PMD = PMDConfig{Enabled: mode.pmd, CPU: -1}
			br.PortThreads = mode.portThreads
			attachVeth(b, br, sw, va, 1)
			attachVeth(b, br, sw, vb, 2)
			src, dst := netip.MustParseAddrPort("10.215.0.1:9000"), netip.MustParseAddrPort("10.215.0.2:9001")
			// Warm up: ARP, the megaflow cache, the buffers.
			if got := netnstest.UDPPingPong(b, nsA, nsB, src, dst, 100, 64); got != 100 {
				b.Fatalf("warm-up: %d of 100 echoes", got)
			}
			b.ResetTimer()
			if got := netnstest.UDPPingPong(b, nsA, nsB, src, dst, b.N, 64); got != b.N {
				b.Fatalf("%d of %d echoes", got, b.N)
			}
		})
	}
}

// With a PMD or poll thread, ports come and go while it polls: a deleted
// port stops forwarding at once, a re-added one (whose new socket usually
// gets the old descriptor number) is polled again, and closing the bridge
// stops the thread.
func TestNetnsPMDPortChurn(t *testing.T) {
	for _, pmd := range []bool{true, false} {
		t.Run(fmt.Sprintf("pmd %v", pmd), func(t *testing.T) { testPollPortChurn(t, pmd) })
	}
}

func testPollPortChurn(t *testing.T, pmd bool) {
	sw, nsA, nsB := netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
	va := netnstest.NewVeth(t, sw, nsA, netnstest.VethOptions{PeerAddr: "10.203.0.1/24"})
	vb := netnstest.NewVeth(t, sw, nsB, netnstest.VethOptions{PeerAddr: "10.203.0.2/24"})
	b := newBridge(t, "in_port=1,actions=output:2\nin_port=2,actions=output:1", false)
	b.PMD = PMDConfig{Enabled: pmd, CPU: -1}
	attachVeth(t, b, sw, va, 1)
	attachVeth(t, b, sw, vb, 2)
	ping(t, nsA, "10.203.0.2")
	if b.pmd == nil || len(b.pmd.ports) != 2 || b.pmd.poll == pmd {
		t.Fatalf("PMD serves %v, want both ports, polling %v", b.pmd, !pmd)
	}
	for round := range 3 {
		if err := b.DelPort(2); err != nil {
			t.Fatal(err)
		}
		if out, err := nsA.Exec("ping", "-c", "1", "-W", "1", "10.203.0.2"); err == nil {
			t.Fatalf("round %d: ping got through with port 2 deleted:\n%s", round, out)
		}
		attachVeth(t, b, sw, vb, 2)
		ping(t, nsA, "10.203.0.2")
	}
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not stop the PMD thread")
	}
	select {
	case <-b.pmd.done:
	default:
		t.Fatal("PMD thread still running after Close")
	}
}

// An internal (TAP) port as the bridge's LOCAL port with an address in
// the switch namespace is reachable from a pod-like namespace, and back.
func TestNetnsInternalPort(t *testing.T) {
	sw, nsA := netnstest.NewNS(t), netnstest.NewNS(t)
	va := netnstest.NewVeth(t, sw, nsA, netnstest.VethOptions{PeerAddr: "10.201.0.2/24"})
	b := newBridge(t, "actions=NORMAL", false)
	var tp *tap.Port
	name := netnstest.UniqueName("gvt")
	err := sw.Do(func() error {
		var err error
		tp, err = tap.Create(tap.Config{Name: name})
		return err
	})
	if err != nil {
		t.Fatalf("create tap: %v", err)
	}
	if _, err := b.AddPort(flowtable.PortLocal, tp, KindInternal); err != nil {
		tp.Close()
		t.Fatal(err)
	}
	netnstest.DisableIPv6(t, sw, name)
	sw.MustExec(t, "ip", "addr", "add", "10.201.0.1/24", "dev", name)
	attachVeth(t, b, sw, va, 1)

	ping(t, nsA, "10.201.0.1")
	ping(t, sw, "10.201.0.2")
	local, ok := b.Port(flowtable.PortLocal)
	if !ok || local.Kind != KindInternal || local.Name != name {
		t.Fatalf("LOCAL port = %+v", local)
	}
	if local.Stats.RxPackets < 6 || local.Stats.TxPackets < 6 {
		t.Errorf("LOCAL port rx %d tx %d, want >= 6 each", local.Stats.RxPackets, local.Stats.TxPackets)
	}
	// Deleting the internal port removes the device.
	if err := b.DelPort(flowtable.PortLocal); err != nil {
		t.Fatal(err)
	}
	if _, err := netnstest.LinkShow(sw, name); err == nil {
		t.Errorf("TAP %s still exists after DelPort", name)
	}
}
