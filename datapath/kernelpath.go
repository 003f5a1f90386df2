package datapath

import (
	"go.uber.org/zap"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/datapath/offload"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
)

// The kernel fast path's hooks (docs/offload.md): an XDP program on each
// system port forwards what the megaflow cache decided for established
// connections; the port loops install its entries.

// EnableOffload makes m the bridge's kernel fast path for the system ports
// added from then on, and has every pipeline change invalidate its entries
// before the change returns. Call it before the first AddPort, in the
// network namespace of the ports' interfaces.
func (b *Bridge) EnableOffload(m *offload.Manager) {
	b.offload = m
	b.pipeline.SetGenerationHook(m.Invalidate)
	m.Invalidate(b.pipeline.Generation.Load())
}

// Offload returns the bridge's kernel fast path (nil: off).
func (b *Bridge) Offload() *offload.Manager { return b.offload }

// ifindexer is a port backed by a kernel interface (AF_PACKET).
type ifindexer interface{ Ifindex() int }

// attachOffload puts the program on a system port's interface; a port it
// cannot attach to works as before, in userspace.
func (b *Bridge) attachOffload(bp *bridgePort, kind string) {
	ix, ok := bp.p.(ifindexer)
	if b.offload == nil || kind != KindSystem || !ok || bp.vnet != nil || b.CacheDisabled {
		return
	}
	x, err := b.offload.Attach(ix.Ifindex(), bp.p.Name())
	if err != nil {
		if b.OffloadAttachError != nil {
			b.OffloadAttachError(bp.p.Name(), err)
		} else {
			b.log.Warn("offload: port stays in userspace", zap.String("port", bp.p.Name()), zap.Error(err))
		}
		return
	}
	bp.xdp, bp.ifindex, bp.off = x, ix.Ifindex(), b.offload
}

// addOffloadStats adds what the kernel forwarded from and to the port.
func (bp *bridgePort) addOffloadStats(st *port.Stats) {
	if bp.off == nil {
		return
	}
	c := bp.off.PortStats(bp.ifindex)
	st.RxPackets += c.RxPackets
	st.RxBytes += c.RxBytes
	st.TxPackets += c.TxPackets
	st.TxBytes += c.TxBytes
}

// offloadPortChanged drops the kernel entries when a port's config
// changes (down, no-recv, no-fwd): the program does not check it. The
// userspace path reads the config per packet and needs nothing.
func (b *Bridge) offloadPortChanged() {
	if b.offload != nil {
		b.pipeline.BumpGeneration()
	}
}

func (b *Bridge) detachOffload(bp *bridgePort) {
	if bp.xdp != nil {
		if err := bp.xdp.Close(); err != nil {
			b.log.Warn("offload: detach failed", zap.String("port", bp.p.Name()), zap.Error(err))
		}
		bp.xdp = nil
	}
}

func (l *loop) initOffload() {
	if l.in.xdp == nil {
		return
	}
	l.offload = true
	l.cache.TraceHits = true
	l.ifindexOf = func(ofport uint32) (int, bool) { return l.ports.offloadIfindex(ofport) }
}

// offloadIfindex is the interface the program can redirect to for output
// port ofport: a port with the program attached that forwards.
func (ps *portSet) offloadIfindex(ofport uint32) (int, bool) {
	if bp := ps.byNo[ofport]; bp != nil && bp.xdp != nil && bp.config.Load()&(PortConfigDown|PortConfigNoFwd) == 0 {
		return bp.ifindex, true
	}
	return 0, false
}

// processOffload runs the packet through the cache and offers the
// decision to the kernel fast path. The generation is read before the
// cache runs: an entry decided under a generation a change has since
// replaced is never accepted by the program.
func (l *loop) processOffload() {
	gen := l.b.pipeline.Generation.Load()
	fk, kind := offload.KeyOf(l.in.ifindex, &l.pkt.Key)
	if kind == offload.KeyOffer {
		l.start = l.pkt.Key
	}
	l.cache.Process(&l.pkt, l)
	switch kind {
	case offload.KeyOffer:
		l.b.offload.Offer(fk, gen, &l.start, &l.pkt.Key, l.cache.Hits, l.ifindexOf)
	case offload.KeyControl:
		l.b.offload.Forget(fk)
	}
}

// RevalidateOffload ends the adoption of a previous process's kernel
// entries (offload.Manager.Revalidate): adopt enters their connections
// into conntrack, then each entry's flow is replayed through the current
// pipeline (twice, through a private megaflow cache, outputs discarded) and kept only
// if the new flows still offload it. Call it
// once the controller has replayed its flows (flow-restore-wait over) and
// the ports are attached. The replay counts two packets in the flows
// it hits.
func (b *Bridge) RevalidateOffload(adopt func(conntrack.Entry) error) (kept, removed int) {
	m := b.offload
	if m == nil || !m.Adopting() {
		return 0, 0
	}
	c := flowcache.New(b.pipeline)
	defer c.Close()
	c.TraceHits = true
	ports := b.ports.Load()
	var pkt flowtable.Packet
	replay := func(fk offload.FlowKey) (start, final flowtable.Key, hits []*flowcache.Entry, ok bool) {
		var in *bridgePort
		for _, bp := range ports.byNo {
			if bp.xdp != nil && uint32(bp.ifindex) == fk.Ifindex {
				in = bp
			}
		}
		if in == nil {
			return start, final, nil, false
		}
		// The first run fills the cache (an upcall reports no hits, as
		// for the packet loop's first packet), the second is the one a
		// packet of the flow now takes.
		for range 2 {
			pkt = flowtable.Packet{}
			pkt.Key.SetInPort(in.ofport)
			if err := pkt.Extract(fk.Frame()); err != nil {
				return start, final, nil, false
			}
			if clk, ok := b.pipeline.Conntrack.(flowtable.ConntrackClock); ok {
				pkt.CtNow = clk.Now()
			}
			start = pkt.Key
			c.Process(&pkt, discard{})
		}
		return start, pkt.Key, c.Hits, true
	}
	return m.Revalidate(adopt, replay, ports.offloadIfindex)
}

// discard is the sink of a replayed packet: nothing leaves the switch.
type discard struct{}

func (discard) Output(uint32, *flowtable.Packet)                {}
func (discard) PacketIn(*flowtable.Packet, *flowtable.PacketIn) {}
