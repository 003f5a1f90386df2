package flowtable_test

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
)

// vlanOf is the VLAN id of a captured frame, -1 when untagged.
func vlanOf(f []byte) int {
	if binary.BigEndian.Uint16(f[12:]) != 0x8100 {
		return -1
	}
	return int(binary.BigEndian.Uint16(f[14:]) & 0x0fff)
}

// outputs is "port/vlan" per output, vlan "-" when untagged.
func outputs(out []captured) string {
	var s []string
	for _, o := range out {
		v := "-"
		if n := vlanOf(o.frame); n >= 0 {
			v = fmt.Sprint(n)
		}
		s = append(s, fmt.Sprintf("%d/%s", o.port, v))
	}
	return strings.Join(s, " ")
}

// TestNormalVLANs: NORMAL with OVS's access and trunk ports (Port tag,
// trunks, vlan_mode) and its drop of reserved multicast destinations.
// Ports: 1 and 2 access VLAN 10, 3 access VLAN 20, 4 a trunk of 10 and
// 20, 5 a trunk of every VLAN.
func TestNormalVLANs(t *testing.T) {
	const bcast = "ff:ff:ff:ff:ff:ff"
	pkt := func(in int, vlan int, dst string) string {
		s := fmt.Sprintf("in_port=%d,udp,dl_src=00:00:00:00:00:%02x,dl_dst=%s,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=2", in, in, dst)
		if vlan >= 0 {
			s += fmt.Sprintf(",dl_vlan=%d", vlan)
		}
		return s
	}
	cases := []struct {
		name, packet, want string
	}{
		{"access port floods in its VLAN, tagged on trunks", pkt(1, -1, bcast), "2/- 4/10 5/10"},
		{"other access VLAN", pkt(3, -1, bcast), "4/20 5/20"},
		{"tagged frame on an access port is dropped", pkt(1, 10, bcast), ""},
		{"trunk frame to access ports untagged", pkt(4, 10, bcast), "1/- 2/- 5/10"},
		{"trunk refuses a VLAN it does not carry", pkt(4, 30, bcast), ""},
		{"untagged on a trunk without VLAN 0", pkt(4, -1, bcast), ""},
		{"all-VLAN trunk: VLAN 30 stays on trunks", pkt(5, 30, bcast), ""},
		{"all-VLAN trunk: untagged goes nowhere tagged", pkt(5, -1, bcast), ""},
		{"LLDP multicast is not forwarded", pkt(1, -1, "01:80:c2:00:00:0e"), ""},
		{"STP multicast is not forwarded", pkt(4, 10, "01:80:c2:00:00:00"), ""},
		{"other multicast floods", pkt(1, -1, "01:80:c2:00:00:10"), "2/- 4/10 5/10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pipelineOf(t, "actions=NORMAL")
			p.Ports = portList{1, 2, 3, 4, 5}
			p.SetPortVLANs(map[uint32]flowtable.PortVLAN{
				1: {Access: true, Tag: 10}, 2: {Access: true, Tag: 10}, 3: {Access: true, Tag: 20},
				4: {Trunks: []uint16{10, 20}},
			})
			if _, _, out := walk(t, p, c.packet, nil); outputs(out) != c.want {
				t.Errorf("outputs %q, want %q", outputs(out), c.want)
			}
		})
	}
	// Learning is per VLAN: port 2's MAC learned in VLAN 10 is reached
	// from the trunk in VLAN 10 only, untagged.
	p := pipelineOf(t, "actions=NORMAL")
	p.Ports = portList{1, 2, 3, 4, 5}
	p.SetPortVLANs(map[uint32]flowtable.PortVLAN{1: {Access: true, Tag: 10}, 2: {Access: true, Tag: 10}, 4: {Trunks: []uint16{10, 20}}})
	walk(t, p, pkt(2, -1, bcast), nil)
	if _, _, out := walk(t, p, pkt(4, 10, "00:00:00:00:00:02"), nil); outputs(out) != "2/-" {
		t.Errorf("learned in VLAN 10: outputs %q, want 2/-", outputs(out))
	}
	if _, _, out := walk(t, p, pkt(4, 20, "00:00:00:00:00:02"), nil); outputs(out) != "3/20 5/20" {
		t.Errorf("same MAC in VLAN 20 is unknown: outputs %q, want flood 3/20 5/20 (trunks of every VLAN)", outputs(out))
	}
}
