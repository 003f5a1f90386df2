package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
)

// nsPrefix starts every namespace the harness creates, followed by the
// harness's pid, so a later run can remove what a killed run left behind.
const nsPrefix = "govsbench-"

// cmdTimeout bounds every setup command (ip, ethtool, ovs-ofctl).
const cmdTimeout = 30 * time.Second

// randHex returns 2n random hex digits.
func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on Linux
	}
	return hex.EncodeToString(b)
}

// run runs a setup command and returns its combined output, or an error
// carrying it.
func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// netns is a named network namespace (/run/netns/<name>); "" is the
// harness's own namespace.
type netns string

// cmd prefixes args with `ip netns exec`.
func (ns netns) cmd(args ...string) []string {
	if ns == "" {
		return args
	}
	return append([]string{"ip", "netns", "exec", string(ns)}, args...)
}

// exec runs a setup command inside the namespace.
func (ns netns) exec(args ...string) (string, error) {
	full := ns.cmd(args...)
	return run(full[0], full[1:]...)
}

// sysctl sets key=value inside the namespace.
func (ns netns) sysctl(key, value string) error {
	_, err := ns.exec("sysctl", "-qw", key+"="+value)
	return err
}

// cleanupStack runs teardown steps newest first, exactly once, whatever
// happened before; it keeps the first error.
type cleanupStack struct {
	steps []func() error
}

func (c *cleanupStack) push(f func() error) { c.steps = append(c.steps, f) }

func (c *cleanupStack) run() error {
	var first error
	for i := len(c.steps) - 1; i >= 0; i-- {
		if err := c.steps[i](); err != nil && first == nil {
			first = err
		}
	}
	c.steps = nil
	return first
}

// newNS creates a namespace named govsbench-<pid>-<role>-<rand>, brings lo
// up and registers its deletion (which also removes every veth end in it).
func newNS(cs *cleanupStack, role string) (netns, error) {
	name := netns(fmt.Sprintf("%s%d-%s-%s", nsPrefix, os.Getpid(), role, randHex(3)))
	if _, err := run("ip", "netns", "add", string(name)); err != nil {
		return "", fmt.Errorf("create namespace: %w", err)
	}
	cs.push(func() error {
		if out, err := run("ip", "netns", "del", string(name)); err != nil && !strings.Contains(out, "No such file") {
			return fmt.Errorf("delete namespace %s: %w", name, err)
		}
		return nil
	})
	if _, err := name.exec("ip", "link", "set", "lo", "up"); err != nil {
		return "", err
	}
	return name, nil
}

// removeStaleNamespaces deletes namespaces that an earlier harness run
// created and could not remove (it was killed): their name carries a pid
// that is no longer alive, and nothing runs in them.
func removeStaleNamespaces(logf func(string, ...any)) {
	gone, err := netnstest.RemoveStaleNamespaces(nsPrefix)
	for _, name := range gone {
		logf("removed stale namespace %s of a dead harness", name)
	}
	if err != nil {
		logf("removing stale namespaces: %v", err)
	}
}

// podIface is one pod's network interface.
type podIface struct {
	ns   netns
	name string
	ip   string // without prefix length
	mac  string
	// gwIP and gwMAC are the pod's default gateway (Antrea's antrea-gw0)
	// when the other pod is on another node; empty when the two pods share
	// a subnet and talk directly.
	gwIP, gwMAC string
}

// nextHopMAC is the destination MAC of p's frames to peer.
func (p podIface) nextHopMAC(peer podIface) string {
	if p.gwMAC != "" {
		return p.gwMAC
	}
	return peer.mac
}

// vethPair creates a veth pair a (in nsA) <-> b (in nsB) with fresh names.
// Deleting either namespace removes it.
func vethPair(nsA, nsB netns) (a, b string, err error) {
	suffix := randHex(4)
	a, b = "gba"+suffix, "gbb"+suffix
	args := []string{"link", "add", a, "netns", string(nsA), "type", "veth", "peer", "name", b, "netns", string(nsB)}
	if _, err := run("ip", args...); err != nil {
		return "", "", fmt.Errorf("create veth pair: %w", err)
	}
	return a, b, nil
}

// setupIface disables IPv6 (so no solicitations or MLD add packets to the
// counters), sets the MAC and address, applies the offload setting and
// brings the interface up.
func setupIface(ns netns, name, mac, cidr string, offloads bool) error {
	if err := ns.sysctl("net.ipv6.conf."+name+".disable_ipv6", "1"); err != nil {
		return err
	}
	if mac != "" {
		if _, err := ns.exec("ip", "link", "set", name, "address", mac); err != nil {
			return err
		}
	}
	if cidr != "" {
		if _, err := ns.exec("ip", "addr", "add", cidr, "dev", name); err != nil {
			return err
		}
	}
	if err := setOffloads(ns, name, offloads); err != nil {
		return err
	}
	_, err := ns.exec("ip", "link", "set", name, "up")
	return err
}

// setOffloads turns transmit checksum offload and segmentation offloads on
// or off. A userspace switch reading with AF_PACKET needs them off: with
// tx checksum offload a veth hands it frames whose L4 checksum is only
// partial (the receiver then drops them), and with TSO/GSO frames larger
// than the MTU. ethtool exits non-zero when some feature is fixed on this
// kernel although it changed the others, so only a missing device is an
// error.
func setOffloads(ns netns, name string, on bool) error {
	v := "off"
	if on {
		v = "on"
	}
	out, err := ns.exec("ethtool", "-K", name, "tx", v, "tso", v, "gso", v, "gro", v)
	if err != nil && (strings.Contains(out, "No such device") || strings.Contains(out, "Cannot get")) {
		return fmt.Errorf("ethtool on %s: %w", name, err)
	}
	return nil
}

// staticNeighbor adds a permanent ARP entry, so no measurement depends on
// ARP and the switches see only the measured traffic.
func staticNeighbor(ns netns, dev, ip, mac string) error {
	_, err := ns.exec("ip", "neigh", "replace", ip, "lladdr", mac, "dev", dev, "nud", "permanent")
	return err
}

// ifaceCounter reads one of /sys/class/net/<dev>/statistics/<name> inside
// the namespace. sysfs shows the devices of the namespace that mounted it,
// so this goes through `ip netns exec cat`, which remounts /sys.
func ifaceCounter(ns netns, dev, name string) (uint64, error) {
	out, err := ns.exec("cat", "/sys/class/net/"+dev+"/statistics/"+name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %s counter %q: %w", dev, name, out, err)
	}
	return v, nil
}

// process is a long-running child (a daemon or a server) in its own process
// group, killed with the harness if the harness dies (Pdeathsig).
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	// Written by exec until Wait returns; read only after done is closed.
	out, errOut *bytes.Buffer
}

// startProcess starts args (already prefixed with `ip netns exec`, which
// execs in place, so the pid is the program's own) with extra environment.
func startProcess(name string, env []string, args ...string) (*process, error) {
	p := &process{name: name, done: make(chan struct{}), out: &bytes.Buffer{}, errOut: &bytes.Buffer{}}
	p.cmd = exec.Command(args[0], args[1:]...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errOut
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// pid returns the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig to the process group, waits up to 5 s, then SIGKILLs it.
// It returns the process's output (stdout, then stderr).
func (p *process) stop(sig syscall.Signal) string {
	_ = syscall.Kill(-p.pid(), sig)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
	return p.output()
}

// output returns stdout then stderr; only call it once the process ended
// (or for a progress message, accepting a racy read of a live process).
func (p *process) output() string { return p.out.String() + p.errOut.String() }

// cpuTicks returns utime+stime of a process (all its threads, living and
// dead) in clock ticks, from /proc/<pid>/stat.
func cpuTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("switch cpu time: %w", err)
	}
	return parseStatCPU(string(b))
}

// parseStatCPU extracts utime+stime (fields 14 and 15) from a
// /proc/<pid>/stat line. The command name (field 2) is in parentheses and
// may itself contain spaces and parentheses, so fields are counted from the
// last ')'.
func parseStatCPU(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc stat %q: no ')' after the command name", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state), so field N is f[N-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat: %d fields after the command name, want at least 13", len(f))
	}
	utime, err := strconv.ParseUint(f[14-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("proc stat utime %q: %w", f[14-3], err)
	}
	stime, err := strconv.ParseUint(f[15-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("proc stat stime %q: %w", f[15-3], err)
	}
	return utime + stime, nil
}

// clockTicksPerSecond is USER_HZ, the unit of /proc/<pid>/stat times; it is
// 100 on every Linux architecture Go supports.
const clockTicksPerSecond = 100
