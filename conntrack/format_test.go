package conntrack

import (
	"net/netip"
	"testing"
)

// TestEntryFormatGolden: dpctl/dump-conntrack lines as Open vSwitch 3.1's
// userspace datapath prints them (fact sheet goldens 13 and 17).
func TestEntryFormatGolden(t *testing.T) {
	a1, a2 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	tcp := Entry{
		Orig:  Tuple{Src: a1, Dst: a2, Proto: protoTCP, SrcPort: 47320, DstPort: 8080},
		Reply: Tuple{Src: a2, Dst: a1, Proto: protoTCP, SrcPort: 8080, DstPort: 47320},
		Zone:  65520, Mark: 1, Label: Label{Lo: 5},
		TCPStateOrig: tcpsSynSent, TCPStateReply: tcpsClosed,
		TCPWscaleOrig: wsFlag | 10, TCPWscaleReply: 0, Timeout: 28,
	}
	liberal := Entry{
		Orig:         Tuple{Src: a2, Dst: a1, Proto: protoTCP, SrcPort: 8080, DstPort: 47320},
		Reply:        Tuple{Src: a1, Dst: a2, Proto: protoTCP, SrcPort: 47320, DstPort: 8080},
		TCPStateOrig: tcpsSynSent, TCPStateReply: tcpsClosed,
		TCPWscaleOrig: wsUnknown, TCPWscaleReply: wsUnknown, Timeout: 28,
	}
	udp := Entry{
		Orig:    Tuple{Src: a1, Dst: a2, Proto: protoUDP, SrcPort: 44130, DstPort: 5353},
		Reply:   Tuple{Src: a2, Dst: a1, Proto: protoUDP, SrcPort: 5353, DstPort: 44130},
		Timeout: 3,
	}
	icmp := Entry{
		Orig:  Tuple{Src: a1, Dst: a2, Proto: protoICMP, ICMPID: 31031, ICMPType: 8},
		Reply: Tuple{Src: a2, Dst: a1, Proto: protoICMP, ICMPID: 31031, ICMPType: 0},
	}
	for _, tc := range []struct {
		e              Entry
		verbose, stats bool
		want           string
	}{
		{tcp, true, true, "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=47320,dport=8080),reply=(src=10.0.0.2,dst=10.0.0.1,sport=8080,dport=47320),id=0,zone=65520,status=0,timeout=28,mark=1,labels=0x5,protoinfo=(state_orig=SYN_SENT,state_reply=CLOSED,wscale_orig=10,wscale_reply=0,flags_orig=WINDOW_SCALE,flags_reply=0)"},
		{liberal, true, true, "tcp,orig=(src=10.0.0.2,dst=10.0.0.1,sport=8080,dport=47320),reply=(src=10.0.0.1,dst=10.0.0.2,sport=47320,dport=8080),id=0,status=0,timeout=28,protoinfo=(state_orig=SYN_SENT,state_reply=CLOSED,flags_orig=BE_LIBERAL,flags_reply=BE_LIBERAL)"},
		{udp, true, true, "udp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=44130,dport=5353),reply=(src=10.0.0.2,dst=10.0.0.1,sport=5353,dport=44130),id=0,status=0,timeout=3"},
		{tcp, false, false, "tcp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=47320,dport=8080),reply=(src=10.0.0.2,dst=10.0.0.1,sport=8080,dport=47320),zone=65520,mark=1,labels=0x5,protoinfo=(state=SYN_SENT)"},
		{icmp, true, false, "icmp,orig=(src=10.0.0.1,dst=10.0.0.2,id=31031,type=8,code=0),reply=(src=10.0.0.2,dst=10.0.0.1,id=31031,type=0,code=0),id=0,status=0"},
		{udp, false, true, "udp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=44130,dport=5353),reply=(src=10.0.0.2,dst=10.0.0.1,sport=5353,dport=44130),timeout=3"},
	} {
		if got := tc.e.Format(tc.verbose, tc.stats); got != tc.want {
			t.Errorf("Format(%v,%v):\n got %s\nwant %s", tc.verbose, tc.stats, got, tc.want)
		}
	}
}
