package e2e

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// pauseSwitch is one switch under test with three veth ports (1, 2, 3):
// frames go in at port 1's peer and are read at the peers of 2 and 3.
type pauseSwitch struct {
	name   string
	target string
	in     *netnstest.RawSocket
	out    map[int]*netnstest.RawSocket
	ofport map[string]int // port name -> OpenFlow port
	appctl func(args ...string) (string, error)
}

func newPauseSwitch(t *testing.T, name, target string, switchNS *netnstest.NS, addPort func(host string, ofport int)) *pauseSwitch {
	t.Helper()
	peers := netnstest.NewNS(t)
	s := &pauseSwitch{name: name, target: target, out: map[int]*netnstest.RawSocket{}, ofport: map[string]int{}}
	for ofport := 1; ofport <= 3; ofport++ {
		v := netnstest.NewVeth(t, switchNS, peers, netnstest.VethOptions{})
		addPort(v.Host, ofport)
		s.ofport[v.Host] = ofport
		if ofport == 1 {
			s.in = netnstest.NewRawSocket(t, peers, v.Peer)
		} else {
			s.out[ofport] = netnstest.NewRawSocket(t, peers, v.Peer)
		}
	}
	return s
}

// pauseSwitches starts govs and Open vSwitch, each with a secure bridge
// and ports 1-3 on veths.
func pauseSwitches(t *testing.T) (govs, ovs *pauseSwitch) {
	t.Helper()
	n := startNode(t)
	n.mustRun("add-br", "br-int", "fail_mode=secure")
	o := ovstest.Start(t, ovstest.Options{FailMode: "secure"})
	govs = newPauseSwitch(t, "govs", "unix:"+filepath.Join(n.rundir, "br-int.mgmt"), n.ns, func(host string, ofport int) {
		n.mustRun("add-port", "br-int", host, fmt.Sprintf("ofport_request=%d", ofport))
	})
	ovs = newPauseSwitch(t, "OVS", o.Target(), &netnstest.NS{Name: o.Netns()}, func(host string, ofport int) {
		if err := o.AddPort(ovstest.Port{Name: host, OFPort: ofport}); err != nil {
			t.Fatal(err)
		}
	})
	govs.appctl = func(args ...string) (string, error) {
		out, rc := n.appctl(t, args...)
		if rc != 0 {
			return out, fmt.Errorf("ovs-appctl exit status %d", rc)
		}
		return out, nil
	}
	ovs.appctl = o.Appctl
	return govs, ovs
}

// pauseFrame is an ICMP echo request from 50:54:00:00:00:05 to
// 50:54:00:00:00:07, 192.168.0.1 -> 192.168.0.2 (OVS's continuation tests).
var pauseFrame = func() []byte {
	b, _ := hex.DecodeString("505400000007505400000005080045000054000000004001" + "0000" + "c0a80001c0a80002" +
		"0800" + "0000" + "00010001")
	b = append(b, make([]byte, 56)...)
	binary.BigEndian.PutUint16(b[24:], inetChecksum(b[14:34]))
	binary.BigEndian.PutUint16(b[36:], inetChecksum(b[34:]))
	return b
}()

func inetChecksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// startMonitor runs `ovs-ofctl -O VERSION monitor TARGET ARGS...` with its
// output in the file at logPath; stop ends it (also at the test's end).
func startMonitor(t *testing.T, version, target string, args ...string) (logPath string, stop func()) {
	t.Helper()
	logPath = filepath.Join(t.TempDir(), "monitor.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	mon := exec.Command("ovs-ofctl", append([]string{"-O", version, "monitor", target}, args...)...)
	mon.Stdout, mon.Stderr = f, f
	mon.Env = append(os.Environ(), "OVS_RUNDIR="+t.TempDir()) // its control socket
	if err := mon.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			mon.Process.Kill()
			mon.Wait()
			f.Close()
		})
	}
	t.Cleanup(stop)
	return logPath, stop
}

// run loads flows, starts `ovs-ofctl monitor TARGET resume`, sends the
// frame once and returns what came out of ports 2 and 3 (hex, in order),
// the monitor's log (bridge uuid and datapath port numbers masked) and
// the flows' counters.
func (s *pauseSwitch) run(t *testing.T, version, flows string) (frames, monitor, counters string) {
	t.Helper()
	return s.runWith(t, version, "OpenFlow13", flows)
}

// runWith is run with the flows added in flowsVersion's syntax.
func (s *pauseSwitch) runWith(t *testing.T, version, flowsVersion, flows string) (frames, monitor, counters string) {
	t.Helper()
	if _, err := ofctl(s.target, "del-flows"); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "flows")
	if err := os.WriteFile(f, []byte(flows), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := ofctl(s.target, "-O", flowsVersion, "add-flows", f); err != nil {
		t.Fatalf("%s: add-flows: %v\n%s", s.name, err, out)
	}
	if s.name == "OVS" {
		// Megaflows of the flows before would serve the packet until the
		// revalidators catch up.
		if out, err := s.appctl("revalidator/purge"); err != nil {
			t.Fatalf("revalidator/purge: %v %s", err, out)
		}
	}
	// version "": no monitor (no pause to resume), a shorter wait.
	logPath, wait := "", 500*time.Millisecond
	for _, out := range s.out {
		// Frames a case before left late are not this case's.
		for {
			if _, err := out.RecvMatch(time.Millisecond, func([]byte) bool { return true }); err != nil {
				break
			}
		}
	}
	if version != "" {
		var stop func()
		logPath, stop = startMonitor(t, version, s.target, "resume")
		defer stop()
		// The monitor is ready once it asked for NXT_PACKET_IN2 and the
		// switch config; give it a moment to set up.
		time.Sleep(500 * time.Millisecond)
		wait = 2 * time.Second
	}
	if err := s.in.Send(pauseFrame); err != nil {
		t.Fatal(err)
	}
	var got []string
	deadline := time.Now().Add(wait)
	for port := 2; port <= 3; port++ {
		for {
			// Port 3 is read after port 2's wait: its frames are queued
			// by then, and a short floor still reads them.
			b, err := s.out[port].RecvMatch(max(time.Until(deadline), 100*time.Millisecond), func(b []byte) bool {
				return len(b) > 12 && bytes.Equal(b[6:12], pauseFrame[6:12])
			})
			if err != nil {
				break
			}
			got = append(got, fmt.Sprintf("port %d: %x", port, b))
		}
	}
	var data []byte
	if logPath != "" {
		data, _ = os.ReadFile(logPath)
	}
	monitor = regexp.MustCompile(`continuation\.bridge=\S+`).ReplaceAllString(string(data), "continuation.bridge=UUID")
	monitor = regexp.MustCompile(`(?m)^ continuation\.odp_port=\d+\n`).ReplaceAllString(monitor, "")
	dump, err := ofctl(s.target, "-O", "OpenFlow13", "dump-flows", "--no-stats")
	if err != nil {
		t.Fatal(err)
	}
	stats, err := ofctl(s.target, "-O", "OpenFlow13", "dump-flows")
	if err != nil {
		t.Fatal(err)
	}
	counts := regexp.MustCompile(`n_packets=\d+`).FindAllString(stats, -1)
	return strings.Join(got, "\n"), monitor, sortedLines(dump) + "\n" + strings.Join(counts, " ")
}

// TestPauseResumeMatchesOVS: the same flows with controller(pause) on govs
// and on Open vSwitch 3.1, the same packet in at port 1, and `ovs-ofctl
// monitor BRIDGE resume` resuming every paused packet-in: the same frames
// come out of ports 2 and 3, the monitor prints the same packet-ins (with
// their continuations, registers, tables and cookies) and resumes, and the
// flows count the same packets.
func TestPauseResumeMatchesOVS(t *testing.T) {
	govs, ovs := pauseSwitches(t)
	cases := []struct{ name, flows string }{
		{"actions after the pause", `in_port=1 actions=controller(pause),2,controller(pause),3`},
		{"pause at the end", `in_port=1 actions=2,controller(pause)`},
		{"nested resubmits", `
table=0 in_port=1 actions=controller(pause),resubmit(,1),controller(pause),3
table=1 in_port=1 cookie=0x11 actions=controller(pause),resubmit(,2),controller(pause),controller(userdata=0a)
table=2 in_port=1 cookie=0x22 actions=controller(pause),resubmit:55,controller(pause),2
table=2 in_port=55 actions=controller(pause),controller(userdata=0b),controller(pause)`},
		{"registers, stack, action set, userdata", `
table=0 in_port=1 cookie=0x7 actions=set_field:1->reg1,push:NXM_NX_REG1[],write_actions(output:3),goto_table:1
table=1 cookie=0x9 actions=set_field:5->reg2,controller(pause,userdata=01.02),set_field:6->reg3,resubmit(,2),output:2
table=2 cookie=0x22 actions=goto_table:3
table=3 actions=pop:NXM_NX_REG4[],controller`},
		{"write_metadata and goto_table", `
table=0 in_port=1 actions=controller(pause),write_metadata:1/1,goto_table:1
table=1 in_port=1 metadata=1 actions=controller(pause),2,write_metadata:2/2,goto_table:2
table=2 metadata=3 actions=controller(pause),3`},
		{"conntrack", `
table=0 in_port=1 icmp actions=ct(table=1)
table=1 icmp actions=controller(pause),resubmit(,2)
table=2 in_port=1 icmp ct_state=+trk+new actions=output:2`},
		{"clone", `
table=0 in_port=1 actions=set_field:1->reg1,resubmit(,2)
table=1 reg1=0x5 actions=controller(pause),resubmit(,3)
table=1 reg1=0x1 actions=2
table=2 in_port=1 actions=clone(set_field:5->reg1,resubmit(,1)),output:3
table=3 reg1=0x1 actions=3
table=3 reg1=0x5 actions=2`},
		// OVS translates check_pkt_larger into the datapath's
		// check_pkt_len with the rest of the walk nested in both
		// branches, so these pauses freeze inside a nested action list.
		{"check_pkt_larger, larger", `
table=0 in_port=1 actions=check_pkt_larger(64)->NXM_NX_REG0[0],resubmit(,1),controller(pause),3
table=1 reg0=0x1/0x1 actions=controller(pause,userdata=01),2
table=1 reg0=0/0x1 actions=controller(pause,userdata=02),3`},
		{"check_pkt_larger twice, pause between", `
table=0 in_port=1 actions=check_pkt_larger(64)->NXM_NX_REG0[0],controller(pause),check_pkt_larger(1500)->NXM_NX_REG0[1],resubmit(,1)
table=1 reg0=0x1/0x3 actions=set_field:7->reg2,controller(pause),resubmit(,2)
table=1 reg0=0x3/0x3 actions=3
table=2 reg2=7 actions=2`},
		// OVS finishes a freeze at the end of the check_pkt_larger
		// branch: the levels above go on at once, outside the
		// continuation.
		{"check_pkt_larger, pause in a branch, the caller goes on", `
table=0 in_port=1 actions=goto_table:1
table=1 actions=resubmit(,2),set_field:0x5->reg3,output:2
table=2 actions=check_pkt_larger(64)->NXM_NX_REG0[0],resubmit(,3)
table=3 reg0=0x1/0x1 actions=controller(pause),output:3
table=3 reg0=0/0x1 actions=output:2`},
		// OVS 3.1 keeps the exit flag the greater branch left: a pause
		// there ends the walk for a packet not larger too.
		{"check_pkt_larger, not larger, pause in the other branch", `
table=0 in_port=1 actions=goto_table:1
table=1 actions=resubmit(,2),set_field:0x5->reg3,output:3
table=2 actions=check_pkt_larger(1500)->NXM_NX_REG0[0],resubmit(,3)
table=3 reg0=0x1/0x1 actions=controller(pause),output:3
table=3 reg0=0/0x1 actions=output:2`},
		{"check_pkt_larger, not larger, pause in its branch, the caller goes on", `
table=0 in_port=1 actions=goto_table:1
table=1 actions=resubmit(,2),set_field:0x5->reg3,output:2
table=2 actions=check_pkt_larger(1500)->NXM_NX_REG0[0],resubmit(,3)
table=3 reg0=0/0x1 actions=controller(pause),output:3
table=3 reg0=0x1/0x1 actions=output:2`},
		{"check_pkt_larger, pause in clone", `
table=0 in_port=1 actions=check_pkt_larger(64)->NXM_NX_REG0[0],clone(resubmit(,1)),output:3
table=1 reg0=0x1/0x1 actions=controller(pause),2
table=1 reg0=0/0x1 actions=drop`},
	}
	for _, version := range []string{"OpenFlow10", "OpenFlow15"} {
		for _, tc := range cases {
			if strings.HasPrefix(tc.name, "check_pkt_larger") && version != "OpenFlow15" {
				continue // one version is enough for these (CI time)
			}
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				gf, gm, gc := govs.run(t, version, tc.flows)
				of, om, oc := ovs.run(t, version, tc.flows)
				sameOutputs(t, gf, of, gc, oc)
				if gm != om {
					t.Errorf("monitor logs differ\ngovs:\n%s\nOVS:\n%s", gm, om)
				}
			})
		}
	}
}

// sameOutputs fails the test unless govs and Open vSwitch sent the same
// frames (some) and counted the same packets.
func sameOutputs(t *testing.T, govsFrames, ovsFrames, govsCounters, ovsCounters string) {
	t.Helper()
	if ovsFrames == "" {
		t.Errorf("no frame came out of Open vSwitch: the case tests nothing")
	}
	if govsFrames != ovsFrames {
		t.Errorf("frames out of ports 2 and 3 differ\ngovs:\n%s\nOVS:\n%s", govsFrames, ovsFrames)
	}
	if govsCounters != ovsCounters {
		t.Errorf("flows and counters differ\ngovs:\n%s\nOVS:\n%s", govsCounters, ovsCounters)
	}
}

// contProp is one property in the wire layout (ofpprop_put).
func contProp(typ uint16, data []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, typ)
	b = binary.BigEndian.AppendUint16(b, uint16(4+len(data)))
	b = append(b, data...)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

// TestResumeErrorsLikeOVS sends the same bad NXT_RESUME messages to govs
// and to Open vSwitch: both answer each with the same error, quoting the
// whole request (100 to 200 bytes), and keep the connection.
func TestResumeErrorsLikeOVS(t *testing.T) {
	n := startNode(t)
	n.mustRun("add-br", "br-int")
	o := ovstest.Start(t, ovstest.Options{})
	targets := []string{filepath.Join(n.rundir, "br-int.mgmt"), strings.TrimPrefix(o.Target(), "unix:")}
	nested := func(inner ...[]byte) []byte { return append(make([]byte, 4), bytes.Join(inner, nil)...) }
	uuid := bytes.Repeat([]byte{0x5a}, 16)
	packet := wire.Property{Type: wire.NXPINT_PACKET, Data: pauseFrame}
	md := wire.Property{Type: wire.NXPINT_METADATA, Data: []byte{0x80, 0x00, 0x00, 0x04, 0, 0, 0, 1}}
	cont := func(inner ...[]byte) wire.Property {
		return wire.Property{Type: wire.NXPINT_CONTINUATION, Data: nested(inner...)}
	}
	output2 := []byte{0, 0, 0, 16, 0, 0, 0, 2, 0xff, 0xff, 0, 0, 0, 0, 0, 0} // OF1.3 output:2
	cases := []struct {
		name  string
		props []wire.Property
	}{
		{"unknown bridge", []wire.Property{packet, md, cont(contProp(0x8000, uuid), contProp(0x8006, nested(output2)))}},
		{"no bridge", []wire.Property{packet, md, cont(contProp(0x8006, nested(output2)))}},
		{"no packet", []wire.Property{md, cont(contProp(0x8000, uuid))}},
		{"unknown continuation property", []wire.Property{packet, md, cont(contProp(0x8000, uuid), contProp(0x8009, nil))}},
		{"experimenter continuation property", []wire.Property{packet, md, cont(contProp(0xffff, []byte{0, 0, 0x23, 0x20, 0, 0, 0, 1}))}},
		{"stack value of 129 bytes", []wire.Property{packet, md, cont(contProp(0x8001, make([]byte, 129)))}},
		{"bridge of 15 bytes", []wire.Property{packet, md, cont(contProp(0x8000, uuid[:15]))}},
		{"cookie of 8 bytes", []wire.Property{packet, md, cont(contProp(0x8005, make([]byte, 8)))}},
		{"actions of 4 bytes", []wire.Property{packet, md, cont(contProp(0x8006, nested(make([]byte, 4))))}},
		{"bad action", []wire.Property{packet, md, cont(contProp(0x8006, nested([]byte{0, 0x63, 0, 8, 0, 0, 0, 0})))}},
		{"property past the end", []wire.Property{packet, md, {Type: wire.NXPINT_CONTINUATION, Data: append(make([]byte, 4), 0x80, 0x00, 0x00, 0x40)}}},
		{"unknown packet-in property", []wire.Property{packet, md, {Type: 99}}},
		{"full_len below the packet", []wire.Property{{Type: wire.NXPINT_FULL_LEN, Data: []byte{0, 0, 0, 10}}, packet, md}},
		{"metadata with an unknown field", []wire.Property{packet, {Type: wire.NXPINT_METADATA, Data: []byte{0x80, 0x00, 0x7e, 0x04, 0, 0, 0, 1}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]string
			for i, path := range targets {
				c, err := oftest.Dial(path, wire.OFP13)
				if err != nil {
					t.Fatal(err)
				}
				defer c.NC.Close()
				sendMsg(t, c, 0x300, &wire.NXResume{Props: tc.props})
				body, err := c.ErrorBody(0x300)
				if err != nil {
					t.Fatal(err)
				}
				// Type, code and the quoted request (OVS quotes it whole).
				got[i] = fmt.Sprintf("%x", body)
				if err := c.Alive(); err != nil {
					t.Errorf("%s: connection dead after the bad resume: %v", path, err)
				}
			}
			if got[0] != got[1] {
				t.Errorf("govs answered %s, Open vSwitch %s", got[0], got[1])
			}
		})
	}
}

// modifyingController is a controller on the bridge's management socket
// (OpenFlow 1.5, NXT_PACKET_IN2, as Antrea's agent) that resumes every
// paused packet after changing it: the IPv4 TTL becomes 7 and reg5 is set
// to 0x55 in the metadata it sends back. It logs every packet-in's
// properties, a paused one's continuation left out (it holds the
// bridge's uuid).
type modifyingController struct {
	c   *oftest.Client
	log []string
}

func newModifyingController(t *testing.T, path string) *modifyingController {
	t.Helper()
	c, err := oftest.Dial(path, wire.OFP15)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.NC.Close() })
	sendMsg(t, c, 1, &wire.NXSetPacketInFormat{Format: wire.NXPIF_NXT_PACKET_IN2})
	sendMsg(t, c, 2, &wire.SwitchConfig{MissSendLen: 0xffff})
	sendMsg(t, c, 3, &wire.BarrierRequest{})
	for {
		h, _, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if h.Type == wire.OFPT_ERROR {
			t.Fatal("controller setup refused")
		}
		if h.Xid == 3 {
			return &modifyingController{c: c}
		}
	}
}

// serve handles what arrives until nothing has for quiet.
func (m *modifyingController) serve(t *testing.T, quiet time.Duration) {
	t.Helper()
	for {
		m.c.NC.SetReadDeadline(time.Now().Add(quiet))
		h, body, err := wire.ReadMessage(m.c.NC, make([]byte, 65536))
		if err != nil {
			return
		}
		msg, err := wire.DecodeMessage(h, body)
		if err != nil {
			t.Fatalf("undecodable message: %v", err)
		}
		switch msg := msg.(type) {
		case *wire.NXPacketIn2:
			m.packetIn(t, msg)
		case *wire.ErrorMsg:
			m.log = append(m.log, fmt.Sprintf("error %d/%d", msg.Type, msg.Code))
		}
	}
}

func (m *modifyingController) packetIn(t *testing.T, pin *wire.NXPacketIn2) {
	t.Helper()
	var line []string
	var resume []wire.Property
	paused := false
	for _, p := range pin.Props {
		switch p.Type {
		case wire.NXPINT_CONTINUATION:
			paused = true
			line = append(line, "continuation")
			resume = append(resume, p)
			continue
		case wire.NXPINT_USERDATA:
		case wire.NXPINT_PACKET:
			f := append([]byte(nil), p.Data...)
			f[22] = 7 // IPv4 TTL
			f[24], f[25] = 0, 0
			binary.BigEndian.PutUint16(f[24:], inetChecksum(f[14:34]))
			resume = append(resume, wire.Property{Type: p.Type, Data: f})
		case wire.NXPINT_METADATA:
			md := append(append([]byte(nil), p.Data...), 0x00, 0x01, 0x0a, 0x04, 0, 0, 0, 0x55) // reg5=0x55
			resume = append(resume, wire.Property{Type: p.Type, Data: md})
		default:
			resume = append(resume, p)
		}
		line = append(line, fmt.Sprintf("%d:%x", p.Type, p.Data))
	}
	m.log = append(m.log, strings.Join(line, " "))
	if paused {
		sendMsg(t, m.c, 0x77, &wire.NXResume{Props: resume})
	}
}

// TestResumeModifiedLikeOVS: a controller that changes the paused packet
// and its registers before resuming gets the same packet-ins, and the same
// frames come out, from govs and from Open vSwitch: the resumed walk
// starts from what the controller sent back.
func TestResumeModifiedLikeOVS(t *testing.T) {
	govs, ovs := pauseSwitches(t)
	flows := `
table=0 in_port=1 cookie=0x5 actions=set_field:1->reg1,push:NXM_NX_REG1[],controller(pause,userdata=aa.bb),pop:NXM_NX_REG3[],resubmit(,1)
table=1 priority=10 reg5=0x55,ip,nw_ttl=7 actions=set_field:2->reg2,controller(userdata=0c),output:2
table=1 priority=0 actions=output:3
`
	var frames, logs [2]string
	for i, s := range []*pauseSwitch{govs, ovs} {
		if out, err := ofctl(s.target, "del-flows"); err != nil {
			t.Fatalf("%s: %v %s", s.name, err, out)
		}
		f := filepath.Join(t.TempDir(), "flows")
		if err := os.WriteFile(f, []byte(flows), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := ofctl(s.target, "-O", "OpenFlow15", "add-flows", f); err != nil {
			t.Fatalf("%s: add-flows: %v\n%s", s.name, err, out)
		}
		ctl := newModifyingController(t, strings.TrimPrefix(s.target, "unix:"))
		if err := s.in.Send(pauseFrame); err != nil {
			t.Fatal(err)
		}
		ctl.serve(t, 1500*time.Millisecond)
		logs[i] = strings.Join(ctl.log, "\n")
		var got []string
		for port := 2; port <= 3; port++ {
			for {
				b, err := s.out[port].RecvMatch(200*time.Millisecond, func(b []byte) bool {
					return len(b) > 12 && bytes.Equal(b[6:12], pauseFrame[6:12])
				})
				if err != nil {
					break
				}
				got = append(got, fmt.Sprintf("port %d: %x", port, b))
			}
		}
		frames[i] = strings.Join(got, "\n")
	}
	if !strings.Contains(frames[1], "port 2:") || strings.Count(logs[1], "\n") != 1 {
		t.Errorf("Open vSwitch did not resume the changed packet into table 1's first flow: frames %q, packet-ins:\n%s", frames[1], logs[1])
	}
	t.Logf("Open vSwitch: frames\n%s\npacket-ins:\n%s", frames[1], logs[1])
	if frames[0] != frames[1] {
		t.Errorf("frames differ\ngovs:\n%s\nOVS:\n%s", frames[0], frames[1])
	}
	if logs[0] != logs[1] {
		t.Errorf("packet-ins differ\ngovs:\n%s\nOVS:\n%s", logs[0], logs[1])
	}
}
