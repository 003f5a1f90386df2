package datapath

import (
	"go.uber.org/zap"

	"github.com/govs-project/govs/datapath/offload"
	"github.com/govs-project/govs/datapath/port"
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
	x, err := b.offload.Attach(ix.Ifindex())
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
	l.ifindexOf = func(ofport uint32) (int, bool) {
		if bp := l.ports.byNo[ofport]; bp != nil && bp.xdp != nil && bp.config.Load()&(PortConfigDown|PortConfigNoFwd) == 0 {
			return bp.ifindex, true
		}
		return 0, false
	}
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
