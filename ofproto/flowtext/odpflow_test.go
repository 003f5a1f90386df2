package flowtext

import (
	"testing"

	"github.com/govs-project/govs/flowtable"
)

// TestDatapathFlow: megaflows print as OVS's odp_flow_format prints the
// userspace datapath's (lines of dpctl/dump-flows from OVS 3.1).
func TestDatapathFlow(t *testing.T) {
	for _, tc := range []struct{ match, want string }{
		{"recirc_id=0,in_port=49,dl_src=be:2c:bf:e4:ec:c5,ip,nw_src=10.222.1.48",
			"recirc_id(0),in_port(49),packet_type(ns=0,id=0),eth(src=be:2c:bf:e4:ec:c5),eth_type(0x0800),ipv4(src=10.222.1.48,frag=no)"},
		{"recirc_id=3,ct_state=+new-est-inv+trk,ct_mark=0x20,in_port=2,dl_dst=f2:32:d8:07:e2:a6,tcp,nw_src=10.222.1.48,nw_dst=10.222.1.47,tp_dst=80",
			"ct_state(+new-est-inv+trk),ct_mark(0x20),recirc_id(0x3),in_port(2),packet_type(ns=0,id=0),eth(dst=f2:32:d8:07:e2:a6),eth_type(0x0800),ipv4(src=10.222.1.48,dst=10.222.1.47,proto=6,frag=no),tcp(dst=80)"},
		{"recirc_id=1,ct_state=-new-inv+trk,ct_mark=0,ip,nw_dst=10.96.0.0/12",
			"ct_state(-new-inv+trk),ct_mark(0),recirc_id(0x1),packet_type(ns=0,id=0),eth_type(0x0800),ipv4(dst=10.96.0.0/255.240.0.0,frag=no)"},
		{"recirc_id=0,in_port=2,dl_src=4e:99:08:c1:53:be,dl_dst=ff:ff:ff:ff:ff:ff,arp,arp_spa=10.222.1.1,arp_tpa=10.222.1.47,arp_op=1,arp_sha=4e:99:08:c1:53:be",
			"recirc_id(0),in_port(2),packet_type(ns=0,id=0),eth(src=4e:99:08:c1:53:be,dst=ff:ff:ff:ff:ff:ff),eth_type(0x0806),arp(sip=10.222.1.1,tip=10.222.1.47,op=1,sha=4e:99:08:c1:53:be)"},
		{"recirc_id=0,in_port=2,ipv6,ipv6_dst=fe80::/10,nw_ecn=0",
			"recirc_id(0),in_port(2),packet_type(ns=0,id=0),eth_type(0x86dd),ipv6(dst=fe80::/ffc0::,tclass=0/0x3,frag=no)"},
		{"recirc_id=0,in_port=1,tun_dst=192.168.77.2,tun_id=0x5,dl_vlan=10,ip",
			"tunnel(tun_id=0x5,dst=192.168.77.2),recirc_id(0),in_port(1),packet_type(ns=0,id=0),vlan(vid=10),eth_type(0x0800),ipv4(frag=no)"},
		// An IPv6 underlay: the IPv4 addresses are 0 and not printed, as
		// OVS's tun_key_to_attr leaves them out.
		{"recirc_id=0,in_port=1,tun_id=0,tun_src=0.0.0.0,tun_dst=0.0.0.0,tun_ipv6_src=fd00:4f::ca,tun_ipv6_dst=fd00:4f::c9,ip",
			"tunnel(tun_id=0x0,ipv6_src=fd00:4f::ca,ipv6_dst=fd00:4f::c9),recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth_type(0x0800),ipv4(frag=no)"},
		{"recirc_id=0,in_port=1,tun_ipv6_dst=fd00:4f::/64,ip",
			"tunnel(ipv6_dst=fd00:4f::/ffff:ffff:ffff:ffff::),recirc_id(0),in_port(1),packet_type(ns=0,id=0),eth_type(0x0800),ipv4(frag=no)"},
		// A plain port's packet whose megaflow looked at tun_ipv6_src (0):
		// no tunnel attribute.
		{"recirc_id=0,in_port=2,tun_ipv6_src=::,ip",
			"recirc_id(0),in_port(2),packet_type(ns=0,id=0),eth_type(0x0800),ipv4(frag=no)"},
	} {
		fm, err := ParseFlow(tc.match+",actions=drop", nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.match, err)
		}
		m := fm.Match
		value := m.Value.Masked(&m.Mask)
		if got := DatapathFlow(&value, &m.Mask, nil); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.match, got, tc.want)
		}
	}
}

// TestDatapathActions: set() before the output that needs it, ct() with
// its recirculation, IN_PORT as the packet's port, drop for none.
func TestDatapathActions(t *testing.T) {
	var k flowtable.Key
	k.SetInPort(49)
	flowtable.FieldEthType.SetUint64(&k, flowtable.EthTypeIPv4)
	var w flowtable.Key
	flowtable.FieldEthDst.SetValue(&w, []byte{0x4e, 0x99, 0x08, 0xc1, 0x53, 0xbe})
	var wm flowtable.Key
	flowtable.FieldEthDst.SetValue(&wm, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	ops := []flowtable.DPOp{
		{Kind: flowtable.DPCT, CT: flowtable.CTRequest{Zone: 65520, Commit: true}, Table: 31},
	}
	if got, want := DatapathActions(&k, ops, nil), "ct(commit,zone=65520),recirc(0x20)"; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	ops = []flowtable.DPOp{{Kind: flowtable.DPOutput, Port: 2, WMask: wm, Write: w}, {Kind: flowtable.DPOutput, InPort: true, WMask: wm, Write: w}}
	if got, want := DatapathActions(&k, ops, nil), "set(eth(dst=4e:99:08:c1:53:be)),2,49"; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	// push_vlan with the TCI the tag leaves with (set after the push), pop_vlan.
	var vw, vm flowtable.Key
	flowtable.FieldVlanTCI.SetUint64(&vw, 0x2000|flowtable.VlanCFI|10)
	flowtable.FieldVlanTCI.SetUint64(&vm, 0xffff)
	ops = []flowtable.DPOp{{Kind: flowtable.DPPushVLAN, VLANType: 0x88a8}, {Kind: flowtable.DPOutput, Port: 2, WMask: vm, Write: vw},
		{Kind: flowtable.DPPopVLAN, WMask: vm, Write: vw}, {Kind: flowtable.DPOutput, Port: 3, WMask: vm}}
	if got, want := DatapathActions(&k, ops, nil), "push_vlan(tpid=0x88a8,vid=10,pcp=1),2,pop_vlan,3"; got != want {
		t.Errorf("got %s want %s", got, want)
	}
	if got := DatapathActions(&k, nil, nil); got != "drop" {
		t.Errorf("no ops: %s", got)
	}
}
