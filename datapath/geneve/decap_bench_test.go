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
	pktinfo := make([]byte, unix.CmsgSpace(unix.SizeofInet4Pktinfo))
	cm := (*unix.Cmsghdr)(unsafe.Pointer(&pktinfo[0]))
	cm.Level, cm.Type = unix.IPPROTO_IP, unix.IP_PKTINFO
	cm.SetLen(unix.CmsgLen(unix.SizeofInet4Pktinfo))
	info := (*unix.Inet4Pktinfo)(unsafe.Pointer(&pktinfo[unix.CmsgLen(0)]))
	info.Ifindex, info.Addr = 1, [4]byte{127, 0, 0, 1}
	fill := func() {
		for i := 0; i < n; i++ {
			buf := batch.Buffer(i, p.rxBufLen)
			copy(buf, dgram)
			p.rxHdrs[i].Len = uint32(len(dgram))
			p.rxHdrs[i].Hdr.Flags = 0
			// As the dual-stack socket reports it: a v4-mapped
			// sender and the destination in IP_PKTINFO.
			p.rxNames[i] = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: netip.MustParseAddr("::ffff:127.0.0.2").As16()}
			p.rxHdrs[i].Hdr.SetControllen(len(pktinfo))
			copy(p.rxCtl[i][:], pktinfo)
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
