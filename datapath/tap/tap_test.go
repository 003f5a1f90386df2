package tap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/port/porttest"
)

var (
	tapMAC  = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x0a, 0x01}
	peerMAC = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x0a, 0x02}
)

// createIn creates a TAP inside ns and closes it in t.Cleanup.
func createIn(t testing.TB, ns *netnstest.NS, cfg Config) *Port {
	t.Helper()
	return porttest.OpenIn(t, ns, func() (*Port, error) { return Create(cfg) })
}

func TestCreateConfiguresDevice(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		wantName string // prefix when the kernel picks
		wantMTU  int
		wantUp   bool
	}{
		{"named, MAC, MTU, up", Config{Name: "gvtap0", MAC: tapMAC, MTU: 1450}, "gvtap0", 1450, true},
		{"kernel-chosen name, left down", Config{LeaveDown: true}, "tap", 1500, false},
		{"jumbo MTU", Config{Name: "gvtapj", MTU: 9000}, "gvtapj", 9000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := netnstest.NewNS(t)
			var p *Port
			if err := ns.Do(func() (err error) { p, err = Create(tc.cfg); return err }); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p.Name(), tc.wantName) {
				t.Errorf("name %q, want prefix %q", p.Name(), tc.wantName)
			}
			l, err := netnstest.LinkShow(ns, p.Name())
			if err != nil {
				t.Fatal(err)
			}
			if l.LinkInfo.Kind != "tun" || l.LinkInfo.Data.Type != "tap" || l.LinkInfo.Data.PI || l.LinkInfo.Data.Persist {
				t.Errorf("linkinfo = %+v, want a non-persistent tap without packet info", l.LinkInfo)
			}
			if l.MTU != tc.wantMTU || p.MTU() != tc.wantMTU {
				t.Errorf("MTU: link %d, port %d, want %d", l.MTU, p.MTU(), tc.wantMTU)
			}
			if l.HasFlag("UP") != tc.wantUp {
				t.Errorf("flags %v, want UP=%v", l.Flags, tc.wantUp)
			}
			if tc.cfg.MAC != nil && l.Address != tc.cfg.MAC.String() {
				t.Errorf("address %s, want %s", l.Address, tc.cfg.MAC)
			}
			if l.Address != p.HardwareAddr().String() || l.Ifindex != p.Ifindex() {
				t.Errorf("port reports %s ifindex %d, link has %s ifindex %d", p.HardwareAddr(), p.Ifindex(), l.Address, l.Ifindex)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := netnstest.LinkShow(ns, p.Name()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("device still there after Close: %v", err)
			}
		})
	}
}

func TestCreateErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"name too long", Config{Name: "averyveryverylongname"}, "longer than 15 bytes"},
		{"bad MAC", Config{MAC: net.HardwareAddr{1, 2, 3}}, "not a 6-byte Ethernet address"},
		{"multicast MAC", Config{MAC: net.HardwareAddr{1, 0, 0x5e, 0, 0, 1}}, "SIOCSIFHWADDR"},
		{"MTU too small", Config{MTU: 10}, "SIOCSIFMTU"},
	}
	ns := netnstest.NewNS(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p *Port
			err := ns.Do(func() (err error) { p, err = Create(tc.cfg); return err })
			if err == nil {
				p.Close()
				t.Fatalf("Create succeeded, want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
	// Failed creations left no device behind.
	if out := ns.MustExec(t, "ip", "-o", "link", "show", "type", "tun"); strings.TrimSpace(out) != "" {
		t.Errorf("devices left after failed Create: %s", out)
	}
}

// The host stack resolving an address behind the TAP sends an ARP request
// out of it, which the switch reads.
func TestReadFromKernel(t *testing.T) {
	ns, p := addressedTap(t, "gvtap1", "10.253.0.1/24")
	if err := ns.Do(func() error {
		c, err := net.Dial("udp4", "10.253.0.2:9")
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("hello"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := arp(1, tapMAC, net.IPv4(10, 253, 0, 1), nil, net.IPv4(10, 253, 0, 2))
	copy(want[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	got := readUntil(t, p, func(f []byte) bool { return binary.BigEndian.Uint16(f[12:]) == 0x0806 })
	if !bytes.Equal(got, want) {
		t.Errorf("ARP request\n got %x\nwant %x", got, want)
	}
	if st := p.Stats(); st.RxPackets < 1 || st.RxBytes < uint64(len(want)) {
		t.Errorf("stats %+v, want at least the ARP request counted", st)
	}
}

// A frame written to the TAP is received by the host stack: an ARP request
// for the TAP's address gets a reply, read back from the TAP.
func TestWriteToKernel(t *testing.T) {
	_, p := addressedTap(t, "gvtap2", "10.253.1.1/24")
	req := arp(1, peerMAC, net.IPv4(10, 253, 1, 2), nil, net.IPv4(10, 253, 1, 1))
	copy(req[0:6], tapMAC)
	frames := [][]byte{
		make([]byte, 10), // runt: dropped by the port
		req,
		make([]byte, port.MaxFrameLen(1500)+1), // too long: dropped
	}
	if n, err := p.WriteBatch(frames); n != len(frames) || err != nil {
		t.Fatalf("WriteBatch = %d, %v; want %d, nil", n, err, len(frames))
	}
	want := arp(2, tapMAC, net.IPv4(10, 253, 1, 1), peerMAC, net.IPv4(10, 253, 1, 2))
	got := readUntil(t, p, func(f []byte) bool { return binary.BigEndian.Uint16(f[12:]) == 0x0806 })
	if !bytes.Equal(got, want) {
		t.Errorf("ARP reply\n got %x\nwant %x", got, want)
	}
	if st := p.Stats(); st.TxPackets != 1 || st.TxBytes != uint64(len(req)) || st.TxDropped != 2 || st.TxErrors != 0 {
		t.Errorf("stats %+v, want 1 tx packet of %d bytes and 2 dropped", st, len(req))
	}
}

func TestWriteWhileDownDrops(t *testing.T) {
	ns := netnstest.NewNS(t)
	p := createIn(t, ns, Config{LeaveDown: true})
	f := arp(1, peerMAC, net.IPv4(10, 0, 0, 2), nil, net.IPv4(10, 0, 0, 1))
	n, err := p.WriteBatch([][]byte{f, f})
	if n != 2 || err != nil {
		t.Fatalf("WriteBatch on a down TAP = %d, %v; want 2, nil", n, err)
	}
	if st := p.Stats(); st.TxDropped != 2 || st.TxPackets != 0 {
		t.Errorf("stats %+v, want 2 dropped", st)
	}
}

func TestReadTimeoutAndClose(t *testing.T) {
	ns := netnstest.NewNS(t)
	p := createIn(t, ns, Config{ReadTimeout: 20 * time.Millisecond, LeaveDown: true})
	b := port.NewBatch(4)
	if n, err := p.ReadBatch(b); n != 0 || err != nil {
		t.Fatalf("idle ReadBatch = %d, %v; want 0, nil", n, err)
	}

	var blocking *Port
	if err := ns.Do(func() (err error) { blocking, err = Create(Config{LeaveDown: true}); return err }); err != nil {
		t.Fatal(err)
	}
	porttest.CloseWakesReader(t, blocking, make([]byte, 60))
}

// addressedTap creates a TAP called name with tapMAC and IPv4 address
// addr (IPv6 off, so only the test's traffic crosses it) in a fresh netns.
func addressedTap(t *testing.T, name, addr string) (*netnstest.NS, *Port) {
	ns := netnstest.NewNS(t)
	p := createIn(t, ns, Config{Name: name, MAC: tapMAC, ReadTimeout: 50 * time.Millisecond})
	ns.MustExec(t, "ip", "addr", "add", addr, "dev", p.Name())
	netnstest.DisableIPv6(t, ns, p.Name())
	return ns, p
}

// readUntil reads frames until match accepts one and returns a copy.
func readUntil(t testing.TB, p port.Port, match func([]byte) bool) []byte {
	t.Helper()
	b := port.NewBatch(8)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		n, err := p.ReadBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range b.Frames[:n] {
			if match(f) {
				return append([]byte(nil), f...)
			}
		}
	}
	t.Fatal("expected frame not read within 3s")
	return nil
}

// arp builds an Ethernet+ARP frame (42 bytes, as the kernel sends it on a
// TAP: no padding) from sha/spa to tha/tpa; dst is tha (or zero).
func arp(op uint16, sha net.HardwareAddr, spa net.IP, tha net.HardwareAddr, tpa net.IP) []byte {
	f := make([]byte, 42)
	copy(f[0:6], tha)
	copy(f[6:12], sha)
	binary.BigEndian.PutUint16(f[12:], 0x0806)
	binary.BigEndian.PutUint16(f[14:], 1)      // Ethernet
	binary.BigEndian.PutUint16(f[16:], 0x0800) // IPv4
	f[18], f[19] = 6, 4
	binary.BigEndian.PutUint16(f[20:], op)
	copy(f[22:28], sha)
	copy(f[28:32], spa.To4())
	copy(f[32:38], tha)
	copy(f[38:42], tpa.To4())
	return f
}
