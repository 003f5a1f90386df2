// Package datapath is the packet path of a bridge: it owns the bridge's
// ports, runs one run-to-completion goroutine per port that reads batches
// of frames, sends each through the OpenFlow pipeline (flowtable) and
// transmits the results in batches, and executes controller packet-outs.
// It is the userspace counterpart of OVS's dpif-netdev PMD loop plus the
// ofproto-dpif port bookkeeping.
package datapath

import (
	"errors"
	"fmt"
	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/datapath/geneve"
	"github.com/govs-project/govs/datapath/offload"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
)

// OpenFlow port config bits (ofp_port_config, OpenFlow 1.3 §7.2.1).
const (
	PortConfigDown       uint32 = 1 << 0 // OFPPC_PORT_DOWN: neither receive nor send
	PortConfigNoRecv     uint32 = 1 << 2 // OFPPC_NO_RECV: drop received frames
	PortConfigNoFwd      uint32 = 1 << 5 // OFPPC_NO_FWD: drop frames forwarded to the port
	PortConfigNoPacketIn uint32 = 1 << 6 // OFPPC_NO_PACKET_IN: no packet-ins for frames received here

	// PortConfigMask is every config bit the bridge honours.
	PortConfigMask = PortConfigDown | PortConfigNoRecv | PortConfigNoFwd | PortConfigNoPacketIn
)

// Port status reasons (ofp_port_reason) for OnPortStatus.
const (
	PortStatusAdd    uint8 = 0 // OFPPR_ADD
	PortStatusDelete uint8 = 1 // OFPPR_DELETE
	PortStatusModify uint8 = 2 // OFPPR_MODIFY
)

// Port kinds as OVSDB's Interface.type names them.
const (
	KindSystem   = "system"   // an existing kernel interface (AF_PACKET)
	KindAFXDP    = "afxdp"    // an existing kernel interface (AF_XDP socket)
	KindInternal = "internal" // a TAP device the bridge created
	KindMemory   = "memory"   // a MemPort (tests, benchmarks)
	KindTunnel   = "tunnel"   // a flow-based tunnel vport (Geneve), a TunnelPort
)

// BatchSize is the number of frames a port goroutine reads at once.
const BatchSize = 64

// PortInfo describes one bridge port (OFPT_PORT_STATUS, port-desc and
// port stats replies).
type PortInfo struct {
	OFPort uint32
	Name   string
	MAC    net.HardwareAddr
	Kind   string
	MTU    int
	// Config holds PortConfig* bits.
	Config uint32
	// Stats are the port's counters plus the frames the bridge dropped on
	// it (bad lengths, port config): in RxDropped/RxErrors/TxDropped.
	Stats port.Stats
}

// Errors of the port operations.
var (
	ErrPortExists  = errors.New("OpenFlow port number already in use")
	ErrNoSuchPort  = errors.New("no such OpenFlow port")
	ErrBadPortNo   = errors.New("OpenFlow port number not usable for a port")
	ErrNoFreePort  = errors.New("no free OpenFlow port number")
	ErrBridgeClose = errors.New("bridge closed")
)

// Bridge is one OpenFlow switch: a pipeline and its ports.
type Bridge struct {
	// CacheDisabled turns the megaflow cache off for ports added from
	// then on: every packet runs the OpenFlow pipeline (tests, benchmarks).
	CacheDisabled bool
	// cacheMaxEntries is SetCacheMaxEntries's bound.
	cacheMaxEntries atomic.Int64
	// PMD serves the ports that can be polled from one poll-mode thread
	// instead of a goroutine each. Set it before the first AddPort.
	PMD PMDConfig
	pmd *pmd // started with the first polled port
	// PortThreads gives every AF_PACKET port its own goroutine when the
	// PMD is off, instead of the bridge's poll thread (pollthread.go).
	// Set it before the first AddPort.
	PortThreads bool

	name     string
	dpid     atomic.Uint64 // changes in place, as OVS's ofproto_set_datapath_id
	pipeline *flowtable.Pipeline
	log      *zap.Logger
	// batching counts the PortBatch calls under way: ports added meanwhile
	// invalidate the caches once, when the last batch ends.
	batching atomic.Int32
	// batchAdded: a port was added in the batch (nothing to invalidate
	// otherwise: a reconfiguration that adds no port must not drop the
	// kernel fast path's entries).
	batchAdded atomic.Bool

	// OnPacketIn receives every packet-in. It is called on the goroutine
	// of the port the packet came from (or the PacketOut caller), so it
	// must not block: queue the message. pkt and key are copies the
	// callee owns; pkt is the whole frame (the caller truncates it to
	// pi.MaxLen). Set it before the first AddPort.
	OnPacketIn func(pkt []byte, inPort uint32, pi *flowtable.PacketIn, key *flowtable.Key)
	// OnPortStatus is told about every port added, deleted or modified
	// (OFPT_PORT_STATUS). It is called with the bridge's port lock held,
	// so it must not call AddPort, DelPort or SetPortConfig. Set it
	// before the first AddPort.
	OnPortStatus func(reason uint8, info PortInfo)

	// mu serializes port changes; the packet path reads ports lock-free
	// through the copy-on-write snapshot.
	mu     sync.Mutex
	ports  atomic.Pointer[portSet]
	closed bool

	// restoreWait is other_config:flow-restore-wait=true: received frames
	// are dropped unprocessed (SetFlowRestoreWait).
	restoreWait atomic.Bool

	// poMu guards poLoop, the loop state PacketOut uses.
	poMu   sync.Mutex
	poLoop *loop

	// panics counts frames dropped because processing them panicked;
	// stackLogged: the first one's stack was logged; panicLogAt (unix
	// ns) rate-limits the log lines of the next ones.
	panics      atomic.Uint64
	stackLogged atomic.Bool
	panicLogAt  atomic.Int64

	// offload is the kernel fast path (nil: off); see EnableOffload.
	offload *offload.Manager
	// underlays are the program's links on Geneve underlay interfaces
	// (by ifindex), shared by the Geneve ports with local_ip there.
	underlaysMu sync.Mutex
	underlays   map[int]*underlayLink
	// rxGroup is this bridge's Geneve ports: a frame read from a socket
	// shared with another bridge's ports is processed by this bridge's
	// loops (geneve.RxGroup).
	rxGroup geneve.RxGroup
	// OffloadAttachError, when set, reports a port the kernel fast path
	// could not attach to (the port works in userspace); nil logs a
	// warning per port.
	OffloadAttachError func(port string, err error)

	// WatchdogPeriod is how often the port watchdog looks for stalled
	// port goroutines and poll threads (watchdog.go): 0 is DefaultWatchdogPeriod, < 0 off.
	// Set it before the first AddPort.
	WatchdogPeriod time.Duration
	wd             watchdog
}

// portSet is an immutable snapshot of the bridge's ports.
type portSet struct {
	byNo    map[uint32]*bridgePort
	numbers []uint32 // sorted; returned by PortNumbers, never modified
	// byRx finds the tunnel port a frame read from a shared Geneve
	// socket is for (TunnelPort.RxPort).
	byRx map[*geneve.Port]*bridgePort
}

// indexTunnels fills byRx from byNo.
func (s *portSet) indexTunnels() {
	s.byRx = nil
	for _, bp := range s.byNo {
		if bp.rxPort != nil {
			if s.byRx == nil {
				s.byRx = map[*geneve.Port]*bridgePort{}
			}
			s.byRx[bp.rxPort] = bp
		}
	}
}

// bridgePort is a port attached to the bridge.
type bridgePort struct {
	ofport uint32
	p      port.Port
	kind   string
	config atomic.Uint32
	// maxFrame bounds received frames (the port layer already drops
	// longer ones; this keeps the loop safe with any Port).
	maxFrame int

	// txMu serializes WriteBatch: every port goroutine may transmit to
	// this port.
	txMu sync.Mutex

	// tun is p as a tunnel vport (nil for other ports); tlvGen is the
	// pipeline generation its option map was compiled at.
	tun    TunnelPort
	tlvGen atomic.Uint64
	// rxPort is the Geneve port behind tun, as RxPort names it.
	rxPort *geneve.Port

	// poller is p when the bridge's PMD or poll thread serves it (nil:
	// the port has its own goroutine). pollFd and pollBinds are its
	// descriptor and Binds as the poll thread last registered them.
	poller    port.Poller
	pollFd    int32
	pollBinds uint64
	// ready is p's look at its receive ring without a system call, for
	// the poll thread (nil: the port is not the poll thread's, or cannot).
	ready interface{ Ready() bool }

	// vnet is p when it sends frames with offload metadata (nil
	// otherwise): GSO frames and partial checksums go to it as they are,
	// other ports get them segmented and completed.
	vnet port.VnetWriter

	// Frames the bridge dropped, reported in PortInfo.Stats.
	rxLengthErrors atomic.Uint64 // runts, oversize, unparsable
	rxConfigDrops  atomic.Uint64 // port down / no-recv
	txConfigDrops  atomic.Uint64 // port down / no-fwd
	txErrors       atomic.Uint64 // WriteBatch failures
	rxPanics       atomic.Uint64 // frames whose processing panicked
	rxNoPort       atomic.Uint64 // tunnel frames for a port that just left the bridge

	// processed counts received frames whose processing, transmission
	// included, is over (tests wait on it).
	processed atomic.Uint64

	// progress counts the port goroutine's turns (watchdog.go); reopen
	// opens the port's device again (PortOptions.Reopen) and statsBase
	// holds the counters of the ports it replaced.
	progress  atomic.Uint64
	reopen    func() (port.Port, error)
	statsBase port.Stats

	done chan struct{} // closed when the port goroutine exits
	loop *loop         // the port's goroutine state (its cache's stats)

	// xdp holds the kernel fast path's program on the port's interface
	// ifindex (nil: not offloaded); for a Geneve port, on its underlay
	// interface (decapsulation).
	xdp     io.Closer
	ifindex int
	off     *offload.Manager
	offID   uint32 // the port's key in off's port counters
	// geneve is a tunnel port the program encapsulates for, through the
	// underlay interface holding its local_ip (kernelpath.go).
	geneve      *geneve.Port
	resolver    *geneve.Resolver
	underlay    int
	underlayMAC [6]byte
	// underlayInHost: the underlay keeps offload metadata inside this
	// kernel (offload.KeepsOffloadsInHost); the tc path does not
	// encapsulate for the port then.
	underlayInHost bool
}

// NewBridge returns a bridge around pipeline and makes the bridge the
// pipeline's port lister (for FLOOD, ALL and NORMAL). log may be nil.
func NewBridge(name string, dpid uint64, pipeline *flowtable.Pipeline, log *zap.Logger) *Bridge {
	if log == nil {
		log = zap.NewNop()
	}
	b := &Bridge{name: name, pipeline: pipeline, log: log.With(zap.String("bridge", name))}
	b.dpid.Store(dpid)
	b.ports.Store(&portSet{byNo: map[uint32]*bridgePort{}})
	pipeline.Ports = b
	pipeline.OnXlateError = func(e flowtable.XlateError, k *flowtable.Key) {
		b.log.Warn("packet dropped: "+e.Error(), zap.Uint32("in_port", k.InPort()),
			zap.String("eth_type", fmt.Sprintf("0x%04x", k.EthType())), zap.Uint64("total", pipeline.XlateErrors.Load()))
	}
	b.poLoop = newLoop(b, nil)
	return b
}

// Name is the bridge name.
func (b *Bridge) Name() string { return b.name }

// DatapathID is the OpenFlow datapath id.
func (b *Bridge) DatapathID() uint64 { return b.dpid.Load() }

// SetDatapathID changes the datapath id of a running bridge (OVS picks it
// again whenever its ports change); the flows and ports stay.
func (b *Bridge) SetDatapathID(dpid uint64) { b.dpid.Store(dpid) }

// Pipeline is the bridge's OpenFlow state.
func (b *Bridge) Pipeline() *flowtable.Pipeline { return b.pipeline }

// SetFlowRestoreWait sets or clears OVS's flow-restore-wait: while set, the
// bridge takes in no frames (they are dropped, as OVS leaves them to the
// datapath), so nothing is forwarded by a flow table still being
// restored and nothing learned; controllers may load flows meanwhile.
func (b *Bridge) SetFlowRestoreWait(on bool) { b.restoreWait.Store(on) }

// FlowRestoreWait tells whether flow-restore-wait is in force.
func (b *Bridge) FlowRestoreWait() bool { return b.restoreWait.Load() }

// PortNumbers implements flowtable.PortLister: every port's OpenFlow
// number, ascending. The slice is shared and must not be modified.
func (b *Bridge) PortNumbers() []uint32 { return b.ports.Load().numbers }

// AddPort attaches p as OpenFlow port ofport (0 picks the lowest free
// number from 1; flowtable.PortLocal is the bridge's LOCAL port) and starts
// its goroutine. The bridge owns p from now on and closes it on DelPort or
// Close.
func (b *Bridge) AddPort(ofport uint32, p port.Port, kind string) (uint32, error) {
	return b.AddPortWith(ofport, p, kind, PortOptions{})
}

// PortOptions are per-port choices of AddPortWith.
type PortOptions struct {
	// NoOffload keeps the port out of the kernel fast path: no program
	// on its interface, every packet it receives goes through userspace
	// (Interface other_config:govs-offload=false).
	NoOffload bool
	// Reopen, if set, opens the port's device anew: the watchdog uses it
	// to replace a port whose goroutine stalled (watchdog.go).
	Reopen func() (port.Port, error)
}

// AddPortWith is AddPort with per-port options.
func (b *Bridge) AddPortWith(ofport uint32, p port.Port, kind string, opts PortOptions) (uint32, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, fmt.Errorf("bridge %s: add port %s: %w", b.name, p.Name(), ErrBridgeClose)
	}
	cur := b.ports.Load()
	switch {
	case ofport == 0:
		for n := uint32(1); n < flowtable.PortMax; n++ {
			if _, used := cur.byNo[n]; !used {
				ofport = n
				break
			}
		}
		if ofport == 0 {
			return 0, fmt.Errorf("bridge %s: add port %s: %w", b.name, p.Name(), ErrNoFreePort)
		}
	case ofport >= flowtable.PortMax && ofport != flowtable.PortLocal:
		return 0, fmt.Errorf("bridge %s: add port %s as %d: %w", b.name, p.Name(), ofport, ErrBadPortNo)
	}
	if _, used := cur.byNo[ofport]; used {
		return 0, fmt.Errorf("bridge %s: add port %s as %d: %w", b.name, p.Name(), ofport, ErrPortExists)
	}
	bp := &bridgePort{ofport: ofport, p: p, kind: kind, maxFrame: port.MaxFrameLen(p.MTU()), done: make(chan struct{}), reopen: opts.Reopen}
	if vw, ok := p.(port.VnetWriter); ok && vw.VnetEnabled() {
		bp.vnet = vw
	}
	if tp, ok := p.(TunnelPort); ok {
		bp.tun = tp
		if bp.rxPort, _ = p.(*geneve.Port); bp.rxPort != nil {
			// Its shared socket's reader hands this bridge's frames to
			// this bridge's loops.
			bp.rxPort.SetRxGroup(&b.rxGroup)
		}
		bp.tlvGen.Store(^uint64(0))
		b.syncTLV(bp)
	}
	if pl, ok := p.(port.Poller); ok && (b.PMD.Enabled || kind == KindSystem && !b.PortThreads) {
		if b.pmd == nil {
			m, err := b.newPollThread()
			if err != nil {
				return 0, fmt.Errorf("bridge %s: add port %s: %w", b.name, p.Name(), err)
			}
			b.pmd = m
		}
		bp.poller = pl
	}
	next := &portSet{byNo: make(map[uint32]*bridgePort, len(cur.byNo)+1)}
	for n, q := range cur.byNo {
		next.byNo[n] = q
	}
	next.byNo[ofport] = bp
	next.numbers = append(slices.Clone(cur.numbers), ofport)
	slices.Sort(next.numbers)
	next.indexTunnels()
	b.ports.Store(next)

	b.attachOffload(bp, kind, opts.NoOffload)
	l := newLoop(b, bp)
	bp.loop = l
	if bp.poller != nil && b.pmd.poll {
		bp.ready, _ = p.(interface{ Ready() bool })
		l.trackSent = true
	}
	// The port list feeds FLOOD/ALL decisions the caches keep (in a
	// batch, once at its end).
	if b.batching.Load() == 0 {
		b.pipeline.BumpGeneration()
	} else {
		b.batchAdded.Store(true)
	}
	if bp.poller != nil {
		b.pmd.add(bp)
	} else {
		b.startReader(bp)
	}
	b.wd.start(b)
	// Debug: the daemon logs each port it adds (as ovs-vswitchd's bridge
	// module does), and 1,000 ports in one transaction are 1,000 lines.
	b.log.Debug("port added", zap.String("port", p.Name()), zap.Uint32("ofport", ofport), zap.String("kind", kind))
	b.notify(PortStatusAdd, bp)
	return ofport, nil
}

// startReader starts the goroutine of a port the PMD thread does not
// serve.
func (b *Bridge) startReader(bp *bridgePort) {
	readerStarted()
	go func() {
		defer close(bp.done)
		defer readerStopped()
		bp.loop.run()
	}()
}

// DelPort detaches port ofport: it closes the port, waits for its
// goroutine, forgets the MACs learned on it and reports OFPPR_DELETE.
func (b *Bridge) DelPort(ofport uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.ports.Load()
	bp, ok := cur.byNo[ofport]
	if !ok {
		return fmt.Errorf("bridge %s: delete port %d: %w", b.name, ofport, ErrNoSuchPort)
	}
	next := &portSet{byNo: make(map[uint32]*bridgePort, len(cur.byNo))}
	for n, q := range cur.byNo {
		if n != ofport {
			next.byNo[n] = q
		}
	}
	next.numbers = slices.DeleteFunc(slices.Clone(cur.numbers), func(n uint32) bool { return n == ofport })
	next.indexTunnels()
	b.ports.Store(next)
	b.pipeline.BumpGeneration()
	err := b.stopPort(bp)
	if b.pipeline.MACs != nil {
		b.pipeline.MACs.Flush(ofport)
	}
	b.log.Info("port deleted", zap.String("port", bp.p.Name()), zap.Uint32("ofport", ofport))
	b.notify(PortStatusDelete, bp)
	return err
}

// stopPort stops the port's receive side first and then closes it: a PMD
// thread drops the port (remove returns once the thread no longer touches
// it, its last batch given back); a port goroutine is woken by Close,
// finishes and transmits the batch it holds, gives it back (only then is
// the ring or UMEM unmapped, see port.Base) and exits. Frames other loops
// queued for the port meanwhile are dropped by its closed WriteBatch.
func (b *Bridge) stopPort(bp *bridgePort) error {
	if bp.poller != nil {
		b.pmd.remove(bp)
		close(bp.done)
	}
	err := bp.p.Close()
	<-bp.done
	bp.loop.close()
	b.detachOffload(bp)
	if err != nil {
		return fmt.Errorf("bridge %s: close port %s: %w", b.name, bp.p.Name(), err)
	}
	return nil
}

// SetPortConfig changes the config bits of ofport selected by mask
// (OFPT_PORT_MOD) and reports OFPPR_MODIFY when they changed.
func (b *Bridge) SetPortConfig(ofport, config, mask uint32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	bp, ok := b.ports.Load().byNo[ofport]
	if !ok {
		return fmt.Errorf("bridge %s: port-mod %d: %w", b.name, ofport, ErrNoSuchPort)
	}
	mask &= PortConfigMask
	old := bp.config.Load()
	nc := old&^mask | config&mask
	if nc == old {
		return nil
	}
	bp.config.Store(nc)
	b.offloadPortChanged()
	b.notify(PortStatusModify, bp)
	return nil
}

func (b *Bridge) notify(reason uint8, bp *bridgePort) {
	if b.OnPortStatus != nil {
		b.OnPortStatus(reason, bp.info())
	}
}

func (bp *bridgePort) info() PortInfo {
	st := addStats(bp.statsBase, bp.p.Stats())
	le := bp.rxLengthErrors.Load()
	st.RxErrors += le + bp.rxPanics.Load()
	st.RxLengthErrors += le
	st.RxDropped += bp.rxConfigDrops.Load() + bp.rxNoPort.Load()
	st.TxDropped += bp.txConfigDrops.Load()
	st.TxErrors += bp.txErrors.Load()
	bp.addOffloadStats(&st)
	return PortInfo{
		OFPort: bp.ofport, Name: bp.p.Name(), MAC: bp.p.HardwareAddr(), Kind: bp.kind,
		MTU: bp.p.MTU(), Config: bp.config.Load(), Stats: st,
	}
}

// Ports describes every port, by ascending OpenFlow number.
func (b *Bridge) Ports() []PortInfo {
	cur := b.ports.Load()
	out := make([]PortInfo, 0, len(cur.numbers))
	for _, n := range cur.numbers {
		out = append(out, cur.byNo[n].info())
	}
	return out
}

// Port describes one port.
func (b *Bridge) Port(ofport uint32) (PortInfo, bool) {
	bp, ok := b.ports.Load().byNo[ofport]
	if !ok {
		return PortInfo{}, false
	}
	return bp.info(), true
}

// Close stops every port goroutine and closes every port. The bridge
// cannot be used afterwards.
func (b *Bridge) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	b.wd.stop()
	cur := b.ports.Load()
	b.ports.Store(&portSet{byNo: map[uint32]*bridgePort{}})
	var errs []error
	for _, n := range cur.numbers {
		if err := b.stopPort(cur.byNo[n]); err != nil {
			errs = append(errs, err)
		}
	}
	if b.pmd != nil {
		b.pmd.close()
	}
	return errors.Join(errs...)
}

// PacketOut executes a controller packet-out (OFPT_PACKET_OUT): actions
// run on a copy of frame as if it had been received on inPort, which may
// be a port number, flowtable.PortController, flowtable.PortLocal or
// flowtable.PortNone. Output to flowtable.PortTable sends the frame
// through the pipeline from table 0. Outputs are transmitted before
// PacketOut returns.
func (b *Bridge) PacketOut(frame []byte, inPort uint32, actions []flowtable.Action) (flowtable.Result, error) {
	return b.PacketOutMetadata(frame, inPort, nil, actions)
}

// PacketOutMetadata is PacketOut for an OpenFlow 1.5 packet-out whose
// match gives pipeline fields (metadata, registers, tunnel fields; see
// flowtable.Match.PipelineOnly): the packet starts the actions with them
// set, as Open vSwitch runs it. md may be nil.
func (b *Bridge) PacketOutMetadata(frame []byte, inPort uint32, md *flowtable.Match, actions []flowtable.Action) (flowtable.Result, error) {
	// An error of the translation: OVS answers such a packet-out with
	// OFPFMFC_UNKNOWN.
	return b.fromController("packet-out", frame, func(k *flowtable.Key) { k.SetInPort(inPort) },
		func(pkt *flowtable.Packet, l *loop) flowtable.Result {
			if md != nil {
				pkt.Key.SetFromMatch(md)
			}
			return b.pipeline.Execute(pkt, actions, l, nil)
		})
}

// Resume continues a packet paused by controller(pause) (NXT_RESUME): the
// frame the controller sent back, with the metadata of its resume (in_port,
// registers, tunnel and ct fields), runs the continuation's actions. As
// with a packet-out, outputs are transmitted before Resume returns.
func (b *Bridge) Resume(frame []byte, md *flowtable.Match, c *flowtable.Continuation) (flowtable.Result, error) {
	return b.fromController("resume", frame, func(k *flowtable.Key) { k.SetMetadata(md) },
		func(pkt *flowtable.Packet, l *loop) flowtable.Result { return b.pipeline.Resume(pkt, c, l, nil) })
}

// fromController runs a packet a controller sent (what says which kind)
// on the packet-out loop: a copy of frame, its metadata set by meta, then
// run; outputs are transmitted before it returns.
func (b *Bridge) fromController(what string, frame []byte, meta func(k *flowtable.Key),
	run func(pkt *flowtable.Packet, l *loop) flowtable.Result) (flowtable.Result, error) {
	if len(frame) < port.MinFrameLen {
		return flowtable.Result{}, fmt.Errorf("bridge %s: %s: %d-byte frame: %w", b.name, what, len(frame), flowtable.ErrRunt)
	}
	b.poMu.Lock()
	defer b.poMu.Unlock()
	l := b.poLoop
	buf := append(l.poBuf[:0], frame...)
	l.poBuf = buf
	l.pkt.Key = flowtable.Key{}
	meta(&l.pkt.Key)
	if err := l.pkt.Extract(buf); err != nil {
		return flowtable.Result{}, fmt.Errorf("bridge %s: %s: %w", b.name, what, err)
	}
	l.ports = b.ports.Load()
	res := run(&l.pkt, l)
	l.flush()
	if res.Error != flowtable.XlateOK {
		return res, fmt.Errorf("bridge %s: %s: %w", b.name, what, res.Error)
	}
	return res, nil
}

// Panics is the number of frames dropped because processing them
// panicked (also in the ports' RxErrors).
func (b *Bridge) Panics() uint64 { return b.panics.Load() }

// recovered counts and logs a frame whose processing on in panicked with
// r: the first time with the stack and the frame, then at most every 10 s.
func (b *Bridge) recovered(in *bridgePort, r any, frame []byte) {
	in.rxPanics.Add(1)
	n := b.panics.Add(1)
	fields := []zap.Field{zap.String("port", in.p.Name()), zap.Uint32("ofport", in.ofport),
		zap.Any("panic", r), zap.Uint64("panics", n)}
	if !b.stackLogged.Swap(true) {
		fields = append(fields, zap.Binary("frame", frame), zap.Stack("stack"))
		b.log.Error("frame processing panicked: frame dropped, loop goes on", fields...)
		return
	}
	now := time.Now().UnixNano()
	if last := b.panicLogAt.Load(); now-last > int64(10*time.Second) && b.panicLogAt.CompareAndSwap(last, now) {
		b.log.Error("frame processing panicked: frame dropped, loop goes on", fields...)
	}
}

// SetCacheMaxEntries bounds the megaflow cache of each packet loop started
// from then on (n <= 0: flowcache.DefaultMaxEntries), like OVS's
// other_config:flow-limit; a full cache starts over. Running loops keep
// theirs until their port is added again.
func (b *Bridge) SetCacheMaxEntries(n int) { b.cacheMaxEntries.Store(int64(max(n, 0))) }

// CacheMaxEntries is SetCacheMaxEntries's bound (0: the default).
func (b *Bridge) CacheMaxEntries() int { return int(b.cacheMaxEntries.Load()) }

// CacheStats sums the megaflow cache counters of every port goroutine.
func (b *Bridge) CacheStats() (st flowcache.Stats, entries int) {
	for _, bp := range b.ports.Load().byNo {
		if l := bp.loop; l != nil && l.cache != nil {
			s := l.cache.Stats()
			st.Hits += s.Hits
			st.Misses += s.Misses
			st.Upcalls += s.Upcalls
			st.Installed += s.Installed
			st.Evictions += s.Evictions
			st.Flushes += s.Flushes
			st.Uncachable += s.Uncachable
			entries += int(s.Entries)
		}
	}
	return st, entries
}

// batchTime is the loop's time of a batch for the cache's "used": the
// conntrack clock the loop read for the batch, or, on a bridge without
// conntrack, the monotonic clock (read once per batch).
func batchTime(ctNow int64) int64 {
	if ctNow != 0 {
		return ctNow
	}
	return int64(time.Since(monoBase)) + int64(time.Hour)
}

var monoBase = time.Now()

// DumpFlows copies the megaflows of every port goroutine's cache, as
// dpctl/dump-flows lists them, and returns the clock (batchTime's) to
// age their "used" against. Each cache is read between two of its
// loop's batches (the loop holds it for a batch), so the dump never
// races the packet path and stalls a loop at most for one copy.
func (b *Bridge) DumpFlows() (flows []flowcache.DumpEntry, now int64) {
	ps := b.ports.Load()
	for _, no := range ps.numbers {
		bp := ps.byNo[no]
		if bp == nil || bp.loop == nil || bp.loop.cache == nil {
			continue
		}
		l := bp.loop
		l.cacheMu.Lock()
		flows = append(flows, l.cache.Dump()...)
		l.cacheMu.Unlock()
	}
	var ctNow int64
	if clk, ok := b.pipeline.Conntrack.(flowtable.ConntrackClock); ok {
		ctNow = clk.Now()
	}
	return flows, batchTime(ctNow)
}

// PortBatch runs add, which adds ports, and invalidates the caches once
// at its end rather than once per port: a reconfiguration that adds 1,000
// ports costs the packet loops one cache rebuild, not 1,000. Until then
// the loops' cached FLOOD and ALL decisions leave out the new ports.
func (b *Bridge) PortBatch(add func()) {
	b.batching.Add(1)
	defer func() {
		if b.batching.Add(-1) == 0 && b.batchAdded.Swap(false) {
			b.pipeline.BumpGeneration()
		}
	}()
	add()
}
