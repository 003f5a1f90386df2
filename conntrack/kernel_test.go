package conntrack

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestKernelDifferential sends the same packet sequences through the Linux
// kernel's connection tracker and through govs' engine and compares the
// state each packet gets (new / established / related / invalid) and the
// final TCP state.
//
// Setup: namespace "a" only injects frames (AF_PACKET on its veth end);
// namespace "b" forwards everything it receives back out, so
// both directions of a conversation cross b's conntrack (prerouting) and
// are confirmed (postrouting), and nothing answers. An nftables forward
// chain counts each packet under its `ct state`.
func TestKernelDifferential(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root (network namespaces, veth, nftables)")
	}
	for _, tool := range []string{"ip", "nft", "conntrack"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("this test needs %s (Debian packages iproute2, nftables, conntrack): %v", tool, err)
		}
	}
	k := newKernelCT(t)

	const (
		cli = "10.77.0.1"
		srv = "10.77.1.1"
	)
	type seqCase struct {
		name   string
		pkts   func() []pk
		tcpEnd string // final kernel state from conntrack -L ("" = not compared)
		// knownDiff lists packets (by index) where govs follows OVS and
		// the kernel differs, with the kernel's and govs' states.
		knownDiff map[int][2]string
	}
	conv := func(cport uint16) *tcpConv {
		return &tcpConv{c: cli, s: srv, cport: cport, sport: 80, cseq: 1_000_000, sseq: 7_000_000}
	}
	cases := []seqCase{
		{"tcp handshake data teardown", func() []pk {
			cv := conv(40001)
			return []pk{
				cv.fromC(tcpSYN, 0), cv.fromS(tcpSYN|tcpACK, 0), cv.fromC(tcpACK, 0),
				cv.fromC(tcpACK|tcpPSH, 200), cv.fromS(tcpACK, 0), cv.fromS(tcpACK|tcpPSH, 1000), cv.fromC(tcpACK, 0),
				cv.fromC(tcpFIN|tcpACK, 0), cv.fromS(tcpACK, 0), cv.fromS(tcpFIN|tcpACK, 0), cv.fromC(tcpACK, 0),
			}
		}, "TIME_WAIT", nil},
		{"tcp rst", func() []pk {
			cv := conv(40002)
			return []pk{
				cv.fromC(tcpSYN, 0), cv.fromS(tcpSYN|tcpACK, 0), cv.fromC(tcpACK, 0),
				cv.fromC(tcpACK|tcpPSH, 10), cv.fromS(tcpRST|tcpACK, 0),
			}
		}, "", nil},
		{"tcp out of window", func() []pk {
			cv := conv(40003)
			s := []pk{cv.fromC(tcpSYN, 0), cv.fromS(tcpSYN|tcpACK, 0), cv.fromC(tcpACK, 0)}
			far := tcpPk(cli, srv, 40003, 80, tcpACK|tcpPSH, cv.cseq+50_000_000, cv.sseq, 100)
			back := tcpPk(cli, srv, 40003, 80, tcpACK|tcpPSH, cv.cseq-50_000_000, cv.sseq, 100)
			return append(s, far, back, cv.fromC(tcpACK|tcpPSH, 10))
		}, "ESTABLISHED", map[int][2]string{
			// A segment a long way behind the window: OVS (like pf)
			// marks it invalid; Linux since 6.1 ("ignore overly
			// delayed tcp packets") lets it through as established
			// without updating the window.
			4: {"established", "invalid"},
		}},
		{"tcp syn-ack first", func() []pk {
			cv := conv(40004)
			return []pk{cv.fromS(tcpSYN|tcpACK, 0)}
		}, "", nil},
		{"udp", func() []pk {
			return []pk{udpPk(cli, srv, 5000, 53), udpPk(cli, srv, 5000, 53), udpPk(srv, cli, 53, 5000), udpPk(cli, srv, 5000, 53)}
		}, "", nil},
		{"icmp echo", func() []pk {
			return []pk{icmpEcho(cli, srv, icmp4Echo, 99), icmpEcho(srv, cli, icmp4EchoReply, 99), icmpEcho(srv, cli, icmp4EchoReply, 98)}
		}, "", nil},
		{"icmp error related", func() []pk {
			syn := tcpPk(cli, srv, 40005, 80, tcpSYN, 5, 0, 0)
			return []pk{syn, icmpErr("10.77.2.2", cli, build(syn))}
		}, "", nil},
	}
	tr := New(Config{})
	now := int64(time.Hour)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var kernel, govs []string
			for _, p := range c.pkts() {
				f := build(p)
				kernel = append(kernel, k.send(t, f))
				var md Meta
				tr.Execute(f, ethLen, EthTypeIPv4, &md, &Args{Commit: true}, now)
				govs = append(govs, govsStateName(md.State))
			}
			for i, d := range c.knownDiff {
				if kernel[i] != d[0] || govs[i] != d[1] {
					t.Errorf("packet %d: known difference changed: kernel %s (expected %s), govs %s (expected %s)", i, kernel[i], d[0], govs[i], d[1])
				}
				kernel[i], govs[i] = "*", "*"
			}
			if strings.Join(kernel, " ") != strings.Join(govs, " ") {
				t.Errorf("per-packet ct state differs\nkernel: %v\ngovs:   %v", kernel, govs)
			}
			if c.tcpEnd != "" {
				ks := k.tcpState(t, c.pkts()[0])
				if ks != c.tcpEnd {
					t.Errorf("kernel TCP state %s, expected %s", ks, c.tcpEnd)
				}
				var gs string
				p0 := c.pkts()[0]
				for _, e := range tr.Dump(DumpFilter{}) {
					if e.Orig.SrcPort == p0.sport && e.Orig.Proto == protoTCP {
						gs = e.TCPStateName()
					}
				}
				if gs != ks {
					t.Errorf("final TCP state: kernel %s, govs %s", ks, gs)
				}
			}
			t.Logf("kernel %v", kernel)
		})
	}
}

func govsStateName(s uint8) string {
	switch {
	case s&StateInv != 0:
		return "invalid"
	case s&StateRel != 0:
		return "related"
	case s&StateEst != 0:
		return "established"
	case s&StateNew != 0:
		return "new"
	}
	return "untracked"
}

type kernelCT struct {
	nsA, nsB string
	fd       int
	dstMAC   net.HardwareAddr
}

func randName(prefix string) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b[:])
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

const nftRules = `
table inet govsct {
	counter st_new {}
	counter st_established {}
	counter st_related {}
	counter st_invalid {}
	chain forward_count {
		type filter hook forward priority 0; policy accept;
		ct state invalid counter name "st_invalid"
		ct state new counter name "st_new"
		ct state established counter name "st_established"
		ct state related counter name "st_related"
	}
}
`

func newKernelCT(t *testing.T) *kernelCT {
	k := &kernelCT{nsA: randName("ctA"), nsB: randName("ctB"), fd: -1}
	vA, vB := randName("vca"), randName("vcb")
	run(t, "ip", "netns", "add", k.nsA)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", k.nsA).Run() })
	run(t, "ip", "netns", "add", k.nsB)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", k.nsB).Run() })
	run(t, "ip", "link", "add", vA, "netns", k.nsA, "type", "veth", "peer", "name", vB, "netns", k.nsB)
	inB := func(args ...string) string { return run(t, "ip", append([]string{"netns", "exec", k.nsB}, args...)...) }
	run(t, "ip", "-n", k.nsA, "link", "set", vA, "up")
	run(t, "ip", "-n", k.nsB, "link", "set", vB, "up")
	run(t, "ip", "-n", k.nsB, "addr", "add", "192.0.2.1/24", "dev", vB)
	// The way out: a second veth pair back into a, to a gateway with a
	// permanent neighbor entry, so no ARP is needed and a drops the
	// frames (not addressed to it).
	oA, oB := randName("vda"), randName("vdb")
	run(t, "ip", "link", "add", oA, "netns", k.nsA, "type", "veth", "peer", "name", oB, "netns", k.nsB)
	run(t, "ip", "-n", k.nsA, "link", "set", oA, "up")
	run(t, "ip", "-n", k.nsB, "link", "set", oB, "up")
	run(t, "ip", "-n", k.nsB, "addr", "add", "192.0.3.1/24", "dev", oB)
	run(t, "ip", "-n", k.nsB, "neigh", "add", "192.0.3.2", "lladdr", "02:00:00:00:00:99", "dev", oB, "nud", "permanent")
	run(t, "ip", "-n", k.nsB, "route", "add", "10.77.0.0/16", "via", "192.0.3.2", "dev", oB)
	inB("sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0",
		"net.ipv4.conf."+vB+".rp_filter=0", "net.netfilter.nf_conntrack_tcp_be_liberal=0", "net.netfilter.nf_conntrack_tcp_loose=1")
	nft := exec.Command("ip", "netns", "exec", k.nsB, "nft", "-f", "-")
	nft.Stdin = strings.NewReader(nftRules)
	if out, err := nft.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
	link := run(t, "ip", "-n", k.nsB, "-o", "link", "show", vB)
	m := regexp.MustCompile(`link/ether ([0-9a-f:]{17})`).FindStringSubmatch(link)
	if m == nil {
		t.Fatalf("no MAC in %q", link)
	}
	k.dstMAC, _ = net.ParseMAC(m[1])
	idxOut := run(t, "ip", "-n", k.nsA, "-o", "link", "show", vA)
	ifindex, err := strconv.Atoi(strings.SplitN(idxOut, ":", 2)[0])
	if err != nil {
		t.Fatalf("ifindex from %q: %v", idxOut, err)
	}
	k.fd = packetSocketIn(t, k.nsA, ifindex)
	t.Cleanup(func() { unix.Close(k.fd) })
	return k
}

// packetSocketIn opens an AF_PACKET socket bound to ifindex inside netns ns,
// on a locked thread that goes back to its own namespace afterwards.
func packetSocketIn(t *testing.T, ns string, ifindex int) int {
	type res struct {
		fd  int
		err error
	}
	ch := make(chan res)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- res{-1, err}
			return // the locked thread dies with the goroutine
		}
		defer unix.Close(orig)
		target, err := unix.Open("/var/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- res{-1, err}
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			ch <- res{-1, fmt.Errorf("setns: %w", err)}
			return
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			err = unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifindex})
		}
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- res{fd, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("packet socket in %s: %v", ns, r.err)
	}
	return r.fd
}

var counterRE = regexp.MustCompile(`counter (\w+) \{\s*packets (\d+)`)

func (k *kernelCT) counters(t *testing.T) map[string]int {
	out := run(t, "ip", "netns", "exec", k.nsB, "nft", "list", "counters", "table", "inet", "govsct")
	m := map[string]int{}
	for _, c := range counterRE.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(c[2])
		m[c[1]] = n
	}
	return m
}

// send injects one frame and returns the ct state the kernel gave it.
func (k *kernelCT) send(t *testing.T, frame []byte) string {
	t.Helper()
	f := append([]byte(nil), frame...)
	copy(f[0:6], k.dstMAC)
	before := k.counters(t)
	if _, err := unix.Write(k.fd, f); err != nil {
		t.Fatalf("inject: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		after := k.counters(t)
		for name, n := range after {
			if n > before[name] {
				return strings.TrimPrefix(name, "st_")
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return "dropped"
}

// tcpState returns the kernel's TCP state of the connection whose first
// packet was p (conntrack -L).
func (k *kernelCT) tcpState(t *testing.T, p pk) string {
	out := run(t, "ip", "netns", "exec", k.nsB, "conntrack", "-L", "-p", "tcp", "--sport", strconv.Itoa(int(p.sport)))
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[0] == "tcp" {
			return f[3]
		}
	}
	return "none: " + out
}
