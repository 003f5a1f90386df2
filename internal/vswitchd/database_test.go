package vswitchd

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/ovn-org/libovsdb/ovsdb"
	"go.uber.org/zap"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/port"
)

func ptr[T any](v T) *T { return &v }

// TestDesiredState: the rows ovs-vsctl and Antrea write become the
// desired state: OVS defaults (standalone), controllers split into
// active and passive targets, ports with their columns, hwaddr and the
// default MAC for the bridge's pick, bad rows set aside with their error.
func TestDesiredState(t *testing.T) {
	sn := snapshot{
		ovs: &ovsRow{UUID: "o", Bridges: []string{"b1", "b2", "b3"}, OtherConfig: map[string]string{"flow-restore-wait": "true"}},
		bridges: map[string]*bridgeRow{
			"b1": {UUID: "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9fa", Name: "br-int", DatapathType: "netdev", Protocols: []string{"OpenFlow15", "OpenFlow10"},
				Ports: []string{"p1", "p2", "p3", "p4"}, Controller: []string{"c1", "c2"},
				OtherConfig: map[string]string{"hwaddr": "aa:bb:cc:dd:ee:ff"}},
			"b2": {Name: "br-phy", FailMode: ptr("secure"), OtherConfig: map[string]string{"datapath-id": "0000000000000042"}},
			"b3": {Name: "br-dpdk", DatapathType: "dpdk"},
		},
		ports: map[string]*portRow{
			"p1": {Name: "br-int", Interfaces: []string{"i1"}, MAC: ptr("00:11:22:33:44:55")},
			"p2": {Name: "antrea-gw0", Interfaces: []string{"i2"}, Tag: ptr(10)},
			"p3": {Name: "bond0", Interfaces: []string{"i3", "i4"}},
			"p4": {Name: "badmac", Interfaces: []string{"i5"}},
		},
		ifaces: map[string]*ifaceRow{
			"i1": {Name: "br-int", Type: "internal", MAC: ptr("00:00:00:00:00:07")},
			"i2": {Name: "antrea-gw0", Type: "internal", OFPortRequest: ptr(32769), MAC: ptr("aa:bb:cc:00:00:02"), OFPort: ptr(32769), MTURequest: ptr(1450)},
			"i3": {Name: "eth1"}, "i4": {Name: "eth2"},
			"i5": {Name: "badmac", MAC: ptr("zz")},
		},
		controllers: map[string]*controllerRow{"c1": {Target: "tcp:10.0.0.1:6653"}, "c2": {Target: "punix:/tmp/x.sock"}},
	}
	s := &dbSession{log: zap.NewNop()}
	st, invalid := s.desiredState(sn)
	if !st.FlowRestoreWait {
		t.Errorf("flow-restore-wait not read")
	}
	if len(st.Bridges) != 2 || st.Bridges[0].Name != "br-int" || st.Bridges[1].Name != "br-phy" {
		t.Fatalf("bridges %+v, want br-int and br-phy (dpdk has no datapath in govs)", st.Bridges)
	}
	bi, bp := st.Bridges[0], st.Bridges[1]
	if bi.FailMode != "standalone" || bp.FailMode != "secure" {
		t.Errorf("fail modes %q %q, want standalone (OVS's default) and secure", bi.FailMode, bp.FailMode)
	}
	if bi.DatapathID != "" || bp.DatapathID != "0000000000000042" {
		t.Errorf("datapath ids %q %q, want none (picked from the MAC) and 0000000000000042", bi.DatapathID, bp.DatapathID)
	}
	// The UUID's first words as OVS holds them (little-endian), marked
	// locally administered.
	if bi.HWAddr != "aa:bb:cc:dd:ee:ff" || bi.DefaultMAC.String() != "3e:2d:1c:0b:72:61" {
		t.Errorf("hwaddr %q default MAC %s", bi.HWAddr, bi.DefaultMAC)
	}
	if strings.Join(bi.Protocols, ",") != "OpenFlow10,OpenFlow15" || strings.Join(bi.Controllers, ",") != "tcp:10.0.0.1:6653" || strings.Join(bi.Listeners, ",") != "punix:/tmp/x.sock" {
		t.Errorf("protocols %v controllers %v listeners %v", bi.Protocols, bi.Controllers, bi.Listeners)
	}
	if len(bi.Ports) != 2 {
		t.Fatalf("ports %+v, want antrea-gw0 and br-int", bi.Ports)
	}
	gw, local := bi.Ports[0], bi.Ports[1]
	if gw.Name != "antrea-gw0" || gw.OFPortRequest != 32769 || gw.PrevOFPort != 32769 || gw.MAC != "aa:bb:cc:00:00:02" || gw.MTURequest != 1450 || gw.Tag != 10 {
		t.Errorf("antrea-gw0 %+v", gw)
	}
	// OVS ignores Interface.mac on the LOCAL port; Port.mac takes part in
	// the bridge's pick.
	if local.Name != "br-int" || local.MAC != "" || local.PortMAC != "00:11:22:33:44:55" || local.wantedOFPort("br-int") != 65534 {
		t.Errorf("LOCAL port %+v", local)
	}
	if err := invalid["eth1"]; err == nil || !strings.Contains(err.Error(), "govs has no bonds") {
		t.Errorf("bond member error %v", err)
	}
	bad := PortStatus{Err: invalid["badmac"]}
	if got := bad.ErrorText("badmac"); got != `could not configure network device badmac (port badmac: mac "zz": address zz: invalid MAC address)` {
		t.Errorf("bad mac error %q", got)
	}
}

// TestIfaceWriteBack: the Interface columns written for an open port, a
// failed one, and nothing when the row already says it all.
func TestIfaceWriteBack(t *testing.T) {
	tun := datapath.PortInfo{OFPort: 32768, Name: "antrea-tun0", Kind: "geneve", Stats: port.Stats{RxPackets: 3, RxBytes: 300}}
	row := ifaceWriteBack(&ifaceRow{Name: "antrea-tun0"}, PortStatus{OFPort: 32768}, tun, net.Interface{}, devInfo{}, false)
	want := map[string]any{"ofport": 32768, "ifindex": 0, "admin_state": "up", "link_state": "up", "link_resets": 0}
	for k, v := range want {
		if row[k] != v {
			t.Errorf("tunnel %s = %v, want %v", k, row[k], v)
		}
	}
	if _, ok := row["mtu"]; ok {
		t.Errorf("tunnel mtu written: OVS leaves it empty")
	}
	stats, _ := row["statistics"].(ovsdb.OvsMap)
	if len(stats.GoMap) != 4 || stats.GoMap["rx_packets"] != 3 {
		t.Errorf("tunnel statistics %v, want the 4 counters", stats.GoMap)
	}

	failed := ifaceWriteBack(&ifaceRow{Name: "fx-bad0"}, PortStatus{OFPort: -1, Err: openError("fx-bad0", errAFNoSupport)}, datapath.PortInfo{}, net.Interface{}, devInfo{}, false)
	if len(failed) != 2 || failed["ofport"] != -1 || failed["error"] != "could not open network device fx-bad0 (Address family not supported by protocol)" {
		t.Errorf("failed port row %v", failed)
	}
	// A port that failed after being open loses its state columns.
	was := &ifaceRow{Name: "p", OFPort: ptr(3), MTU: ptr(1500), MACInUse: ptr("aa:bb:cc:00:00:02"), Statistics: map[string]int{"rx_bytes": 1}}
	failed = ifaceWriteBack(was, PortStatus{OFPort: -1, Err: errors.New("gone")}, datapath.PortInfo{}, net.Interface{}, devInfo{}, false)
	if failed["error"] != "could not open network device p (gone)" || failed["mtu"] == nil || failed["mac_in_use"] == nil || failed["statistics"] == nil {
		t.Errorf("port failed after being open: %v", failed)
	}
	// Written already: nothing to write.
	same := &ifaceRow{Name: "antrea-tun0", OFPort: ptr(32768), Ifindex: ptr(0), AdminState: ptr("up"), LinkState: ptr("up"), LinkResets: ptr(0),
		Statistics: interfaceStatistics(tun)}
	if row := ifaceWriteBack(same, PortStatus{OFPort: 32768}, tun, net.Interface{}, devInfo{}, true); len(row) != 0 {
		t.Errorf("unchanged row rewritten: %v", row)
	}
}

// TestWrittenColumns: the write-only columns are not monitored, so the
// session remembers what it wrote: the first write-back of a row writes
// them all (an earlier session may have left anything), the next one
// nothing, and a change only the changed column.
func TestWrittenColumns(t *testing.T) {
	s := &dbSession{written: map[string]*ifaceRow{}}
	tun := datapath.PortInfo{OFPort: 32768, Name: "antrea-tun0", Kind: "geneve", Stats: port.Stats{RxPackets: 3}}
	ir := &ifaceRow{Name: "antrea-tun0", OFPort: ptr(32768)} // as the monitor shows it
	write := func(pi datapath.PortInfo, st PortStatus) ovsdb.Row {
		cur := s.withWritten("u1", ir)
		row := ifaceWriteBack(&cur, st, pi, net.Interface{}, devInfo{}, false)
		s.remember("u1", row)
		return row
	}
	first := write(tun, PortStatus{OFPort: 32768})
	for _, col := range []string{"error", "ifindex", "admin_state", "link_state", "link_resets", "statistics"} {
		if _, ok := first[col]; !ok {
			t.Errorf("first write-back lacks %s: %v", col, first)
		}
	}
	if _, ok := first["ofport"]; ok {
		t.Errorf("ofport rewritten though the monitor shows it: %v", first)
	}
	if again := write(tun, PortStatus{OFPort: 32768}); len(again) != 0 {
		t.Errorf("second write-back of an unchanged port: %v", again)
	}
	// The port fails: the error is set and the state columns cleared
	// (the session knows they were written).
	failed := write(datapath.PortInfo{}, PortStatus{OFPort: -1, Err: errors.New("gone")})
	if failed["error"] != "could not open network device antrea-tun0 (gone)" || failed["admin_state"] == nil || failed["statistics"] == nil {
		t.Errorf("failed port: %v", failed)
	}
	if w := s.written["u1"]; w.Error == nil || w.AdminState != nil || len(w.Statistics) != 0 {
		t.Errorf("remembered after the failure: %+v", w)
	}
}

// TestProtocolVersions: Bridge.protocols as a version bitmap.
func TestProtocolVersions(t *testing.T) {
	for _, c := range []struct {
		in      []string
		want    uint32
		wantErr string
	}{
		{nil, 0, ""},
		{[]string{"OpenFlow10", "OpenFlow15"}, 1<<1 | 1<<6, ""},
		{[]string{"OpenFlow13", "OpenFlow14"}, 1 << 4, ""},
		{[]string{"OpenFlow12"}, 0, "govs speaks OpenFlow10, OpenFlow13 and OpenFlow15"},
		{[]string{"OpenFlow99"}, 0, `"OpenFlow99" is not an OpenFlow version name`},
	} {
		got, err := protocolVersions(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%v: err %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: %#x %v, want %#x", c.in, got, err, c.want)
		}
	}
}

// TestApplyOtherConfig: the Open_vSwitch other_config keys govs maps.
func TestApplyOtherConfig(t *testing.T) {
	for _, c := range []struct {
		oc      map[string]string
		tso     bool
		pmd     datapath.PMDConfig
		initPMD datapath.PMDConfig
		flag    bool // --userspace-tso
	}{
		{map[string]string{"userspace-tso-enable": "true", "pmd-cpu-mask": "0x4"}, true, datapath.PMDConfig{Enabled: true, CPU: 2}, datapath.PMDConfig{}, false},
		{map[string]string{"pmd-cpu-mask": "3"}, false, datapath.PMDConfig{Enabled: true, CPU: 0}, datapath.PMDConfig{}, false},
		{map[string]string{"pmd-cpu-mask": "zz", "max-revalidator": "200"}, false, datapath.PMDConfig{CPU: -1}, datapath.PMDConfig{CPU: -1}, false},
		{map[string]string{"hw-offload": "false"}, false, datapath.PMDConfig{CPU: -1}, datapath.PMDConfig{CPU: -1}, false},
		// --userspace-tso is not undone by a database without the key.
		{map[string]string{"hw-offload": "false"}, true, datapath.PMDConfig{CPU: -1}, datapath.PMDConfig{CPU: -1}, true},
		{map[string]string{"userspace-tso-enable": "false"}, true, datapath.PMDConfig{CPU: -1}, datapath.PMDConfig{CPU: -1}, true},
	} {
		d := &Daemon{Log: zap.NewNop(), PMD: c.initPMD, UserspaceTSO: true, UserspaceTSOFlag: c.flag}
		d.applyOtherConfig(c.oc)
		if d.UserspaceTSO != c.tso || d.PMD != c.pmd {
			t.Errorf("%v: tso %v pmd %+v, want %v %+v", c.oc, d.UserspaceTSO, d.PMD, c.tso, c.pmd)
		}
	}
}

// FuzzPortFromRows: any Port and Interface row becomes a wanted port or
// an error worded for Interface.error, never a panic.
func FuzzPortFromRows(f *testing.F) {
	f.Add("antrea-gw0", "internal", "aa:bb:cc:00:00:02", 32769, 1450, 10, "access", "key", "flow")
	f.Add("x", "foo", "zz", 70000, -1, 5000, "dot1q-tunnel", "", "")
	f.Fuzz(func(t *testing.T, name, typ, mac string, ofreq, mtu, tag int, mode, ok, ov string) {
		pr := &portRow{Name: name, Tag: &tag, VLANMode: &mode, Trunks: []int{tag}}
		ir := &ifaceRow{Name: name, Type: typ, MAC: &mac, OFPortRequest: &ofreq, MTURequest: &mtu, Options: map[string]string{ok: ov}}
		pc, err := portFromRows(pr, ir)
		if err != nil {
			if got := (PortStatus{Err: err}).ErrorText(name); !strings.HasPrefix(got, "could not configure network device "+name+" (") {
				t.Fatalf("error %q", got)
			}
			return
		}
		if pc.Name != name || pc.Type != typ || pc.Tag != uint16(tag) || tag > 4095 || pc.MTURequest != mtu || int(pc.OFPortRequest) != ofreq {
			t.Fatalf("port %+v from %q", pc, name)
		}
	})
}
