package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/ovstest"
)

// ctSwitch is one switch of BenchmarkConntrackMemory100k: its pid, how
// to run ovs-appctl on it, and the namespace its port's peer is in.
type ctSwitch struct {
	name   string
	pid    int
	appctl func(args ...string) (string, error)
	raw    *netnstest.RawSocket
}

// ctFlows commit every IPv4 packet in zone 1 and drop it: each distinct
// 5-tuple becomes one connection.
const ctFlows = "table=0,priority=10,ip,actions=ct(commit,zone=1)\ntable=0,priority=0,actions=drop\n"

// BenchmarkConntrackMemory100k fills the conntrack table of govs and of
// Open vSwitch 3.1, in the same run, with 100,000 UDP connections (one
// datagram each from a distinct source address and port, sent into a
// port whose flow is ct(commit)) and reports RSS before, after and after
// dpctl/flush-conntrack, and the bytes each connection costs.
//
//	go test -run '^$' -bench ConntrackMemory100k -benchtime 1x ./internal/e2e/
func BenchmarkConntrackMemory100k(b *testing.B) {
	const conns = 100000
	frames := udpFlows(conns)
	for i := 0; i < b.N; i++ {
		res := map[string]map[string]float64{}
		for _, sw := range []ctSwitch{govsCtSwitch(b), ovsCtSwitch(b)} {
			res[sw.name] = fillConntrack(b, sw, frames)
		}
		for k, g := range res["govs"] {
			o := res["ovs"][k]
			b.ReportMetric(g, "govs-"+k)
			b.ReportMetric(o, "ovs-"+k)
			if o > 0 {
				b.ReportMetric(g/o, "ratio-"+k)
			}
		}
	}
}

func govsCtSwitch(b *testing.B) ctSwitch {
	n := startNode(b)
	n.mustRun("add-br", "br0", "fail_mode=secure")
	peer := netnstest.NewNS(b)
	v := netnstest.NewVeth(b, n.ns, peer, netnstest.VethOptions{})
	n.mustRun("add-port", "br0", v.Host)
	loadCtFlows(b, "unix:"+filepath.Join(n.rundir, "br0.mgmt"))
	pid := n.cmd.Process.Pid
	sock := filepath.Join(n.rundir, fmt.Sprintf("ovs-vswitchd.%d.ctl", pid))
	return ctSwitch{name: "govs", pid: pid, raw: netnstest.NewRawSocket(b, peer, v.Peer),
		appctl: func(args ...string) (string, error) {
			out, err := netnstest.Run("ovs-appctl", append([]string{"-t", sock}, args...)...)
			return out, err
		}}
}

func ovsCtSwitch(b *testing.B) ctSwitch {
	o := ovstest.Start(b, ovstest.Options{FailMode: "secure"})
	peer := netnstest.NewNS(b)
	v := netnstest.NewVeth(b, &netnstest.NS{Name: o.Netns()}, peer, netnstest.VethOptions{})
	if err := o.AddPort(ovstest.Port{Name: v.Host}); err != nil {
		b.Fatal(err)
	}
	loadCtFlows(b, o.Target())
	pidText, err := os.ReadFile(filepath.Join(o.Rundir(), "ovs-vswitchd.pid"))
	if err != nil {
		b.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		b.Fatal(err)
	}
	return ctSwitch{name: "ovs", pid: pid, raw: netnstest.NewRawSocket(b, peer, v.Peer), appctl: o.Appctl}
}

func loadCtFlows(b *testing.B, target string) {
	f := filepath.Join(b.TempDir(), "ct.flows")
	if err := os.WriteFile(f, []byte(ctFlows), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := ofctl(target, "-O", "OpenFlow13", "replace-flows", f); err != nil {
		b.Fatal(err, out)
	}
}

// fillConntrack sends frames into sw (again, up to six times, while
// some were lost) until its conntrack holds them all, and measures RSS
// (2 s after each step: steady state).
func fillConntrack(b *testing.B, sw ctSwitch, frames [][]byte) map[string]float64 {
	if out, err := sw.appctl("dpctl/ct-set-maxconns", strconv.Itoa(2*len(frames))); err != nil {
		b.Fatal(err, out)
	}
	time.Sleep(2 * time.Second)
	m := map[string]float64{"rss-before-MB": rssMB(b, sw.pid)}
	start := time.Now()
	n := 0
	for pass := 0; pass < 6 && n < len(frames); pass++ {
		// 10,000 frames a second in bursts of 20: Open vSwitch's main
		// thread, which polls a netdev datapath's system ports, loses
		// frames from its socket's buffer at more on a busy machine (a
		// frame lost is sent again in the next pass, which also renews
		// the connections of the earlier ones).
		tick := time.Now()
		for i, f := range frames {
			if i%20 == 19 {
				tick = tick.Add(2 * time.Millisecond)
				time.Sleep(time.Until(tick))
			}
			for {
				err := sw.raw.Send(f)
				if err == nil {
					break
				}
				if !errors.Is(err, unix.ENOBUFS) && !errors.Is(err, unix.EAGAIN) {
					b.Fatal(err)
				}
				time.Sleep(time.Millisecond)
			}
		}
		deadline := time.Now().Add(3 * time.Second)
		for {
			out, err := sw.appctl("dpctl/ct-get-nconns")
			if err != nil {
				b.Fatal(err, out)
			}
			n, _ = strconv.Atoi(strings.TrimSpace(out))
			if n >= len(frames) || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		b.Logf("%s: pass %d: %d connections", sw.name, pass, n)
	}
	m["fill-s"] = time.Since(start).Seconds()
	m["connections"] = float64(n)
	if n < len(frames)*99/100 {
		b.Fatalf("%s: %d connections tracked of %d sent", sw.name, n, len(frames))
	}
	time.Sleep(2 * time.Second)
	m["rss-filled-MB"] = rssMB(b, sw.pid)
	m["bytes-per-conn"] = (m["rss-filled-MB"] - m["rss-before-MB"]) * (1 << 20) / float64(n)
	if out, err := sw.appctl("dpctl/flush-conntrack"); err != nil {
		b.Fatal(err, out)
	}
	time.Sleep(3 * time.Second)
	m["rss-flushed-MB"] = rssMB(b, sw.pid)
	b.Logf("%s: %v", sw.name, m)
	return m
}

// udpFlows returns n UDP/IPv4 frames of distinct 5-tuples: source
// addresses 10.77.x.y and ports 1024-60999, all to 10.78.0.1:53.
func udpFlows(n int) [][]byte {
	frames := make([][]byte, n)
	for i := range frames {
		src := [4]byte{10, 77, byte(i / 60000 >> 8), byte(i / 60000)}
		frames[i] = udpFrame(src, [4]byte{10, 78, 0, 1}, uint16(1024+i%60000), 53)
	}
	return frames
}

// udpFrame builds an Ethernet/IPv4/UDP frame with 4 bytes of payload and
// correct checksums.
func udpFrame(src, dst [4]byte, sport, dport uint16) []byte {
	f := make([]byte, 14+20+8+4)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0x78, 1})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0x77, 1})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], 20+8+4)
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	binary.BigEndian.PutUint16(ip[10:], ^fold(sum(ip, 0)))
	udp := f[34:]
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], 8+4)
	copy(udp[8:], "govs")
	pseudo := sum(src[:], 0) + sum(dst[:], 0) + 17 + uint32(len(udp))
	c := ^fold(sum(udp, pseudo))
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(udp[6:], c)
	return f
}

func sum(b []byte, s uint32) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
