package datapath

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/offload"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// kpMACA and kpMACB are the pods' MACs in the kernel path tests.
var (
	kpMACA = net.HardwareAddr{0x02, 0xcc, 0, 0, 0, 1}
	kpMACB = net.HardwareAddr{0x02, 0xcc, 0, 0, 0, 2}
)

// kpFlows is a small ct pipeline (zone 1): new connections from port 1
// are committed, established ones forwarded with Ethernet rewrites and
// dec_ttl, the shape of Antrea's established-traffic path.
var kpFlows = fmt.Sprintf(`table=0,priority=10,arp,in_port=1,actions=output:2
table=0,priority=10,arp,in_port=2,actions=output:1
table=0,priority=10,ip,actions=ct(table=1,zone=1)
table=1,priority=20,cookie=0x1,ct_state=+new+trk,ip,in_port=1,actions=ct(commit,zone=1),output:2
table=1,priority=20,cookie=0x2,ct_state=+est+trk,ip,in_port=1,actions=mod_dl_src:%[1]s,mod_dl_dst:%[2]s,dec_ttl,output:2
table=1,priority=20,cookie=0x3,ct_state=+est+trk,ip,in_port=2,actions=mod_dl_src:%[2]s,mod_dl_dst:%[1]s,dec_ttl,output:1
`, kpMACA, kpMACB)

// kpSetup is a bridge with the ct pipeline between pods A (10.210.0.1,
// port 1) and B (10.210.0.2, port 2), the kernel path on or off.
type kpSetup struct {
	b     *Bridge
	m     *offload.Manager
	nsA   *netnstest.NS
	nsB   *netnstest.NS
	sw    *netnstest.NS
	tr    *conntrack.Tracker
	peerA string // A's interface
	// For restart: the pipeline text, the switch ends of the veths, the
	// kernel state's pin directory ("": not pinned).
	flows    string
	timeouts conntrack.Timeouts
	hosts    [2]string
	pinDir   string
	// vnet: the pods keep their offloads and the ports exchange offload
	// metadata (--userspace-tso): the kernel path is then the tc path.
	vnet bool
	// tc: the ports are on the tc path without offload metadata (veths
	// as govs-vswitchd puts them where the kernel has TCX); vnet implies it.
	tc bool
	// vlan: the pods' VLANs (0: none): pod A or B tags what it sends and
	// takes only its VLAN's frames (netnstest.VLANTrunk); the switch end
	// of its veth is then a trunk.
	vlan [2]uint16
	// txvlanOff: the pods' veths put tags in the frames' data, not in the
	// skb's accelerated tag (generic XDP sees only the data).
	txvlanOff bool
	// veths: A's and B's.
	veths [2]*netnstest.Veth
}

func newKPSetup(t *testing.T, kernel bool, timeouts conntrack.Timeouts) *kpSetup {
	return newKPSetupFlows(t, kernel, timeouts, kpFlows)
}

// newKPSetupFlows is newKPSetup with another pipeline.
func newKPSetupFlows(t *testing.T, kernel bool, timeouts conntrack.Timeouts, flows string) *kpSetup {
	return newKPSetupPinned(t, kernel, timeouts, flows, "")
}

// newKPSetupPinned is newKPSetupFlows with the kernel state pinned in
// pinDir (restart).
func newKPSetupPinned(t *testing.T, kernel bool, timeouts conntrack.Timeouts, flows, pinDir string) *kpSetup {
	return newKPSetupWith(t, kernel, &kpSetup{flows: flows, timeouts: timeouts, pinDir: pinDir})
}

// newKPSetupWith builds s as configured.
func newKPSetupWith(t *testing.T, kernel bool, s *kpSetup) *kpSetup {
	s.sw, s.nsA, s.nsB = netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
	var vs [2]*netnstest.Veth
	for i, ns := range []*netnstest.NS{s.nsA, s.nsB} {
		addr := fmt.Sprintf("10.210.0.%d/24", i+1)
		vs[i] = netnstest.NewVeth(t, s.sw, ns, netnstest.VethOptions{PeerAddr: addr, PeerMAC: []net.HardwareAddr{kpMACA, kpMACB}[i], KeepOffloads: s.vnet})
		if s.vlan[i] != 0 {
			netnstest.VLANTrunk(t, ns, vs[i].Peer, s.vlan[i], s.txvlanOff)
		}
	}
	s.peerA, s.hosts, s.veths = vs[0].Peer, [2]string{vs[0].Host, vs[1].Host}, vs
	t.Cleanup(func() {
		if err := s.b.Close(); err != nil {
			t.Errorf("close bridge: %v", err)
		}
		if s.m != nil {
			s.m.Close()
		}
	})
	s.start(t, kernel)
	// Static neighbours: no ARP in the measured traffic.
	s.nsA.MustExec(t, "ip", "neigh", "replace", "10.210.0.2", "lladdr", kpMACB.String(), "dev", s.peerA, "nud", "permanent")
	if s.vlan != [2]uint16{} {
		// Nor from B: the pipelines with VLANs have no ARP flows.
		s.nsB.MustExec(t, "ip", "neigh", "replace", "10.210.0.1", "lladdr", kpMACA.String(), "dev", vs[1].Peer, "nud", "permanent")
	}
	return s
}

// start builds the bridge (pipeline, conntrack, kernel path) and adds
// the two ports.
func (s *kpSetup) start(t *testing.T, kernel bool) {
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, s.flows, nil); err != nil {
		t.Fatal(err)
	}
	// The kernel path relaxes TCP window tracking (docs/offload.md).
	s.tr = conntrack.New(conntrack.Config{NoTCPSeqCheck: kernel, Timeouts: s.timeouts})
	p.Conntrack = &ctadapter.Adapter{T: s.tr}
	s.b = NewBridge("br-kp", 1, p, nil)
	if kernel {
		m, err := offload.NewManager(nil, s.pinDir)
		if err != nil {
			t.Fatal(err)
		}
		s.m = m
		s.b.EnableOffload(m)
	}
	// The program attaches by ifindex in the caller's namespace: add the
	// ports from the switch namespace.
	cfg := afpacket.Config{VnetHdr: s.vnet}
	if (s.vnet || s.tc) && kernel {
		cfg.Upcall = true
	}
	err := s.sw.Do(func() error {
		for i, name := range s.hosts {
			pt, err := afpacket.Open(name, cfg)
			if err != nil {
				return err
			}
			if _, err := s.b.AddPort(uint32(i+1), pt, KindSystem); err != nil {
				pt.Close()
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// restart stops the bridge leaving the pinned kernel state (a clean
// stop of govs-vswitchd), starts a new one with a new conntrack, and
// revalidates the adopted entries. It returns how many were kept and
// removed.
func (s *kpSetup) restart(t *testing.T) (kept, removed int) {
	s.m.Retain()
	if err := s.b.Close(); err != nil {
		t.Fatal(err)
	}
	s.m.Close()
	s.start(t, true)
	if !s.m.Adopting() {
		t.Fatal("the new manager adopted nothing")
	}
	return s.b.RevalidateOffload(s.tr.Adopt)
}

// ruleStats returns the counters of the flow with cookie c.
func (s *kpSetup) ruleStats(t *testing.T, c uint64) (packets, bytes uint64) {
	rs := s.b.Pipeline().Flows(&flowtable.FlowFilter{Table: 255, Cookie: c, CookieMask: ^uint64(0), OutPort: flowtable.PortNone, OutGroup: 0xffffffff})
	if len(rs) != 1 {
		t.Fatalf("cookie %#x: %d flows", c, len(rs))
	}
	return rs[0].Stats.Packets.Load(), rs[0].Stats.Bytes.Load()
}

// tcpConnect opens a connection from A to B:port; B reads it to the end
// and sends the byte count to the channel.
func (s *kpSetup) tcpConnect(t *testing.T, port int) (net.Conn, chan int64) {
	addr := fmt.Sprintf("10.210.0.2:%d", port)
	return s.tcpConnectVia(t, addr, addr)
}

// tcpConnectVia is tcpConnect to addr (a Service's) with B listening on
// listen.
func (s *kpSetup) tcpConnectVia(t *testing.T, addr, listen string) (net.Conn, chan int64) {
	var ln net.Listener
	if err := s.nsB.Do(func() (err error) { ln, err = net.Listen("tcp4", listen); return err }); err != nil {
		t.Fatal(err)
	}
	got := make(chan int64, 1)
	go func() {
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		m, _ := io.Copy(io.Discard, c)
		got <- m
	}()
	var c net.Conn
	if err := s.nsA.Do(func() (err error) { c, err = net.DialTimeout("tcp4", addr, 5*time.Second); return err }); err != nil {
		ln.Close()
		t.Fatal(err)
	}
	return c, got
}

// tcpTransfer sends n bytes from A to B over one connection and returns
// what B received.
func (s *kpSetup) tcpTransfer(t *testing.T, n int) int {
	return s.tcpTransferVia(t, n, "10.210.0.2:7001", "10.210.0.2:7001")
}

// tcpTransferVia is tcpTransfer to addr with B listening on listen.
func (s *kpSetup) tcpTransferVia(t *testing.T, n int, addr, listen string) int {
	c, got := s.tcpConnectVia(t, addr, listen)
	buf := make([]byte, 64<<10)
	for sent := 0; sent < n; sent += len(buf) {
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(buf[:min(len(buf), n-sent)]); err != nil {
			t.Fatalf("tcp write after %d bytes: %v", sent, err)
		}
	}
	c.Close()
	select {
	case m := <-got:
		return int(m)
	case <-time.After(15 * time.Second):
		t.Fatal("tcp transfer did not finish")
		return 0
	}
}

// udpPingPong runs netnstest.UDPPingPong from A:srcPort to B:9001.
func (s *kpSetup) udpPingPong(t *testing.T, srcPort, n, size int) int {
	src := netip.AddrPortFrom(netip.MustParseAddr("10.210.0.1"), uint16(srcPort))
	return netnstest.UDPPingPong(t, s.nsA, s.nsB, src, netip.MustParseAddrPort("10.210.0.2:9001"), n, size)
}

// TestNetnsKernelPathDifferential: TCP and UDP through the ct pipeline
// deliver the same with the kernel path on and off; with it on, the kernel
// forwarded most packets, and the OpenFlow counters include them exactly
// (every established UDP datagram counted once, by one path or the other).
func TestNetnsKernelPathDifferential(t *testing.T) {
	testKernelPathDifferential(t, 400, func(t *testing.T, kernel bool) *kpSetup {
		return newKPSetup(t, kernel, conntrack.Timeouts{})
	})
}

// kpVLANFlows is kpFlows with VLANs: A is untagged (vlanA 0) or on VLAN
// vlanA, B on VLAN vlanB; the established flows rewrite the tag on the
// way (push_vlan from an untagged A, a VID rewrite between two VLANs, or
// with replace a pop and a push), and back (pop_vlan to an untagged A).
// With replace, the tag toward A is 802.1ad: the kernel leaves it to
// userspace (an AF_PACKET socket refuses a full-size frame with an
// 802.1ad tag, which the kernel would forward; A's frames are ACKs).
func kpVLANFlows(vlanA, vlanB uint16, replace bool) string {
	toB, toA, fromA := fmt.Sprintf("push_vlan:0x8100,mod_vlan_vid:%d,", vlanB), "pop_vlan,", "in_port=1,"
	if vlanA != 0 {
		toB, toA, fromA = fmt.Sprintf("mod_vlan_vid:%d,", vlanB), fmt.Sprintf("mod_vlan_vid:%d,", vlanA), fmt.Sprintf("in_port=1,dl_vlan=%d,", vlanA)
	}
	if replace {
		toB, toA = fmt.Sprintf("pop_vlan,push_vlan:0x8100,mod_vlan_vid:%d,", vlanB), fmt.Sprintf("pop_vlan,push_vlan:0x88a8,mod_vlan_vid:%d,", vlanA)
	}
	return fmt.Sprintf(`table=0,priority=10,ip,actions=ct(table=1,zone=1)
table=1,priority=20,cookie=0x1,ct_state=+new+trk,ip,%[3]sactions=ct(commit,zone=1),%[4]soutput:2
table=1,priority=20,cookie=0x2,ct_state=+est+trk,ip,%[3]sactions=mod_dl_src:%[1]s,mod_dl_dst:%[2]s,dec_ttl,%[4]soutput:2
table=1,priority=20,cookie=0x3,ct_state=+est+trk,ip,in_port=2,dl_vlan=%[6]d,actions=mod_dl_src:%[2]s,mod_dl_dst:%[1]s,dec_ttl,%[5]soutput:1
`, kpMACA, kpMACB, fromA, toB, toA, vlanB)
}

// TestNetnsKernelPathVLAN is the differential test through trunks: B's
// address is on VLAN 10 over its veth; the pipeline pushes the tag on
// A's frames and pops it from B's (A untagged), or rewrites VLAN 20 to
// 10 and back (A on VLAN 20), or replaces the tag (pop_vlan, push_vlan;
// 802.1ad toward A). With the kernel path on and off, the same
// data arrives, every port counts the same frames and bytes (a tag
// wrong or missing would not reach the VLAN interface), and the kernel
// forwards most of it, by XDP (tags in the frames) and by the tc path
// (the pods' offloads on: the tags in the skbs; or off, as the daemon's
// veths: the kernel takes the tags out of the frames before TCX).
func TestNetnsKernelPathVLAN(t *testing.T) {
	for _, tc := range []struct {
		name       string
		vlanA      uint16
		vnet, data bool
		tc         bool // the tc path without offload metadata (the daemon's veths)
		replace    bool
		kernelUDP  int // datagrams the kernel forwards at least, of 2 x 400
	}{
		{name: "push-pop/xdp", data: true, kernelUDP: 400},
		{name: "push-pop/tc", vnet: true, kernelUDP: 400},
		{name: "push-pop/tc-complete", tc: true, data: true, kernelUDP: 400},
		// B's tags aside in the skb: generic XDP does not see them (the
		// program matches the frame as untagged, which no entry for
		// B's tagged frames is), so B's direction stays in userspace.
		{name: "push-pop/xdp-accel-tags", kernelUDP: 380},
		{name: "modify/xdp", vlanA: 20, data: true, kernelUDP: 400},
		{name: "modify/tc", vlanA: 20, vnet: true, kernelUDP: 400},
		{name: "modify/tc-complete", vlanA: 20, tc: true, kernelUDP: 400},
		{name: "replace/xdp", vlanA: 20, data: true, replace: true, kernelUDP: 380},
		{name: "replace/tc", vlanA: 20, vnet: true, replace: true, kernelUDP: 380},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testKernelPathDifferential(t, tc.kernelUDP, func(t *testing.T, kernel bool) *kpSetup {
				return newKPSetupWith(t, kernel, &kpSetup{flows: kpVLANFlows(tc.vlanA, 10, tc.replace), vlan: [2]uint16{tc.vlanA, 10},
					vnet: tc.vnet, tc: tc.tc, txvlanOff: tc.data})
			})
		})
	}
}

// testKernelPathDifferential runs TCP and UDP from A to B through the
// setup newSetup makes, with the kernel path off and on, and compares;
// the kernel must have forwarded kernelUDP datagrams of the UDP phase.
func testKernelPathDifferential(t *testing.T, kernelUDP int, newSetup func(t *testing.T, kernel bool) *kpSetup) {
	const tcpBytes, udpN, udpSize = 8 << 20, 400, 200
	// Port counters after the UDP phase: port 1's rx and port 2's tx
	// count every datagram A sent once, whichever path forwarded it.
	type result struct {
		tcp, udp int
		ports    [2]port.Stats // after the UDP phase
	}
	var res [2]result
	for i, kernel := range []bool{false, true} {
		t.Run(fmt.Sprintf("kernel=%v", kernel), func(t *testing.T) {
			s := newSetup(t, kernel)
			res[i].udp = s.udpPingPong(t, 5001, udpN, udpSize)
			settle(func() string {
				if kernel {
					s.m.Stats() // pushes the kernel counters to the flows and ports
				}
				for j := range res[i].ports {
					p, _ := s.b.Port(uint32(j + 1))
					res[i].ports[j] = p.Stats
				}
				return fmt.Sprint(res[i].ports)
			})
			var st offload.Stats
			if kernel {
				st = s.m.Stats()
			}
			// The first datagram is new, every other one established and
			// counted once, whichever path forwarded it, as it came from A.
			frame := uint64(14 + 20 + 8 + udpSize)
			if s.vlan[0] != 0 {
				frame += 4
			}
			if p, b := s.ruleStats(t, 0x2); p != udpN-1 || b != (udpN-1)*frame {
				t.Errorf("est flow A->B after UDP: %d packets %d bytes, want %d and %d", p, b, udpN-1, (udpN-1)*frame)
			}
			res[i].tcp = s.tcpTransfer(t, tcpBytes)
			estPackets, _ := s.ruleStats(t, 0x2)
			newPackets, _ := s.ruleStats(t, 0x1)
			t.Logf("udp %d/%d, tcp %d bytes; flows: new %d est(A->B) %d; ports after UDP %+v", res[i].udp, udpN, res[i].tcp, newPackets, estPackets, res[i].ports)
			if !kernel {
				return
			}
			if st.Packets < uint64(kernelUDP) {
				t.Errorf("kernel forwarded %d UDP packets of %d, want >= %d", st.Packets, 2*udpN, kernelUDP)
			}
			st = s.m.Stats()
			t.Logf("kernel forwarded %d packets, %d bytes; %d entries", st.Packets, st.Bytes, st.Entries)
			if st.Bytes < tcpBytes/2 {
				t.Errorf("kernel forwarded %d bytes in all, want most of the %d bytes TCP stream", st.Bytes, tcpBytes)
			}
		})
	}
	if res[0] != res[1] {
		t.Errorf("delivered without kernel path %+v, with %+v", res[0], res[1])
	}
	if p := res[1].ports; p[0].RxPackets < udpN || p[1].TxPackets < udpN {
		t.Errorf("port counters with the kernel path: port 1 rx %d, port 2 tx %d, want >= %d", p[0].RxPackets, p[1].TxPackets, udpN)
	}
	if res[1].tcp != tcpBytes || res[1].udp != udpN {
		t.Errorf("with kernel path delivered %+v, want tcp %d udp %d", res[1], tcpBytes, udpN)
	}
}

// TestNetnsKernelPathFlowMod: a flow-mod in the middle of offloaded
// traffic applies to the very next packet (the kernel entries are
// invalidated before the flow-mod returns), the restored flow is
// offloaded again, and a port-mod applies at once as well.
func TestNetnsKernelPathFlowMod(t *testing.T) {
	s := newKPSetup(t, true, conntrack.Timeouts{})
	if got := s.udpPingPong(t, 5002, 100, 100); got != 100 {
		t.Fatalf("before the flow-mod: %d/100 answers", got)
	}
	before := s.m.Stats()
	if before.Packets < 100 || before.Entries == 0 {
		t.Fatalf("kernel path not in use before the flow-mod: %+v", before)
	}
	drop := "table=1,priority=20,cookie=0x2,ct_state=+est+trk,ip,in_port=1,actions=drop"
	if err := flowtext.Load(s.b.Pipeline(), drop, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.udpPingPong(t, 5002, 3, 100); got != 0 {
		t.Errorf("after the flow-mod to drop: %d/3 answers, want 0 (a stale kernel entry forwarded)", got)
	}
	restore := fmt.Sprintf("table=1,priority=20,cookie=0x2,ct_state=+est+trk,ip,in_port=1,actions=mod_dl_src:%s,mod_dl_dst:%s,dec_ttl,output:2", kpMACA, kpMACB)
	if err := flowtext.Load(s.b.Pipeline(), restore, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.udpPingPong(t, 5002, 100, 100); got != 100 {
		t.Errorf("after restoring the flow: %d/100 answers", got)
	}
	if after := s.m.Stats(); after.Packets < before.Packets+100 {
		t.Errorf("the restored flow was not offloaded again: kernel packets %d -> %d", before.Packets, after.Packets)
	}
	// A port-mod (no-fwd on B's port) stops the kernel path at once too.
	if err := s.b.SetPortConfig(2, PortConfigNoFwd, PortConfigNoFwd); err != nil {
		t.Fatal(err)
	}
	if got := s.udpPingPong(t, 5002, 3, 100); got != 0 {
		t.Errorf("with port 2 no-fwd: %d/3 answers, want 0", got)
	}
	if err := s.b.SetPortConfig(2, 0, PortConfigNoFwd); err != nil {
		t.Fatal(err)
	}
	if got := s.udpPingPong(t, 5002, 20, 100); got != 20 {
		t.Errorf("with port 2 forwarding again: %d/20 answers", got)
	}
}

// TestNetnsKernelPathLongTCP: a TCP connection the kernel forwards for
// longer than conntrack's established timeout keeps its entry (the
// program's keepalive packets refresh it); its FIN goes through userspace
// and closes the entry as before.
func TestNetnsKernelPathLongTCP(t *testing.T) {
	const idle = 2 * time.Second
	s := newKPSetup(t, true, conntrack.Timeouts{TCPEstablished: idle})
	c, got := s.tcpConnect(t, 7002)
	conn := func() *conntrack.Entry {
		for _, e := range s.tr.Dump(conntrack.DumpFilter{}) {
			if e.Orig.Proto == 6 && e.Orig.DstPort == 7002 {
				return &e
			}
		}
		return nil
	}
	buf := make([]byte, 16<<10)
	var sent int64
	end := time.Now().Add(2*idle + time.Second)
	for time.Now().Before(end) {
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Write(buf)
		sent += int64(n)
		if err != nil {
			t.Fatalf("write after %d bytes: %v", sent, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	e := conn()
	if e == nil {
		t.Fatalf("conntrack entry expired while the kernel forwarded the connection (%d bytes sent)", sent)
	}
	if e.TCPStateName() != "ESTABLISHED" {
		t.Errorf("connection state %s, want ESTABLISHED", e.TCPStateName())
	}
	st := s.m.Stats()
	if st.Bytes < uint64(sent)/2 {
		t.Errorf("kernel forwarded %d bytes of %d: the connection was not offloaded", st.Bytes, sent)
	}
	c.Close()
	if m := <-got; m != sent {
		t.Errorf("received %d bytes, sent %d", m, sent)
	}
	time.Sleep(300 * time.Millisecond)
	if e := conn(); e != nil && e.TCPStateName() == "ESTABLISHED" {
		t.Errorf("after the FIN the connection is still %s", e.TCPStateName())
	}
}

// kpDNATFlows is kpFlows with a Service: 10.210.0.100:80 is translated to
// B's 10.210.0.2:7101 (committed by the first packet, ct(nat) on every
// packet after, as Antrea's Service pipeline does).
var kpDNATFlows = fmt.Sprintf(`table=0,priority=10,arp,in_port=1,actions=output:2
table=0,priority=10,arp,in_port=2,actions=output:1
table=0,priority=10,ip,actions=ct(table=1,zone=1,nat)
table=1,priority=20,cookie=0x1,ct_state=+new+trk,ip,in_port=1,nw_dst=10.210.0.100,actions=ct(commit,zone=1,nat(dst=10.210.0.2:7101)),output:2
table=1,priority=20,cookie=0x2,ct_state=+est+trk,ip,in_port=1,actions=mod_dl_src:%[1]s,mod_dl_dst:%[2]s,dec_ttl,output:2
table=1,priority=20,cookie=0x3,ct_state=+est+trk,ip,in_port=2,actions=mod_dl_src:%[2]s,mod_dl_dst:%[1]s,dec_ttl,output:1
`, kpMACA, kpMACB)

// kpDNATVLANFlows is kpDNATFlows with B on VLAN vlanB (no ARP flows:
// the setup's neighbours are static).
func kpDNATVLANFlows(vlanB uint16) string {
	return fmt.Sprintf(`table=0,priority=10,ip,actions=ct(table=1,zone=1,nat)
table=1,priority=20,cookie=0x1,ct_state=+new+trk,ip,in_port=1,nw_dst=10.210.0.100,actions=ct(commit,zone=1,nat(dst=10.210.0.2:7101)),push_vlan:0x8100,mod_vlan_vid:%[3]d,output:2
table=1,priority=20,cookie=0x2,ct_state=+est+trk,ip,in_port=1,actions=mod_dl_src:%[1]s,mod_dl_dst:%[2]s,dec_ttl,push_vlan:0x8100,mod_vlan_vid:%[3]d,output:2
table=1,priority=20,cookie=0x3,ct_state=+est+trk,ip,in_port=2,dl_vlan=%[3]d,actions=mod_dl_src:%[2]s,mod_dl_dst:%[1]s,dec_ttl,pop_vlan,output:1
`, kpMACA, kpMACB, vlanB)
}

// TestNetnsKernelPathDNAT: UDP and TCP to a Service address deliver the
// same with the kernel path on and off; with it on the kernel forwarded
// most packets, rewriting addresses, ports and checksums both ways (the
// pods' veths verify checksums: their offloads are off, so a wrong one
// is a lost datagram or a stalled stream), and the OpenFlow counters see
// every established datagram once.
func TestNetnsKernelPathDNAT(t *testing.T) { testKernelPathDNAT(t, false, 0, 4<<20) }

// TestNetnsKernelPathDNATVLAN is TestNetnsKernelPathDNAT with B on VLAN
// 10 behind a trunk: the program rewrites addresses, ports and checksums
// and then pushes the tag (pops it the other way), on XDP (the tag in the
// frame: the L3/L4 headers move by 4 bytes) and on the tc path.
func TestNetnsKernelPathDNATVLAN(t *testing.T) {
	for _, vnet := range []bool{false, true} {
		t.Run(fmt.Sprintf("vnet=%v", vnet), func(t *testing.T) { testKernelPathDNAT(t, vnet, 10, 4<<20) })
	}
}

// testKernelPathDNAT runs the DNAT differential with the pods' offloads
// and the ports' offload metadata on (vnet) or off.
// testKernelPathDNAT runs it with or without the pods' offloads (vnet)
// and with B untagged (vlanB 0) or on VLAN vlanB.
func testKernelPathDNAT(t *testing.T, vnet bool, vlanB uint16, tcpBytes int) {
	const udpN, udpSize = 300, 120
	vip, backend := netip.MustParseAddrPort("10.210.0.100:80"), netip.MustParseAddrPort("10.210.0.2:7101")
	type result struct{ tcp, udp int }
	var res [2]result
	for i, kernel := range []bool{false, true} {
		t.Run(fmt.Sprintf("kernel=%v", kernel), func(t *testing.T) {
			setup := &kpSetup{flows: kpDNATFlows, vnet: vnet}
			if vlanB != 0 {
				setup = &kpSetup{flows: kpDNATVLANFlows(vlanB), vnet: vnet, vlan: [2]uint16{0, vlanB}, txvlanOff: !vnet}
			}
			s := newKPSetupWith(t, kernel, setup)
			s.nsA.MustExec(t, "ip", "neigh", "replace", vip.Addr().String(), "lladdr", kpMACB.String(), "dev", s.peerA, "nud", "permanent")
			src := netip.MustParseAddrPort("10.210.0.1:5101")
			res[i].udp = netnstest.UDPPingPongVia(t, s.nsA, s.nsB, src, vip, backend, udpN, udpSize)
			var udpKernel uint64
			if kernel {
				udpKernel = s.m.Stats().Packets // pushes the kernel counters to the flows
			}
			if p, _ := s.ruleStats(t, 0x2); p != udpN-1 {
				t.Errorf("est flow A->B after UDP: %d packets, want %d", p, udpN-1)
			}
			res[i].tcp = s.tcpTransferVia(t, tcpBytes, vip.String(), backend.String())
			if !kernel {
				return
			}
			st := s.m.Stats()
			t.Logf("kernel forwarded %d UDP packets, %d packets %d bytes in all", udpKernel, st.Packets, st.Bytes)
			if udpKernel < udpN {
				t.Errorf("kernel forwarded %d UDP packets, want most of the %d each way", udpKernel, 2*udpN)
			}
			if st.Bytes < uint64(tcpBytes)/2 {
				t.Errorf("kernel forwarded %d bytes in all, want most of the %d bytes TCP stream", st.Bytes, tcpBytes)
			}
			if tcp := st.Packets - udpKernel; vnet && (tcp == 0 || (st.Bytes-udpKernel*udpSize)/tcp < 3000) {
				t.Errorf("kernel forwarded %d TCP packets of %d bytes: want super-segments (offloads on)", tcp, st.Bytes)
			}
		})
	}
	if res[0] != res[1] || res[1] != (result{tcpBytes, udpN}) {
		t.Errorf("delivered without kernel path %+v, with %+v, want tcp %d udp %d", res[0], res[1], tcpBytes, udpN)
	}
}

// TestNetnsKernelPathOneWayUDP: a UDP stream nobody answers is never
// established in both directions, so conntrack keeps it +new and it stays
// in userspace (docs/offload.md): every datagram is delivered and counted
// by the userspace path, none by the kernel, and no entry is installed.
// Once B answers, the same stream is offloaded.
func TestNetnsKernelPathOneWayUDP(t *testing.T) {
	const n, size = 200, 64
	s := newKPSetup(t, true, conntrack.Timeouts{})
	var srv, cli *net.UDPConn
	if err := s.nsB.Do(func() (err error) {
		srv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 210, 0, 2), Port: 9101})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := s.nsA.Do(func() (err error) {
		cli, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 210, 0, 1), Port: 5201})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	buf := make([]byte, 2048)
	got := 0
	for i := 0; i < n; i++ {
		if _, err := cli.WriteToUDP(make([]byte, size), srv.LocalAddr().(*net.UDPAddr)); err != nil {
			t.Fatal(err)
		}
		srv.SetReadDeadline(time.Now().Add(time.Second))
		if _, _, err := srv.ReadFromUDP(buf); err == nil {
			got++
		}
	}
	cli.Close()
	st := s.m.Stats()
	newPackets, _ := s.ruleStats(t, 0x1)
	if got != n || st.Packets != 0 || st.Entries != 0 || newPackets != n {
		t.Errorf("one-way UDP: delivered %d/%d, kernel forwarded %d with %d entries, +new flow counted %d (want %d, 0, 0, %d)", got, n, st.Packets, st.Entries, newPackets, n, n)
	}
	// An answer establishes the connection: then the kernel takes it.
	if m := s.udpPingPong(t, 5201, 50, size); m != 50 {
		t.Fatalf("after the answer: %d/50 echoes", m)
	}
	if st := s.m.Stats(); st.Packets == 0 || st.Entries == 0 {
		t.Errorf("answered stream not offloaded: %+v", st)
	}
}

// TestNetnsKernelPathRestartDNAT: a TCP stream to a Service address,
// offloaded both ways with its NAT, goes on while the bridge is closed
// with its kernel state retained (no userspace at all) and a new bridge
// with a new conntrack adopts it: both entries are kept, conntrack
// knows the connection with its translation (so the replies are still
// un-DNATed and the FIN closes it), every byte arrives and the kernel
// keeps forwarding.
func TestNetnsKernelPathRestartDNAT(t *testing.T) {
	vip, backend := netip.MustParseAddrPort("10.210.0.100:80"), netip.MustParseAddrPort("10.210.0.2:7101")
	dir := offload.PinDir(filepath.Join(netnstest.MountBPFFS(t), "govs"), t.TempDir(), "br-kp")
	s := newKPSetupPinned(t, true, conntrack.Timeouts{}, kpDNATFlows, dir)
	s.nsA.MustExec(t, "ip", "neigh", "replace", vip.Addr().String(), "lladdr", kpMACB.String(), "dev", s.peerA, "nud", "permanent")
	c, got := s.tcpConnectVia(t, vip.String(), backend.String())
	var sent int64
	write := func(d time.Duration) {
		buf := make([]byte, 16<<10)
		for end := time.Now().Add(d); time.Now().Before(end); {
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			n, err := c.Write(buf)
			sent += int64(n)
			if err != nil {
				t.Fatalf("write after %d bytes: %v", sent, err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	write(time.Second)
	if st := s.m.Stats(); st.Entries != 2 || st.Packets == 0 {
		t.Fatalf("before the restart: %+v, want both directions offloaded", st)
	}
	// Each direction's entry records the connection as conntrack has it.
	want := conntrack.Entry{
		Orig:  conntrack.Tuple{Src: netip.MustParseAddr("10.210.0.1"), Dst: vip.Addr(), Proto: 6, DstPort: vip.Port()},
		Reply: conntrack.Tuple{Src: backend.Addr(), Dst: netip.MustParseAddr("10.210.0.1"), Proto: 6, SrcPort: backend.Port()},
		Zone:  1,
	}
	conns := s.m.Conns()
	for i := range conns {
		want.Orig.SrcPort, want.Reply.DstPort = conns[i].Orig.SrcPort, conns[i].Orig.SrcPort
	}
	if len(conns) != 2 || conns[0] != want || conns[1] != want {
		t.Fatalf("pinned connection records %+v, want twice %+v", conns, want)
	}
	kept, removed := s.restart(t)
	if kept != 2 || removed != 0 {
		t.Errorf("revalidation kept %d, removed %d; want 2, 0", kept, removed)
	}
	var conn *conntrack.Entry
	for _, e := range s.tr.Dump(conntrack.DumpFilter{}) {
		if e.Orig.Dst == vip.Addr() {
			conn = &e
		}
	}
	if conn == nil || conn.Orig.DstPort != vip.Port() || conn.Reply.Src != backend.Addr() || conn.Reply.SrcPort != backend.Port() || conn.Zone != 1 {
		t.Fatalf("the new conntrack has %+v, want the Service connection with its DNAT in zone 1", conn)
	}
	write(2 * time.Second)
	if st := s.m.Stats(); st.Entries != 2 || st.Packets == 0 {
		t.Errorf("after the restart: %+v, want both directions still offloaded", st)
	}
	c.Close()
	select {
	case m := <-got:
		if m != sent {
			t.Errorf("received %d bytes, sent %d", m, sent)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no FIN after the restart")
	}
	time.Sleep(300 * time.Millisecond)
	for _, e := range s.tr.Dump(conntrack.DumpFilter{}) {
		if e.Orig.Dst == vip.Addr() && e.TCPStateName() == "ESTABLISHED" {
			t.Errorf("after the FIN the adopted connection is still ESTABLISHED")
		}
	}
}

// TestNetnsKernelPathOffloadsOn: with the pods' offloads on (TSO
// super-segments, partial checksums; the ports with offload metadata) the
// kernel path is the tc path: the DNAT differential (a Service stream
// and UDP, same delivery with the path on and off) with the kernel
// forwarding most of the stream as super-segments (more bytes per packet
// than the MTU), the ports' sockets getting only what it sends up.
func TestNetnsKernelPathOffloadsOn(t *testing.T) { testKernelPathDNAT(t, true, 0, 32<<20) }

// TestNetnsKernelPathRecreatedPort: B's interface is deleted and created
// again under its name while the bridge runs. The port binds to the new
// one as a tap (the program was on the interface that is gone), and the
// kernel path must not redirect to the old ifindex: established UDP
// from A to B, which the kernel forwarded before, is answered every time
// after (without the check, A's entry toward B lost every datagram after
// the fourth).
func TestNetnsKernelPathRecreatedPort(t *testing.T) {
	s := newKPSetupWith(t, true, &kpSetup{flows: kpFlows, tc: true})
	if got := s.udpPingPong(t, 5300, 50, 64); got != 50 {
		t.Fatalf("before: %d/50 answers", got)
	}
	if st := s.m.Stats(); st.Packets == 0 {
		t.Fatalf("before: the kernel forwarded nothing (%+v)", st)
	}
	s.veths[1].Recreate(t, netnstest.VethOptions{PeerAddr: "10.210.0.2/24", PeerMAC: kpMACB})
	// The port re-attaches within a few of its 100 ms retries.
	deadline := time.Now().Add(10 * time.Second)
	for s.udpPingPong(t, 5301, 1, 64) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("B does not answer after its interface came back")
		}
	}
	for i, port := range []int{5302, 5303, 5304} {
		if got := s.udpPingPong(t, port, 50, 64); got != 50 {
			t.Errorf("after, flow %d: %d/50 answers", i, got)
		}
	}
}
