package vswitchd

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
)

// System ports follow the daemon's UserspaceTSO unless options:vnet_hdr
// says otherwise, size their receive ring by options:n_rxq_desc, and
// reject options they do not know.
func TestOpenSystemOptions(t *testing.T) {
	ns := netnstest.NewNS(t)
	v := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{})
	tests := []struct {
		name       string
		tso        bool
		options    map[string]string
		wantVnet   bool
		wantFrames int // at least (the ring rounds up to whole pages)
		wantErr    string
	}{
		{"default", false, nil, false, 8192, ""},
		{"userspace tso", true, nil, true, 256, ""},
		{"option on", false, map[string]string{"vnet_hdr": "true"}, true, 256, ""},
		{"option off overrides", true, map[string]string{"vnet_hdr": "false"}, false, 8192, ""},
		{"ring size", false, map[string]string{"n_rxq_desc": "1000"}, false, 1000, ""},
		{"ring size with vnet", false, map[string]string{"n_rxq_desc": "64", "vnet_hdr": "true"}, true, 64, ""},
		{"bad value", false, map[string]string{"vnet_hdr": "maybe"}, false, 0, `options:vnet_hdr="maybe": want true or false`},
		{"ring too small", false, map[string]string{"n_rxq_desc": "8"}, false, 0, `options:n_rxq_desc="8": want a number from 16 to 65536`},
		{"ring not a number", false, map[string]string{"n_rxq_desc": "many"}, false, 0, `options:n_rxq_desc="many"`},
		{"unknown option", false, map[string]string{"remote_ip": "flow"}, false, 0, `option "remote_ip" not supported (supported: n_rxq_desc, vnet_hdr)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &Daemon{UserspaceTSO: tc.tso}
			p, err := d.openSystem(PortConfig{Name: v.Host, Options: tc.options})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ap := p.(*afpacket.Port)
			if got := ap.VnetEnabled(); got != tc.wantVnet {
				t.Errorf("vnet = %v, want %v", got, tc.wantVnet)
			}
			if got := ap.RxRingFrames(); got < tc.wantFrames || got > tc.wantFrames+64 {
				t.Errorf("ring frames = %d, want %d (rounded up to whole pages)", got, tc.wantFrames)
			}
		})
	}
}

// Internal (TAP) ports take the same option.
func TestOpenInternalVnetOption(t *testing.T) {
	ns := netnstest.NewNS(t)
	for _, tc := range []struct {
		name     string
		tso      bool
		options  map[string]string
		wantVnet bool
	}{
		{"default", false, nil, false},
		{"userspace tso", true, nil, true},
		{"option off overrides", true, map[string]string{"vnet_hdr": "false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Daemon{UserspaceTSO: tc.tso}
			var p port.Port
			err := ns.Do(func() (err error) {
				p, err = d.openInternal(PortConfig{Name: netnstest.UniqueName("gvt"), Options: tc.options})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if got := p.(port.VnetWriter).VnetEnabled(); got != tc.wantVnet {
				t.Errorf("vnet = %v, want %v", got, tc.wantVnet)
			}
		})
	}
	d := &Daemon{}
	for _, opt := range []string{"csum", "n_rxq_desc"} {
		if _, err := d.openInternal(PortConfig{Name: "x", Options: map[string]string{opt: "1024"}}); err == nil || !strings.Contains(err.Error(), `internal port x: option "`+opt+`" not supported (supported: vnet_hdr)`) {
			t.Errorf("option %s: err = %v", opt, err)
		}
	}
}

// TestReconcileInvalidatesCachesOnce: a reconfiguration that adds many
// ports costs the packet loops one cache invalidation, not one per port
// (reconcile adds no work per port to the packet path).
func TestReconcileInvalidatesCachesOnce(t *testing.T) {
	ns := netnstest.NewNS(t)
	err := ns.Do(func() error {
		runtime.LockOSThread() // the TAPs are made in this thread's namespace
		d := New(t.TempDir(), nil)
		defer d.Close()
		d.dbMode = true
		want := State{Bridges: []BridgeConfig{{Name: "brg"}}}
		d.Reconcile(want)
		dp, ok := d.Bridge("brg")
		if !ok {
			return fmt.Errorf("no bridge brg")
		}
		before := dp.Pipeline().Generation.Load()
		for i := 0; i < 50; i++ {
			want.Bridges[0].Ports = append(want.Bridges[0].Ports, PortConfig{Name: fmt.Sprintf("rg%d", i), Type: "internal"})
		}
		res := d.Reconcile(want)
		for i := 0; i < 50; i++ {
			if st := res.Ports[fmt.Sprintf("rg%d", i)]; st.Err != nil || st.OFPort <= 0 {
				return fmt.Errorf("rg%d: %+v", i, st)
			}
		}
		if bumps := dp.Pipeline().Generation.Load() - before; bumps != 1 {
			return fmt.Errorf("adding 50 ports bumped the pipeline generation %d times, want once", bumps)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
