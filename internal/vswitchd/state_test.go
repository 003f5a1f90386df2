package vswitchd

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/port"
)

// memDaemon is a daemon whose ports are in-memory ports (type "mem"), and
// whose "flaky" ports fail to open while broken says so: the reconciler
// without devices or root.
func memDaemon(t *testing.T, broken *bool) *Daemon {
	d := New(t.TempDir(), nil)
	d.OpenFlow = nil
	d.Openers["mem"] = func(c PortConfig) (port.Port, error) {
		return datapath.NewMemPort(datapath.MemPortConfig{Name: c.Name}), nil
	}
	// Each bridge's LOCAL port is internal: a memory port here too, so the
	// test makes no kernel device (a TAP "br0" in the host's namespace
	// would clash with any other run or device of that name).
	d.Openers["internal"] = d.Openers["mem"]
	d.Openers["flaky"] = func(c PortConfig) (port.Port, error) {
		if *broken {
			return nil, errors.New("device busy")
		}
		return datapath.NewMemPort(datapath.MemPortConfig{Name: c.Name}), nil
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// ofports lists the bridge's ports as name=ofport, by number.
func ofports(t *testing.T, d *Daemon, br string) string {
	t.Helper()
	dp, ok := d.Bridge(br)
	if !ok {
		return "(no bridge)"
	}
	var s []string
	for _, pi := range dp.Ports() {
		s = append(s, fmt.Sprintf("%s=%d", pi.Name, pi.OFPort))
	}
	return strings.Join(s, " ")
}

func mem(name string, request, prev uint32) PortConfig {
	return PortConfig{Name: name, Type: "mem", OFPortRequest: request, PrevOFPort: prev}
}

// TestReconcile: successive desired states and what the reconciler makes
// of them, as bridge_reconfigure would.
func TestReconcile(t *testing.T) {
	broken := true
	d := memDaemon(t, &broken)

	// Requests first, then previous numbers, then the lowest free ones;
	// a busy request gets another number; the bridge's namesake is LOCAL;
	// an unknown type fails alone.
	res := d.Reconcile(State{Bridges: []BridgeConfig{{Name: "br0", Ports: []PortConfig{
		mem("auto", 0, 0), mem("br0", 0, 0), mem("req", 2, 0), mem("prev", 0, 1), mem("busy", 2, 0),
		{Name: "bad", Type: "vxlan"}, {Name: "fl", Type: "flaky"},
	}}}})
	if got, want := ofports(t, d, "br0"), "prev=1 req=2 auto=3 busy=4 br0=65534"; got != want {
		t.Errorf("ofports %q, want %q", got, want)
	}
	if got := res.Ports["bad"].ErrorText("bad"); got != "could not open network device bad (Address family not supported by protocol)" || res.Ports["bad"].OFPort != -1 {
		t.Errorf("bad: %+v %q", res.Ports["bad"], got)
	}
	if got := res.Ports["fl"].ErrorText("fl"); got != "could not open network device fl (device busy)" {
		t.Errorf("flaky: %q", got)
	}
	if st := res.Ports["busy"]; st.Err != nil || st.OFPort != 4 {
		t.Errorf("busy request: %+v, want ofport 4 and no error (as OVS)", st)
	}

	// The same state again changes nothing but retries what failed.
	broken = false
	res = d.Reconcile(d.want)
	if st := res.Ports["fl"]; st.Err != nil || st.OFPort != 5 {
		t.Errorf("flaky port retried: %+v", st)
	}

	// A port that moves to another bridge, one that goes, one whose
	// options change (reopened, same number), a name on two bridges.
	res = d.Reconcile(State{Bridges: []BridgeConfig{
		{Name: "br0", Ports: []PortConfig{mem("br0", 0, 0), mem("req", 2, 0), {Name: "prev", Type: "mem", PrevOFPort: 1, Options: map[string]string{"x": "1"}}}},
		{Name: "br1", Ports: []PortConfig{mem("auto", 0, 3), mem("req", 0, 0)}},
	}})
	if got, want := ofports(t, d, "br0"), "prev=1 req=2 br0=65534"; got != want {
		t.Errorf("br0 %q, want %q", got, want)
	}
	if got, want := ofports(t, d, "br1"), "auto=3"; got != want {
		t.Errorf("br1 %q, want %q", got, want)
	}
	if err := res.Ports["req"].Err; err == nil || !strings.Contains(err.Error(), "port req is already on bridge br0") {
		t.Errorf("req on two bridges: %v", err)
	}

	// VLAN settings reach NORMAL without reopening the port.
	dp, _ := d.Bridge("br1")
	before := dp.Pipeline().Generation.Load()
	d.Reconcile(State{Bridges: []BridgeConfig{
		{Name: "br0", Ports: []PortConfig{mem("br0", 0, 0), mem("req", 2, 0)}},
		{Name: "br1", Ports: []PortConfig{{Name: "auto", Type: "mem", PrevOFPort: 3, Tag: 10}}},
	}})
	if got, want := ofports(t, d, "br1"), "auto=3"; got != want {
		t.Errorf("br1 %q after tagging, want %q", got, want)
	}
	if dp.Pipeline().Generation.Load() == before {
		t.Errorf("tagging a port did not reach the pipeline")
	}

	// A new datapath id rebuilds the bridge; an empty state removes all.
	d.Reconcile(State{Bridges: []BridgeConfig{{Name: "br0", DatapathID: "00000000000000aa", Ports: []PortConfig{mem("req", 2, 0)}}}})
	if dp, ok := d.Bridge("br0"); !ok || dp.DatapathID() != 0xaa {
		t.Errorf("br0 not rebuilt with datapath id 0xaa")
	}
	if got := ofports(t, d, "br1"); got != "(no bridge)" {
		t.Errorf("br1 still there: %s", got)
	}
	d.Reconcile(State{})
	if names := d.bridgeNames(); len(names) != 0 {
		t.Errorf("bridges left: %v", names)
	}
}

// TestFlowRestoreWaitState: flow-restore-wait reaches every bridge, new
// ones included, and goes with the key.
func TestFlowRestoreWaitState(t *testing.T) {
	d := memDaemon(t, new(bool))
	d.Reconcile(State{FlowRestoreWait: true, Bridges: []BridgeConfig{{Name: "br0"}, {Name: "br1"}}})
	for _, n := range []string{"br0", "br1"} {
		if dp, _ := d.Bridge(n); !dp.FlowRestoreWait() {
			t.Errorf("%s not holding", n)
		}
	}
	d.Reconcile(State{Bridges: []BridgeConfig{{Name: "br0"}}})
	if dp, _ := d.Bridge("br0"); dp.FlowRestoreWait() {
		t.Errorf("br0 still holding after the key went")
	}
}
