package vswitchd

import (
	"reflect"
	"testing"

	"github.com/govs-project/govs/flowtable"
)

// TestLimits: a new daemon has OVS's conntrack maximum (3,000,000, as
// `ovs-appctl dpctl/ct-get-maxconns` prints) and the flowtable defaults on
// every bridge; SetLimits changes the tracker and existing bridges.
func TestLimits(t *testing.T) {
	d := New(t.TempDir(), nil)
	d.OpenFlow = nil
	t.Cleanup(func() { d.Close() })
	if got := d.tracker.GlobalLimit(); got != 3000000 {
		t.Errorf("conntrack limit %d, want OVS's 3000000", got)
	}
	if err := d.AddBridge(BridgeConfig{Name: "br-lim"}); err != nil {
		t.Fatal(err)
	}
	p := d.bridges["br-lim"].dp.Pipeline()
	if !reflect.DeepEqual(p.Limits, flowtable.DefaultLimits) {
		t.Errorf("bridge limits %+v, want %+v", p.Limits, flowtable.DefaultLimits)
	}
	l := Limits{Flows: flowtable.Limits{MaxFlows: 10}, ConntrackMax: 50, ConntrackZoneDefault: 7, ConntrackZones: map[uint16]uint32{3: 9}}
	d.SetLimits(l)
	if p.Limits.MaxFlows != 10 || d.tracker.GlobalLimit() != 50 || d.tracker.ZoneLimit(1) != 7 || d.tracker.ZoneLimit(3) != 9 {
		t.Errorf("after SetLimits: flows %+v, conntrack %d, zone 1 %d, zone 3 %d", p.Limits, d.tracker.GlobalLimit(), d.tracker.ZoneLimit(1), d.tracker.ZoneLimit(3))
	}
}

// TestFlowCacheLimit: other_config:flow-limit bounds the megaflow caches
// of every bridge, present and future, over the command line's value,
// which comes back when the key goes or is bad.
func TestFlowCacheLimit(t *testing.T) {
	d := New(t.TempDir(), nil)
	d.OpenFlow = nil
	t.Cleanup(func() { d.Close() })
	l := DefaultLimits()
	l.FlowCacheEntries = 100
	d.SetLimits(l)
	if err := d.AddBridge(BridgeConfig{Name: "br-fc0"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		otherConfig map[string]string
		want        int
	}{
		{nil, 100},
		{map[string]string{"flow-limit": "7"}, 7},
		{map[string]string{"flow-limit": "lots"}, 100},
		{map[string]string{"flow-limit": "0"}, 100},
		{map[string]string{"flow-limit": "200000"}, 200000},
		{map[string]string{}, 100},
	} {
		d.applyOtherConfig(tc.otherConfig)
		if err := d.AddBridge(BridgeConfig{Name: "br-fc1"}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"br-fc0", "br-fc1"} {
			dp, _ := d.Bridge(name)
			if got := dp.CacheMaxEntries(); got != tc.want {
				t.Errorf("other_config %v: %s cache limit %d, want %d", tc.otherConfig, name, got, tc.want)
			}
		}
		if err := d.DelBridge("br-fc1"); err != nil {
			t.Fatal(err)
		}
	}
}
