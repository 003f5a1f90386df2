package vswitchd

import (
	"go.uber.org/zap"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto"
)

// OpenFlowBridge connects a datapath bridge to its OpenFlow side: packet-ins
// and port changes flow up, flow-mods and packet-outs flow down.
func OpenFlowBridge(dp *datapath.Bridge, log *zap.Logger) *ofproto.Bridge {
	ob := ofproto.NewBridge(dpAdapter{dp}, log)
	dp.OnPacketIn = ob.PacketIn
	dp.OnPortStatus = func(reason uint8, info datapath.PortInfo) {
		ob.PortStatus(reason, portInfo(info))
	}
	return ob
}

// dpAdapter shows a datapath bridge as ofproto.Datapath.
type dpAdapter struct{ b *datapath.Bridge }

func (a dpAdapter) Name() string                  { return a.b.Name() }
func (a dpAdapter) DatapathID() uint64            { return a.b.DatapathID() }
func (a dpAdapter) Pipeline() *flowtable.Pipeline { return a.b.Pipeline() }
func (a dpAdapter) SetPortConfig(no, config, mask uint32) error {
	return a.b.SetPortConfig(no, config, mask)
}

// SyncTunnelTLV makes tunnel ports pick up a TLV map change at once.
func (a dpAdapter) SyncTunnelTLV() { a.b.SyncTunnelTLV() }

func (a dpAdapter) PacketOut(frame []byte, inPort uint32, acts []flowtable.Action) error {
	_, err := a.b.PacketOut(frame, inPort, acts)
	return err
}

// PacketOutPipeline implements ofproto.PipelinePacketOut.
func (a dpAdapter) PacketOutPipeline(frame []byte, inPort uint32, md *flowtable.Match, acts []flowtable.Action) error {
	_, err := a.b.PacketOutMetadata(frame, inPort, md, acts)
	return err
}

func (a dpAdapter) Ports() []ofproto.PortInfo {
	ps := a.b.Ports()
	out := make([]ofproto.PortInfo, len(ps))
	for i, p := range ps {
		out[i] = portInfo(p)
	}
	return out
}

func portInfo(p datapath.PortInfo) ofproto.PortInfo {
	o := ofproto.PortInfo{No: p.OFPort, Name: p.Name, Config: p.Config, MTU: p.MTU}
	copy(o.HWAddr[:], p.MAC)
	if p.Config&datapath.PortConfigDown != 0 {
		o.State |= 1 // OFPPS_LINK_DOWN
	}
	s := p.Stats
	o.Stats = ofproto.PortStats{RxPackets: s.RxPackets, RxBytes: s.RxBytes, RxDropped: s.RxDropped, RxErrors: s.RxErrors,
		TxPackets: s.TxPackets, TxBytes: s.TxBytes, TxDropped: s.TxDropped, TxErrors: s.TxErrors}
	return o
}
