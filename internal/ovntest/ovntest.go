// Package ovntest runs a private OVN deployment for tests: the northbound
// and southbound databases, ovn-northd, and one or more chassis, each
// with its Open_vSwitch database, switch daemon and ovn-controller in its
// own network namespace (an internal/ovstest instance started without a
// bridge: ovn-controller creates br-int itself, as on a real node).
// Several chassis reach each other over Geneve through an underlay
// namespace (see Chassis).
//
// The switch daemon is Open vSwitch's ovs-vswitchd by default or any
// binary that takes its command line (govs-vswitchd), so one test can
// drive both through the same logical topology and compare.
package ovntest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/ovstest"
)

// Options configure Start.
type Options struct {
	// Vswitchd is the chassis's switch daemon ("": ovs-vswitchd).
	Vswitchd string
	// SystemID names the chassis ("": chassis-1).
	SystemID string
	// EncapIP is the chassis's tunnel endpoint ("": 127.0.0.1).
	EncapIP string
	// TapOpenFlow puts an OpenFlowTap between each ovn-controller and
	// its switch (Chassis.Tap), to time the bundles.
	TapOpenFlow bool
	// Chassis, when set, replaces the single chassis above: one chassis
	// per entry (the first also runs the databases and ovn-northd). With
	// two or more, each gets an underlay address on br-phy and they reach
	// each other over Geneve (see Chassis).
	Chassis []ChassisOptions
}

// ChassisOptions configure one chassis of a multi-chassis deployment.
type ChassisOptions struct {
	// Vswitchd is the chassis's switch daemon ("": ovs-vswitchd).
	Vswitchd string
}

// Underlay addressing of a multi-chassis deployment: chassis i (from 0)
// has UnderlayPrefix.(i+1)/24 on its br-phy.
const (
	UnderlayPrefix = "192.168.100."
	underlayNet    = UnderlayPrefix + "0/24"
)

// Chassis is one hypervisor: its Open_vSwitch database, switch daemon and
// ovn-controller, in their own network namespace.
//
// In a multi-chassis deployment the chassis are wired as OVS's userspace
// tunnelling guide wires a node, identically for every switch daemon:
// br-phy (datapath netdev, standalone) holds the underlay interface (a veth
// to a Linux bridge in an underlay namespace) and the encap address on its
// LOCAL port, and ovn-encap-type=geneve, ovn-encap-ip is that address.
// ovn-controller then creates one Geneve port per remote chassis on br-int.
// Open vSwitch's userspace tunnels route and resolve with its own tables,
// filled with ovs/route/add and tnl/arp/set (the harness disables the
// system routing table); govs sends through the kernel's UDP/IP stack,
// which routes and ARPs over br-phy by itself and has no such commands.
type Chassis struct {
	*ovstest.OVS
	Name    string // system-id, chassis-N
	EncapIP string
	// IsOVS: the switch daemon is Open vSwitch's ovs-vswitchd.
	IsOVS bool
	// Tap is the OpenFlow tap in front of br-int.mgmt (Options.TapOpenFlow).
	Tap *OpenFlowTap
	tb  testing.TB
}

// OVN is one running deployment.
type OVN struct {
	tb testing.TB
	// Chassis is the first chassis (which also runs the databases and
	// northd); Nodes are all of them, in order.
	Chassis *Chassis
	Nodes   []*Chassis
	nb, sb  string // unix socket paths
}

// Start brings up the databases, ovn-northd and the chassis, and returns
// once every ovn-controller has created br-int and its switch serves it.
func Start(tb testing.TB, opts Options) *OVN {
	tb.Helper()
	for _, bin := range []string{"ovn-northd", "ovn-controller", "ovn-nbctl", "ovn-sbctl"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("ovntest: %s not found: %v (install the Debian packages ovn-central and ovn-host)", bin, err)
		}
	}
	multi := len(opts.Chassis) > 0
	if !multi {
		opts.Chassis = []ChassisOptions{{Vswitchd: opts.Vswitchd}}
	}
	o := &OVN{tb: tb}
	var underlay *netnstest.NS
	if multi {
		underlay = netnstest.NewNS(tb)
		underlay.MustExec(tb, "ip", "link", "add", "ul", "type", "bridge")
		underlay.MustExec(tb, "ip", "link", "set", "ul", "up")
	}
	for i, co := range opts.Chassis {
		c := &Chassis{
			OVS:   ovstest.Start(tb, ovstest.Options{NoBridge: true, Vswitchd: co.Vswitchd}),
			Name:  fmt.Sprintf("chassis-%d", i+1),
			IsOVS: co.Vswitchd == "",
			tb:    tb,
		}
		if multi {
			c.EncapIP = fmt.Sprintf("%s%d", UnderlayPrefix, i+1)
			c.wireUnderlay(underlay)
		} else {
			c.Name, c.EncapIP = opts.SystemID, opts.EncapIP
			if c.Name == "" {
				c.Name = "chassis-1"
			}
			if c.EncapIP == "" {
				c.EncapIP = "127.0.0.1"
			}
		}
		o.Nodes = append(o.Nodes, c)
	}
	o.Chassis = o.Nodes[0]
	if multi {
		o.resolveUnderlay()
	}
	ch := o.Chassis
	dir := ch.Rundir()
	o.nb, o.sb = filepath.Join(dir, "ovnnb_db.sock"), filepath.Join(dir, "ovnsb_db.sock")
	for _, db := range []struct{ name, schema, sock string }{
		{"ovnnb_db", "/usr/share/ovn/ovn-nb.ovsschema", o.nb},
		{"ovnsb_db", "/usr/share/ovn/ovn-sb.ovsschema", o.sb},
	} {
		file := filepath.Join(dir, db.name+".db")
		if out, err := exec.Command("ovsdb-tool", "create", file, db.schema).CombinedOutput(); err != nil {
			tb.Fatalf("ovntest: ovsdb-tool create %s: %v\n%s", file, err, out)
		}
		ch.StartDaemon(30*time.Second, db.name, "ovsdb-server", db.sock, "--remote=punix:"+db.sock, file)
	}
	o.MustNbctl("init")
	o.mustSbctl("init")
	ch.StartDaemon(0, "ovn-northd", "ovn-northd", "", "--ovnnb-db=unix:"+o.nb, "--ovnsb-db=unix:"+o.sb)
	for _, c := range o.Nodes {
		c.startController(o.sb, opts.TapOpenFlow)
	}
	return o
}

// wireUnderlay makes br-phy with a veth to the underlay bridge and the
// chassis's encap address on br-phy's LOCAL port.
func (c *Chassis) wireUnderlay(underlay *netnstest.NS) {
	c.tb.Helper()
	ns := &netnstest.NS{Name: c.Netns()}
	v := netnstest.NewVeth(c.tb, ns, underlay, netnstest.VethOptions{})
	underlay.MustExec(c.tb, "ip", "link", "set", v.Peer, "master", "ul")
	if _, err := c.Vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy",
		"datapath_type=netdev", "fail-mode=standalone"); err != nil {
		c.tb.Fatalf("ovntest: %s: br-phy: %v", c.Name, err)
	}
	if _, err := c.Vsctl("add-port", "br-phy", v.Host); err != nil {
		c.tb.Fatalf("ovntest: %s: underlay port: %v", c.Name, err)
	}
	ns.MustExec(c.tb, "ip", "addr", "add", c.EncapIP+"/24", "dev", "br-phy")
	ns.MustExec(c.tb, "ip", "link", "set", "br-phy", "up")
	if !c.IsOVS {
		return
	}
	// OVS learns br-phy's address from netlink a moment later and
	// refuses the route until it has.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.Appctl("ovs/route/add", underlayNet, "br-phy")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("ovntest: %s: ovs/route/add %s br-phy: %v", c.Name, underlayNet, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resolveUnderlay gives every Open vSwitch chassis the MAC of every other
// chassis's encap address (tnl/arp/set), so the first tunnelled packet is
// not spent on ARP; govs's kernel path ARPs by itself.
func (o *OVN) resolveUnderlay() {
	o.tb.Helper()
	macs := map[string]string{}
	for _, c := range o.Nodes {
		l, err := netnstest.LinkShow(&netnstest.NS{Name: c.Netns()}, "br-phy")
		if err != nil {
			o.tb.Fatalf("ovntest: %s: br-phy: %v", c.Name, err)
		}
		macs[c.EncapIP] = l.Address
	}
	for _, c := range o.Nodes {
		if !c.IsOVS {
			continue
		}
		for _, peer := range o.Nodes {
			if peer == c {
				continue
			}
			if out, err := c.Appctl("tnl/arp/set", "br-phy", peer.EncapIP, macs[peer.EncapIP]); err != nil {
				o.tb.Fatalf("ovntest: %s: tnl/arp/set %s: %v %s", c.Name, peer.EncapIP, err, out)
			}
		}
	}
}

// startController points the chassis at the southbound database, starts
// its ovn-controller and waits until br-int is up.
func (c *Chassis) startController(sb string, tap bool) {
	c.tb.Helper()
	if _, err := c.Vsctl("set", "Open_vSwitch", ".",
		"external_ids:system-id="+c.Name,
		"external_ids:ovn-remote=unix:"+sb,
		"external_ids:ovn-encap-type=geneve",
		"external_ids:ovn-encap-ip="+c.EncapIP,
		"external_ids:ovn-bridge-datapath-type=netdev"); err != nil {
		c.tb.Fatalf("ovntest: %s settings: %v", c.Name, err)
	}
	mgmt := filepath.Join(c.Rundir(), "br-int.mgmt")
	var env []string
	if tap {
		// ovn-controller connects to $OVS_RUNDIR/br-int.mgmt: there it
		// finds the tap, which forwards to the switch's socket.
		dir, err := os.MkdirTemp("/tmp", "govs-oftap-")
		if err != nil {
			c.tb.Fatal(err)
		}
		c.tb.Cleanup(func() { os.RemoveAll(dir) })
		c.Tap, err = newOpenFlowTap(filepath.Join(dir, "br-int.mgmt"), mgmt)
		if err != nil {
			c.tb.Fatal(err)
		}
		c.Tap.cpu = processCPU(filepath.Join(c.Rundir(), "ovs-vswitchd.pid"))
		c.tb.Cleanup(func() { c.Tap.Close() })
		env = []string{"OVS_RUNDIR=" + dir}
	}
	c.StartDaemonEnv(0, env, "ovn-controller", "ovn-controller", "", "unix:"+c.DBSocket())
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(mgmt); err == nil {
			if _, err := c.Vsctl("br-exists", "br-int"); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("ovntest: %s: ovn-controller did not get br-int up in 30 s (%s)", c.Name, mgmt)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Nbctl runs ovn-nbctl against the deployment's northbound database.
func (o *OVN) Nbctl(args ...string) (string, error) {
	return o.ctl("ovn-nbctl", o.nb, args)
}

// MustNbctl is Nbctl that fails the test on error.
func (o *OVN) MustNbctl(args ...string) string {
	o.tb.Helper()
	out, err := o.Nbctl(args...)
	if err != nil {
		o.tb.Fatal(err)
	}
	return out
}

func (o *OVN) mustSbctl(args ...string) string {
	o.tb.Helper()
	out, err := o.ctl("ovn-sbctl", o.sb, args)
	if err != nil {
		o.tb.Fatal(err)
	}
	return out
}

// Trace runs ovn-trace against the deployment's databases.
func (o *OVN) Trace(args ...string) (string, error) {
	cmd := exec.Command("ovn-trace", append([]string{"--db=unix:" + o.sb}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ovn-trace %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// ControllerAppctl runs ovn-appctl against the chassis's ovn-controller.
func (o *OVN) ControllerAppctl(args ...string) (string, error) {
	// ovn-controller names its control socket after its pid, in the
	// rundir; ovn-appctl finds it from the pidfile there.
	cmd := exec.Command("ovn-appctl", append([]string{"-t", "ovn-controller"}, args...)...)
	cmd.Env = append(os.Environ(), "OVN_RUNDIR="+o.Chassis.Rundir(), "OVS_RUNDIR="+o.Chassis.Rundir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ovn-appctl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (o *OVN) ctl(tool, db string, args []string) (string, error) {
	full := append([]string{"--db=unix:" + db, "--timeout=30"}, args...)
	out, err := exec.Command(tool, full...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", tool, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// BindPort attaches an interface of the first chassis's namespace to
// br-int as the logical port lsp (see Chassis.BindPort).
func (o *OVN) BindPort(ifname, lsp string) {
	o.tb.Helper()
	o.Chassis.BindPort(ifname, lsp)
}

// BindPort attaches an interface of the chassis's namespace to br-int as
// the logical port lsp (external_ids:iface-id), as a CNI or Nova would,
// and waits until ovn-controller has claimed it (ovn-installed).
func (c *Chassis) BindPort(ifname, lsp string) {
	c.tb.Helper()
	if _, err := c.Vsctl("add-port", "br-int", ifname, "--",
		"set", "Interface", ifname, "external_ids:iface-id="+lsp); err != nil {
		c.tb.Fatalf("ovntest: %s: bind %s to %s: %v", c.Name, ifname, lsp, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := c.Vsctl("--if-exists", "get", "Interface", ifname, "external_ids:ovn-installed")
		if strings.Contains(out, "true") {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("ovntest: %s: ovn-controller did not install %s (%s) in 30 s", c.Name, lsp, ifname)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
