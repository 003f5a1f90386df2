package datapath

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand"
	"net"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/tap"
)

// TestNetnsUserspaceTSO sends TCP streams from a pod whose veth keeps its
// offloads (so the kernel hands the switch 64 KiB super-segments with
// partial checksums) through ports with offload metadata and a conntrack
// pipeline that drops +inv: to a pod on another such port the frames go
// unsegmented; to a pod on a plain port (offloads off, so its kernel
// verifies every checksum) the bridge segments them and completes the
// checksums; through a DNAT'ed service address to that pod the partial
// checksum is rewritten by NAT first. Every receiver must get every byte
// intact, with and without the megaflow cache.
func TestNetnsUserspaceTSO(t *testing.T) {
	const flows = `
table=0,arp,actions=NORMAL
table=0,ip,actions=ct(table=1,zone=5,nat)
table=1,tcp,ct_state=+new+trk,nw_dst=10.202.0.100,tp_dst=9100,actions=ct(commit,table=2,zone=5,nat(dst=10.202.0.3:9000))
table=1,ip,ct_state=+new+trk,actions=ct(commit,table=2,zone=5)
table=1,ip,ct_state=+est+trk,actions=resubmit(,2)
table=1,priority=0,actions=drop
table=2,ip,nw_dst=10.202.0.1,actions=output:1
table=2,ip,nw_dst=10.202.0.2,actions=output:2
table=2,ip,nw_dst=10.202.0.3,actions=output:3
table=2,ip,nw_dst=10.202.0.254,actions=output:4
`
	macC := net.HardwareAddr{0x02, 0x00, 0x0a, 0xca, 0x00, 0x03}
	for _, mode := range []struct {
		name          string
		cacheOff, pmd bool
	}{{"cache", false, false}, {"no cache", true, false}, {"cache and PMD", false, true}} {
		t.Run(mode.name, func(t *testing.T) {
			sw, nsA, nsB, nsC := netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t), netnstest.NewNS(t)
			va := netnstest.NewVeth(t, sw, nsA, netnstest.VethOptions{PeerAddr: "10.202.0.1/24", KeepOffloads: true})
			vb := netnstest.NewVeth(t, sw, nsB, netnstest.VethOptions{PeerAddr: "10.202.0.2/24", KeepOffloads: true})
			vc := netnstest.NewVeth(t, sw, nsC, netnstest.VethOptions{PeerAddr: "10.202.0.3/24", PeerMAC: macC})
			// The service address resolves to the endpoint's MAC, as a
			// node's proxy would arrange.
			nsA.MustExec(t, "ip", "neigh", "replace", "10.202.0.100", "lladdr", macC.String(), "dev", va.Peer, "nud", "permanent")
			b := newBridge(t, flows, true)
			b.CacheDisabled = mode.cacheOff
			b.PMD = PMDConfig{Enabled: mode.pmd, CPU: -1}
			attachVethConfig(t, b, sw, va, 1, afpacket.Config{VnetHdr: true})
			attachVethConfig(t, b, sw, vb, 2, afpacket.Config{VnetHdr: true})
			attachVeth(t, b, sw, vc, 3)
			// An internal port with offload metadata: the switch
			// namespace's own stack (a node's antrea-gw0) at .254.
			addTap(t, b, sw, 4, tap.Config{Name: netnstest.UniqueName("gvt"), VnetHdr: true}, "10.202.0.254/24")

			const size = 8 << 20
			data := make([]byte, size)
			rand.New(rand.NewSource(1)).Read(data)
			want := sha256.Sum256(data)
			for _, c := range []struct {
				name         string
				from, ns     *netnstest.NS
				listen, dial string
				in, port     uint32
			}{
				{"to an offload port", nsA, nsB, "10.202.0.2:9000", "10.202.0.2:9000", 1, 2},
				{"to a plain port", nsA, nsC, "10.202.0.3:9000", "10.202.0.3:9000", 1, 3},
				{"DNAT to a plain port", nsA, nsC, "10.202.0.3:9000", "10.202.0.100:9100", 1, 3},
				{"to an offload internal port", nsA, sw, "10.202.0.254:9000", "10.202.0.254:9000", 1, 4},
				{"from an offload internal port", sw, nsB, "10.202.0.2:9001", "10.202.0.2:9001", 4, 2},
			} {
				before := portStats(t, b)
				got := transfer(t, c.from, c.ns, c.listen, c.dial, data)
				if got != want {
					t.Fatalf("%s: received data differs (sha256 %x, want %x)", c.name, got[:8], want[:8])
				}
				after := portStats(t, b)
				rx := after[c.in].RxPackets - before[c.in].RxPackets
				rxBytes := after[c.in].RxBytes - before[c.in].RxBytes
				tx := after[c.port].TxPackets - before[c.port].TxPackets
				txBytes := after[c.port].TxBytes - before[c.port].TxBytes
				t.Logf("%s: port %d rx %d frames / %d bytes, port %d tx %d frames / %d bytes", c.name, c.in, rx, rxBytes, c.port, tx, txBytes)
				// Super-segments came in: far fewer frames than MTU-sized
				// segments would need.
				if rx == 0 || rxBytes/rx < 3000 {
					t.Errorf("%s: port %d received %d frames for %d bytes: no super-segments", c.name, c.in, rx, rxBytes)
				}
				if c.port != 3 && (tx == 0 || txBytes/tx < 3000) {
					t.Errorf("%s: port %d sent %d frames for %d bytes: super-segments were cut up", c.name, c.port, tx, txBytes)
				}
				if c.port == 3 && tx < size/1500 {
					t.Errorf("%s: port 3 sent %d frames for %d bytes: not segmented to the MTU", c.name, tx, txBytes)
				}
			}
		})
	}
}

// portStats returns the bridge's port counters by ofport.
func portStats(t *testing.T, b *Bridge) map[uint32]struct{ RxPackets, RxBytes, TxPackets, TxBytes uint64 } {
	t.Helper()
	m := map[uint32]struct{ RxPackets, RxBytes, TxPackets, TxBytes uint64 }{}
	for _, pi := range b.Ports() {
		m[pi.OFPort] = struct{ RxPackets, RxBytes, TxPackets, TxBytes uint64 }{pi.Stats.RxPackets, pi.Stats.RxBytes, pi.Stats.TxPackets, pi.Stats.TxBytes}
	}
	return m
}

// transfer sends data over TCP from a socket in from, dialing dial, to a
// listener on listen in to and returns the sha256 of what it read.
func transfer(t *testing.T, from, to *netnstest.NS, listen, dial string, data []byte) [32]byte {
	t.Helper()
	var ln net.Listener
	if err := to.Do(func() (err error) { ln, err = net.Listen("tcp4", listen); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		sum [32]byte
		n   int64
		err error
	}
	res := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			res <- result{err: err}
			return
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		h := sha256.New()
		n, err := io.Copy(h, c)
		var s [32]byte
		copy(s[:], h.Sum(nil))
		res <- result{sum: s, n: n, err: err}
	}()
	var c net.Conn
	if err := from.Do(func() (err error) {
		c, err = net.DialTimeout("tcp4", dial, 5*time.Second)
		return err
	}); err != nil {
		t.Fatalf("dial %s: %v", dial, err)
	}
	_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.Copy(c, bytes.NewReader(data)); err != nil {
		c.Close()
		t.Fatalf("send to %s: %v", dial, err)
	}
	c.Close()
	r := <-res
	if r.err != nil || r.n != int64(len(data)) {
		t.Fatalf("receive at %s: %d of %d bytes, %v", listen, r.n, len(data), r.err)
	}
	return r.sum
}
