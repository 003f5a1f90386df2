package e2e

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/govs-project/govs/datapath/netnstest"
	"github.com/govs-project/govs/datapath/port/porttest"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// TestHostileFramesVeth is the short real-veth run of the hostile-frames
// campaign: a pod's raw socket sends malformed frames (runts, jumbos, bad
// IHLs, bad TCP offsets, fragments, VLAN stacks, IPv6 extension chains)
// into govs-vswitchd's AF_PACKET port as fast as it can while the pod pings
// its neighbour through the bridge: the pings must get their answers and
// the daemon must live.
func TestHostileFramesVeth(t *testing.T) {
	n := startNode(t)
	n.mustRun("add-br", "br0", "fail_mode=standalone")
	a := n.addPod(t, "10.233.0.1/24", "02:00:00:00:0a:01")
	b := n.addPod(t, "10.233.0.2/24", "02:00:00:00:0a:02")
	n.mustRun("add-port", "br0", a.veth.Host)
	n.mustRun("add-port", "br0", b.veth.Host)
	if out, err := a.ns.Exec("ping", "-c", "2", "-W", "2", b.ip); err != nil {
		t.Fatalf("ping before the flood: %v\n%s", err, out)
	}
	spec := "tcp,dl_src=02:00:00:00:0a:01,dl_dst=02:00:00:00:0a:02,nw_src=10.233.0.1,nw_dst=10.233.0.2,nw_ttl=64,tp_src=40000,tp_dst=80,tcp_flags=ack"
	k, err := flowtext.ParsePacket(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	hostile := porttest.HostileFrames(rand.New(rand.NewPCG(15, 9)), flowtable.BuildFrame(&k, 64))
	raw := netnstest.NewRawSocket(t, a.ns, a.veth.Peer)
	var sent, refused atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for _, f := range hostile {
				select {
				case <-stop:
					return
				default:
				}
				// The kernel refuses runts and frames over the MTU
				// itself; the rest reach the daemon's port.
				if raw.Send(f) != nil {
					refused.Add(1)
				} else {
					sent.Add(1)
				}
			}
		}
	}()
	out, err := a.ns.Exec("ping", "-c", "200", "-i", "0.01", "-W", "1", b.ip)
	close(stop)
	<-done
	m := regexp.MustCompile(`(\d+) received`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("ping during the flood: %v\n%s", err, out)
	}
	received, _ := strconv.Atoi(m[1])
	if received < 190 {
		t.Errorf("ping during the flood: %d of 200 answered\n%s", received, out)
	}
	if out, err := n.run("show"); err != nil || !strings.Contains(out, "br0") {
		t.Fatalf("daemon after the flood: %v\n%s", err, out)
	}
	if out, err := a.ns.Exec("ping", "-c", "2", "-W", "2", b.ip); err != nil {
		t.Errorf("ping after the flood: %v\n%s", err, out)
	}
	log, _ := os.ReadFile(filepath.Join(n.rundir, "govs-vswitchd.log"))
	if strings.Contains(string(log), "panic") {
		t.Errorf("the daemon log mentions a panic:\n%s", log)
	}
	t.Logf("%d hostile frames sent on a real veth (%d kinds; %d refused by the kernel) while %d of 200 pings were answered",
		sent.Load(), len(hostile), refused.Load(), received)
}
