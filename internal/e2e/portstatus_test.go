package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/oftest"
	"github.com/govs-project/govs/internal/ovstest"
	"github.com/govs-project/govs/ofproto/wire"
)

// portStatusVersions are the monitors' versions: each port format (1.0,
// 1.3, 1.5 with properties; govs does not speak 1.4) and what each can
// say (LIVE is 1.1+, NO_FLOOD 1.0 only).
var portStatusVersions = []string{"OpenFlow10", "OpenFlow13", "OpenFlow15"}

// portStatusWatch is what one switch's controllers saw: `ovs-ofctl
// monitor` in each version, and two raw clients whose async config asks
// for some port-status reasons only.
type portStatusWatch struct {
	logs     []string
	mu       sync.Mutex
	filtered [2][]string // the 1.3 and the 1.5 client's messages, hex
}

// addrRE masks what differs between two switches by chance: the xid and
// a port's Ethernet address.
var addrRE = regexp.MustCompile(`addr:[0-9a-f:]{17}|\(xid=0x[0-9a-f]+\)`)

func (w *portStatusWatch) snapshot(t *testing.T) string {
	var b strings.Builder
	for i, l := range w.logs {
		data, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "== %s\n%s", portStatusVersions[i], addrRE.ReplaceAllString(string(data), ""))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, f := range w.filtered {
		fmt.Fprintf(&b, "== filtered client %d\n%s\n", i, strings.Join(f, "\n"))
	}
	return b.String()
}

// settle waits until what the controllers saw stops changing (Open
// vSwitch and govs both react to the kernel's link notifications).
func (w *portStatusWatch) settle(t *testing.T) string {
	t.Helper()
	last, stable := w.snapshot(t), time.Now()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if s := w.snapshot(t); s != last {
			last, stable = s, time.Now()
		} else if time.Since(stable) >= 400*time.Millisecond {
			break
		}
	}
	return last
}

// watchPortStatus starts the monitors and the filtered clients on o.
func watchPortStatus(t *testing.T, o *ovstest.OVS) *portStatusWatch {
	t.Helper()
	w := &portStatusWatch{}
	for _, v := range portStatusVersions {
		// A nonzero miss_send_len: a service connection gets no async
		// messages without one.
		logPath, _ := startMonitor(t, v, o.Target(), "128")
		w.logs = append(w.logs, logPath)
	}
	// A 1.3 controller that asks for ADD and DELETE only (OFPT_SET_ASYNC
	// masks), a 1.5 one for MODIFY only (the async config property).
	for i, set := range []struct {
		version uint8
		msg     *wire.AsyncConfig
	}{
		{wire.OFP13, &wire.AsyncConfig{PortStatusMask: [2]uint32{1<<0 | 1<<1, 0}}},
		{wire.OFP15, &wire.AsyncConfig{Props: []wire.Property{{Type: 3, Data: []byte{0, 0, 0, 1 << 2}}}}}, // OFPACPT_PORT_STATUS_MASTER
	} {
		c, err := oftest.Dial(o.MgmtSocket(), set.version)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.NC.Close() })
		sendMsg(t, c, 1, set.msg)
		go func() {
			buf := make([]byte, 65536)
			for {
				c.NC.SetReadDeadline(time.Time{}) // quiet for the whole test
				h, body, err := wire.ReadMessage(c.NC, buf)
				if err != nil {
					return
				}
				switch h.Type {
				case wire.OFPT_PORT_STATUS:
					// hw_addr: after the reason, its pad and the port
					// number (and 1.1+'s pad or 1.4's length).
					off := 16
					if set.version == wire.OFP10 {
						off = 10
					}
					if len(body) >= off+6 {
						copy(body[off:off+6], make([]byte, 6))
					}
					w.mu.Lock()
					w.filtered[i] = append(w.filtered[i], fmt.Sprintf("%x", body))
					w.mu.Unlock()
				case wire.OFPT_ERROR:
					w.mu.Lock()
					w.filtered[i] = append(w.filtered[i], fmt.Sprintf("error %x", body))
					w.mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // the monitors connect and set up
	return w
}

// TestPortStatusMatchesOVS: the same port changes on Open vSwitch 3.1 and
// on govs, each a real device change (a veth's peer down and up, the
// port's own device down and up, an internal port brought up) or a
// port-mod (down, up, no-flood, flood, no-packet-in; a tunnel cannot go
// down), and ports (veth, internal, Geneve) added and deleted, reach the controllers as the same OFPT_PORT_STATUS messages, in
// the same order, in 1.0, 1.3 and 1.5; controllers whose async config
// leaves a reason out do not get it.
func TestPortStatusMatchesOVS(t *testing.T) {
	netnstest.RequireRoot(t)
	_, vswitchd := binaries(t)
	run := func(vswitchd string) []string {
		o := ovstest.Start(t, ovstest.Options{Vswitchd: vswitchd, FailMode: "secure"})
		ip := func(args ...string) {
			t.Helper()
			if out, err := exec.Command("ip", append([]string{"-n", o.Netns()}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("ip %v: %v: %s", args, err, out)
			}
		}
		ofctlDo := func(args ...string) {
			t.Helper()
			if out, err := o.Ofctl(append([]string{"-O", "OpenFlow13"}, args...)...); err != nil {
				t.Fatalf("ovs-ofctl %v: %v: %s", args, err, out)
			}
		}
		vsctl := func(args ...string) {
			t.Helper()
			if out, err := o.Vsctl(args...); err != nil {
				t.Fatalf("ovs-vsctl %v: %v: %s", args, err, out)
			}
		}
		ip("link", "add", "psv", "type", "veth", "peer", "name", "psv-p")
		ip("link", "set", "psv", "up")
		ip("link", "set", "psv-p", "up")
		// No table-miss packet-ins (the veth's IPv6 chatter) in the logs.
		if err := o.AddFlow("OpenFlow13", "priority=0,actions=drop"); err != nil {
			t.Fatal(err)
		}
		w := watchPortStatus(t, o)
		var seen []string
		for _, step := range []struct {
			name string
			do   func()
		}{
			{"add veth port", func() {
				if err := o.AddPort(ovstest.Port{Name: "psv", OFPort: 5}); err != nil {
					t.Fatal(err)
				}
			}},
			{"peer down (carrier lost)", func() { ip("link", "set", "psv-p", "down") }},
			{"peer up", func() { ip("link", "set", "psv-p", "up") }},
			{"device down", func() { ip("link", "set", "psv", "down") }},
			{"device up", func() { ip("link", "set", "psv", "up") }},
			{"mod-port down", func() { ofctlDo("mod-port", "psv", "down") }},
			{"mod-port up", func() { ofctlDo("mod-port", "psv", "up") }},
			{"mod-port no-flood (1.0 only)", func() {
				if out, err := o.Ofctl("-O", "OpenFlow10", "mod-port", "psv", "no-flood"); err != nil {
					t.Fatalf("mod-port no-flood: %v: %s", err, out)
				}
			}},
			{"mod-port no-packet-in", func() { ofctlDo("mod-port", "psv", "no-packet-in") }},
			{"mod-port flood, packet-in", func() {
				if out, err := o.Ofctl("-O", "OpenFlow10", "mod-port", "psv", "flood"); err != nil {
					t.Fatalf("mod-port flood: %v: %s", err, out)
				}
				ofctlDo("mod-port", "psv", "packet-in")
			}},
			{"mod-port up while up (no change)", func() { ofctlDo("mod-port", "psv", "up") }},
			{"add internal port (down)", func() {
				if err := o.AddPort(ovstest.Port{Name: "psi", Type: "internal", OFPort: 6}); err != nil {
					t.Fatal(err)
				}
			}},
			{"internal port up", func() { ip("link", "set", "psi", "up") }},
			{"add Geneve port", func() {
				if err := o.AddPort(ovstest.Port{Name: "psg", Type: "geneve", OFPort: 7, Options: map[string]string{"remote_ip": "flow", "key": "flow"}}); err != nil {
					t.Fatal(err)
				}
			}},
			{"mod-port down on a tunnel (OVS cannot)", func() { ofctlDo("mod-port", "psg", "down") }},
			{"mod-port no-packet-in on a tunnel", func() { ofctlDo("mod-port", "psg", "no-packet-in") }},
			{"delete Geneve port", func() { vsctl("del-port", "psg") }},
			{"delete veth port", func() { vsctl("del-port", "psv") }},
			{"delete internal port", func() { vsctl("del-port", "psi") }},
		} {
			step.do()
			seen = append(seen, step.name+"\n"+w.settle(t))
		}
		return seen
	}
	want := run("")
	got := run(vswitchd)
	for i := range want {
		if !strings.Contains(want[i], "PORT_STATUS") {
			t.Errorf("Open vSwitch sent no port status at all by step %d", i)
		}
		if got[i] != want[i] {
			t.Errorf("after %s", lineDiff(got[i], want[i]))
			t.Logf("OVS:\n%s\ngovs:\n%s", want[i], got[i])
			t.Logf("OVS, every step:\n%s", strings.Join(want, "\n"))
			break
		}
	}
}
