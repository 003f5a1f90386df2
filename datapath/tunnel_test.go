package datapath

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/geneve"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/tunnel"
)

// Antrea's only Geneve option (seed worker flows: # tlv-map).
var antreaTLV = flowtable.TLVMapping{Class: 0x104, Type: 0x80, Len: 4, Index: 0}

// tunnelPair opens the bridge's Geneve port on 10.93.0.1 and, in a
// namespace of its own joined by a veth pair, a peer port on 10.93.0.2
// that plays the other node.
func tunnelPair(t testing.TB) (local, peer *geneve.Port) {
	t.Helper()
	return tunnelPairOn(t, "10.93.0.1", "10.93.0.2")
}

// tunnelPair6 is tunnelPair over IPv6: fd00::1 and fd00::2.
func tunnelPair6(t testing.TB) (local, peer *geneve.Port) {
	t.Helper()
	return tunnelPairOn(t, "fd00::1", "fd00::2")
}

func tunnelPairOn(t testing.TB, localIP, peerIP string) (local, peer *geneve.Port) {
	t.Helper()
	nsLocal, nsPeer := netnstest.NewNS(t), netnstest.NewNS(t)
	opts := netnstest.VethOptions{HostAddr: localIP + "/24", PeerAddr: peerIP + "/24"}
	if strings.Contains(localIP, ":") {
		opts = netnstest.VethOptions{HostAddr: localIP + "/64", PeerAddr: peerIP + "/64", KeepIPv6: true}
	}
	netnstest.NewVeth(t, nsLocal, nsPeer, opts)
	open := func(ns *netnstest.NS, name, ip string) *geneve.Port {
		t.Helper()
		var p *geneve.Port
		if err := ns.Do(func() (err error) {
			p, err = geneve.Open(geneve.Config{Name: name, LocalIP: netip.MustParseAddr(ip), ReadTimeout: 20 * time.Millisecond})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	local, peer = open(nsLocal, "tun0", localIP), open(nsPeer, "peer", peerIP)
	t.Cleanup(func() { peer.Close() }) // local belongs to the bridge
	return local, peer
}

// peerKey is a flow key for the peer's WriteTunnel: tun_dst, tun_id and
// tun_metadata0 (through tlv).
func peerKey(t testing.TB, tlv *flowtable.TLVMap, dst string, tunID uint64, md0 uint32) *flowtable.Key {
	t.Helper()
	var k flowtable.Key
	if a := netip.MustParseAddr(dst); a.Is6() {
		flowtable.FieldTunIPv6Dst.SetValue(&k, a.AsSlice())
	} else {
		flowtable.FieldTunDst.SetUint64(&k, uint64(binary.BigEndian.Uint32(a.AsSlice())))
	}
	flowtable.FieldTunID.SetUint64(&k, tunID)
	f, err := tlv.Resolve(flowtable.FieldTunMetadataN[0])
	if err != nil {
		t.Fatal(err)
	}
	f.SetUint64(&k, uint64(md0))
	return &k
}

// TestTunnelPort: frames output to a tunnel port leave with the tunnel
// header the flow key asks for (tun_dst, tun_id, tun_metadata0), and frames
// read from it enter the pipeline with in_port and the tunnel fields set.
// The TLV map is added after the port, as add-tlv-map does, so the port must
// pick it up from the pipeline.
// With a PMD thread the tunnel port is polled by it instead of its own
// goroutine; the results must be the same.
func TestTunnelPort(t *testing.T) {
	for _, pmd := range []bool{false, true} {
		t.Run(fmt.Sprintf("pmd %v", pmd), func(t *testing.T) { testTunnelPort(t, pmd) })
	}
}

func testTunnelPort(t *testing.T, pmd bool) {
	local, peer := tunnelPair(t)
	p := flowtable.NewPipeline()
	b := NewBridge("br-tun", 1, p, nil)
	b.PMD = PMDConfig{Enabled: pmd, CPU: -1}
	t.Cleanup(func() { b.Close() })
	if _, err := b.AddPort(1, local, KindTunnel); err != nil {
		t.Fatal(err)
	}
	if served := b.ports.Load().byNo[1].poller != nil; served != pmd {
		t.Fatalf("tunnel port served by the PMD thread: %v, want %v", served, pmd)
	}
	ps := addMemPorts(t, b, MemPortConfig{}, 2)

	// What ofproto's NXT_TLV_TABLE_MOD handler does.
	if err := p.TLV.Add(antreaTLV); err != nil {
		t.Fatal(err)
	}
	p.Generation.Add(1)
	flows := `
priority=100,in_port=2,actions=set_field:10.93.0.2->tun_dst,set_field:0x5->tun_id,set_field:0xa0000000->tun_metadata0,output:1
priority=100,in_port=1,tun_src=10.93.0.2,tun_dst=10.93.0.1,tun_id=7,tun_metadata0=0xb0000000,actions=output:2
priority=90,in_port=1,actions=drop
`
	if err := flowtext.Load(p, flows, nil); err != nil {
		t.Fatal(err)
	}
	peerTLV := flowtable.NewTLVMap()
	if err := peerTLV.Add(antreaTLV); err != nil {
		t.Fatal(err)
	}
	if err := peer.SetTLVMap(peerTLV); err != nil {
		t.Fatal(err)
	}
	frame := frameOf(t, "tcp,dl_src="+frontendMAC+",dl_dst="+globalMAC+",nw_src=10.222.1.48,nw_dst=10.222.2.34,nw_ttl=63,tp_src=40000,tp_dst=80")

	t.Run("output encapsulates with the key's tunnel fields", func(t *testing.T) {
		inject(t, b, ps, 2, frame)
		batch := port.NewBatch(4)
		md := make([]tunnel.Metadata, 4)
		deadline := time.Now().Add(waitTimeout)
		n := 0
		for n == 0 && time.Now().Before(deadline) {
			var err error
			if n, err = peer.ReadTunnelBatch(batch, md); err != nil {
				t.Fatal(err)
			}
		}
		if n != 1 {
			t.Fatalf("peer received %d datagrams, want 1", n)
		}
		if !bytes.Equal(batch.Frames[0], frame) {
			t.Errorf("inner frame:\n got %x\nwant %x", batch.Frames[0], frame)
		}
		m := md[0]
		if m.VNI != 5 || m.Src != 0x0a5d0001 || m.Dst != 0x0a5d0002 {
			t.Errorf("metadata: vni %d src %#x dst %#x, want 5 0x0a5d0001 0x0a5d0002", m.VNI, m.Src, m.Dst)
		}
		want := []byte{0x01, 0x04, 0x80, 0x01, 0xa0, 0, 0, 0}
		if !bytes.Equal(m.Options, want) {
			t.Errorf("options %x, want %x", m.Options, want)
		}
	})

	cases := []struct {
		name  string
		tunID uint64
		md0   uint32
		want  int
	}{
		{"matching tunnel fields reach the pod", 7, 0xb0000000, 1},
		{"another VNI is dropped", 8, 0xb0000000, 0},
		{"another tun_metadata0 is dropped", 7, 0xc0000000, 0},
	}
	for _, c := range cases {
		t.Run("input: "+c.name, func(t *testing.T) {
			bp := b.ports.Load().byNo[1]
			before := bp.processed.Load()
			k := peerKey(t, peerTLV, "10.93.0.1", c.tunID, c.md0)
			if n, err := peer.WriteTunnel([][]byte{frame}, []*flowtable.Key{k}); n != 1 || err != nil {
				t.Fatalf("peer write: %d %v", n, err)
			}
			deadline := time.Now().Add(waitTimeout)
			for bp.processed.Load() == before {
				if time.Now().After(deadline) {
					t.Fatal("the bridge did not process the datagram")
				}
				time.Sleep(time.Millisecond)
			}
			got := ps[2].Sent()
			if len(got) != c.want {
				t.Fatalf("pod port sent %d frames, want %d", len(got), c.want)
			}
			if c.want == 1 && !bytes.Equal(got[0], frame) {
				t.Errorf("frame:\n got %x\nwant %x", got[0], frame)
			}
		})
	}

	t.Run("del-tlv-map reaches the port", func(t *testing.T) {
		if err := p.TLV.Delete(); err != nil {
			t.Fatal(err)
		}
		p.Generation.Add(1)
		b.SyncTunnelTLV()
		bp := b.ports.Load().byNo[1]
		before := bp.processed.Load()
		rxErrs := local.TunnelStats().RxHeaderErrors
		// Type 0x80 is critical: a port without the mapping must drop it.
		k := peerKey(t, peerTLV, "10.93.0.1", 7, 0xb0000000)
		if n, err := peer.WriteTunnel([][]byte{frame}, []*flowtable.Key{k}); n != 1 || err != nil {
			t.Fatalf("peer write: %d %v", n, err)
		}
		deadline := time.Now().Add(waitTimeout)
		for local.TunnelStats().RxHeaderErrors == rxErrs {
			if time.Now().After(deadline) {
				t.Fatalf("the port did not drop the unknown critical option (processed %d -> %d)", before, bp.processed.Load())
			}
			time.Sleep(time.Millisecond)
		}
		if got := ps[2].Sent(); len(got) != 0 {
			t.Errorf("pod port sent %d frames after del-tlv-map", len(got))
		}
	})
}

// BenchmarkProcessToTunnel is one port goroutine's work per packet when
// the pipeline sends to a Geneve port: extract, a one-flow pipeline that
// sets tun_dst and tun_metadata0, the key copy and the encapsulation and
// sendmmsg of WriteTunnel (over loopback). One op is one packet.
func BenchmarkProcessToTunnel(b *testing.B) {
	local, _ := tunnelPair(b)
	benchProcessToTunnel(b, local, "set_field:10.93.0.2->tun_dst")
}

// BenchmarkProcessToTunnelIPv6 is BenchmarkProcessToTunnel over IPv6
// (tun_ipv6_dst, raw IPv6 socket, UDP checksum).
func BenchmarkProcessToTunnelIPv6(b *testing.B) {
	local, _ := tunnelPair6(b)
	benchProcessToTunnel(b, local, "set_field:fd00::2->tun_ipv6_dst")
}

func benchProcessToTunnel(b *testing.B, local *geneve.Port, setDst string) {
	p := flowtable.NewPipeline()
	if err := p.TLV.Add(antreaTLV); err != nil {
		b.Fatal(err)
	}
	if err := flowtext.Load(p, "in_port=2,actions="+setDst+",set_field:0xa0000000->tun_metadata0,output:1", nil); err != nil {
		b.Fatal(err)
	}
	br := NewBridge("br-tun", 1, p, nil)
	b.Cleanup(func() { br.Close() })
	if _, err := br.AddPort(1, local, KindTunnel); err != nil {
		b.Fatal(err)
	}
	if _, err := br.AddPort(2, NewMemPort(MemPortConfig{Name: "mem"}), KindMemory); err != nil {
		b.Fatal(err)
	}
	data := tcpFrame(b, true, "ack", 1, 1, 64)
	l := newLoop(br, br.ports.Load().byNo[2])
	before := local.Stats().TxPackets
	benchProcess(b, l, data)
	st := local.TunnelStats()
	if got := st.TxPackets + st.TxDropped - before; got < uint64(b.N) || st.TxPackets == 0 {
		b.Fatalf("tunnel handled %d frames (%d sent), want %d", got, st.TxPackets, b.N)
	}
}

// BenchmarkProcessFromTunnel is the receive side: a batch of 64 Geneve
// datagrams from the peer is read (recvmmsg, decap), and every frame gets
// its tunnel fields, goes through a flow matching tun_metadata0 and is
// written to a memory port. One op is one packet.
func BenchmarkProcessFromTunnel(b *testing.B) {
	local, peer := tunnelPair(b)
	benchProcessFromTunnel(b, local, peer, "", "10.93.0.1")
}

// BenchmarkProcessFromTunnelIPv6 is BenchmarkProcessFromTunnel over IPv6;
// the flow also matches tun_ipv6_src, which the receive fills.
func BenchmarkProcessFromTunnelIPv6(b *testing.B) {
	local, peer := tunnelPair6(b)
	benchProcessFromTunnel(b, local, peer, "tun_ipv6_src=fd00::2,", "fd00::1")
}

func benchProcessFromTunnel(b *testing.B, local, peer *geneve.Port, match, dst string) {
	p := flowtable.NewPipeline()
	if err := p.TLV.Add(antreaTLV); err != nil {
		b.Fatal(err)
	}
	if err := flowtext.Load(p, "in_port=1,"+match+"tun_metadata0=0xb0000000,actions=output:2", nil); err != nil {
		b.Fatal(err)
	}
	if err := peer.SetTLVMap(p.TLV); err != nil {
		b.Fatal(err)
	}
	br := NewBridge("br-tun", 1, p, nil)
	b.Cleanup(func() { br.Close() })
	out := NewMemPort(MemPortConfig{Name: "mem"})
	if _, err := br.AddPort(2, out, KindMemory); err != nil {
		b.Fatal(err)
	}
	// The benchmark reads the tunnel port itself, so port 1 is attached
	// without a goroutine (done is closed for Close, loop set below).
	bp := &bridgePort{ofport: 1, p: local, kind: KindTunnel, tun: local, rxPort: local, maxFrame: port.MaxFrameLen(local.MTU()), done: make(chan struct{})}
	close(bp.done)
	bp.tlvGen.Store(^uint64(0))
	br.syncTLV(bp)
	cur := br.ports.Load()
	ps := &portSet{byNo: map[uint32]*bridgePort{1: bp, 2: cur.byNo[2]}, numbers: []uint32{1, 2}}
	ps.indexTunnels()
	br.ports.Store(ps)
	data := tcpFrame(b, true, "ack", 1, 1, 64)
	frames := make([][]byte, BatchSize)
	keys := make([]*flowtable.Key, BatchSize)
	k := peerKey(b, p.TLV, dst, 0, 0xb0000000)
	for i := range frames {
		frames[i], keys[i] = data, k
	}
	l := newLoop(br, bp)
	bp.loop = l // as AddPort does: Close releases the loop's cache
	before := out.Stats().TxPackets
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for done := 0; done < b.N; {
		want := min(BatchSize, b.N-done)
		if _, err := peer.WriteTunnel(frames[:want], keys[:want]); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < want; {
			n, err := local.ReadBatch(l.batch)
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				b.Fatalf("read timed out after %d of %d datagrams", got, want)
			}
			l.process(l.batch.Frames[:n])
			got += n
		}
		done += want
	}
	b.StopTimer()
	if got := out.Stats().TxPackets - before; got != uint64(b.N) {
		b.Fatalf("memory port sent %d frames, want %d", got, b.N)
	}
}

// TestGeneveThreeNodes: node A has one Geneve port per peer with a fixed
// remote_ip (ofport 1 to B, 2 to C), as ovn-controller makes them; B and C
// are Geneve endpoints in their own namespaces, each joined to A by a veth.
// Both of A's ports share one UDP socket, and what B and C send enters A's
// pipeline on the right in_port, with the right tun_src; what A sends on
// each port reaches its peer. The PMD variant polls the shared socket; in
// the IPv6 variant C is joined to A over IPv6 (remote_ip=fd00:91:2::3):
// both families share A's dual-stack socket.
func TestGeneveThreeNodes(t *testing.T) {
	for _, c := range []struct{ pmd, ipv6 bool }{{false, false}, {true, false}, {false, true}} {
		t.Run(fmt.Sprintf("pmd %v ipv6 %v", c.pmd, c.ipv6), func(t *testing.T) { testGeneveThreeNodes(t, c.pmd, c.ipv6) })
	}
}

func testGeneveThreeNodes(t *testing.T, pmd, ipv6 bool) {
	nsA, nsB, nsC := netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
	netnstest.NewVeth(t, nsA, nsB, netnstest.VethOptions{HostAddr: "10.91.1.1/24", PeerAddr: "10.91.1.2/24"})
	addrA, addrC, tunSrcC := "10.91.2.1", "10.91.2.3", "tun_src=10.91.2.3"
	if ipv6 {
		addrA, addrC, tunSrcC = "fd00:91:2::1", "fd00:91:2::3", "tun_ipv6_src=fd00:91:2::3"
		netnstest.NewVeth(t, nsA, nsC, netnstest.VethOptions{HostAddr: addrA + "/64", PeerAddr: addrC + "/64", KeepIPv6: true})
	} else {
		netnstest.NewVeth(t, nsA, nsC, netnstest.VethOptions{HostAddr: addrA + "/24", PeerAddr: addrC + "/24"})
	}
	open := func(ns *netnstest.NS, cfg geneve.Config) *geneve.Port { return openGeneveIn(t, ns, cfg) }
	// A's ports: no local_ip (OVN's), so they listen on every address.
	toB := open(nsA, geneve.Config{Name: "ovn-b", RemoteIP: netip.MustParseAddr("10.91.1.2")})
	toC := open(nsA, geneve.Config{Name: "ovn-c", RemoteIP: netip.MustParseAddr(addrC)})
	nodeB := open(nsB, geneve.Config{Name: "ovn-a", RemoteIP: netip.MustParseAddr("10.91.1.1")})
	nodeC := open(nsC, geneve.Config{Name: "ovn-a", RemoteIP: netip.MustParseAddr(addrA)})
	t.Cleanup(func() { nodeB.Close(); nodeC.Close() })

	p := flowtable.NewPipeline()
	b := NewBridge("br-int", 1, p, nil)
	b.PMD = PMDConfig{Enabled: pmd, CPU: -1}
	t.Cleanup(func() { b.Close() })
	for i, tp := range []*geneve.Port{toB, toC} {
		if _, err := b.AddPort(uint32(i+1), tp, KindTunnel); err != nil {
			t.Fatal(err)
		}
	}
	ps := addMemPorts(t, b, MemPortConfig{}, 3, 4)
	flows := `
priority=100,in_port=1,tun_src=10.91.1.2,tun_id=11,actions=output:3
priority=100,in_port=2,` + tunSrcC + `,tun_id=12,actions=output:4
priority=100,in_port=3,actions=set_field:21->tun_id,output:1
priority=100,in_port=4,actions=set_field:22->tun_id,output:2
priority=0,actions=drop
`
	if err := flowtext.Load(p, flows, nil); err != nil {
		t.Fatal(err)
	}
	frame := frameOf(t, "udp,dl_src=00:00:00:00:01:02,dl_dst=00:00:00:00:01:03,nw_src=10.0.1.2,nw_dst=10.0.1.3,tp_src=1,tp_dst=2")

	// waitSent waits for mem port n to send one frame.
	waitSent := func(n uint32) bool {
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if got := ps[n].Sent(); len(got) > 0 {
				return len(got) == 1 && bytes.Equal(got[0], frame)
			}
		}
		return false
	}
	// send has peer send frame to A with VNI vni.
	send := func(peer *geneve.Port, vni uint64) {
		t.Helper()
		var k flowtable.Key
		flowtable.FieldTunID.SetUint64(&k, vni)
		if n, err := peer.WriteTunnel([][]byte{frame}, []*flowtable.Key{&k}); n != 1 || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	// Each peer, the VNI it sends, the memory port its frames leave A by
	// (the in_port flow's) and the one that sends to it with VNI outVNI.
	peers := []struct {
		node          *geneve.Port
		name          string
		inVNI, outVNI uint32
		mem           uint32
	}{{nodeB, "B", 11, 21, 3}, {nodeC, "C", 12, 22, 4}}
	for _, c := range peers {
		t.Run("from "+c.name+" on its port", func(t *testing.T) {
			// The first datagram may wait for ARP on the underlay.
			send(c.node, uint64(c.inVNI))
			if !waitSent(c.mem) {
				t.Fatalf("the frame from %s did not leave mem%d (in_port %d's flow)", c.name, c.mem, c.mem-2)
			}
			if other := ps[7-c.mem].Sent(); len(other) != 0 {
				t.Errorf("the frame from %s also came out of mem%d", c.name, 7-c.mem)
			}
		})
	}
	for _, c := range peers {
		t.Run("to "+c.name+" from its port", func(t *testing.T) {
			inject(t, b, ps, c.mem, frame)
			got, md := readTunnelFrame(t, c.node)
			if !bytes.Equal(got, frame) || md.VNI != c.outVNI {
				t.Errorf("%s received VNI %d frame %x, want VNI %d", c.name, md.VNI, got, c.outVNI)
			}
		})
	}
	// Each port counts what came for it, though one socket read it all.
	if sb, sc := toB.Stats(), toC.Stats(); sb.RxPackets != 1 || sc.RxPackets != 1 {
		t.Errorf("received on ovn-b %d, on ovn-c %d, want 1 each", sb.RxPackets, sc.RxPackets)
	}
	// The reading port goes (a chassis left): the other one reads now.
	t.Run("ovn-c receives after ovn-b is deleted", func(t *testing.T) {
		if err := b.DelPort(1); err != nil {
			t.Fatal(err)
		}
		send(nodeC, 12)
		if !waitSent(4) {
			t.Fatal("the frame from C did not leave mem4")
		}
	})
}

// openGeneveIn opens a Geneve port in ns with a 20 ms read timeout.
func openGeneveIn(t *testing.T, ns *netnstest.NS, cfg geneve.Config) *geneve.Port {
	t.Helper()
	cfg.ReadTimeout = 20 * time.Millisecond
	var p *geneve.Port
	if err := ns.Do(func() (err error) { p, err = geneve.Open(cfg); return err }); err != nil {
		t.Fatal(err)
	}
	return p
}

// readTunnelFrame reads one frame (a copy) and its metadata from p within
// 5 s.
func readTunnelFrame(t *testing.T, p *geneve.Port) ([]byte, tunnel.Metadata) {
	t.Helper()
	batch := port.NewBatch(4)
	md := make([]tunnel.Metadata, 4)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		n, err := p.ReadTunnelBatch(batch, md)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return bytes.Clone(batch.Frames[0]), md[0]
		}
	}
	t.Fatalf("%s received nothing", p.Name())
	return nil, tunnel.Metadata{}
}

// TestGeneveTwoBridges: Geneve ports of two bridges share node A's socket
// on UDP 6081, and each datagram enters the pipeline of the bridge whose
// port OVS's tnl_find picks, as in Open vSwitch, whose one datapath serves
// every bridge: br-a has a port with a fixed remote_ip and one with a
// local_ip, br-b one with a fixed remote_ip and one with neither (both
// without local_ip next to br-a's with: one socket for all). The port
// reading the socket is br-a's, then, once it is deleted, br-b's; the
// frames of the other bridge go through their port's inbox.
func TestGeneveTwoBridges(t *testing.T) {
	for _, pmd := range []bool{false, true} {
		t.Run(fmt.Sprintf("pmd %v", pmd), func(t *testing.T) { testGeneveTwoBridges(t, pmd) })
	}
}

func testGeneveTwoBridges(t *testing.T, pmd bool) {
	nsA, nsB, nsC := netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
	netnstest.NewVeth(t, nsA, nsB, netnstest.VethOptions{HostAddr: "10.92.1.1/24", PeerAddr: "10.92.1.2/24"})
	link := netnstest.NewVeth(t, nsA, nsC, netnstest.VethOptions{HostAddr: "10.92.2.1/24", PeerAddr: "10.92.2.3/24"})
	nsA.MustExec(t, "ip", "addr", "add", "10.92.2.9/24", "dev", link.Host)
	nsC.MustExec(t, "ip", "addr", "add", "10.92.2.4/24", "dev", link.Peer)
	open := func(ns *netnstest.NS, cfg geneve.Config) *geneve.Port { return openGeneveIn(t, ns, cfg) }
	ip := netip.MustParseAddr
	// Opened in this order: the first reads the socket.
	aFromB := open(nsA, geneve.Config{Name: "a-from-b", RemoteIP: ip("10.92.1.2")})
	bFromC := open(nsA, geneve.Config{Name: "b-from-c", RemoteIP: ip("10.92.2.3")})
	aLocal := open(nsA, geneve.Config{Name: "a-local", LocalIP: ip("10.92.2.1")})
	bAny := open(nsA, geneve.Config{Name: "b-any"})
	// The peers: B, C from its first address, C from 10.92.2.4 to any
	// tun_dst.
	nodeB := open(nsB, geneve.Config{Name: "to-a", RemoteIP: ip("10.92.1.1")})
	nodeC := open(nsC, geneve.Config{Name: "to-a", RemoteIP: ip("10.92.2.1")})
	nodeC4 := open(nsC, geneve.Config{Name: "from-4", LocalIP: ip("10.92.2.4")})
	t.Cleanup(func() { nodeB.Close(); nodeC.Close(); nodeC4.Close() })

	frame := frameOf(t, "udp,dl_src=00:00:00:00:01:02,dl_dst=00:00:00:00:01:03,nw_src=10.0.1.2,nw_dst=10.0.1.3,tp_src=1,tp_dst=2")
	type bridge struct {
		b   *Bridge
		mem map[uint32]*MemPort
	}
	var brs []bridge
	for i, tps := range [][]*geneve.Port{{aFromB, aLocal}, {bFromC, bAny}} {
		p := flowtable.NewPipeline()
		b := NewBridge([]string{"br-a", "br-b"}[i], uint64(i+1), p, nil)
		b.PMD = PMDConfig{Enabled: pmd, CPU: -1}
		t.Cleanup(func() { b.Close() })
		for j, tp := range tps {
			if _, err := b.AddPort(uint32(j+1), tp, KindTunnel); err != nil {
				t.Fatal(err)
			}
		}
		mem := addMemPorts(t, b, MemPortConfig{}, 3, 4)
		if err := flowtext.Load(p, "in_port=1,actions=output:3\nin_port=2,actions=output:4\n", nil); err != nil {
			t.Fatal(err)
		}
		brs = append(brs, bridge{b, mem})
	}
	// send has peer send frame to dst (its remote_ip when "").
	send := func(peer *geneve.Port, dst string) {
		t.Helper()
		var k flowtable.Key
		if dst != "" {
			flowtable.FieldTunDst.SetUint64(&k, uint64(binary.BigEndian.Uint32(ip(dst).AsSlice())))
		}
		if n, err := peer.WriteTunnel([][]byte{frame}, []*flowtable.Key{&k}); n != 1 || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
	}
	// expect waits for the frame to leave by bridge br's memory port mem,
	// and by no other.
	expect := func(br, mem int) {
		t.Helper()
		got := map[string]int{}
		collect := func() {
			for _, b := range brs {
				for n, mp := range b.mem {
					if s := mp.Sent(); len(s) > 0 {
						got[fmt.Sprintf("%s mem%d", b.b.name, n)] += len(s)
					}
				}
			}
		}
		for end := time.Now().Add(5 * time.Second); len(got) == 0 && time.Now().Before(end); time.Sleep(time.Millisecond) {
			collect()
		}
		time.Sleep(20 * time.Millisecond) // a frame out of another port too?
		collect()
		want := map[string]int{fmt.Sprintf("%s mem%d", brs[br].b.name, mem): 1}
		if !maps.Equal(got, want) {
			t.Errorf("frames left by %v, want %v", got, want)
		}
	}
	for _, c := range []struct {
		name     string
		peer     *geneve.Port
		dst      string
		br, mem  int
		receiver *geneve.Port
	}{
		{"B to 10.92.1.1: br-a's fixed remote_ip", nodeB, "", 0, 3, aFromB},
		{"C to 10.92.2.1: br-b's fixed remote_ip before br-a's local_ip", nodeC, "", 1, 3, bFromC},
		{"10.92.2.4 to 10.92.2.1: br-a's local_ip", nodeC4, "10.92.2.1", 0, 4, aLocal},
		{"10.92.2.4 to 10.92.2.9: br-b's port without local_ip", nodeC4, "10.92.2.9", 1, 4, bAny},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.receiver.Stats().RxPackets
			send(c.peer, c.dst)
			expect(c.br, c.mem)
			if got := c.receiver.Stats().RxPackets; got != before+1 {
				t.Errorf("%s received %d, want %d", c.receiver.Name(), got-before, 1)
			}
		})
	}
	// br-a's reading port goes: br-b's b-from-c reads now, and br-a's
	// frames go to a-local's inbox.
	if err := brs[0].b.DelPort(1); err != nil {
		t.Fatal(err)
	}
	t.Run("after the reader is deleted: br-a's local_ip", func(t *testing.T) {
		send(nodeC4, "10.92.2.1")
		expect(0, 4)
	})
	t.Run("after the reader is deleted: br-b's", func(t *testing.T) {
		send(nodeC, "")
		expect(1, 3)
	})
}
