package flowtable_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// TestTunnelIPv6Pipeline: flows match tun_ipv6_src/tun_ipv6_dst and write
// tun_ipv6_dst (set_field, load, move), and the megaflow of a packet from a
// tunnel matches tun_id and the outer addresses of the underlay's family
// exactly, as OVS's do, while a packet from a plain port's does not look
// at them.
func TestTunnelIPv6Pipeline(t *testing.T) {
	p := loadSeed(t, `
table=0,priority=10,in_port=1,tun_ipv6_src=fd00:4f::/64,tun_ipv6_dst=fd00:4f::c9 actions=move:NXM_NX_TUN_IPV6_SRC[0..31]->NXM_NX_REG0[],output:3
table=0,priority=5,in_port=1 actions=output:4
table=0,priority=5,in_port=2,ip actions=set_field:fd00:4f::ca->tun_ipv6_dst,load:0xbeef->NXM_NX_TUN_IPV6_SRC[0..15],output:1
`)
	src, dst := netip.MustParseAddr("fd00:4f::ca"), netip.MustParseAddr("fd00:4f::c9")
	fromTunnel := func(src netip.Addr) func(k *flowtable.Key) {
		return func(k *flowtable.Key) {
			flowtable.FieldTunID.SetUint64(k, 7)
			flowtable.FieldTunIPv6Src.SetValue(k, src.AsSlice())
			flowtable.FieldTunIPv6Dst.SetValue(k, dst.AsSlice())
		}
	}
	const pkt = "in_port=1,ip,nw_src=10.222.2.34,nw_dst=10.222.1.48"
	run := func(spec string, meta func(k *flowtable.Key)) (flowtable.Result, flowtable.Key, []captured) {
		t.Helper()
		k, frame := packetSpec(t, p, spec)
		var pk flowtable.Packet
		pk.Key = k
		if meta != nil {
			meta(&pk.Key)
		}
		if err := pk.Extract(frame); err != nil {
			t.Fatal(err)
		}
		sink := &captureSink{}
		res := p.Run(&pk, sink, nil)
		return res, pk.Key, sink.out
	}
	res, k, out := run(pkt, fromTunnel(src))
	if len(out) != 1 || out[0].port != 3 || k.Reg(0) != 0xca {
		t.Errorf("from fd00:4f::ca: out %v reg0 %#x, want port 3 and reg0=0xca", out, k.Reg(0))
	}
	mask := res.Mask()
	for _, f := range []*flowtable.Field{flowtable.FieldTunID, flowtable.FieldTunIPv6Src, flowtable.FieldTunIPv6Dst} {
		for _, b := range f.Value(mask) {
			if b != 0xff {
				t.Errorf("megaflow of a tunnel packet: %s mask % x, want exact", f.Name, f.Value(mask))
				break
			}
		}
	}
	if got := flowtext.DatapathFlow(&k, mask, nil); !strings.Contains(got, "tunnel(tun_id=0x7,ipv6_src=fd00:4f::ca,ipv6_dst=fd00:4f::c9)") {
		t.Errorf("datapath flow %s", got)
	}
	// ofproto/trace's walk gives the same megaflow.
	{
		k, frame := packetSpec(t, p, pkt)
		var pk flowtable.Packet
		pk.Key = k
		fromTunnel(src)(&pk.Key)
		if err := pk.Extract(frame); err != nil {
			t.Fatal(err)
		}
		if tr := p.TraceRun(&pk, nil, &captureSink{}, nil); *tr.Mask() != *mask {
			t.Errorf("TraceRun's megaflow differs from Run's")
		}
	}
	if _, _, out := run(pkt, fromTunnel(netip.MustParseAddr("fd00:99::1"))); len(out) != 1 || out[0].port != 4 {
		t.Errorf("from another network: %v, want port 4", out)
	}
	res, k, out = run("in_port=2,ip,nw_src=10.222.1.48,nw_dst=10.222.2.34", nil)
	if len(out) != 1 || out[0].port != 1 {
		t.Fatalf("to the tunnel: %v", out)
	}
	if k.TunIPv6Dst() != src.As16() || k.TunIPv6Src() != netip.MustParseAddr("::beef").As16() {
		t.Errorf("tun_ipv6_dst %x tun_ipv6_src %x after set_field and load", k.TunIPv6Dst(), k.TunIPv6Src())
	}
	// The megaflow may cover the written tun_ipv6 bits (OVS unwildcards a
	// set field too), but the packet's own key has no tunnel: no tunnel().
	m := res.Mask()
	orig, _ := packetSpec(t, p, "in_port=2,ip,nw_src=10.222.1.48,nw_dst=10.222.2.34")
	orig.SetInPort(2)
	start := orig.Masked(m)
	if got := flowtext.DatapathFlow(&start, m, nil); strings.Contains(got, "tunnel(") || !strings.Contains(got, "in_port(2)") {
		t.Errorf("datapath flow of a plain packet: %s", got)
	}
}
