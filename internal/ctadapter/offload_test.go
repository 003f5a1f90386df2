package ctadapter

import (
	"bytes"
	"encoding/binary"
	"math/rand"
	"net/netip"
	"testing"

	"github.com/govs-project/govs/flowtable"
)

// tcpFrame returns a TCP frame 10.0.0.1:40000 -> 10.96.0.10:80 with
// payload and a complete checksum, and the same frame with the partial
// checksum a sender with checksum offload leaves (the pseudo-header sum).
func tcpFrame(t *testing.T, payload []byte, flags byte) (full, partial []byte, o flowtable.Offload) {
	t.Helper()
	var k flowtable.Key
	k.SetEthType(flowtable.EthTypeIPv4)
	k.SetNwProto(flowtable.IPProtoTCP)
	flowtable.FieldIPv4Src.SetUint64(&k, 0x0a000001)
	flowtable.FieldIPv4Dst.SetUint64(&k, 0x0a60000a)
	flowtable.FieldTCPSrc.SetUint64(&k, 40000)
	flowtable.FieldTCPDst.SetUint64(&k, 80)
	f := flowtable.BuildFrame(&k, len(payload))
	const l3, l4 = 14, 34
	f[l4+13] = flags
	binary.BigEndian.PutUint32(f[l4+4:], 1)
	copy(f[len(f)-len(payload):], payload)
	pseudo := uint32(sum(f[l3+12:l3+20], uint32(flowtable.IPProtoTCP)+uint32(len(f)-l4)))
	f[l4+16], f[l4+17] = 0, 0
	binary.BigEndian.PutUint16(f[l4+16:], ^sum(f[l4:], pseudo))
	partial = bytes.Clone(f)
	binary.BigEndian.PutUint16(partial[l4+16:], sum(nil, pseudo))
	return f, partial, flowtable.Offload{CsumPartial: true, CsumStart: l4, CsumOffset: 16}
}

// sum is a 16-bit-at-a-time folded one's-complement sum.
func sum(b []byte, s uint32) uint16 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// TestNATPartialChecksum: DNAT of a frame whose TCP checksum is partial
// (a GSO frame from a vnet port) leaves a partial checksum that completes
// to exactly what NAT of the complete frame gives.
func TestNATPartialChecksum(t *testing.T) {
	payload := make([]byte, 4000)
	rand.New(rand.NewSource(1)).Read(payload)
	full, partial, o := tcpFrame(t, payload, 0x02) // SYN
	nat := &flowtable.NAT{Flags: flowtable.NATDst, AddrMin: netip.MustParseAddr("10.10.1.2"),
		AddrMax: netip.MustParseAddr("10.10.1.2"), PortMin: 8080, PortMax: 8080}
	run := func(frame []byte, off flowtable.Offload) *flowtable.Packet {
		a := New()
		pkt := &flowtable.Packet{Offload: off}
		if err := pkt.Extract(frame); err != nil {
			t.Fatal(err)
		}
		a.Execute(pkt, &flowtable.CTRequest{Zone: 7, Commit: true, NAT: nat})
		if st := pkt.Key.CtState(); st&flowtable.CtStateDNAT == 0 {
			t.Fatalf("ct_state %#x: not DNAT'ed", st)
		}
		return pkt
	}
	pf := run(full, flowtable.Offload{})
	pp := run(partial, o)
	if !pp.Offload.CsumPartial {
		t.Fatalf("NAT completed the partial checksum instead of keeping it partial")
	}
	if err := pp.CompleteChecksum(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pp.Frame, pf.Frame) {
		t.Errorf("partial frame after DNAT and completion differs from DNAT of the full frame")
	}
	if got := binary.BigEndian.Uint16(pf.Frame[34+2:]); got != 8080 {
		t.Errorf("destination port %d, want 8080", got)
	}
}
