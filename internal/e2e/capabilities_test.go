package e2e

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/ovstest"
	"github.com/govs-project/govs/internal/vswitchd"
)

// datapathCapabilities creates the Datapath row ovn-controller creates
// for its netdev bridge and returns the capabilities the switch daemon
// writes into it.
func datapathCapabilities(t *testing.T, o *ovstest.OVS) map[string]string {
	t.Helper()
	id, err := o.Vsctl("--", "--id=@dp", "create", "Datapath", "external_ids:created-by=test",
		"--", "set", "Open_vSwitch", ".", "datapaths:netdev=@dp")
	if err != nil {
		t.Fatal(err)
	}
	id = strings.TrimSpace(id)
	var out string
	waitFor(t, 10*time.Second, func() bool {
		out, err = o.Vsctl("get", "Datapath", id, "capabilities")
		return err == nil && strings.TrimSpace(out) != "{}"
	}, "Datapath.capabilities written")
	return parseOVSDBMap(t, out)
}

// parseOVSDBMap parses ovs-vsctl's {k="v", k2="v2"} map output.
func parseOVSDBMap(t *testing.T, s string) map[string]string {
	t.Helper()
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	m := map[string]string{}
	for _, kv := range strings.Split(s, ", ") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("map entry %q in %q", kv, s)
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		m[k] = v
	}
	return m
}

// capabilityFlows are flows that use what a capability stands for: govs
// must take each one it claims (and Open vSwitch takes them all).
var capabilityFlows = map[string]string{
	"recirc":            "table=0,priority=1,ip actions=ct(table=1)",
	"ct_state":          "table=1,priority=1,ct_state=+trk+est,ip actions=drop",
	"ct_zone":           "table=1,priority=2,ct_state=+trk,ct_zone=5,ip actions=drop",
	"ct_mark":           "table=1,priority=3,ct_state=+trk,ct_mark=0x1,ip actions=drop",
	"ct_label":          "table=1,priority=4,ct_state=+trk,ct_label=0x1,ip actions=drop",
	"ct_state_nat":      "table=1,priority=5,ct_state=+trk+snat,ip actions=drop",
	"ct_orig_tuple":     "table=1,priority=6,ct_state=+trk+est,ip,ct_nw_src=10.0.0.1 actions=drop",
	"ct_orig_tuple6":    "table=1,priority=7,ct_state=+trk-inv,ipv6,ct_ipv6_src=fd00::1 actions=drop",
	"clone":             "table=2,priority=1 actions=clone(set_field:1->reg0,resubmit(,3))",
	"ct_clear":          "table=2,priority=2,ip actions=ct_clear",
	"check_pkt_len":     "table=2,priority=3,ip actions=check_pkt_larger(1400)->NXM_NX_REG0[0]",
	"masked_set_action": "table=2,priority=4,ip actions=set_field:0x1/0x3->reg1",
	"ct_zero_snat":      "table=2,priority=5,ip actions=ct(commit,nat(src=0.0.0.0))",
}

// TestDatapathCapabilitiesMatchOpenVSwitch (issue 22): govs fills
// Datapath.capabilities with the keys Open vSwitch 3.1 writes; what it
// claims Open vSwitch has too, numbers no higher than OVS's; every
// action or match a claimed capability stands for is taken; and
// Open_vSwitch.iface_types lists only types OVS has.
func TestDatapathCapabilitiesMatchOpenVSwitch(t *testing.T) {
	netnstest.RequireRoot(t)
	_, govsd := binaries(t)
	ovs := ovstest.Start(t, ovstest.Options{})
	govs := ovstest.Start(t, ovstest.Options{Vswitchd: govsd})
	want := datapathCapabilities(t, ovs)
	got := datapathCapabilities(t, govs)
	if !maps.Equal(got, vswitchd.DatapathCapabilities()) {
		t.Errorf("govs wrote %v, its table says %v", got, vswitchd.DatapathCapabilities())
	}
	if k1, k2 := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(k1, k2) {
		t.Errorf("capability keys:\n govs %v\n OVS  %v", k1, k2)
	}
	for k, v := range got {
		ov := want[k]
		if n, err := strconv.Atoi(v); err == nil {
			if on, err := strconv.Atoi(ov); err != nil || n > on {
				t.Errorf("%s: govs %s, OVS %s", k, v, ov)
			}
			continue
		}
		if v != "true" && v != "false" {
			t.Errorf("%s: govs %q is neither a number nor a boolean", k, v)
		}
		if v == "true" && ov != "true" {
			t.Errorf("%s: govs claims it, OVS does not (%q)", k, ov)
		}
	}
	for k, flow := range capabilityFlows {
		if err := ovs.AddFlow("OpenFlow15", flow); err != nil {
			t.Errorf("OVS does not take the %s flow: %v", k, err)
		}
		if got[k] != "true" {
			continue
		}
		if err := govs.AddFlow("OpenFlow15", flow); err != nil {
			t.Errorf("govs claims %s but does not take %q: %v", k, flow, err)
		}
	}
	ovsTypes, _ := ovs.Vsctl("get", "Open_vSwitch", ".", "iface_types")
	govsTypes, _ := govs.Vsctl("get", "Open_vSwitch", ".", "iface_types")
	have := strings.Split(strings.Trim(strings.TrimSpace(ovsTypes), "[]"), ", ")
	for _, typ := range strings.Split(strings.Trim(strings.TrimSpace(govsTypes), "[]"), ", ") {
		if !slices.Contains(have, typ) {
			t.Errorf("iface_types: govs lists %q, OVS does not (%s)", typ, ovsTypes)
		}
	}
	t.Logf("govs: %v\nOVS:  %v\niface_types govs %s OVS %s", got, want, strings.TrimSpace(govsTypes), strings.TrimSpace(ovsTypes))
}
