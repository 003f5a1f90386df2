package datapath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/geneve"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/offload"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// gkNode is one node of the two-node Geneve kernel path tests: a bridge
// with a Geneve port (ofport 1, local_ip on the underlay veth) and one
// pod (ofport 2), through a ct pipeline shaped like Antrea's inter-node
// path (seed 001 §9): the source node rewrites the Ethernet addresses to
// its gateway's and the global virtual MAC, decrements the TTL and sets
// tun_dst and tun_id; the destination node rewrites them to its gateway's
// and the pod's and decrements the TTL again.
type gkNode struct {
	nodeIP, nodeMAC string
	podIP, podMAC   string
	gwIP, gwMAC     string

	node, pod *netnstest.NS
	b         *Bridge
	m         *offload.Manager
	underlay  string // the underlay veth end in node
}

var gkSpecs = [2]gkNode{
	{nodeIP: "10.79.9.1", nodeMAC: "02:dd:00:00:00:01", podIP: "10.211.1.2", podMAC: "02:dd:00:00:01:02", gwIP: "10.211.1.1", gwMAC: "02:dd:00:00:01:01"},
	{nodeIP: "10.79.9.2", nodeMAC: "02:dd:00:00:00:02", podIP: "10.211.2.2", podMAC: "02:dd:00:00:02:02", gwIP: "10.211.2.1", gwMAC: "02:dd:00:00:02:01"},
}

// ovnOption is OVN's Geneve option (class 0x0102, type 0x80: critical,
// 4 bytes: the logical ports), mapped to tun_metadata0 on both nodes.
var ovnOption = flowtable.TLVMapping{Class: 0x102, Type: 0x80, Len: 4, Index: 0}

// gkFlows is node n's pipeline; with option, the source node sends OVN's
// option and the destination node matches it.
func gkFlows(n, peer *gkNode, option bool) string {
	setOpt, matchOpt := "", ""
	if option {
		setOpt, matchOpt = "set_field:0x10002->tun_metadata0,", "tun_metadata0=0x10002,"
	}
	return fmt.Sprintf(`table=0,priority=10,ip,in_port=2,actions=ct(table=1,zone=1)
table=0,priority=10,ip,in_port=1,tun_id=0x5,%[6]sactions=ct(table=1,zone=1)
table=1,priority=20,cookie=0x1,ct_state=+new+trk,ip,in_port=2,actions=ct(commit,zone=1),resubmit(,2)
table=1,priority=20,cookie=0x2,ct_state=+est+trk,ip,in_port=2,actions=resubmit(,2)
table=1,priority=20,cookie=0x3,ct_state=+new+trk,ip,in_port=1,actions=ct(commit,zone=1),resubmit(,3)
table=1,priority=20,cookie=0x4,ct_state=+est+trk,ip,in_port=1,actions=resubmit(,3)
table=2,priority=10,cookie=0x5,actions=mod_dl_src:%[1]s,mod_dl_dst:aa:bb:cc:dd:ee:ff,dec_ttl,set_field:%[2]s->tun_dst,set_field:0x5->tun_id,%[5]soutput:1
table=3,priority=10,cookie=0x6,actions=mod_dl_src:%[1]s,mod_dl_dst:%[3]s,dec_ttl,output:2
`, n.gwMAC, peer.nodeIP, n.podMAC, "", setOpt, matchOpt)
}

// newGeneveKP builds the two nodes, the kernel path on or off on each;
// with vnet the pods keep their offloads and the pod ports exchange
// offload metadata (the tc path where the kernel path is on); with tc
// the pod ports are on the tc path without it. With noLocal the Geneve
// ports have no local_ip but a fixed remote_ip (OVN's shape): the source
// is the kernel's route's; with csum, csum=true.
func newGeneveKP(t *testing.T, kernel [2]bool, option, vnet, tc, underlayOffloads, noLocal, csum bool) [2]*gkNode {
	return newGeneveKPWith(t, kernel, option, vnet, tc, underlayOffloads, noLocal, csum, [2]string{}, nil)
}

// newGeneveKPWith is newGeneveKP with node i's kernel state pinned in
// pinDirs[i] (""; not pinned) and first, when set, run in each node's
// namespace before its Geneve port is added.
func newGeneveKPWith(t *testing.T, kernel [2]bool, option, vnet, tc, underlayOffloads, noLocal, csum bool, pinDirs [2]string, first func(i int, n *gkNode) error) [2]*gkNode {
	var nodes [2]*gkNode
	for i := range nodes {
		n := gkSpecs[i]
		nodes[i] = &n
		n.node, n.pod = netnstest.NewNS(t), netnstest.NewNS(t)
	}
	u := netnstest.NewVeth(t, nodes[0].node, nodes[1].node, netnstest.VethOptions{
		HostAddr: nodes[0].nodeIP + "/24", HostMAC: mustMAC(nodes[0].nodeMAC),
		PeerAddr: nodes[1].nodeIP + "/24", PeerMAC: mustMAC(nodes[1].nodeMAC), KeepOffloads: underlayOffloads,
	})
	nodes[0].underlay, nodes[1].underlay = u.Host, u.Peer
	for i, n := range nodes {
		peer := nodes[1-i]
		// Static neighbours: no ARP in the measured traffic.
		n.node.MustExec(t, "ip", "neigh", "replace", peer.nodeIP, "lladdr", peer.nodeMAC, "dev", n.underlay, "nud", "permanent")
		// The underlay's 1500 less the outer headers (and OVN's option:
		// OVN sets 1442), so full-size segments fit the tunnel.
		mtu := 1450
		if option {
			mtu = 1442
		}
		v := netnstest.NewVeth(t, n.node, n.pod, netnstest.VethOptions{PeerAddr: n.podIP + "/24", PeerMAC: mustMAC(n.podMAC), MTU: mtu, KeepOffloads: vnet})
		n.pod.MustExec(t, "ip", "neigh", "replace", n.gwIP, "lladdr", n.gwMAC, "dev", v.Peer, "nud", "permanent")
		n.pod.MustExec(t, "ip", "route", "add", "default", "via", n.gwIP)

		p := flowtable.NewPipeline()
		if option {
			if err := p.TLV.Add(ovnOption); err != nil {
				t.Fatal(err)
			}
		}
		if err := flowtext.Load(p, gkFlows(n, peer, option), nil); err != nil {
			t.Fatal(err)
		}
		p.Conntrack = &ctadapter.Adapter{T: conntrack.New(conntrack.Config{NoTCPSeqCheck: kernel[i]})}
		n.b = NewBridge(fmt.Sprintf("br-gk%d", i), uint64(i+1), p, nil)
		t.Cleanup(func() {
			if err := n.b.Close(); err != nil {
				t.Errorf("close bridge: %v", err)
			}
			if n.m != nil {
				n.m.Close()
			}
		})
		if kernel[i] {
			m, err := offload.NewManager(nil, pinDirs[i])
			if err != nil {
				t.Fatal(err)
			}
			n.m = m
			n.b.EnableOffload(m)
		}
		err := n.node.Do(func() error {
			if first != nil {
				if err := first(i, n); err != nil {
					return err
				}
			}
			gc := geneve.Config{Name: "tun0", LocalIP: netip.MustParseAddr(n.nodeIP), ReadTimeout: 20 * time.Millisecond, Csum: csum}
			if noLocal {
				gc.LocalIP, gc.RemoteIP = netip.Addr{}, netip.MustParseAddr(peer.nodeIP)
			}
			tun, err := geneve.Open(gc)
			if err != nil {
				return err
			}
			if _, err := n.b.AddPort(1, tun, KindTunnel); err != nil {
				tun.Close()
				return err
			}
			cfg := afpacket.Config{VnetHdr: vnet}
			if (vnet || tc) && n.m != nil {
				cfg.Upcall = true
			}
			pt, err := afpacket.Open(v.Host, cfg)
			if err != nil {
				return err
			}
			if _, err := n.b.AddPort(2, pt, KindSystem); err != nil {
				pt.Close()
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

// capture collects the frames a raw socket on ifname in ns receives
// until the returned function is called, which returns them. The socket
// queues them all (its buffer holds thousands of the test's datagrams)
// and the function drains the queue: a reader running alongside fell
// behind on a loaded machine, and frames past the default buffer's 167
// were dropped or left unread at its stop. Every frame the kernel put on
// the socket before the call is returned, and one dropped fails the test.
func capture(t *testing.T, ns *netnstest.NS, ifname string) func() [][]byte {
	s := netnstest.NewRawSocket(t, ns, ifname)
	if err := unix.SetsockoptInt(s.FD(), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20); err != nil {
		t.Fatalf("capture on %s: SO_RCVBUFFORCE: %v", ifname, err)
	}
	return func() [][]byte {
		var frames [][]byte
		buf := make([]byte, 65536)
		for {
			n, _, err := unix.Recvfrom(s.FD(), buf, unix.MSG_DONTWAIT)
			if err == unix.EINTR {
				continue
			}
			if err == unix.EAGAIN {
				break
			}
			if err != nil {
				t.Fatalf("capture on %s: %v", ifname, err)
			}
			frames = append(frames, append([]byte(nil), buf[:n]...))
		}
		st, err := unix.GetsockoptTpacketStats(s.FD(), unix.SOL_PACKET, unix.PACKET_STATISTICS)
		if err != nil {
			t.Fatalf("capture on %s: PACKET_STATISTICS: %v", ifname, err)
		}
		if st.Drops != 0 {
			t.Fatalf("capture on %s dropped %d of %d frames: its count is not the wire's", ifname, st.Drops, st.Packets)
		}
		return frames
	}
}

// TestNetnsKernelPathGeneve: UDP and TCP between pods on two nodes through
// Geneve (Antrea's shape without options, OVN's with its option), with
// the kernel path off on both nodes, on the source node only (the
// program encapsulates; the destination decapsulates in userspace), and on
// both (the program also decapsulates): the same datagrams and bytes are
// delivered, every port of both bridges counts the same frames and bytes
// (the kernel's included), the flows count every established datagram
// once, and the encapsulated datagrams on the wire are byte for byte the
// ones govs's tunnel port sends. With the path on, the kernel did most of
// the encapsulating and decapsulating.
//
// With vnet the pods keep their offloads (TSO super-segments, partial
// checksums) and the pod ports are on the tc path: the TCX program
// encapsulates, keeping super-segments whole until the underlay's
// transmit cuts them (its offloads are off: software GSO and checksums,
// what a NIC without tunnel offloads gets). With the underlay's offloads
// on too (a veth keeping partial checksums inside the kernel), the tc
// path leaves encapsulation to userspace (offload.KeepsOffloadsInHost).
// Pod ports on the tc path without offload metadata (the pods' offloads
// off) send complete frames, which it encapsulates through either. For
// csum=true ports (OVN's) the program computes the outer UDP checksum
// (XDP and tc alike; every captured datagram's is checked), the tc path
// of frames only: super-segments go to userspace, which checksums each
// segment, and still arrive once.
func TestNetnsKernelPathGeneve(t *testing.T) {
	const udpN, udpSize, tcpBytes = 300, 200, 4 << 20
	// tc: the pod port on the tc path without offload metadata (a veth,
	// as govs-vswitchd puts it where the kernel has TCX); vnet implies it.
	for _, tc := range []struct{ option, vnet, tc, underlayOffloads, noLocal, csum bool }{
		{false, false, false, false, false, false}, {true, false, false, false, false, false}, {false, false, true, false, false, false},
		{false, false, true, true, false, false}, {false, true, true, false, false, false}, {false, true, true, true, false, false},
		{true, false, false, false, true, false}, {true, false, false, false, true, true}, // OVN's ports: no local_ip, csum=true
		{true, false, true, false, true, true}, // the same on the tc path, which checksums frames
		{true, true, true, false, true, true},  // and with the pods' offloads: super-segments (and partial checksums)
	} {
		option, vnet, tcPath, inHost, noLocal, csum := tc.option, tc.vnet, tc.tc, tc.underlayOffloads, tc.noLocal, tc.csum
		name := fmt.Sprintf("option=%v,vnet=%v,tc=%v,underlay_offloads=%v", option, vnet, tcPath, inHost)
		if noLocal {
			name += ",no_local_ip"
		}
		if csum {
			name += ",csum"
		}
		t.Run(name, func(t *testing.T) {
			type ports [2]map[uint32]struct{ RxPackets, RxBytes, TxPackets, TxBytes uint64 }
			type result struct {
				udp, tcp int
				ports    ports
				wire     map[string]int // A->B datagrams on the underlay
			}
			modes := [][2]bool{{false, false}, {true, false}, {true, true}}
			res := make([]result, len(modes))
			for r, kernel := range modes {
				t.Run(fmt.Sprintf("kernel=%v", kernel), func(t *testing.T) {
					nodes := newGeneveKP(t, kernel, option, vnet, tcPath, inHost, noLocal, csum)
					var frames func() [][]byte
					if !kernel[1] {
						// Without the program on node 2's underlay its
						// taps see every datagram node 1 sends.
						frames = capture(t, nodes[1].node, nodes[1].underlay)
					}
					src := netip.AddrPortFrom(netip.MustParseAddr(nodes[0].podIP), 5001)
					res[r].udp = netnstest.UDPPingPong(t, nodes[0].pod, nodes[1].pod, src, netip.AddrPortFrom(netip.MustParseAddr(nodes[1].podIP), 9001), udpN, udpSize)
					res[r].ports = settledPorts(t, nodes)
					if frames != nil {
						res[r].wire = map[string]int{}
						for _, f := range frames() {
							if len(f) > 50 && binary.BigEndian.Uint16(f[12:]) == 0x0800 && f[23] == 17 && binary.BigEndian.Uint16(f[36:]) == 6081 &&
								net.IP(f[26:30]).String() == nodes[0].nodeIP {
								res[r].wire[wireKey(f)]++
								if sum := f[40:42]; csum != (sum[0]|sum[1] != 0) || csum && !validUDPChecksum(f[14:]) {
									t.Errorf("datagram with UDP checksum %x (csum=%v): %x", sum, csum, f)
								}
							}
						}
					}
					// The first datagram each way is new; every other one
					// established, counted once by whichever path took it.
					inner := uint64(udpN-1) * (14 + 20 + 8 + udpSize)
					for _, c := range []struct {
						node   int
						cookie uint64
					}{{0, 0x2}, {1, 0x4}} {
						if p, b := flowStats(t, nodes[c.node].b, c.cookie); p != udpN-1 || b != inner {
							t.Errorf("node %d flow %#x after UDP: %d packets %d bytes, want %d and %d", c.node+1, c.cookie, p, b, udpN-1, inner)
						}
					}
					for i, n := range nodes {
						if n.m == nil {
							continue
						}
						c := n.m.PortStats(offload.PortID(1))
						t.Logf("node %d: kernel encapsulated %d, decapsulated %d datagrams", i+1, c.TxPackets, c.RxPackets)
						// Frames with offload metadata are not encapsulated
						// through a veth keeping offloads; complete ones are,
						// and with csum=true frames with partial checksums
						// too (the outer checksum, checked on the wire,
						// counts the inner one as the underlay finishes it).
						leftToUser := vnet && inHost
						if leftToUser && c.TxPackets != 0 {
							t.Errorf("node %d: the tc path encapsulated %d datagrams it leaves to userspace (offload metadata through a veth keeping offloads)", i+1, c.TxPackets)
						}
						if !leftToUser && c.TxPackets < udpN/2 {
							t.Errorf("node %d: the kernel encapsulated %d of the %d datagrams it sent", i+1, c.TxPackets, udpN)
						}
						if kernel[1-i] && c.RxPackets < udpN/2 {
							t.Errorf("node %d: the kernel decapsulated %d of the %d datagrams it got", i+1, c.RxPackets, udpN)
						}
					}
					var before [2]offload.PortCounters
					for i, n := range nodes {
						if n.m != nil {
							n.m.Stats() // pushes the kernel counters
							before[i] = n.m.PortStats(offload.PortID(1))
						}
					}
					rcvbufErrs := udpRcvbufErrors(t, nodes[1].node)
					res[r].tcp = gkTCP(t, nodes[0].pod, nodes[1].pod, nodes[1].podIP+":7001", tcpBytes)
					if !kernel[1] {
						// Node 2's Geneve socket holds the bursts of datagrams
						// the super-segments are cut into (some 3,000 in all);
						// with the kernel's default buffer it dropped 700-760,
						// which the sender retransmitted.
						d := udpRcvbufErrors(t, nodes[1].node) - rcvbufErrs
						t.Logf("node 2: the Geneve socket dropped %d datagrams during the TCP stream", d)
						if d > tcpBytes/1400/20 {
							t.Errorf("node 2: the Geneve socket dropped %d datagrams of the %d bytes TCP stream (UdpRcvbufErrors)", d, tcpBytes)
						}
					}
					for i, n := range nodes {
						if n.m != nil {
							st := n.m.Stats()
							t.Logf("node %d: kernel forwarded %d packets, %d bytes in all", i+1, st.Packets, st.Bytes)
							if st.Bytes < tcpBytes/2 && (i == 1 || !(vnet && (inHost || csum))) {
								t.Errorf("node %d: kernel forwarded %d bytes, want most of the %d bytes TCP stream", i+1, st.Bytes, tcpBytes)
							}
							// The sender's super-segments were encapsulated whole:
							// what the kernel sent out the tunnel port (the
							// decapsulated ACKs, as many again when node 2 answers
							// from userspace, are not the question).
							tx := n.m.PortStats(offload.PortID(1))
							p, b := tx.TxPackets-before[i].TxPackets, tx.TxBytes-before[i].TxBytes
							if i == 0 && vnet && !inHost && !csum && (p == 0 || b/p <= 1500) {
								t.Errorf("node 1: the tc path encapsulated %d bytes in %d packets: super-segments were cut before it", b, p)
							}
							// csum=true: a super-segment's segments each need
							// an outer checksum: userspace encapsulates them,
							// the kernel frames only.
							if i == 0 && vnet && csum && (b > p*1514 || b > tcpBytes/2) {
								t.Errorf("node 1: the tc path encapsulated %d bytes in %d packets for a csum=true port: super-segments among them", b, p)
							}
						}
					}
				})
			}
			for r := 1; r < len(modes); r++ {
				if res[r].udp != udpN || res[r].tcp != tcpBytes {
					t.Errorf("kernel %v: delivered %d/%d datagrams, %d/%d bytes", modes[r], res[r].udp, udpN, res[r].tcp, tcpBytes)
				}
				if fmt.Sprint(res[r].ports) != fmt.Sprint(res[0].ports) {
					t.Errorf("port counters after UDP with kernel %v:\n%v\nwithout:\n%v", modes[r], res[r].ports, res[0].ports)
				}
				if res[r].wire != nil {
					if len(res[0].wire) == 0 {
						t.Fatal("no Geneve datagram captured on the underlay")
					}
					if fmt.Sprint(res[r].wire) != fmt.Sprint(res[0].wire) {
						t.Errorf("datagrams on the underlay differ with kernel %v:\n%s\nwithout:\n%s", modes[r], wireSummary(res[r].wire), wireSummary(res[0].wire))
					}
				}
			}
		})
	}
}

// udpRcvbufErrors is ns's UdpRcvbufErrors (/proc/net/snmp): datagrams
// UDP sockets dropped for a full receive buffer.
func udpRcvbufErrors(t *testing.T, ns *netnstest.NS) int {
	t.Helper()
	var n int
	err := ns.Do(func() error {
		data, err := os.ReadFile("/proc/thread-self/net/snmp")
		if err != nil {
			return err
		}
		var names []string
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || f[0] != "Udp:" {
				continue
			}
			if names == nil {
				names = f
				continue
			}
			for i, name := range names {
				if name == "RcvbufErrors" && i < len(f) {
					n, err = strconv.Atoi(f[i])
					return err
				}
			}
		}
		return errors.New("no Udp RcvbufErrors in /proc/net/snmp")
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// wireKey is what must not depend on the path of a Geneve datagram: the
// outer headers with the Geneve header and options, the inner Ethernet
// header, the inner TTL and the length (the inner IPv4 ID and checksum
// are the pod's, different in every run).
func wireKey(f []byte) string {
	inner := 14 + 20 + 8 + 8 + int(f[42]&0x3f)*4
	if len(f) < inner+14+20 {
		return fmt.Sprintf("short %x", f)
	}
	// Nor the outer UDP checksum (csum=true), which covers them: the
	// capture checks it is right.
	return fmt.Sprintf("%x udp csum %x inner %x ttl %d len %d", f[:40], f[42:inner], f[inner:inner+14], f[inner+14+8], len(f))
}

// validUDPChecksum tells whether the IPv4/UDP packet ip (no options) has
// a right UDP checksum.
func validUDPChecksum(ip []byte) bool {
	udp := ip[20:]
	sum := uint32(binary.BigEndian.Uint16(ip[12:])) + uint32(binary.BigEndian.Uint16(ip[14:])) +
		uint32(binary.BigEndian.Uint16(ip[16:])) + uint32(binary.BigEndian.Uint16(ip[18:])) + 17 + uint32(len(udp))
	for i := 0; i+1 < len(udp); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(udp[i:]))
	}
	if len(udp)%2 == 1 {
		sum += uint32(udp[len(udp)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return sum == 0xffff
}

func wireSummary(w map[string]int) string {
	var b strings.Builder
	for f, n := range w {
		fmt.Fprintf(&b, "  %d x %s\n", n, f)
	}
	return b.String()
}

// settledPorts pushes the kernel counters and returns both bridges' port
// counters once they stop moving (the last frames' counts land just after
// the pods got them).
func settledPorts(t *testing.T, nodes [2]*gkNode) (p [2]map[uint32]struct{ RxPackets, RxBytes, TxPackets, TxBytes uint64 }) {
	settle(func() string {
		for i, n := range nodes {
			if n.m != nil {
				n.m.Stats() // pushes the kernel counters to flows and ports
			}
			p[i] = portStats(t, n.b)
		}
		return fmt.Sprint(p)
	})
	return p
}

// settle calls read every 50 ms until it returns the same twice in a
// row (3 s at most): a port counts a frame after the frame has left, so
// the counters may lag behind what the receiver already has.
func settle(read func() string) {
	prev := read()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		s := read()
		if s == prev {
			return
		}
		prev = s
	}
}

// flowStats returns the counters of the flow with cookie c.
func flowStats(t *testing.T, b *Bridge, c uint64) (packets, bytes uint64) {
	t.Helper()
	rs := b.Pipeline().Flows(&flowtable.FlowFilter{Table: 255, Cookie: c, CookieMask: ^uint64(0), OutPort: flowtable.PortNone, OutGroup: 0xffffffff})
	if len(rs) != 1 {
		t.Fatalf("cookie %#x: %d flows", c, len(rs))
	}
	return rs[0].Stats.Packets.Load(), rs[0].Stats.Bytes.Load()
}

// gkTCP sends n bytes over TCP from ns a to addr in ns b and returns how
// many b read, up to the first byte that differs from what was sent (a
// counting pattern: an offset or corruption the checksums missed stops
// the count); a stall fails at the deadlines, not the test's timeout.
func gkTCP(t *testing.T, a, b *netnstest.NS, addr string, n int) int {
	var ln net.Listener
	if err := b.Do(func() (err error) { ln, err = net.Listen("tcp4", addr); return err }); err != nil {
		t.Error(err)
		return 0
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		var m int64
		buf := make([]byte, 64<<10)
		for {
			k, err := c.Read(buf)
			for _, b := range buf[:k] {
				if b != byte(m%251) {
					got <- m
					return
				}
				m++
			}
			if err != nil {
				break
			}
		}
		got <- m
	}()
	var c net.Conn
	if err := a.Do(func() (err error) { c, err = net.DialTimeout("tcp4", addr, 5*time.Second); return err }); err != nil {
		t.Error(err)
		return 0
	}
	c.SetWriteDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 64<<10)
	for sent := 0; sent < n; sent += len(buf) {
		for j := range buf {
			buf[j] = byte((sent + j) % 251)
		}
		if _, err := c.Write(buf[:min(len(buf), n-sent)]); err != nil {
			t.Errorf("tcp write after %d bytes: %v", sent, err)
			break
		}
	}
	c.Close()
	return int(<-got)
}
