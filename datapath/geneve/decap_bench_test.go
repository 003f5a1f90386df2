package geneve

import (
	"net/netip"
	"testing"
	"unsafe"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/tunnel"
	"github.com/govs-project/govs/tunnel/tunneltest"
	"golang.org/x/sys/unix"
)

// BenchmarkDecap is the receive path after recvmmsg: a batch of 64
// datagrams as the kernel left them (source address, Geneve header, a
// 60-byte frame) decapsulated into frames and metadata, the port of each
// looked up. One op is one datagram. No system call is timed, so it
// shows the per-datagram cost of decap and demultiplexing alone.
func BenchmarkDecap(b *testing.B) {
	ns := netnstest.NewNS(b)
	var p *Port
	if err := ns.Do(func() (err error) {
		p, err = Open(Config{LocalIP: netip.MustParseAddr("127.0.0.1")})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	benchDecap(b, p)
}

// benchDecap times p.decapBatch over batches of datagrams from 127.0.0.2.
func benchDecap(b *testing.B, p *Port) {
	const n = 64
	batch := port.NewBatch(n)
	md := make([]tunnel.Metadata, n)
	dgram := append([]byte{0, 0, 0x65, 0x58, 0, 0, 7, 0}, tunneltest.SeedFrame(b)...)
	fill := func() {
		for i := 0; i < n; i++ {
			buf := batch.Buffer(i, p.rxBufLen)
			copy(buf, dgram)
			p.rxHdrs[i].Len = uint32(len(dgram))
			p.rxHdrs[i].Hdr.Flags = 0
			p.rxHdrs[i].Hdr.Controllen = 0
			// As an AF_INET socket (p's, bound to 127.0.0.1) reports it.
			sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&p.rxNames[i]))
			sa.Family = unix.AF_INET
			sa.Addr = [4]byte{127, 0, 0, 2}
		}
	}
	fill()
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += n {
		if got := p.decapBatch(batch, md, n); got != n {
			b.Fatalf("decapsulated %d of %d", got, n)
		}
	}
}
