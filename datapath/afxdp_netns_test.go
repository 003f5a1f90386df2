package datapath

import (
	"fmt"
	"strings"
	"testing"

	"github.com/govs-project/govs/datapath/afxdp"
	"github.com/govs-project/govs/datapath/netnstest"
)

// attachXDP opens an AF_XDP port on the switch end of v (inside sw) and
// attaches it to b as ofport.
func attachXDP(t *testing.T, b *Bridge, sw *netnstest.NS, v *netnstest.Veth, ofport uint32, cfg afxdp.Config) {
	t.Helper()
	var p *afxdp.Port
	err := sw.Do(func() error {
		var err error
		p, err = afxdp.Open(v.Host, cfg)
		return err
	})
	if err != nil {
		t.Fatalf("afxdp on %s: %v", v.Host, err)
	}
	if _, err := b.AddPort(ofport, p, KindAFXDP); err != nil {
		p.Close()
		t.Fatal(err)
	}
}

// pingSize is ping with a payload size, so MTU-sized frames cross too.
func pingSize(t *testing.T, ns *netnstest.NS, addr string, size int) {
	t.Helper()
	out, err := ns.Exec("ping", "-c", "3", "-i", "0.2", "-W", "2", "-s", fmt.Sprint(size), addr)
	if err != nil {
		t.Fatalf("ping -s %d %s from %s: %v", size, addr, ns, err)
	}
	if !strings.Contains(out, " 0% packet loss") {
		t.Fatalf("ping -s %d %s from %s lost packets:\n%s", size, addr, ns, out)
	}
}

// Two namespaces talk through a bridge whose ports are AF_XDP sockets, in
// native and generic XDP mode, served by port goroutines or a PMD thread.
func TestNetnsPingAcrossAFXDPBridge(t *testing.T) {
	for _, mode := range []afxdp.Mode{afxdp.ModeNative, afxdp.ModeGeneric} {
		for _, pmd := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pmd %v", mode, pmd), func(t *testing.T) {
				sw, nsA, nsB := netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
				va := netnstest.NewVeth(t, sw, nsA, netnstest.VethOptions{PeerAddr: "10.204.0.1/24"})
				vb := netnstest.NewVeth(t, sw, nsB, netnstest.VethOptions{PeerAddr: "10.204.0.2/24"})
				b := newBridge(t, "in_port=1,actions=output:2\nin_port=2,actions=output:1", false)
				b.PMD = PMDConfig{Enabled: pmd, CPU: -1}
				attachXDP(t, b, sw, va, 1, afxdp.Config{Mode: mode})
				attachXDP(t, b, sw, vb, 2, afxdp.Config{Mode: mode})
				if pmd && (b.pmd == nil || len(b.pmd.ports) != 2) {
					t.Fatalf("PMD serves %v, want both AF_XDP ports", b.pmd)
				}
				ping(t, nsA, "10.204.0.2")
				ping(t, nsB, "10.204.0.1")
				pingSize(t, nsA, "10.204.0.2", 1472) // 1514-byte frames
				for _, pi := range b.Ports() {
					if pi.Kind != KindAFXDP || pi.Stats.RxPackets < 9 || pi.Stats.TxPackets < 9 || pi.Stats.RxErrors != 0 || pi.Stats.TxDropped != 0 {
						t.Errorf("port %d (%s, %s): %+v, want >= 9 rx and tx, no errors", pi.OFPort, pi.Name, pi.Kind, pi.Stats)
					}
				}
			})
		}
	}
}

// An AF_XDP port and an AF_PACKET port on one bridge (NORMAL) forward to
// each other: the backend is a per-port choice.
func TestNetnsAFXDPNextToAFPacket(t *testing.T) {
	sw, nsA, nsB := netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
	va := netnstest.NewVeth(t, sw, nsA, netnstest.VethOptions{PeerAddr: "10.205.0.1/24"})
	vb := netnstest.NewVeth(t, sw, nsB, netnstest.VethOptions{PeerAddr: "10.205.0.2/24"})
	b := newBridge(t, "actions=NORMAL", false)
	attachXDP(t, b, sw, va, 1, afxdp.Config{})
	attachVeth(t, b, sw, vb, 2)
	ping(t, nsA, "10.205.0.2")
	pingSize(t, nsB, "10.205.0.1", 1472)
}
