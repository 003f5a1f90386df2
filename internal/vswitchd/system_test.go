package vswitchd

import (
	"strings"
	"testing"

	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port"
)

// System ports follow the daemon's UserspaceTSO unless options:vnet_hdr
// says otherwise, and reject options they do not know.
func TestOpenSystemVnetOption(t *testing.T) {
	ns := netnstest.NewNS(t)
	v := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{})
	tests := []struct {
		name     string
		tso      bool
		options  map[string]string
		wantVnet bool
		wantErr  string
	}{
		{"default", false, nil, false, ""},
		{"userspace tso", true, nil, true, ""},
		{"option on", false, map[string]string{"vnet_hdr": "true"}, true, ""},
		{"option off overrides", true, map[string]string{"vnet_hdr": "false"}, false, ""},
		{"bad value", false, map[string]string{"vnet_hdr": "maybe"}, false, `options:vnet_hdr="maybe": want true or false`},
		{"unknown option", false, map[string]string{"remote_ip": "flow"}, false, `option "remote_ip" not supported`},
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
			if got := p.(*afpacket.Port).VnetEnabled(); got != tc.wantVnet {
				t.Errorf("vnet = %v, want %v", got, tc.wantVnet)
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
	if _, err := d.openInternal(PortConfig{Name: "x", Options: map[string]string{"csum": "true"}}); err == nil || !strings.Contains(err.Error(), `internal port x: option "csum" not supported`) {
		t.Errorf("unknown option: err = %v", err)
	}
}
