// Package tunneltest holds the fixtures the Geneve codec's tests and the
// Geneve vport's tests share.
package tunneltest

import (
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/govs-project/govs/flowtable"
)

// AntreaTLV is the Geneve option Antrea maps (ovs-ofctl add-tlv-map).
const AntreaTLV = "{class=0x104,type=0x80,len=4}->tun_metadata0"

// SeedFrame is the inner frame of seed 001 §9.10: the SYN from the frontend
// pod 10.222.1.48 to backend2 10.222.2.34:80, routed by antrea-gw0.
func SeedFrame(t testing.TB) []byte {
	t.Helper()
	eth := &layers.Ethernet{
		SrcMAC:       net.HardwareAddr{0x4e, 0x99, 0x08, 0xc1, 0x53, 0xbe},
		DstMAC:       net.HardwareAddr{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff},
		EthernetType: layers.EthernetTypeIPv4,
	}
	ip := &layers.IPv4{Version: 4, TTL: 63, Protocol: layers.IPProtocolTCP, Flags: layers.IPv4DontFragment,
		SrcIP: net.IPv4(10, 222, 1, 48), DstIP: net.IPv4(10, 222, 2, 34)}
	tcp := &layers.TCP{SrcPort: 46490, DstPort: 80, SYN: true, Seq: 2799349838, Window: 64860}
	if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TLVMap is the TLV map spec sets up (ovs-ofctl add-tlv-map syntax).
func TLVMap(t testing.TB, spec string) *flowtable.TLVMap {
	t.Helper()
	tlv := flowtable.NewTLVMap()
	ms, err := flowtable.ParseTLVMappings(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := tlv.Add(ms...); err != nil {
		t.Fatal(err)
	}
	return tlv
}

// TunMetadata returns tun_metadataN of k through the location the TLV map
// of spec gives the field (not through the tunnel package's own offsets).
func TunMetadata(t testing.TB, spec string, n int, k *flowtable.Key) []byte {
	t.Helper()
	f, err := TLVMap(t, spec).Resolve(flowtable.FieldTunMetadataN[n])
	if err != nil {
		t.Fatal(err)
	}
	return k[f.Off : f.Off+f.Size]
}
