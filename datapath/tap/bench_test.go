package tap

import (
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port/porttest"
)

// b.N counts frames: ns/op is ns per frame.
//
//	go test -run '^$' -bench . -benchmem ./datapath/tap/

func benchFrame(dst []byte, n int) []byte {
	f := make([]byte, n)
	copy(f, dst)
	copy(f[6:], peerMAC)
	f[12], f[13] = 0x88, 0xb5 // local experimental: the host stack drops it
	return f
}

// BenchmarkTapWrite: frames written into the host stack through the TAP.
func BenchmarkTapWrite(b *testing.B) {
	ns := netnstest.NewNS(b)
	p := createIn(b, ns, Config{MAC: tapMAC})
	load := make([][]byte, 32)
	for i := range load {
		load[i] = benchFrame(tapMAC, 64)
	}
	b.ReportAllocs()
	b.ResetTimer()
	porttest.SendN(b, p, load, b.N)
	b.StopTimer()
	if st := p.Stats(); st.TxDropped != 0 || st.TxErrors != 0 {
		b.Fatalf("stats %+v", st)
	}
}

// BenchmarkTapRead: draining frames the kernel queued on the TAP (sent out
// of it by an AF_PACKET port inside the namespace while the timer was
// stopped).
func BenchmarkTapRead(b *testing.B) {
	ns := netnstest.NewNS(b)
	p := createIn(b, ns, Config{MAC: tapMAC, ReadTimeout: time.Second})
	var gen *afpacket.Port
	if err := ns.Do(func() (err error) { gen, err = afpacket.Open(p.Name(), afpacket.Config{NoPromisc: true}); return err }); err != nil {
		b.Fatal(err)
	}
	defer gen.Close()
	load := make([][]byte, 32)
	for i := range load {
		load[i] = benchFrame(peerMAC, 64)
	}
	const round = 256 // below the TAP's queue limit (500)
	porttest.DrainRounds(b, p, round, func(n int) { porttest.SendN(b, gen, load, n) })
}
