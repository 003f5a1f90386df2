package vswitchd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	good := `rundir: /var/run/govs
bridges:
  - name: br-int
    datapath_id: "0000c6d974e83943"
    fail_mode: secure
    listeners: ["ptcp:6653:127.0.0.1"]
    ports:
      - {name: antrea-gw0, type: internal, ofport_request: 2, mac: "4e:99:08:c1:53:be", mtu_request: 1450}
      - {name: frontend-a3ba2f, ofport_request: 49}
      - name: antrea-tun0
        type: geneve
        ofport_request: 1
        options: {remote_ip: flow, key: flow, csum: "true"}
`
	cases := []struct {
		name, yaml, wantErr string
	}{
		{"good", good, ""},
		{"unknown key", "bridges:\n  - name: br0\n    colour: blue\n", "field colour not found"},
		{"bad fail mode", "bridges:\n  - name: br0\n    fail_mode: open\n", "fail_mode"},
		{"bad port type", "bridges:\n  - name: br0\n    ports: [{name: p1, type: vxlan}]\n", "type \"vxlan\""},
		{"reserved ofport", "bridges:\n  - name: br0\n    ports: [{name: p1, ofport_request: 65534}]\n", "ofport_request 65534"},
		{"bad mac", "bridges:\n  - name: br0\n    ports: [{name: p1, mac: zz}]\n", "mac \"zz\""},
		{"long name", "bridges:\n  - name: br0\n    ports: [{name: a-very-long-port-name}]\n", "longer than 15"},
		{"duplicate port", "bridges:\n  - name: br0\n    ports: [{name: p1}, {name: p1}]\n", "listed twice"},
		{"bad dpid", "bridges:\n  - name: br0\n    datapath_id: xyz\n", "datapath_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "govs.yaml")
			os.WriteFile(f, []byte(c.yaml), 0o644)
			cfg, err := LoadConfig(f)
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				b := cfg.Bridges[0]
				if b.Name != "br-int" || len(b.Ports) != 3 || b.Ports[0].OFPortRequest != 2 || b.Ports[2].Options["remote_ip"] != "flow" {
					t.Errorf("parsed %+v", b)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("err %v, want one mentioning %q", err, c.wantErr)
			}
		})
	}
}

func TestParsePortWords(t *testing.T) {
	p, err := ParsePortWords("antrea-tun0", []string{"type=geneve", "ofport_request=1", "options:remote_ip=flow", `mac="4e:99:08:c1:53:be"`})
	if err != nil {
		t.Fatal(err)
	}
	if p.Type != "geneve" || p.OFPortRequest != 1 || p.Options["remote_ip"] != "flow" || p.MAC != "4e:99:08:c1:53:be" {
		t.Errorf("parsed %+v", p)
	}
	for _, bad := range [][]string{{"type"}, {"colour=red"}, {"ofport_request=x"}, {"mtu_request=-5"}} {
		if _, err := ParsePortWords("p1", bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
