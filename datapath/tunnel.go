package datapath

import (
	"go.uber.org/zap"

	"github.com/govs-project/govs/datapath/geneve"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/tunnel"
)

// TunnelPort is a port that moves tunnel metadata between the wire and the
// flow key, the way OVS's vports do for tun_id, tun_src, tun_dst, tun_flags
// and tun_metadataN. *geneve.Port implements it; AddPort recognises it
// whatever kind name the caller passes.
type TunnelPort interface {
	port.Port
	// Metadata is the tunnel metadata of frame i of the last ReadBatch.
	Metadata(i int) *tunnel.Metadata
	// FillKey writes md into the tunnel fields of k (tun_metadataN through
	// the port's compiled TLV map); an error means the packet is dropped.
	FillKey(md *tunnel.Metadata, k *flowtable.Key) error
	// RxPort is the port frame i of the last ReadBatch is for: this one,
	// or another port sharing its UDP socket, as Open vSwitch's tnl_find
	// picks it by the outer source, destination and VNI (a port that is
	// no *geneve.Port returns nil: every frame is its own).
	RxPort(i int) *geneve.Port
	// WriteTunnel sends frames[i] encapsulated for flow key keys[i].
	WriteTunnel(frames [][]byte, keys []*flowtable.Key) (int, error)
	// SetTLVMap recompiles the port's option map from the bridge's TLV map.
	SetTLVMap(tlv *flowtable.TLVMap) error
}

var (
	_ TunnelPort  = (*geneve.Port)(nil)
	_ port.Poller = (*geneve.Port)(nil)
)

// syncTLV keeps a tunnel port's option map in step with the pipeline's TLV
// map. The OpenFlow side changes the TLV map in place (NXT_TLV_TABLE_MOD)
// and then bumps the pipeline's generation, so a port whose recorded
// generation differs recompiles; a generation read before the TLV change is
// recorded with the newer map, which only costs one more recompilation.
// Flow-mods bump the generation too, so this runs (and allocates) only
// after the pipeline changed, never in steady state.
func (b *Bridge) syncTLV(bp *bridgePort) {
	gen := b.pipeline.Generation.Load()
	if bp.tlvGen.Load() == gen {
		return
	}
	if err := bp.tun.SetTLVMap(b.pipeline.TLV); err != nil {
		// The TLV map only holds mappings flowtable accepted; keep the
		// old option map and say why.
		b.log.Warn("TLV map not applied to tunnel port", zap.String("port", bp.p.Name()), zap.Error(err))
	}
	bp.tlvGen.Store(gen)
}

// SyncTunnelTLV recompiles the option map of every tunnel port from the
// pipeline's TLV map now. The packet loops do it themselves when they see a
// new pipeline generation; the OpenFlow TLV table handler can call this
// right after changing the map so that no datagram is decoded with the old
// one.
func (b *Bridge) SyncTunnelTLV() {
	cur := b.ports.Load()
	for _, n := range cur.numbers {
		if bp := cur.byNo[n]; bp.tun != nil {
			bp.tlvGen.Store(^uint64(0)) // force the recompilation
			b.syncTLV(bp)
		}
	}
}

// tunnelIn returns the bridge port frame i of a batch read from a tunnel
// port is received on: the reading port or another port sharing its
// socket (frames for another bridge's ports went to their inboxes, see
// geneve.RxGroup). It returns nil, having counted the drop, when that port
// is not on this bridge (yet, or any more) or does not receive (down,
// no-recv).
func (l *loop) tunnelIn(i int) *bridgePort {
	in := l.in
	to := in.tun.RxPort(i)
	bp := in
	if to != in.rxPort {
		if to != l.lastRx {
			l.lastRx, l.lastRxBP = to, l.ports.byRx[to]
		}
		if bp = l.lastRxBP; bp == nil {
			in.rxNoPort.Add(1)
			return nil
		}
		l.b.syncTLV(bp)
	}
	if bp.config.Load()&(PortConfigDown|PortConfigNoRecv) != 0 {
		bp.rxConfigDrops.Add(1)
		return nil
	}
	return bp
}

// copyKey copies k into the next free key of the pool; the keys of tunnel
// outputs live there until flush.
func (l *loop) copyKey(k *flowtable.Key) *flowtable.Key {
	if l.nKeys == len(l.keys) {
		l.keys = append(l.keys, new(flowtable.Key))
	}
	c := l.keys[l.nKeys]
	*c = *k
	l.nKeys++
	return c
}
