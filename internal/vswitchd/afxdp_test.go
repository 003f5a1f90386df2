package vswitchd

import (
	"strings"
	"testing"

	"github.com/govs-project/govs/datapath/afxdp"
	"github.com/govs-project/govs/datapath/netnstest"
)

// Options of type=afxdp are parsed strictly: an unknown option or value
// fails with the option named.
func TestAFXDPConfigOptions(t *testing.T) {
	tests := []struct {
		name    string
		options map[string]string
		want    afxdp.Config
		wantErr string
	}{
		{"default", nil, afxdp.Config{}, ""},
		{"native", map[string]string{"xdp-mode": "native"}, afxdp.Config{Mode: afxdp.ModeNative}, ""},
		{"generic", map[string]string{"xdp-mode": "generic"}, afxdp.Config{Mode: afxdp.ModeGeneric}, ""},
		{"best-effort", map[string]string{"xdp-mode": "best-effort"}, afxdp.Config{Mode: afxdp.ModeBestEffort}, ""},
		{"zero-copy", map[string]string{"xdp-mode": "native-with-zerocopy"}, afxdp.Config{Mode: afxdp.ModeNativeZeroCopy}, ""},
		{"no need-wakeup", map[string]string{"use-need-wakeup": "false"}, afxdp.Config{NoNeedWakeup: true}, ""},
		{"one queue", map[string]string{"n_rxq": "1"}, afxdp.Config{}, ""},
		{"ring size", map[string]string{"n_rxq_desc": "2048"}, afxdp.Config{RxFrames: 2048}, ""},
		{"ring not a power of two", map[string]string{"n_rxq_desc": "1000"}, afxdp.Config{}, `options:n_rxq_desc="1000": want a power of two from 16 to 65536`},
		{"bad mode", map[string]string{"xdp-mode": "skb"}, afxdp.Config{}, `options:xdp-mode="skb": want best-effort, native, native-with-zerocopy or generic`},
		{"empty mode", map[string]string{"xdp-mode": ""}, afxdp.Config{}, `options:xdp-mode=""`},
		{"bad wakeup", map[string]string{"use-need-wakeup": "often"}, afxdp.Config{}, `options:use-need-wakeup="often": want true or false`},
		{"two queues", map[string]string{"n_rxq": "2"}, afxdp.Config{}, `options:n_rxq="2"`},
		{"unknown option", map[string]string{"vnet_hdr": "true"}, afxdp.Config{}, `afxdp option "vnet_hdr" not supported (supported: n_rxq, n_rxq_desc, use-need-wakeup, xdp-mode)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := afxdpConfig(PortConfig{Name: "p0", Type: "afxdp", Options: tc.options})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("config %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The afxdp opener binds in the mode asked for (best-effort: native on a
// veth), and its errors name the port.
func TestOpenAFXDP(t *testing.T) {
	ns := netnstest.NewNS(t)
	v := netnstest.NewVeth(t, nil, ns, netnstest.VethOptions{})
	d := New(t.TempDir(), nil)
	t.Cleanup(func() { d.Close() })
	open := d.Openers["afxdp"]
	if open == nil {
		t.Fatal("no afxdp opener")
	}
	for _, tc := range []struct {
		mode string
		want afxdp.Mode
	}{{"", afxdp.ModeNative}, {"generic", afxdp.ModeGeneric}, {"native", afxdp.ModeNative}} {
		cfg := PortConfig{Name: v.Host, Type: "afxdp", Options: map[string]string{}}
		if tc.mode != "" {
			cfg.Options["xdp-mode"] = tc.mode
		}
		p, err := open(cfg)
		if err != nil {
			t.Fatalf("xdp-mode %q: %v", tc.mode, err)
		}
		if got := p.(*afxdp.Port).Mode(); got != tc.want {
			t.Errorf("xdp-mode %q bound %s, want %s", tc.mode, got, tc.want)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := open(PortConfig{Name: v.Host, Type: "afxdp", Options: map[string]string{"xdp-mode": "fast"}})
	if err == nil || !strings.Contains(err.Error(), "afxdp port "+v.Host+": options:xdp-mode=\"fast\"") {
		t.Errorf("bad mode: %v", err)
	}
	if _, err := open(PortConfig{Name: "gvnone0", Type: "afxdp"}); err == nil || !strings.Contains(err.Error(), "gvnone0") {
		t.Errorf("missing interface: %v", err)
	}
}
