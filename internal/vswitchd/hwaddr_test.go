package vswitchd

import (
	"net"
	"testing"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
)

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// TestPickLocalMAC: bridge_pick_local_hw_addr's rules, case by case.
func TestPickLocalMAC(t *testing.T) {
	def := mac("3e:2d:1c:0b:72:61")
	nic := func(s string) macCandidate { return macCandidate{devMAC: mac(s)} }
	for _, c := range []struct {
		name     string
		hwaddr   string
		ports    []macCandidate
		want     string
		fromPort bool
	}{
		{"no ports: the default", "", nil, "3e:2d:1c:0b:72:61", false},
		{"hwaddr wins", "00:50:56:00:00:01", []macCandidate{nic("00:10:00:00:00:01")}, "00:50:56:00:00:01", false},
		{"locally administered hwaddr is fine", "02:00:00:00:00:09", nil, "02:00:00:00:00:09", false},
		{"multicast hwaddr ignored", "01:00:00:00:00:01", []macCandidate{nic("00:50:56:00:00:02")}, "00:50:56:00:00:02", true},
		{"zero hwaddr ignored", "00:00:00:00:00:00", nil, "3e:2d:1c:0b:72:61", false},
		{"unparsable hwaddr ignored", "nonsense", nil, "3e:2d:1c:0b:72:61", false},
		{"lowest global MAC", "", []macCandidate{nic("00:50:56:8f:4e:82"), nic("00:50:56:8f:1c:f6"), nic("00:60:00:00:00:00")}, "00:50:56:8f:1c:f6", true},
		{"local, multicast, zero, reserved skipped", "", []macCandidate{nic("02:00:00:00:00:01"), nic("01:00:5e:00:00:01"),
			nic("00:00:00:00:00:00"), nic("00:e0:2b:00:00:00"), nic("ee:ee:ee:ee:ee:ee")}, "3e:2d:1c:0b:72:61", false},
		{"LOCAL's device MAC does not count", "", []macCandidate{{local: true, devMAC: mac("00:00:00:00:00:01")}, nic("00:50:56:00:00:02")}, "00:50:56:00:00:02", true},
		{"Port.mac stands for the port, even LOCAL", "", []macCandidate{{local: true, portMAC: "00:00:00:00:00:03"}, nic("00:50:56:00:00:02")}, "00:00:00:00:00:03", true},
		{"Port.mac must pass the same tests", "", []macCandidate{{portMAC: "02:00:00:00:00:03", devMAC: mac("00:00:00:00:00:01")}}, "3e:2d:1c:0b:72:61", false},
		{"a port without a MAC (tunnel)", "", []macCandidate{{}}, "3e:2d:1c:0b:72:61", false},
	} {
		got, fromPort := pickLocalMAC(c.hwaddr, def, c.ports)
		if got.String() != c.want || fromPort != c.fromPort {
			t.Errorf("%s: got %s (from a port %v), want %s (%v)", c.name, got, fromPort, c.want, c.fromPort)
		}
	}
}

// TestDatapathIDFromString: dpid_from_string's forms.
func TestDatapathIDFromString(t *testing.T) {
	for s, want := range map[string]uint64{
		"0000000000000042": 0x42, "0x42": 0x42, "0X00000000000000ff": 0xff, "ABCDEF0123456789": 0xabcdef0123456789,
		"": 0, "42": 0, "0000000000000000": 0, "000000000000004g": 0, "0x": 0, "0x00000000000000001": 0,
	} {
		got, ok := dpidFromString(s)
		if got != want || ok != (want != 0) {
			t.Errorf("%q: %x %v, want %x", s, got, ok, want)
		}
	}
	if got := pickDatapathID("", mac("00:50:56:8f:1c:f6")); got != 0x0050568f1cf6 {
		t.Errorf("datapath id from the MAC: %016x", got)
	}
	if got := pickDatapathID("00000000000000aa", mac("00:50:56:8f:1c:f6")); got != 0xaa {
		t.Errorf("configured datapath id: %016x", got)
	}
}

// TestReconcileLocalMAC: a port with a global MAC joining and leaving the
// bridge changes the LOCAL port's MAC in place (the same port, the same
// number) and the datapath id with it; other_config:datapath-id holds it.
func TestReconcileLocalMAC(t *testing.T) {
	d := memDaemon(t, new(bool))
	opened := map[string]port.Port{}
	d.Openers["mem"] = func(c PortConfig) (port.Port, error) {
		m, _ := net.ParseMAC(c.MAC)
		p := datapath.NewMemPort(datapath.MemPortConfig{Name: c.Name, MAC: m})
		opened[c.Name] = p
		return p, nil
	}
	d.Openers["internal"] = func(c PortConfig) (port.Port, error) { return d.Openers["mem"](c) }
	def := defaultBridgeMAC("0b1c2d3e-4f50-6172-8394-a5b6c7d8e9fa")
	local := PortConfig{Name: "br0", Type: "internal", MAC: "02:aa:00:00:00:01"}
	nic := PortConfig{Name: "nic", Type: "mem", MAC: "00:50:56:8f:1c:f6"}
	pod := PortConfig{Name: "pod", Type: "mem", MAC: "02:00:00:00:00:05"}
	state := func(dpid string, ports ...PortConfig) State {
		return State{Bridges: []BridgeConfig{{Name: "br0", FailMode: "secure", DefaultMAC: def, DatapathID: dpid, Ports: ports}}}
	}
	check := func(step, wantMAC string, wantDPID uint64) {
		t.Helper()
		dp, _ := d.Bridge("br0")
		pi, ok := dp.Port(flowtable.PortLocal)
		if !ok || pi.MAC.String() != wantMAC || dp.DatapathID() != wantDPID {
			t.Errorf("%s: LOCAL MAC %s datapath id %016x, want %s %016x", step, pi.MAC, dp.DatapathID(), wantMAC, wantDPID)
		}
	}
	d.Reconcile(state("", local, pod))
	check("internal ports only", "3e:2d:1c:0b:72:61", 0x3e2d1c0b7261)
	lp := opened["br0"]
	d.Reconcile(state("", local, pod, nic))
	check("NIC added", "00:50:56:8f:1c:f6", 0x0050568f1cf6)
	d.Reconcile(state("", local, pod))
	check("NIC removed", "3e:2d:1c:0b:72:61", 0x3e2d1c0b7261)
	d.Reconcile(state("00000000000000aa", local, pod, nic))
	check("datapath-id set", "00:50:56:8f:1c:f6", 0xaa)
	if opened["br0"] != lp {
		t.Errorf("the LOCAL port was reopened")
	}

	// Interface.mac of an internal port changes in place too
	// (iface_set_mac); a multicast one is refused.
	gw := PortConfig{Name: "gw", Type: "internal", MAC: "02:00:00:00:00:0a"}
	d.Reconcile(state("", local, gw))
	gwp := opened["gw"]
	for _, c := range []struct{ set, want string }{{"02:00:00:00:00:0b", "02:00:00:00:00:0b"}, {"01:00:00:00:00:0c", "02:00:00:00:00:0b"}} {
		gw.MAC = c.set
		d.Reconcile(state("", local, gw))
		if opened["gw"] != gwp || gwp.HardwareAddr().String() != c.want {
			t.Errorf("Interface.mac %s: port reopened %v, MAC %s, want %s", c.set, opened["gw"] != gwp, gwp.HardwareAddr(), c.want)
		}
	}
}
