package datapath

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/port"
)

// PMDConfig turns on a poll-mode thread for the bridge, like OVS's PMD
// threads (other_config:pmd-cpu-mask): one OS thread, optionally pinned to
// a CPU, polls every port that can be polled (port.Poller: AF_PACKET and
// Geneve ports) in turn and keeps polling while frames flow, instead of one
// goroutine per port sleeping in poll(2). A frame then never waits for a
// thread to be woken — which costs tens of microseconds when the vCPU it
// runs on is idle — at the price of a CPU spinning while traffic flows.
// After IdleSpin without a frame the thread sleeps in poll(2) on all its
// ports at once, so an idle switch uses no CPU. Ports that cannot be
// polled (TAP) keep their own goroutines.
type PMDConfig struct {
	Enabled bool
	// CPU pins the thread (sched_setaffinity); -1 leaves it to the
	// scheduler.
	CPU int
	// IdleSpin is how long the thread polls without finding a frame
	// before it sleeps; default 500 µs, longer than the gap between the
	// frames of a request/response exchange.
	IdleSpin time.Duration
}

const defaultIdleSpin = 500 * time.Microsecond

// pmdSleepTimeout bounds a sleep so idle caches still expire.
const pmdSleepTimeout = 100 // ms

// pmd is a bridge's poll-mode thread and the ports it serves.
type pmd struct {
	b   *Bridge
	cfg PMDConfig

	// mu is held by the thread while it walks the ports, so remove can
	// wait until the thread no longer uses a port.
	mu    sync.Mutex
	ports []*bridgePort

	wakeFd  int // eventfd: ports changed or the bridge closes
	stop    atomic.Bool
	done    chan struct{}
	started bool

	lastErr time.Time

	// turns counts the thread's turns (one per epoll_wait or sweep): the
	// watchdog's sign of life (watchdog.go).
	turns atomic.Uint64

	// poll is the bridge's poll thread when the PMD is off (see
	// pollthread.go): it never spins, and sleeps in epoll_wait on the
	// ports' descriptors (epfd) rather than in poll(2) on all of them.
	poll bool
	epfd int
	// byFd: the ports behind each descriptor in the epoll set. The thread
	// owns it; it reads it with mu held.
	byFd map[int32][]*bridgePort
	// cur and next: the ports to look at again before the next
	// epoll_wait (followUp), reused.
	cur, next []*bridgePort
	regd      map[int32]uint64 // descriptor in the epoll set -> its ports' Binds
	nRegd     int              // ports at the last register
}

func newPMD(b *Bridge, cfg PMDConfig) (*pmd, error) {
	if cfg.CPU >= runtime.NumCPU() {
		return nil, fmt.Errorf("PMD CPU %d: this machine has %d CPUs", cfg.CPU, runtime.NumCPU())
	}
	if cfg.IdleSpin <= 0 {
		cfg.IdleSpin = defaultIdleSpin
	}
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("PMD eventfd: %w", err)
	}
	return &pmd{b: b, cfg: cfg, wakeFd: fd, epfd: -1, done: make(chan struct{})}, nil
}

// add starts serving bp (whose port is a port.Poller), starting the
// thread with the first port.
func (m *pmd) add(bp *bridgePort) {
	m.mu.Lock()
	m.ports = append(m.ports, bp)
	if m.poll {
		m.register()
	}
	if !m.started {
		m.started = true
		readerStarted()
		if m.poll {
			go m.runPoll()
		} else {
			go m.run()
		}
	}
	m.mu.Unlock()
	m.wake()
}

// remove stops serving bp; when it returns the thread no longer touches
// the port.
func (m *pmd) remove(bp *bridgePort) {
	m.mu.Lock()
	for i, q := range m.ports {
		if q == bp {
			m.ports = append(m.ports[:i:i], m.ports[i+1:]...)
			break
		}
	}
	if m.poll {
		// Now, not in the thread: once mu is released, no event of
		// the port's descriptor may lead to it.
		m.register()
	}
	m.mu.Unlock()
	m.wake()
}

// close stops the thread (after every port was removed).
func (m *pmd) close() {
	m.stop.Store(true)
	m.wake()
	m.mu.Lock()
	started := m.started
	m.mu.Unlock()
	if started {
		<-m.done
		readerStopped()
	}
	unix.Close(m.wakeFd)
	if m.epfd >= 0 {
		unix.Close(m.epfd)
	}
}

func (m *pmd) wake() {
	_ = port.SignalEventfd(m.wakeFd)
}

// run is the thread: poll every port, process what came, repeat; sleep in
// poll(2) after IdleSpin of nothing.
func (m *pmd) run() {
	defer close(m.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if m.cfg.CPU >= 0 {
		var set unix.CPUSet
		set.Set(m.cfg.CPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			m.b.log.Warn("PMD thread not pinned", zap.Int("cpu", m.cfg.CPU), zap.Error(err))
		}
	}
	var fds []unix.PollFd
	idleFrom := time.Now()
	lastCheck := time.Now()
	for idle, sweeps := 0, 0; !m.stop.Load(); {
		m.turns.Add(1) // the watchdog's sign of life
		// Now and then, even while frames flow elsewhere: ports whose
		// socket error poll(2) never reports (AF_XDP).
		if sweeps++; sweeps%256 == 0 && time.Since(lastCheck) > time.Second {
			lastCheck = time.Now()
			m.checkErrors()
		}
		if m.sweep() > 0 {
			idle = 0
			continue
		}
		// Reading the clock costs more than one empty sweep.
		if idle++; idle == 1 {
			idleFrom = time.Now()
		}
		if idle%64 != 0 || time.Since(idleFrom) < m.cfg.IdleSpin {
			continue
		}
		fds = m.sleep(fds)
		idle = 0
	}
}

// sweep reads and processes one batch from every port and returns the
// number of frames.
func (m *pmd) sweep() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	got := 0
	for _, bp := range m.ports {
		n := m.serve(bp)
		if n > 0 && m.poll {
			m.cur = m.collect(m.cur, bp)
		}
		got += n
	}
	if m.poll {
		m.followUp()
	}
	return got
}

// serve reads and processes one batch of bp and returns the number of
// frames. The caller holds mu.
func (m *pmd) serve(bp *bridgePort) int {
	l := bp.loop
	if bp.tun != nil {
		// Before the read: the port decodes options with its map.
		m.b.syncTLV(bp)
	}
	stallHook(bp)
	if m.stop.Load() {
		// Stopped, or abandoned by the watchdog while this read was
		// stuck: the ports belong to another thread now.
		return 0
	}
	n, err := bp.poller.TryReadBatch(l.batch)
	if err != nil && !errors.Is(err, port.ErrClosed) {
		m.logReadError(bp, err)
	}
	if n > 0 {
		l.process(l.batch.Frames[:n])
	}
	bp.p.Release()
	return n
}

// pollErrors hands the error conditions poll(2) reported on the ports'
// descriptors (fds, in the order of m.ports) to the ports: a socket error
// never shows up in TryReadBatch, and a deleted interface must be noticed
// to re-attach the port.
func (m *pmd) pollErrors(fds []unix.PollFd) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, fd := range fds {
		if fd.Revents&(unix.POLLERR|unix.POLLHUP) == 0 || i >= len(m.ports) {
			continue
		}
		bp := m.ports[i]
		if int(fd.Fd) != bp.poller.PollFd() {
			continue // the ports changed since the poll
		}
		if err := bp.poller.PollError(); err != nil {
			m.logReadError(bp, err)
		}
	}
}

// checkErrors hands every port's pending socket error to it.
func (m *pmd) checkErrors() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, bp := range m.ports {
		if err := bp.poller.PollError(); err != nil {
			m.logReadError(bp, err)
		}
	}
}

// logReadError logs a port's read error now and then.
func (m *pmd) logReadError(bp *bridgePort, err error) {
	if now := time.Now(); now.Sub(m.lastErr) > 10*time.Second {
		m.lastErr = now
		m.b.log.Warn("port read failed", zap.String("port", bp.p.Name()), zap.Uint32("ofport", bp.ofport), zap.Error(err))
	}
}

// sleep waits in poll(2) until a port has frames, the ports change, the
// bridge closes or pmdSleepTimeout passes. fds is reused between calls.
func (m *pmd) sleep(fds []unix.PollFd) []unix.PollFd {
	fds = append(fds[:0], unix.PollFd{Fd: int32(m.wakeFd), Events: unix.POLLIN})
	m.mu.Lock()
	for _, bp := range m.ports {
		fds = append(fds, unix.PollFd{Fd: int32(bp.poller.PollFd()), Events: unix.POLLIN})
	}
	m.mu.Unlock()
	// A port closed meanwhile makes poll return at once (POLLNVAL); the
	// next sweep no longer has it.
	if _, err := unix.Poll(fds, pmdSleepTimeout); err != nil && err != unix.EINTR {
		m.b.log.Warn("PMD poll failed", zap.Error(err))
		time.Sleep(time.Millisecond)
	}
	if fds[0].Revents != 0 {
		var buf [8]byte
		_, _ = unix.Read(m.wakeFd, buf[:])
	}
	m.pollErrors(fds[1:])
	if m.sweep() == 0 {
		// Timeout or a wake-up without frames: still run the caches'
		// housekeeping now and then.
		m.mu.Lock()
		m.expireCaches()
		m.mu.Unlock()
	}
	return fds
}

// expireCaches runs the housekeeping of every port's cache, for ports
// that receive nothing. The caller holds mu.
func (m *pmd) expireCaches() {
	for _, bp := range m.ports {
		if l := bp.loop; l.cache != nil {
			l.cacheMu.Lock()
			l.cache.MaybeExpire()
			l.cacheMu.Unlock()
		}
	}
}
