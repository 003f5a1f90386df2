package porttest

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
)

// TestEtherType is the IEEE "local experimental" EtherType: nothing in the
// kernel reacts to it.
const TestEtherType = 0x88b5

// Rig is a veth pair with the host end in the test's namespace, attached
// to a port of kind P, and a raw socket on the peer end in a fresh netns.
type Rig[P port.Port] struct {
	NS   *netnstest.NS
	Veth *netnstest.Veth
	Port P
	Peer *netnstest.RawSocket
}

// NewRig builds a Rig whose veth ends get hostMAC and peerMAC unless opts
// names others; open opens the port on the host end, closed in t.Cleanup.
func NewRig[P port.Port](t testing.TB, opts netnstest.VethOptions, hostMAC, peerMAC net.HardwareAddr, open func(ifname string) (P, error)) *Rig[P] {
	t.Helper()
	ns := netnstest.NewNS(t)
	if opts.HostMAC == nil {
		opts.HostMAC = hostMAC
	}
	if opts.PeerMAC == nil {
		opts.PeerMAC = peerMAC
	}
	v := netnstest.NewVeth(t, nil, ns, opts)
	WaitUp(t, v)
	p := OpenIn(t, nil, func() (P, error) { return open(v.Host) })
	return &Rig[P]{NS: ns, Veth: v, Port: p, Peer: netnstest.NewRawSocket(t, ns, v.Peer)}
}

// WaitUp waits until both ends of v are operationally up. The kernel
// turns a link's queueing on from its link-watch work, which may run up
// to a second after the carrier came (later on a busy machine); until
// then frames sent into the link are dropped without an error.
func WaitUp(t testing.TB, v *netnstest.Veth) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, end := range []struct {
		ns   *netnstest.NS
		name string
	}{{v.HostNS, v.Host}, {v.PeerNS, v.Peer}} {
		for {
			l, err := netnstest.LinkShow(end.ns, end.name)
			if err != nil {
				t.Fatal(err)
			}
			if l.OperState == "UP" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is %s after 10s, want UP", end.name, l.OperState)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// OpenIn runs open inside ns (nil: the test's namespace), fails the test
// on an error and closes the port in t.Cleanup.
func OpenIn[P port.Port](t testing.TB, ns *netnstest.NS, open func() (P, error)) P {
	t.Helper()
	var p P
	err := ns.Do(func() (err error) {
		p, err = open()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return p
}

// TestFrame builds an Ethernet frame of total length n whose payload starts
// with a 4-byte sequence number, so frames can be told apart.
func TestFrame(dst, src net.HardwareAddr, seq uint32, n int) []byte {
	f := make([]byte, max(n, 14))
	copy(f, dst)
	copy(f[6:], src)
	binary.BigEndian.PutUint16(f[12:], TestEtherType)
	if n >= 18 {
		binary.BigEndian.PutUint32(f[14:], seq)
	}
	for i := 18; i < n; i++ {
		f[i] = byte(i * 7)
	}
	return f[:n]
}

// IsTest reports whether f (possibly VLAN tagged) carries TestEtherType.
func IsTest(f []byte) bool {
	if len(f) < 14 {
		return false
	}
	et := binary.BigEndian.Uint16(f[12:])
	if (et == 0x8100 || et == 0x88a8) && len(f) >= 18 {
		et = binary.BigEndian.Uint16(f[16:])
	}
	return et == TestEtherType
}

// ReadFrames reads from p until count test frames arrived or timeout,
// copying them out of the port's memory. Frames of other EtherTypes are
// skipped.
func ReadFrames(t testing.TB, p port.Port, count int, timeout time.Duration) ([][]byte, []port.Meta) {
	t.Helper()
	b := port.NewBatch(32)
	var frames [][]byte
	var metas []port.Meta
	deadline := time.Now().Add(timeout)
	for len(frames) < count && time.Now().Before(deadline) {
		n, err := p.ReadBatch(b)
		if err != nil {
			t.Fatalf("ReadBatch: %v", err)
		}
		for i := range n {
			if IsTest(b.Frames[i]) {
				frames = append(frames, append([]byte(nil), b.Frames[i]...))
				metas = append(metas, b.Meta[i])
			}
		}
	}
	return frames, metas
}
