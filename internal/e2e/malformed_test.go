package e2e

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/internal/ovstest"
	"github.com/govs-project/govs/ofproto/wire"
)

// TestMalformedLikeOVS sends the same malformed OpenFlow 1.3 requests to
// govs and to Open vSwitch: both answer with the same error type and code,
// and both keep the connection up.
func TestMalformedLikeOVS(t *testing.T) {
	n := startNode(t)
	n.mustRun("add-br", "br-int")
	o := ovstest.Start(t, ovstest.Options{})
	targets := map[string]string{
		"govs": filepath.Join(n.rundir, "br-int.mgmt"),
		"OVS":  strings.TrimPrefix(o.Target(), "unix:"),
	}
	for _, m := range oftest.MalformedRequests() {
		t.Run(m.Name, func(t *testing.T) {
			got := map[string][2]uint16{}
			quoted := map[string]string{}
			for name, path := range targets {
				c, err := oftest.Dial(path, wire.OFP13)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				defer c.NC.Close()
				if err := c.Send(m.Type, 0x4242, m.Body); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				body, err := c.ErrorBody(0x4242)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got[name] = [2]uint16{binary.BigEndian.Uint16(body), binary.BigEndian.Uint16(body[2:])}
				quoted[name] = fmt.Sprintf("%x", body[4:])
				if err := c.Alive(); err != nil {
					t.Errorf("%s: connection dead after the bad request: %v", name, err)
				}
			}
			if got["govs"] != got["OVS"] {
				t.Errorf("govs answered type %d code %d, Open vSwitch type %d code %d",
					got["govs"][0], got["govs"][1], got["OVS"][0], got["OVS"][1])
			}
			// OVS quotes the whole request (ofperr_encode_reply).
			if quoted["govs"] != quoted["OVS"] {
				t.Errorf("error data differ:\ngovs %s\nOVS  %s", quoted["govs"], quoted["OVS"])
			}
		})
	}
}
