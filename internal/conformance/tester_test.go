package conformance

import (
	"bufio"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/internal/ovstest"
)

// TestTesterPacketInAfterFlowReset: the tester Open vSwitch sends a
// packet-in for a packet that arrives right after the tester app's reset
// of its flows (delete all, add in_port=2 actions=CONTROLLER, barrier),
// also when its revalidators looked at the table between the delete and
// the add and have not run again yet (paused here, slow on a busy
// machine), which made it drop the case's packet.
func TestTesterPacketInAfterFlowReset(t *testing.T) {
	netnstest.RequireRoot(t)
	o := ovstest.Start(t, testerOptions())
	ns := &netnstest.NS{Name: o.Netns()}
	ns.MustExec(t, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
	ns.MustExec(t, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
	ns.MustExec(t, "ip", "link", "add", "tester2", "type", "veth", "peer", "name", "target2")
	ns.MustExec(t, "ip", "link", "set", "tester2", "up")
	ns.MustExec(t, "ip", "link", "set", "target2", "up")
	if err := o.AddPort(ovstest.Port{Name: "tester2", OFPort: 2}); err != nil {
		t.Fatal(err)
	}
	ofctl := func(args ...string) {
		t.Helper()
		if out, err := o.Ofctl(append([]string{"-O", "OpenFlow13"}, args...)...); err != nil {
			t.Fatalf("ovs-ofctl %v: %v (%s)", args, err, out)
		}
	}
	appctl := func(args ...string) {
		t.Helper()
		if out, err := o.Appctl(args...); err != nil {
			t.Fatalf("ovs-appctl %v: %v (%s)", args, err, out)
		}
	}

	// A controller connection that prints each packet-in.
	mon := exec.Command("ovs-ofctl", "-O", "OpenFlow13", "monitor", o.Target(), "65534")
	// ovs-ofctl prints what it receives on stdout and its errors on
	// stderr: both go to the scanner.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	mon.Env = append(os.Environ(), "OVS_RUNDIR="+o.Rundir()) // its control socket
	mon.Stdout, mon.Stderr = w, w
	err = mon.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mon.Process.Kill(); mon.Wait(); r.Close() })
	packetIns := make(chan struct{}, 16)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "PACKET_IN") {
				packetIns <- struct{}{}
			}
		}
	}()

	// ethernet/ipv4/tcp, as the suite's cases send.
	frame, _ := hex.DecodeString("222222222222" + "121111111111" + "0800" +
		"45200028000040004006" + "0000" + "c0a80a0a" + "c0a81414" +
		"2b6708ae" + "00000000" + "00000000" + "50020000" + "00000000")
	sock := netnstest.NewRawSocket(t, ns, "target2")
	reset := func() {
		ofctl("del-flows")
		ofctl("add-flow", "in_port=2,actions=CONTROLLER:65509")
	}

	// The first packet: a datapath flow for it, if the datapath keeps one.
	reset()
	got := false
	for deadline := time.Now().Add(10 * time.Second); !got && time.Now().Before(deadline); {
		if err := sock.Send(frame); err != nil {
			t.Fatal(err)
		}
		select {
		case <-packetIns:
			got = true
		case <-time.After(200 * time.Millisecond):
		}
	}
	if !got {
		t.Fatal("no packet-in for the first packet")
	}

	// The reset, with the revalidators running between the delete and
	// the add, then paused.
	ofctl("del-flows")
	appctl("revalidator/wait")
	appctl("revalidator/pause")
	t.Cleanup(func() { o.Appctl("revalidator/resume") })
	for len(packetIns) > 0 {
		<-packetIns
	}
	ofctl("add-flow", "in_port=2,actions=CONTROLLER:65509")
	if err := sock.Send(frame); err != nil {
		t.Fatal(err)
	}
	select {
	case <-packetIns:
	case <-time.After(3 * time.Second):
		flows, _ := o.Appctl("dpctl/dump-flows")
		t.Errorf("no packet-in for the packet after the reset (the tester's own timeout is 3 s); datapath flows:\n%s", flows)
	}
}
