// Package netnstest creates throwaway network namespaces, veth pairs and raw
// sockets for datapath tests. Everything gets a unique name and is removed in
// t.Cleanup, also when the test fails. It needs root and iproute2's `ip`.
package netnstest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// T is the part of testing.TB the helpers use. Tests pass their
// *testing.T; a program that builds the same topologies (`govs demo`)
// passes its own, with a cleanup stack of its own.
type T interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// UniqueName returns prefix followed by 8 random hex digits. Interface
// names must stay below 16 bytes, so prefix should be at most 7 bytes.
func UniqueName(prefix string) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on Linux
	}
	return prefix + hex.EncodeToString(b[:])
}

// RequireRoot fails the test (not skips: the suite runs as root in CI) when
// the process cannot manage namespaces.
func RequireRoot(t T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test needs root (network namespaces, veth, AF_PACKET)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("this test needs iproute2's ip: %v", err)
	}
}

// Run runs a command and returns its combined output, or an error that
// includes the output.
func Run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// MustRun is Run that fails the test on error.
func MustRun(t T, name string, args ...string) string {
	t.Helper()
	out, err := Run(name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// NS is a named network namespace (/run/netns/<Name>). A nil *NS stands
// for the namespace the test process runs in.
type NS struct {
	Name string
}

// NSPrefix starts the names of the namespaces NewNS creates.
const NSPrefix = "govs-test-"

// NewNS creates a namespace with a unique name that carries this
// process's PID (see RemoveStaleNamespaces), brings its loopback up and
// deletes it in t.Cleanup. The first call also removes the namespaces
// earlier test processes left behind when they were killed.
func NewNS(t T) *NS {
	t.Helper()
	staleOnce.Do(func() {
		if gone, err := RemoveStaleNamespaces(NSPrefix); err != nil {
			t.Errorf("removing stale namespaces: %v (removed %v)", err, gone)
		}
	})
	return NewNSNamed(t, ProcessUniqueName(NSPrefix))
}

var staleOnce sync.Once

// ProcessUniqueName is prefix, this process's PID, "-" and 8 random hex
// digits: a name a later process can tell the creator of.
func ProcessUniqueName(prefix string) string {
	return UniqueName(fmt.Sprintf("%s%d-", prefix, os.Getpid()))
}

// RemoveStaleNamespaces deletes the namespaces named by
// ProcessUniqueName(prefix) whose creating process no longer exists and in
// which no process runs: what a test binary killed by its timeout left
// behind. Namespaces of live processes (other test runs), of this one,
// and names without a PID are left alone. It returns the names deleted.
func RemoveStaleNamespaces(prefix string) ([]string, error) {
	entries, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var gone []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || processExists(pid) {
			continue
		}
		if out, err := Run("ip", "netns", "pids", e.Name()); err != nil || strings.TrimSpace(out) != "" {
			continue // gone meanwhile, or something still runs in it
		}
		if _, err := Run("ip", "netns", "del", e.Name()); err != nil {
			return gone, err
		}
		gone = append(gone, e.Name())
	}
	return gone, nil
}

// processExists tells whether a process with this PID exists (a PID
// reused since only keeps a stale namespace, never removes a live one).
func processExists(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// NewNSNamed is NewNS with the name chosen by the caller.
func NewNSNamed(t T, name string) *NS {
	t.Helper()
	RequireRoot(t)
	ns := &NS{Name: name}
	MustRun(t, "ip", "netns", "add", ns.Name)
	t.Cleanup(func() {
		if out, err := Run("ip", "netns", "del", ns.Name); err != nil {
			t.Errorf("cleanup: %v (%s)", err, out)
		}
	})
	ns.MustExec(t, "ip", "link", "set", "lo", "up")
	return ns
}

// Command returns args prefixed with `ip netns exec <name>` (or unchanged
// for the nil namespace).
func (ns *NS) Command(args ...string) []string {
	if ns == nil {
		return args
	}
	return append([]string{"ip", "netns", "exec", ns.Name}, args...)
}

// Exec runs a command inside the namespace.
func (ns *NS) Exec(args ...string) (string, error) {
	full := ns.Command(args...)
	return Run(full[0], full[1:]...)
}

// MustExec is Exec that fails the test on error.
func (ns *NS) MustExec(t T, args ...string) string {
	t.Helper()
	out, err := ns.Exec(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// String names the namespace for messages.
func (ns *NS) String() string {
	if ns == nil {
		return "current netns"
	}
	return "netns " + ns.Name
}

// Do runs fn on a fresh OS thread switched into the namespace. Sockets and
// devices fn opens stay in that namespace and can be used from any
// goroutine afterwards. The thread is never switched back: it is locked and
// discarded when fn returns, so no other goroutine ever runs in the wrong
// namespace.
func (ns *NS) Do(fn func() error) error {
	if ns == nil {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // no Unlock: the thread dies with the goroutine
		fd, err := unix.Open(filepath.Join("/run/netns", ns.Name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open %s: %w", ns, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// VethOptions configure NewVeth. Zero values leave the kernel's choice.
type VethOptions struct {
	HostMAC, PeerMAC   net.HardwareAddr
	HostAddr, PeerAddr string // CIDR, e.g. "10.99.0.1/24"
	MTU                int    // both ends
	// KeepIPv6 leaves IPv6 enabled; by default it is disabled on both ends
	// before they go up, so no router/neighbour solicitations or MLD
	// reports show up in tests that count frames.
	KeepIPv6 bool
	// KeepOffloads leaves checksum/segmentation offloads on; by default
	// they are turned off with ethtool (if present) so AF_PACKET sees
	// frames with final checksums and no larger than the MTU.
	KeepOffloads bool
}

// Veth is a veth pair: Host lives in HostNS, Peer in PeerNS.
type Veth struct {
	Host, Peer     string
	HostNS, PeerNS *NS
}

// NewVeth creates a veth pair with unique names, the host end in hostNS
// (nil: the test's namespace) and the peer end in peerNS, applies opts,
// brings both ends up and removes the pair in t.Cleanup.
func NewVeth(t T, hostNS, peerNS *NS, opts VethOptions) *Veth {
	t.Helper()
	RequireRoot(t)
	v := &Veth{Host: UniqueName("gvh"), Peer: UniqueName("gvp"), HostNS: hostNS, PeerNS: peerNS}
	t.Cleanup(func() {
		// Deleting one end removes both; the namespace may already be
		// gone, which took the pair with it.
		if _, err := hostNS.Exec("ip", "link", "del", v.Host); err != nil && !linkGone(err) {
			t.Errorf("cleanup: %v", err)
		}
	})
	v.create(t, opts)
	return v
}

// Recreate deletes the pair and creates it again with the same names and
// opts: what a port bound to one end sees when an interface is deleted
// and made again under it.
func (v *Veth) Recreate(t T, opts VethOptions) {
	t.Helper()
	v.HostNS.MustExec(t, "ip", "link", "del", v.Host)
	v.create(t, opts)
}

// create makes the pair, applies opts and brings both ends up.
func (v *Veth) create(t T, opts VethOptions) {
	t.Helper()
	hostNS, peerNS := v.HostNS, v.PeerNS
	args := []string{"ip", "link", "add", v.Host}
	if hostNS != nil {
		args = append(args, "netns", hostNS.Name)
	}
	args = append(args, "type", "veth", "peer", "name", v.Peer)
	if peerNS != nil {
		args = append(args, "netns", peerNS.Name)
	}
	MustRun(t, args[0], args[1:]...)
	for _, end := range []struct {
		ns         *NS
		name, addr string
		mac        net.HardwareAddr
	}{{hostNS, v.Host, opts.HostAddr, opts.HostMAC}, {peerNS, v.Peer, opts.PeerAddr, opts.PeerMAC}} {
		if !opts.KeepIPv6 {
			DisableIPv6(t, end.ns, end.name)
		}
		if end.mac != nil {
			end.ns.MustExec(t, "ip", "link", "set", end.name, "address", end.mac.String())
		}
		if opts.MTU != 0 {
			end.ns.MustExec(t, "ip", "link", "set", end.name, "mtu", fmt.Sprint(opts.MTU))
		}
		if end.addr != "" {
			addr := []string{"ip", "addr", "add", end.addr, "dev", end.name}
			if strings.Contains(end.addr, ":") {
				addr = append(addr, "nodad") // usable at once, no duplicate address detection
			}
			end.ns.MustExec(t, addr...)
		}
		if !opts.KeepOffloads {
			DisableOffloads(t, end.ns, end.name)
		}
		end.ns.MustExec(t, "ip", "link", "set", end.name, "up")
	}
	v.waitUp(t)
}

// waitUp waits until both ends are operationally up with their qdisc
// attached. `ip link set up` returns before that: the kernel's linkwatch
// work sets the operstate and replaces the noop qdisc later, and until
// then every frame sent on the end is dropped (an ARP request too, retried
// only a second later). On a loaded machine that work runs late enough to
// lose a test's first packets.
func (v *Veth) waitUp(t T) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for _, end := range []struct {
		ns   *NS
		name string
	}{{v.HostNS, v.Host}, {v.PeerNS, v.Peer}} {
		for {
			l, err := LinkShow(end.ns, end.name)
			if err != nil {
				t.Fatal(err)
			}
			if l.OperState == "UP" && l.Qdisc != "noop" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s in %s still %s with qdisc %s 20s after ip link set up", end.name, end.ns, l.OperState, l.Qdisc)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func linkGone(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Cannot find device") || strings.Contains(s, "does not exist")
}

// DisableIPv6 turns IPv6 off on one interface (a no-op when the kernel has
// no IPv6).
func DisableIPv6(t T, ns *NS, ifname string) {
	t.Helper()
	path := filepath.Join("/proc/sys/net/ipv6/conf", ifname, "disable_ipv6")
	err := ns.Do(func() error {
		// /proc/sys/net follows the namespace of the thread that opens it.
		err := os.WriteFile(path, []byte("1"), 0)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	})
	if err != nil {
		t.Fatalf("disable IPv6 on %s in %s: %v", ifname, ns, err)
	}
}

// DisableOffloads turns off checksum and segmentation offloads with
// ethtool when it is installed, so frames cross the veth complete.
func DisableOffloads(t T, ns *NS, ifname string) {
	t.Helper()
	if _, err := exec.LookPath("ethtool"); err != nil {
		return
	}
	// Some features are fixed on some kernels; ethtool then exits non-zero
	// although the others changed, so only a missing device is fatal.
	if _, err := ns.Exec("ethtool", "-K", ifname, "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"); err != nil && linkGone(err) {
		t.Fatal(err)
	}
}

// Link is the part of `ip -j -d link show` tests look at.
type Link struct {
	Ifindex     int      `json:"ifindex"`
	Name        string   `json:"ifname"`
	Flags       []string `json:"flags"`
	MTU         int      `json:"mtu"`
	OperState   string   `json:"operstate"`
	Qdisc       string   `json:"qdisc"`
	Address     string   `json:"address"`
	Promiscuity int      `json:"promiscuity"`
	LinkInfo    struct {
		Kind string `json:"info_kind"`
		Data struct {
			Type       string `json:"type"`
			PI         bool   `json:"pi"`
			VnetHdr    bool   `json:"vnet_hdr"`
			Persist    bool   `json:"persist"`
			MultiQueue bool   `json:"multi_queue"`
		} `json:"info_data"`
	} `json:"linkinfo"`
}

// HasFlag reports whether the link has an IFF_* flag as `ip` prints it
// ("UP", "PROMISC", "LOWER_UP", ...).
func (l *Link) HasFlag(f string) bool {
	for _, x := range l.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// LinkShow returns the link's details, or an error wrapping os.ErrNotExist
// when there is no such link.
func LinkShow(ns *NS, ifname string) (*Link, error) {
	out, err := ns.Exec("ip", "-j", "-d", "link", "show", "dev", ifname)
	if err != nil {
		if linkGone(err) {
			return nil, fmt.Errorf("link %s in %s: %w", ifname, ns, os.ErrNotExist)
		}
		return nil, err
	}
	var links []Link
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		return nil, fmt.Errorf("parse ip -j link show %s: %w", ifname, err)
	}
	if len(links) != 1 {
		return nil, fmt.Errorf("ip -j link show %s: %d links", ifname, len(links))
	}
	return &links[0], nil
}

// RawSocket is a plain AF_PACKET socket (no ring, one frame per system
// call) bound to one interface: an independent peer to check ports against.
type RawSocket struct {
	fd int
}

// NewRawSocket opens a raw socket on ifname inside ns and closes it in
// t.Cleanup. It does not see its own transmissions.
func NewRawSocket(t T, ns *NS, ifname string) *RawSocket {
	t.Helper()
	return NewRawSocketProto(t, ns, ifname, unix.ETH_P_ALL)
}

// NewRawSocketProto is NewRawSocket bound to one protocol (ethertype):
// it gets only the frames of that protocol, after tc ingress, where an
// ETH_P_ALL socket is a tap that sees every frame before it.
func NewRawSocketProto(t T, ns *NS, ifname string, proto uint16) *RawSocket {
	t.Helper()
	s := RawSocket{fd: -1}
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket: %w", err)
		}
		s.fd = fd
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
			return fmt.Errorf("PACKET_IGNORE_OUTGOING: %w", err)
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto<<8 | proto>>8, Ifindex: ifi.Index})
	})
	if s.fd >= 0 {
		t.Cleanup(s.Close)
	}
	if err != nil {
		t.Fatalf("raw socket on %s in %s: %v", ifname, ns, err)
	}
	return &s
}

// Send transmits one complete Ethernet frame.
func (s *RawSocket) Send(frame []byte) error {
	if _, err := unix.Write(s.fd, frame); err != nil {
		return fmt.Errorf("raw send %d bytes: %w", len(frame), err)
	}
	return nil
}

// Recv waits up to timeout for one frame and copies it into buf. It
// returns os.ErrDeadlineExceeded (wrapped) on timeout.
func (s *RawSocket) Recv(buf []byte, timeout time.Duration) (int, error) {
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return 0, fmt.Errorf("raw recv: %w", os.ErrDeadlineExceeded)
		}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("raw recv poll: %w", err)
		}
		if n == 0 {
			continue
		}
		n, _, err = unix.Recvfrom(s.fd, buf, unix.MSG_DONTWAIT)
		if err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("raw recv: %w", err)
		}
		return n, nil
	}
}

// RecvMatch receives frames until match accepts one, returning it, or
// fails after timeout. Other frames are ignored.
func (s *RawSocket) RecvMatch(timeout time.Duration, match func([]byte) bool) ([]byte, error) {
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 65536)
	for {
		n, err := s.Recv(buf, time.Until(deadline))
		if err != nil {
			return nil, err
		}
		if match(buf[:n]) {
			return append([]byte(nil), buf[:n]...), nil
		}
	}
}

// FD is the socket's file descriptor (for benchmarks that drive it
// directly).
func (s *RawSocket) FD() int { return s.fd }

// Close closes the socket now (t.Cleanup then does nothing).
func (s *RawSocket) Close() {
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
}

// ServeTCP listens on port inside the namespace and answers every
// connection with greeting, then closes it, until the listener is closed.
func (ns *NS) ServeTCP(port int, greeting string) (net.Listener, error) {
	var ln net.Listener
	err := ns.Do(func() (err error) {
		ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port))
		return err
	})
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, greeting)
			c.Close()
		}
	}()
	return ln, nil
}

// TCPGet connects to addr from inside the namespace (2 s to connect, 3 s
// to read) and returns what the server sent before closing.
func (ns *NS) TCPGet(addr string) (string, error) {
	var out string
	err := ns.Do(func() (err error) {
		out, err = ReadTCP(addr)
		return err
	})
	return out, err
}

// ReadTCP is TCPGet from the namespace of the calling thread (inside
// NS.Do, for a loop of connections on one thread).
func ReadTCP(addr string) (string, error) {
	c, err := net.DialTimeout("tcp4", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

// MountBPFFS mounts a bpffs of the test's own under /tmp and returns its
// path; it is unmounted (freeing whatever is still pinned in it) and
// removed at cleanup. Daemons started under `ip netns exec` see it (that
// remounts /sys only), and nothing a test pins lands in /sys/fs/bpf.
func MountBPFFS(t T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "govs-bpffs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		os.Remove(dir)
		t.Fatalf("mount bpffs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount test bpffs %s: %v", dir, err)
		}
		os.Remove(dir)
	})
	return dir
}

// TCXIngress returns the ids of the programs attached at TCX ingress of
// ifname in ns (the kernel fast path's tc path), first to run first.
func TCXIngress(ns *NS, ifname string) ([]ebpf.ProgramID, error) {
	var ids []ebpf.ProgramID
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		r, err := link.QueryPrograms(link.QueryOptions{Target: ifi.Index, Attach: ebpf.AttachTCXIngress})
		if err != nil {
			return err
		}
		for _, p := range r.Programs {
			ids = append(ids, p.ID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("TCX ingress programs of %s: %w", ifname, err)
	}
	return ids, nil
}
