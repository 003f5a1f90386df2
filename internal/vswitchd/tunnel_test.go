package vswitchd

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/govs-project/govs/tunnel"
)

// TestGeneveConfig: the geneve port options map onto the tunnel
// configuration, and every bad option gets an error naming it.
func TestGeneveConfig(t *testing.T) {
	local := netip.MustParseAddr("10.79.1.201")
	cases := []struct {
		name    string
		opts    map[string]string
		want    tunnel.Config // Name and ReadTimeout are checked separately
		wantErr string
	}{
		{"Antrea's options", map[string]string{"remote_ip": "flow", "key": "flow", "local_ip": "10.79.1.201"},
			tunnel.Config{LocalIP: local}, ""},
		{"fixed remote, csum, port, ttl", map[string]string{"remote_ip": "10.79.1.202", "local_ip": "10.79.1.201", "key": "0",
			"csum": "true", "dst_port": "16081", "ttl": "32"},
			tunnel.Config{LocalIP: local, RemoteIP: netip.MustParseAddr("10.79.1.202"), Csum: true, Port: 16081, TTL: 32}, ""},
		{"csum=false", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "csum": "false"},
			tunnel.Config{LocalIP: local}, ""},
		{"no remote_ip", map[string]string{"local_ip": "10.79.1.201"}, tunnel.Config{}, "needs options:remote_ip"},
		{"no local_ip: the kernel's route picks the source", map[string]string{"remote_ip": "flow"}, tunnel.Config{}, ""},
		{"bad local_ip", map[string]string{"remote_ip": "flow", "local_ip": "node1"}, tunnel.Config{}, "options:local_ip=node1: not an IP address"},
		{"IPv6 local_ip", map[string]string{"remote_ip": "flow", "local_ip": "fd00::1"}, tunnel.Config{}, "options:local_ip=fd00::1: want a unicast IPv4"},
		{"bad remote_ip", map[string]string{"remote_ip": "0.0.0.0", "local_ip": "10.79.1.201"}, tunnel.Config{}, "options:remote_ip=0.0.0.0: want a unicast IPv4"},
		{"fixed key", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "key": "5"}, tunnel.Config{LocalIP: local}, ""},
		{"key too big", map[string]string{"remote_ip": "flow", "key": "16777216"}, tunnel.Config{}, "options:key=16777216: want flow or a VNI"},
		{"bad key", map[string]string{"remote_ip": "flow", "key": "five"}, tunnel.Config{}, "options:key=five"},
		{"bad csum", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "csum": "yes"}, tunnel.Config{}, "options:csum=yes: must be true or false"},
		{"bad dst_port", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "dst_port": "70000"}, tunnel.Config{}, "options:dst_port=70000"},
		{"zero dst_port", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "dst_port": "0"}, tunnel.Config{}, "options:dst_port=0"},
		{"bad ttl", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "ttl": "0"}, tunnel.Config{}, "options:ttl=0: must be 1..255"},
		{"unknown option", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "tos": "inherit"}, tunnel.Config{},
			`geneve option "tos" not supported (supported: csum, dst_port, key, local_ip, remote_ip, ttl)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := geneveConfig(PortConfig{Name: "antrea-tun0", Type: "geneve", Options: c.opts})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != "antrea-tun0" || got.ReadTimeout != tlvSyncInterval {
				t.Errorf("name %q read timeout %v, want antrea-tun0 %v", got.Name, got.ReadTimeout, tlvSyncInterval)
			}
			got.Name, got.ReadTimeout = "", 0
			if got != c.want {
				t.Errorf("config %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestParsePortWordsGeneve: the add-port words Antrea's ovs-vsctl call
// uses reach the opener as options.
func TestParsePortWordsGeneve(t *testing.T) {
	p, err := ParsePortWords("antrea-tun0", []string{"--", "set", "Interface", "antrea-tun0", "type=geneve", "ofport_request=1",
		"options:remote_ip=flow", "options:key=flow", "options:local_ip=10.79.1.201", "options:csum=true"})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := geneveConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != "geneve" || p.OFPortRequest != 1 || !tc.Csum || tc.RemoteIP.IsValid() || tc.LocalIP.String() != "10.79.1.201" {
		t.Errorf("port %+v config %+v", p, tc)
	}
}
