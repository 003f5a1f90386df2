package e2e

import (
	"strings"
	"testing"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/ovstest"
)

// TestPacketOutPipelineFieldsMatchOpenVSwitch: an OpenFlow 1.5
// packet-out's match may carry pipeline fields (registers, metadata)
// besides in_port; the packet starts its actions with them set. Open
// vSwitch and govs, with the real ovs-ofctl (which itself refuses other
// fields there: "field ip missing value").
func TestPacketOutPipelineFieldsMatchOpenVSwitch(t *testing.T) {
	netnstest.RequireRoot(t)
	_, govsd := binaries(t)
	// A UDP frame 02:00:00:00:00:01 -> 02:00:00:00:00:02, 10.0.0.1 -> 10.0.0.2.
	const frame = "020000000002020000000001080045000020000100004011669c0a0000010a00000200050006000c0000" + "00000000"
	run := func(t *testing.T, vswitchd string) string {
		o := ovstest.Start(t, ovstest.Options{Vswitchd: vswitchd})
		for _, f := range []string{"table=6,priority=10,reg0=5,metadata=0x3 actions=drop", "table=6,priority=0 actions=drop"} {
			if err := o.AddFlow("OpenFlow15", f); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := o.Ofctl("-O", "OpenFlow15", "packet-out", "in_port=CONTROLLER,reg0=5,metadata=3 packet="+frame+" actions=resubmit(,6)"); err != nil {
			t.Fatal(err)
		}
		flows, err := o.DumpFlows("OpenFlow15", "table=6,reg0=5,metadata=0x3")
		if err != nil {
			t.Fatal(err)
		}
		return flows
	}
	ovsFlows, govsFlows := run(t, ""), run(t, govsd)
	for name, flows := range map[string]string{"Open vSwitch": ovsFlows, "govs": govsFlows} {
		if !strings.Contains(flows, "n_packets=1,") {
			t.Errorf("%s: the reg0=5,metadata=3 flow did not count the packet-out:\n%s", name, flows)
		}
	}
}
