package conntrack

import (
	"errors"
	"net/netip"
	"testing"
)

// An adopted connection is established both ways from its first packet,
// keeps its mark and NAT, closes on FIN as a committed one does, and is
// adopted once.
func TestAdopt(t *testing.T) {
	h := newHarness(t, Config{NoTCPSeqCheck: true})
	cv := &tcpConv{c: "10.0.0.1", s: "10.0.0.2", cport: 40000, sport: 80, cseq: 5000, sseq: 700000}
	e := Entry{
		Orig:  Tuple{Src: mustAddr("10.0.0.1"), Dst: mustAddr("10.0.0.2"), Proto: protoTCP, SrcPort: 40000, DstPort: 80},
		Reply: Tuple{Src: mustAddr("10.0.0.2"), Dst: mustAddr("10.0.0.1"), Proto: protoTCP, SrcPort: 80, DstPort: 40000},
		Zone:  antreaZone, Mark: 0x20,
	}
	if err := h.tr.Adopt(e); err != nil {
		t.Fatal(err)
	}
	if err := h.tr.Adopt(e); !errors.Is(err, ErrExists) {
		t.Fatalf("second Adopt: %v, want ErrExists", err)
	}
	look := Args{Zone: antreaZone}
	runSteps(t, h, []step{
		{"data", cv.fromC(tcpACK, 100), look, trk | est},
		{"ack", cv.fromS(tcpACK, 0), look, trk | est | rpl},
		{"fin", cv.fromC(tcpFIN|tcpACK, 0), look, trk | est},
		{"fin-ack", cv.fromS(tcpFIN|tcpACK, 0), look, trk | est | rpl},
		{"last ack", cv.fromC(tcpACK, 0), look, trk | est},
	})
	d := h.tr.Dump(DumpFilter{})
	if len(d) != 1 || d[0].Mark != 0x20 || d[0].TCPStateName() == "ESTABLISHED" {
		t.Fatalf("dump after FIN = %v, want one closing connection with mark 0x20", d)
	}

	// DNAT to a Service: the reply tuple comes from the backend; replies
	// are un-DNATed by ct(nat).
	vip := Entry{
		Orig:  Tuple{Src: mustAddr("10.0.0.1"), Dst: mustAddr("10.96.0.10"), Proto: protoUDP, SrcPort: 5353, DstPort: 53},
		Reply: Tuple{Src: mustAddr("10.0.0.3"), Dst: mustAddr("10.0.0.1"), Proto: protoUDP, SrcPort: 53, DstPort: 5353},
		Zone:  antreaZone,
	}
	if err := h.tr.Adopt(vip); err != nil {
		t.Fatal(err)
	}
	frame := build(udpPk("10.0.0.3", "10.0.0.1", 53, 5353))
	md := h.ct(frame, Args{Zone: antreaZone, NAT: &NAT{}})
	if md.State&(trk|est|rpl) != trk|est|rpl {
		t.Fatalf("reply of adopted DNAT connection: %s", stateString(md.State))
	}
	if got := netip.AddrFrom4([4]byte(frame[ethLen+12 : ethLen+16])); got != mustAddr("10.96.0.10") {
		t.Fatalf("reply source after ct(nat) = %v, want the Service address", got)
	}

	for _, bad := range []Entry{
		{Orig: Tuple{Src: mustAddr("10.0.0.1"), Dst: mustAddr("10.0.0.2"), Proto: 1}, Reply: Tuple{Src: mustAddr("10.0.0.2"), Dst: mustAddr("10.0.0.1"), Proto: 1}},
		{Orig: Tuple{Src: mustAddr("10.0.0.1"), Dst: mustAddr("10.0.0.2"), Proto: protoUDP, SrcPort: 1, DstPort: 2},
			Reply: Tuple{Src: mustAddr("10.0.0.9"), Dst: mustAddr("10.0.0.8"), Proto: protoUDP, SrcPort: 2, DstPort: 1}},
		{Orig: Tuple{Src: mustAddr("10.0.0.1"), Dst: mustAddr("::1"), Proto: protoUDP}, Reply: Tuple{Src: mustAddr("10.0.0.2"), Dst: mustAddr("10.0.0.1"), Proto: protoUDP}},
	} {
		if err := h.tr.Adopt(bad); err == nil {
			t.Errorf("Adopt(%v) succeeded, want an error", bad)
		}
	}
}
