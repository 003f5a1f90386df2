package vswitchd

import (
	"net"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/port/ifioctl"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto"
)

// OpenFlowBridge connects a datapath bridge to its OpenFlow side: packet-ins
// and port changes flow up, flow-mods and packet-outs flow down.
func OpenFlowBridge(dp *datapath.Bridge, log *zap.Logger) *ofproto.Bridge {
	ob := ofproto.NewBridge(dpAdapter{dp}, log)
	dp.OnPacketIn = ob.PacketIn
	dp.OnPortStatus = func(reason uint8, info datapath.PortInfo) {
		if reason == 0 { // OFPPR_ADD: a new netdev, read afresh
			deviceFeatures.forget(info.Name)
		}
		ob.PortStatus(reason, portInfo(info, linkFlagsOf(info.Name)))
	}
	return ob
}

// dpAdapter shows a datapath bridge as ofproto.Datapath.
type dpAdapter struct{ b *datapath.Bridge }

func (a dpAdapter) Name() string                  { return a.b.Name() }
func (a dpAdapter) DatapathID() uint64            { return a.b.DatapathID() }
func (a dpAdapter) Pipeline() *flowtable.Pipeline { return a.b.Pipeline() }

// SetPortConfig applies a port-mod. PORT_DOWN brings the port's device
// down or up first, as OVS does (update_port_config turns NETDEV_UP off
// or on): the link change then reaches the controllers as OVS reports it.
func (a dpAdapter) SetPortConfig(no, config, mask uint32) error {
	if mask&ofppcPortDown != 0 {
		for _, p := range a.b.Ports() {
			if p.OFPort == no && hasDevice(p.Kind) {
				if err := setLinkUp(p.Name, config&ofppcPortDown == 0); err != nil {
					return err
				}
			}
		}
	}
	return a.b.SetPortConfig(no, config, mask)
}

// setLinkUp sets or clears a device's IFF_UP.
func setLinkUp(name string, up bool) error {
	fd, err := ifioctl.ControlSocket()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return ifioctl.SetUp(fd, name, up)
}

// hasDevice: ports of these kinds are network devices, with a carrier
// and IFF_UP (OVS's netdev-linux); the others are vports.
func hasDevice(kind string) bool {
	switch kind {
	case datapath.KindSystem, datapath.KindAFXDP, datapath.KindInternal:
		return true
	}
	return false
}

// SyncTunnelTLV makes tunnel ports pick up a TLV map change at once.
func (a dpAdapter) SyncTunnelTLV() { a.b.SyncTunnelTLV() }

func (a dpAdapter) PacketOut(frame []byte, inPort uint32, acts []flowtable.Action) error {
	_, err := a.b.PacketOut(frame, inPort, acts)
	return err
}

func (a dpAdapter) Resume(frame []byte, md *flowtable.Match, c *flowtable.Continuation) error {
	_, err := a.b.Resume(frame, md, c)
	return err
}

// PacketOutPipeline implements ofproto.PipelinePacketOut.
func (a dpAdapter) PacketOutPipeline(frame []byte, inPort uint32, md *flowtable.Match, acts []flowtable.Action) error {
	_, err := a.b.PacketOutMetadata(frame, inPort, md, acts)
	return err
}

func (a dpAdapter) Ports() []ofproto.PortInfo {
	ps := a.b.Ports()
	links := linkFlags()
	out := make([]ofproto.PortInfo, len(ps))
	for i, p := range ps {
		out[i] = portInfo(p, links)
	}
	return out
}

// OpenFlow port config and state bits.
const (
	ofppcPortDown = 1 << 0 // OFPPC_PORT_DOWN
	ofppsLinkDown = 1 << 0 // OFPPS_LINK_DOWN
	ofppsLive     = 1 << 2 // OFPPS_LIVE (OpenFlow 1.1+)
)

// linkFlagsOf is linkFlags for one device (one ioctl): a port status per
// added port must not dump every link, which made adding 1,000 ports
// quadratic.
func linkFlagsOf(name string) map[string]net.Flags {
	fd, err := ifioctl.ControlSocket()
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	f, err := ifioctl.Flags(fd, name)
	if err != nil {
		return nil
	}
	var nf net.Flags
	if f&unix.IFF_UP != 0 {
		nf |= net.FlagUp
	}
	if f&unix.IFF_RUNNING != 0 {
		nf |= net.FlagRunning
	}
	return map[string]net.Flags{name: nf}
}

// linkFlags are the flags of the network devices, by name (one netlink
// dump for all ports).
func linkFlags() map[string]net.Flags {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	m := make(map[string]net.Flags, len(ifs))
	for _, ifc := range ifs {
		m[ifc.Name] = ifc.Flags
	}
	return m
}

// portInfo describes a port as OVS does. A port backed by a network
// device (system, internal, LOCAL) is PORT_DOWN while the device is
// administratively down, and LINK_DOWN without a carrier (IFF_RUNNING:
// down, or a veth whose peer is down), else LIVE; a tunnel is always LIVE
// (OVS's vports have no carrier to lose). A port-mod's PORT_DOWN stops
// the port whatever the device says. The features are the driver's link
// settings as last read (deviceFeatures).
func portInfo(p datapath.PortInfo, links map[string]net.Flags) ofproto.PortInfo {
	o := ofproto.PortInfo{No: p.OFPort, Name: p.Name, Config: p.Config, MTU: p.MTU}
	copy(o.HWAddr[:], p.MAC)
	up, carrier := true, true
	if hasDevice(p.Kind) {
		f, ok := links[p.Name]
		up, carrier = ok && f&net.FlagUp != 0, ok && f&net.FlagRunning != 0
		o.Features = deviceFeatures.get(p.Name)
	} else {
		o.NoDevice = true
	}
	if !up {
		o.Config |= ofppcPortDown
	}
	if p.Config&datapath.PortConfigDown != 0 || !carrier {
		o.State |= ofppsLinkDown
	} else {
		o.State |= ofppsLive
	}
	s := p.Stats
	o.Stats = ofproto.PortStats{RxPackets: s.RxPackets, RxBytes: s.RxBytes, RxDropped: s.RxDropped, RxErrors: s.RxErrors,
		TxPackets: s.TxPackets, TxBytes: s.TxBytes, TxDropped: s.TxDropped, TxErrors: s.TxErrors}
	return o
}
