package datapath

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/port"
)

// The port watchdog: a port goroutine that stops taking turns while its
// socket has frames waiting is stalled. A crash of the kernel thread
// under it (a kernel BUG inside recvmmsg killed one once, holding the
// port's receive lock) is invisible to Go: the goroutine stays "in a
// system call" forever and the port receives nothing. The watchdog sees
// the goroutine's turn counter (bridgePort.progress, one atomic add per
// batch) stand still across a period while poll(2) says the port's
// socket is readable at both ends of it; it then logs the port, counts
// it (coverage/show "datapath_port_stall") and, when the port can be
// opened again (PortOptions.Reopen), replaces it: a new socket or ring,
// a new goroutine, the same OpenFlow port number, config and counters.
// The stalled goroutine is abandoned (Go cannot stop it). Ports the PMD
// thread serves are watched the same way (the thread counts a turn per
// port it polls) but only reported: one thread serves them all. Ports
// without a descriptor to poll (MemPort) are not watched.

// DefaultWatchdogPeriod is Bridge.WatchdogPeriod's default: a port whose
// frames wait 2-4 s unread is reported.
const DefaultWatchdogPeriod = 2 * time.Second

// watchdog is a bridge's watchdog goroutine and what it saw last.
type watchdog struct {
	once sync.Once
	quit chan struct{}
	// stalls counts stalled ports found, reopened those replaced.
	stalls, reopened atomic.Uint64
	// seen is per port the turn count at the last tick and whether its
	// socket was readable then; replaced counts the replacements per
	// OpenFlow port (both the watchdog goroutine's own).
	seen     map[*bridgePort]watchSeen
	replaced map[uint32]int
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

// tick checks every watched port once. b.mu is held: ports are neither
// closed nor replaced meanwhile.
func (w *watchdog) tick(b *Bridge) {
	cur := b.ports.Load()
	seen := make(map[*bridgePort]watchSeen, len(cur.byNo))
	for _, n := range cur.numbers {
		bp := cur.byNo[n]
		pf, ok := bp.p.(interface{ PollFd() int })
		if !ok {
			continue
		}
		now := watchSeen{progress: bp.progress.Load(), readable: readable(pf.PollFd())}
		seen[bp] = now
		last, ok := w.seen[bp]
		if !ok || now.progress != last.progress || !now.readable || !last.readable {
			continue
		}
		now.reported = true
		seen[bp] = now
		if last.reported {
			continue
		}
		w.stalls.Add(1)
		b.log.Error("port goroutine stalled: frames wait unread", zap.String("port", bp.p.Name()),
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
	cur := b.ports.Load()
	next := &portSet{byNo: make(map[uint32]*bridgePort, len(cur.byNo)), numbers: cur.numbers}
	for n, q := range cur.byNo {
		next.byNo[n] = q
	}
	next.byNo[bp.ofport] = bp
	next.indexTunnels()
	b.ports.Store(next)
	b.pipeline.BumpGeneration()
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

// addStats is a + b, counter by counter.
func addStats(a, b port.Stats) port.Stats {
	return port.Stats{
		RxPackets: a.RxPackets + b.RxPackets, RxBytes: a.RxBytes + b.RxBytes, RxDropped: a.RxDropped + b.RxDropped,
		RxErrors: a.RxErrors + b.RxErrors, RxLengthErrors: a.RxLengthErrors + b.RxLengthErrors,
		TxPackets: a.TxPackets + b.TxPackets, TxBytes: a.TxBytes + b.TxBytes,
		TxDropped: a.TxDropped + b.TxDropped, TxErrors: a.TxErrors + b.TxErrors,
	}
}

// WatchdogStats are the port watchdog's counters: stalled port
// goroutines found and ports replaced by a new socket.
func (b *Bridge) WatchdogStats() (stalls, reopened uint64) {
	return b.wd.stalls.Load(), b.wd.reopened.Load()
}
