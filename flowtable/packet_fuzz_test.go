package flowtable_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/govs-project/govs/flowtable"
)

// fuzzFrames are seed frames for FuzzExtract: one of each kind BuildFrame
// makes, plus runts and truncations.
func fuzzFrames() [][]byte {
	var out [][]byte
	mk := func(set func(k *flowtable.Key)) {
		var k flowtable.Key
		k.SetEthSrc([6]byte{2, 0, 0, 0, 0, 1})
		k.SetEthDst([6]byte{2, 0, 0, 0, 0, 2})
		set(&k)
		f := flowtable.BuildFrame(&k, 8)
		out = append(out, f, f[:len(f)/2], f[:14])
	}
	ip4 := func(proto uint8) func(k *flowtable.Key) {
		return func(k *flowtable.Key) {
			k.SetEthType(flowtable.EthTypeIPv4)
			k.SetNwProto(proto)
			flowtable.FieldIPv4Src.SetUint64(k, 0x0ade0130)
			flowtable.FieldIPv4Dst.SetUint64(k, 0x0ade0222)
			flowtable.FieldTCPSrc.SetUint64(k, 46490)
			flowtable.FieldTCPDst.SetUint64(k, 80)
		}
	}
	ip6 := func(proto uint8) func(k *flowtable.Key) {
		return func(k *flowtable.Key) {
			k.SetEthType(flowtable.EthTypeIPv6)
			k.SetNwProto(proto)
			flowtable.FieldIPv6Src.SetValue(k, bytes.Repeat([]byte{0xfd}, 16))
			flowtable.FieldIPv6Dst.SetValue(k, bytes.Repeat([]byte{0xfe}, 16))
			flowtable.FieldTCPSrc.SetUint64(k, 135)
			flowtable.FieldTCPDst.SetUint64(k, 0)
		}
	}
	for _, p := range []uint8{flowtable.IPProtoTCP, flowtable.IPProtoUDP, flowtable.IPProtoICMP, 47} {
		mk(ip4(p))
	}
	for _, p := range []uint8{flowtable.IPProtoTCP, flowtable.IPProtoUDP, flowtable.IPProtoICMPv6} {
		mk(ip6(p))
	}
	mk(func(k *flowtable.Key) {
		k.SetEthType(flowtable.EthTypeARP)
		flowtable.FieldArpOp.SetUint64(k, 1)
	})
	mk(func(k *flowtable.Key) {
		ip4(flowtable.IPProtoUDP)(k)
		flowtable.FieldVlanTCI.SetUint64(k, flowtable.VlanCFI|100)
	})
	// The newer rewrites (SCTP's CRC, ICMPv6/ND, MPLS) need their frames.
	mk(ip4(flowtable.IPProtoSCTP))
	mk(ip6(flowtable.IPProtoSCTP))
	out = append(out, ndFrame(135, 1), ndFrame(136, 2), ndFrame(135, 0))
	var udp flowtable.Key
	ip4(flowtable.IPProtoUDP)(&udp)
	ipv4 := flowtable.BuildFrame(&udp, 8)
	for _, lses := range [][]byte{
		{0, 0x64, 0x01, 0x40},                   // label 6, bottom of stack, TTL 64
		{0, 0x64, 0x00, 0x40, 0, 0x65, 0x01, 9}, // two labels
	} {
		mpls := append([]byte(nil), ipv4[:12]...)
		mpls = append(mpls, 0x88, 0x47)
		mpls = append(mpls, lses...)
		out = append(out, append(mpls, ipv4[14:]...))
	}
	out = append(out, nil, []byte{1, 2, 3})
	return out
}

// ndFrame is an ICMPv6 neighbor solicitation (typ 135) or advertisement
// (136) for fe80::2 with a link-layer address option of type opt (0: none).
func ndFrame(typ, opt byte) []byte {
	f := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd}
	payload := 24
	if opt != 0 {
		payload += 8
	}
	f = append(f, 0x60, 0, 0, 0, 0, byte(payload), flowtable.IPProtoICMPv6, 255)
	f = append(f, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1) // source
	f = append(f, 0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 2) // solicited-node
	f = append(f, typ, 0, 0, 0, 0, 0, 0, 0)
	f = append(f, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2) // target
	if opt != 0 {
		f = append(f, opt, 1, 2, 0, 0, 0, 0, 1)
	}
	return f
}

// ipv4HeaderOK reports whether pkt holds a whole IPv4 header with a valid
// checksum.
func ipv4HeaderOK(pkt *flowtable.Packet) bool {
	if pkt.Key.EthType() != flowtable.EthTypeIPv4 || pkt.L3 < 0 || len(pkt.Frame) < pkt.L3+20 {
		return false
	}
	ihl := int(pkt.Frame[pkt.L3]&0x0f) * 4
	if ihl < 20 || len(pkt.Frame) < pkt.L3+ihl {
		return false
	}
	return flowtable.Checksum(pkt.Frame[pkt.L3:pkt.L3+ihl]) == 0
}

// FuzzExtract: Extract never panics on any bytes; committing an unchanged
// key leaves the frame alone; committing changed header fields never
// panics and keeps a valid IPv4 header checksum valid.
func FuzzExtract(f *testing.F) {
	for i, fr := range fuzzFrames() {
		f.Add(fr, uint16(i*0x1111), uint64(i)*0x9e3779b97f4a7c15)
	}
	for _, c := range extractRegressions {
		f.Add(c.frame, c.which, c.v)
	}
	f.Fuzz(checkExtractCommit)
}

// extractRegressions are inputs FuzzExtract found.
var extractRegressions = []struct {
	name  string
	frame []byte
	which uint16
	v     uint64
}{
	// An ARP frame that is not Ethernet/IPv4 ARP (htype 0x3030): Extract
	// leaves the ARP fields zero, and Commit used to write them back over
	// the frame although the pipeline changed nothing.
	{"arp-not-ethernet-ipv4", []byte("000000000000\b\x060000000000000000000000000000"), 26214, 18054082321272548793},
	// Ethernet/IPv4 ARP with an opcode above 255, which the key does not
	// hold (as in OVS): an unchanged commit must not clear it.
	{"arp-op-above-255", append([]byte("\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x06"+
		"\x00\x01\x08\x00\x06\x04\x01\x00"), make([]byte, 20)...), 0, 0},
	// A VLAN-tagged IPv4 later fragment (offset != 0): Extract returned
	// before recording the key as the frame's base, so an unchanged
	// commit saw every header as changed and cleared the tag's DEI bit.
	{"ipv4-later-fragment-stale-base", []byte("000000000000\x81\x0000\b\x00E0000000000000000000"), 39296, 15362738631823041037},
}

func TestExtractRegressions(t *testing.T) {
	for _, c := range extractRegressions {
		t.Run(c.name, func(t *testing.T) { checkExtractCommit(t, c.frame, c.which, c.v) })
	}
}

// checkExtractCommit is the FuzzExtract property for one input: frame, a
// bit set of header fields to change, and the value to change them with.
func checkExtractCommit(t *testing.T, frame []byte, which uint16, v uint64) {
	buf := append([]byte(nil), frame...)
	var pkt flowtable.Packet
	pkt.Key.SetInPort(1)
	if err := pkt.Extract(buf); err != nil {
		if len(frame) >= 14 {
			t.Fatalf("Extract of a %d-byte frame: %v", len(frame), err)
		}
		return
	}
	pkt.Commit()
	if !bytes.Equal(buf, frame) {
		t.Fatalf("Commit without changes rewrote the frame:\n  before %x\n  after  %x", frame, buf)
	}
	checksumOK := ipv4HeaderOK(&pkt)

	k := &pkt.Key
	var b8 [8]byte
	binary.BigEndian.PutUint64(b8[:], v)
	mods := []func(){
		func() { k.SetEthSrc([6]byte(b8[:6])) },
		func() { k.SetEthDst([6]byte(b8[2:])) },
		func() { flowtable.FieldIPv4Src.SetUint64(k, v) },
		func() { flowtable.FieldIPv4Dst.SetUint64(k, v>>32) },
		func() { flowtable.FieldIPTTL.SetUint64(k, v>>8) },
		func() { flowtable.FieldNwTos.SetUint64(k, v>>16) },
		func() { flowtable.FieldTCPSrc.SetUint64(k, v>>24) },
		func() { flowtable.FieldTCPDst.SetUint64(k, v>>40) },
		func() { flowtable.FieldVlanTCI.SetUint64(k, v>>48) },
		func() { flowtable.FieldIPv6Src.SetValue(k, bytes.Repeat(b8[:], 2)) },
		func() { flowtable.FieldIPv6Label.SetUint64(k, v) },
		func() { flowtable.FieldArpOp.SetUint64(k, v>>56) },
		func() { flowtable.FieldArpSha.SetUint64(k, v) },
		// One of the newer rewrites, chosen by the value.
		func() {
			switch v % 4 {
			case 0:
				flowtable.FieldNdTarget.SetValue(k, bytes.Repeat(b8[:], 2))
			case 1:
				flowtable.FieldMPLSLabel.SetUint64(k, v>>12)
			case 2:
				flowtable.FieldMPLSTTL.SetUint64(k, v>>40)
			default:
				flowtable.FieldNdTll.SetUint64(k, v>>8)
			}
		},
		func() { k.SetNwProto(uint8(v)) },
		func() { k.SetEthType(uint16(v >> 8)) },
	}
	typeChanged := false
	for i, m := range mods {
		if which&(1<<i) != 0 {
			m()
			typeChanged = typeChanged || i >= len(mods)-2
		}
	}
	pkt.Commit()
	if checksumOK && !typeChanged && !ipv4HeaderOK(&pkt) {
		t.Fatalf("Commit broke the IPv4 header checksum (changes %#x, value %#x)", which, v)
	}
	// The rewritten frame is a frame like any other.
	var again flowtable.Packet
	_ = again.Extract(pkt.Frame)
}
