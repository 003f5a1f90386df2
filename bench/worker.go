package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The request/response and connection-rate tests run as worker processes
// inside the pod namespaces, pinned with taskset: the harness re-executes its
// own binary with WorkerEnv set to a JSON workerSpec. A binary that embeds
// the harness must call RunWorkerIfRequested before anything else (the govs
// command does it in `govs bench`, the tests in TestMain).
const WorkerEnv = "GOVS_BENCH_WORKER"

// workerSpec tells a worker process what to do.
type workerSpec struct {
	Role        string        `json:"role"`           // rr-server, rr-client, crr-server, crr-client, relay, udp-answer, udp-hello
	Addr        string        `json:"addr"`           // listen or connect address, ip:port
	From        string        `json:"from,omitempty"` // udp-hello: the local address, ip:port
	Duration    time.Duration `json:"duration"`
	Concurrency int           `json:"concurrency,omitempty"` // crr-client
	Ifaces      []string      `json:"ifaces,omitempty"`      // relay
}

// workerResult is what a client worker prints as JSON on stdout.
type workerResult struct {
	Count   int64   `json:"count"` // transactions or connections
	Errors  int64   `json:"errors"`
	Seconds float64 `json:"seconds"`
	P50ns   int64   `json:"p50_ns,omitempty"`
	P99ns   int64   `json:"p99_ns,omitempty"`
	// FirstError is the first error a crr client saw, for the report.
	FirstError string `json:"first_error,omitempty"`
}

// RunWorkerIfRequested runs the worker role described by $GOVS_BENCH_WORKER
// and exits the process when that variable is set; otherwise it returns.
func RunWorkerIfRequested() {
	spec := os.Getenv(WorkerEnv)
	if spec == "" {
		return
	}
	if err := runWorker(spec, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "govs bench worker: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runWorker(specJSON string, out io.Writer) error {
	var s workerSpec
	if err := json.Unmarshal([]byte(specJSON), &s); err != nil {
		return fmt.Errorf("worker spec %q: %w", specJSON, err)
	}
	var (
		res workerResult
		err error
	)
	switch s.Role {
	case "rr-server":
		return rrServer(s.Addr)
	case "crr-server":
		return crrServer(s.Addr)
	case "relay":
		return relay(s.Ifaces)
	case "udp-answer":
		return udpAnswer(s.Addr, s.Duration)
	case "udp-hello":
		return udpHello(s.From, s.Addr, s.Duration)
	case "rr-client":
		res, err = rrClient(s.Addr, s.Duration)
	case "crr-client":
		res, err = crrClient(s.Addr, s.Duration, s.Concurrency)
	default:
		return fmt.Errorf("unknown worker role %q", s.Role)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(res)
}

// sockaddr parses ip:port into an IPv4 socket address.
func sockaddr(addr string) (*unix.SockaddrInet4, error) {
	a, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return nil, fmt.Errorf("address %q: %w", addr, err)
	}
	sa := &unix.SockaddrInet4{Port: a.Port}
	if ip4 := a.IP.To4(); ip4 != nil {
		copy(sa.Addr[:], ip4)
	}
	return sa, nil
}

// rrServer echoes one byte for every byte, one connection after another.
// It uses plain blocking system calls, like netperf's TCP_RR, so the thread
// sleeps in recv and the kernel wakes it directly: no Go netpoller hand-off
// adds to the latency being measured.
func rrServer(addr string) error {
	sa, err := sockaddr(addr)
	if err != nil {
		return err
	}
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(ln)
	if err := unix.SetsockoptInt(ln, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return fmt.Errorf("SO_REUSEADDR: %w", err)
	}
	if err := unix.Bind(ln, sa); err != nil {
		return fmt.Errorf("bind %s: %w", addr, err)
	}
	if err := unix.Listen(ln, 16); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	buf := make([]byte, 1)
	for {
		fd, _, err := unix.Accept(ln)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		for {
			n, err := unix.Read(fd, buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 {
				break
			}
			if _, err := unix.Write(fd, buf[:n]); err != nil {
				break
			}
		}
		unix.Close(fd)
	}
}

// maxLatencySamples bounds the latency buffer (16 MiB); transactions beyond
// it are counted but not timed.
const maxLatencySamples = 1 << 21

// rrClient sends one byte and waits for one byte back, for duration, and
// reports the transaction count and the p50/p99 round-trip time.
func rrClient(addr string, duration time.Duration) (workerResult, error) {
	sa, err := sockaddr(addr)
	if err != nil {
		return workerResult{}, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return workerResult{}, fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		return workerResult{}, fmt.Errorf("TCP_NODELAY: %w", err)
	}
	// A dropped SYN would otherwise block for the kernel's retry schedule.
	tv := unix.Timeval{Sec: 5}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return workerResult{}, fmt.Errorf("SO_RCVTIMEO: %w", err)
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return workerResult{}, fmt.Errorf("SO_SNDTIMEO: %w", err)
	}
	if err := unix.Connect(fd, sa); err != nil {
		return workerResult{}, fmt.Errorf("connect %s: %w", addr, err)
	}
	samples := make([]int64, 0, maxLatencySamples)
	req, resp := []byte{'x'}, make([]byte, 1)
	start := time.Now()
	end := start.Add(duration)
	var count int64
	for {
		t0 := time.Now()
		if !t0.Before(end) {
			break
		}
		if _, err := unix.Write(fd, req); err != nil {
			return workerResult{}, fmt.Errorf("rr write after %d transactions: %w", count, err)
		}
		for {
			n, err := unix.Read(fd, resp)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return workerResult{}, fmt.Errorf("rr read after %d transactions: %w", count, err)
			}
			if n == 0 {
				return workerResult{}, fmt.Errorf("rr: server closed after %d transactions", count)
			}
			break
		}
		if len(samples) < cap(samples) {
			samples = append(samples, int64(time.Since(t0)))
		}
		count++
	}
	res := workerResult{Count: count, Seconds: time.Since(start).Seconds()}
	res.P50ns, res.P99ns = percentile(samples, 50), percentile(samples, 99)
	return res, nil
}

// percentile returns the p-th percentile (nearest rank) of xs; it sorts xs.
func percentile(xs []int64, p float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	if !sort.SliceIsSorted(xs, func(i, j int) bool { return xs[i] < xs[j] }) {
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
	}
	rank := int(p/100*float64(len(xs))+0.999999) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(xs) {
		rank = len(xs) - 1
	}
	return xs[rank]
}

// crrServer accepts connections, answers one byte and waits for the client
// to close (the client resets, so no TIME_WAIT piles up on either side).
func crrServer(addr string) error {
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("accept: %w", err)
		}
		go func() {
			defer c.Close()
			b := make([]byte, 1)
			if _, err := io.ReadFull(c, b); err != nil {
				return
			}
			if _, err := c.Write(b); err != nil {
				return
			}
			c.Read(b) // until the client's RST or FIN
		}()
	}
}

// crrClient opens connections in a loop from concurrency goroutines: connect,
// one byte each way, close with SO_LINGER 0 (a RST). Every connection is a
// new conntrack entry in the switch: SYN, SYN-ACK, ACK, data, RST.
func crrClient(addr string, duration time.Duration, concurrency int) (workerResult, error) {
	if concurrency < 1 {
		concurrency = 1
	}
	var count, errs atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	end := start.Add(duration)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var samples []int64 // connect times
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := net.Dialer{Timeout: 2 * time.Second}
			b := make([]byte, 1)
			mine := make([]int64, 0, 1<<16)
			for time.Now().Before(end) {
				connect, err := crrOnce(&d, addr, b)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				if len(mine) < cap(mine) {
					mine = append(mine, int64(connect))
				}
				count.Add(1)
			}
			mu.Lock()
			samples = append(samples, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res := workerResult{Count: count.Load(), Errors: errs.Load(), Seconds: time.Since(start).Seconds()}
	res.P50ns, res.P99ns = percentile(samples, 50), percentile(samples, 99)
	if s, ok := firstErr.Load().(string); ok {
		res.FirstError = s
	}
	return res, nil
}

// crrOnce makes one connection and returns how long the connect took.
func crrOnce(d *net.Dialer, addr string, b []byte) (time.Duration, error) {
	t0 := time.Now()
	c, err := d.Dial("tcp4", addr)
	if err != nil {
		return 0, err
	}
	connect := time.Since(t0)
	tc := c.(*net.TCPConn)
	defer func() {
		tc.SetLinger(0)
		tc.Close()
	}()
	tc.SetDeadline(time.Now().Add(2 * time.Second))
	b[0] = 'c'
	if _, err := tc.Write(b); err != nil {
		return 0, err
	}
	_, err = io.ReadFull(tc, b)
	return connect, err
}

// udpAnswer answers the first datagram it receives on addr with one
// datagram on the same 5-tuple, reversed, then closes the socket: enough
// for a conntrack (Linux's, Open vSwitch's, govs's) to see the flow's
// reply and call it established, as a DNS or QUIC server's answer does.
func udpAnswer(addr string, timeout time.Duration) error {
	c, err := net.ListenPacket("udp4", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	b := make([]byte, 64)
	n, from, err := c.ReadFrom(b)
	if err != nil {
		return fmt.Errorf("udp answer: %w", err)
	}
	if _, err := c.WriteTo(b[:n], from); err != nil {
		return fmt.Errorf("udp answer to %s: %w", from, err)
	}
	return nil
}

// udpHello sends a datagram from the local address from to addr until the
// answer comes back (every 100 ms, for at most timeout), then closes.
func udpHello(from, addr string, timeout time.Duration) error {
	la, err := net.ResolveUDPAddr("udp4", from)
	if err != nil {
		return fmt.Errorf("address %q: %w", from, err)
	}
	d := net.Dialer{LocalAddr: la}
	c, err := d.Dial("udp4", addr)
	if err != nil {
		return fmt.Errorf("udp %s->%s: %w", from, addr, err)
	}
	defer c.Close()
	b := make([]byte, 64)
	for end := time.Now().Add(timeout); time.Now().Before(end); {
		if _, err := c.Write([]byte("hello")); err != nil {
			return fmt.Errorf("udp hello: %w", err)
		}
		next := time.Now().Add(100 * time.Millisecond)
		c.SetReadDeadline(next)
		if _, err := c.Read(b); err == nil {
			return nil
		}
		// A refusal (nothing bound yet) returns at once: keep the pace.
		time.Sleep(time.Until(next))
	}
	return fmt.Errorf("no answer from %s to %s in %v", addr, from, timeout)
}
