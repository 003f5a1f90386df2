package e2e

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// TestGeneveReceiveLikeOVS: which Geneve port, of which bridge, a received
// datagram enters by, the Interface errors of bad tunnel configurations,
// and the outer source of a local_ip=flow port, the same ovs-vsctl and
// ovs-ofctl commands run on govs-vswitchd and on Open vSwitch 3.1 with the
// same peer. The node has two bridges with Geneve ports on UDP 6081
// (fixed remote_ip, local_ip, neither, local_ip=flow, a fixed key, a
// local_ip that is no address of the node), two
// underlay addresses on br-phy, and a peer sending from three addresses.
// Open vSwitch's one datapath serves both bridges and its tnl_find
// (ofproto/tunnel.c) picks the port: fixed key first, then fixed
// remote_ip, then local_ip before none before local_ip=flow.
func TestGeneveReceiveLikeOVS(t *testing.T) {
	results := map[string]string{}
	for _, sw := range []string{"OpenVSwitch", "govs"} {
		t.Run(sw, func(t *testing.T) { results[sw] = testGeneveReceive(t, sw == "govs") })
	}
	if results["govs"] != results["OpenVSwitch"] {
		t.Errorf("govs:\n%s\nOpen vSwitch:\n%s", results["govs"], results["OpenVSwitch"])
	}
}

// geneveRxPorts are the node's tunnel ports: bridge, name, options,
// ofport_request.
var geneveRxPorts = []struct {
	br, name string
	opts     []string
	ofport   int
}{
	{"br-a", "ga", []string{"remote_ip=10.99.0.11", "key=flow"}, 1},
	{"br-a", "ga-l1", []string{"remote_ip=flow", "local_ip=10.99.0.1", "key=flow"}, 2},
	{"br-a", "gk7", []string{"remote_ip=flow", "local_ip=flow", "key=7"}, 3},
	{"br-a", "ga-nohere", []string{"remote_ip=flow", "local_ip=10.99.0.77", "key=9"}, 4}, // no address of the node
	{"br-b", "gb", []string{"remote_ip=10.99.0.12", "key=flow"}, 1},
	{"br-b", "gb-any", []string{"remote_ip=flow", "key=flow"}, 2},
	{"br-b", "gb-lflow", []string{"remote_ip=flow", "local_ip=flow", "key=flow"}, 3},
	// Bad ones: local_ip=flow needs remote_ip=flow; the same match as
	// ga's, on the other bridge.
	{"br-b", "bad-lflow", []string{"remote_ip=10.99.0.11", "local_ip=flow"}, 4},
	{"br-b", "dup", []string{"remote_ip=10.99.0.11", "key=flow"}, 5},
}

// testGeneveReceive runs the walk on govs or Open vSwitch and returns what
// it saw, as text to compare.
func testGeneveReceive(t *testing.T, govs bool) string {
	r := newOVSDBRig(t)
	peer := netnstest.NewNS(t)
	ctl := filepath.Join(r.dir, "ovs-vswitchd.ctl")
	if govs {
		ctl = "ovs-vswitchd" // its pidfile names its control socket
		r.startGovs()
	} else {
		// With the namespace's routes: OVS sends from a flow's tun_src
		// only when its route table has it as a local address.
		r.startOVSWith()
	}
	r.ns.MustExec(t, "ip", "link", "add", "nic0", "type", "veth", "peer", "name", "nic0p", "netns", peer.Name)
	r.ns.MustExec(t, "ip", "link", "set", "nic0", "up")
	for _, a := range []string{"10.99.0.11/24", "10.99.0.12/24", "10.99.0.13/24"} {
		peer.MustExec(t, "ip", "addr", "add", a, "dev", "nic0p")
	}
	peer.MustExec(t, "ip", "link", "set", "nic0p", "up")
	peerMAC := strings.Fields(peer.MustExec(t, "cat", "/sys/class/net/nic0p/address"))[0]

	r.vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev", "fail-mode=standalone",
		"--", "add-port", "br-phy", "nic0")
	r.ns.MustExec(t, "ip", "addr", "add", "10.99.0.1/24", "dev", "br-phy")
	r.ns.MustExec(t, "ip", "addr", "add", "10.99.0.2/24", "dev", "br-phy")
	r.ns.MustExec(t, "ip", "link", "set", "br-phy", "up")
	// The peer knows br-phy's MAC for both addresses: no datagram waits
	// for ARP (the kernel keeps only a few meanwhile).
	phyMAC := strings.Fields(r.ns.MustExec(t, "cat", "/sys/class/net/br-phy/address"))[0]
	for _, a := range []string{"10.99.0.1", "10.99.0.2"} {
		peer.MustExec(t, "ip", "neigh", "replace", a, "lladdr", phyMAC, "dev", "nic0p")
	}
	for _, br := range []string{"br-a", "br-b"} {
		r.vsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev", "fail-mode=secure")
	}
	for _, p := range geneveRxPorts {
		args := []string{"add-port", p.br, p.name, "--", "set", "interface", p.name, "type=geneve",
			fmt.Sprintf("ofport_request=%d", p.ofport)}
		for _, o := range p.opts {
			args = append(args, "options:"+o)
		}
		r.vsctl(args...)
	}
	var out strings.Builder
	for _, p := range geneveRxPorts {
		fmt.Fprintf(&out, "%s: ofport %s error %s\n", p.name, r.get("interface", p.name, "ofport"), r.get("interface", p.name, "error"))
	}
	// Each port's datagrams counted by a flow of its own.
	for _, p := range geneveRxPorts {
		if _, err := r.tool("ovs-ofctl", "add-flow", p.br, fmt.Sprintf("in_port=%d,actions=drop", p.ofport)); err != nil {
			t.Fatal(err)
		}
	}
	// The switch learns br-phy's addresses from netlink a moment later
	// (OVS refuses the route until then; with the system's routes it has
	// it already); the neighbour for sending.
	waitFor(t, 10*time.Second, func() bool {
		if _, err := r.tool("ovs-appctl", "-t", ctl, "ovs/route/add", "10.99.0.0/24", "br-phy"); err == nil {
			return true
		}
		lookup, err := r.tool("ovs-appctl", "-t", ctl, "ovs/route/lookup", "10.99.0.13")
		return err == nil && strings.Contains(lookup, "dev br-phy")
	}, "a route to 10.99.0.13 by br-phy")
	if _, err := r.tool("ovs-appctl", "-t", ctl, "tnl/arp/set", "br-phy", "10.99.0.13", peerMAC); err != nil {
		t.Fatal(err)
	}

	frame := flowtable.BuildFrame(mustPacket(t, "udp,dl_src=00:00:00:00:01:02,dl_dst=00:00:00:00:01:03,nw_src=10.0.1.2,nw_dst=10.0.1.3,tp_src=1,tp_dst=2"), 0)
	// Datagram i is sent i+1 times, so that the counts tell them apart.
	datagrams := []struct {
		src, dst string
		vni      uint32
	}{
		{"10.99.0.11", "10.99.0.1", 1}, // ga: a fixed remote_ip before a local_ip
		{"10.99.0.12", "10.99.0.1", 1}, // gb: the other bridge
		{"10.99.0.13", "10.99.0.1", 1}, // ga-l1: its local_ip
		{"10.99.0.13", "10.99.0.2", 1}, // gb-any: no local_ip
		{"10.99.0.11", "10.99.0.2", 7}, // gk7: a fixed key before all
		{"10.99.0.12", "10.99.0.2", 7}, // gk7
		{"10.99.0.11", "10.99.0.2", 1}, // ga: any destination
	}
	// On failure, the switch's view (OVS's, or the commands govs has).
	defer func() {
		if t.Failed() {
			for _, c := range [][]string{{"ofproto/list-tunnels"}, {"dpctl/dump-flows"}} {
				o, err := r.tool("ovs-appctl", append([]string{"-t", ctl}, c...)...)
				t.Logf("%s: %s %v", c, o, err)
			}
			if !govs {
				log, _ := os.ReadFile(filepath.Join(r.dir, "ovs-vswitchd.log"))
				t.Logf("ovs-vswitchd.log:\n%s", log)
			}
		}
	}()
	// The switch learns the tunnel ports a moment after ovs-vsctl
	// returns: a probe until it counts.
	waitFor(t, 10*time.Second, func() bool {
		sendGeneve(t, peer, "10.99.0.13", "10.99.0.2", 1, frame, 1)
		time.Sleep(50 * time.Millisecond)
		return geneveRxCounts(t, r)["gb-any"] > 0
	}, "the switch never received the probe datagram on gb-any")
	base := geneveRxCounts(t, r)
	for i, d := range datagrams {
		sendGeneve(t, peer, d.src, d.dst, d.vni, frame, i+1)
	}
	want := map[string]int{"ga": 1 + 7, "gb": 2, "ga-l1": 3, "gb-any": 4, "gk7": 5 + 6}
	var got map[string]int
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		got = geneveRxCounts(t, r)
		for k, v := range base {
			if got[k] -= v; got[k] == 0 {
				delete(got, k)
			}
		}
		if maps.Equal(got, want) {
			break
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("datagrams per port %v, want %v", got, want)
	}
	fmt.Fprintf(&out, "received: %v\n", got)

	// local_ip=flow sends from the flow's tun_src when it is an address
	// of the node, from the route's source without one, and not at all
	// from an address of nobody's.
	rx := listenGeneve(t, peer)
	// A local_ip that is no address of the node sends nothing.
	for _, c := range []struct {
		set, want string
		port      int
	}{
		{"set_field:10.99.0.2->tun_src,", "10.99.0.2", 3},
		{"", "10.99.0.1", 3},
		{"set_field:10.99.0.77->tun_src,", "", 3},
		{"", "", 4},
	} {
		acts := fmt.Sprintf("%sset_field:10.99.0.13->tun_dst,output:%d", c.set, c.port)
		if _, err := r.tool("ovs-ofctl", "packet-out", "br-a", "LOCAL", acts, hex.EncodeToString(frame)); err != nil {
			t.Fatal(err)
		}
		src, vni := rx.read(t, 2*time.Second)
		if src != c.want || (src != "" && vni != 7) {
			t.Errorf("packet-out %s: received from %q with VNI %d, want from %q with VNI 7", acts, src, vni, c.want)
		}
		fmt.Fprintf(&out, "sent with %q: from %q\n", acts, src)
	}
	return out.String()
}

func mustPacket(t *testing.T, spec string) *flowtable.Key {
	t.Helper()
	k, err := flowtext.ParsePacket(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &k
}

// geneveRxCounts returns the n_packets of each tunnel port's in_port flow,
// by port name (ports without a count left out).
func geneveRxCounts(t *testing.T, r *ovsdbRig) map[string]int {
	t.Helper()
	counts := map[string]int{}
	re := regexp.MustCompile(`n_packets=(\d+),.* in_port=(\d+)`)
	for _, br := range []string{"br-a", "br-b"} {
		dump, err := r.tool("ovs-ofctl", "--no-names", "dump-flows", br)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(dump, -1) {
			n, _ := strconv.Atoi(m[1])
			of, _ := strconv.Atoi(m[2])
			for _, p := range geneveRxPorts {
				if p.br == br && p.ofport == of && n > 0 {
					counts[p.name] = n
				}
			}
		}
	}
	return counts
}

// sendGeneve sends, from ns, times copies of a Geneve datagram with VNI
// vni carrying frame from src to dst:6081.
func sendGeneve(t *testing.T, ns *netnstest.NS, src, dst string, vni uint32, frame []byte, times int) {
	t.Helper()
	d := append([]byte{0, 0, 0x65, 0x58, byte(vni >> 16), byte(vni >> 8), byte(vni), 0}, frame...)
	if err := ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		// No UDP checksum, as tunnels send by default (csum=false): a
		// veth leaves it partial, which OVS's AF_PACKET port takes as bad.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_NO_CHECK, 1); err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: netip.MustParseAddr(src).As4()}); err != nil {
			return err
		}
		for range times {
			if err := unix.Sendto(fd, d, 0, &unix.SockaddrInet4{Addr: netip.MustParseAddr(dst).As4(), Port: 6081}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("send from %s to %s: %v", src, dst, err)
	}
}

// geneveListener is a UDP socket on port 6081 of a peer.
type geneveListener struct{ fd int }

func listenGeneve(t *testing.T, ns *netnstest.NS) *geneveListener {
	t.Helper()
	l := &geneveListener{fd: -1}
	if err := ns.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		l.fd = fd
		return unix.Bind(fd, &unix.SockaddrInet4{Port: 6081})
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(l.fd) })
	return l
}

// read returns the source address and VNI of the next datagram, "" if
// none came within d.
func (l *geneveListener) read(t *testing.T, d time.Duration) (string, uint32) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, int(d.Milliseconds())); err != nil || n == 0 {
		return "", 0
	}
	buf := make([]byte, 2048)
	n, from, err := unix.Recvfrom(l.fd, buf, 0)
	if err != nil || n < 8 {
		t.Fatalf("recvfrom: %d %v", n, err)
	}
	sa, _ := from.(*unix.SockaddrInet4)
	if sa == nil {
		return "?", 0
	}
	return netip.AddrFrom4(sa.Addr).String(), binary.BigEndian.Uint32(buf[4:8]) >> 8
}
