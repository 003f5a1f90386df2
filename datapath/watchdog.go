package datapath

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/port"
)

// The port watchdog: a reader that stops taking turns while a socket it
// serves has frames waiting is stalled. A crash of the kernel thread
// under it (a kernel BUG inside recvmmsg killed one once, holding the
// port's receive lock) is invisible to Go: the goroutine stays "in a
// system call" forever and its ports receive nothing.
//
// Readers are of two kinds. The bridge's poll thread (or PMD thread)
// serves all its AF_PACKET ports and counts its turns (pmd.turns, one
// atomic add per epoll_wait or sweep; it turns at least every 100 ms
// even when idle). A port with a goroutine of its own (--port-threads,
// Geneve, AF_XDP, TAP) counts the goroutine's turns (bridgePort.progress,
// one atomic add per batch). The watchdog sees a reader's count stand
// still across a period while poll(2) says a socket it serves is
// readable at both ends of it; it then logs the reader and its ports,
// counts it (coverage/show "datapath_port_stall") and replaces it
// ("datapath_port_reopen"): a port goroutine by a new socket and
// goroutine (PortOptions.Reopen), a poll thread by a new thread over new
// sockets of all its ports (all need Reopen: the stuck thread may hold
// any of them mid-read). The stalled reader is abandoned (Go cannot stop
// it); should it ever come back it finds its ports closed or itself
// stopped and touches nothing more. The PMD thread is reported only, as
// are ports without a descriptor to poll (MemPort: not watched).

// DefaultWatchdogPeriod is Bridge.WatchdogPeriod's default: a port whose
// frames wait 2-4 s unread is reported.
const DefaultWatchdogPeriod = 2 * time.Second

// watchdog is a bridge's watchdog goroutine and what it saw last.
type watchdog struct {
	once sync.Once
	quit chan struct{}
	// stalls counts stalled ports found, reopened those replaced.
	stalls, reopened atomic.Uint64
	// seen is per port goroutine the turn count at the last tick and
	// whether its socket was readable then, thread the same for the
	// poll or PMD thread; replaced counts the replacements per OpenFlow
	// port, threads those of the poll thread (all the watchdog
	// goroutine's own).
	seen            map[*bridgePort]watchSeen
	thread          watchSeen
	threadOf        *pmd
	replaced        map[uint32]int
	threadsReplaced int
}

// maxReplacements bounds the replacements of one port: a port that
// stalls again and again has a cause a new socket does not cure, and
// each replacement abandons a goroutine.
const maxReplacements = 3

type watchSeen struct {
	progress uint64
	readable bool
	reported bool // this stall is reported (once until the port moves)
}

// stallHookFn, set by tests only, runs in a port goroutine before each
// read (fault injection: it may block, as a dead kernel thread would).
var stallHookFn atomic.Pointer[func(*bridgePort)]

func stallHook(bp *bridgePort) {
	if f := stallHookFn.Load(); f != nil {
		(*f)(bp)
	}
}

// start runs the watchdog of b once, unless it is off. b.mu is held.
func (w *watchdog) start(b *Bridge) {
	if b.WatchdogPeriod < 0 {
		return
	}
	w.once.Do(func() {
		period := b.WatchdogPeriod
		if period == 0 {
			period = DefaultWatchdogPeriod
		}
		w.quit = make(chan struct{})
		w.seen = map[*bridgePort]watchSeen{}
		w.replaced = map[uint32]int{}
		go w.run(b, period)
	})
}

// stop ends the watchdog without waiting (b.mu is held, and a tick
// takes it).
func (w *watchdog) stop() {
	if w.quit != nil {
		close(w.quit)
	}
}

func (w *watchdog) run(b *Bridge, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
		}
		b.mu.Lock()
		if !b.closed {
			w.tick(b)
		}
		b.mu.Unlock()
	}
}

// tick checks every reader once. b.mu is held: ports are neither
// closed nor replaced meanwhile.
func (w *watchdog) tick(b *Bridge) {
	cur := b.ports.Load()
	seen := make(map[*bridgePort]watchSeen, len(cur.byNo))
	var threadPorts []*bridgePort
	threadReadable := false
	for _, n := range cur.numbers {
		bp := cur.byNo[n]
		fd := watchFd(bp)
		if fd == noWatchFd {
			continue
		}
		if bp.poller != nil {
			threadPorts = append(threadPorts, bp)
			threadReadable = threadReadable || readable(fd)
			continue
		}
		now := watchSeen{progress: bp.progress.Load(), readable: readable(fd)}
		last, ok := w.seen[bp]
		if !w.stalled(&now, last, ok) {
			seen[bp] = now
			continue
		}
		seen[bp] = now
		w.stalls.Add(1)
		b.log.Error("port goroutine stalled: frames wait unread", zap.String("bridge", b.name), zap.String("port", bp.p.Name()),
			zap.Uint32("ofport", bp.ofport), zap.Uint64("turns", now.progress), zap.Uint64("stalls", w.stalls.Load()))
		if w.replaced[bp.ofport] >= maxReplacements {
			continue // reported only
		}
		if nbp, err := b.replaceStalled(bp); err != nil {
			b.log.Error("stalled port not replaced", zap.String("port", bp.p.Name()), zap.Uint32("ofport", bp.ofport), zap.Error(err))
		} else {
			w.reopened.Add(1)
			w.replaced[bp.ofport]++
			b.log.Warn("stalled port replaced by a new socket", zap.String("port", nbp.p.Name()), zap.Uint32("ofport", nbp.ofport))
			delete(seen, bp)
		}
	}
	w.seen = seen
	w.tickThread(b, threadPorts, threadReadable)
}

// stalled tells whether a reader that was at last (known: ok) at the
// previous tick and is at now is stalled, and reports it once: now is
// marked reported, and a stall already reported is not one again.
func (w *watchdog) stalled(now *watchSeen, last watchSeen, ok bool) bool {
	if !ok || now.progress != last.progress || !now.readable || !last.readable {
		return false
	}
	now.reported = true
	return !last.reported
}

// tickThread checks the bridge's poll or PMD thread, which serves ports
// (readable: one of their sockets has frames).
func (w *watchdog) tickThread(b *Bridge, ports []*bridgePort, readable bool) {
	m := b.pmd
	if m == nil || len(ports) == 0 {
		w.threadOf = nil
		return
	}
	now := watchSeen{progress: m.turns.Load(), readable: readable}
	last, ok := w.thread, w.threadOf == m
	w.thread, w.threadOf = now, m
	if !w.stalled(&w.thread, last, ok) {
		return
	}
	kind := "poll"
	if !m.poll {
		kind = "PMD"
	}
	names := make([]string, len(ports))
	for i, bp := range ports {
		names[i] = bp.p.Name()
	}
	w.stalls.Add(1)
	b.log.Error(kind+" thread stalled: frames wait unread", zap.String("bridge", b.name), zap.Strings("ports", names),
		zap.Uint64("turns", now.progress), zap.Uint64("stalls", w.stalls.Load()))
	if w.threadsReplaced >= maxReplacements {
		return // reported only
	}
	if err := b.replacePollThread(ports); err != nil {
		b.log.Error("stalled "+kind+" thread not replaced", zap.String("bridge", b.name), zap.Error(err))
		return
	}
	w.reopened.Add(1)
	w.threadsReplaced++
	w.threadOf = nil
	b.log.Warn("stalled poll thread replaced by a new one over new sockets", zap.String("bridge", b.name), zap.Strings("ports", names))
}

// noWatchFd: the port has no descriptor to watch.
const noWatchFd = -2

// watchFd is bp's receive descriptor as the watchdog may read it from
// its own goroutine: a tunnel port's PollFd (the shared socket or the
// port's inbox, neither rebound), else port.Base.WatchFd (a ring kind
// rebinds in its reader); noWatchFd for neither (MemPort).
func watchFd(bp *bridgePort) int {
	if pf, ok := bp.p.(interface{ PollFd() int }); ok && bp.tun != nil {
		return pf.PollFd()
	}
	if w, ok := bp.p.(interface{ WatchFd() int }); ok {
		return w.WatchFd()
	}
	if pf, ok := bp.p.(interface{ PollFd() int }); ok {
		return pf.PollFd()
	}
	return noWatchFd
}

// readable tells whether fd has frames to read (poll(2), no wait).
func readable(fd int) bool {
	if fd < 0 {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&unix.POLLIN != 0
}

var (
	errNoReopen = errors.New("the port cannot be opened again (no PortOptions.Reopen)")
	errPMDPort  = errors.New("the PMD thread serves the port")
	errPMD      = errors.New("the PMD thread is not replaced")
)

// replaceStalled opens the stalled port's device again and puts a new
// bridgePort with the same number, config and counters in its place,
// with a goroutine of its own. The old goroutine is abandoned; the old
// port is closed off the lock (its Close may wait for the stalled
// reader). Tunnel ports are not replaced (their socket is shared).
// b.mu is held.
func (b *Bridge) replaceStalled(old *bridgePort) (*bridgePort, error) {
	if old.poller != nil {
		return nil, errPMDPort
	}
	if old.reopen == nil || old.tun != nil {
		return nil, errNoReopen
	}
	p, err := old.reopen()
	if err != nil {
		return nil, err
	}
	bp := b.newReplacement(old, p)
	b.swapPorts(bp)
	b.startReader(bp)
	go func() {
		// Should the old goroutine ever return, it finds its port closed
		// and exits; only then may its loop give back what it holds.
		old.p.Close()
		<-old.done
		old.loop.close()
	}()
	return bp, nil
}

// newReplacement is a bridgePort for p, a new socket of old's device,
// with old's number, config and counters, and a loop of its own.
func (b *Bridge) newReplacement(old *bridgePort, p port.Port) *bridgePort {
	bp := &bridgePort{ofport: old.ofport, p: p, kind: old.kind, maxFrame: port.MaxFrameLen(p.MTU()),
		done: make(chan struct{}), reopen: old.reopen,
		xdp: old.xdp, ifindex: old.ifindex, off: old.off, offID: old.offID}
	if vw, ok := p.(port.VnetWriter); ok && vw.VnetEnabled() {
		bp.vnet = vw
	}
	bp.config.Store(old.config.Load())
	bp.statsBase = addStats(old.statsBase, old.p.Stats())
	for _, c := range []struct{ to, from *atomic.Uint64 }{
		{&bp.rxLengthErrors, &old.rxLengthErrors}, {&bp.rxConfigDrops, &old.rxConfigDrops},
		{&bp.txConfigDrops, &old.txConfigDrops}, {&bp.txErrors, &old.txErrors},
		{&bp.rxPanics, &old.rxPanics}, {&bp.rxNoPort, &old.rxNoPort}, {&bp.processed, &old.processed},
	} {
		c.to.Store(c.from.Load())
	}
	bp.loop = newLoop(b, bp)
	return bp
}

// swapPorts puts bps in the places of the ports with their numbers.
// b.mu is held.
func (b *Bridge) swapPorts(bps ...*bridgePort) {
	cur := b.ports.Load()
	next := &portSet{byNo: make(map[uint32]*bridgePort, len(cur.byNo)), numbers: cur.numbers}
	for n, q := range cur.byNo {
		next.byNo[n] = q
	}
	for _, bp := range bps {
		next.byNo[bp.ofport] = bp
	}
	next.indexTunnels()
	b.ports.Store(next)
	b.pipeline.BumpGeneration()
}

// replacePollThread replaces the bridge's stalled poll thread, which
// serves olds, by a new thread over new sockets of the same devices
// (every port needs PortOptions.Reopen: the stuck thread may hold any
// of its ports mid-read, and it holds its lock). The old thread is
// stopped without its lock: should it come back, it reads no port again
// (serve) and exits; only then are its loops and descriptors given back.
// b.mu is held.
func (b *Bridge) replacePollThread(olds []*bridgePort) error {
	old := b.pmd
	if !old.poll {
		return errPMD
	}
	ps := make([]port.Port, 0, len(olds))
	closeAll := func() {
		for _, p := range ps {
			p.Close()
		}
	}
	for _, bp := range olds {
		if bp.reopen == nil {
			closeAll()
			return fmt.Errorf("port %s: %w", bp.p.Name(), errNoReopen)
		}
		p, err := bp.reopen()
		if err == nil {
			if _, ok := p.(port.Poller); !ok {
				p.Close()
				err = fmt.Errorf("its new socket cannot be polled")
			}
		}
		if err != nil {
			closeAll()
			return fmt.Errorf("reopen port %s: %w", bp.p.Name(), err)
		}
		ps = append(ps, p)
	}
	m, err := b.newPollThread()
	if err != nil {
		closeAll()
		return err
	}
	old.stop.Store(true)
	bps := make([]*bridgePort, len(olds))
	for i, o := range olds {
		bp := b.newReplacement(o, ps[i])
		bp.poller = ps[i].(port.Poller)
		bp.ready, _ = ps[i].(interface{ Ready() bool })
		bp.loop.trackSent = true
		bps[i] = bp
	}
	b.pmd = m
	b.swapPorts(bps...)
	for _, bp := range bps {
		m.add(bp)
	}
	go func() {
		// Each port apart: the Close of the one the thread is stuck in
		// may wait for it forever; the others' sockets must still go
		// (an AF_PACKET socket left open keeps receiving copies).
		for _, o := range olds {
			go o.p.Close()
		}
		<-old.done
		readerStopped()
		for _, o := range olds {
			o.loop.close()
		}
		unix.Close(old.wakeFd)
		unix.Close(old.epfd)
	}()
	return nil
}

// addStats is a + b, counter by counter.
func addStats(a, b port.Stats) port.Stats {
	return port.Stats{
		RxPackets: a.RxPackets + b.RxPackets, RxBytes: a.RxBytes + b.RxBytes, RxDropped: a.RxDropped + b.RxDropped,
		RxErrors: a.RxErrors + b.RxErrors, RxLengthErrors: a.RxLengthErrors + b.RxLengthErrors,
		TxPackets: a.TxPackets + b.TxPackets, TxBytes: a.TxBytes + b.TxBytes,
		TxDropped: a.TxDropped + b.TxDropped, TxErrors: a.TxErrors + b.TxErrors,
	}
}

// WatchdogStats are the port watchdog's counters: stalled readers found
// (port goroutines, the poll or PMD thread) and readers replaced (a port
// by a new socket and goroutine, the poll thread by a new one).
func (b *Bridge) WatchdogStats() (stalls, reopened uint64) {
	return b.wd.stalls.Load(), b.wd.reopened.Load()
}
