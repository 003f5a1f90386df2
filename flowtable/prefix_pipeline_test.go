package flowtable_test

import (
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/govs-project/govs/flowtable"
)

// TestSetPrefixFields: the tracked fields of a table change what its
// megaflows un-wildcard, as Flow_Table prefixes does in OVS: by default
// (ip_dst,ip_src) a packet to 10.10.9.9, which no route but the default
// one matches, gets the 21 leading bits of nw_dst that tell it apart from
// the routes 10.10.0.5 and 10.10.7.0/24; with none, all of
// nw_dst; with ipv6_dst, an IPv6 route table narrows too. Walks run all
// along and always forward as the flows say (the race detector watches
// the tables being replaced under them).
func TestSetPrefixFields(t *testing.T) {
	p := loadSeed(t, `
table=0,priority=20,ip,nw_dst=10.10.0.5 actions=output:5
table=0,priority=10,ip,nw_dst=10.10.7.0/24 actions=output:7
table=0,priority=20,ipv6,ipv6_dst=fd00::5 actions=output:5
table=0,priority=10,ipv6,ipv6_dst=fd00:0:0:7::/64 actions=output:7
table=0,priority=0 actions=output:9
`)
	run := func(spec string) (port uint32, nwDst, ipv6Dst string) {
		t.Helper()
		k, frame := packetSpec(t, p, spec)
		var pk flowtable.Packet
		pk.Key = k
		if err := pk.Extract(frame); err != nil {
			t.Fatal(err)
		}
		sink := &captureSink{}
		res := p.Run(&pk, sink, nil)
		if len(sink.out) != 1 {
			t.Fatalf("%s: outputs %v", spec, sink.out)
		}
		m := res.Mask()
		return sink.out[0].port, netip.AddrFrom4([4]byte(flowtable.FieldIPv4Dst.Value(m))).String(),
			netip.AddrFrom16([16]byte(flowtable.FieldIPv6Dst.Value(m))).String()
	}
	const v4, v6 = "in_port=1,udp,nw_src=10.10.0.2,nw_dst=10.10.9.9", "in_port=1,udp6,ipv6_src=fd00::2,ipv6_dst=fd00:0:0:9::9"
	stop, walks := make(chan struct{}), atomic.Int64{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // walks during the changes
		defer wg.Done()
		k, frame := packetSpec(t, p, v4)
		for {
			select {
			case <-stop:
				return
			default:
			}
			var pk flowtable.Packet
			pk.Key = k
			if err := pk.Extract(frame); err != nil {
				t.Error(err)
				return
			}
			sink := &captureSink{}
			p.Run(&pk, sink, nil)
			if len(sink.out) != 1 || sink.out[0].port != 9 {
				t.Errorf("walk during a change: outputs %v, want port 9", sink.out)
				return
			}
			walks.Add(1)
		}
	}()
	for walks.Load() == 0 {
		runtime.Gosched()
	}
	for i, tc := range []struct {
		fields        []*flowtable.Field
		nwDst, ip6Dst string
	}{
		{nil, "255.255.248.0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{[]*flowtable.Field{}, "255.255.255.255", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{[]*flowtable.Field{flowtable.FieldIPv6Dst}, "255.255.255.255", "ffff:ffff:ffff:fff8::"},
		{nil, "255.255.248.0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
	} {
		if err := p.SetPrefixFields(0, tc.fields); err != nil {
			t.Fatal(err)
		}
		port, nw, _ := run(v4)
		_, _, ip6 := run(v6)
		if port != 9 || nw != tc.nwDst || ip6 != tc.ip6Dst {
			t.Errorf("step %d, prefixes %v: port %d, megaflow nw_dst mask %s and ipv6_dst mask %s, want 9, %s and %s",
				i, tc.fields, port, nw, ip6, tc.nwDst, tc.ip6Dst)
		}
	}
	close(stop)
	wg.Wait()
	if err := p.SetPrefixFields(0, []*flowtable.Field{flowtable.FieldTCPDst}); err == nil {
		t.Error("tp_dst accepted as a prefix field")
	}
}

// TestParsePrefixFields: a Flow_Table prefixes column read as
// ovs-vswitchd's bridge_configure_tables reads it.
func TestParsePrefixFields(t *testing.T) {
	for _, tc := range []struct {
		names    []string
		want     string // field names; "default" for nil
		warnings int
	}{
		{nil, "default", 0},
		{[]string{"none"}, "", 0},
		{[]string{"ip_src", "none"}, "", 0},
		{[]string{"nw_dst", "ipv6_src"}, "ip_dst,ipv6_src", 0},
		{[]string{"tun_src", "tun_ipv6_dst", "tun_id"}, "tun_src,tun_ipv6_dst,tun_id", 0},
		{[]string{"tp_dst", "ip_src"}, "ip_src", 1},
		{[]string{"nosuch"}, "default", 1},
		{[]string{"ip_src", "ip_dst", "ipv6_src", "ipv6_dst"}, "ip_src,ip_dst,ipv6_src", 1},
	} {
		fields, warnings := flowtable.ParsePrefixFields(tc.names)
		got := "default"
		if fields != nil {
			var names []string
			for _, f := range fields {
				names = append(names, f.Name)
			}
			got = strings.Join(names, ",")
		}
		if got != tc.want || len(warnings) != tc.warnings {
			t.Errorf("%q: fields %q, warnings %q; want %q and %d warnings", tc.names, got, warnings, tc.want, tc.warnings)
		}
	}
}
