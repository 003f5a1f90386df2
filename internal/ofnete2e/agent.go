// Package ofnete2e drives a switch the way Antrea's agent does, through
// antrea.io/ofnet over OpenFlow 1.5 on the bridge's unix management socket, so
// that govs and Open vSwitch can be given the same session and compared.
//
// The agent follows pkg/ovs/openflow/ofctrl_bridge.go of Antrea: connect,
// EnableMonitor, the table-features get and set (table names), then meters
// (direct METER_MOD), groups and flows in ORDERED bundles, flows in ATOMIC
// bundles, packet-outs, packet-ins (NXT_PACKET_IN2 with userdata),
// controller(pause) continuations resumed with NXT_RESUME, flow deletion by
// cookie and cookie mask over all tables, and group/meter delete-all.
package ofnete2e

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"antrea.io/libOpenflow/common"
	"antrea.io/libOpenflow/openflow15"
	"antrea.io/libOpenflow/util"
	"antrea.io/ofnet/ofctrl"
)

// Agent is one controller connection, an ofctrl.AppInterface as Antrea's OFBridge.
type Agent struct {
	ctrl      *ofctrl.Controller
	connected chan *ofctrl.OFSwitch
	sw        *ofctrl.OFSwitch

	// PacketIns receives every packet-in, in order.
	PacketIns chan *ofctrl.PacketIn

	// Table names sent in the table-features set request (Antrea's tableCache).
	tableNames map[uint8]string

	mu        sync.Mutex
	featXid   uint32 // xid of the table-features get request
	getParts  int    // replies to the get request
	getTables int    // tables in them
	setParts  int    // replies to the set request
	setTables int
	setSent   int    // set-request parts sent
	setXid    uint32 // their common xid
	featDone  chan struct{}
	portState chan *openflow15.PortStatus
}

// Connect dials the bridge's management socket (as ofctrl.Controller.Connect
// does for Antrea) and returns once the switch is connected and the table
// features exchange is finished.
func Connect(mgmt string, tableNames map[uint8]string, timeout time.Duration) (*Agent, error) {
	a := &Agent{
		connected:  make(chan *ofctrl.OFSwitch, 1),
		PacketIns:  make(chan *ofctrl.PacketIn, 64),
		tableNames: tableNames,
		featDone:   make(chan struct{}),
		portState:  make(chan *openflow15.PortStatus, 64),
	}
	a.ctrl = ofctrl.NewController(a)
	errc := make(chan error, 1)
	go func() { errc <- a.ctrl.Connect(mgmt) }()
	select {
	case a.sw = <-a.connected:
	case err := <-errc:
		return nil, fmt.Errorf("ofnet connect %s: %v", mgmt, err)
	case <-time.After(timeout):
		a.ctrl.Delete()
		return nil, fmt.Errorf("ofnet connect %s: no switch after %v", mgmt, timeout)
	}
	select {
	case <-a.featDone:
	case <-time.After(timeout):
		a.Close()
		return nil, fmt.Errorf("table features: %s after %v", a.FeaturesSummary(), timeout)
	}
	return a, nil
}

// Switch is the connected switch.
func (a *Agent) Switch() *ofctrl.OFSwitch { return a.sw }

// Close disconnects.
func (a *Agent) Close() { a.ctrl.Delete() }

// SwitchConnected is what Antrea's OFBridge.SwitchConnected does: packet-in
// format NXT_PACKET_IN2, the flow-stats monitor, create the tables, then query the table features.
func (a *Agent) SwitchConnected(sw *ofctrl.OFSwitch) {
	// Antrea asks for NXT_PACKET_IN2 (userdata, continuations) first.
	_ = sw.SetPacketInFormat(openflow15.OFPUTIL_PACKET_IN_NXT2)
	sw.EnableMonitor()
	for id := range a.tableNames {
		if id != 0 {
			if _, err := sw.NewTable(id); err != nil && sw.GetTable(id) == nil {
				panic(fmt.Sprintf("ofnet NewTable(%d): %v", id, err))
			}
		}
	}
	req := &openflow15.MultipartRequest{Header: openflow15.NewOfp15Header(), Type: openflow15.MultipartType_TableFeatures}
	req.Header.Type = openflow15.Type_MultiPartRequest
	req.Header.Length = req.Len()
	a.mu.Lock()
	a.featXid = req.Xid
	a.mu.Unlock()
	_ = sw.Send(req)
	a.connected <- sw
}

// MultipartReply answers each table-features reply with a set-request part
// that renames the agent's tables, as Antrea's processTableFeatures does
// (all parts share one xid; the last one has flags 0).
func (a *Agent) MultipartReply(sw *ofctrl.OFSwitch, rep *openflow15.MultipartReply) {
	if rep.Type != openflow15.MultipartType_TableFeatures {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if rep.Xid != a.featXid {
		a.setParts++
		a.setTables += len(rep.Body)
		if rep.Flags == 0 {
			close(a.featDone)
		}
		return
	}
	a.getParts++
	a.getTables += len(rep.Body)
	req := &openflow15.MultipartRequest{Header: a.setHeader(), Type: openflow15.MultipartType_TableFeatures, Flags: rep.Flags}
	for _, body := range rep.Body {
		tf := body.(*openflow15.TableFeatures)
		if name, ok := a.tableNames[tf.TableID]; ok {
			tf.Name = make([]byte, 32) // OFP_MAX_TABLE_NAME_LEN
			copy(tf.Name, name)
		}
		req.Body = append(req.Body, tf)
	}
	req.Length = req.Len()
	a.setSent++
	_ = sw.Send(req)
}

// setHeader is the one header all set-request parts share.
func (a *Agent) setHeader() common.Header {
	h := openflow15.NewOfp15Header()
	if a.setXid == 0 {
		a.setXid = h.Xid
	}
	h.Xid = a.setXid
	h.Type = openflow15.Type_MultiPartRequest
	return h
}

// FeaturesSummary tells how the table-features exchange went.
func (a *Agent) FeaturesSummary() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("get: %d replies, %d tables; set: %d parts sent, %d replies, %d tables",
		a.getParts, a.getTables, a.setSent, a.setParts, a.setTables)
}

func (a *Agent) SwitchDisconnected(sw *ofctrl.OFSwitch) {}

func (a *Agent) PacketRcvd(sw *ofctrl.OFSwitch, pkt *ofctrl.PacketIn) {
	select {
	case a.PacketIns <- pkt:
	default: // as Antrea's PacketInQueue: drop when full
	}
}

func (a *Agent) FlowGraphEnabledOnSwitch() bool { return true }
func (a *Agent) TLVMapEnabledOnSwitch() bool    { return false }

func (a *Agent) PortStatusRcvd(status *openflow15.PortStatus) {
	select {
	case a.portState <- status:
	default:
	}
}

// BundleStats is what one bundle took.
type BundleStats struct {
	Messages int
	Send     time.Duration // open + add messages + close
	Commit   time.Duration // the commit request until its reply
	CPU      time.Duration // the switch's CPU time for all of it (set by the caller)
	// ClientCPU is this process's CPU time over the bundle: ofnet's
	// encoding and writing, a floor under the wall time of any switch.
	ClientCPU time.Duration
}

// processCPU is the calling process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Bundle sends msgs in one bundle with the given flag (ofctrl.Atomic or
// ofctrl.Ordered) the way Antrea's AddOFEntriesInBundle does: open, add
// every message, close (Complete counts the accepted adds), commit.
func (a *Agent) Bundle(flag ofctrl.TransactionType, msgs []ofctrl.OpenFlowModMessage) (st BundleStats, err error) {
	st = BundleStats{Messages: len(msgs)}
	cpu0 := processCPU()
	defer func() { st.ClientCPU = processCPU() - cpu0 }()
	start := time.Now()
	tx := a.sw.NewTransaction(flag)
	if err := tx.Begin(); err != nil {
		return st, fmt.Errorf("bundle open: %w", err)
	}
	for _, m := range msgs {
		if err := tx.AddMessage(m); err != nil {
			return st, fmt.Errorf("bundle add: %w", err)
		}
	}
	n, err := tx.Complete()
	if err != nil {
		return st, fmt.Errorf("bundle close: %w", err)
	}
	if n != len(msgs) {
		_ = tx.Abort()
		return st, fmt.Errorf("bundle close: %d of %d messages accepted", n, len(msgs))
	}
	st.Send = time.Since(start)
	start = time.Now()
	if err := tx.Commit(); err != nil {
		return st, fmt.Errorf("bundle commit: %w", err)
	}
	st.Commit = time.Since(start)
	return st, nil
}

// FlowMessages turns flows into bundle messages with one command.
func FlowMessages(flows []*ofctrl.Flow, command int) ([]ofctrl.OpenFlowModMessage, error) {
	out := make([]ofctrl.OpenFlowModMessage, 0, len(flows))
	for _, f := range flows {
		m, err := f.GetBundleMessage(command)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// DeleteFlowsByCookie is Antrea's OFBridge.DeleteFlowsByCookie: a FLOW_MOD
// DELETE over all tables matching the cookie under the mask.
func (a *Agent) DeleteFlowsByCookie(cookie, mask uint64) error {
	fm := openflow15.NewFlowMod()
	fm.Command = openflow15.FC_DELETE
	fm.Cookie = cookie
	fm.CookieMask = mask
	fm.OutPort = openflow15.P_ANY
	fm.OutGroup = openflow15.OFPG_ANY
	fm.TableId = openflow15.OFPTT_ALL
	return a.sw.Send(fm)
}

// DeleteAllGroups and DeleteAllMeters are Antrea's startup cleanup.
func (a *Agent) DeleteAllGroups() error {
	gm := openflow15.NewGroupMod()
	gm.Command = openflow15.OFPGC_DELETE
	gm.GroupId = openflow15.OFPG_ALL
	return a.sw.Send(gm)
}

func (a *Agent) DeleteAllMeters() error {
	mm := openflow15.NewMeterMod()
	mm.Command = openflow15.MC_DELETE
	mm.MeterId = 0xffffffff // OFPM_ALL
	return a.sw.Send(mm)
}

// Barrier waits until the switch has handled everything sent before it: ofnet
// has no barrier call, so a flow-stats request (answered in order) stands in.
func (a *Agent) Barrier() error {
	_, err := a.sw.DumpFlowStats(0xfeedfacecafe, nil, nil, nil)
	return err
}

// WaitPacketIn returns the next packet-in or an error after d.
func (a *Agent) WaitPacketIn(d time.Duration) (*ofctrl.PacketIn, error) {
	select {
	case p := <-a.PacketIns:
		return p, nil
	case <-time.After(d):
		return nil, errors.New("no packet-in")
	}
}

// PacketBytes is the Ethernet frame of a packet-in.
func PacketBytes(p *ofctrl.PacketIn) []byte {
	if p.Data == nil {
		return nil
	}
	if b, ok := p.Data.(*util.Buffer); ok {
		return b.Bytes()
	}
	b, _ := p.Data.MarshalBinary()
	return b
}
