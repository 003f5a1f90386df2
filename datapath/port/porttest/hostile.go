package porttest

import (
	"encoding/binary"
	"math/rand/v2"
)

// HostileFrames derives malformed frames from a valid IPv4/TCP frame:
// runts, jumbos, bad IHLs and IPv4 lengths, bad TCP data offsets,
// fragments, VLAN stacks, IPv6 extension-header chains and noise. good
// must be an untagged Ethernet/IPv4/TCP frame with a 20-byte IP header.
// A datapath must drop or forward each without failing (issue 15).
func HostileFrames(rng *rand.Rand, good []byte) [][]byte {
	const ipOff, tcpOff = 14, 34
	var out [][]byte
	with := func(f func(b []byte) []byte) { out = append(out, f(append([]byte(nil), good...))) }
	for n := 0; n < len(good); n += 1 + n/8 { // runts and truncations
		out = append(out, append([]byte(nil), good[:n]...))
	}
	for _, n := range []int{1519, 1523, 9000, 9022, 65535} { // jumbos
		j := append(append([]byte(nil), good...), make([]byte, n-len(good))...)
		binary.BigEndian.PutUint16(j[ipOff+2:], uint16(n-ipOff))
		out = append(out, j)
	}
	for ihl := byte(0); ihl < 16; ihl++ { // bad and odd IHLs
		with(func(b []byte) []byte { b[ipOff] = 0x40 | ihl; return b })
	}
	for _, tl := range []uint16{0, 1, 19, 20, 21, 39, 41, 0xffff} { // IPv4 total lengths
		with(func(b []byte) []byte { binary.BigEndian.PutUint16(b[ipOff+2:], tl); return b })
	}
	for doff := byte(0); doff < 16; doff++ { // TCP data offsets
		with(func(b []byte) []byte { b[tcpOff+12] = doff<<4 | b[tcpOff+12]&0x0f; return b })
	}
	for _, frag := range []uint16{0x2000, 0x2001, 0x0001, 0x1fff, 0x4000 | 0x0001, 0x2000 | 0x1fff} { // fragments
		with(func(b []byte) []byte { binary.BigEndian.PutUint16(b[ipOff+6:], frag); return b })
		with(func(b []byte) []byte { // a first fragment that cuts the TCP header
			binary.BigEndian.PutUint16(b[ipOff+6:], frag)
			binary.BigEndian.PutUint16(b[ipOff+2:], 28)
			return b[:ipOff+28]
		})
	}
	for depth := 1; depth <= 12; depth++ { // VLAN stacks, with and without an end
		for _, tpid := range []uint16{0x8100, 0x88a8} {
			b := append([]byte(nil), good[:12]...)
			for i := 0; i < depth; i++ {
				b = binary.BigEndian.AppendUint16(b, tpid)
				b = binary.BigEndian.AppendUint16(b, uint16(rng.IntN(4096)))
			}
			out = append(out, append(b, good[12:]...), b)
		}
	}
	v6 := func(next byte, ext []byte) []byte { // IPv6 with extension headers
		b := append([]byte(nil), good[:12]...)
		b = append(b, 0x86, 0xdd, 0x60, 0, 0, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(len(ext)+20))
		b = append(b, next, 64)
		b = append(b, make([]byte, 32)...)
		b = append(b, ext...)
		return append(b, good[tcpOff:]...)
	}
	for n := 1; n <= 24; n += 3 {
		var ext []byte
		hdrs := []byte{0, 43, 60, 44, 51, 135}
		first := hdrs[rng.IntN(len(hdrs))]
		for i := 0; i < n; i++ {
			next := hdrs[rng.IntN(len(hdrs))]
			if i == n-1 {
				next = 6
			}
			l := rng.IntN(3)
			ext = append(ext, next, byte(l))
			ext = append(ext, make([]byte, 6+8*l)...)
		}
		out = append(out, v6(first, ext), v6(first, ext[:len(ext)/2]), v6(first, ext[:len(ext)-1]))
		bad := append([]byte(nil), ext...)
		bad[1] = 0xff // a length past the end
		out = append(out, v6(first, bad))
	}
	for i := 0; i < 64; i++ { // noise after an Ethernet header
		b := append([]byte(nil), good[:12]...)
		b = binary.BigEndian.AppendUint16(b, []uint16{0x0800, 0x86dd, 0x0806, 0x8100, 0x88a8, 0x8847}[rng.IntN(6)])
		for n := rng.IntN(200); n > 0; n-- {
			b = append(b, byte(rng.Uint32()))
		}
		out = append(out, b)
	}
	return out
}
