package datapath

import (
	"errors"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/datapath/geneve"
	"github.com/govs-project/govs/datapath/offload"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
)

// loop is the state of one port goroutine (or of PacketOut): the batch it
// reads into, a reusable packet, and the frames it queued for each
// destination port while processing the batch. Everything is reused from
// batch to batch, so forwarding does not allocate once the buffers have
// grown to the traffic's size.
type loop struct {
	b     *Bridge
	in    *bridgePort // nil for PacketOut
	batch *port.Batch
	pkt   flowtable.Packet
	ports *portSet // snapshot for the current batch

	// outs[:nOuts] are the destinations of the current batch.
	outs  []outQueue
	nOuts int
	// bufs[:nBufs] hold the frames queued in outs that are not where
	// they were read: copies made on write (Packet.Unshare) and segments.
	bufs  [][]byte
	nBufs int
	// keys[:nKeys] hold the flow keys of the frames queued for tunnel
	// ports (their tun_dst, tun_id and tun_metadata).
	keys  []*flowtable.Key
	nKeys int

	// lastRx and lastRxBP are the last tunnel port tunnelIn looked up in
	// ports and what it found, reset with ports.
	lastRx   *geneve.Port
	lastRxBP *bridgePort

	poBuf []byte // PacketOut's copy of the controller's frame

	// lastErr rate-limits logging of a port's read errors.
	lastErr time.Time

	// cache is this port goroutine's megaflow cache (nil: every packet
	// runs the pipeline). cacheMu is held while a batch uses it, so that
	// a dump (DumpFlows) reads it between batches, never during one:
	// uncontended but for a dump, it costs the loop one lock per batch.
	cache   *flowcache.Cache
	cacheMu sync.Mutex

	// sent collects the ports the poll thread serves that flush wrote
	// to (trackSent): their pods may have answered during the write.
	sent      []*bridgePort
	trackSent bool

	// offload: the port feeds the kernel fast path (kernelpath.go).
	offload bool
	start   flowtable.Key
	output  offload.OutputFunc
}

// outQueue is the frames queued for one destination port.
type outQueue struct {
	bp     *bridgePort
	frames [][]byte
	keys   []*flowtable.Key // per frame, for a tunnel port only
	vnets  []port.VnetHdr   // per frame, for a port with offload metadata only
}

// frameBufSize is the capacity new output buffers start with: a
// standard Ethernet frame with two VLAN tags fits without regrowing.
const frameBufSize = 1536

func newLoop(b *Bridge, in *bridgePort) *loop {
	l := &loop{b: b, in: in}
	l.pkt.Alloc = l.frameBuf
	if in != nil {
		l.batch = port.NewBatch(BatchSize)
		if !b.CacheDisabled {
			l.cache = flowcache.New(b.pipeline)
			if n := b.cacheMaxEntries.Load(); n > 0 {
				l.cache.MaxEntries = int(n)
			}
			l.initOffload()
		} else {
			l.pkt.Counters = b.pipeline.NewTableCounters()
		}
	}
	return l
}

// close gives back what the loop holds in the pipeline (its flow cache's
// or its own table counters) once it has stopped.
func (l *loop) close() {
	if l.cache != nil {
		l.cache.Close()
	} else if l.pkt.Counters != nil {
		l.b.pipeline.ReleaseTableCounters(l.pkt.Counters)
	}
}

// run reads and forwards batches until the port is closed.
func (l *loop) run() {
	p := l.in.p
	for {
		if l.in.tun != nil {
			// Before the read: the port decodes options with its map.
			l.b.syncTLV(l.in)
		}
		stallHook(l.in)
		n, err := p.ReadBatch(l.batch)
		l.in.progress.Add(1) // the watchdog's sign of life
		if err != nil {
			if errors.Is(err, port.ErrClosed) {
				return
			}
			// A real I/O error: report it now and then, back off a
			// little and go on, so one bad read does not kill the port.
			if now := time.Now(); now.Sub(l.lastErr) > 10*time.Second {
				l.lastErr = now
				l.b.log.Warn("port read failed", zap.String("port", p.Name()), zap.Uint32("ofport", l.in.ofport), zap.Error(err))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if n > 0 {
			l.process(l.batch.Frames[:n])
		}
		p.Release()
	}
}

// process sends every frame of a batch through the pipeline and then
// transmits what it produced, one WriteBatch per destination port.
func (l *loop) process(frames [][]byte) {
	in := l.in
	l.ports = l.b.ports.Load()
	l.lastRx, l.lastRxBP = nil, nil
	defer in.processed.Add(uint64(len(frames)))
	// A tunnel port's frames may be for other ports (tunnelIn checks
	// each one's config).
	if in.config.Load()&(PortConfigDown|PortConfigNoRecv) != 0 && in.tun == nil || l.b.restoreWait.Load() {
		in.rxConfigDrops.Add(uint64(len(frames)))
		return
	}
	pipe := l.b.pipeline
	var ctNow int64
	if clk, ok := pipe.Conntrack.(flowtable.ConntrackClock); ok {
		ctNow = clk.Now()
	}
	l.pkt.CtNow = ctNow
	if l.cache != nil {
		l.cacheMu.Lock()
		l.cache.SetBatchTime(batchTime(ctNow))
	}
	var bad uint64
	for i := 0; i < len(frames); {
		i = l.processFrom(frames, i, &bad)
	}
	if bad != 0 {
		in.rxLengthErrors.Add(bad)
	}
	if l.cache != nil {
		l.cache.FlushStats()
		l.cache.MaybeExpire()
		l.cacheMu.Unlock()
	}
	l.flush()
}

// processFrom runs frames[start:] through the pipeline and returns
// len(frames), or, when one of them panics (a bug in the pipeline, or in
// a parser facing a frame it did not expect), the index after it: that
// frame is dropped and counted, the loop goes on with the next one, as a
// panic must not take the switch down. Outputs it queued before the
// panic may still go. bad counts the frames dropped for bad lengths or
// headers.
func (l *loop) processFrom(frames [][]byte, start int, bad *uint64) (next int) {
	i := start
	defer func() {
		if r := recover(); r != nil {
			l.b.recovered(l.in, r, frames[i])
			next = i + 1
		}
	}()
	pipe := l.b.pipeline
	for ; i < len(frames); i++ {
		f := frames[i]
		in := l.in
		if in.tun != nil {
			if in = l.tunnelIn(i); in == nil {
				continue
			}
		}
		l.pkt.Offload = flowtable.Offload{}
		maxFrame := in.maxFrame
		if m := &l.batch.Meta[i]; m.Flags&port.FlagVnet != 0 {
			if !vnetToOffload(&m.Vnet, &l.pkt.Offload) {
				*bad++
				continue
			}
			maxFrame = m.Vnet.MaxLen(maxFrame)
		}
		if len(f) < port.MinFrameLen || len(f) > maxFrame {
			*bad++
			continue
		}
		l.pkt.Key = flowtable.Key{}
		l.pkt.Key.SetInPort(in.ofport)
		// Tunnel metadata goes in before Extract, which keeps the
		// metadata part of the key and only rewrites the headers.
		if in.tun != nil && in.tun.FillKey(l.in.tun.Metadata(i), &l.pkt.Key) != nil {
			*bad++
			continue
		}
		// Cap the frame at its length: ring ports hand out frames whose
		// capacity runs into the next frames of the ring block, and an
		// action that grows the frame (push_vlan) must reallocate
		// rather than overwrite them.
		if err := l.pkt.Extract(f[:len(f):len(f)]); err != nil {
			*bad++
			continue
		}
		if l.offload {
			l.processOffload(in, i)
		} else if l.cache != nil {
			l.cache.Process(&l.pkt, l)
		} else {
			pipe.Run(&l.pkt, l, nil)
		}
	}
	return i
}

// Output implements flowtable.Sink: it queues the committed frame for the
// destination port.
func (l *loop) Output(ofport uint32, pkt *flowtable.Packet) {
	if ofport == flowtable.PortController {
		// Only reachable with a port lister-less pipeline; the
		// interpreter turns CONTROLLER into PacketIn otherwise.
		return
	}
	bp := l.ports.byNo[ofport]
	if bp == nil {
		return // no such port (e.g. a flow names a port not attached yet)
	}
	if bp.config.Load()&(PortConfigDown|PortConfigNoFwd) != 0 {
		bp.txConfigDrops.Add(1)
		return
	}
	q := l.queue(bp)
	if pkt.Offload.Active() && bp.vnet == nil {
		l.outputSegments(q, pkt)
		return
	}
	// No copy: the frame stays where it was read (the ring, until the
	// batch is released after flush) or in a buffer of this loop. The
	// pipeline moves it to a copy if it writes it again (Lend), so only a
	// packet changed between two outputs costs a copy.
	q.frames = append(q.frames, pkt.Frame)
	pkt.Lend()
	if bp.vnet != nil {
		q.vnets = append(q.vnets, offloadToVnet(pkt))
	}
	if bp.tun != nil {
		// The tunnel header comes from the key as the actions left it
		// (set_field:...->tun_dst, tun_metadataN).
		q.keys = append(q.keys, l.copyKey(&pkt.Key))
	}
}

// outputSegments queues a GSO frame or one with a partial checksum for a
// port that takes neither: cut into MTU-sized segments with complete
// checksums, as the kernel does for a device without offloads.
func (l *loop) outputSegments(q *outQueue, pkt *flowtable.Packet) {
	_, err := pkt.Segment(func(n int) []byte {
		buf := l.frameBuf(n)
		q.frames = append(q.frames, buf)
		if q.bp.tun != nil {
			q.keys = append(q.keys, l.copyKey(&pkt.Key))
		}
		return buf
	})
	if err != nil {
		q.bp.txErrors.Add(1)
		l.b.log.Debug("segmenting a GSO frame failed", zap.String("port", q.bp.p.Name()), zap.Error(err))
	}
}

// queue returns the output queue of bp for this batch, reusing the slot
// (and its frames slice) of an earlier batch when there is one.
func (l *loop) queue(bp *bridgePort) *outQueue {
	for i := 0; i < l.nOuts; i++ {
		if l.outs[i].bp == bp {
			return &l.outs[i]
		}
	}
	if l.nOuts == len(l.outs) {
		l.outs = append(l.outs, outQueue{})
	}
	q := &l.outs[l.nOuts]
	l.nOuts++
	q.bp = bp
	q.frames = q.frames[:0]
	q.keys = q.keys[:0]
	q.vnets = q.vnets[:0]
	return q
}

// frameBuf returns the next free buffer of the pool with length n.
func (l *loop) frameBuf(n int) []byte {
	if l.nBufs == len(l.bufs) {
		l.bufs = append(l.bufs, make([]byte, 0, max(frameBufSize, n)))
	}
	buf := l.bufs[l.nBufs]
	if cap(buf) < n {
		buf = make([]byte, n)
		l.bufs[l.nBufs] = buf // keep the grown buffer
	}
	l.nBufs++
	return buf[:n]
}

// flush transmits the queued frames and resets the queues.
func (l *loop) flush() {
	for i := 0; i < l.nOuts; i++ {
		q := &l.outs[i]
		bp := q.bp
		var n int
		var err error
		bp.txMu.Lock()
		if bp.tun != nil {
			l.b.syncTLV(bp)
			n, err = bp.tun.WriteTunnel(q.frames, q.keys)
		} else if bp.vnet != nil {
			n, err = bp.vnet.WriteBatchVnet(q.frames, q.vnets)
		} else {
			n, err = bp.p.WriteBatch(q.frames)
		}
		bp.txMu.Unlock()
		if l.trackSent && bp.ready != nil && n > 0 {
			l.sent = append(l.sent, bp)
		}
		if err != nil && !errors.Is(err, port.ErrClosed) {
			// The port counts its own errors too; this counter keeps
			// frames the port never got to see.
			bp.txErrors.Add(uint64(len(q.frames) - n))
			l.b.log.Debug("port write failed", zap.String("port", bp.p.Name()), zap.Error(err))
		}
		clear(q.frames) // drop references to the pool's buffers
		q.frames = q.frames[:0]
		clear(q.keys)
		q.keys = q.keys[:0]
		q.vnets = q.vnets[:0]
		q.bp = nil
	}
	l.nOuts = 0
	l.nBufs = 0
	l.nKeys = 0
	l.ports = nil
	l.lastRx, l.lastRxBP = nil, nil
}

// PacketIn implements flowtable.Sink: it copies the packet for the
// bridge's packet-in handler. This path may allocate.
func (l *loop) PacketIn(pkt *flowtable.Packet, pi *flowtable.PacketIn) {
	h := l.b.OnPacketIn
	if h == nil {
		return
	}
	inPort := pkt.Key.InPort()
	if bp := l.ports.byNo[inPort]; bp != nil && bp.config.Load()&PortConfigNoPacketIn != 0 {
		return
	}
	pic := *pi
	key := pkt.Key
	frame := slices.Clone(pkt.Frame)
	// A controller gets a frame as it would be on the wire. An offset
	// past the frame (bad metadata) leaves it as it came.
	_ = pkt.CompleteChecksumIn(frame)
	h(frame, inPort, &pic, &key)
}

// gsoType pairs a virtio_net_hdr GSO type with the flow model's.
type gsoType struct {
	vnet uint8
	flow flowtable.GSOType
}

var gsoTypes = [...]gsoType{
	{port.VnetGSOTCPv4, flowtable.GSOTCPv4},
	{port.VnetGSOTCPv6, flowtable.GSOTCPv6},
	{port.VnetGSOUDPL4, flowtable.GSOUDPL4},
}

// vnetToOffload converts a received virtio_net_hdr into the flow model's
// offload metadata. It reports false for a header it cannot honour (UFO,
// unknown GSO types), which the loop drops as a bad frame.
func vnetToOffload(h *port.VnetHdr, o *flowtable.Offload) bool {
	if h.Flags&port.VnetFlagNeedsCsum != 0 {
		o.CsumPartial = true
		o.CsumStart, o.CsumOffset = int(h.CsumStart), int(h.CsumOffset)
	}
	t := h.GSOType &^ port.VnetGSOECN
	if t == port.VnetGSONone {
		return true
	}
	o.GSOType = flowtable.GSONone
	for _, g := range gsoTypes {
		if g.vnet == t {
			o.GSOType = g.flow
		}
	}
	if o.GSOType == flowtable.GSONone {
		return false // UFO or unknown
	}
	o.GSOSize = int(h.GSOSize)
	o.GSOECN = h.GSOType&port.VnetGSOECN != 0
	return o.GSOSize > 0
}

// offloadToVnet is the virtio_net_hdr a port with offload metadata sends
// pkt with.
func offloadToVnet(pkt *flowtable.Packet) port.VnetHdr {
	o := &pkt.Offload
	var h port.VnetHdr
	if o.CsumPartial {
		h.Flags = port.VnetFlagNeedsCsum
		h.CsumStart, h.CsumOffset = uint16(o.CsumStart), uint16(o.CsumOffset)
	}
	if o.GSOType == flowtable.GSONone {
		return h
	}
	for _, g := range gsoTypes {
		if g.flow == o.GSOType {
			h.GSOType = g.vnet
		}
	}
	if o.GSOECN {
		h.GSOType |= port.VnetGSOECN
	}
	h.GSOSize = uint16(o.GSOSize)
	// hdr_len: the headers up to the L4 payload, which the kernel keeps
	// in the linear part of the socket buffer.
	if pkt.L4 >= 0 && len(pkt.Frame) >= pkt.L4+20 && pkt.Key.NwProto() == flowtable.IPProtoTCP {
		h.HdrLen = uint16(min(len(pkt.Frame), pkt.L4+int(pkt.Frame[pkt.L4+12]>>4)*4))
	} else if pkt.L4 >= 0 {
		h.HdrLen = uint16(min(len(pkt.Frame), pkt.L4+8))
	}
	return h
}
