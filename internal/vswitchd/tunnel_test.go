package vswitchd

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/geneve"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/tunnel"
)

// TestGeneveConfig: the geneve port options map onto the tunnel
// configuration, and every bad option gets an error naming it.
func TestGeneveConfig(t *testing.T) {
	local := netip.MustParseAddr("10.79.1.201")
	vni0 := geneve.KeyOption{Fixed: true}
	cases := []struct {
		name    string
		opts    map[string]string
		want    geneve.Config // Name and ReadTimeout are checked separately
		wantErr string
	}{
		{"Antrea's options", map[string]string{"remote_ip": "flow", "key": "flow", "local_ip": "10.79.1.201"},
			geneve.Config{LocalIP: local}, ""},
		{"fixed remote, csum, port, ttl", map[string]string{"remote_ip": "10.79.1.202", "local_ip": "10.79.1.201", "key": "0",
			"csum": "true", "dst_port": "16081", "ttl": "32"},
			geneve.Config{LocalIP: local, RemoteIP: netip.MustParseAddr("10.79.1.202"), Csum: true, Port: 16081, TTL: 32, InKey: vni0, OutKey: vni0}, ""},
		{"csum=false, no key: VNI 0 both ways, as OVS", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "csum": "false"},
			geneve.Config{LocalIP: local, InKey: vni0, OutKey: vni0}, ""},
		{"in_key and out_key override key", map[string]string{"remote_ip": "flow", "key": "9", "in_key": "flow", "out_key": "0x10"},
			geneve.Config{OutKey: geneve.KeyOption{Fixed: true, VNI: 16}}, ""},
		{"in_key alone: out_key is 0", map[string]string{"remote_ip": "flow", "in_key": "5"},
			geneve.Config{InKey: geneve.KeyOption{Fixed: true, VNI: 5}, OutKey: vni0}, ""},
		{"no remote_ip", map[string]string{"local_ip": "10.79.1.201"}, geneve.Config{}, "needs options:remote_ip"},
		{"no local_ip: the kernel's route picks the source", map[string]string{"remote_ip": "flow", "key": "flow"}, geneve.Config{}, ""},
		{"bad local_ip", map[string]string{"remote_ip": "flow", "local_ip": "node1"}, geneve.Config{}, "options:local_ip=node1: not an IP address"},
		{"IPv6 local_ip", map[string]string{"remote_ip": "flow", "local_ip": "fd00::1"}, geneve.Config{LocalIP: netip.MustParseAddr("fd00::1"), InKey: vni0, OutKey: vni0}, ""},
		{"IPv6 remote_ip", map[string]string{"remote_ip": "fd00:4f::ca"}, geneve.Config{RemoteIP: netip.MustParseAddr("fd00:4f::ca"), InKey: vni0, OutKey: vni0}, ""},
		{"IPv4-mapped remote_ip is IPv4", map[string]string{"remote_ip": "::ffff:10.79.1.202"}, geneve.Config{RemoteIP: netip.MustParseAddr("10.79.1.202"), InKey: vni0, OutKey: vni0}, ""},
		{"families differ", map[string]string{"remote_ip": "fd00:4f::ca", "local_ip": "10.79.1.201"}, geneve.Config{},
			"antrea-tun0: 'remote_ip' and 'local_ip' has to be of the same address family"},
		{"local_ip=flow", map[string]string{"remote_ip": "flow", "local_ip": "flow", "key": "flow"}, geneve.Config{LocalFlow: true}, ""},
		{"local_ip=flow with a fixed remote_ip", map[string]string{"remote_ip": "10.79.1.202", "local_ip": "flow"}, geneve.Config{},
			"antrea-tun0: geneve type requires 'remote_ip=flow' with 'local_ip=flow'"},
		{"multicast IPv6 remote_ip", map[string]string{"remote_ip": "ff02::1"}, geneve.Config{}, "options:remote_ip=ff02::1: want a unicast IPv4 or IPv6"},
		{"zoned remote_ip", map[string]string{"remote_ip": "fe80::1%eth0"}, geneve.Config{}, "options:remote_ip=fe80::1%eth0: not an IP address"},
		{"bad remote_ip", map[string]string{"remote_ip": "0.0.0.0", "local_ip": "10.79.1.201"}, geneve.Config{}, "options:remote_ip=0.0.0.0: want a unicast IPv4"},
		{"fixed key", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "key": "5"},
			geneve.Config{LocalIP: local, InKey: geneve.KeyOption{Fixed: true, VNI: 5}, OutKey: geneve.KeyOption{Fixed: true, VNI: 5}}, ""},
		{"key too big", map[string]string{"remote_ip": "flow", "key": "16777216"}, geneve.Config{}, "options:key=16777216: want flow or a VNI"},
		{"bad out_key", map[string]string{"remote_ip": "flow", "key": "flow", "out_key": "-1"}, geneve.Config{}, "options:out_key=-1: want flow or a VNI"},
		{"bad key", map[string]string{"remote_ip": "flow", "key": "five"}, geneve.Config{}, "options:key=five"},
		{"bad csum", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "csum": "yes"}, geneve.Config{}, "options:csum=yes: must be true or false"},
		{"bad dst_port", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "dst_port": "70000"}, geneve.Config{}, "options:dst_port=70000"},
		{"zero dst_port", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "dst_port": "0"}, geneve.Config{}, "options:dst_port=0"},
		{"bad ttl", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "ttl": "0"}, geneve.Config{}, "options:ttl=0: must be 1..255"},
		{"unknown option", map[string]string{"remote_ip": "flow", "local_ip": "10.79.1.201", "tos": "inherit"}, geneve.Config{},
			`geneve option "tos" not supported (supported: csum, dst_port, in_key, key, local_ip, out_key, remote_ip, ttl)`},
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

// TestGeneveFixedKeyNoLocalIP: a geneve port with options:key=7 and no
// local_ip sends VNI 7 whatever tun_id says, from the address of the
// kernel's route to tun_dst, and takes in only VNI 7 (tun_id 7): another
// VNI is no port's and is dropped and counted, as in OVS.
func TestGeneveFixedKeyNoLocalIP(t *testing.T) {
	ns1, ns2 := netnstest.NewNS(t), netnstest.NewNS(t)
	netnstest.NewVeth(t, ns1, ns2, netnstest.VethOptions{HostAddr: "10.81.0.1/24", PeerAddr: "10.81.0.2/24"})
	var fixed, peer port.Port
	open := func(ns *netnstest.NS, dst *port.Port, cfg PortConfig) {
		t.Helper()
		if err := ns.Do(func() (err error) { *dst, err = openGeneve(cfg); return err }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*dst).Close() })
	}
	open(ns1, &fixed, PortConfig{Name: "tunk", Options: map[string]string{"remote_ip": "flow", "key": "7"}})
	open(ns2, &peer, PortConfig{Name: "tunp", Options: map[string]string{"remote_ip": "flow", "key": "flow", "local_ip": "10.81.0.2"}})
	fk, pp := fixed.(*geneve.Port), peer.(*geneve.Port)

	frame := make([]byte, 60)
	copy(frame, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
	var k flowtable.Key
	flowtable.FieldTunDst.SetUint64(&k, 0x0a510002) // 10.81.0.2
	flowtable.FieldTunID.SetUint64(&k, 99)
	if n, err := fk.WriteTunnel([][]byte{frame}, []*flowtable.Key{&k}); n != 1 || err != nil {
		t.Fatalf("WriteTunnel = %d, %v", n, err)
	}
	md := readTunnel(t, pp)
	if md.VNI != 7 || md.Src != 0x0a510001 {
		t.Errorf("received VNI %d from %#x, want VNI 7 from 10.81.0.1 (the route's source)", md.VNI, md.Src)
	}

	keys := make([]*flowtable.Key, 2)
	for i, vni := range []uint64{5, 7} {
		keys[i] = new(flowtable.Key)
		flowtable.FieldTunDst.SetUint64(keys[i], 0x0a510001)
		flowtable.FieldTunID.SetUint64(keys[i], vni)
	}
	if n, err := pp.WriteTunnel([][]byte{frame, frame}, keys); n != 2 || err != nil {
		t.Fatalf("WriteTunnel = %d, %v", n, err)
	}
	md = readTunnel(t, fk)
	var got flowtable.Key
	if err := fk.FillKey(&md, &got); err != nil || got.TunID() != 7 {
		t.Errorf("first datagram taken in: %v, tun_id %d; want VNI 5 dropped, VNI 7 in", err, got.TunID())
	}
	if st := fk.TunnelStats(); st.RxNoPort != 1 || st.RxPackets != 1 {
		t.Errorf("stats %+v, want 1 received and 1 for no port (VNI 5)", st)
	}
}

// readTunnel reads one datagram's metadata within 5 s.
func readTunnel(t *testing.T, p *geneve.Port) tunnel.Metadata {
	t.Helper()
	b := port.NewBatch(4)
	md := make([]tunnel.Metadata, 4)
	end := time.Now().Add(5 * time.Second)
	for time.Now().Before(end) {
		n, err := p.ReadTunnelBatch(b, md)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return md[0]
		}
	}
	t.Fatalf("nothing received on %s", p.Name())
	return tunnel.Metadata{}
}
