package tunnel

import (
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/govs-project/govs/flowtable"
)

// benchSetup returns the seed frame, a key with Antrea's tun_metadata0 mark
// and tun_dst, and the compiled TLV map.
func benchSetup(b *testing.B) ([]byte, *flowtable.Key, *OptionMap) {
	inner := seedFrame(b)
	om := optionMap(b, antreaTLV)
	k := new(flowtable.Key)
	flowtable.FieldTunDst.SetUint64(k, 0x0a4f01ca)
	copy(tunMetadata(b, antreaTLV, 0, k), []byte{0x10, 0, 0, 0})
	return inner, k, om
}

func BenchmarkEncap(b *testing.B) {
	inner, k, om := benchSetup(b)
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	b.SetBytes(int64(len(inner)))
	for b.Loop() {
		if _, _, err := Encap(buf, inner, k, om); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecap(b *testing.B) {
	inner, _, _ := benchSetup(b)
	pkt := geneveBytes(b, &layers.Geneve{Protocol: ProtoTEB, CriticalOption: true,
		Options: []*layers.GeneveOption{{Class: 0x104, Type: 0x80, Length: 4, Data: []byte{0x10, 0, 0, 0}}}}, inner)
	var md Metadata
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		if _, err := Decap(pkt, &md); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecapFillKey is the whole receive-side cost: header parse and
// moving the metadata into a flow key.
func BenchmarkDecapFillKey(b *testing.B) {
	inner, _, om := benchSetup(b)
	pkt := geneveBytes(b, &layers.Geneve{Protocol: ProtoTEB, CriticalOption: true,
		Options: []*layers.GeneveOption{{Class: 0x104, Type: 0x80, Length: 4, Data: []byte{0x10, 0, 0, 0}}}}, inner)
	var md Metadata
	var k flowtable.Key
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		if _, err := Decap(pkt, &md); err != nil {
			b.Fatal(err)
		}
		if err := FillKey(&md, &k, om); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSourcePort(b *testing.B) {
	inner, _, _ := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = SourcePort(inner)
	}
}
