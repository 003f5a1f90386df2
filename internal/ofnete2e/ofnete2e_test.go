package ofnete2e

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/libOpenflow/protocol"
	"antrea.io/ofnet/ofctrl"
	"github.com/govs-project/govs/internal/ovstest"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// govsVswitchd builds govs-vswitchd from this repository (in govs's own
// module, so its dependencies are govs's, not this module's).
func govsVswitchd(t testing.TB) string {
	t.Helper()
	// A binary of one's own (e.g. built with a profiler) instead.
	if bin := os.Getenv("OFNETE2E_VSWITCHD"); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "govs-ofnete2e-bin-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binDir+"/", "./cmd/govs-vswitchd")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build govs-vswitchd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "govs-vswitchd")
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// target is one switch under test: Open vSwitch or govs, started alike.
type target struct {
	name string
	ovs  *ovstest.OVS
}

func startTargets(t *testing.T) []target {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root (network namespaces for the private switches); CI runs as root")
	}
	opts := ovstest.Options{
		// As Antrea creates br-int.
		Protocols: []string{"OpenFlow10", "OpenFlow15"},
		FailMode:  "secure",
		Ports:     []ovstest.Port{{Name: "p1", Type: "internal", OFPort: 1}, {Name: "p2", Type: "internal", OFPort: 2}},
	}
	ovs := ovstest.Start(t, opts)
	opts.Vswitchd = govsVswitchd(t)
	govs := ovstest.Start(t, opts)
	tgs := []target{{"ovs", ovs}, {"govs", govs}}
	for _, tg := range tgs {
		// ofnet keeps switches in a process-wide table by datapath id and
		// hands a known one back to the agent that had it, while govs makes
		// the id from the bridge name: a random id per switch keeps the
		// tests' agents apart.
		dpid := fmt.Sprintf("other_config:datapath-id=%016x", rand.Uint64()>>16)
		if _, err := tg.ovs.Vsctl("set", "bridge", "br-int", dpid); err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
		for _, p := range opts.Ports {
			if out, err := exec.Command("ip", "-n", tg.ovs.Netns(), "link", "set", p.Name, "up").CombinedOutput(); err != nil {
				t.Fatalf("%s: set %s up: %v: %s", tg.name, p.Name, err, out)
			}
		}
	}
	return tgs
}

func (tg target) connect(t *testing.T) *Agent {
	t.Helper()
	a, err := Connect(tg.ovs.MgmtSocket(), Tables, 20*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", tg.name, err)
	}
	t.Cleanup(a.Close)
	return a
}

func (tg target) ofctl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := tg.ovs.Ofctl(append([]string{"-O", "OpenFlow15"}, args...)...)
	if err != nil {
		t.Fatalf("%s: ovs-ofctl %v: %v", tg.name, args, err)
	}
	return out
}

// Statistics that differ between runs by time only.
var timeFields = regexp.MustCompile(` ?(duration|idle_age|hard_age)[=:][0-9.]+s?,?`)

// ofnet picks a random controller id per connection.
var controllerID = regexp.MustCompile(`controller\(id=\d+`)

// dump is the sorted, time-free text of an ovs-ofctl dump.
func (tg target) dump(t *testing.T, args ...string) string {
	t.Helper()
	out := timeFields.ReplaceAllString(tg.ofctl(t, args...), "")
	out = controllerID.ReplaceAllString(out, "controller(id=ID")
	return strings.Join(ovstest.SortedLines(out), "\n")
}

var tableName = regexp.MustCompile(`(?m)^\s*table (\d+) \("([^"]*)"\)`)

// tableNames lists the named tables of dump-table-features.
func (tg target) tableNames(t *testing.T) string {
	var b strings.Builder
	for _, m := range tableName.FindAllStringSubmatch(tg.ofctl(t, "dump-table-features"), -1) {
		fmt.Fprintf(&b, "%s=%s ", m[1], m[2])
	}
	return b.String()
}

// describe is the comparable text of a packet-in: where and why it came,
// its metadata (match) fields, userdata, whether it carries a continuation,
// and the packet.
func describe(p *ofctrl.PacketIn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table=%d reason=%d cookie=%#x total_len=%d userdata=%x continuation=%v",
		p.TableId, p.Reason, p.Cookie, p.TotalLen, p.UserData, len(p.Continuation) > 0)
	for _, f := range p.Match.Fields {
		v, _ := f.Value.MarshalBinary()
		fmt.Fprintf(&b, " field(%#x,%d)=%x", f.Class, f.Field, v)
		if f.HasMask && f.Mask != nil {
			m, _ := f.Mask.MarshalBinary()
			fmt.Fprintf(&b, "/%x", m)
		}
	}
	fmt.Fprintf(&b, " packet=%x", sha256.Sum256(PacketBytes(p)))
	return b.String()
}

// packetOut is Antrea's packet-out: from port 1 into table 0 (ofnet adds
// output:TABLE), with reg0 loaded as the agent does.
func packetOut(dst string, proto uint8, dport uint16) *ofctrl.PacketOut {
	ip := &protocol.IPv4{Version: 4, IHL: 5, TTL: 64, Id: 7,
		NWSrc: podIP(0), NWDst: net.ParseIP(dst).To4()}
	po := &ofctrl.PacketOut{InPort: CtrlPort, SrcMAC: podMAC(0), DstMAC: gwMAC, IPHeader: ip}
	switch proto {
	case ofctrl.IP_PROTO_TCP:
		po.TCPHeader = &protocol.TCP{PortSrc: 40000, PortDst: dport, SeqNum: 1, HdrLen: 5, Code: 0x2, WinSize: 64240}
	case ofctrl.IP_PROTO_UDP:
		po.UDPHeader = &protocol.UDP{PortSrc: dport, PortDst: 40000, Length: 8}
	}
	ip.Length = 20
	if po.TCPHeader != nil {
		ip.Length += 20
	} else {
		ip.Length += 8
	}
	po.Actions = []ofctrl.OFAction{loadReg(7, 0x77, 0, 31)}
	return po
}

// session runs Antrea's agent sequence on one switch and returns each
// step's outcome as text (named so a difference says where it is).
func session(t *testing.T, tg target) [][2]string {
	var steps [][2]string
	add := func(name, text string) { steps = append(steps, [2]string{name, text}) }

	a := tg.connect(t)
	sw := a.Switch()
	add("table features", a.FeaturesSummary())
	add("table names", tg.tableNames(t))

	// Startup cleanup, then the packet-in meters (direct METER_MOD).
	if err := a.DeleteAllGroups(); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteAllMeters(); err != nil {
		t.Fatal(err)
	}
	b := NewBuilder(sw)
	for _, m := range b.Meters(256, 257) {
		if err := m.Install(); err != nil {
			t.Fatalf("%s: meter %d: %v", tg.name, m.ID, err)
		}
	}
	if err := a.Barrier(); err != nil {
		t.Fatal(err)
	}
	add("dump-meters", tg.dump(t, "dump-meters"))

	// Groups before the flows that use them, in one ORDERED bundle.
	groups, flows := b.Services(2)
	var msgs []ofctrl.OpenFlowModMessage
	for _, g := range groups {
		msgs = append(msgs, g.GetBundleMessage(openflow15.OFPGC_ADD))
	}
	fm, err := FlowMessages(append(flows, b.Fixed()...), openflow15.FC_ADD)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Bundle(ofctrl.Ordered, append(msgs, fm...)); err != nil {
		t.Fatalf("%s: ordered bundle: %v", tg.name, err)
	}
	add("ordered bundle: dump-groups", tg.dump(t, "dump-groups"))
	add("ordered bundle: dump-flows", tg.dump(t, "dump-flows"))

	// Pods in an ATOMIC bundle (Antrea's AddFlowsInBundle): add, modify
	// strict, delete strict.
	pods := b.Pods(3)
	fm, err = FlowMessages(pods, openflow15.FC_ADD)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Bundle(ofctrl.Atomic, fm); err != nil {
		t.Fatalf("%s: atomic bundle: %v", tg.name, err)
	}
	pods[0].ResetApplyActions([]ofctrl.OFAction{loadReg(0, 4, 0, 3)})
	mod, err := FlowMessages(pods[:1], openflow15.FC_MODIFY_STRICT)
	if err != nil {
		t.Fatal(err)
	}
	del, err := FlowMessages(pods[1:2], openflow15.FC_DELETE_STRICT)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Bundle(ofctrl.Atomic, append(mod, del...)); err != nil {
		t.Fatalf("%s: atomic bundle (modify, delete): %v", tg.name, err)
	}
	add("atomic bundles: dump-flows", tg.dump(t, "dump-flows"))

	// A bundle with a flow the switch refuses (a group that does not
	// exist) rolls back as a whole: nothing of it is installed.
	bad := b.flow(13, 100, CookieService|0xbad)
	bad.ApplyAction(&ofctrl.Group{ID: 999})
	ok := b.flow(13, 100, CookieService|0xb0)
	ok.Drop()
	fm, err = FlowMessages([]*ofctrl.Flow{ok, bad}, openflow15.FC_ADD)
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Bundle(ofctrl.Atomic, fm)
	add("failed bundle", fmt.Sprintf("error=%v", err != nil))
	add("failed bundle: dump-flows", tg.dump(t, "dump-flows", "table=13"))

	// Controller flows by direct FLOW_MOD, then read back by cookie.
	for _, f := range b.Controller(sw.GetControllerID()) {
		if err := f.Send(openflow15.FC_ADD); err != nil {
			t.Fatal(err)
		}
	}
	mask := CookieCategory
	stats, err := sw.DumpFlowStats(CookieCtrl, &mask, nil, nil)
	if err != nil {
		t.Fatalf("%s: flow stats by cookie: %v", tg.name, err)
	}
	var cookies []string
	for _, s := range stats {
		cookies = append(cookies, fmt.Sprintf("table=%d,cookie=%#x,priority=%d", s.TableId, s.Cookie, s.Priority))
	}
	add("flow stats by cookie", strings.Join(cookies, " "))

	// Packet-out into table 0 -> packet-in with userdata, through meter 256.
	if err := sw.Send(packetOut(CtrlIP, ofctrl.IP_PROTO_TCP, 8080).GetMessage()); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPacketIn(10 * time.Second)
	if err != nil {
		t.Fatalf("%s: packet-out to %s: %v", tg.name, CtrlIP, err)
	}
	add("packet-in", describe(p))
	// A packet-out straight to port 2 (Antrea's SendTraceflowPacket with an output).
	po := packetOut("10.10.0.2", ofctrl.IP_PROTO_TCP, 80)
	po.OutPort = 2
	if err := sw.Send(po.GetMessage()); err != nil {
		t.Fatal(err)
	}
	if err := a.Barrier(); err != nil {
		t.Fatal(err)
	}
	add("after packets: dump-flows table 0", tg.dump(t, "dump-flows", "table=0"))
	add("after packets: meter-stats", tg.dump(t, "meter-stats"))
	add("after packets: port 2 tx", portTx(t, tg, 2))

	// Delete by cookie and mask over all tables (Antrea's DeleteFlowsByCookie).
	if err := a.DeleteFlowsByCookie(CookiePolicy, CookieCategory); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteFlowsByCookie(CookiePod|1, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	if err := a.Barrier(); err != nil {
		t.Fatal(err)
	}
	add("delete by cookie: dump-flows", tg.dump(t, "dump-flows"))

	// Group and meter delete-all: their flows go with them.
	if err := a.DeleteAllGroups(); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteAllMeters(); err != nil {
		t.Fatal(err)
	}
	if err := a.Barrier(); err != nil {
		t.Fatal(err)
	}
	add("delete all: dump-groups", tg.dump(t, "dump-groups"))
	add("delete all: dump-meters", tg.dump(t, "dump-meters"))
	add("delete all: dump-flows", tg.dump(t, "dump-flows"))
	return steps
}

// cpu is the CPU time (user+system) the switch's process has used: on a
// loaded machine a steadier measure of its work than the wall clock.
func (tg target) cpu(t *testing.T) time.Duration {
	stat, err := os.ReadFile("/proc/" + tg.pid(t) + "/stat")
	if err != nil {
		t.Fatalf("%s: %v", tg.name, err)
	}
	// The fields after the command name (in parentheses, may hold spaces):
	// utime and stime are the 12th and 13th, in clock ticks (100 Hz).
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// pid is the switch daemon's process id.
func (tg target) pid(t *testing.T) string {
	pid, err := os.ReadFile(filepath.Join(tg.ovs.Rundir(), "ovs-vswitchd.pid"))
	if err != nil {
		t.Fatalf("%s: %v", tg.name, err)
	}
	return strings.TrimSpace(string(pid))
}

// contextSwitches is how often the switch's threads gave up or lost
// the CPU so far (voluntary and involuntary, all threads): a switch that
// wakes up once per message shows here.
func (tg target) contextSwitches(t *testing.T) int64 {
	dir := "/proc/" + tg.pid(t) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%s: %v", tg.name, err)
	}
	var n int64
	for _, task := range tasks {
		status, err := os.ReadFile(filepath.Join(dir, task.Name(), "status"))
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(status), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				var c int64
				fmt.Sscan(strings.TrimSpace(v), &c)
				n += c
			}
		}
	}
	return n
}

var txPackets = regexp.MustCompile(`tx pkts=\d+, bytes=\d+, drop=\d+`)

// portTx is what the switch sent to a port (what the port's kernel side
// sends, e.g. IPv6 router solicitations, comes and goes by timing).
func portTx(t *testing.T, tg target, port int) string {
	out := tg.ofctl(t, "dump-ports", fmt.Sprint(port))
	m := txPackets.FindString(out)
	if m == "" {
		t.Fatalf("%s: dump-ports: no tx pkts in %q", tg.name, out)
	}
	return m
}

// TestAgentSession runs Antrea's agent sequence through ofnet against Open
// vSwitch and govs and requires the same outcome at every step.
func TestAgentSession(t *testing.T) {
	tgs := startTargets(t)
	want := session(t, tgs[0])
	got := session(t, tgs[1])
	if len(want) != len(got) {
		t.Fatalf("steps: ovs %d, govs %d", len(want), len(got))
	}
	for i := range want {
		if want[i][1] != got[i][1] {
			t.Errorf("step %q differs:\novs:\n%s\ngovs:\n%s", want[i][0], want[i][1], got[i][1])
		} else {
			t.Logf("step %q: same", want[i][0])
		}
	}
	// Outcomes that must hold, not only be equal.
	for _, s := range want {
		switch s[0] {
		case "table features":
			if !strings.Contains(s[1], "get: 20 replies") {
				t.Errorf("ovs table features: %s", s[1])
			}
		case "packet-in":
			if !strings.Contains(s[1], "userdata=0102") || !strings.Contains(s[1], "reason=1") {
				t.Errorf("ovs packet-in: %s", s[1])
			}
		case "after packets: port 2 tx":
			if s[1] != "tx pkts=1, bytes=54, drop=0" {
				t.Errorf("ovs port 2: %s", s[1])
			}
		}
	}
}

// resume pauses a packet in controller(pause), resumes it with NXT_RESUME
// and returns both packet-ins.
func resume(t *testing.T, tg target) [2]string {
	a := tg.connect(t)
	sw := a.Switch()
	b := NewBuilder(sw)
	for _, f := range append(b.Fixed(), b.Controller(sw.GetControllerID())...) {
		if err := f.Send(openflow15.FC_ADD); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Barrier(); err != nil {
		t.Fatal(err)
	}
	if err := sw.Send(packetOut(PauseIP, ofctrl.IP_PROTO_UDP, 53).GetMessage()); err != nil {
		t.Fatal(err)
	}
	paused, err := a.WaitPacketIn(10 * time.Second)
	if err != nil {
		t.Fatalf("%s: paused packet-in: %v", tg.name, err)
	}
	if len(paused.Continuation) == 0 {
		t.Fatalf("%s: paused packet-in without a continuation: %s", tg.name, describe(paused))
	}
	if err := sw.ResumePacket(paused); err != nil {
		t.Fatal(err)
	}
	resumed, err := a.WaitPacketIn(10 * time.Second)
	if err != nil {
		t.Fatalf("%s: no packet-in after NXT_RESUME: %v", tg.name, err)
	}
	return [2]string{describe(paused), describe(resumed)}
}

// regValue is register n in a packet-in's metadata (OXM_OF_PKT_REG pairs).
func regValue(p string, n int) string {
	re := regexp.MustCompile(fmt.Sprintf(`field\(0x8001,%d\)=([0-9a-f]{16})`, n/2))
	m := re.FindStringSubmatch(p)
	if m == nil {
		return ""
	}
	if n%2 == 0 {
		return m[1][:8]
	}
	return m[1][8:]
}

// TestAgentResume: Antrea's FQDN interception. The DNS reply pauses in
// controller(pause) with reg2 set; NXT_RESUME continues it after the paused
// action (reg3 set, goto_table Output) to a second packet-in with both
// registers.
func TestAgentResume(t *testing.T) {
	tgs := startTargets(t)
	want := resume(t, tgs[0])
	if r2, r3 := regValue(want[1], 2), regValue(want[1], 3); r2 != "00000055" || r3 != "00000066" {
		t.Errorf("ovs resumed packet-in: reg2=%s reg3=%s: %s", r2, r3, want[1])
	}
	got := resume(t, tgs[1])
	for i, name := range []string{"paused", "resumed"} {
		if want[i] != got[i] {
			t.Errorf("%s packet-in differs:\novs:  %s\ngovs: %s", name, want[i], got[i])
		}
	}
}

var bundleFlows = flag.Int("bundle.flows", 20000, "flows in the bundle of TestBundleSpeed")
var bundleReps = flag.Int("bundle.reps", 1, "alternating repetitions of TestBundleSpeed per switch")

// TestBundleSpeed commits a node's pipeline (Services' select groups, then
// 20,000 flows) in one ORDERED bundle from ofnet, on Open vSwitch and govs
// alternately, and prints the times. Both must end with every flow installed.
func TestBundleSpeed(t *testing.T) {
	tgs := startTargets(t)
	agents := []*Agent{tgs[0].connect(t), tgs[1].connect(t)}
	for _, tg := range tgs {
		c0 := tg.cpu(t)
		time.Sleep(2 * time.Second)
		t.Logf("%-4s idle: %v CPU in 2s", tg.name, tg.cpu(t)-c0)
	}
	total := map[string][]BundleStats{}
	for rep := 0; rep < *bundleReps; rep++ {
		for i, tg := range tgs {
			a := agents[i]
			b := NewBuilder(a.Switch())
			groups, flows := b.Node(*bundleFlows)
			var msgs []ofctrl.OpenFlowModMessage
			for _, g := range groups {
				msgs = append(msgs, g.GetBundleMessage(openflow15.OFPGC_ADD))
			}
			fm, err := FlowMessages(flows, openflow15.FC_ADD)
			if err != nil {
				t.Fatal(err)
			}
			cpu0, cs0 := tg.cpu(t), tg.contextSwitches(t)
			st, err := a.Bundle(ofctrl.Ordered, append(msgs, fm...))
			if err != nil {
				t.Fatalf("%s: %v", tg.name, err)
			}
			st.CPU = tg.cpu(t) - cpu0
			cs := tg.contextSwitches(t) - cs0
			n := strings.Count(tg.ofctl(t, "dump-aggregate"), "flow_count="+fmt.Sprint(len(flows)))
			if n != 1 {
				t.Fatalf("%s: after the bundle: %s, want flow_count=%d", tg.name, tg.ofctl(t, "dump-aggregate"), len(flows))
			}
			t.Logf("rep %d %-4s: %d groups + %d flows: send %v, commit %v, total %v, switch cpu %v (%d context switches), client cpu %v", rep, tg.name, len(groups), len(flows),
				st.Send.Round(time.Millisecond), st.Commit.Round(time.Millisecond), (st.Send + st.Commit).Round(time.Millisecond), st.CPU, cs, st.ClientCPU.Round(time.Millisecond))
			total[tg.name] = append(total[tg.name], st)
			// Clean up for the next round as the agent would on restart.
			if err := a.DeleteFlowsByCookie(0, 0); err != nil {
				t.Fatal(err)
			}
			if err := a.DeleteAllGroups(); err != nil {
				t.Fatal(err)
			}
			if err := a.Barrier(); err != nil {
				t.Fatal(err)
			}
		}
	}
	sum := func(name string, f func(BundleStats) time.Duration) time.Duration {
		var d time.Duration
		for _, s := range total[name] {
			d += f(s)
		}
		return d
	}
	for _, m := range []struct {
		name string
		f    func(BundleStats) time.Duration
	}{
		{"commit", func(s BundleStats) time.Duration { return s.Commit }},
		{"send+commit", func(s BundleStats) time.Duration { return s.Send + s.Commit }},
		{"switch cpu", func(s BundleStats) time.Duration { return s.CPU }},
		{"client cpu", func(s BundleStats) time.Duration { return s.ClientCPU }},
	} {
		g, o := sum("govs", m.f), sum("ovs", m.f)
		t.Logf("%s: govs/ovs = %.2f (%v / %v)", m.name, float64(g)/float64(o), g, o)
	}
}

// portStatuses adds a veth port, takes its peer down and up, brings it
// down and up with a port-mod and deletes it, and returns the port-status
// messages the agent's PortStatusRcvd got, as ofnet decoded them.
func portStatuses(t *testing.T, tg target) []string {
	a := tg.connect(t)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", tg.ovs.Netns()}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%s: ip %v: %v: %s", tg.name, args, err, out)
		}
	}
	ip("link", "add", "ofv", "type", "veth", "peer", "name", "ofv-p")
	ip("link", "set", "ofv", "up")
	ip("link", "set", "ofv-p", "up")
	var got []string
	// collect takes what arrives until nothing has for 700 ms (both
	// switches react to the kernel's link notifications).
	collect := func(step string) {
		got = append(got, "-- "+step)
		for {
			select {
			case s := <-a.portState:
				d := s.Desc
				line := fmt.Sprintf("reason=%d port=%d name=%s config=%#x state=%#x", s.Reason, d.PortNo, strings.TrimRight(string(d.Name), "\x00"), d.Config, d.State)
				for _, p := range d.Properties {
					if e, ok := p.(*openflow15.PortDescPropEthernet); ok {
						line += fmt.Sprintf(" curr=%#x speed=%d", e.Curr, e.CurrSpeed)
					}
				}
				got = append(got, line)
			case <-time.After(700 * time.Millisecond):
				return
			}
		}
	}
	collect("connected")
	if err := tg.ovs.AddPort(ovstest.Port{Name: "ofv", OFPort: 7}); err != nil {
		t.Fatal(err)
	}
	collect("added")
	ip("link", "set", "ofv-p", "down")
	collect("peer down")
	ip("link", "set", "ofv-p", "up")
	collect("peer up")
	tg.ofctl(t, "mod-port", "ofv", "down")
	collect("mod-port down")
	tg.ofctl(t, "mod-port", "ofv", "up")
	collect("mod-port up")
	if _, err := tg.ovs.Vsctl("del-port", "ofv"); err != nil {
		t.Fatal(err)
	}
	collect("deleted")
	return got
}

// TestAgentPortStatus: Antrea's agent learns of port changes (an uplink
// or a Pod's interface losing its link) through ofnet's PortStatusRcvd.
// The same changes on both switches give it the same OpenFlow 1.5
// OFPT_PORT_STATUS messages, as ofnet decodes them (reason, port, name,
// config, state, the Ethernet property's features and speed).
func TestAgentPortStatus(t *testing.T) {
	tgs := startTargets(t)
	want := portStatuses(t, tgs[0])
	got := portStatuses(t, tgs[1])
	if w, g := strings.Join(want, "\n"), strings.Join(got, "\n"); w != g {
		t.Errorf("port status differs:\novs:\n%s\ngovs:\n%s", w, g)
	}
	if !slices.Contains(want, "reason=2 port=7 name=ofv config=0x0 state=0x1 curr=0x840 speed=10000000") {
		t.Errorf("ovs: no LINK_DOWN MODIFY for the veth:\n%s", strings.Join(want, "\n"))
	}
}
