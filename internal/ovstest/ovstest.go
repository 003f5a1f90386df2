// Package ovstest starts a private, real Open vSwitch (ovsdb-server plus
// ovs-vswitchd with the userspace "netdev" datapath) for tests, so that other
// packages can compare govs against the reference implementation: load the same
// flows, dump them back, trace packets.
//
// Every instance is isolated from the host and from other instances:
//   - its own run/db/log/sysconf directory (OVS_RUNDIR, OVS_DBDIR, OVS_LOGDIR,
//     OVS_SYSCONFDIR all point at one fresh temporary directory, and the daemons
//     also get explicit --pidfile, --unixctl and --log-file paths in it);
//   - its own network namespace with a unique name, because the netdev datapath
//     creates a TAP device called "ovs-netdev" and only one can exist per
//     namespace;
//   - its own OVSDB created from /usr/share/openvswitch/vswitch.ovsschema.
//
// Everything is torn down in tb.Cleanup, also when the test fails; the daemon
// logs are copied into the test log when it does.
package ovstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
)

// SchemaPath is the OVSDB schema shipped by the Debian package openvswitch-common.
const SchemaPath = "/usr/share/openvswitch/vswitch.ovsschema"

// DefaultBridge is the bridge name Antrea uses and the default of Options.Bridge.
const DefaultBridge = "br-int"

// DefaultProtocols are the OpenFlow versions enabled on the bridge by default:
// 1.0 (plain ovs-ofctl), 1.3 (what govs speaks first) and 1.5 (current Antrea).
var DefaultProtocols = []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"}

// commandTimeout bounds every ovs-ofctl / ovs-vsctl / ovs-appctl invocation so a
// wedged daemon fails the test instead of hanging it.
const commandTimeout = 30 * time.Second

// requiredBinaries are looked up in PATH before anything is started.
var requiredBinaries = []string{"ip", "ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovs-appctl"}

// testHookCreated, if set by a test, sees every OVS right after its cleanup is
// registered, so tests of failed starts can check that nothing was left behind.
var testHookCreated func(*OVS)

// Port is an OVS port (with one interface of the same name) to add to the bridge.
type Port struct {
	// Name of the port and of its interface.
	Name string
	// Type is the Interface type: "internal" (a TAP device in the netdev
	// datapath), "tap", "geneve", "vxlan", "patch", or "" for an existing
	// network device of that name in the namespace.
	Type string
	// OFPort is the requested OpenFlow port number (Interface ofport_request);
	// 0 lets OVS choose.
	OFPort int
	// Options are Interface options, e.g. {"remote_ip": "flow", "key": "flow"}.
	Options map[string]string
}

// Options configure Start. The zero value is valid.
type Options struct {
	// Bridge name; DefaultBridge if empty.
	Bridge string
	// FailMode is "secure", "standalone" or "" (OVS default, standalone).
	FailMode string
	// Protocols enabled on the bridge; DefaultProtocols if nil.
	Protocols []string
	// Ports added to the bridge after it is created, in order.
	Ports []Port
	// StartTimeout bounds the wait for each daemon socket; 30 s if zero.
	StartTimeout time.Duration
	// OtherConfig is set in the Open_vSwitch table before ovs-vswitchd
	// starts (some keys, like userspace-tso-enable, are read only then).
	OtherConfig map[string]string
	// NoBridge starts the daemons without creating a bridge (a test
	// whose controller creates its own, as ovn-controller creates br-int).
	NoBridge bool
	// Vswitchd is the switch daemon's binary ("": ovs-vswitchd from
	// PATH); any binary that takes ovs-vswitchd's command line works.
	Vswitchd string
	// VswitchdNiceness runs ovs-vswitchd under nice -n N, as ovs-ctl's
	// --ovs-vswitchd-priority does (ovs-ctl's default, how distributions
	// start it, is -10); 0 leaves the default scheduling.
	VswitchdNiceness int
}

// OVS is one running private Open vSwitch instance.
type OVS struct {
	tb      testing.TB
	bridge  string
	dir     string // rundir = dbdir = logdir = sysconfdir
	netns   string
	env     []string
	daemons []*daemon
	nice    int // ovs-vswitchd's niceness (Options.VswitchdNiceness)
	// vswitchd and startTimeout start ovs-vswitchd again (StartVswitchd).
	vswitchd     string
	startTimeout time.Duration
}

// daemon is one OVS process started by the harness.
type daemon struct {
	name    string // "ovsdb-server" or "ovs-vswitchd"
	cmd     *exec.Cmd
	pidfile string
	logfile string
	outfile string // captured stdout+stderr
	done    chan struct{}
	waitErr error
}

// CmdError is returned when an OVS command-line tool exits unsuccessfully.
// Stderr holds exactly what the tool printed (e.g. "ovs-ofctl: unknown keyword
// w_dst\n"), so tests can compare error messages with real OVS.
type CmdError struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *CmdError) Error() string {
	return fmt.Sprintf("%s: %v: %s", strings.Join(e.Args, " "), e.Err, strings.TrimSpace(e.Stderr))
}

func (e *CmdError) Unwrap() error { return e.Err }

// Start launches a private OVS with one bridge and returns it. It calls
// tb.Fatalf if OVS is not installed or does not come up; cleanup is registered
// before anything is created, so a partial start is torn down too.
func Start(tb testing.TB, opts Options) *OVS {
	tb.Helper()
	for _, bin := range requiredBinaries {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("ovstest: %s not found in PATH: %v (install the Debian packages openvswitch-switch and iproute2; `make deps` does this)", bin, err)
		}
	}
	if _, err := os.Stat(SchemaPath); err != nil {
		tb.Fatalf("ovstest: OVSDB schema missing: %v (install the Debian package openvswitch-common)", err)
	}
	if opts.Bridge == "" {
		opts.Bridge = DefaultBridge
	}
	if opts.Protocols == nil {
		opts.Protocols = DefaultProtocols
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	switch opts.FailMode {
	case "", "secure", "standalone":
	default:
		tb.Fatalf("ovstest: fail mode %q: want \"\", \"secure\" or \"standalone\"", opts.FailMode)
	}

	suffix := randomSuffix(tb)
	// Unix socket paths are limited to 108 bytes, so the directory lives
	// directly under /tmp rather than under a long t.TempDir() path.
	dir, err := os.MkdirTemp("/tmp", "govs-ovs-"+suffix+"-")
	if err != nil {
		tb.Fatalf("ovstest: create run directory: %v", err)
	}
	o := &OVS{
		tb:     tb,
		bridge: opts.Bridge,
		dir:    dir,
		netns:  fmt.Sprintf("%s%d-%s", netnsPrefix, os.Getpid(), suffix),
	}
	o.env = append(os.Environ(),
		"OVS_RUNDIR="+dir,
		"OVS_DBDIR="+dir,
		"OVS_LOGDIR="+dir,
		"OVS_SYSCONFDIR="+dir,
		"OVS_PKGDATADIR=/usr/share/openvswitch",
		// For OVN daemons started with StartDaemon (ovn-controller).
		"OVN_RUNDIR="+dir,
		"OVN_LOGDIR="+dir,
		"OVN_DBDIR="+dir,
	)
	tb.Cleanup(o.teardown)
	if testHookCreated != nil {
		testHookCreated(o)
	}

	staleOnce.Do(func() {
		if gone, err := netnstest.RemoveStaleNamespaces(netnsPrefix); err != nil {
			tb.Errorf("ovstest: removing stale namespaces: %v (removed %v)", err, gone)
		}
	})
	if out, err := o.run("ip", "netns", "add", o.netns); err != nil {
		o.fatalf("create network namespace %s: %v (%s)", o.netns, err, out)
	}
	// The namespace starts with lo down; bring it up so loopback works in it.
	if out, err := o.run("ip", "-n", o.netns, "link", "set", "lo", "up"); err != nil {
		o.fatalf("bring up lo in %s: %v (%s)", o.netns, err, out)
	}

	db := filepath.Join(dir, "conf.db")
	if out, err := o.run("ovsdb-tool", "create", db, SchemaPath); err != nil {
		o.fatalf("ovsdb-tool create: %v (%s)", err, out)
	}

	dbSock := filepath.Join(dir, "db.sock")
	o.startDaemon(opts.StartTimeout, "ovsdb-server", dbSock,
		"--remote=punix:"+dbSock,
		db)
	if _, err := o.Vsctl("--no-wait", "init"); err != nil {
		o.fatalf("ovs-vsctl init: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(opts.OtherConfig)) {
		if _, err := o.Vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:"+k+"="+opts.OtherConfig[k]); err != nil {
			o.fatalf("ovs-vsctl set other_config:%s: %v", k, err)
		}
	}

	o.nice = opts.VswitchdNiceness
	vswitchd := opts.Vswitchd
	if vswitchd == "" {
		vswitchd = "ovs-vswitchd"
	}
	o.vswitchd, o.startTimeout = vswitchd, opts.StartTimeout
	o.startVswitchd()

	if opts.NoBridge {
		return o
	}
	// Without --no-wait, ovs-vsctl waits until ovs-vswitchd has applied the
	// change, so the bridge exists when this returns.
	args := []string{"add-br", o.bridge, "--", "set", "bridge", o.bridge,
		"datapath_type=netdev",
		"protocols=" + strings.Join(opts.Protocols, ","),
	}
	if opts.FailMode != "" {
		args = append(args, "fail-mode="+opts.FailMode)
	}
	if _, err := o.Vsctl(args...); err != nil {
		o.fatalf("create bridge %s: %v", o.bridge, err)
	}
	if err := waitSocket(o.MgmtSocket(), opts.StartTimeout, nil); err != nil {
		o.fatalf("bridge management socket: %v", err)
	}
	for _, p := range opts.Ports {
		if err := o.AddPort(p); err != nil {
			o.fatalf("%v", err)
		}
	}
	return o
}

func (o *OVS) startVswitchd() {
	o.tb.Helper()
	o.startDaemonAs(o.startTimeout, "ovs-vswitchd", o.vswitchd, filepath.Join(o.dir, "ovs-vswitchd.ctl"),
		"unix:"+o.DBSocket(),
		// No kernel datapath in tests: only the userspace netdev datapath.
		"--disable-system",
		"--disable-system-route")
}

// StopVswitchd stops ovs-vswitchd with `ovs-appctl exit` and exitArgs
// (e.g. "--cleanup") and waits until the process is gone.
func (o *OVS) StopVswitchd(exitArgs ...string) error {
	o.tb.Helper()
	return o.endVswitchd(func(*daemon) error {
		if out, err := o.Appctl(append([]string{"exit"}, exitArgs...)...); err != nil {
			return fmt.Errorf("ovs-appctl exit: %w (%s)", err, out)
		}
		return nil
	})
}

// KillVswitchd kills ovs-vswitchd with SIGKILL (a crash) and waits until
// the process is gone.
func (o *OVS) KillVswitchd() error {
	o.tb.Helper()
	return o.endVswitchd(func(d *daemon) error { return syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL) })
}

func (o *OVS) endVswitchd(end func(*daemon) error) error {
	var d *daemon
	for _, x := range o.daemons {
		if x.name == "ovs-vswitchd" {
			d = x
		}
	}
	if d == nil {
		return fmt.Errorf("ovstest: no ovs-vswitchd started")
	}
	if err := end(d); err != nil {
		return err
	}
	select {
	case <-d.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("ovstest: ovs-vswitchd still running after 10s")
	}
}

// StartVswitchd starts ovs-vswitchd again, with the command line Start
// used, and waits for the bridge's management socket (a restart).
func (o *OVS) StartVswitchd() {
	o.tb.Helper()
	o.startVswitchd()
	if err := waitSocket(o.MgmtSocket(), o.startTimeout, nil); err != nil {
		o.fatalf("bridge management socket after restart: %v", err)
	}
}

// AddPort adds p to the bridge and waits until ovs-vswitchd has applied it.
func (o *OVS) AddPort(p Port) error {
	if p.Name == "" {
		return errors.New("ovstest: add port: empty name")
	}
	args := []string{"add-port", o.bridge, p.Name}
	var set []string
	if p.Type != "" {
		set = append(set, "type="+p.Type)
	}
	if p.OFPort != 0 {
		set = append(set, "ofport_request="+strconv.Itoa(p.OFPort))
	}
	keys := make([]string, 0, len(p.Options))
	for k := range p.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		set = append(set, "options:"+k+"="+p.Options[k])
	}
	if len(set) > 0 {
		args = append(args, "--", "set", "interface", p.Name)
		args = append(args, set...)
	}
	if _, err := o.Vsctl(args...); err != nil {
		return fmt.Errorf("ovstest: add port %s: %w", p.Name, err)
	}
	if p.OFPort != 0 {
		out, err := o.Vsctl("get", "interface", p.Name, "ofport")
		if err != nil {
			return fmt.Errorf("ovstest: port %s ofport: %w", p.Name, err)
		}
		if got := strings.TrimSpace(out); got != strconv.Itoa(p.OFPort) {
			return fmt.Errorf("ovstest: port %s got ofport %s, requested %d (see ovs-vswitchd.log)", p.Name, got, p.OFPort)
		}
	}
	return nil
}

// Bridge returns the bridge name.
func (o *OVS) Bridge() string { return o.bridge }

// Rundir returns the private run directory (also the db, log and sysconf dir).
func (o *OVS) Rundir() string { return o.dir }

// Netns returns the name of the network namespace the daemons run in.
func (o *OVS) Netns() string { return o.netns }

// MgmtSocket returns the filesystem path of the bridge's management socket,
// <rundir>/<bridge>.mgmt, where `ovs-ofctl <bridge>` would look.
func (o *OVS) MgmtSocket() string { return filepath.Join(o.dir, o.bridge+".mgmt") }

// Target returns the ovs-ofctl connection method for the bridge: "unix:<MgmtSocket()>".
func (o *OVS) Target() string { return "unix:" + o.MgmtSocket() }

// DBSocket returns the filesystem path of ovsdb-server's unix socket.
func (o *OVS) DBSocket() string { return filepath.Join(o.dir, "db.sock") }

// VswitchdLog returns the contents of ovs-vswitchd's log file.
func (o *OVS) VswitchdLog() string {
	b, _ := os.ReadFile(filepath.Join(o.dir, "ovs-vswitchd.log"))
	return string(b)
}

// switchCommands are the ovs-ofctl commands whose first argument is a SWITCH
// (from `ovs-ofctl --help`); Ofctl inserts the bridge target after them.
var switchCommands = map[string]bool{
	"show": true, "dump-desc": true, "dump-tables": true, "dump-table-features": true,
	"dump-table-desc": true, "mod-port": true, "mod-table": true, "get-frags": true,
	"set-frags": true, "dump-ports": true, "dump-ports-desc": true, "dump-flows": true,
	"dump-aggregate": true, "queue-stats": true, "add-flow": true, "add-flows": true,
	"mod-flows": true, "del-flows": true, "replace-flows": true, "packet-out": true,
	"monitor": true, "snoop": true, "add-group": true, "add-groups": true,
	"mod-group": true, "del-groups": true, "insert-buckets": true, "remove-buckets": true,
	"dump-group-features": true, "dump-groups": true, "dump-group-stats": true,
	"queue-get-config": true, "add-meter": true, "mod-meter": true, "del-meters": true,
	"dump-meters": true, "meter-stats": true, "meter-features": true, "add-tlv-map": true,
	"del-tlv-map": true, "dump-tlv-map": true, "dump-ipfix-bridge": true,
	"dump-ipfix-flow": true, "ct-flush-zone": true, "ct-flush": true, "probe": true,
	"ping": true, "benchmark": true, "bundle": true,
}

// ofctlValueOptions are ovs-ofctl options whose value may be the next argument.
var ofctlValueOptions = map[string]bool{
	"-O": true, "--protocols": true, "-F": true, "--flow-format": true,
	"-P": true, "--packet-in-format": true, "-t": true, "--timeout": true,
	"--unixctl": true, "-p": true, "--private-key": true, "-c": true,
	"--certificate": true, "-C": true, "--ca-cert": true, "--user": true,
}

// Ofctl runs ovs-ofctl with args. For commands that take a SWITCH argument
// (dump-flows, add-flow, ...), the bridge target unix:<MgmtSocket()> is inserted
// right after the command word, so callers write
//
//	o.Ofctl("-O", "OpenFlow13", "dump-flows", "--no-stats", "table=0")
//
// Other commands (parse-flow, ofp-parse, diff-flows, ...) and argument lists that
// already name the target are passed through unchanged. It returns stdout; on
// failure the error is a *CmdError carrying stderr.
func (o *OVS) Ofctl(args ...string) (string, error) {
	return o.tool("ovs-ofctl", o.ofctlArgs(args))
}

func (o *OVS) ofctlArgs(args []string) []string {
	target := o.Target()
	for _, a := range args {
		if a == target {
			return args
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if ofctlValueOptions[a] {
				i++ // skip the option's value
			}
			continue
		}
		if !switchCommands[a] {
			return args
		}
		out := make([]string, 0, len(args)+1)
		out = append(out, args[:i+1]...)
		out = append(out, target)
		return append(out, args[i+1:]...)
	}
	return args
}

// Vsctl runs ovs-vsctl against this instance's database.
func (o *OVS) Vsctl(args ...string) (string, error) {
	full := append([]string{"--db=unix:" + o.DBSocket(), "--timeout=" + strconv.Itoa(int(commandTimeout/time.Second))}, args...)
	return o.tool("ovs-vsctl", full)
}

// Appctl runs ovs-appctl against this instance's ovs-vswitchd, e.g.
// o.Appctl("ofproto/trace", "br-int", "in_port=1,tcp").
func (o *OVS) Appctl(args ...string) (string, error) {
	full := append([]string{"-t", filepath.Join(o.dir, "ovs-vswitchd.ctl")}, args...)
	return o.tool("ovs-appctl", full)
}

// versionArgs returns the -O option for version ("" means ovs-ofctl's default).
func versionArgs(version string) []string {
	if version == "" {
		return nil
	}
	return []string{"-O", version}
}

// AddFlowsFile runs `ovs-ofctl [-O version] add-flows <bridge> path`.
// version is e.g. "OpenFlow13"; "" leaves ovs-ofctl's default negotiation.
func (o *OVS) AddFlowsFile(path, version string) error {
	_, err := o.Ofctl(append(versionArgs(version), "add-flows", path)...)
	return err
}

// AddFlow runs `ovs-ofctl [-O version] add-flow <bridge> flow`.
func (o *OVS) AddFlow(version, flow string) error {
	_, err := o.Ofctl(append(versionArgs(version), "add-flow", flow)...)
	return err
}

// AddGroup runs `ovs-ofctl [-O version] add-group <bridge> group`. Groups need
// OpenFlow 1.1 or later, so pass e.g. "OpenFlow13".
func (o *OVS) AddGroup(version, group string) error {
	_, err := o.Ofctl(append(versionArgs(version), "add-group", group)...)
	return err
}

// DumpFlows runs `ovs-ofctl [-O version] dump-flows <bridge> extra...` and
// returns its output, e.g. o.DumpFlows("OpenFlow13", "--no-stats", "table=0").
func (o *OVS) DumpFlows(version string, extra ...string) (string, error) {
	args := append(versionArgs(version), "dump-flows")
	return o.Ofctl(append(args, extra...)...)
}

// AddTLVMap runs `ovs-ofctl add-tlv-map <bridge> spec`, e.g.
// "{class=0x104,type=0x80,len=4}->tun_metadata0".
func (o *OVS) AddTLVMap(spec string) error {
	_, err := o.Ofctl("add-tlv-map", spec)
	return err
}

// Reset deletes every flow, group and TLV mapping, so one instance can be
// reused for several independent loads.
func (o *OVS) Reset() error {
	if _, err := o.Ofctl("-O", "OpenFlow13", "del-flows"); err != nil {
		return fmt.Errorf("ovstest: reset flows: %w", err)
	}
	if _, err := o.Ofctl("-O", "OpenFlow13", "del-groups"); err != nil {
		return fmt.Errorf("ovstest: reset groups: %w", err)
	}
	// OVS frees deleted flows after an RCU grace period, and refuses to
	// delete a TLV mapping a flow still holds (NXTTMFC_INVALID_TLV_DEL):
	// on a loaded machine the first try can come too early.
	for try := 0; ; try++ {
		_, err := o.Ofctl("del-tlv-map")
		if err == nil {
			return nil
		}
		if try == 50 || !strings.Contains(err.Error(), "NXTTMFC_INVALID_TLV_DEL") {
			return fmt.Errorf("ovstest: reset TLV map: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// SortedLines splits command output into its non-empty lines sorted in byte
// order, the same order as `LC_ALL=C sort`.
func SortedLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

// tool runs one OVS command-line tool with the instance environment and a timeout.
func (o *OVS) tool(name string, args []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = o.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w after %v", ctx.Err(), commandTimeout)
		}
		return stdout.String(), &CmdError{Args: append([]string{name}, args...), Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}

// run runs a setup command and returns its combined output.
func (o *OVS) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = o.env
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// startDaemon starts an OVS daemon inside the namespace, in the foreground (no
// --detach) so the harness owns the process, in its own process group so the
// whole group can be signalled, and waits for sock to accept connections.
func (o *OVS) startDaemon(timeout time.Duration, name, sock string, args ...string) {
	o.tb.Helper()
	o.startDaemonAs(timeout, name, name, sock, args...)
}

// StartDaemon starts another daemon of the Open vSwitch family (an OVN
// database server, ovn-northd, ovn-controller) in the instance's
// namespace and directory, like the instance's own: pidfile, unixctl
// socket and log file named after id, stopped at teardown. It waits up to
// timeout for sock to accept connections ("": it does not wait).
func (o *OVS) StartDaemon(timeout time.Duration, id, binary, sock string, args ...string) {
	o.tb.Helper()
	o.startDaemonAs(timeout, id, binary, sock, args...)
}

// StartDaemonEnv is StartDaemon with env (NAME=value) added to the
// instance's environment, overriding it (e.g. another OVS_RUNDIR, where
// ovn-controller looks for br-int.mgmt).
func (o *OVS) StartDaemonEnv(timeout time.Duration, env []string, id, binary, sock string, args ...string) {
	o.tb.Helper()
	o.startDaemonEnv(timeout, env, id, binary, sock, args...)
}

func (o *OVS) startDaemonAs(timeout time.Duration, name, binary, sock string, args ...string) {
	o.tb.Helper()
	o.startDaemonEnv(timeout, nil, name, binary, sock, args...)
}

func (o *OVS) startDaemonEnv(timeout time.Duration, env []string, name, binary, sock string, args ...string) {
	o.tb.Helper()
	d := &daemon{
		name:    name,
		pidfile: filepath.Join(o.dir, name+".pid"),
		logfile: filepath.Join(o.dir, name+".log"),
		outfile: filepath.Join(o.dir, name+".out"),
		done:    make(chan struct{}),
	}
	full := []string{"netns", "exec", o.netns}
	if name == "ovs-vswitchd" && o.nice != 0 {
		// nice execs the daemon in place: cmd.Process stays the daemon.
		full = append(full, "nice", "-n", strconv.Itoa(o.nice))
	}
	full = append(full, binary, "--pidfile="+d.pidfile)
	if binary != "ovn-controller" {
		// ovn-controller has no --unixctl: its socket is
		// $OVS_RUNDIR/ovn-controller.<pid>.ctl.
		full = append(full, "--unixctl="+filepath.Join(o.dir, name+".ctl"))
	}
	full = append(full,
		"--log-file="+d.logfile,
		"--no-chdir",
		// Errors still reach stderr (captured in <name>.out); the rest is in the log file.
		"-vconsole:err",
		"-vfile:info",
	)
	full = append(full, args...)
	out, err := os.Create(d.outfile)
	if err != nil {
		o.fatalf("create %s: %v", d.outfile, err)
	}
	defer out.Close() // the child keeps its own descriptor
	// "ip netns exec" execs the daemon in place, so cmd.Process is the daemon.
	d.cmd = exec.Command("ip", full...)
	d.cmd.Env = append(slices.Clip(o.env), env...) // exec keeps the last of duplicates
	d.cmd.Stdout = out
	d.cmd.Stderr = out
	d.cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If the test binary dies without running cleanups, take the daemon with it.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := startOnSpawner(d.cmd); err != nil {
		o.fatalf("start %s: %v", name, err)
	}
	o.daemons = append(o.daemons, d)
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.done)
	}()
	if sock == "" {
		return
	}
	if err := waitSocket(sock, timeout, d.done); err != nil {
		o.fatalf("%s did not come up: %v", name, err)
	}
}

// waitSocket polls until a unix socket at path accepts a connection, the
// timeout passes, or exited is closed (the daemon died).
func waitSocket(path string, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited before %s accepted connections", path)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v: %w", path, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fatalf fails the test; teardown (already registered) still runs.
func (o *OVS) fatalf(format string, args ...any) {
	o.tb.Helper()
	o.tb.Fatalf("ovstest: "+format, args...)
}

// teardown stops the daemons (newest first), removes the namespace and the
// directory. It copies the daemon logs into the test log if the test failed.
func (o *OVS) teardown() {
	if o.tb.Failed() {
		o.logDaemonOutput()
	}
	for i := len(o.daemons) - 1; i >= 0; i-- {
		o.stopDaemon(o.daemons[i])
	}
	if o.netns != "" {
		if out, err := o.run("ip", "netns", "del", o.netns); err != nil && !strings.Contains(out, "No such file") {
			o.tb.Errorf("ovstest: delete network namespace %s: %v (%s)", o.netns, err, out)
		}
	}
	if err := os.RemoveAll(o.dir); err != nil {
		o.tb.Errorf("ovstest: remove %s: %v", o.dir, err)
	}
}

// stopDaemon sends SIGTERM to the daemon's process group, waits, then SIGKILLs
// the group. It also kills the pid in the pidfile if that differs and is alive.
func (o *OVS) stopDaemon(d *daemon) {
	pid := d.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		o.tb.Logf("ovstest: %s (pid %d) ignored SIGTERM for 5s; sending SIGKILL", d.name, pid)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		select {
		case <-d.done:
		case <-time.After(5 * time.Second):
			o.tb.Errorf("ovstest: %s (pid %d) still running after SIGKILL", d.name, pid)
		}
	}
	// Whatever wrote the pidfile should be the process we started; kill it
	// anyway if it is somebody else and still alive (e.g. a daemon that forked).
	if b, err := os.ReadFile(d.pidfile); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 && p != pid {
			if syscall.Kill(p, 0) == nil {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
	}
}

// logDaemonOutput copies each daemon's log and captured stderr into the test log.
func (o *OVS) logDaemonOutput() {
	for _, d := range o.daemons {
		for _, f := range []string{d.logfile, d.outfile} {
			b, err := os.ReadFile(f)
			if err != nil || len(b) == 0 {
				continue
			}
			const max = 64 << 10 // the tail is what explains a failure
			if len(b) > max {
				b = b[len(b)-max:]
			}
			o.tb.Logf("ovstest: ---- %s ----\n%s", filepath.Base(f), b)
		}
	}
}

// netnsPrefix starts the namespace names: netnsPrefix, the test
// process's PID, a random suffix (netnstest.RemoveStaleNamespaces removes
// those a killed test process left).
const netnsPrefix = "govs-ovs-"

var staleOnce sync.Once

func randomSuffix(tb testing.TB) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatalf("ovstest: random suffix: %v", err)
	}
	return hex.EncodeToString(b[:])
}

// Pdeathsig is delivered when the *thread* that forked the child exits,
// not the process. Go may later lock that thread to a goroutine that ends
// locked (netnstest.NS.Do does), destroying the thread and killing the
// daemon. So daemons are forked from one thread that lives as long as the
// test binary.
var spawnReqs = make(chan spawnReq)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

var spawnerOnce sync.Once

func startOnSpawner(cmd *exec.Cmd) error {
	spawnerOnce.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: this thread lives on
			for r := range spawnReqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawnReqs <- spawnReq{cmd, done}
	return <-done
}
