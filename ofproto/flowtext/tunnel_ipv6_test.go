package flowtext

import (
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
)

// TestFlowStringIPv6Tunnel: the "Flow:" line of ofproto/trace for a packet
// from an IPv6 tunnel is Open vSwitch 3.1's (measured with ovs-appctl
// ofproto/trace on the IPv6 Geneve walk) without the tunnel fields govs
// does not model.
func TestFlowStringIPv6Tunnel(t *testing.T) {
	const ovs = "tcp,tun_src=0.0.0.0,tun_dst=0.0.0.0,tun_ipv6_src=fd00:4f::c9,tun_ipv6_dst=fd00:4f::ca,tun_gbp_id=0,tun_gbp_flags=0," +
		"tun_tos=0,tun_ttl=0,tun_erspan_ver=0,gtpu_flags=0,gtpu_msgtype=0,tun_flags=0,in_port=1,vlan_tci=0x0000," +
		"dl_src=00:00:00:00:00:00,dl_dst=aa:bb:cc:dd:ee:ff,nw_src=10.222.1.48,nw_dst=10.222.2.34,nw_tos=0,nw_ecn=0,nw_ttl=63," +
		"nw_frag=no,tp_src=0,tp_dst=80,tcp_flags=0"
	want := ovs
	for _, unmodelled := range []string{"tun_gbp_id=0,", "tun_gbp_flags=0,", "tun_tos=0,", "tun_ttl=0,", "tun_erspan_ver=0,",
		"gtpu_flags=0,", "gtpu_msgtype=0,", "tun_flags=0,"} {
		want = strings.Replace(want, unmodelled, "", 1)
	}
	k, err := ParsePacket("in_port=1,tun_ipv6_src=fd00:4f::c9,tun_ipv6_dst=fd00:4f::ca,tcp,nw_src=10.222.1.48,nw_dst=10.222.2.34,"+
		"dl_dst=aa:bb:cc:dd:ee:ff,tp_dst=80,nw_ttl=63", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := FlowString(&k, nil); got != want {
		t.Errorf("Flow:\n got %s\nwant %s", got, want)
	}
	var plain flowtable.Key
	flowtable.FieldEthType.SetUint64(&plain, flowtable.EthTypeIPv4)
	if got := FlowString(&plain, nil); strings.Contains(got, "tun_") {
		t.Errorf("a packet from no tunnel prints tunnel fields: %s", got)
	}
}
