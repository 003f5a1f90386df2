package e2e

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/ofproto/wire"
)

// TestDaemonConfigAndPortStatus: govs-vswitchd builds the bridges and ports
// of its YAML file at start, and a controller connected to the management
// socket is told about ports added (then LIVE) and removed at run time
// (OFPT_PORT_STATUS).
func TestDaemonConfigAndPortStatus(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "govs.yaml")
	os.WriteFile(cfg, []byte(`bridges:
  - name: br-cfg
    datapath_id: "00000000000000ab"
    ports:
      - {name: gcfg0, type: internal, ofport_request: 7, mac: "02:00:00:00:00:07", mtu_request: 1400}
`), 0o644)
	n := startNode(t, "--config", cfg)
	show := n.mustRun("show")
	for _, want := range []string{"Bridge br-cfg", "datapath_id: 00000000000000ab", "Port gcfg0", "ofport: 7", "type: internal", `mac: "02:00:00:00:00:07"`} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	if out := n.ns.MustExec(t, "ip", "link", "show", "gcfg0"); !strings.Contains(out, "mtu 1400") {
		t.Errorf("internal port MTU: %s", out)
	}
	var c *oftest.Client
	err := n.ns.Do(func() error {
		var err error
		c, err = oftest.Dial(filepath.Join(n.rundir, "br-cfg.mgmt"), wire.OFP13)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.NC.Close()
	// The management socket is a service connection: like OVS, govs
	// sends it asynchronous messages only once it sets a miss_send_len.
	sendMsg(t, c, 1, &wire.SwitchConfig{MissSendLen: 128})
	if err := c.Alive(); err != nil { // the bridge registers the connection on its first request
		t.Fatal(err)
	}
	pod := n.addPod(t, "10.233.0.1/24", "")
	n.mustRun("add-port", "br-cfg", pod.veth.Host, "ofport_request=12")
	n.mustRun("del-port", "br-cfg", pod.veth.Host)
	var reasons []uint8
	for len(reasons) < 3 {
		h, body, err := c.Recv()
		if err != nil {
			t.Fatalf("waiting for port-status: %v (got %v)", err, reasons)
		}
		if h.Type != wire.OFPT_PORT_STATUS {
			continue
		}
		if no := binary.BigEndian.Uint32(body[8:]); no != 12 {
			t.Errorf("port-status for port %d, want 12", no)
		}
		reasons = append(reasons, body[0])
	}
	// As from OVS: the port is added not yet LIVE, a MODIFY makes it LIVE
	// (1.1+), then it is deleted.
	if reasons[0] != 0 || reasons[1] != 2 || reasons[2] != 1 { // OFPPR_ADD, OFPPR_MODIFY, OFPPR_DELETE
		t.Errorf("port-status reasons %v, want [0 2 1] (add, modify, delete)", reasons)
	}
}
