package flowtable_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// serialize builds a frame from layers with correct lengths and checksums.
func serialize(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

// reserialized is frame decoded and encoded again with checksums computed
// from scratch: equal to frame exactly when frame's checksums are right.
func reserialized(t *testing.T, frame []byte) []byte {
	t.Helper()
	pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	var ls []gopacket.SerializableLayer
	for _, l := range pkt.Layers() {
		sl, ok := l.(gopacket.SerializableLayer)
		if !ok {
			t.Fatalf("layer %v does not serialize", l.LayerType())
		}
		if nl, ok := l.(*layers.ICMPv6); ok {
			ip := pkt.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
			nl.SetNetworkLayerForChecksum(ip)
		}
		ls = append(ls, sl)
	}
	return serialize(t, ls...)
}

// TestSetFieldICMPv6AndND: set_field of icmpv6_type/code, nd_target,
// nd_sll and nd_tll rewrites the frame and the ICMPv6 checksum follows.
func TestSetFieldICMPv6AndND(t *testing.T) {
	eth := &layers.Ethernet{SrcMAC: mac("02:00:00:00:00:01"), DstMAC: mac("02:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 255, NextHeader: layers.IPProtocolICMPv6,
		SrcIP: net.ParseIP("fe80::1"), DstIP: net.ParseIP("ff02::1:ff00:2")}
	ns := func(typ uint8, opt layers.ICMPv6Opt) []byte {
		icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
		icmp.SetNetworkLayerForChecksum(ip)
		addr := make([]byte, 6)
		copy(addr, mac("02:00:00:00:00:01"))
		var body gopacket.SerializableLayer
		if typ == 135 {
			body = &layers.ICMPv6NeighborSolicitation{TargetAddress: net.ParseIP("fe80::2"),
				Options: layers.ICMPv6Options{{Type: opt, Data: addr}}}
		} else {
			body = &layers.ICMPv6NeighborAdvertisement{TargetAddress: net.ParseIP("fe80::2"), Flags: 0x60,
				Options: layers.ICMPv6Options{{Type: opt, Data: addr}}}
		}
		return serialize(t, eth, ip, icmp, body)
	}
	for _, c := range []struct {
		name, flows string
		frame       []byte
		check       func(f []byte) bool
	}{
		{"nd_target and nd_sll", "table=0,priority=10,icmp6,icmp_type=135 actions=set_field:fe80::99->nd_target,set_field:aa:bb:cc:dd:ee:ff->nd_sll,output:2",
			ns(135, layers.ICMPv6OptSourceAddress), func(f []byte) bool {
				return bytes.Contains(f, net.ParseIP("fe80::99")) && bytes.Contains(f, mac("aa:bb:cc:dd:ee:ff"))
			}},
		{"nd_tll", "table=0,priority=10,icmp6,icmp_type=136 actions=set_field:aa:bb:cc:dd:ee:ff->nd_tll,output:2",
			ns(136, layers.ICMPv6OptTargetAddress), func(f []byte) bool { return bytes.Contains(f, mac("aa:bb:cc:dd:ee:ff")) }},
		{"icmpv6 type and code", "table=0,priority=10,icmp6 actions=set_field:136->icmpv6_type,set_field:3->icmpv6_code,output:2",
			ns(135, layers.ICMPv6OptSourceAddress), func(f []byte) bool { return f[54] == 136 && f[55] == 3 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := loadSeed(t, c.flows)
			out := runFrame(t, p, c.frame)
			if len(out) != 1 {
				t.Fatalf("got %d outputs", len(out))
			}
			f := out[0].frame
			if !c.check(f) {
				t.Errorf("rewrite missing: % x", f)
			}
			if want := reserialized(t, f); !bytes.Equal(f, want) {
				t.Errorf("ICMPv6 checksum wrong after the rewrite: got %#04x, want %#04x", binary.BigEndian.Uint16(f[56:]), binary.BigEndian.Uint16(want[56:]))
			}
		})
	}
}

// TestSetFieldSCTPPortCRC: a port rewrite recomputes the SCTP CRC32c.
func TestSetFieldSCTPPortCRC(t *testing.T) {
	p := loadSeed(t, "table=0,priority=10,sctp actions=set_field:5555->sctp_dst,set_field:6666->sctp_src,output:2")
	eth := &layers.Ethernet{SrcMAC: mac("02:00:00:00:00:01"), DstMAC: mac("02:00:00:00:00:02"), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolSCTP, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
	sctp := &layers.SCTP{SrcPort: 1000, DstPort: 80, VerificationTag: 7}
	payload := gopacket.Payload(bytes.Repeat([]byte{1}, 20))
	frame := serialize(t, eth, ip, sctp, payload)
	// The right CRC32c, whatever gopacket put there.
	l4 := frame[34:]
	binary.LittleEndian.PutUint32(l4[8:], 0)
	binary.LittleEndian.PutUint32(l4[8:], crc32.Checksum(l4, crc32.MakeTable(crc32.Castagnoli)))
	frame = append(frame, 0, 0, 0, 0) // Ethernet padding is not SCTP's
	out := runFrame(t, p, frame)
	if len(out) != 1 {
		t.Fatalf("got %d outputs", len(out))
	}
	o := append([]byte(nil), out[0].frame[34:len(out[0].frame)-4]...)
	if binary.BigEndian.Uint16(o[0:]) != 6666 || binary.BigEndian.Uint16(o[2:]) != 5555 {
		t.Fatalf("ports not rewritten: % x", o[:4])
	}
	got := binary.LittleEndian.Uint32(o[8:])
	binary.LittleEndian.PutUint32(o[8:], 0)
	if want := crc32.Checksum(o, crc32.MakeTable(crc32.Castagnoli)); got != want {
		t.Errorf("SCTP CRC32c after the rewrite: got %#08x, want %#08x", got, want)
	}
}
