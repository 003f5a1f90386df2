package ofnete2e

import (
	"encoding/binary"
	"fmt"
	"net"

	"antrea.io/libOpenflow/openflow15"
	"antrea.io/libOpenflow/util"
	"antrea.io/ofnet/ofctrl"
)

// Tables are Antrea v1.15's table names for the ids this pipeline uses.
var Tables = map[uint8]string{
	0:  "PipelineRootClassifier",
	5:  "Classifier",
	6:  "SpoofGuard",
	10: "ConntrackZone",
	11: "ConntrackState",
	13: "ServiceLB",
	14: "EndpointDNAT",
	20: "AntreaPolicyEgressRule",
	30: "L3Forwarding",
	40: "L2ForwardingCalc",
	42: "IngressRule",
	44: "IngressMetric",
	45: "ConntrackCommit",
	50: "Output",
}

// Cookie categories, in the bits Antrea keeps for them (round in the top
// byte, category below), so deletion by cookie mask removes one category.
const (
	CookieRound    = uint64(0x01) << 56
	CookieFixed    = CookieRound | uint64(1)<<40
	CookiePod      = CookieRound | uint64(2)<<40
	CookieService  = CookieRound | uint64(3)<<40
	CookiePolicy   = CookieRound | uint64(4)<<40
	CookieCtrl     = CookieRound | uint64(5)<<40
	CookieCategory = uint64(0xff)<<56 | uint64(0xff)<<40
)

// Builder makes Antrea-shaped flows and groups on one switch.
type Builder struct {
	sw *ofctrl.OFSwitch
}

func NewBuilder(sw *ofctrl.OFSwitch) *Builder { return &Builder{sw: sw} }

func (b *Builder) flow(table uint8, priority uint16, cookie uint64) *ofctrl.Flow {
	t := b.sw.GetTable(table)
	if t == nil {
		panic(fmt.Sprintf("table %d not created", table))
	}
	return &ofctrl.Flow{Table: t, Match: ofctrl.FlowMatch{Priority: priority}, CookieID: cookie}
}

func reg(id int, value uint32, lo, hi uint16) *ofctrl.NXRegister {
	return &ofctrl.NXRegister{ID: id, Data: value, Range: openflow15.NewNXRange(int(lo), int(hi))}
}

// loadReg is set_field:value->regN[lo..hi] (Antrea's LoadRegMark).
func loadReg(id int, value uint32, lo, hi uint16) ofctrl.OFAction {
	r := openflow15.NewNXRange(int(lo), int(hi))
	mask := ^uint32(0) >> (32 - r.GetNbits()) << r.GetOfs()
	return ofctrl.NewSetFieldAction(openflow15.NewRegMatchFieldWithMask(id, value<<r.GetOfs(), mask))
}

func oxm(name string) *openflow15.OxmId {
	id, err := openflow15.FindOxmIdByName(name, false)
	if err != nil {
		panic(err)
	}
	return id
}

// ctFlow is an IP flow of the fixed part matching a tracked connection's
// state (+trk and one more bit).
func (b *Builder) ctFlow(table uint8, priority uint16, state func(*openflow15.CTStates)) *ofctrl.Flow {
	f := b.flow(table, priority, CookieFixed)
	f.Match.Ethertype = 0x0800
	st := openflow15.NewCTStates()
	state(st)
	st.SetTrk()
	f.Match.CtStates = st
	return f
}

// Fixed is the part of the pipeline that does not depend on pods or
// Services: conntrack zones and states, the commit with ct_mark set and
// moved inside ct(exec), the output by register.
func (b *Builder) Fixed() []*ofctrl.Flow {
	var out []*ofctrl.Flow
	ctTable, zone := uint8(11), uint16(65520)

	f := b.flow(0, 190, CookieFixed)
	f.Match.Ethertype = 0x0800
	f.Goto(5)
	out = append(out, f)

	f = b.flow(10, 200, CookieFixed)
	f.Match.Ethertype = 0x0800
	f.ApplyAction(ofctrl.NewNXConnTrackAction(false, false, &ctTable, &zone))
	out = append(out, f)

	f = b.ctFlow(11, 210, (*openflow15.CTStates).SetInv) // +inv+trk
	f.Drop()
	out = append(out, f)

	f = b.ctFlow(11, 190, (*openflow15.CTStates).UnsetNew) // -new+trk
	mask := uint32(0x10)
	f.Match.CtMark, f.Match.CtMarkMask = 0x10, &mask
	f.ApplyAction(loadReg(0, 1, 9, 9))
	f.Goto(13)
	out = append(out, f)

	commitTable := uint8(50)
	f = b.ctFlow(45, 200, (*openflow15.CTStates).SetNew) // +new+trk
	markMask := uint32(0x10)
	f.ApplyAction(ofctrl.NewNXConnTrackAction(true, false, &commitTable, &zone,
		openflow15.NewActionSetField(*openflow15.NewCTMarkMatchField(0x10, &markMask)),
		openflow15.NewActionCopyField(4, 0, 0, *oxm("NXM_NX_REG0"), *oxm("NXM_NX_CT_MARK"))))
	out = append(out, f)

	f = b.flow(50, 200, CookieFixed)
	f.Match.NxRegs = []*ofctrl.NXRegister{reg(0, 1, 21, 22)}
	out1, err := ofctrl.NewNXOutput("NXM_NX_REG1", 0, 31)
	if err != nil {
		panic(err)
	}
	f.ApplyAction(out1)
	out = append(out, f)
	return out
}

// podIP, podMAC and podPort number pod i of a node.
func podIP(i int) net.IP { return net.IPv4(10, 10, byte(i>>8), byte(i)).To4() }
func podMAC(i int) net.HardwareAddr {
	return net.HardwareAddr{0xaa, 0xbb, 0xcc, 0, byte(i >> 8), byte(i)}
}
func podPort(i int) uint32 { return uint32(10 + i) }

var gwMAC = net.HardwareAddr{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}

// Pods are eight flows per pod: classifier, spoof guard, L3 and L2
// forwarding, and a two-clause ingress policy as conjunctions.
func (b *Builder) Pods(n int) []*ofctrl.Flow {
	var out []*ofctrl.Flow
	for i := 0; i < n; i++ {
		ip, mac, port := podIP(i), podMAC(i), podPort(i)

		f := b.flow(5, 190, CookiePod|uint64(i))
		f.Match.InputPort = port
		f.ApplyAction(loadReg(0, 3, 0, 3))
		f.Goto(6)
		out = append(out, f)

		f = b.flow(6, 200, CookiePod|uint64(i))
		f.Match.Ethertype, f.Match.InputPort, f.Match.MacSa, f.Match.IpSa = 0x0800, port, &mac, &ip
		f.Goto(10)
		out = append(out, f)

		f = b.flow(30, 200, CookiePod|uint64(i))
		f.Match.Ethertype, f.Match.IpDa = 0x0800, &ip
		f.Match.NxRegs = []*ofctrl.NXRegister{reg(0, 1, 9, 9)}
		f.ApplyActions([]ofctrl.OFAction{&ofctrl.SetSrcMACAction{MAC: gwMAC}, &ofctrl.SetDstMACAction{MAC: mac}, &ofctrl.DecTTLAction{}})
		f.Goto(40)
		out = append(out, f)

		f = b.flow(40, 200, CookiePod|uint64(i))
		f.Match.MacDa = &mac
		f.ApplyActions([]ofctrl.OFAction{loadReg(1, port, 0, 31), loadReg(0, 1, 21, 22)})
		f.Goto(42)
		out = append(out, f)

		conj := uint32(1000 + i)
		peer := podIP(i + 1)
		f = b.flow(42, 200, CookiePolicy|uint64(i))
		f.Match.Ethertype, f.Match.IpSa = 0x0800, &peer
		c1, _ := ofctrl.NewNXConjunctionAction(conj, 1, 2)
		f.ApplyAction(c1)
		out = append(out, f)

		f = b.flow(42, 200, CookiePolicy|uint64(i))
		f.Match.Ethertype = 0x0800
		f.Match.NxRegs = []*ofctrl.NXRegister{reg(1, port, 0, 31)}
		c2, _ := ofctrl.NewNXConjunctionAction(conj, 2, 2)
		f.ApplyAction(c2)
		out = append(out, f)

		f = b.flow(42, 190, CookiePolicy|uint64(i))
		f.Match.Ethertype, f.Match.ConjunctionID = 0x0800, &conj
		f.ApplyAction(loadReg(6, conj, 0, 31))
		f.Goto(44)
		out = append(out, f)

		f = b.flow(44, 200, CookiePolicy|uint64(i))
		f.Match.Ethertype = 0x0800
		f.Match.NxRegs = []*ofctrl.NXRegister{reg(6, conj, 0, 31)}
		f.Goto(45)
		out = append(out, f)
	}
	return out
}

func serviceIP(j int) net.IP { return net.IPv4(10, 96, byte(j>>8), byte(j)).To4() }
func endpointIP(j, k int) uint32 {
	return binary.BigEndian.Uint32(podIP(3*j + k))
}

// Services are one select group with three weighted buckets per Service,
// the ServiceLB flow that names it, and one EndpointDNAT flow per endpoint
// (ct commit with ct_mark set in exec).
func (b *Builder) Services(n int) ([]*ofctrl.Group, []*ofctrl.Flow) {
	var groups []*ofctrl.Group
	var flows []*ofctrl.Flow
	dnatTable, zone := uint8(20), uint16(65520)
	for j := 0; j < n; j++ {
		g, err := b.sw.NewGroup(uint32(j+1), ofctrl.GroupSelect)
		if err != nil {
			g = b.sw.GetGroup(uint32(j + 1))
			g.ResetBuckets()
		}
		for k := 0; k < 3; k++ {
			bk := openflow15.NewBucket(uint32(k))
			bk.AddProperty(openflow15.NewGroupBucketPropWeight(100))
			bk.AddAction(openflow15.NewActionSetField(*openflow15.NewRegMatchFieldWithMask(3, endpointIP(j, k), 0xffffffff)))
			bk.AddAction(openflow15.NewActionSetField(*openflow15.NewRegMatchFieldWithMask(4, 0x28080, 0x7ffff)))
			bk.AddAction(openflow15.NewNXActionResubmitTableAction(openflow15.OFPP_IN_PORT, 14))
			g.AddBuckets(bk)
		}
		groups = append(groups, g)

		svc := serviceIP(j)
		f := b.flow(13, 200, CookieService|uint64(j))
		f.Match.Ethertype, f.Match.IpProto, f.Match.IpDa, f.Match.DstPort = 0x0800, ofctrl.IP_PROTO_TCP, &svc, 80
		f.Match.NxRegs = []*ofctrl.NXRegister{reg(4, 1, 16, 18)}
		f.ApplyActions([]ofctrl.OFAction{loadReg(4, 2, 16, 18), g})
		flows = append(flows, f)

		for k := 0; k < 3; k++ {
			f := b.flow(14, 200, CookieService|uint64(j))
			f.Match.Ethertype, f.Match.IpProto = 0x0800, ofctrl.IP_PROTO_TCP
			f.Match.NxRegs = []*ofctrl.NXRegister{reg(3, endpointIP(j, k), 0, 31), reg(4, 0x28080, 0, 18)}
			markMask := uint32(0x20)
			f.ApplyAction(ofctrl.NewNXConnTrackAction(true, false, &dnatTable, &zone,
				openflow15.NewActionSetField(*openflow15.NewCTMarkMatchField(0x20, &markMask))))
			flows = append(flows, f)
		}
	}
	return groups, flows
}

// Node is a node's pipeline of about flowsWanted flows: the fixed part,
// pods (8 flows each) and Services (4 flows and a group each) in the ratio
// 2 pods : 1 Service.
func (b *Builder) Node(flowsWanted int) ([]*ofctrl.Group, []*ofctrl.Flow) {
	services := flowsWanted / 20
	pods := (flowsWanted - 4*services) / 8
	groups, svcFlows := b.Services(services)
	flows := append(b.Fixed(), b.Pods(pods)...)
	return groups, append(flows, svcFlows...)
}

// Meters are Antrea's packet-in meters: 5,000 pps with a burst of twice that.
func (b *Builder) Meters(ids ...uint32) []*ofctrl.Meter {
	var out []*ofctrl.Meter
	for _, id := range ids {
		m, err := b.sw.NewMeter(id, ofctrl.MeterBurst|ofctrl.MeterPktps)
		if err != nil {
			m = b.sw.GetMeter(id)
			m.MeterBands = nil
		}
		band := openflow15.NewMeterBandDrop()
		band.Rate, band.BurstSize = 5000, 10000
		var msg util.Message = band
		m.AddMeterBand(&msg)
		out = append(out, m)
	}
	return out
}

// Packet-in flows: what Antrea sends to the agent, behind the packet-in meter.
const (
	CtrlIP   = "10.10.255.99" // TCP to it goes to the controller (userdata 01:02)
	PauseIP  = "10.10.255.53" // UDP to it pauses (userdata 02:00), then 03:00 after resume
	CtrlPort = 1
)

// Controller flows: a packet-in with userdata and reason action behind
// meter 256 (Antrea's NetworkPolicy logging); and a paused packet-in (the
// FQDN DNS-response interception) that, resumed, sets reg3 and goes on to
// a second packet-in.
func (b *Builder) Controller(ctrlID uint16) []*ofctrl.Flow {
	var out []*ofctrl.Flow
	ip := net.ParseIP(CtrlIP).To4()
	f := b.flow(0, 300, CookieCtrl|1)
	f.Match.Ethertype, f.Match.IpProto, f.Match.IpDa = 0x0800, ofctrl.IP_PROTO_TCP, &ip
	f.ApplyActions([]ofctrl.OFAction{
		loadReg(0, 0x1234, 0, 15),
		ofctrl.NewMeterAction(256),
		&ofctrl.NXController{Version2: true, ControllerID: ctrlID, Reason: 1, UserData: []byte{1, 2}},
	})
	out = append(out, f)

	pip := net.ParseIP(PauseIP).To4()
	f = b.flow(0, 300, CookieCtrl|2)
	f.Match.Ethertype, f.Match.IpProto, f.Match.IpDa = 0x0800, ofctrl.IP_PROTO_UDP, &pip
	f.ApplyActions([]ofctrl.OFAction{
		loadReg(2, 0x55, 0, 31),
		&ofctrl.NXController{Version2: true, ControllerID: ctrlID, Reason: 1, UserData: []byte{2, 0}, Pause: true},
		loadReg(3, 0x66, 0, 31),
	})
	f.Goto(50)
	out = append(out, f)

	f = b.flow(50, 300, CookieCtrl|3)
	f.Match.Ethertype, f.Match.IpProto, f.Match.IpDa = 0x0800, ofctrl.IP_PROTO_UDP, &pip
	f.ApplyAction(&ofctrl.NXController{Version2: true, ControllerID: ctrlID, Reason: 1, UserData: []byte{3, 0}})
	out = append(out, f)
	return out
}
