package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Measurement is one test run against a topology.
type Measurement struct {
	Name        string
	Description string
	run         func(ctx context.Context, e *env, t *topology) (map[string]float64, error)
}

// Measurements lists every measurement in the order they run.
var Measurements = []Measurement{
	{"udp", "64-byte UDP frames/s frontend->backend:53 (trafgen, counted at the backend's rx): udp_* one-way (never answered: conntrack keeps it +new), udp_est_* on a flow the server answered first (established, as DNS, QUIC or iperf3 -u)", measureUDP},
	{"tcp1", "TCP throughput, 1 stream (iperf3 to port 80)", measureTCP(1)},
	{"tcp4", "TCP throughput, 4 streams (iperf3 to port 80)", measureTCP(4)},
	{"rr", "TCP 1-byte request/response on one connection, client and server pinned to one CPU", measureRR},
	{"crr", "new TCP connections/s (connect, 1 byte each way, RST) through conntrack", measureCRR},
}

// counters is a snapshot of the pods' receive counters and the switch's CPU
// time.
type counters struct {
	at                 time.Time
	clientRx, serverRx uint64
	// clientTx counts what the client's veth accepted for transmission
	// (tx_packets + tx_dropped); only the UDP test reads it.
	clientTx uint64
	ticks    uint64
	// hostBusy is the machine's busy CPU time, all CPUs and processes
	// (/proc/stat), in clock ticks.
	hostBusy uint64
}

func snapshot(t *topology) (counters, error) {
	return snapshotTx(t, false)
}

func snapshotTx(t *topology, tx bool) (counters, error) {
	c := counters{at: time.Now()}
	var err error
	if tx {
		sent, err := ifaceCounter(t.client.ns, t.client.name, "tx_packets")
		if err != nil {
			return c, err
		}
		dropped, err := ifaceCounter(t.client.ns, t.client.name, "tx_dropped")
		if err != nil {
			return c, err
		}
		c.clientTx = sent + dropped
	}
	if c.clientRx, err = ifaceCounter(t.client.ns, t.client.name, "rx_packets"); err != nil {
		return c, err
	}
	if c.serverRx, err = ifaceCounter(t.server.ns, t.server.name, "rx_packets"); err != nil {
		return c, err
	}
	if len(t.switchPIDs) > 0 {
		if c.ticks, err = t.switchTicks(); err != nil {
			return c, err
		}
	}
	if c.hostBusy, err = hostBusyTicks(); err != nil {
		return c, err
	}
	return c, nil
}

// hostBusyTicks is the busy time of all CPUs since boot, from /proc/stat.
func hostBusyTicks() (uint64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseHostBusy(line)
}

// parseHostBusy sums the busy times of /proc/stat's "cpu" line: all but
// idle and iowait, and without guest time (already in user and nice).
func parseHostBusy(line string) (uint64, error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy uint64
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: cpu field %d: %w", i+1, err)
		}
		switch i { // user nice system idle iowait irq softirq steal guest guest_nice
		case 3, 4, 8, 9:
		default:
			busy += n
		}
	}
	return busy, nil
}

// hostCost adds <prefix>_host_cores, the CPUs the whole machine kept busy
// during the measurement (every process: the pods' stacks, the switch, the
// tools, and anything else running). When it is at the machine's CPU
// count, throughput is bounded by CPU time per byte, not by the switch's
// latency.
func hostCost(m map[string]float64, prefix string, a, b counters) {
	if wall := b.at.Sub(a.at).Nanoseconds(); wall > 0 {
		m[prefix+"_host_cores"] = float64(b.hostBusy-a.hostBusy) * 1e9 / clockTicksPerSecond / float64(wall)
	}
}

// switchCost adds, for a userspace switch, <prefix>_switch_ns_per_pkt (its
// CPU time divided by the packets both pods received, i.e. every packet it
// forwarded in either direction) and <prefix>_switch_cores (CPU time over
// wall time). With a switch on each of two nodes the CPU time is both
// daemons' together, so the cost per packet covers encapsulation on one
// node and decapsulation on the other.
func switchCost(m map[string]float64, prefix string, t *topology, a, b counters) {
	if len(t.switchPIDs) == 0 {
		return
	}
	cpuNs := float64(b.ticks-a.ticks) * 1e9 / clockTicksPerSecond
	pkts := float64((b.clientRx - a.clientRx) + (b.serverRx - a.serverRx))
	if pkts > 0 {
		m[prefix+"_switch_ns_per_pkt"] = cpuNs / pkts
	}
	if wall := b.at.Sub(a.at).Nanoseconds(); wall > 0 {
		m[prefix+"_switch_cores"] = cpuNs / float64(wall)
	}
}

// udpFrame builds the 60-byte frame (64 bytes on a wire with the FCS) the
// packet-rate test sends: Ethernet, IPv4 with a valid header checksum, UDP
// to port 53 with checksum 0 (none, legal in IPv4) and 18 bytes of payload.
// It is addressed to src's next hop towards dst: dst itself on one subnet,
// src's gateway when the two pods are on different nodes.
func udpFrame(src, dst podIface, sport, dport uint16) ([]byte, error) {
	smac, err := net.ParseMAC(src.mac)
	if err != nil {
		return nil, fmt.Errorf("source MAC: %w", err)
	}
	dmac, err := net.ParseMAC(src.nextHopMAC(dst))
	if err != nil {
		return nil, fmt.Errorf("destination MAC: %w", err)
	}
	sip, dip := net.ParseIP(src.ip).To4(), net.ParseIP(dst.ip).To4()
	if sip == nil || dip == nil {
		return nil, fmt.Errorf("need IPv4 addresses, have %q and %q", src.ip, dst.ip)
	}
	f := make([]byte, 60)
	copy(f[0:6], dmac)
	copy(f[6:12], smac)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0] = 0x45                              // version 4, 20-byte header
	binary.BigEndian.PutUint16(ip[2:], 60-14) // total length
	ip[8] = 64                                // TTL
	ip[9] = 17                                // UDP
	copy(ip[12:16], sip)
	copy(ip[16:20], dip)
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	udp := f[34:42]
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], 60-34) // UDP length
	return f, nil
}

// ipChecksum is the RFC 1071 checksum of an IPv4 header whose checksum
// field is zero.
func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// trafgenConfig renders a frame as a trafgen packet configuration.
func trafgenConfig(frame []byte) string {
	var b strings.Builder
	b.WriteString("{ ")
	for i, x := range frame {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "0x%02x", x)
	}
	b.WriteString(" }\n")
	return b.String()
}

var trafgenSentRE = regexp.MustCompile(`(\d+) packets outgoing`)

// parseTrafgenSent returns the packet count trafgen prints when stopped.
func parseTrafgenSent(out string) (uint64, error) {
	m := trafgenSentRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no \"packets outgoing\" line in trafgen output: %q", lastLines(out, 5))
	}
	return strconv.ParseUint(m[1], 10, 64)
}

// warmup is how long a generator runs before the measured window opens.
func warmup(d time.Duration) time.Duration {
	return min(500*time.Millisecond, d/4)
}

// measureUDP floods 64-byte UDP frames from the client to the server's
// port 53 twice, each time on a flow of its own (a source port no earlier
// flood used, so conntrack and the switches' caches start from nothing):
//
//   - udp_*: one-way, never answered. Conntrack keeps such a flow +new
//     (Linux, Open vSwitch and govs alike), so a kernel fast path for
//     established connections does not take it. The metric names and the
//     method of earlier reports.
//   - udp_est_*: established first, as a real UDP flow worth switching
//     fast is (DNS, QUIC, iperf3's UDP mode): the server answers the
//     client's first datagram on the same 5-tuple, then trafgen floods
//     on that 5-tuple.
//
// The server's socket is closed during both floods, so the receiving
// stack costs the same in both.
func measureUDP(ctx context.Context, e *env, t *topology) (map[string]float64, error) {
	e.udpFlows++
	sport := uint16(40000 + 2*(e.udpFlows%10000))
	m, err := udpFlood(ctx, e, t, "udp", sport)
	if err != nil {
		return nil, err
	}
	sport++
	if err := udpEstablish(ctx, e, t, sport); err != nil {
		return nil, err
	}
	est, err := udpFlood(ctx, e, t, "udp_est", sport)
	if err != nil {
		return nil, err
	}
	maps.Copy(m, est)
	return m, nil
}

// udpEstablish sends one datagram from the client's sport to the
// server's port 53 and has the server answer it (workers udp-hello and
// udp-answer).
func udpEstablish(ctx context.Context, e *env, t *topology, sport uint16) error {
	worker := func(ns netns, spec workerSpec) ([]string, []string, error) {
		j, err := json.Marshal(spec)
		if err != nil {
			return nil, nil, err
		}
		return []string{WorkerEnv + "=" + string(j)}, ns.cmd(e.self...), nil
	}
	server := net.JoinHostPort(t.server.ip, strconv.Itoa(udpPort))
	senv, sargs, err := worker(t.server.ns, workerSpec{Role: "udp-answer", Addr: server, Duration: 10 * time.Second})
	if err != nil {
		return err
	}
	srv, err := startProcess("udp-answer", senv, sargs...)
	if err != nil {
		return err
	}
	defer srv.stop(syscall.SIGTERM)
	if err := waitListeningProto(ctx, t.server.ns, "udp", udpPort, srv); err != nil {
		return err
	}
	cenv, cargs, err := worker(t.client.ns, workerSpec{Role: "udp-hello", Addr: server,
		From: net.JoinHostPort(t.client.ip, strconv.Itoa(int(sport))), Duration: 5 * time.Second})
	if err != nil {
		return err
	}
	if _, err := runClientEnv(ctx, 10*time.Second, cenv, cargs...); err != nil {
		return fmt.Errorf("udp: establishing the flow: %w", err)
	}
	return nil
}

// udpFlood has trafgen send one 64-byte frame from sport to the server's
// port 53 in a loop and measures, after a warm-up, the frames the server
// received (<prefix>_pps), the frames the client's veth took
// (<prefix>_offered_pps), the switch's CPU per packet and, for a switch
// with a kernel fast path, the share of the frames it forwarded
// (<prefix>_kernel_share).
func udpFlood(ctx context.Context, e *env, t *topology, prefix string, sport uint16) (map[string]float64, error) {
	frame, err := udpFrame(t.client, t.server, sport, udpPort)
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(e.tmp, "udp64.trafgen")
	if err := os.WriteFile(conf, []byte(trafgenConfig(frame)), 0o644); err != nil {
		return nil, fmt.Errorf("trafgen config: %w", err)
	}
	// One generator process on the pinned CPU; --no-sock-mem and
	// --notouch-irq keep trafgen from changing host-wide settings.
	args := t.client.ns.cmd("taskset", "-c", e.cpu, "trafgen", "--dev", t.client.name, "--conf", conf,
		"--cpus", "1", "--no-sock-mem", "--notouch-irq")
	p, err := startProcess("trafgen", nil, args...)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			p.stop(syscall.SIGKILL)
		}
	}()
	if err := sleep(ctx, warmup(e.duration)); err != nil {
		return nil, err
	}
	var ca, cb cacheStats
	if t.cacheStats != nil {
		if ca, err = t.cacheStats(); err != nil {
			return nil, fmt.Errorf("megaflow cache counters: %w", err)
		}
	}
	ra, raErr := sendPathRuntime(p.pid(), e.cpu)
	a, err := snapshotTx(t, true)
	if err != nil {
		return nil, err
	}
	if err := sleep(ctx, e.duration); err != nil {
		return nil, err
	}
	b, err := snapshotTx(t, true)
	if err != nil {
		return nil, err
	}
	rb, rbErr := sendPathRuntime(p.pid(), e.cpu)
	if t.cacheStats != nil {
		if cb, err = t.cacheStats(); err != nil {
			return nil, fmt.Errorf("megaflow cache counters: %w", err)
		}
	}
	out := p.stop(syscall.SIGINT)
	stopped = true
	sent, err := parseTrafgenSent(out)
	if err != nil {
		return nil, err
	}
	if b.serverRx == a.serverRx {
		return nil, fmt.Errorf("%s: none of %d frames reached the receiver (dropped by the switch or its flows)", prefix, sent)
	}
	m := map[string]float64{}
	secs := b.at.Sub(a.at).Seconds()
	m[prefix+"_pps"] = float64(b.serverRx-a.serverRx) / secs
	// Offered in the same window: what trafgen got onto the client veth.
	m[prefix+"_offered_pps"] = float64(b.clientTx-a.clientTx) / secs
	if ca.hasKernel && cb.hasKernel {
		// The share of the delivered frames a kernel fast path forwarded
		// (read around the snapshots: slightly wider a window).
		m[prefix+"_kernel_share"] = (cb.kernel - ca.kernel) / float64(b.serverRx-a.serverRx)
	}
	if raErr == nil && rbErr == nil && rb > ra {
		m[prefix+"_path_ns_per_pkt"] = float64(rb-ra) / float64(b.serverRx-a.serverRx)
	}
	switchCost(m, prefix, t, a, b)
	// Let the switch drain before the next test starts.
	return m, sleep(ctx, 200*time.Millisecond)
}

// iperfResult is the part of `iperf3 -J` the harness reads.
type iperfResult struct {
	End struct {
		SumReceived struct {
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
		SumSent struct {
			Seconds     float64 `json:"seconds"`
			Retransmits float64 `json:"retransmits"`
		} `json:"sum_sent"`
	} `json:"end"`
	Error string `json:"error"`
}

// parseIperf returns the received bits/s and the sender's TCP
// retransmissions per second (segments a switch dropped or reordered).
func parseIperf(out []byte) (bps, retransPerSec float64, err error) {
	var r iperfResult
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, 0, fmt.Errorf("iperf3 JSON: %w (%q)", err, lastLines(string(out), 5))
	}
	if r.Error != "" {
		return 0, 0, fmt.Errorf("iperf3: %s", r.Error)
	}
	if s := r.End.SumSent; s.Seconds > 0 {
		retransPerSec = s.Retransmits / s.Seconds
	}
	return r.End.SumReceived.BitsPerSecond, retransPerSec, nil
}

func measureTCP(streams int) func(ctx context.Context, e *env, t *topology) (map[string]float64, error) {
	return func(ctx context.Context, e *env, t *topology) (map[string]float64, error) {
		prefix := fmt.Sprintf("tcp%d", streams)
		srv, err := startProcess("iperf3 server", nil, t.server.ns.cmd("iperf3", "-s", "-p", strconv.Itoa(tcpPort), "-B", t.server.ip)...)
		if err != nil {
			return nil, err
		}
		defer srv.stop(syscall.SIGTERM)
		if err := waitListening(ctx, t.server.ns, tcpPort, srv); err != nil {
			return nil, err
		}
		secs := max(1, int(e.duration.Round(time.Second)/time.Second))
		a, err := snapshot(t)
		if err != nil {
			return nil, err
		}
		out, err := runClient(ctx, e.duration+30*time.Second, t.client.ns.cmd("iperf3", "-c", t.server.ip, "-p", strconv.Itoa(tcpPort),
			"-t", strconv.Itoa(secs), "-P", strconv.Itoa(streams), "-J")...)
		if err != nil {
			return nil, err
		}
		b, err := snapshot(t)
		if err != nil {
			return nil, err
		}
		bps, retrans, err := parseIperf(out)
		if err != nil {
			return nil, err
		}
		m := map[string]float64{prefix + "_gbps": bps / 1e9, prefix + "_retrans_per_s": retrans}
		switchCost(m, prefix, t, a, b)
		hostCost(m, prefix, a, b)
		if c, g := m[prefix+"_host_cores"], m[prefix+"_gbps"]; g > 0 {
			// The CPU the whole path costs per Gbit/s: what decides
			// throughput once the machine's CPUs are all busy.
			m[prefix+"_host_cores_per_gbit"] = c / g
		}
		return m, nil
	}
}

func measureRR(ctx context.Context, e *env, t *topology) (map[string]float64, error) {
	res, a, b, err := runWorkers(ctx, e, t, "rr", 0)
	if err != nil {
		return nil, err
	}
	m := map[string]float64{
		"rr_tps":    float64(res.Count) / res.Seconds,
		"rr_p50_us": float64(res.P50ns) / 1e3,
		"rr_p99_us": float64(res.P99ns) / 1e3,
	}
	switchCost(m, "rr", t, a, b)
	return m, nil
}

func measureCRR(ctx context.Context, e *env, t *topology) (map[string]float64, error) {
	var ca, cb cacheStats
	if t.cacheStats != nil {
		var err error
		if ca, err = t.cacheStats(); err != nil {
			return nil, fmt.Errorf("megaflow cache counters: %w", err)
		}
	}
	res, a, b, err := runWorkers(ctx, e, t, "crr", e.crrConcurrency)
	if err != nil {
		return nil, err
	}
	if t.cacheStats != nil {
		if cb, err = t.cacheStats(); err != nil {
			return nil, fmt.Errorf("megaflow cache counters: %w", err)
		}
	}
	if res.Count == 0 {
		return nil, fmt.Errorf("crr: no connection completed (%d errors, first: %s)", res.Errors, res.FirstError)
	}
	m := map[string]float64{
		"crr_cps":    float64(res.Count) / res.Seconds,
		"crr_errors": float64(res.Errors),
	}
	if res.P50ns > 0 {
		// The connect time: the SYN and the SYN-ACK, a connection's first
		// packet each way, through the switch's slow path.
		m["crr_connect_p50_us"] = float64(res.P50ns) / 1e3
		m["crr_connect_p99_us"] = float64(res.P99ns) / 1e3
	}
	if t.cacheStats != nil {
		reportCache(m, "crr", ca, cb, res.Count)
		if cb.hasKernel {
			// Kernel entries the connections left behind (each ended
			// with an RST): 0 unless entries outlive their connection.
			m["crr_kernel_entries"] = cb.kernelEntries
		}
		if cb.hasInstalls {
			// Entries written per connection: each costs system calls
			// on the packet path (two to write, one or two to delete).
			m["crr_kernel_installs_per_conn"] = (cb.kernelInstalls - ca.kernelInstalls) / float64(res.Count)
		}
	}
	switchCost(m, "crr", t, a, b)
	if len(t.switchPIDs) > 0 {
		m["crr_switch_us_per_conn"] = float64(b.ticks-a.ticks) * 1e6 / clockTicksPerSecond / float64(res.Count)
	}
	return m, nil
}

// runWorkers starts the <kind>-server worker in the server pod and runs the
// <kind>-client worker in the client pod, both pinned to e.cpu with one Go
// scheduler thread, so client, server and their wake-ups stay on one CPU.
func runWorkers(ctx context.Context, e *env, t *topology, kind string, concurrency int) (workerResult, counters, counters, error) {
	var a, b counters
	addr := net.JoinHostPort(t.server.ip, strconv.Itoa(tcpPort))
	worker := func(ns netns, spec workerSpec) ([]string, []string, error) {
		j, err := json.Marshal(spec)
		if err != nil {
			return nil, nil, err
		}
		env := []string{WorkerEnv + "=" + string(j), "GOMAXPROCS=1", "GOGC=off"}
		return env, ns.cmd(append([]string{"taskset", "-c", e.cpu}, e.self...)...), nil
	}
	senv, sargs, err := worker(t.server.ns, workerSpec{Role: kind + "-server", Addr: addr})
	if err != nil {
		return workerResult{}, a, b, err
	}
	srv, err := startProcess(kind+" server", senv, sargs...)
	if err != nil {
		return workerResult{}, a, b, err
	}
	defer srv.stop(syscall.SIGTERM)
	if err := waitListening(ctx, t.server.ns, tcpPort, srv); err != nil {
		return workerResult{}, a, b, err
	}
	cenv, cargs, err := worker(t.client.ns, workerSpec{Role: kind + "-client", Addr: addr, Duration: e.duration, Concurrency: concurrency})
	if err != nil {
		return workerResult{}, a, b, err
	}
	if a, err = snapshot(t); err != nil {
		return workerResult{}, a, b, err
	}
	out, err := runClientEnv(ctx, e.duration+30*time.Second, cenv, cargs...)
	if err != nil {
		return workerResult{}, a, b, err
	}
	if b, err = snapshot(t); err != nil {
		return workerResult{}, a, b, err
	}
	var res workerResult
	if err := json.Unmarshal(out, &res); err != nil {
		return workerResult{}, a, b, fmt.Errorf("%s client output %q: %w", kind, lastLines(string(out), 5), err)
	}
	if res.Count == 0 || res.Seconds <= 0 {
		return workerResult{}, a, b, fmt.Errorf("%s client completed nothing: %+v", kind, res)
	}
	return res, a, b, nil
}

// runClient runs a client program to completion and returns its stdout.
func runClient(ctx context.Context, timeout time.Duration, args ...string) ([]byte, error) {
	return runClientEnv(ctx, timeout, nil, args...)
}

func runClientEnv(ctx context.Context, timeout time.Duration, env []string, args ...string) ([]byte, error) {
	p, err := startProcess(args[len(args)-1], env, args...)
	if err != nil {
		return nil, err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.stop(syscall.SIGKILL)
		return nil, ctx.Err()
	case <-time.After(timeout):
		out := p.stop(syscall.SIGKILL)
		return nil, fmt.Errorf("%s did not finish in %v: %s", strings.Join(args, " "), timeout, lastLines(out, 5))
	}
	out := p.out.Bytes()
	if p.cmd.ProcessState != nil && !p.cmd.ProcessState.Success() {
		return nil, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), p.cmd.ProcessState, lastLines(p.output(), 5))
	}
	return out, nil
}

// waitListening waits until something listens on TCP port inside ns.
func waitListening(ctx context.Context, ns netns, port int, p *process) error {
	return waitListeningProto(ctx, ns, "tcp", port, p)
}

// waitListeningProto waits until a socket of proto ("tcp" or "udp") is
// bound to port inside ns.
func waitListeningProto(ctx context.Context, ns netns, proto string, port int, p *process) error {
	deadline := time.Now().Add(10 * time.Second)
	want := fmt.Sprintf(":%d ", port)
	flag := "-Htln"
	if proto == "udp" {
		flag = "-Huln"
	}
	for {
		out, err := ns.exec("ss", flag)
		if err == nil && strings.Contains(out, want) {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited: %s", p.name, lastLines(p.output(), 5))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not listening on port %d after 10s", p.name, port)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lastLines returns the last n lines of s, for error messages.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// sendPathRuntime is the CPU time, in ns, the generator's processes
// (process group pgid: trafgen and the child it forks) and the pinned
// CPU's ksoftirqd have run since they started. Everything a flooded
// frame costs until it is delivered runs there: veth transmit queues it
// on this CPU's backlog and the softirq that empties it (the receive, a
// switch's kernel hop, the next veth, the receiving stack) runs when the
// sender re-enables bottom halves, or in ksoftirqd. On a kernel without
// CONFIG_IRQ_TIME_ACCOUNTING (the default) softirq time counts to the
// task it interrupted, so the sum is the path's cost per delivered frame
// whatever else runs on the machine, unlike the packet rate. cpu is
// the harness's --cpu; a list of CPUs leaves ksoftirqd out.
func sendPathRuntime(pgid int, cpu string) (uint64, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var sum uint64
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// comm is parenthesised and may hold spaces: fields after the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i < bytes.IndexByte(stat, '(') {
			continue
		}
		comm := string(stat[bytes.IndexByte(stat, '(')+1 : i])
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 {
			continue
		}
		if pg, _ := strconv.Atoi(f[2]); pg != pgid && comm != "ksoftirqd/"+cpu {
			continue
		}
		ss, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "schedstat"))
		if err != nil {
			continue
		}
		ns, err := strconv.ParseUint(strings.Fields(string(ss))[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/schedstat: %w", pid, err)
		}
		sum += ns
	}
	return sum, nil
}
