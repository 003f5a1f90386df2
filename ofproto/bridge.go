package ofproto

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/wire"
)

// PortInfo is what the OpenFlow side knows about a port.
type PortInfo struct {
	No     uint32
	Name   string
	HWAddr [6]byte
	Config uint32 // OFPPC_* bits
	State  uint32 // OFPPS_* bits
	MTU    int
	Stats  PortStats
	// NoDevice: the port has no network device to bring up or down (a
	// tunnel: OVS's vports refuse NETDEV_UP changes), and no link speed.
	NoDevice bool
	Features PortFeatures
}

// PortFeatures are a port's link as its device reports it: OpenFlow 1.1's
// OFPPF_* bits (OVS's NETDEV_F_*) and speeds in kb/s. All zero for a
// tunnel and a device whose driver has no link settings.
type PortFeatures struct {
	Curr, Advertised, Supported, Peer uint32
	CurrSpeed, MaxSpeed               uint32
}

// ofp10Features is OVS's netdev_port_features_to_ofp10: the speeds up to
// 10 Gb/s keep their bits, the medium, autonegotiation and pause bits move
// down four, faster speeds are lost.
func ofp10Features(f uint32) uint32 {
	return f&0x7f | f&0xf800>>4
}

// PortStats are a port's counters.
type PortStats struct {
	RxPackets, RxBytes, RxDropped, RxErrors uint64
	TxPackets, TxBytes, TxDropped, TxErrors uint64
}

// Datapath is what an OpenFlow bridge needs from the packet side.
type Datapath interface {
	Name() string
	DatapathID() uint64
	Pipeline() *flowtable.Pipeline
	Ports() []PortInfo
	// SetPortConfig applies a port-mod (config bits under mask).
	SetPortConfig(no, config, mask uint32) error
	// PacketOut runs a controller's packet-out.
	PacketOut(frame []byte, inPort uint32, actions []flowtable.Action) error
}

// PipelinePacketOut is implemented by a Datapath that runs an OpenFlow 1.5
// packet-out with the pipeline fields of its match (metadata, registers,
// tunnel fields) set on the packet, as Open vSwitch does; md includes
// in_port.
type PipelinePacketOut interface {
	PacketOutPipeline(frame []byte, inPort uint32, md *flowtable.Match, actions []flowtable.Action) error
}

// Bridge serves OpenFlow for one bridge: it keeps the controller
// connections, applies their requests to the pipeline and sends them the
// asynchronous messages (packet-in, port-status, flow-removed).
type Bridge struct {
	dp      Datapath
	p       *flowtable.Pipeline
	log     *zap.Logger
	started time.Time

	mu    sync.Mutex
	conns map[*Conn]struct{}
	// genID is the master's generation id (role requests).
	genID    uint64
	hasGenID bool
	// tableNames are the table names a controller set (table features).
	tableNames map[uint8]string
	// tableFeaturesWire are the table features replies for tableNames,
	// encoded, per OpenFlow version (nil: none built since the names
	// changed). ovs-ofctl asks for them (the table names) before every
	// flow command: 254 tables' ~700 KB took 5-6 ms and 6 MB of garbage
	// to build each time.
	tableFeaturesWire map[uint8][][]byte
	tableNamesGen     uint64 // counts the sets of tableNames
	// roleMu serializes role changes across connections.
	roleMu sync.Mutex
	// lastLimitLog rate-limits the "limit reached" log line (unix ns).
	lastLimitLog atomic.Int64
	// uuid names the bridge in its continuations (NXCPT_BRIDGE).
	uuid [16]byte
	// portMu guards ports, the ports as last announced (portstatus.go).
	portMu sync.Mutex
	ports  map[uint32]*announcedPort
}

// NewBridge returns the OpenFlow side of a datapath bridge.
func NewBridge(dp Datapath, log *zap.Logger) *Bridge {
	if log == nil {
		log = zap.NewNop()
	}
	b := &Bridge{dp: dp, p: dp.Pipeline(), log: log, started: time.Now(), conns: map[*Conn]struct{}{}, uuid: newBridgeUUID()}
	b.seedPorts(dp.Ports())
	return b
}

// Handlers returns the factory listeners use: every connection of the
// bridge shares it.
func (b *Bridge) Handlers() HandlerFactory {
	return func() Handler { return b }
}

// Closed implements Handler.
func (b *Bridge) Closed(c *Conn) {
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
}

// Connected registers a connection as soon as its handshake is done, so
// it gets asynchronous messages before its first request.
func (b *Bridge) Connected(c *Conn) { b.register(c) }

func (b *Bridge) register(c *Conn) {
	b.mu.Lock()
	b.conns[c] = struct{}{}
	b.mu.Unlock()
}

// connections returns the current connections.
func (b *Bridge) connections() []*Conn {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*Conn, 0, len(b.conns))
	for c := range b.conns {
		out = append(out, c)
	}
	return out
}

func ofpErr(c *Conn, sym wire.ErrorCode, format string, args ...any) error {
	e := wire.NewError(c.Version(), sym)
	e.Detail = fmt.Sprintf(format, args...)
	return e
}

// HandleMessage implements Handler.
func (b *Bridge) HandleMessage(c *Conn, h wire.Header, raw []byte, m wire.Message) error {
	b.register(c)
	switch m := m.(type) {
	case *wire.FeaturesRequest:
		return c.Send(h.Xid, b.features(c))
	case *wire.GetConfigRequest:
		return c.Send(h.Xid, &wire.SwitchConfig{Reply: true, Flags: c.State.ConfigFlags, MissSendLen: uint16(c.State.MissSendLen.Load())})
	case *wire.SwitchConfig:
		if m.Reply {
			return ofpErr(c, wire.OFPBRC_BAD_TYPE, "unexpected get-config reply")
		}
		c.State.ConfigFlags = m.Flags
		c.State.MissSendLen.Store(uint32(m.MissSendLen))
		return nil
	case *wire.BarrierRequest:
		// Requests are processed in order, so every earlier one is done.
		return c.Send(h.Xid, &wire.BarrierReply{})
	case *wire.RoleMsg:
		return b.role(c, h, m)
	case *wire.GetAsyncRequest:
		ac := c.State.AsyncConfig(c.Version())
		return c.Send(h.Xid, ac.asyncReply(c.Version()))
	case *wire.AsyncConfig:
		if m.Reply {
			return ofpErr(c, wire.OFPBRC_BAD_TYPE, "unexpected get-async reply")
		}
		return b.setAsync(c, m)
	case *wire.NXSetFlowFormat:
		if m.Format != 0 && m.Format != 2 {
			return ofpErr(c, wire.OFPBRC_EPERM, "flow format %d", m.Format)
		}
		c.State.FlowFormat = m.Format
		return nil
	case *wire.NXFlowModTableID:
		c.State.FlowModTableID = m.Set != 0
		return nil
	case *wire.NXSetPacketInFormat:
		if m.Format > 2 {
			return ofpErr(c, wire.OFPBRC_EPERM, "packet-in format %d", m.Format)
		}
		c.State.PacketInFormat = m.Format
		return nil
	case *wire.NXSetControllerID:
		c.State.ControllerID = m.ControllerID
		return nil
	case *wire.NXCTFlushZone:
		return b.ctFlushZone(c, m)
	case *wire.NXTLVTableMod:
		return b.tlvMod(c, m)
	case *wire.NXTLVTableRequest:
		return c.Send(h.Xid, b.tlvReply())
	case *wire.PortMod:
		return b.portMod(c, m)
	case *wire.TableMod:
		return nil // table config (eviction, vacancy) is accepted and ignored, as OVS mostly does
	case *wire.FlowMod:
		if err := b.slaveCheck(c); err != nil {
			return err
		}
		return b.mods(c, []modReq{b.newFlowModReq(c, h, raw, m)}, nil)
	case *wire.GroupMod:
		if err := b.slaveCheck(c); err != nil {
			return err
		}
		return b.mods(c, []modReq{b.newGroupModReq(c, h, raw, m)}, nil)
	case *wire.MeterMod:
		return b.meterMod(c, m)
	case *wire.PacketOut:
		if err := b.slaveCheck(c); err != nil {
			return err
		}
		return b.packetOut(c, m)
	case *wire.NXResume:
		return b.resume(c, raw)
	case *wire.Multipart:
		return b.multipart(c, h, m)
	case *wire.BundleControl:
		return b.bundleControl(c, h, m)
	case *wire.BundleAdd:
		return b.bundleAdd(c, h, raw, m)
	case *wire.ErrorMsg, *wire.BarrierReply, *wire.FeaturesReply, *wire.PortStatus, *wire.PacketIn, *wire.FlowRemoved:
		return nil // replies and async messages from a peer that is itself a switch
	}
	return ofpErr(c, wire.OFPBRC_BAD_TYPE, "message %T not supported", m)
}

// slaveCheck refuses state changes from a slave controller (OFPBRC_IS_SECONDARY).
func (b *Bridge) slaveCheck(c *Conn) error {
	if c.State.Role.Load() == roleSlave {
		return ofpErr(c, wire.OFPBRC_IS_SECONDARY, "controller is a slave")
	}
	return nil
}

func (b *Bridge) role(c *Conn, h wire.Header, m *wire.RoleMsg) error {
	switch m.Role {
	case roleNoChange:
	case roleEqual, roleMaster, roleSlave:
		if m.Role != roleEqual {
			b.mu.Lock()
			if b.hasGenID && int64(m.GenerationID-b.genID) < 0 {
				b.mu.Unlock()
				return ofpErr(c, wire.OFPRRFC_STALE, "stale generation id")
			}
			b.genID, b.hasGenID = m.GenerationID, true
			b.mu.Unlock()
		}
		// Role changes are serialized so two connections asking to be
		// master at once end with exactly one.
		b.roleMu.Lock()
		if m.Role == roleMaster {
			// A new master demotes the old one to slave.
			for _, o := range b.connections() {
				if o != c {
					o.State.Role.CompareAndSwap(roleMaster, roleSlave)
				}
			}
		}
		c.State.Role.Store(m.Role)
		b.roleMu.Unlock()
	default:
		return ofpErr(c, wire.OFPRRFC_BAD_ROLE, "role %d", m.Role)
	}
	b.mu.Lock()
	gen := b.genID
	b.mu.Unlock()
	return c.Send(h.Xid, &wire.RoleMsg{Reply: true, Role: c.State.Role.Load(), GenerationID: gen})
}

func (b *Bridge) tlvMod(c *Conn, m *wire.NXTLVTableMod) error {
	var ms []flowtable.TLVMapping
	for _, x := range m.Maps {
		ms = append(ms, flowtable.TLVMapping{Class: x.OptClass, Type: x.OptType, Len: x.OptLen, Index: int(x.Index)})
	}
	switch m.Command {
	case 0: // NXTTMC_ADD
		if err := b.p.TLV.Add(ms...); err != nil {
			if errors.Is(err, flowtable.ErrTLVSpaceFull) {
				return ofpErr(c, wire.NXTTMFC_TABLE_FULL, "%v", err)
			}
			return ofpErr(c, wire.NXTTMFC_ALREADY_MAPPED, "%v", err)
		}
	case 1: // NXTTMC_DELETE
		var idx []int
		for _, x := range ms {
			idx = append(idx, x.Index)
		}
		if err := b.p.TLV.Delete(idx...); err != nil {
			return ofpErr(c, wire.NXTTMFC_INVALID_TLV_DEL, "%v", err)
		}
	case 2: // NXTTMC_CLEAR
		b.p.TLV.Delete()
	default:
		return ofpErr(c, wire.NXTTMFC_BAD_COMMAND, "command %d", m.Command)
	}
	b.p.BumpGeneration()
	// Tunnel ports decode options through the map: tell them now rather
	// than at their next read.
	if s, ok := b.dp.(interface{ SyncTunnelTLV() }); ok {
		s.SyncTunnelTLV()
	}
	return nil
}

func (b *Bridge) tlvReply() *wire.NXTLVTableReply {
	r := &wire.NXTLVTableReply{MaxOptionSpace: flowtable.TunMetadataSize, MaxFields: 64}
	for _, m := range b.p.TLV.Mappings() {
		r.Maps = append(r.Maps, wire.NXTLVMap{OptClass: m.Class, OptType: m.Type, OptLen: m.Len, Index: uint16(m.Index)})
	}
	return r
}

func (b *Bridge) features(c *Conn) *wire.FeaturesReply {
	r := &wire.FeaturesReply{DatapathID: b.dp.DatapathID(), NBuffers: 0, NTables: 254,
		// FLOW_STATS | TABLE_STATS | PORT_STATS | GROUP_STATS (1.1+) | QUEUE_STATS
		Capabilities: 0x1 | 0x2 | 0x4 | 0x40}
	if c.Version() == wire.OFP10 {
		r.Capabilities = 0x1 | 0x2 | 0x4 | 0x40 | 0x80 // + ARP_MATCH_IP
		r.Actions = 0xfff                              // every OFPAT10 action
		for _, p := range b.announcedFeatures(b.dp.Ports()) {
			r.Ports = append(r.Ports, portToWire(p, wire.OFP10))
		}
	} else {
		r.Capabilities |= 0x8 // GROUP_STATS
	}
	if c.Version() >= wire.OFP14 {
		r.Capabilities |= 0x200 // OFPC14_BUNDLES: OVS 0x24f
	}
	return r
}

// portToWire encodes a port for version v as OVS's ofputil_put_phy_port:
// OpenFlow 1.0 has no LIVE state (OFPPS10_ALL) and its own feature bits;
// 1.1+ has no NO_FLOOD, NO_STP or NO_RECV_STP config (OFPPC11_ALL).
func portToWire(p PortInfo, v uint8) wire.Port {
	f := p.Features
	w := wire.Port{PortNo: p.No, HWAddr: p.HWAddr, Config: p.Config, State: p.State,
		Curr: f.Curr, Advertised: f.Advertised, Supported: f.Supported, Peer: f.Peer,
		CurrSpeed: f.CurrSpeed, MaxSpeed: f.MaxSpeed}
	if v == wire.OFP10 {
		w.State &= 0x301 // LINK_DOWN, STP_MASK
		w.Curr, w.Advertised = ofp10Features(f.Curr), ofp10Features(f.Advertised)
		w.Supported, w.Peer = ofp10Features(f.Supported), ofp10Features(f.Peer)
	} else {
		w.Config &= 0x65 // PORT_DOWN, NO_RECV, NO_FWD, NO_PACKET_IN
		w.State &= 0x7   // LINK_DOWN, BLOCKED, LIVE
	}
	copy(w.Name[:15], p.Name)
	if p.No >= flowtable.PortMax {
		w.PortNo = p.No
	}
	return w
}

func (b *Bridge) portMod(c *Conn, m *wire.PortMod) error {
	no, err := b.checkPortMod(c, m)
	if err != nil {
		return err
	}
	mask := b.portModified(c, no, m.Config, m.Mask)
	if err := b.dp.SetPortConfig(no, m.Config, mask); err != nil {
		return ofpErr(c, wire.OFPPMFC_BAD_CONFIG, "%v", err)
	}
	return nil
}

// checkPortMod finds the port a port-mod names and checks its hardware
// address, as OVS does before changing anything.
func (b *Bridge) checkPortMod(c *Conn, m *wire.PortMod) (uint32, error) {
	for _, p := range b.dp.Ports() {
		if p.No == portFromWire(c, m.PortNo) {
			if p.HWAddr != m.HWAddr {
				return 0, ofpErr(c, wire.OFPPMFC_BAD_HW_ADDR, "port %d has hardware address %x", p.No, p.HWAddr)
			}
			return p.No, nil
		}
	}
	return 0, ofpErr(c, wire.OFPPMFC_BAD_PORT, "no port %d", m.PortNo)
}

// portFromWire maps a wire port number (32-bit in 1.1+) to the model's.
func portFromWire(c *Conn, p uint32) uint32 {
	if c.Version() != wire.OFP10 && p >= 0xffffff00 {
		return p - 0xffffff00 + 0xff00
	}
	return p
}

// portToWireNo maps a model port number to the connection's version.
func portToWireNo(c *Conn, p uint32) uint32 {
	if c.Version() != wire.OFP10 && p >= flowtable.PortMax {
		return p - 0xff00 + 0xffffff00
	}
	return p
}

var errNotImplemented = errors.New("not implemented")

// ctFlushZone is NXT_CT_FLUSH_ZONE: the zone's connections are forgotten
// (ovn-controller flushes a port's zone when it claims the port). OVS
// sends no reply.
func (b *Bridge) ctFlushZone(c *Conn, m *wire.NXCTFlushZone) error {
	ct, ok := b.p.Conntrack.(flowtable.ConntrackFlusher)
	if !ok {
		return wire.NewError(c.Version(), wire.OFPBRC_BAD_TYPE)
	}
	n := ct.FlushZone(m.Zone)
	// Decisions cached outside the pipeline's reach (the kernel fast
	// path) may rest on the flushed connections.
	b.p.BumpGeneration()
	b.log.Info("conntrack zone flushed", zap.Uint16("zone", m.Zone), zap.Int("connections", n))
	return nil
}
