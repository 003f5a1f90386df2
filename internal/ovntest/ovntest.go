// Package ovntest runs a private OVN deployment for tests: the northbound
// and southbound databases, ovn-northd, and one chassis whose
// Open_vSwitch database, switch daemon and ovn-controller run in their own
// network namespace (an internal/ovstest instance started without a
// bridge: ovn-controller creates br-int itself, as on a real node).
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
}

// OVN is one running deployment.
type OVN struct {
	tb      testing.TB
	Chassis *ovstest.OVS
	nb, sb  string // unix socket paths
}

// Start brings up the databases, ovn-northd and the chassis, and returns
// once ovn-controller has created br-int and the switch serves it.
func Start(tb testing.TB, opts Options) *OVN {
	tb.Helper()
	for _, bin := range []string{"ovn-northd", "ovn-controller", "ovn-nbctl", "ovn-sbctl"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("ovntest: %s not found: %v (install the Debian packages ovn-central and ovn-host)", bin, err)
		}
	}
	if opts.SystemID == "" {
		opts.SystemID = "chassis-1"
	}
	if opts.EncapIP == "" {
		opts.EncapIP = "127.0.0.1"
	}
	ch := ovstest.Start(tb, ovstest.Options{NoBridge: true, Vswitchd: opts.Vswitchd})
	o := &OVN{tb: tb, Chassis: ch}
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
	if _, err := ch.Vsctl("set", "Open_vSwitch", ".",
		"external_ids:system-id="+opts.SystemID,
		"external_ids:ovn-remote=unix:"+o.sb,
		"external_ids:ovn-encap-type=geneve",
		"external_ids:ovn-encap-ip="+opts.EncapIP,
		"external_ids:ovn-bridge-datapath-type=netdev"); err != nil {
		tb.Fatalf("ovntest: chassis settings: %v", err)
	}
	ch.StartDaemon(0, "ovn-controller", "ovn-controller", "", "unix:"+ch.DBSocket())
	mgmt := filepath.Join(dir, "br-int.mgmt")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(mgmt); err == nil {
			if out, err := ch.Vsctl("br-exists", "br-int"); err == nil {
				_ = out
				break
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("ovntest: ovn-controller did not get br-int up in 30 s (%s)", mgmt)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return o
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

// BindPort attaches an interface of the chassis's namespace to br-int as
// the logical port lsp (external_ids:iface-id), as a CNI or Nova would,
// and waits until ovn-controller has claimed it (ovn-installed).
func (o *OVN) BindPort(ifname, lsp string) {
	o.tb.Helper()
	if _, err := o.Chassis.Vsctl("add-port", "br-int", ifname, "--",
		"set", "Interface", ifname, "external_ids:iface-id="+lsp); err != nil {
		o.tb.Fatalf("ovntest: bind %s to %s: %v", ifname, lsp, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := o.Chassis.Vsctl("--if-exists", "get", "Interface", ifname, "external_ids:ovn-installed")
		if strings.Contains(out, "true") {
			return
		}
		if time.Now().After(deadline) {
			o.tb.Fatalf("ovntest: ovn-controller did not install %s (%s) in 30 s", lsp, ifname)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
