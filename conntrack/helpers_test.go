package conntrack

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// Hand-built test packets: Ethernet + IPv4/IPv6 + TCP/UDP/ICMP, with correct
// checksums, so the tests control every bit the tracker reads.

const ethLen = 14

type pk struct {
	src, dst     string // IPv4 or IPv6 literal
	proto        uint8
	sport, dport uint16
	flags        uint16 // TCP
	seq, ack     uint32
	win          uint16
	opts         []byte
	payload      []byte
	icmpType     uint8
	icmpCode     uint8
	id           uint16 // ICMP query id
	fragOff      uint16 // IPv4 fragment field (flags+offset)
	v6Frag       bool   // add an IPv6 fragment header
	inner        []byte // ICMP error: the embedded IP packet
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// build returns an Ethernet frame.
func build(p pk) []byte {
	src, dst := mustAddr(p.src), mustAddr(p.dst)
	var l4 []byte
	switch p.proto {
	case protoTCP:
		optLen := (len(p.opts) + 3) &^ 3
		l4 = make([]byte, 20+optLen+len(p.payload))
		binary.BigEndian.PutUint16(l4[0:], p.sport)
		binary.BigEndian.PutUint16(l4[2:], p.dport)
		binary.BigEndian.PutUint32(l4[4:], p.seq)
		binary.BigEndian.PutUint32(l4[8:], p.ack)
		binary.BigEndian.PutUint16(l4[12:], uint16((20+optLen)/4)<<12|p.flags)
		win := p.win
		if win == 0 {
			win = 65535
		}
		binary.BigEndian.PutUint16(l4[14:], win)
		copy(l4[20:], p.opts)
		copy(l4[20+optLen:], p.payload)
	case protoUDP:
		l4 = make([]byte, 8+len(p.payload))
		binary.BigEndian.PutUint16(l4[0:], p.sport)
		binary.BigEndian.PutUint16(l4[2:], p.dport)
		binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
		copy(l4[8:], p.payload)
	case protoICMP, protoICMPv6:
		body := p.payload
		if p.inner != nil {
			body = p.inner
		}
		l4 = make([]byte, 8+len(body))
		l4[0], l4[1] = p.icmpType, p.icmpCode
		if p.inner == nil {
			binary.BigEndian.PutUint16(l4[4:], p.id)
			binary.BigEndian.PutUint16(l4[6:], 1)
		}
		copy(l4[8:], body)
	default:
		l4 = append([]byte(nil), p.payload...)
	}
	var ip []byte
	if src.Is4() {
		ip = make([]byte, 20+len(l4))
		ip[0] = 0x45
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
		binary.BigEndian.PutUint16(ip[4:], 0x1234)
		binary.BigEndian.PutUint16(ip[6:], p.fragOff)
		ip[8] = 64
		ip[9] = p.proto
		s, d := src.As4(), dst.As4()
		copy(ip[12:], s[:])
		copy(ip[16:], d[:])
		copy(ip[20:], l4)
		binary.BigEndian.PutUint16(ip[10:], checksum(ip[:20], 0))
	} else {
		ext := 0
		if p.v6Frag {
			ext = 8
		}
		ip = make([]byte, 40+ext+len(l4))
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(ext+len(l4)))
		ip[6] = p.proto
		ip[7] = 64
		s, d := src.As16(), dst.As16()
		copy(ip[8:], s[:])
		copy(ip[24:], d[:])
		if p.v6Frag {
			ip[6] = 44
			ip[40] = p.proto
			binary.BigEndian.PutUint16(ip[42:], 1) // offset 0, M=1
		}
		copy(ip[40+ext:], l4)
	}
	fixL4Csum(ip, p.proto)
	frame := make([]byte, ethLen+len(ip))
	copy(frame[0:6], []byte{0, 0, 0, 0, 0, 2})
	copy(frame[6:12], []byte{0, 0, 0, 0, 0, 1})
	if src.Is4() {
		binary.BigEndian.PutUint16(frame[12:], EthTypeIPv4)
	} else {
		binary.BigEndian.PutUint16(frame[12:], EthTypeIPv6)
	}
	copy(frame[ethLen:], ip)
	return frame
}

// ipPacket returns the IP packet of a frame (for embedding in ICMP errors).
func ipPacket(frame []byte) []byte { return append([]byte(nil), frame[ethLen:]...) }

// l4Info locates the L4 header of an IP packet built by build (no options).
func l4Info(ip []byte) (off int, proto uint8, v6 bool) {
	if ip[0]>>4 == 4 {
		return int(ip[0]&0xf) * 4, ip[9], false
	}
	if ip[6] == 44 {
		return 48, ip[40], true
	}
	return 40, ip[6], true
}

func pseudo(ip []byte, l4len int, proto uint8) uint32 {
	var sum uint32
	var a []byte
	if ip[0]>>4 == 4 {
		a = ip[12:20]
	} else {
		a = ip[8:40]
	}
	for i := 0; i < len(a); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(a[i:]))
	}
	return sum + uint32(l4len) + uint32(proto)
}

func csumField(proto uint8, v6 bool) int {
	switch proto {
	case protoTCP:
		return 16
	case protoUDP:
		return 6
	case protoICMP, protoICMPv6:
		return 2
	}
	return -1
}

func fixL4Csum(ip []byte, proto uint8) {
	off, proto, v6 := l4Info(ip)
	l4 := ip[off:]
	f := csumField(proto, v6)
	if f < 0 || f+2 > len(l4) {
		return
	}
	l4[f], l4[f+1] = 0, 0
	var init uint32
	if proto != protoICMP {
		init = pseudo(ip, len(l4), proto)
	}
	binary.BigEndian.PutUint16(l4[f:], checksum(l4, init))
}

// checkCsums fails the test if the frame's IPv4 header or L4 checksum (and,
// for an ICMP error, the embedded IPv4 header checksum) is wrong.
func checkCsums(t *testing.T, frame []byte) {
	t.Helper()
	ip := frame[ethLen:]
	off, proto, v6 := l4Info(ip)
	if !v6 && checksum(ip[:20], 0) != 0 {
		t.Errorf("bad IPv4 header checksum")
	}
	l4 := ip[off:]
	var init uint32
	if proto != protoICMP {
		init = pseudo(ip, len(l4), proto)
	}
	if csumField(proto, v6) >= 0 && checksum(l4, init) != 0 {
		t.Errorf("bad %s checksum", protoName(proto))
	}
	if (proto == protoICMP || proto == protoICMPv6) && len(l4) >= 28 && l4[8]>>4 == 4 {
		if checksum(l4[8:28], 0) != 0 {
			t.Errorf("bad embedded IPv4 header checksum")
		}
	}
}

// fakeClock is a settable Clock. now is read atomically by Now (the
// background sweeper reads it from its goroutine).
type fakeClock struct{ now int64 }

func (c *fakeClock) Now() int64              { return atomic.LoadInt64(&c.now) }
func (c *fakeClock) Advance(d time.Duration) { c.now += int64(d) }

func atomicAdvance(c *fakeClock, d time.Duration) { atomic.AddInt64(&c.now, int64(d)) }

// harness runs ct() actions on a tracker with a fake clock.
type harness struct {
	t     *testing.T
	tr    *Tracker
	clock *fakeClock
}

func newHarness(t *testing.T, cfg Config) *harness {
	clk := &fakeClock{now: int64(1000 * time.Hour)}
	cfg.Clock = clk.Now
	return &harness{t: t, tr: New(cfg), clock: clk}
}

// ct runs one ct() action on a fresh packet (md zero, as after entering the
// switch) and returns the metadata.
func (h *harness) ct(frame []byte, a Args) Meta {
	var md Meta
	h.tr.Execute(frame, ethLen, binary.BigEndian.Uint16(frame[12:]), &md, &a, h.clock.now)
	return md
}

// stateString renders ct_state like ovs-ofctl: "+new+trk".
func stateString(s uint8) string {
	names := []struct {
		b uint8
		n string
	}{{StateNew, "new"}, {StateEst, "est"}, {StateRel, "rel"}, {StateRpl, "rpl"}, {StateInv, "inv"}, {StateTracked, "trk"}, {StateSNAT, "snat"}, {StateDNAT, "dnat"}}
	out := ""
	for _, n := range names {
		if s&n.b != 0 {
			out += "+" + n.n
		}
	}
	if out == "" {
		return "0"
	}
	return out
}
