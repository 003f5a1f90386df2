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
