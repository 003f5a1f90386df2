package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
)

// These tests drive govs-vswitchd only through the Open vSwitch tools:
// a private ovsdb-server, ovs-vsctl with the commands one types for OVS,
// ovs-ofctl on $OVS_RUNDIR/<bridge>.mgmt. govs-vswitchd gets the database
// as ovs-vswitchd does, as its positional argument.

// ovsdbRig is a private ovsdb-server (its own directory, which is also
// OVS_RUNDIR for the tools and the rundir of govs-vswitchd) plus a
// network namespace for govs-vswitchd.
type ovsdbRig struct {
	t       testing.TB
	dir     string
	env     []string
	ns      *netnstest.NS
	server  *exec.Cmd
	govs    *exec.Cmd
	govsLog string
}

// schemaPath is the vswitch schema of the Debian openvswitch-common package.
const schemaPath = "/usr/share/openvswitch/vswitch.ovsschema"

func newOVSDBRig(t testing.TB) *ovsdbRig {
	t.Helper()
	netnstest.RequireRoot(t)
	for _, bin := range []string{"ovsdb-tool", "ovsdb-server", "ovs-vsctl", "ovs-ofctl"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found (install openvswitch-switch; `make deps`): %v", bin, err)
		}
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	// Unix socket paths are short: the directory lives right under /tmp.
	dir, err := os.MkdirTemp("/tmp", "govs-ovsdb-"+hex.EncodeToString(rnd[:])+"-")
	if err != nil {
		t.Fatal(err)
	}
	r := &ovsdbRig{t: t, dir: dir, ns: netnstest.NewNS(t), govsLog: filepath.Join(dir, "govs-vswitchd.log")}
	r.env = append(os.Environ(), "OVS_RUNDIR="+dir, "OVS_DBDIR="+dir, "OVS_LOGDIR="+dir, "OVS_SYSCONFDIR="+dir)
	t.Cleanup(func() {
		r.stopGovs()
		r.stopServer()
		if t.Failed() {
			data, _ := os.ReadFile(r.govsLog)
			t.Logf("govs-vswitchd log:\n%s", data)
		}
		os.RemoveAll(dir)
	})
	if out, err := exec.Command("ovsdb-tool", "create", r.db(), schemaPath).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v\n%s", err, out)
	}
	r.startServer()
	r.vsctl("--no-wait", "init")
	return r
}

func (r *ovsdbRig) db() string     { return filepath.Join(r.dir, "conf.db") }
func (r *ovsdbRig) dbSock() string { return filepath.Join(r.dir, "db.sock") }

// startServer runs ovsdb-server in the foreground (the test owns it).
func (r *ovsdbRig) startServer() {
	r.t.Helper()
	os.Remove(r.dbSock())
	r.server = exec.Command("ovsdb-server", "--remote=punix:"+r.dbSock(),
		"--unixctl="+filepath.Join(r.dir, "ovsdb-server.ctl"),
		"--log-file="+filepath.Join(r.dir, "ovsdb-server.log"), "-vconsole:off", "--no-chdir", r.db())
	r.server.Env = r.env
	if err := r.server.Start(); err != nil {
		r.t.Fatalf("ovsdb-server: %v", err)
	}
	waitPath(r.t, r.dbSock())
}

func (r *ovsdbRig) stopServer() {
	if r.server != nil {
		r.server.Process.Kill()
		r.server.Wait()
		r.server = nil
	}
}

// startGovs runs govs-vswitchd in the rig's namespace with the database
// as its argument.
func (r *ovsdbRig) startGovs() {
	r.t.Helper()
	r.govs = r.startGovsAt(r.ns, r.dir, r.govsLog)
}

// startGovsAt runs a govs-vswitchd on the rig's database from namespace
// ns with rundir dir.
func (r *ovsdbRig) startGovsAt(ns *netnstest.NS, dir, logPath string) *exec.Cmd {
	r.t.Helper()
	_, vswitchd := binaries(r.t)
	return r.startVswitchd(vswitchd, ns, dir, logPath)
}

// startGovsWith runs the govs-vswitchd binary at path in the rig.
func (r *ovsdbRig) startGovsWith(path string) *exec.Cmd {
	r.t.Helper()
	return r.startVswitchd(path, r.ns, r.dir, r.govsLog)
}

func (r *ovsdbRig) startVswitchd(vswitchd string, ns *netnstest.NS, dir, logPath string) *exec.Cmd {
	r.t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	args := ns.Command(vswitchd, "--rundir", dir, "--nice", "0", "unix:"+r.dbSock())
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("govs-vswitchd: %v", err)
	}
	waitPath(r.t, filepath.Join(dir, "govs-vswitchd.ctl"))
	return cmd
}

func (r *ovsdbRig) stopGovs() {
	if r.govs == nil {
		return
	}
	r.govs.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- r.govs.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		r.govs.Process.Kill()
		<-done
	}
	r.govs = nil
}

func waitPath(t testing.TB, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tool runs an OVS command-line tool with the rig's environment.
func (r *ovsdbRig) tool(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = r.env
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return out.String(), err
}

// vsctl runs ovs-vsctl with a 10 s timeout: without --no-wait it returns
// only once the switch has set cur_cfg.
func (r *ovsdbRig) vsctl(args ...string) string {
	r.t.Helper()
	if !strings.HasPrefix(args[0], "--timeout") {
		args = append([]string{"--timeout=10"}, args...)
	}
	out, err := r.tool("ovs-vsctl", append([]string{"--db=unix:" + r.dbSock()}, args...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *ovsdbRig) get(table, record, column string) string {
	r.t.Helper()
	return strings.TrimSpace(r.vsctl("--no-wait", "get", table, record, column))
}

// parseList reads `ovs-vsctl list` output (and the goldens, which are
// its output) into one map of column to value per record.
func parseList(text string) []map[string]string {
	var recs []map[string]string
	var cur map[string]string
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasSuffix(line, " table") {
			cur = nil
			continue
		}
		if cur == nil {
			cur = map[string]string{}
			recs = append(recs, cur)
		}
		cur[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return recs
}

// goldenInterfaces are the Interface rows of golden 09 (Open vSwitch 3.1
// after Antrea's transactions, OVSDB-APPCTL.md), by name.
func goldenInterfaces(t testing.TB) map[string]map[string]string {
	data, err := os.ReadFile("testdata/ovsdb/09-final-all-ports.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, ifaces, _ := strings.Cut(string(data), "Interface table\n")
	out := map[string]map[string]string{}
	for _, rec := range parseList(ifaces) {
		out[strings.Trim(rec["name"], `"`)] = rec
	}
	return out
}

// vswitchdColumns are the Interface columns ovs-vswitchd writes that
// govs writes too.
var vswitchdColumns = []string{"ofport", "error", "admin_state", "link_state", "mac_in_use", "mtu", "ifindex", "link_resets", "statistics"}

// TestOVSDBPorts: bridges and ports made with ovs-vsctl, as for Open
// vSwitch, get what ovs-vswitchd writes back: the LOCAL port, requested
// ofports (Antrea's 32768-32771), a geneve port without local_ip, the
// errors of a bad type and a missing device exactly as in golden 09, and
// cur_cfg (ovs-vsctl without --no-wait returns).
func TestOVSDBPorts(t *testing.T) {
	r := newOVSDBRig(t)
	r.startGovs()
	r.vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev", "fail_mode=secure", "protocols=OpenFlow10,OpenFlow15")
	if got := r.get("interface", "br-int", "ofport"); got != "65534" {
		t.Errorf("LOCAL port ofport %s, want 65534", got)
	}
	if got := r.get("bridge", "br-int", "datapath_id"); !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(got) {
		t.Errorf("datapath_id %s, want 16 hex digits", got)
	}
	if got := r.get("bridge", "br-int", "datapath_version"); got != `"<built-in>"` {
		t.Errorf("datapath_version %s", got)
	}
	veth := netnstest.NewVeth(t, r.ns, nil, netnstest.VethOptions{})
	r.vsctl("add-port", "br-int", "antrea-gw0", "--", "set", "interface", "antrea-gw0", "type=internal", "ofport_request=32769", `mac="aa:bb:cc:00:00:02"`,
		"--", "add-port", "br-int", "antrea-tun0", "--", "set", "interface", "antrea-tun0", "type=geneve", "ofport_request=32768", "options:key=flow", "options:remote_ip=flow",
		"--", "add-port", "br-int", veth.Host, "--", "set", "interface", veth.Host, "ofport_request=49",
		"--", "add-port", "br-int", "fx-bad0", "--", "set", "interface", "fx-bad0", "type=foo",
		"--", "add-port", "br-int", "fx-missing0")
	for name, want := range map[string]string{"antrea-gw0": "32769", "antrea-tun0": "32768", veth.Host: "49", "fx-bad0": "-1", "fx-missing0": "-1"} {
		if got := r.get("interface", name, "ofport"); got != want {
			t.Errorf("%s: ofport %s, want %s", name, got, want)
		}
	}
	ovs := parseList(r.vsctl("--no-wait", "list", "open_vswitch"))[0]
	if ovs["cur_cfg"] != ovs["next_cfg"] || ovs["cur_cfg"] == "0" {
		t.Errorf("cur_cfg %s next_cfg %s", ovs["cur_cfg"], ovs["next_cfg"])
	}
	if ovs["datapath_types"] != "[netdev, system]" || ovs["dpdk_version"] != "none" {
		t.Errorf("datapath_types %s dpdk_version %s", ovs["datapath_types"], ovs["dpdk_version"])
	}

	golden := goldenInterfaces(t)
	got := map[string]map[string]string{}
	for _, rec := range parseList(r.vsctl("--no-wait", "list", "interface")) {
		got[strings.Trim(rec["name"], `"`)] = rec
	}
	// The failures are deterministic: every column ovs-vswitchd writes
	// equals Open vSwitch's.
	for _, name := range []string{"fx-bad0", "fx-missing0"} {
		for _, col := range vswitchdColumns {
			if got[name][col] != golden[name][col] {
				t.Errorf("%s %s = %s, Open vSwitch wrote %s", name, col, got[name][col], golden[name][col])
			}
		}
	}
	// Open ports: the same columns are set, with the same shape.
	statKeys := func(s string) string { return regexp.MustCompile(`=\d+`).ReplaceAllString(s, "") }
	for name, gname := range map[string]string{"antrea-gw0": "antrea-gw0", "antrea-tun0": "antrea-tun0", veth.Host: "fx-p49"} {
		g, h := golden[gname], got[name]
		if statKeys(h["statistics"]) != statKeys(g["statistics"]) {
			t.Errorf("%s statistics %s, Open vSwitch has the keys of %s", name, h["statistics"], g["statistics"])
		}
		for _, col := range []string{"error", "link_resets"} {
			if h[col] != g[col] {
				t.Errorf("%s %s = %s, Open vSwitch wrote %s", name, col, h[col], g[col])
			}
		}
		if (h["mtu"] == "[]") != (g["mtu"] == "[]") || (h["ifindex"] == "[]") != (g["ifindex"] == "[]") {
			t.Errorf("%s mtu %s ifindex %s; Open vSwitch: %s %s", name, h["mtu"], h["ifindex"], g["mtu"], g["ifindex"])
		}
	}
	// Internal ports stay down until their user brings them up; the
	// device facts are the kernel's (the goldens come from this kernel).
	driver := regexp.MustCompile(`driver_name=\w+`)
	for name, gname := range map[string]string{"antrea-gw0": "antrea-gw0", veth.Host: "fx-p49"} {
		for _, col := range []string{"admin_state", "link_state", "mtu", "link_speed", "duplex"} {
			if name == veth.Host && (col == "admin_state" || col == "link_state") {
				continue // the golden's veth was up
			}
			if got[name][col] != golden[gname][col] {
				t.Errorf("%s %s = %s, Open vSwitch wrote %s", name, col, got[name][col], golden[gname][col])
			}
		}
		if g, w := driver.FindString(got[name]["status"]), driver.FindString(golden[gname]["status"]); g != w || g == "" {
			t.Errorf("%s status %s, Open vSwitch wrote %s", name, got[name]["status"], golden[gname]["status"])
		}
	}
	if got["antrea-gw0"]["mac_in_use"] != `"aa:bb:cc:00:00:02"` {
		t.Errorf("antrea-gw0 mac_in_use %s, want the requested MAC", got["antrea-gw0"]["mac_in_use"])
	}
	if got[veth.Host]["ifindex"] == "0" || got[veth.Host]["link_state"] != "up" {
		t.Errorf("veth ifindex %s link_state %s", got[veth.Host]["ifindex"], got[veth.Host]["link_state"])
	}

	// A busy ofport_request is no error: like OVS the port gets another
	// number. Fixing the bad type opens the port.
	r.vsctl("add-port", "br-int", "fx-int2", "--", "set", "interface", "fx-int2", "type=internal", "ofport_request=32769")
	if got := r.get("interface", "fx-int2", "ofport"); got == "32769" || got == "-1" {
		t.Errorf("fx-int2 asked for the busy 32769 and got %s, want another number", got)
	}
	r.vsctl("set", "interface", "fx-bad0", "type=internal")
	if got := r.get("interface", "fx-bad0", "ofport"); got == "-1" {
		t.Errorf("fx-bad0 still not open once internal")
	}
	if got := r.get("interface", "fx-bad0", "error"); got != "[]" {
		t.Errorf("fx-bad0 error %s once open", got)
	}
	// A bad option value lands in error; the rest of the bridge goes on.
	r.vsctl("set", "interface", "antrea-tun0", "options:key=five")
	if got := r.get("interface", "antrea-tun0", "error"); !strings.Contains(got, "options:key=five") || r.get("interface", "antrea-tun0", "ofport") != "-1" {
		t.Errorf("antrea-tun0 with a bad key: error %s", got)
	}
	if got := r.get("interface", "antrea-gw0", "ofport"); got != "32769" {
		t.Errorf("antrea-gw0 ofport %s after another port failed", got)
	}
	// other_config:datapath-id sets the datapath id; a ptcp: controller
	// target is a listener ovs-ofctl reaches.
	r.vsctl("set", "bridge", "br-int", "other_config:datapath-id=00000000000000a2")
	if got := r.get("bridge", "br-int", "datapath_id"); got != `"00000000000000a2"` {
		t.Errorf("datapath_id %s after other_config:datapath-id", got)
	}
	if got := r.get("interface", "antrea-gw0", "ofport"); got != "32769" {
		t.Errorf("antrea-gw0 ofport %s after the bridge was rebuilt", got)
	}
	r.vsctl("set-controller", "br-int", "ptcp:16653:127.0.0.1")
	ctl := r.ns.Command("ovs-ofctl", "-O", "OpenFlow15", "show", "tcp:127.0.0.1:16653")
	if out, err := r.tool(ctl[0], ctl[1:]...); err != nil || !strings.Contains(out, "dpid:00000000000000a2") {
		t.Errorf("ovs-ofctl show on the ptcp controller target: %v\n%s", err, out)
	}

	// mtu_request sets a system interface's MTU, as OVS does.
	r.vsctl("set", "interface", veth.Host, "mtu_request=1400")
	if got := r.get("interface", veth.Host, "mtu"); got != "1400" {
		t.Errorf("%s mtu %s after mtu_request=1400", veth.Host, got)
	}
	if out := r.ns.MustExec(t, "ip", "link", "show", veth.Host); !strings.Contains(out, "mtu 1400") {
		t.Errorf("mtu_request=1400 not set on the device:\n%s", out)
	}

	// The database is the only source of configuration: govs's own
	// commands that change it are refused.
	govs, _ := binaries(t)
	if out, err := exec.Command(govs, "add-br", "--rundir", r.dir, "br9").CombinedOutput(); err == nil || !strings.Contains(string(out), "the configuration comes from the OVSDB") {
		t.Errorf("govs add-br in database mode: %v %s", err, out)
	}

	// A second daemon on the same database does nothing while the first
	// holds the ovs_vswitchd lock, as with two ovs-vswitchd.
	dir2, log2 := t.TempDir(), filepath.Join(t.TempDir(), "second.log")
	second := r.startGovsAt(netnstest.NewNS(t), dir2, log2)
	defer func() { second.Process.Kill(); second.Wait() }()
	r.vsctl("set", "bridge", "br-int", "other_config:second=1")
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir2, "br-int.mgmt")); err == nil {
		t.Errorf("the second daemon created br-int without the lock")
	}
	if data, _ := os.ReadFile(log2); !strings.Contains(string(data), "holds the database lock") {
		t.Errorf("the second daemon does not say it waits for the lock:\n%s", data)
	}

	// del-port and del-br take the ports and the bridge away.
	r.vsctl("del-port", "br-int", "fx-int2")
	if out, err := r.ns.Exec("ip", "link", "show", "fx-int2"); err == nil {
		t.Errorf("fx-int2 still exists after del-port:\n%s", out)
	}
	r.vsctl("del-br", "br-int")
	if _, err := os.Stat(filepath.Join(r.dir, "br-int.mgmt")); err == nil {
		t.Errorf("br-int.mgmt still there after del-br")
	}
}

// TestOVSDBForwarding: two veths on a bridge configured only through
// ovs-vsctl, flows from ovs-ofctl on $OVS_RUNDIR/br0.mgmt: ping works;
// flow-restore-wait=true stops forwarding and removing the key brings it
// back; losing the database keeps forwarding and the session comes back;
// a restarted govs-vswitchd rebuilds the ports with the same ofports.
func TestOVSDBForwarding(t *testing.T) {
	r := newOVSDBRig(t)
	r.startGovs()
	pa, pb := netnstest.NewNS(t), netnstest.NewNS(t)
	va := netnstest.NewVeth(t, r.ns, pa, netnstest.VethOptions{PeerAddr: "10.91.0.1/24"})
	vb := netnstest.NewVeth(t, r.ns, pb, netnstest.VethOptions{PeerAddr: "10.91.0.2/24"})
	r.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev", "fail_mode=secure")
	r.vsctl("add-port", "br0", va.Host, "--", "add-port", "br0", vb.Host)
	a, b := r.get("interface", va.Host, "ofport"), r.get("interface", vb.Host, "ofport")
	if a == "-1" || b == "-1" || a == b {
		t.Fatalf("ofports %s %s", a, b)
	}
	ping := func() error {
		out, err := pa.Exec("ping", "-c", "2", "-i", "0.2", "-W", "1", "10.91.0.2")
		if err != nil {
			return fmt.Errorf("%v\n%s", err, out)
		}
		return nil
	}
	if err := ping(); err == nil {
		t.Fatalf("ping works on a secure bridge without flows")
	}
	if _, err := r.tool("ovs-ofctl", "add-flow", "br0", "in_port="+a+",actions=output:"+b); err != nil {
		t.Fatal(err)
	}
	if _, err := r.tool("ovs-ofctl", "add-flow", "br0", "in_port="+b+",actions=output:"+a); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err != nil {
		t.Fatalf("ping through br0: %v", err)
	}

	r.vsctl("set", "open_vswitch", ".", "other_config:flow-restore-wait=true")
	if err := ping(); err == nil {
		t.Errorf("ping works while flow-restore-wait=true")
	}
	r.vsctl("remove", "open_vswitch", ".", "other_config", "flow-restore-wait")
	if err := ping(); err != nil {
		t.Errorf("ping after flow-restore-wait was removed: %v", err)
	}

	// The database goes away: forwarding goes on; it comes back: the
	// session resumes and applies changes.
	r.stopServer()
	if err := ping(); err != nil {
		t.Errorf("ping without the database: %v", err)
	}
	r.startServer()
	r.vsctl("add-port", "br0", "gi0", "--", "set", "interface", "gi0", "type=internal")
	if got := r.get("interface", "gi0", "ofport"); got == "-1" || got == "[]" {
		t.Errorf("gi0 ofport %s after the database came back", got)
	}

	// A restart rebuilds everything with the same numbers; the flows are
	// the controller's to restore.
	gi := r.get("interface", "gi0", "ofport")
	r.stopGovs()
	r.startGovs()
	r.vsctl("set", "bridge", "br0", "other_config:x=1") // waits for cur_cfg
	for name, want := range map[string]string{va.Host: a, vb.Host: b, "gi0": gi, "br0": "65534"} {
		if got := r.get("interface", name, "ofport"); got != want {
			t.Errorf("%s ofport %s after restart, want %s", name, got, want)
		}
	}
	for _, f := range []string{"in_port=" + a + ",actions=output:" + b, "in_port=" + b + ",actions=output:" + a} {
		if _, err := r.tool("ovs-ofctl", "add-flow", "br0", f); err != nil {
			t.Fatal(err)
		}
	}
	if err := ping(); err != nil {
		t.Errorf("ping after restart: %v", err)
	}

	// Port tags as NORMAL applies them: access ports of different VLANs
	// do not reach each other, of the same VLAN they do.
	if _, err := r.tool("ovs-ofctl", "del-flows", "br0"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.tool("ovs-ofctl", "add-flow", "br0", "actions=NORMAL"); err != nil {
		t.Fatal(err)
	}
	r.vsctl("set", "port", va.Host, "tag=10", "--", "set", "port", vb.Host, "tag=20")
	if err := ping(); err == nil {
		t.Errorf("ping between access ports of VLANs 10 and 20 works")
	}
	r.vsctl("set", "port", vb.Host, "tag=10")
	if err := ping(); err != nil {
		t.Errorf("ping between access ports of VLAN 10: %v", err)
	}
}

// BenchmarkOVSDB1000Ports: 1,000 internal ports added in one ovs-vsctl
// transaction; the time until ovs-vsctl returns (cur_cfg reached), govs
// and Open vSwitch alternately on the same machine, reported as
// govs-s/op, ovs-s/op and their ratio; and the switch's own part, from
// the transaction's commit (next_cfg seen by a monitor) to cur_cfg, as
// govs-switch-s/op and ovs-switch-s/op: ovs-vsctl's own work, the same
// for both, is most of the first. Run by hand:
//
//	go test ./internal/e2e -run XXX -bench OVSDB1000Ports -benchtime 5x
//
// With GOVS_E2E_BASELINE_VSWITCHD=PATH (another build of govs-vswitchd)
// each round measures that one too, for an A/B in the same run. The
// medians over the rounds of the switch's own part are reported as well.
func BenchmarkOVSDB1000Ports(b *testing.B) {
	const n = 1000
	args := []string{"--timeout=300"}
	for i := 0; i < n; i++ {
		name := "bp" + strconv.Itoa(i)
		args = append(args, "--", "add-port", "br0", name, "--", "set", "interface", name, "type=internal")
	}
	// start nil: no switch, ovs-vsctl --no-wait, the cost of the
	// transaction alone.
	measure := func(start func(r *ovsdbRig)) (total, own time.Duration) {
		r := newOVSDBRig(b)
		defer r.stopGovs() // now, not at cleanup: the next run has the CPUs
		cmd := args
		if start == nil {
			cmd = append([]string{"--no-wait"}, args...)
		} else {
			start(r)
		}
		r.vsctl("--no-wait", "add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev")
		if start != nil {
			r.vsctl("set", "bridge", "br0", "other_config:ready=1") // the bridge is up
		}
		mon := r.monitorCfg()
		t0 := time.Now()
		r.vsctl(cmd...)
		total = time.Since(t0)
		if got := r.get("interface", "bp999", "ofport"); start != nil && (got == "-1" || got == "[]") {
			b.Fatalf("bp999 ofport %s", got)
		}
		if start != nil {
			own = mon()
		}
		return total, own
	}
	var govs, ovs, db, govsOwn, ovsOwn time.Duration
	var govsOwns, ovsOwns, baseOwns []time.Duration
	baseline := os.Getenv("GOVS_E2E_BASELINE_VSWITCHD")
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		g, gOwn := measure(func(r *ovsdbRig) { r.startGovs() })
		o, oOwn := measure(func(r *ovsdbRig) { r.startOVS() })
		n, _ := measure(nil)
		line := fmt.Sprintf("run %d: govs %v (own %v), Open vSwitch %v (own %v), the transaction alone %v; own ovs/govs %.2f",
			i, g, gOwn, o, oOwn, n, oOwn.Seconds()/gOwn.Seconds())
		if baseline != "" {
			_, bOwn := measure(func(r *ovsdbRig) { r.govs = r.startGovsWith(baseline) })
			line += fmt.Sprintf("; baseline own %v, baseline/govs %.2f", bOwn, bOwn.Seconds()/gOwn.Seconds())
			baseOwns = append(baseOwns, bOwn)
		}
		b.Log(line)
		govs += g
		ovs += o
		db += n
		govsOwn += gOwn
		ovsOwn += oOwn
		govsOwns, ovsOwns = append(govsOwns, gOwn), append(ovsOwns, oOwn)
	}
	b.ReportMetric(medianSeconds(govsOwns), "govs-switch-median-s")
	b.ReportMetric(medianSeconds(ovsOwns), "ovs-switch-median-s")
	if baseOwns != nil {
		b.ReportMetric(medianSeconds(baseOwns), "baseline-switch-median-s")
	}
	b.ReportMetric(govs.Seconds()/float64(b.N), "govs-s/op")
	b.ReportMetric(ovs.Seconds()/float64(b.N), "ovs-s/op")
	b.ReportMetric(db.Seconds()/float64(b.N), "no-wait-s/op")
	b.ReportMetric(ovs.Seconds()/govs.Seconds(), "ovs/govs")
	b.ReportMetric(govsOwn.Seconds()/float64(b.N), "govs-switch-s/op")
	b.ReportMetric(ovsOwn.Seconds()/float64(b.N), "ovs-switch-s/op")
	b.ReportMetric(ovsOwn.Seconds()/govsOwn.Seconds(), "ovs/govs-switch")
}

// lockedBuffer is a buffer a command writes while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// monitorCfg starts `ovsdb-client --timestamp monitor` of next_cfg and
// cur_cfg; the function it returns stops it and returns the time from
// the update that raised next_cfg to its last value to the one that
// brought cur_cfg to it: how long the switch took to apply a change
// (at the monitor's millisecond resolution).
func (r *ovsdbRig) monitorCfg() func() time.Duration {
	r.t.Helper()
	var out lockedBuffer
	cmd := exec.Command("ovsdb-client", "--timestamp", "monitor", "unix:"+r.dbSock(), "Open_vSwitch", "Open_vSwitch", "next_cfg,cur_cfg")
	cmd.Env = r.env
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("ovsdb-client monitor: %v", err)
	}
	// It prints the initial row once it is monitoring.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), "initial"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("ovsdb-client monitor printed no initial row")
		}
	}
	return func() time.Duration {
		time.Sleep(100 * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		type update struct {
			at        time.Time
			next, cur int
		}
		var ups []update
		var at time.Time
		for _, line := range strings.Split(out.String(), "\n") {
			if ts, err := time.Parse("2006-01-02 15:04:05.000", line); err == nil {
				at = ts
				continue
			}
			// "  new 5 5" after the row column, or "<uuid> initial 1 1".
			f := strings.Fields(line)
			if len(f) >= 3 && (f[len(f)-3] == "new" || f[len(f)-3] == "initial") {
				next, err1 := strconv.Atoi(f[len(f)-2])
				cur, err2 := strconv.Atoi(f[len(f)-1])
				if err1 == nil && err2 == nil {
					ups = append(ups, update{at, next, cur})
				}
			}
		}
		if len(ups) == 0 {
			r.t.Fatalf("no next_cfg/cur_cfg updates:\n%s", out.String())
		}
		target := ups[len(ups)-1].next
		var committed, applied time.Time
		for _, u := range ups {
			if u.next == target && committed.IsZero() {
				committed = u.at
			}
			if u.cur == target && applied.IsZero() {
				applied = u.at
			}
		}
		if committed.IsZero() || applied.IsZero() {
			r.t.Fatalf("cur_cfg never reached next_cfg %d:\n%s", target, out.String())
		}
		return applied.Sub(committed)
	}
}

// startOVS runs Open vSwitch's ovs-vswitchd (userspace datapath only) in
// the rig's namespace on the same database.
func (r *ovsdbRig) startOVS() {
	r.t.Helper()
	r.startOVSWith("--disable-system-route")
}

// startOVSWith is startOVS with the extra arguments instead of
// --disable-system-route.
func (r *ovsdbRig) startOVSWith(extra ...string) {
	r.t.Helper()
	args := r.ns.Command(append([]string{"ovs-vswitchd", "unix:" + r.dbSock(), "--pidfile=" + filepath.Join(r.dir, "ovs-vswitchd.pid"),
		"--unixctl=" + filepath.Join(r.dir, "ovs-vswitchd.ctl"), "--log-file=" + filepath.Join(r.dir, "ovs-vswitchd.log"),
		"-vconsole:off", "--no-chdir", "--disable-system"}, extra...)...)
	r.govs = exec.Command(args[0], args[1:]...)
	r.govs.Env = r.env
	if err := r.govs.Start(); err != nil {
		r.t.Fatalf("ovs-vswitchd: %v", err)
	}
	waitPath(r.t, filepath.Join(r.dir, "ovs-vswitchd.ctl"))
}

// TestOVSDBDetachAfterFirstConfig: like ovs-vswitchd, `govs-vswitchd
// --detach` returns only once the database's configuration is applied:
// right after it returns, ovs-vsctl --no-wait reads the ofports and
// cur_cfg of bridges and ports that were in the database before it
// started.
func TestOVSDBDetachAfterFirstConfig(t *testing.T) {
	r := newOVSDBRig(t)
	r.vsctl("--no-wait", "add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev",
		"--", "add-port", "br0", "dt0", "--", "set", "interface", "dt0", "type=internal", "ofport_request=7",
		"--", "add-port", "br0", "dt1", "--", "set", "interface", "dt1", "type=internal")
	_, vswitchd := binaries(t)
	pidfile := filepath.Join(r.dir, "ovs-vswitchd.pid")
	t.Cleanup(func() {
		if data, err := os.ReadFile(pidfile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
				if p, err := os.FindProcess(pid); err == nil {
					p.Signal(os.Interrupt)
				}
			}
		}
		// The pidfile goes when the daemon has exited.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(pidfile); os.IsNotExist(err) {
				return
			}
		}
	})
	args := r.ns.Command(vswitchd, "unix:"+r.dbSock(), "-vconsole:emer", "-vsyslog:err", "-vfile:info", "--mlockall",
		"--no-chdir", "--log-file="+r.govsLog, "--pidfile="+pidfile, "--detach", "--monitor")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = r.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("govs-vswitchd --detach: %v\n%s", err, out)
	}
	if got := r.get("interface", "dt0", "ofport"); got != "7" {
		t.Errorf("dt0 ofport %q right after --detach returned, want 7", got)
	}
	if got := r.get("interface", "dt1", "ofport"); got == "[]" || got == "-1" {
		t.Errorf("dt1 ofport %q right after --detach returned", got)
	}
	if got := r.get("interface", "br0", "ofport"); got != "65534" {
		t.Errorf("br0 ofport %q right after --detach returned, want 65534", got)
	}
	if cur, next := r.get("open_vswitch", ".", "cur_cfg"), r.get("open_vswitch", ".", "next_cfg"); cur != next {
		t.Errorf("cur_cfg %s, next_cfg %s right after --detach returned", cur, next)
	}
}

// medianSeconds is the median of ds in seconds (median: the upper middle).
func medianSeconds(ds []time.Duration) float64 {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = d.Seconds()
	}
	return median(xs)
}
