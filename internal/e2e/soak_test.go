package e2e

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
)

// The soak runs bounded (about 25 s) in make test; by hand it runs as long
// as -soak says and prints the trend table every -soak.every:
//
//	go test -run '^TestSoak$' -v -timeout 45m ./internal/e2e/ -soak 30m -soak.out soak.tsv
var (
	soakFor   = flag.Duration("soak", 0, "TestSoak: load duration (0: the bounded CI run, 20 s)")
	soakEvery = flag.Duration("soak.every", 0, "TestSoak: sampling interval (default 10 s, 2 s in the CI run)")
	soakOut   = flag.String("soak.out", "", "TestSoak: also write the trend table (TSV) to this file")
)

// soakSample is one row of the trend table.
type soakSample struct {
	at                          time.Duration
	goroutines, threads, fds    int
	rssMB                       float64
	ctEntries, flows            int
	flowMods, portOps           int64
	connOK, connFailed, pingsOK int64
}

func (s soakSample) row() string {
	return fmt.Sprintf("%6.0f\t%d\t%d\t%d\t%.1f\t%d\t%d\t%d\t%d\t%d\t%d",
		s.at.Seconds(), s.goroutines, s.threads, s.fds, s.rssMB, s.ctEntries, s.flows, s.flowMods, s.portOps, s.connOK, s.connFailed)
}

const soakHeader = "time_s\tgoroutines\tthreads\tfds\trss_MB\tct_entries\tflows\tflow_mods\tport_ops\tconn_ok\tconn_failed"

// TestSoak is the reliability soak of issue 15: a real govs-vswitchd in its
// namespace, four pods on veth ports, and at once
//   - flow-mods at 1,000/s with the real `ovs-ofctl --bundle add-flows`
//     (adds, modifies and deletes in one batch a second) into table 2 of a
//     ct(commit) pipeline, keeping about 1,200 flows there (seed-sized);
//   - port churn: an idle port deleted/re-added and flapped, and a port
//     carrying a pod's ping -i 0.05 deleted/re-added and flapped;
//   - TCP connections opened, answered and closed in a loop through
//     ct(commit) between two other pods (the measured traffic).
//
// Every interval it samples the daemon's goroutines (memory/show), OS
// threads, open descriptors, RSS, conntrack entries and flows. It fails
// when the daemon dies or logs a panic, a flow-mod batch or a port
// operation fails, two intervals in a row pass without a successful
// connection or more than 1% of connections fail, descriptors, goroutines
// or threads do not come back near their baseline once the load stops, or
// RSS keeps growing in the second half.
func TestSoak(t *testing.T) {
	duration, every := 20*time.Second, 2*time.Second
	if *soakFor > 0 {
		duration, every = *soakFor, 10*time.Second
	}
	if *soakEvery > 0 {
		every = *soakEvery
	}
	s := newSoakRig(t)
	base := s.sample(0)
	t.Logf("baseline: %s", base.row())

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, load := range []func(stop <-chan struct{}){s.flowMods, s.portChurn, s.connections} {
		wg.Add(1)
		go func() { defer wg.Done(); load(stop) }()
	}
	start := time.Now()
	samples := []soakSample{base}
	var lastOK int64
	// Two intervals in a row without a successful connection: one alone
	// happens when the whole machine stalls (memory pressure).
	quiet, quietRuns := 0, 0
	tick := time.NewTicker(every)
	for time.Since(start) < duration {
		<-tick.C
		sm := s.sample(time.Since(start))
		samples = append(samples, sm)
		if *soakFor > 0 {
			t.Logf("%s", sm.row())
		}
		if sm.connOK == lastOK {
			quiet++
			if quiet == 2 {
				quietRuns++
			}
		} else {
			quiet = 0
		}
		lastOK = sm.connOK
		if !s.alive() {
			break
		}
	}
	tick.Stop()
	close(stop)
	wg.Wait()
	loadEnd := time.Since(start)

	// After the load: the churned ports are back (as at the baseline), so
	// descriptors and goroutines must return to the baseline; threads
	// the Go runtime made for blocking system calls stay parked, but
	// must not have grown with the rounds.
	var final soakSample
	deadline := time.Now().Add(15 * time.Second)
	for {
		time.Sleep(time.Second)
		final = s.sample(time.Since(start))
		if final.fds <= base.fds+2 && final.goroutines <= base.goroutines+5 || time.Now().After(deadline) {
			break
		}
	}
	samples = append(samples, final)
	table := soakHeader + "\n"
	for _, sm := range samples {
		table += sm.row() + "\n"
	}
	t.Logf("trend (load stopped at %.0f s, last row after it):\n%s", loadEnd.Seconds(), table)
	if *soakOut != "" {
		if err := os.WriteFile(*soakOut, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
	if !s.alive() {
		t.Fatalf("govs-vswitchd died during the soak")
	}
	if log, _ := os.ReadFile(filepath.Join(s.n.rundir, "govs-vswitchd.log")); strings.Contains(string(log), "panic") {
		t.Errorf("the daemon log mentions a panic")
	}
	if err := s.err(); err != nil {
		t.Errorf("load failed: %v", err)
	}
	ok, failed := final.connOK, final.connFailed
	perSecond := float64(final.flowMods) / loadEnd.Seconds()
	t.Logf("%d flow-mods (%.0f/s), %d port operations, connections %d ok / %d failed, pings answered %d",
		final.flowMods, perSecond, final.portOps, ok, failed, final.pingsOK)
	switch {
	case quietRuns > 0:
		t.Errorf("%d times two sampling intervals in a row without a successful connection", quietRuns)
	case ok == 0 || failed*100 > ok+failed:
		t.Errorf("connections: %d ok, %d failed", ok, failed)
	}
	if perSecond < 900 {
		t.Errorf("flow-mods ran at %.0f/s, want 1,000/s", perSecond)
	}
	if final.pingsOK == 0 {
		t.Errorf("no ping through the churned port was answered")
	}
	if final.fds > base.fds+2 {
		t.Errorf("open descriptors %d after the load, %d at the baseline", final.fds, base.fds)
	}
	if final.goroutines > base.goroutines+5 {
		t.Errorf("goroutines %d after the load, %d at the baseline", final.goroutines, base.goroutines)
	}
	if final.threads > base.threads+4 {
		t.Errorf("threads %d after the load, %d at the baseline", final.threads, base.threads)
	}
	checkFlat(t, samples[1:len(samples)-1], final)
}

// checkFlat fails when threads or RSS grew in the second half of the load
// beyond what the first half reached: a leak grows with the rounds, a
// working set does not.
func checkFlat(t *testing.T, load []soakSample, final soakSample) {
	if len(load) < 4 {
		t.Fatalf("only %d samples under load", len(load))
	}
	half := len(load) / 2
	var firstThreads, lastThreads int
	var firstRSS, lastRSS float64
	for i, sm := range load {
		if i < half {
			firstThreads, firstRSS = max(firstThreads, sm.threads), max(firstRSS, sm.rssMB)
		} else {
			lastThreads, lastRSS = max(lastThreads, sm.threads), max(lastRSS, sm.rssMB)
		}
	}
	if lastThreads > firstThreads+4 || final.threads > firstThreads+4 {
		t.Errorf("threads: at most %d in the first half, %d in the second, %d after", firstThreads, lastThreads, final.threads)
	}
	slope := rssSlope(load[half:])
	t.Logf("RSS at most %.1f MB in the first half, %.1f MB in the second (slope %.2f MB/min), %.1f MB after the load",
		firstRSS, lastRSS, slope, final.rssMB)
	if lastRSS > firstRSS*1.2+10 {
		t.Errorf("RSS grows: at most %.1f MB in the first half, %.1f MB in the second", firstRSS, lastRSS)
	}
}

// rssSlope is the least-squares slope of RSS over time, in MB a minute.
func rssSlope(samples []soakSample) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, sm := range samples {
		x := sm.at.Minutes()
		n, sx, sy, sxx, sxy = n+1, sx+x, sy+sm.rssMB, sxx+x*x, sxy+x*sm.rssMB
	}
	if d := n*sxx - sx*sx; d != 0 {
		return (n*sxy - sx*sy) / d
	}
	return 0
}

// soakRig is the node under soak and its load counters.
type soakRig struct {
	t                    *testing.T
	n                    *node
	pid                  int
	target               string
	client, server       *pod
	pinger, pinged, idle *pod
	flowFile             string

	flowModsDone, portOps atomic.Int64
	connOK, connFailed    atomic.Int64
	mu                    sync.Mutex
	firstErr              error
	ping                  *exec.Cmd
	pingOut               *capture // only its locked writer
}

// soakFlows is the fixed pipeline: everything IP goes through conntrack
// (zone 7), new connections are committed, table 2 (where the flow-mods
// churn) ends in NORMAL.
const soakFlows = `table=0,priority=100,arp actions=NORMAL
table=0,priority=100,ip actions=ct(table=1,zone=7)
table=0,priority=0 actions=drop
table=1,priority=100,ct_state=+new+trk,ip actions=ct(commit,zone=7),resubmit(,2)
table=1,priority=100,ct_state=+est+trk,ip actions=resubmit(,2)
table=1,priority=90,ct_state=+rel+trk,ip actions=resubmit(,2)
table=1,priority=50,ct_state=+inv+trk actions=drop
table=2,priority=0 actions=NORMAL
`

func newSoakRig(t *testing.T) *soakRig {
	n := startNode(t)
	s := &soakRig{t: t, n: n, pid: n.cmd.Process.Pid, target: "unix:" + filepath.Join(n.rundir, "br0.mgmt")}
	n.mustRun("add-br", "br0", "fail_mode=secure")
	s.client = n.addPod(t, "10.241.0.1/24", "02:00:00:00:f1:01")
	s.server = n.addPod(t, "10.241.0.2/24", "02:00:00:00:f1:02")
	s.pinger = n.addPod(t, "10.241.0.3/24", "02:00:00:00:f1:03")
	s.pinged = n.addPod(t, "10.241.0.4/24", "02:00:00:00:f1:04")
	s.idle = n.addPod(t, "10.241.0.5/24", "02:00:00:00:f1:05")
	for i, p := range []*pod{s.client, s.server, s.pinger, s.pinged, s.idle} {
		n.mustRun("add-port", "br0", p.veth.Host, fmt.Sprintf("ofport_request=%d", i+1))
	}
	s.flowFile = filepath.Join(t.TempDir(), "flows")
	if err := os.WriteFile(s.flowFile, []byte(soakFlows), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := ofctl(s.target, "-O", "OpenFlow15", "replace-flows", s.flowFile); err != nil {
		t.Fatalf("loading the pipeline: %v\n%s", err, out)
	}
	ln, err := s.server.ns.ServeTCP(8080, "ok\n")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	if got, err := s.client.ns.TCPGet("10.241.0.2:8080"); err != nil || got != "ok\n" {
		t.Fatalf("TCP through ct before the soak: %q %v", got, err)
	}
	// The pinger's port is churned: its pings come and go, and must come
	// back each time.
	s.pingOut = &capture{}
	args := s.pinger.ns.Command("ping", "-i", "0.05", "-W", "1", s.pinged.ip)
	s.ping = exec.Command(args[0], args[1:]...)
	s.ping.Stdout = s.pingOut
	if err := s.ping.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.ping.Process.Kill(); s.ping.Wait() })
	// One connection committed, pings flowing: settle before the baseline.
	time.Sleep(time.Second)
	return s
}

func (s *soakRig) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.firstErr == nil {
		s.firstErr = err
	}
}

func (s *soakRig) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstErr
}

// alive reports whether the daemon process still exists.
func (s *soakRig) alive() bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d/status", s.pid))
	return err == nil
}

// flowMods sends 1,000 flow-mods a second in one bundle: 400 adds, 200
// modifies of flows added the second before and 400 deletes of the flows
// added three seconds before, so table 2 holds about 1,200 churned flows.
func (s *soakRig) flowMods(stop <-chan struct{}) {
	const adds, mods, keep = 400, 200, 3
	file := filepath.Join(s.t.TempDir(), "mods")
	fillerIP := func(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&0xff, i>>8&0xff, i&0xff) }
	match := func(i int) string { return "table=2,priority=200,ip,nw_src=" + fillerIP(i) + ",nw_dst=10.250.0.1" }
	start := time.Now()
	for sec := 0; ; sec++ {
		var b strings.Builder
		ops := 0
		for i := sec * adds; i < (sec+1)*adds; i++ {
			fmt.Fprintf(&b, "add %s actions=load:%d->NXM_NX_REG1[],resubmit(,3)\n", match(i), i)
			ops++
		}
		for i := (sec - 1) * adds; sec >= 1 && i < (sec-1)*adds+mods; i++ {
			fmt.Fprintf(&b, "modify %s actions=load:%d->NXM_NX_REG2[],resubmit(,3)\n", match(i), i)
			ops++
		}
		for i := (sec - keep) * adds; sec >= keep && i < (sec-keep+1)*adds; i++ {
			fmt.Fprintf(&b, "delete_strict %s\n", match(i))
			ops++
		}
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			s.fail(err)
			return
		}
		if out, err := ofctl(s.target, "-O", "OpenFlow15", "--bundle", "add-flows", file); err != nil {
			s.fail(fmt.Errorf("flow-mod batch %d: %v: %s", sec, err, out))
			return
		}
		s.flowModsDone.Add(int64(ops))
		// Batch sec+1 is due a second after batch sec was; one that took
		// longer is made up for at once.
		select {
		case <-stop:
			return
		case <-time.After(time.Until(start.Add(time.Duration(sec+1) * time.Second))):
		}
	}
}

// portChurn deletes and re-adds, and flaps, the idle pod's port and the
// pinger's port in turn, twice a second. It ends with both ports present
// and up, as at the baseline.
func (s *soakRig) portChurn(stop <-chan struct{}) {
	steps := []func() error{
		func() error { return s.readd(s.idle, 5) },
		func() error { return s.flap(s.idle) },
		func() error { return s.readd(s.pinger, 3) },
		func() error { return s.flap(s.pinger) },
	}
	for round := 0; ; round++ {
		if err := steps[round%len(steps)](); err != nil {
			s.fail(fmt.Errorf("port churn round %d: %w", round, err))
			return
		}
		s.portOps.Add(1)
		select {
		case <-stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *soakRig) readd(p *pod, ofport int) error {
	if out, err := s.n.run("del-port", "br0", p.veth.Host); err != nil {
		return fmt.Errorf("del-port %s: %v: %s", p.veth.Host, err, out)
	}
	if out, err := s.n.run("add-port", "br0", p.veth.Host, fmt.Sprintf("ofport_request=%d", ofport)); err != nil {
		return fmt.Errorf("add-port %s: %v: %s", p.veth.Host, err, out)
	}
	return nil
}

func (s *soakRig) flap(p *pod) error {
	for _, state := range []string{"down", "up"} {
		if _, err := s.n.ns.Exec("ip", "link", "set", p.veth.Host, state); err != nil {
			return err
		}
	}
	return nil
}

// connections opens TCP connections from the client pod to the server pod
// through ct(commit), about 100 a second, each answered and closed.
func (s *soakRig) connections(stop <-chan struct{}) {
	err := s.client.ns.Do(func() error {
		for {
			select {
			case <-stop:
				return nil
			case <-time.After(10 * time.Millisecond):
			}
			if err := soakConnect("10.241.0.2:8080"); err != nil {
				s.connFailed.Add(1)
				continue
			}
			s.connOK.Add(1)
		}
	})
	if err != nil {
		s.fail(err)
	}
}

// soakConnect makes one connection, reads the greeting and closes.
func soakConnect(addr string) error {
	got, err := netnstest.ReadTCP(addr)
	if err == nil && got != "ok\n" {
		err = fmt.Errorf("read %q", got)
	}
	return err
}

var memoryShowRE = regexp.MustCompile(`conntrack:(\d+) goroutines:(\d+) ports:\d+ rules:(\d+) `)

// sample reads the daemon's counters: goroutines, conntrack entries and
// flows from memory/show, the rest from /proc.
func (s *soakRig) sample(at time.Duration) soakSample {
	sm := soakSample{at: at, flowMods: s.flowModsDone.Load(), portOps: s.portOps.Load(),
		connOK: s.connOK.Load(), connFailed: s.connFailed.Load(),
		pingsOK: int64(strings.Count(s.pingOut.output(), " bytes from "))}
	if !s.alive() {
		return sm
	}
	out, _ := s.n.appctl(s.t, "memory/show")
	m := memoryShowRE.FindStringSubmatch(out)
	if m == nil {
		s.t.Errorf("memory/show: %q", out)
		return sm
	}
	sm.ctEntries, _ = strconv.Atoi(m[1])
	sm.goroutines, _ = strconv.Atoi(m[2])
	sm.flows, _ = strconv.Atoi(m[3])
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		return sm
	}
	for _, l := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(l, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		switch k {
		case "Threads":
			sm.threads, _ = strconv.Atoi(f[0])
		case "VmRSS":
			kb, _ := strconv.Atoi(f[0])
			sm.rssMB = float64(kb) / 1024
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		s.t.Error(err)
	}
	sm.fds = len(fds)
	return sm
}
