package afxdp

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/port/porttest"
)

// xdpModes are the attach modes that bind on a veth. Every I/O test runs
// in both: they differ in where the kernel runs the program (the veth's
// NAPI poll on an xdp_buff, or the core stack on the skb).
var xdpModes = []Mode{ModeNative, ModeGeneric}

func forEachMode(t *testing.T, cfg Config, fn func(t *testing.T, cfg Config)) {
	for _, m := range xdpModes {
		t.Run(string(m), func(t *testing.T) {
			c := cfg
			c.Mode = m
			fn(t, c)
		})
	}
}

// kind is AF_XDP to the port conformance suite and the shared benchmarks:
// every check runs in both attach modes. AF_XDP reports no per-frame
// metadata; the load port of the benchmarks is an afpacket port.
var kind = porttest.Kind[*Port]{
	HostMAC:  net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x02, 0x01},
	PeerMAC:  net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x02, 0x02},
	Variants: modeVariants(),
	NoMeta:   true,
	Load: func(ifname string) (port.Port, error) {
		return afpacket.Open(ifname, afpacket.Config{NoPromisc: true, FrameCount: 8})
	},
}

func TestConformance(t *testing.T) { porttest.Run(t, kind) }

var hostMAC, peerMAC = kind.HostMAC, kind.PeerMAC

// newRig opens an AF_XDP port with cfg on a veth pair.
func newRig(t testing.TB, cfg Config, opts netnstest.VethOptions) *porttest.Rig[*Port] {
	t.Helper()
	return kind.Rig(t, opts, func(name string) (*Port, error) { return Open(name, cfg) })
}

// modeVariants open a port in each of xdpModes, failing when it bound
// in another mode; o.RxFrames is Config.RxFrames.
func modeVariants() []porttest.Variant[*Port] {
	var vs []porttest.Variant[*Port]
	for _, m := range xdpModes {
		vs = append(vs, porttest.Variant[*Port]{Name: string(m), Open: func(ifname string, o porttest.Opts) (*Port, error) {
			p, err := Open(ifname, Config{Mode: m, ReadTimeout: o.ReadTimeout, BusyPoll: o.BusyPoll, NoPromisc: o.NoPromisc, RxFrames: o.RxFrames})
			if err == nil && p.Mode() != m {
				p.Close()
				return nil, fmt.Errorf("bound in %s mode, asked %s", p.Mode(), m)
			}
			return p, err
		}})
	}
	return vs
}

// Far more frames than there are TX frames in the UMEM go out: the
// CompletionRing gives every frame back for reuse, and none is lost.
func TestSendReusesTxFrames(t *testing.T) {
	forEachMode(t, Config{TxFrames: 16}, func(t *testing.T, cfg Config) {
		r := newRig(t, cfg, netnstest.VethOptions{})
		const total = 2000
		batch := make([][]byte, 50)
		for i := 0; i < total; i += len(batch) {
			for j := range batch {
				batch[j] = porttest.TestFrame(peerMAC, hostMAC, uint32(i+j), 60)
			}
			if n, err := r.Port.WriteBatch(batch); err != nil || n != len(batch) {
				t.Fatalf("WriteBatch at %d = %d, %v", i, n, err)
			}
		}
		st := r.Port.Stats()
		if st.TxPackets != total || st.TxDropped != 0 || st.TxErrors != 0 {
			t.Errorf("stats = %+v, want %d sent, no drops or errors", st, total)
		}
		r.Port.TxMu.Lock()
		r.Port.reclaim()
		free := len(r.Port.txFree)
		r.Port.TxMu.Unlock()
		if free != cfg.TxFrames {
			t.Errorf("%d of %d TX frames free after the sends completed", free, cfg.TxFrames)
		}
	})
}

// What binds on a veth: native and generic XDP in copy mode, best-effort
// picks native, zero-copy is refused with a clear error. While a port is
// open the interface shows the program, afterwards it does not.
func TestModesOnVeth(t *testing.T) {
	ns := netnstest.NewNS(t)
	v := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{})
	for _, tc := range []struct {
		mode     Mode
		bound    Mode
		linkWord string // in `ip link show`
		err      string
	}{
		{ModeNative, ModeNative, "xdp ", ""},
		{ModeGeneric, ModeGeneric, "xdpgeneric", ""},
		{ModeBestEffort, ModeNative, "xdp ", ""},
		{"", ModeNative, "xdp ", ""},
		{ModeNativeZeroCopy, "", "", "bind queue 0 in zero-copy"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			p, err := Open(v.Host, Config{Mode: tc.mode})
			if tc.err != "" {
				if err == nil {
					p.Close()
					t.Fatalf("Open succeeded, want error %q", tc.err)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %q does not contain %q", err, tc.err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if p.Mode() != tc.bound || p.ZeroCopy() {
					t.Errorf("bound %s zero-copy %v, want %s in copy mode", p.Mode(), p.ZeroCopy(), tc.bound)
				}
				out := netnstest.MustRun(t, "ip", "link", "show", v.Host)
				if !strings.Contains(out, tc.linkWord) {
					t.Errorf("ip link show lacks %q while open:\n%s", tc.linkWord, out)
				}
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
			}
			// The program is gone (also after a failed Open): the next
			// mode can attach.
			if out := netnstest.MustRun(t, "ip", "link", "show", v.Host); strings.Contains(out, "xdp") {
				t.Errorf("XDP program still attached after Close:\n%s", out)
			}
		})
	}
}

// best-effort falls back to generic XDP where the driver refuses native:
// loopback has no XDP support in its driver.
func TestBestEffortFallsBackToGeneric(t *testing.T) {
	ns := netnstest.NewNS(t)
	ns.MustExec(t, "ip", "link", "set", "lo", "mtu", "1500")
	var p *Port
	err := ns.Do(func() (err error) {
		p, err = Open("lo", Config{NoPromisc: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Mode() != ModeGeneric {
		t.Errorf("best-effort on lo bound %s, want generic", p.Mode())
	}
	err = ns.Do(func() error {
		q, err := Open("lo", Config{Mode: ModeNative, NoPromisc: true})
		if err == nil {
			q.Close()
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "native mode") {
		t.Errorf("native on lo: %v, want an attach error naming native mode", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ns := netnstest.NewNS(t)
	jumbo := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{MTU: 9000})
	porttest.OpenErrors(t, Open, []porttest.OpenError[Config]{
		{Name: "unknown mode", Ifname: "lo", Cfg: Config{Mode: "turbo"}, Want: `xdp-mode "turbo": want best-effort, native, native-with-zerocopy or generic`},
		{Name: "rx frames not power of two", Ifname: "lo", Cfg: Config{RxFrames: 100}, Want: "rx frames 100: want a power of two"},
		{Name: "negative tx frames", Ifname: "lo", Cfg: Config{TxFrames: -1}, Want: "tx frames -1"},
		{Name: "frame size", Ifname: "lo", Cfg: Config{FrameSize: 3000}, Want: "frame size 3000: want 2048 or 4096"},
		{Name: "MTU beyond a frame", Ifname: jumbo.Host, Want: "MTU 9000 needs 9022-byte frames, a 4096-byte UMEM frame holds 3840"},
		{Name: "MTU beyond a small frame", Ifname: jumbo.Host, Cfg: Config{FrameSize: 2048}, Want: "a 2048-byte UMEM frame holds 1792"},
	})
}

// An MTU up to 1792 fits 2048-byte UMEM frames.
func TestSmallMTUUsesHalfPageFrames(t *testing.T) {
	r := newRig(t, Config{}, netnstest.VethOptions{MTU: 1400})
	if r.Port.frameSize != 2048 {
		t.Errorf("MTU 1400 got %d-byte UMEM frames, want 2048", r.Port.frameSize)
	}
}

// A frame size that holds MTU 3000 needs 4096-byte UMEM frames; the
// frames still arrive whole (generic mode: native XDP on veth refuses an
// MTU that large for a program without multi-buffer support).
func TestLargeMTUUsesPageFrames(t *testing.T) {
	r := newRig(t, Config{Mode: ModeGeneric, ReadTimeout: 20 * time.Millisecond}, netnstest.VethOptions{MTU: 3000})
	if r.Port.frameSize != 4096 {
		t.Fatalf("MTU 3000 got %d-byte UMEM frames, want 4096", r.Port.frameSize)
	}
	want := porttest.TestFrame(hostMAC, peerMAC, 1, 3014)
	if err := r.Peer.Send(want); err != nil {
		t.Fatal(err)
	}
	got, _ := porttest.ReadFrames(t, r.Port, 1, 3*time.Second)
	if len(got) != 1 || !bytes.Equal(got[0], want) {
		t.Fatalf("got %d frames, want the one 3014-byte frame", len(got))
	}
	if n, err := r.Port.WriteBatch([][]byte{porttest.TestFrame(peerMAC, hostMAC, 2, 3014)}); n != 1 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	if f, err := r.Peer.RecvMatch(2*time.Second, porttest.IsTest); err != nil || len(f) != 3014 {
		t.Fatalf("peer got %d bytes, %v", len(f), err)
	}
}
