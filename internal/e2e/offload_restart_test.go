package e2e

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/offload"
)

// pinsUnder lists the files pinned under dir (relative paths).
func pinsUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	return files
}

// stream is a TCP connection from one pod to another that sends as fast
// as it can; the receiver counts the bytes in 100 ms samples.
type stream struct {
	sent, recvd atomic.Int64
	mu          sync.Mutex
	samples     []int64 // bytes received in each 100 ms
	stop        chan struct{}
	done        chan error // the receiver's end: nil, or the read error
	sender      chan error
	conn        net.Conn
}

const sampleEvery = 100 * time.Millisecond

func startStream(t *testing.T, from, to *pod, addr string) *stream {
	t.Helper()
	var ln net.Listener
	if err := to.ns.Do(func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &stream{stop: make(chan struct{}), done: make(chan error, 1), sender: make(chan error, 1)}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			s.done <- err
			close(accepted)
			return
		}
		accepted <- c
		buf := make([]byte, 256<<10)
		for {
			n, err := c.Read(buf)
			s.recvd.Add(int64(n))
			if err == io.EOF {
				s.done <- nil
				return
			}
			if err != nil {
				s.done <- err
				return
			}
		}
	}()
	if err := from.ns.Do(func() (err error) { s.conn, err = net.DialTimeout("tcp", addr, 5*time.Second); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.conn.Close() })
	if c := <-accepted; c != nil {
		t.Cleanup(func() { c.Close() })
	}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			select {
			case <-s.stop:
				s.sender <- s.conn.(*net.TCPConn).CloseWrite()
				return
			default:
			}
			s.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			n, err := s.conn.Write(buf)
			s.sent.Add(int64(n))
			if err != nil {
				s.sender <- err
				return
			}
		}
	}()
	go func() {
		tk := time.NewTicker(sampleEvery)
		defer tk.Stop()
		last := int64(0)
		for {
			select {
			case <-s.stop:
				return
			case <-tk.C:
				n := s.recvd.Load()
				s.mu.Lock()
				s.samples = append(s.samples, n-last)
				s.mu.Unlock()
				last = n
			}
		}
	}()
	return s
}

// retransmits is the sender's count of retransmitted segments.
func (s *stream) retransmits() uint32 {
	raw, err := s.conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		return 0
	}
	var info *unix.TCPInfo
	raw.Control(func(fd uintptr) { info, _ = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) })
	if info == nil {
		return 0
	}
	return info.Total_retrans
}

// nSamples is how many samples were taken so far.
func (s *stream) nSamples() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.samples)
}

// finish stops sending, closes the connection with a FIN and waits for
// the receiver: an error is a reset or a timeout.
func (s *stream) finish(t *testing.T) {
	t.Helper()
	close(s.stop)
	if err := <-s.sender; err != nil {
		t.Errorf("sender: %v (after %d bytes): the connection broke", err, s.sent.Load())
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("receiver: %v: the connection broke", err)
		}
	case <-time.After(15 * time.Second):
		t.Errorf("receiver: no FIN 15s after the sender closed")
	}
	if s.sent.Load() != s.recvd.Load() {
		t.Errorf("received %d bytes, sent %d", s.recvd.Load(), s.sent.Load())
	}
}

// snapshot copies the samples taken so far.
func (s *stream) snapshot() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.samples...)
}

// seconds sums the 100 ms samples per second, in MB/s.
func seconds(samples []int64) []string {
	var out []string
	for i := 0; i < len(samples); i += 10 {
		var b int64
		for _, v := range samples[i:min(i+10, len(samples))] {
			b += v
		}
		out = append(out, fmt.Sprintf("%.0f", float64(b)/1e6))
	}
	return out
}

func kb(samples []int64) []int64 {
	out := make([]int64, len(samples))
	for i, v := range samples {
		out[i] = v >> 10
	}
	return out
}

// dipFloor is half the median of samples: a sample under it is a dip.
func dipFloor(samples []int64) int64 {
	base := append([]int64(nil), samples...)
	sort.Slice(base, func(i, j int) bool { return base[i] < base[j] })
	return base[len(base)/2] / 2
}

// longestDip is the longest run of samples under floor.
func longestDip(samples []int64, floor int64) time.Duration {
	run, longest := 0, 0
	for _, v := range samples {
		if v < floor {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return time.Duration(longest) * sampleEvery
}

// kernelHits reads the kernel fast path's counters from `govs dump-cache`.
func kernelHits(t *testing.T, w *worker1) (entries, packets int) {
	t.Helper()
	govs, _ := binaries(t)
	b, _ := exec.Command(govs, "dump-cache", "--rundir", w.o.Rundir()).CombinedOutput()
	out := string(b)
	if m := regexp.MustCompile(`kernel entries: (\d+)`).FindStringSubmatch(out); m != nil {
		entries, _ = strconv.Atoi(m[1])
	}
	if m := regexp.MustCompile(`kernel hits: (\d+) packets`).FindStringSubmatch(out); m != nil {
		packets, _ = strconv.Atoi(m[1])
	}
	return entries, packets
}

// TestOffloadRestartKeepsStream: a TCP stream from frontend to backend1
// through the seed worker 1 pipeline, forwarded by the kernel fast path,
// goes on while govs-vswitchd stops (`ovs-appctl exit`, or SIGKILL as a
// crash) and starts again the way Antrea restarts it: flow-restore-wait
// set, a new daemon that adopts the pinned programs and maps, the controller
// replaying its flows, flow-restore-wait removed (and a port deleted
// meanwhile, whose program the new daemon detaches). No reset, every byte
// arrives, the throughput dip (100 ms samples under half the median
// before the restart) lasts under a second, the new daemon's conntrack
// knows the connection (adopted from the pins), and its kernel entries
// keep forwarding. `ovs-appctl exit --cleanup` then leaves nothing pinned
// and no program attached.
func TestOffloadRestartKeepsStream(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	exit := func(w *worker1) error { return w.o.StopVswitchd() }
	crash := func(w *worker1) error { return w.o.KillVswitchd() }
	for _, tc := range []struct {
		name string
		stop func(w *worker1) error
		// The pods keep their offloads and the ports exchange offload
		// metadata (userspace-tso-enable). Either way the pod ports
		// are veths: on the tc path.
		offloads bool
	}{
		{"exit", exit, false},
		{"crash", crash, false},
		{"exit-offloads-on", exit, true},
		{"crash-offloads-on", crash, true},
	} {
		t.Run(tc.name, func(t *testing.T) { testOffloadRestart(t, vswitchd, tc.stop, tc.offloads) })
	}
}

// tcxProg is the id of the TCX ingress program on a device of ns ("":
// none): the kernel path's program on a pod's veth.
func tcxProg(t *testing.T, ns, dev string) string {
	t.Helper()
	ids, err := netnstest.TCXIngress(&netnstest.NS{Name: ns}, dev)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 {
		return ""
	}
	return strconv.Itoa(int(ids[0]))
}

func testOffloadRestart(t *testing.T, vswitchd string, stop func(*worker1) error, offloads bool) {
	root := filepath.Join(netnstest.MountBPFFS(t), "govs")
	w := startWorker1OVSDBWith(t, offloadVswitchd(t, vswitchd, "--offload=ebpf", "--bpffs="+root), offloads)
	pinDir := offload.PinDir(root, w.o.Rundir(), w.o.Bridge())
	frontend, backend1 := w.pods["frontend"], w.pods["backend1"]
	s := startStream(t, frontend, backend1, "10.222.1.47:80")

	time.Sleep(2 * time.Second)
	entries, hits := kernelHits(t, w)
	if entries == 0 || hits == 0 {
		t.Fatalf("before the restart: %d kernel entries, %d kernel hits: the stream is not offloaded", entries, hits)
	}
	t.Logf("pinned: %v", pinsUnder(t, pinDir))
	if !strings.Contains(strings.Join(pinsUnder(t, pinDir), " "), "links/"+backend1.veth.Host) {
		t.Fatalf("no pinned link for %s under %s", backend1.veth.Host, pinDir)
	}
	restartAt := s.nSamples()
	retransBefore := s.retransmits()
	t0 := time.Now()
	if err := stop(w); err != nil {
		t.Fatal(err)
	}
	stopped := time.Since(t0)
	phases := []int{s.nSamples()} // stopped, started, flows replayed and revalidated
	down := s.recvd.Load()
	time.Sleep(time.Second)
	if got := s.recvd.Load() - down; got < 1<<20 {
		t.Errorf("while govs-vswitchd was down %d bytes went through: the kernel path stopped with it", got)
	}
	if tcxProg(t, w.ns.Name, backend1.veth.Host) == "" {
		t.Errorf("no program on %s while govs-vswitchd is down", backend1.veth.Host)
	}
	// Antrea's start script sets flow-restore-wait before it starts the
	// switch; the agent removes it once it has replayed its flows.
	if _, err := w.o.Vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:flow-restore-wait=true"); err != nil {
		t.Fatal(err)
	}
	// A port deleted while the daemon is down: the new one detaches it.
	coredns := w.pods["coredns"]
	if _, err := w.o.Vsctl("--no-wait", "del-port", coredns.veth.Host); err != nil {
		t.Fatal(err)
	}
	oldProg := tcxProg(t, w.ns.Name, backend1.veth.Host)
	t1 := time.Now()
	w.o.StartVswitchd()
	phases = append(phases, s.nSamples())
	w.loadFlows(t)
	if _, err := w.o.Vsctl("remove", "Open_vSwitch", ".", "other_config", "flow-restore-wait"); err != nil {
		t.Fatal(err)
	}
	restarted := time.Since(t1)
	phases = append(phases, s.nSamples())
	time.Sleep(3 * time.Second)
	if p := tcxProg(t, w.ns.Name, backend1.veth.Host); p == "" || p == oldProg {
		t.Errorf("%s runs program %q after the restart, was %q: want the new daemon's", backend1.veth.Host, p, oldProg)
	}
	if tcxProg(t, w.ns.Name, coredns.veth.Host) != "" {
		t.Errorf("%s, deleted while govs-vswitchd was down, still has the program", coredns.veth.Host)
	}
	if _, err := os.Stat(filepath.Join(pinDir, "links", coredns.veth.Host)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("link pin of the deleted port %s: %v, want it gone", coredns.veth.Host, err)
	}
	ct, _ := w.appctl(t, "dpctl/dump-conntrack", "zone=65520")
	if !strings.Contains(ct, "dst=10.222.1.47") || !strings.Contains(ct, "dport=80") || !strings.Contains(ct, "ESTABLISHED") {
		t.Errorf("the new daemon's conntrack does not know the stream's connection:\n%s", ct)
	}
	entries, hits = kernelHits(t, w)
	if entries == 0 || hits == 0 {
		t.Errorf("after the restart: %d kernel entries, %d kernel hits: the adopted entries were not kept", entries, hits)
	}
	// Both directions of the stream were adopted and kept.
	log := w.o.VswitchdLog()
	adopted := regexp.MustCompile(`adopted the pinned kernel entries.*"entries": (\d+)`).FindStringSubmatch(log)
	kept := regexp.MustCompile(`revalidated the adopted kernel entries.*"kept": (\d+), "removed": (\d+)`).FindStringSubmatch(log)
	if adopted == nil || kept == nil || adopted[1] == "0" || kept[1] != adopted[1] {
		t.Errorf("adopted %v, revalidated %v: want every adopted entry kept", adopted, kept)
	}
	retrans := s.retransmits() - retransBefore
	s.finish(t)
	samples := s.snapshot()
	floor := dipFloor(samples[:restartAt])
	dip := longestDip(samples[restartAt:], floor)
	t.Logf("stop %v, start+replay %v; received %d MB; MB/s per second: %s (restart in second %d)",
		stopped.Round(time.Millisecond), restarted.Round(time.Millisecond), s.recvd.Load()>>20,
		strings.Join(seconds(samples), " "), restartAt/10)
	t.Logf("100 ms samples from the restart on (KB): %v; stopped, started, revalidated at samples %v",
		kb(samples[restartAt:min(restartAt+35, len(samples))]), []int{phases[0] - restartAt, phases[1] - restartAt, phases[2] - restartAt})
	t.Logf("longest dip (100 ms samples under half the median before the restart): %v from the restart on, %v before it; segments retransmitted %d before the restart, %d from it on",
		dip, longestDip(samples[:restartAt], floor), retransBefore, retrans)
	if dip >= time.Second {
		t.Errorf("throughput dipped for %v across the restart, want under 1s", dip)
	}

	// exit --cleanup: nothing stays pinned or attached.
	if err := w.o.StopVswitchd("--cleanup"); err != nil {
		t.Fatal(err)
	}
	if left := pinsUnder(t, root); len(left) != 0 {
		t.Errorf("after exit --cleanup still pinned: %v", left)
	}
	for _, p := range w.pods {
		waitOffload(t, w.ns.Name, p.veth.Host, false)
		if id := xdpProg(t, w.ns.Name, p.veth.Host); id != "" {
			t.Errorf("after exit --cleanup %s still has XDP program %s", p.veth.Host, id)
		}
		if id := tcxProg(t, w.ns.Name, p.veth.Host); id != "" {
			t.Errorf("after exit --cleanup %s still has TCX program %s", p.veth.Host, id)
		}
	}
	if _, err := os.Stat(pinDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after exit --cleanup %s: %v, want it gone", pinDir, err)
	}
}
