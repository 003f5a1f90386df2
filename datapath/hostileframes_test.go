package datapath

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"
)

// hostileFrames derives malformed frames from a valid IPv4/TCP frame:
// runts, jumbos, bad IHLs and IPv4 lengths, bad TCP data offsets,
// fragments, VLAN stacks, IPv6 extension-header chains and noise.
func hostileFrames(rng *rand.Rand, good []byte) [][]byte {
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

// TestHostileFrames sends malformed frames at full rate into the frontend
// port of worker 1's seed pipeline (with conntrack) while an established
// frontend -> backend1 connection keeps sending: every legitimate segment
// must come out of backend1's port, and the loop must survive (issue 15).
func TestHostileFrames(t *testing.T) {
	br, ps, data := establishedBridge(t, true)
	in, out := ps[portFrontend], ps[portBackend1]
	out.Sent() // the handshake
	// The segment as the pipeline forwards it.
	inject(t, br, ps, portFrontend, data)
	fwd := out.Sent()
	if len(fwd) != 1 {
		t.Fatalf("legitimate segment: backend1 sent %d frames, want 1", len(fwd))
	}
	want := fwd[0]
	rng := rand.New(rand.NewPCG(15, 8))
	var hostile [][]byte
	for _, f := range hostileFrames(rng, data) {
		if !bytes.Equal(f, data) { // an IHL of 5 changes nothing, for one
			hostile = append(hostile, f)
		}
	}
	if len(hostile) < 200 {
		t.Fatalf("only %d hostile frames", len(hostile))
	}
	const rounds, legitEvery = 200, 16
	start := time.Now()
	legit, sentHostile := 0, 0
	batch := make([][]byte, 0, len(hostile)+len(hostile)/legitEvery+1)
	for r := 0; r < rounds; r++ {
		batch = batch[:0]
		for i, f := range hostile {
			batch = append(batch, f)
			if i%legitEvery == 0 {
				batch = append(batch, data)
				legit++
			}
		}
		sentHostile += len(hostile)
		for len(batch) > 0 { // within the port's receive queue
			n := min(len(batch), 512)
			inject(t, br, ps, portFrontend, batch[:n]...)
			batch = batch[n:]
		}
	}
	elapsed := time.Since(start)
	got := 0
	for _, f := range out.Sent() {
		if bytes.Equal(f, want) {
			got++
		}
	}
	if got != legit {
		t.Errorf("backend1 forwarded %d of %d legitimate segments sent among the hostile frames", got, legit)
	}
	if st := in.Stats(); st.RxPackets < uint64(sentHostile+legit) {
		t.Errorf("frontend port received %d frames, want %d", st.RxPackets, sentHostile+legit)
	}
	t.Logf("%d hostile frames (%d kinds) and %d legitimate segments in %v (%.0f frames/s); all %d legitimate segments forwarded",
		sentHostile, len(hostile), legit, elapsed.Round(time.Millisecond), float64(sentHostile+legit)/elapsed.Seconds(), got)
}
