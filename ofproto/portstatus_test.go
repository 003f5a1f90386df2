package ofproto_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/ofproto"
	"github.com/govs-project/govs/ofproto/wire"
)

// TestPortStatusLikeOVS: the port-status messages a port's life gives, in
// the order and form Open vSwitch 3.1 sends them (TestPortStatusMatchesOVS
// in internal/e2e checks the same against the real one): an added port
// is LIVE only in a MODIFY after its ADD, a lost carrier first takes LIVE
// away, a carrier back gives LIVE with the link, nothing changes nothing,
// and a change only of LIVE is not sent in 1.0, which cannot say it.
func TestPortStatusLikeOVS(t *testing.T) {
	s := newAsyncSwitch(t)
	c10, c15 := s.connect(wire.OFP10), s.connect(wire.OFP15)
	port := func(state uint32) ofproto.PortInfo {
		return ofproto.PortInfo{No: 3, Name: "p3", HWAddr: [6]byte{2, 0, 0, 0, 0, 3}, State: state}
	}
	for _, step := range []struct {
		name   string
		do     func()
		want10 []string
		want15 []string
	}{
		{"add with a carrier", func() { s.b.PortStatus(0, port(0)) }, []string{"ADD 3 0 0"}, []string{"ADD 3 0 0", "MOD 3 0 4"}},
		{"carrier lost", func() { s.b.RefreshPort(port(1)) }, []string{"MOD 3 0 1"}, []string{"MOD 3 0 0", "MOD 3 0 1"}},
		{"carrier lost again", func() { s.b.RefreshPort(port(1)) }, nil, nil},
		{"carrier back", func() { s.b.RefreshPort(port(0)) }, []string{"MOD 3 0 0"}, []string{"MOD 3 0 4"}},
		{"device down", func() { p := port(1); p.Config = 1; s.b.RefreshPort(p) }, []string{"MOD 3 1 1"}, []string{"MOD 3 0 0", "MOD 3 1 1"}},
		{"unknown port refreshed", func() { p := port(0); p.No = 9; s.b.RefreshPort(p) }, nil, nil},
		{"delete", func() { s.b.PortStatus(1, port(0)) }, []string{"DEL 3 1 1"}, []string{"DEL 3 1 1"}},
	} {
		got := s.collect(step.do, c10, c15)
		for i, want := range [][]string{step.want10, step.want15} {
			if g := portStatusText(t, got[i]); !slices.Equal(g, want) {
				t.Errorf("%s: connection %d got %q, want %q", step.name, i, g, want)
			}
		}
	}
}

// portStatusText is "REASON port config state" of each port status.
func portStatusText(t *testing.T, msgs []wire.Message) []string {
	t.Helper()
	var g []string
	for _, m := range msgs {
		ps, ok := m.(*wire.PortStatus)
		if !ok {
			t.Fatalf("got %T, want port status", m)
		}
		g = append(g, fmt.Sprintf("%s %d %d %d", [...]string{"ADD", "DEL", "MOD"}[ps.Reason], ps.Port.PortNo, ps.Port.Config, ps.Port.State))
	}
	return g
}

// onePortDP is a datapath with port 3, whose port-mods it records.
type onePortDP struct {
	fakeDP
	port ofproto.PortInfo
	mods [][2]uint32 // config, mask
}

func (d *onePortDP) Ports() []ofproto.PortInfo { return []ofproto.PortInfo{d.port} }
func (d *onePortDP) SetPortConfig(no, config, mask uint32) error {
	d.mods = append(d.mods, [2]uint32{config, mask})
	return nil
}

// TestPortModStatusLikeOVS: a port-mod is announced to every other
// controller, and to the one that sent it only from OpenFlow 1.5 on (OVS's
// compromise over EXT-338); a change the version cannot encode (NO_FLOOD
// in 1.1+) is not sent there; a port-mod that changes nothing is not
// announced; a tunnel's PORT_DOWN is not applied (OVS cannot turn a
// vport's NETDEV_UP off).
func TestPortModStatusLikeOVS(t *testing.T) {
	for _, tc := range []struct {
		name           string
		noDevice       bool
		sender         uint8
		config, mask   uint32
		want10, want13 []string
		want15         []string
		appliedMask    uint32
	}{
		{"no-packet-in from 1.3", false, wire.OFP13, 0x40, 0x40, []string{"MOD 3 64 0"}, nil, []string{"MOD 3 64 4"}, 0x40},
		{"no-packet-in from 1.5", false, wire.OFP15, 0x40, 0x40, []string{"MOD 3 64 0"}, []string{"MOD 3 64 4"}, []string{"MOD 3 64 4"}, 0x40},
		{"no-flood from 1.0", false, wire.OFP10, 0x10, 0x10, nil, nil, nil, 0x10},
		{"down from 1.5", false, wire.OFP15, 1, 1, []string{"MOD 3 1 0"}, []string{"MOD 3 1 0"}, []string{"MOD 3 1 0"}, 1},
		{"up while up", false, wire.OFP15, 0, 1, nil, nil, nil, 1},
		{"down on a tunnel", true, wire.OFP15, 1, 1, nil, nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := flowtable.NewPipeline()
			dp := &onePortDP{fakeDP: fakeDP{p}, port: ofproto.PortInfo{No: 3, Name: "p3", HWAddr: [6]byte{2, 0, 0, 0, 0, 3}, NoDevice: tc.noDevice}}
			s := &asyncSwitch{t, p, ofproto.NewBridge(dp, nil)}
			clients := map[uint8]*oftest.Client{}
			for _, v := range []uint8{wire.OFP10, wire.OFP13, wire.OFP15} {
				clients[v] = s.connect(v)
			}
			sender := clients[tc.sender]
			others := []*oftest.Client{sender}
			for _, v := range []uint8{wire.OFP10, wire.OFP13, wire.OFP15} {
				if v != tc.sender {
					others = append(others, clients[v])
				}
			}
			got := s.collect(func() {
				s.write(sender, 7, &wire.PortMod{PortNo: 3, HWAddr: dp.port.HWAddr, Config: tc.config, Mask: tc.mask})
			}, others...)
			byVersion := map[uint8][]string{}
			for i, c := range others {
				byVersion[c.Version] = portStatusText(t, got[i])
			}
			for v, want := range map[uint8][]string{wire.OFP10: tc.want10, wire.OFP13: tc.want13, wire.OFP15: tc.want15} {
				if v == tc.sender && v < wire.OFP15 {
					want = nil
				}
				if !slices.Equal(byVersion[v], want) {
					t.Errorf("version %d got %q, want %q", v, byVersion[v], want)
				}
			}
			if len(dp.mods) != 1 || dp.mods[0][1] != tc.appliedMask {
				t.Errorf("datapath port-mods %v, want mask %#x", dp.mods, tc.appliedMask)
			}
		})
	}
}

// TestPortFeaturesStatusLikeOVS: a change of a port's features (a speed
// set on the device, read at a link notification) is one MODIFY, as
// ofport_equal compares them; 1.0 gets its own bits (medium and
// autonegotiation four down) and no speeds, and nothing when the change is
// one it cannot encode (40 Gb/s).
func TestPortFeaturesStatusLikeOVS(t *testing.T) {
	s := newAsyncSwitch(t)
	c10, c15 := s.connect(wire.OFP10), s.connect(wire.OFP15)
	port := func(f ofproto.PortFeatures) ofproto.PortInfo {
		return ofproto.PortInfo{No: 3, Name: "p3", HWAddr: [6]byte{2, 0, 0, 0, 0, 3}, Features: f}
	}
	oneGBHD := ofproto.PortFeatures{Curr: 1<<4 | 1<<11, Supported: 1<<4 | 1<<5, CurrSpeed: 1000000, MaxSpeed: 1000000}
	hundredAuto := ofproto.PortFeatures{Curr: 1<<3 | 1<<11 | 1<<13, Advertised: 1 << 14, CurrSpeed: 100000}
	copper := ofproto.PortFeatures{Curr: 1 << 11}
	forty := ofproto.PortFeatures{Curr: 1<<7 | 1<<11, CurrSpeed: 40000000}
	s.collect(func() { s.b.PortStatus(0, port(oneGBHD)) }, c10, c15)
	for _, step := range []struct {
		name           string
		f              ofproto.PortFeatures
		want10, want15 [][6]uint32
	}{
		{"same features", oneGBHD, nil, nil},
		{"100 Mb/s with autonegotiation", hundredAuto,
			[][6]uint32{{1<<3 | 1<<7 | 1<<9, 1 << 10, 0, 0, 0, 0}},
			[][6]uint32{{1<<3 | 1<<11 | 1<<13, 1 << 14, 0, 0, 100000, 0}}},
		{"speed unknown", copper, [][6]uint32{{1 << 7, 0, 0, 0, 0, 0}}, [][6]uint32{{1 << 11, 0, 0, 0, 0, 0}}},
		{"40 Gb/s (not in 1.0)", forty, nil, [][6]uint32{{1<<7 | 1<<11, 0, 0, 0, 40000000, 0}}},
	} {
		got := s.collect(func() { s.b.RefreshPort(port(step.f)) }, c10, c15)
		for i, want := range [][][6]uint32{step.want10, step.want15} {
			var g [][6]uint32
			for _, m := range got[i] {
				p := m.(*wire.PortStatus).Port
				g = append(g, [6]uint32{p.Curr, p.Advertised, p.Supported, p.Peer, p.CurrSpeed, p.MaxSpeed})
			}
			if !slices.Equal(g, want) {
				t.Errorf("%s: connection %d got %+v, want %+v", step.name, i, g, want)
			}
		}
	}
}
