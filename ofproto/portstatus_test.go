package ofproto_test

import (
	"fmt"
	"slices"
	"testing"

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
			var g []string
			for _, m := range got[i] {
				ps, ok := m.(*wire.PortStatus)
				if !ok {
					t.Fatalf("%s: got %T", step.name, m)
				}
				g = append(g, fmt.Sprintf("%s %d %d %d", [...]string{"ADD", "DEL", "MOD"}[ps.Reason], ps.Port.PortNo, ps.Port.Config, ps.Port.State))
			}
			if !slices.Equal(g, want) {
				t.Errorf("%s: connection %d got %q, want %q", step.name, i, g, want)
			}
		}
	}
}
