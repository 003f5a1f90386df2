package e2e

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/internal/ovstest"
	"github.com/govs-project/govs/ofproto/wire"
)

// TestControllerMeterMatchesOVS: controller(meter_id=N) and the
// "controller" meter on govs and Open vSwitch 3.1, the same flows and
// meters, and 12 packets sent through the pipeline as fast as ovs-ofctl
// sends them (about a second): the same flows print alike in 1.0, 1.3 and
// 1.5, and the same packets reach the controller. A 1 pkt/s meter lets 1
// or 2 through; a pause is not metered; a meter_id naming a meter that did
// not exist when the flow was added is not used (the controller meter is,
// if there is one).
func TestControllerMeterMatchesOVS(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	const packets = 12
	cases := []struct {
		name          string
		before, after []string // meters added before and after the flows
		flows         string
		metered       bool // else every packet
	}{
		{"meter_id", []string{"meter=1,pktps,bands=type=drop,rate=1"}, nil,
			"actions=controller(meter_id=1)", true},
		{"meter_id with userdata and reason", []string{"meter=1,pktps,bands=type=drop,rate=1"}, nil,
			"actions=controller(reason=no_match,userdata=01.02,meter_id=1),controller(max_len=90)", true},
		{"meter_id of a meter added later", nil, []string{"meter=2,pktps,bands=type=drop,rate=1"},
			"actions=controller(max_len=128,meter_id=2)", false},
		{"pause is not metered", []string{"meter=1,pktps,bands=type=drop,rate=1"}, nil,
			"actions=controller(pause,meter_id=1)", false},
		{"controller meter", []string{"meter=controller,pktps,bands=type=drop,rate=1"}, nil,
			"actions=controller(userdata=05)", true},
		{"controller meter, output:CONTROLLER", []string{"meter=controller,pktps,bands=type=drop,rate=1"}, nil,
			"actions=CONTROLLER:100", true},
		{"meter_id instead of the controller meter", []string{"meter=controller,pktps,bands=type=drop,rate=1", "meter=1,pktps,bands=type=drop,rate=100000"}, nil,
			"actions=controller(meter_id=1)", false},
		{"meter_id=0", nil, nil, "actions=controller(meter_id=0)", false},
		{"meter_id=4294967295, a meter that cannot exist", nil, nil, "actions=controller(meter_id=4294967295)", false},
		{"unknown meter_id falls back to the controller meter", []string{"meter=controller,pktps,bands=type=drop,rate=1"}, nil,
			"actions=controller(meter_id=9)", true},
	}
	frame := hex.EncodeToString(pauseFrame)
	type result struct {
		dumps   string
		packets int
	}
	run := func(o *ovstest.OVS, tc int) result {
		c := cases[tc]
		do := func(args ...string) {
			t.Helper()
			if out, err := o.Ofctl(args...); err != nil {
				t.Fatalf("ovs-ofctl %v: %v: %s", args, err, out)
			}
		}
		do("-O", "OpenFlow13", "del-flows")
		do("-O", "OpenFlow13", "del-meters")
		for _, m := range c.before {
			do("-O", "OpenFlow13", "add-meter", m)
		}
		do("-O", "OpenFlow13", "add-flow", c.flows)
		for _, m := range c.after {
			do("-O", "OpenFlow13", "add-meter", m)
		}
		var r result
		for _, v := range []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"} {
			out, err := o.Ofctl("-O", v, "dump-flows", "--no-stats")
			if err != nil {
				t.Fatal(err)
			}
			r.dumps += v + ": " + out
		}
		logPath, stop := startMonitor(t, "OpenFlow13", o.Target(), "65535")
		time.Sleep(300 * time.Millisecond)
		start := time.Now()
		for i := 0; i < packets; i++ {
			do("-O", "OpenFlow13", "packet-out", "in_port=controller packet="+frame+" actions=table")
		}
		if d := time.Since(start); d > 900*time.Millisecond {
			t.Logf("sending took %v: a 1 pkt/s meter may let more through", d)
		}
		time.Sleep(300 * time.Millisecond)
		stop()
		data, _ := os.ReadFile(logPath)
		r.packets = strings.Count(string(data), "PACKET_IN")
		return r
	}
	ovs := ovstest.Start(t, ovstest.Options{FailMode: "secure"})
	govs := ovstest.Start(t, ovstest.Options{Vswitchd: vswitchd, FailMode: "secure"})
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, got := run(ovs, i), run(govs, i)
			if got.dumps != want.dumps {
				t.Errorf("flows print differently\ngovs:\n%s\nOVS:\n%s", got.dumps, want.dumps)
			}
			perPacket := strings.Count(c.flows, "controller") + strings.Count(c.flows, "CONTROLLER")
			unmetered := packets * (perPacket - 1) // the other controller actions'
			for _, r := range []struct {
				who string
				n   int
			}{{"OVS", want.packets}, {"govs", got.packets}} {
				switch {
				// 1 or 2 through the meter in the second it takes; a loaded
				// machine may take longer, hence up to half of them.
				case c.metered && (r.n < unmetered+1 || r.n > unmetered+packets/2):
					t.Errorf("%s: %d packet-ins, want %d and 1 or 2 through the meter", r.who, r.n, unmetered)
				case !c.metered && r.n != packets*perPacket:
					t.Errorf("%s: %d packet-ins, want %d (not metered)", r.who, r.n, packets*perPacket)
				}
			}
		})
	}
}

// TestMeterTraceMatchesOVS: ofproto/trace of flows with controller
// actions, meters and pauses prints the same on govs and Open vSwitch:
// each packet-in a userspace action (reason, rule cookie, controller id,
// max_len), inside sample(...,actions(meter(N),...)) when a meter limits
// it, a meter action as meter(N), N the datapath id OVS gives the meter
// (the lowest free, ids of deleted meters reused), a pause as nothing.
func TestMeterTraceMatchesOVS(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	const flows = `
table=0,in_port=1,cookie=0x5,actions=controller(meter_id=1),resubmit(,1)
table=1,actions=meter:4,controller(userdata=01,max_len=90,id=0),goto_table:2
table=2,actions=controller(reason=invalid_ttl,meter_id=3),controller(pause,meter_id=1)
table=0,priority=0,actions=controller
`
	var outs [2]string
	for i, vs := range []string{"", vswitchd} {
		o := ovstest.Start(t, ovstest.Options{Vswitchd: vs, FailMode: "secure", Ports: []ovstest.Port{{Name: "p1", Type: "internal", OFPort: 1}}})
		do := func(args ...string) {
			t.Helper()
			if out, err := o.Ofctl(append([]string{"-O", "OpenFlow13"}, args...)...); err != nil {
				t.Fatalf("ovs-ofctl %v: %v: %s", args, err, out)
			}
		}
		for _, m := range []string{"1", "2", "3"} {
			do("add-meter", "meter="+m+",pktps,bands=type=drop,rate=10")
		}
		do("del-meters", "meter=2")
		do("add-meter", "meter=4,pktps,bands=type=drop,rate=10")
		do("add-meter", "meter=controller,pktps,bands=type=drop,rate=10")
		f := filepath.Join(t.TempDir(), "flows")
		if err := os.WriteFile(f, []byte(flows), 0o644); err != nil {
			t.Fatal(err)
		}
		do("add-flows", f)
		for _, flow := range []string{"in_port=1,ip,nw_ttl=9", "in_port=2,ip"} {
			out, err := o.Appctl("ofproto/trace", o.Bridge(), flow)
			if err != nil {
				t.Fatalf("trace %s: %v", flow, err)
			}
			outs[i] += normalizeOVSTrace(out, nil) + "\n"
		}
	}
	if outs[0] != outs[1] {
		t.Errorf("traces differ:\n%s\nOVS:\n%s\ngovs:\n%s", lineDiff(outs[1], outs[0]), outs[0], outs[1])
	}
	if !strings.Contains(outs[0], "meter(1)") || !strings.Contains(outs[0], "meter(3)") {
		t.Errorf("OVS's trace names no reused or controller meter id:\n%s", outs[0])
	}
}

// TestControllerActionErrorsLikeOVS: flow-mods with a controller action
// where OpenFlow 1.3 puts none (inside ct's exec), or with a malformed
// NXAST_CONTROLLER2 meter_id, get the same error from govs as from Open
// vSwitch (type, code and the quoted request); a pause inside clone is
// accepted by both.
func TestControllerActionErrorsLikeOVS(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	ovs := ovstest.Start(t, ovstest.Options{FailMode: "secure"})
	govs := ovstest.Start(t, ovstest.Options{Vswitchd: vswitchd, FailMode: "secure"})
	meter := func(b ...byte) wire.Property { return wire.Property{Type: wire.NXAC2PT_METER_ID, Data: b} }
	pause := wire.Property{Type: wire.NXAC2PT_PAUSE}
	ctExec := func(a wire.Action) wire.Action {
		return &wire.ActionCT{Flags: 1, RecircTable: 0xff, Actions: []wire.Action{a}}
	}
	for _, tc := range []struct {
		name string
		acts []wire.Action
	}{
		{"pause in ct exec", []wire.Action{ctExec(&wire.ActionController2{Props: []wire.Property{pause}})}},
		{"controller with meter_id in ct exec", []wire.Action{ctExec(&wire.ActionController2{Props: []wire.Property{meter(0, 0, 0, 1)}})}},
		{"meter_id of 2 bytes", []wire.Action{&wire.ActionController2{Props: []wire.Property{meter(0, 1)}}}},
		{"meter_id of 8 bytes", []wire.Action{&wire.ActionController2{Props: []wire.Property{meter(0, 0, 0, 1, 0, 0, 0, 0)}}}},
		{"pause and meter_id in clone (accepted)", []wire.Action{&wire.ActionController2{Props: []wire.Property{pause, meter(0, 0, 0, 7)}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acts, err := wire.AppendActions(nil, wire.OFP13, tc.acts)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tc.name, "clone") {
				// NXAST_CLONE around them: experimenter header, NX_VENDOR_ID,
				// subtype, 6 bytes of pad, the nested actions.
				c := binary.BigEndian.AppendUint16(nil, wire.OFPAT_EXPERIMENTER)
				c = binary.BigEndian.AppendUint16(c, uint16(16+len(acts)))
				c = binary.BigEndian.AppendUint32(c, wire.NX_VENDOR_ID)
				c = binary.BigEndian.AppendUint16(c, wire.NXAST_CLONE)
				acts = append(append(c, make([]byte, 6)...), acts...)
			}
			var got [2]string
			for i, o := range []*ovstest.OVS{ovs, govs} {
				c, err := oftest.Dial(o.MgmtSocket(), wire.OFP13)
				if err != nil {
					t.Fatal(err)
				}
				defer c.NC.Close()
				if err := c.Send(wire.OFPT_FLOW_MOD, 0x77, oftest.FlowMod13(nil, acts)); err != nil {
					t.Fatal(err)
				}
				sendMsg(t, c, 0x78, &wire.BarrierRequest{})
				for {
					h, body, err := c.Recv()
					if err != nil {
						t.Fatal(err)
					}
					if h.Type == wire.OFPT_ERROR {
						got[i] = fmt.Sprintf("error %x", body)
					}
					if h.Xid == 0x78 {
						break
					}
				}
				if got[i] == "" {
					got[i] = "accepted"
				}
			}
			if got[0] != got[1] {
				t.Errorf("OVS: %s\ngovs: %s", got[0], got[1])
			}
			if refused := strings.HasPrefix(got[0], "error"); refused == strings.Contains(tc.name, "accepted") {
				t.Errorf("OVS: %s: the case tests something else", got[0])
			}
		})
	}
}
