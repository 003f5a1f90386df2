package e2e

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestOVSDBBridgeMACLikeOVS: the same ovs-vsctl commands against govs and
// Open vSwitch give the LOCAL port the same MAC and the bridge the same
// datapath id (Bridge.datapath_id, Interface.mac_in_use and `ovs-ofctl
// show`), as bridge_pick_local_hw_addr and bridge_pick_datapath_id pick
// them: from the Bridge UUID with only internal ports, from a NIC with a
// global MAC once it joins (in place: the LOCAL device keeps its
// address), back when it leaves, and from other_config.
func TestOVSDBBridgeMACLikeOVS(t *testing.T) {
	for _, sw := range []struct {
		name  string
		start func(r *ovsdbRig)
	}{{"govs", (*ovsdbRig).startGovs}, {"OpenVSwitch", (*ovsdbRig).startOVS}} {
		t.Run(sw.name, func(t *testing.T) {
			r := newOVSDBRig(t)
			sw.start(r)
			const nicMAC = "00:50:56:8f:1c:f6"
			r.ns.MustExec(t, "ip", "link", "add", "nic0", "address", nicMAC, "type", "veth", "peer", "name", "nic0p", "address", "00:50:56:8f:4e:82")
			r.ns.MustExec(t, "ip", "link", "set", "nic0", "up")
			r.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev", "fail-mode=secure",
				"--", "add-port", "br0", "pod0", "--", "set", "interface", "pod0", "type=internal")
			def := ovsDefaultMAC(t, r.get("bridge", "br0", "_uuid"))
			// The LOCAL device is in use meanwhile: its address must stay.
			r.ns.MustExec(t, "ip", "addr", "add", "10.99.0.1/24", "dev", "br0")
			r.ns.MustExec(t, "ip", "link", "set", "br0", "up")
			steps := []struct {
				name string
				cmd  []string
				mac  string
			}{
				{"internal ports only", nil, def},
				{"NIC added", []string{"add-port", "br0", "nic0"}, nicMAC},
				{"NIC removed", []string{"del-port", "br0", "nic0"}, def},
				{"NIC back", []string{"add-port", "br0", "nic0"}, nicMAC},
				{"other_config:hwaddr", []string{"set", "bridge", "br0", "other_config:hwaddr=\"00:11:22:33:44:55\""}, "00:11:22:33:44:55"},
				{"other_config:hwaddr removed", []string{"remove", "bridge", "br0", "other_config", "hwaddr"}, nicMAC},
			}
			for _, s := range steps {
				if s.cmd != nil {
					r.vsctl(s.cmd...)
				}
				wantDPID := "0000" + strings.ReplaceAll(s.mac, ":", "")
				checkBridgeMAC(t, r, s.name, s.mac, wantDPID)
			}
			r.vsctl("set", "bridge", "br0", "other_config:datapath-id=00000000000000aa")
			checkBridgeMAC(t, r, "other_config:datapath-id", nicMAC, "00000000000000aa")
			if out := r.ns.MustExec(t, "ip", "-o", "-4", "addr", "show", "dev", "br0"); !strings.Contains(out, "10.99.0.1/24") {
				t.Errorf("br0 lost its address after its MAC changed: %s", out)
			}
		})
	}
}

// checkBridgeMAC checks the LOCAL port's MAC and the datapath id in the
// database and in `ovs-ofctl show` (the switch writes the database a
// moment after cur_cfg for some columns: it is polled).
func checkBridgeMAC(t *testing.T, r *ovsdbRig, step, wantMAC, wantDPID string) {
	t.Helper()
	var got string
	for try := 0; try < 50; try++ {
		dpid := strings.Trim(r.get("bridge", "br0", "datapath_id"), `"`)
		mac := strings.Trim(r.get("interface", "br0", "mac_in_use"), `"`)
		show, err := r.tool("ovs-ofctl", "show", "br0")
		if err != nil {
			t.Fatal(err)
		}
		ofDPID, ofMAC := "", ""
		if m := regexp.MustCompile(`dpid:([0-9a-f]{16})`).FindStringSubmatch(show); m != nil {
			ofDPID = m[1]
		}
		if m := regexp.MustCompile(`LOCAL\(br0\): addr:([0-9a-f:]{17})`).FindStringSubmatch(show); m != nil {
			ofMAC = m[1]
		}
		got = fmt.Sprintf("datapath_id %s mac_in_use %s, ovs-ofctl show dpid %s LOCAL addr %s", dpid, mac, ofDPID, ofMAC)
		if dpid == wantDPID && mac == wantMAC && ofDPID == wantDPID && ofMAC == wantMAC {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("%s: %s; want %s and %s", step, got, wantDPID, wantMAC)
}

// ovsDefaultMAC is the MAC ovs-vswitchd gives a bridge without a global
// port MAC: the first six bytes of the Bridge row's UUID as it holds it
// in memory (four host-order, here little-endian, 32-bit words), marked
// locally administered. Worked out here independently of govs's code.
func ovsDefaultMAC(t *testing.T, uuid string) string {
	raw, err := hex.DecodeString(strings.ReplaceAll(uuid, "-", ""))
	if err != nil || len(raw) != 16 {
		t.Fatalf("bridge uuid %q", uuid)
	}
	mem := binary.LittleEndian.AppendUint32(nil, binary.BigEndian.Uint32(raw[0:4]))
	mem = binary.LittleEndian.AppendUint32(mem, binary.BigEndian.Uint32(raw[4:8]))
	mem[0] = mem[0]&0xfe | 0x02
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", mem[0], mem[1], mem[2], mem[3], mem[4], mem[5])
}
