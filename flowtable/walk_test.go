package flowtable_test

import (
	"net"
	"slices"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// captured is one packet the pipeline sent somewhere.
type captured struct {
	port  uint32
	frame []byte
}

type captureSink struct{ out []captured }

func (s *captureSink) Output(port uint32, pkt *flowtable.Packet) {
	s.out = append(s.out, captured{port, slices.Clone(pkt.Frame)})
}

func (s *captureSink) PacketIn(pkt *flowtable.Packet, pi *flowtable.PacketIn) {
	s.out = append(s.out, captured{flowtable.PortController, slices.Clone(pkt.Frame)})
}

func loadSeed(t *testing.T, text string) *flowtable.Pipeline {
	t.Helper()
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, text, nil); err != nil {
		t.Fatalf("load seed flows: %v", err)
	}
	p.Conntrack = ctadapter.New()
	return p
}

// packetSpec builds a frame from a match-syntax description.
func packetSpec(t *testing.T, p *flowtable.Pipeline, spec string) (flowtable.Key, []byte) {
	t.Helper()
	k, err := flowtext.ParsePacket(spec, &flowtext.ParseOptions{TLV: p.TLV})
	if err != nil {
		t.Fatalf("packet %q: %v", spec, err)
	}
	return k, flowtable.BuildFrame(&k, 0)
}

// walk runs a packet and returns the tables it visited, the final key and
// what came out.
func walk(t *testing.T, p *flowtable.Pipeline, spec string, meta func(k *flowtable.Key)) ([]uint8, flowtable.Key, []captured) {
	t.Helper()
	k, frame := packetSpec(t, p, spec)
	var pkt flowtable.Packet
	pkt.Key = k
	if meta != nil {
		meta(&pkt.Key)
	}
	if err := pkt.Extract(frame); err != nil {
		t.Fatal(err)
	}
	var tr flowtable.Trace
	sink := &captureSink{}
	p.Run(&pkt, sink, &tr)
	var tables []uint8
	for _, e := range tr.Events {
		if e.Kind == flowtable.TraceLookup {
			tables = append(tables, e.Table)
		}
	}
	if testing.Verbose() {
		t.Logf("trace:\n%s", flowtext.FormatTrace(&tr, &flowtext.PrintOptions{TLV: p.TLV}))
	}
	return tables, tr.Final, sink.out
}

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// decode parses an output frame and checks its checksums.
func decode(t *testing.T, frame []byte) gopacket.Packet {
	t.Helper()
	pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	if el := pkt.ErrorLayer(); el != nil {
		t.Fatalf("output frame does not decode: %v", el.Error())
	}
	if ip, ok := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		if got := flowtable.Checksum(ip.Contents); got != 0 {
			t.Errorf("IPv4 header checksum is wrong after rewrites (residue %#x)", got)
		}
	}
	return pkt
}

const (
	frontendMAC = "be:2c:bf:e4:ec:c5"
	gw1MAC      = "4e:99:08:c1:53:be"
	gw2MAC      = "02:d8:4e:3f:92:1d"
	backend2MAC = "c6:f4:b5:76:10:38"
	globalMAC   = "aa:bb:cc:dd:ee:ff"
)

// Seed 001 §8.1-8.7: frontend pod -> backendsvc:80 on worker 1 goes
// 0 -> 10 -> 30 -> 31 -> 40 -> 105 -> 110 and out to the gateway (port 2).
func TestWalkSeed8FrontendToService(t *testing.T) {
	p := loadSeed(t, seeds.Worker1)
	tables, final, out := walk(t, p, "in_port=49,tcp,dl_src="+frontendMAC+",dl_dst="+gw1MAC+
		",nw_src=10.222.1.48,nw_dst=10.104.65.133,nw_ttl=64,tp_src=56670,tp_dst=80", nil)
	if want := []uint8{0, 10, 30, 31, 40, 105, 110}; !slices.Equal(tables, want) {
		t.Errorf("tables = %v, want %v", tables, want)
	}
	if got := final.Reg(0) & 0xffff; got != 0x2 {
		t.Errorf("reg0[0..15] = %#x, want 0x2 (local pod)", got)
	}
	if got := final.Reg(0) >> 16 & 1; got != 1 {
		t.Errorf("reg0[16] = %d, want 1 (destination MAC known)", got)
	}
	if got := final.Reg(1); got != 2 {
		t.Errorf("reg1 = %#x, want 0x2 (antrea-gw0)", got)
	}
	if len(out) != 1 || out[0].port != 2 {
		t.Fatalf("outputs = %v, want one to port 2", out)
	}
	eth := decode(t, out[0].frame).Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if eth.DstMAC.String() != gw1MAC {
		t.Errorf("dl_dst = %s, want %s (table 40 mod_dl_dst)", eth.DstMAC, gw1MAC)
	}
	// The connection was committed in zone 65520 by table 105 (second flow:
	// not from the gateway, so no ct_mark): the same packet again is -new+est.
	_, again, _ := walk(t, p, "in_port=49,tcp,dl_src="+frontendMAC+",dl_dst="+gw1MAC+
		",nw_src=10.222.1.48,nw_dst=10.104.65.133,nw_ttl=64,tp_src=56670,tp_dst=80,tcp_flags=ack", nil)
	if st := again.CtState(); st&flowtable.CtStateNew != 0 || st&flowtable.CtStateEst == 0 {
		t.Errorf("second packet ct_state = %#x, want -new+est+trk", st)
	}
}

// Seed 001 §9.1-9.10: the DNATed packet comes back from the gateway
// (port 2) to backend2 on worker 2: 0 -> 10 -> 30 -> 31 -> 40 -> 50
// (conjunction 1: frontendpolicy allows TCP 80 to backends, reg5=1) -> 70
// (dec_ttl, tunnel to 10.79.1.202, reg1=1) -> 105 (commit with
// ct_mark=0x20, from the gateway) -> 110 -> out to the tunnel port 1.
func TestWalkSeed9ServiceToBackend2(t *testing.T) {
	p := loadSeed(t, seeds.Worker1)
	spec := "in_port=2,tcp,dl_src=" + gw1MAC + ",dl_dst=" + globalMAC +
		",nw_src=10.222.1.48,nw_dst=10.222.2.34,nw_ttl=63,tp_src=46490,tp_dst=80"
	tables, final, out := walk(t, p, spec, nil)
	if want := []uint8{0, 10, 30, 31, 40, 50, 70, 105, 110}; !slices.Equal(tables, want) {
		t.Errorf("tables = %v, want %v", tables, want)
	}
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"reg0[0..15] (from gateway)", final.Reg(0) & 0xffff, 1},
		{"reg0[16]", final.Reg(0) >> 16 & 1, 1},
		{"reg1 (tunnel port)", final.Reg(1), 1},
		{"reg5 (conjunction id)", final.Reg(5), 1},
		{"tun_dst", final.TunDst(), 0x0a4f01ca},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	if len(out) != 1 || out[0].port != 1 {
		t.Fatalf("outputs = %v, want one to port 1 (antrea-tun0)", out)
	}
	pkt := decode(t, out[0].frame)
	eth := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if eth.SrcMAC.String() != gw1MAC || eth.DstMAC.String() != globalMAC {
		t.Errorf("MACs %s > %s, want %s > %s", eth.SrcMAC, eth.DstMAC, gw1MAC, globalMAC)
	}
	if ip.TTL != 62 {
		t.Errorf("TTL = %d, want 62 (dec_ttl in table 70)", ip.TTL)
	}
	// The reply from backend2 (arriving from the tunnel) is +est+rpl with
	// ct_mark 0x20, so worker 1's table 31 sends it back to the gateway MAC.
	reply := "in_port=1,tcp,dl_src=" + gw2MAC + ",dl_dst=" + globalMAC +
		",nw_src=10.222.2.34,nw_dst=10.222.1.48,nw_ttl=63,tp_src=80,tp_dst=46490,tcp_flags=syn|ack"
	tables, final, _ = walk(t, p, reply, nil)
	if st := final.CtState(); st&(flowtable.CtStateEst|flowtable.CtStateRpl|flowtable.CtStateTrk) != flowtable.CtStateEst|flowtable.CtStateRpl|flowtable.CtStateTrk {
		t.Errorf("reply ct_state = %#x, want +est+rpl+trk", st)
	}
	if final.CtMark() != 0x20 {
		t.Errorf("reply ct_mark = %#x, want 0x20", final.CtMark())
	}
	if len(tables) < 4 || tables[1] != 30 || tables[2] != 31 || tables[3] != 40 {
		t.Errorf("reply tables = %v, want 0, 30, 31, 40, ...", tables)
	}
	if got := final.EthDst(); net.HardwareAddr(got[:]).String() != gw1MAC {
		t.Errorf("reply dl_dst = %x, want %s (table 31 load of the gateway MAC)", got, gw1MAC)
	}
}

// Seed 001 §9.11: on worker 2 the packet arrives from the tunnel: table 0
// copies tun_metadata0[28..31] to reg9 and marks reg0[19]; then 30, 31,
// 40, 50 (new: no egress rule for the frontend here), 60, 70 (to backend2:
// gateway source MAC, backend2 MAC, dec_ttl), 80 (reg1=0x23), 90
// (backendpolicy allows TCP 80 from the frontend), 105, 110 -> port 35.
func TestWalkSeed9_11Worker2FromTunnel(t *testing.T) {
	p := loadSeed(t, seeds.Worker2)
	spec := "in_port=1,tcp,dl_src=" + gw1MAC + ",dl_dst=" + globalMAC +
		",nw_src=10.222.1.48,nw_dst=10.222.2.34,nw_ttl=62,tp_src=46490,tp_dst=80"
	tm, err := p.TLV.Resolve(flowtable.FieldTunMetadataN[0])
	if err != nil {
		t.Fatal(err)
	}
	tables, final, out := walk(t, p, spec, func(k *flowtable.Key) {
		tm.SetUint64(k, 0x30000000) // bits 28..31 = 0x3
		flowtable.FieldTunSrc.SetUint64(k, 0x0a4f01c9)
		flowtable.FieldTunDst.SetUint64(k, 0x0a4f01ca)
	})
	if want := []uint8{0, 30, 31, 40, 50, 60, 70, 80, 90, 105, 110}; !slices.Equal(tables, want) {
		t.Errorf("tables = %v, want %v", tables, want)
	}
	if got := final.Reg(9) >> 28; got != 0x3 {
		t.Errorf("reg9[28..31] = %#x, want 0x3 (moved from tun_metadata0[28..31])", got)
	}
	if got := final.Reg(0) >> 19 & 1; got != 1 {
		t.Errorf("reg0[19] = %d, want 1", got)
	}
	if got := final.Reg(0) & 0xffff; got != 0 {
		t.Errorf("reg0[0..15] = %#x, want 0 (from tunnel)", got)
	}
	if got := final.Reg(1); got != 0x23 {
		t.Errorf("reg1 = %#x, want 0x23 (backend2's port 35)", got)
	}
	if len(out) != 1 || out[0].port != 35 {
		t.Fatalf("outputs = %v, want one to port 35", out)
	}
	pkt := decode(t, out[0].frame)
	eth := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if eth.SrcMAC.String() != gw2MAC || eth.DstMAC.String() != backend2MAC {
		t.Errorf("MACs %s > %s, want %s > %s", eth.SrcMAC, eth.DstMAC, gw2MAC, backend2MAC)
	}
	if ttl := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4).TTL; ttl != 61 {
		t.Errorf("TTL = %d, want 61", ttl)
	}
	// Another port than 80 from the frontend is dropped by the ingress
	// default (table 100) for isolated backend2.
	_, _, out = walk(t, p, "in_port=1,tcp,dl_src="+gw1MAC+",dl_dst="+globalMAC+
		",nw_src=10.222.1.48,nw_dst=10.222.2.34,nw_ttl=62,tp_src=46491,tp_dst=8080", nil)
	if len(out) != 0 {
		t.Errorf("TCP 8080 to backend2 forwarded to %v, want dropped by policy", out)
	}
}

// Seed 000: worker 1's table 20 answers the gateway's ARP request for
// worker 2's gateway 10.222.2.1 with aa:bb:cc:dd:ee:ff, out of IN_PORT.
func TestWalkSeedARPResponder(t *testing.T) {
	p := loadSeed(t, seeds.Worker1)
	tables, _, out := walk(t, p, "in_port=2,arp,dl_src="+gw1MAC+",dl_dst=ff:ff:ff:ff:ff:ff,arp_op=1,"+
		"arp_spa=10.222.1.1,arp_tpa=10.222.2.1,arp_sha="+gw1MAC+",arp_tha=00:00:00:00:00:00", nil)
	if want := []uint8{0, 10, 20}; !slices.Equal(tables, want) {
		t.Errorf("tables = %v, want %v", tables, want)
	}
	if len(out) != 1 || out[0].port != 2 {
		t.Fatalf("outputs = %v, want the reply back out of port 2 (IN_PORT)", out)
	}
	pkt := decode(t, out[0].frame)
	eth := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	arp := pkt.Layer(layers.LayerTypeARP).(*layers.ARP)
	checks := []struct{ name, got, want string }{
		{"eth dst", eth.DstMAC.String(), gw1MAC},
		{"eth src", eth.SrcMAC.String(), globalMAC},
		{"sha", net.HardwareAddr(arp.SourceHwAddress).String(), globalMAC},
		{"spa", net.IP(arp.SourceProtAddress).String(), "10.222.2.1"},
		{"tha", net.HardwareAddr(arp.DstHwAddress).String(), gw1MAC},
		{"tpa", net.IP(arp.DstProtAddress).String(), "10.222.1.1"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("ARP reply %s = %s, want %s", c.name, c.got, c.want)
		}
	}
	if arp.Operation != 2 {
		t.Errorf("ARP op = %d, want 2 (reply)", arp.Operation)
	}
}

// Spoofguard (table 10): a frame from the frontend port with another
// source IP is dropped.
func TestWalkSpoofedSourceDropped(t *testing.T) {
	p := loadSeed(t, seeds.Worker1)
	tables, _, out := walk(t, p, "in_port=49,tcp,dl_src="+frontendMAC+",dl_dst="+gw1MAC+
		",nw_src=10.222.1.99,nw_dst=10.222.1.47,nw_ttl=64,tp_src=1000,tp_dst=80", nil)
	if len(out) != 0 {
		t.Errorf("spoofed packet forwarded: %v", out)
	}
	if want := []uint8{0, 10}; !slices.Equal(tables, want) {
		t.Errorf("tables = %v, want %v", tables, want)
	}
}
