package datapath

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// The poll thread is how a bridge serves its AF_PACKET ports when the PMD
// is off, the way ovs-vswitchd's main thread serves the rx queues of its
// netdev-linux ports: one thread reads every port that has frames, then
// sleeps in epoll_wait until one has more. It never spins.
//
// One thread for all ports, rather than a goroutine per port, saves most
// wake-ups: a frame sent to a veth is delivered to the pod's stack inside
// the send, and the pod's answer (a SYN-ACK for a SYN, an ACK for data)
// lands in the ring of the port the frame went out on before the send
// returns. The thread finds it there (followUp) without sleeping, where a
// goroutine per port had to wake that port's sleeping thread for it. On
// the bench's connect/close loops through the 119k-flow node this cut the
// switch's context switches from about one per packet to 0.4, its system
// calls from about 2 to 0.9 per packet, and its CPU per connection from
// 82-97 µs to 50-61 µs (Open vSwitch: 92-101 µs). The price: one CPU's
// worth of switching for all the bridge's system ports, as in OVS, where
// a thread per port could use two for the two directions of a stream.
//
// epoll (not poll(2) over every port, as OVS does) keeps a wake-up's cost
// independent of the number of ports; ports that have nothing to read are
// not looked at. Every pollTick the thread still reads every port once (a
// detached port re-attaches there), runs the idle caches' housekeeping and
// registers descriptors that changed; every second it takes pending
// socket errors.

// pollTick is how often the poll thread visits every port, busy or not.
const pollTick = pmdSleepTimeout * time.Millisecond

// pollEvents is how many ready descriptors one epoll_wait returns at most.
const pollEvents = 64

// newPollThread starts the bridge's PMD thread, or its poll thread when
// the PMD is off.
func (b *Bridge) newPollThread() (*pmd, error) {
	m, err := newPMD(b, b.PMD)
	if err != nil || b.PMD.Enabled {
		return m, err
	}
	if err := m.initPoll(); err != nil {
		unix.Close(m.wakeFd)
		return nil, err
	}
	return m, nil
}

// initPoll makes m the bridge's poll thread.
func (m *pmd) initPoll() error {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("poll thread: epoll_create1: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(m.wakeFd)}
	if err := unix.EpollCtl(fd, unix.EPOLL_CTL_ADD, m.wakeFd, &ev); err != nil {
		unix.Close(fd)
		return fmt.Errorf("poll thread: add eventfd: %w", err)
	}
	m.poll, m.epfd = true, fd
	m.byFd, m.regd = map[int32][]*bridgePort{}, map[int32]uint64{}
	return nil
}

// runPoll is the poll thread.
func (m *pmd) runPoll() {
	defer close(m.done)
	evs := make([]unix.EpollEvent, pollEvents)
	m.mu.Lock()
	m.register()
	m.mu.Unlock()
	lastTick, lastCheck := time.Now(), time.Now()
	for !m.stop.Load() {
		n, err := unix.EpollWait(m.epfd, evs, pmdSleepTimeout)
		if err != nil && err != unix.EINTR {
			m.b.log.Warn("poll thread: epoll_wait failed", zap.Error(err))
			time.Sleep(time.Millisecond)
		}
		m.mu.Lock()
		for _, ev := range evs[:max(n, 0)] {
			if m.stop.Load() {
				break // abandoned mid-turn by the watchdog: touch no port
			}
			if ev.Fd == int32(m.wakeFd) {
				// Ports were added or removed.
				var buf [8]byte
				_, _ = unix.Read(m.wakeFd, buf[:])
				m.register()
				continue
			}
			for _, bp := range m.byFd[ev.Fd] {
				if m.stop.Load() {
					break
				}
				if ev.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0 {
					if err := bp.poller.PollError(); err != nil {
						m.logReadError(bp, err)
					}
				}
				if m.serve(bp) > 0 {
					m.cur = m.collect(m.cur, bp)
				}
			}
		}
		m.followUp()
		m.mu.Unlock()
		m.turns.Add(1) // the watchdog's sign of life
		if m.stop.Load() {
			return
		}
		if n <= 0 || time.Since(lastTick) >= pollTick {
			lastTick = time.Now()
			m.tick()
			if lastTick.Sub(lastCheck) >= time.Second && !m.stop.Load() {
				// Rarely: poll reports an AF_PACKET socket's error
				// itself (EPOLLERR); this is for what it does not.
				lastCheck = lastTick
				m.checkErrors()
			}
		}
	}
}

// followRounds bounds followUp, so a stream on some ports does not keep
// the thread from epoll_wait (and the other ports' events) for long.
const followRounds = 8

// followUp reads the ports the last batches came from or went to again
// while their rings have frames, before going back to epoll_wait: a frame
// sent to a veth is received by the pod inside the send, and its answer
// is often in the ring already. Looking at the ring is a memory read;
// epoll_wait would be a system call to learn the same. The caller holds
// mu; m.cur holds the ports to look at.
func (m *pmd) followUp() {
	for round := 0; len(m.cur) > 0 && round < followRounds; round++ {
		m.next = m.next[:0]
		for _, bp := range m.cur {
			if m.stop.Load() {
				break // abandoned by the watchdog: touch no port
			}
			if bp.ready.Ready() && m.serve(bp) > 0 {
				m.next = m.collect(m.next, bp)
			}
		}
		m.cur, m.next = m.next, m.cur
	}
	clear(m.cur)
	m.cur = m.cur[:0]
}

// collect adds bp and the ports its batch was sent to to list, once
// each, and clears the loop's record of them.
func (m *pmd) collect(list []*bridgePort, bp *bridgePort) []*bridgePort {
	l := bp.loop
	list = appendOnce(list, bp)
	for _, q := range l.sent {
		list = appendOnce(list, q)
	}
	clear(l.sent)
	l.sent = l.sent[:0]
	return list
}

func appendOnce(list []*bridgePort, bp *bridgePort) []*bridgePort {
	if bp.ready == nil || slices.Contains(list, bp) {
		return list
	}
	return append(list, bp)
}

// tick visits every port once: a read (which re-attaches a detached
// port) and the caches' housekeeping; then the epoll set follows
// descriptors that changed.
func (m *pmd) tick() {
	if m.sweep(); m.stop.Load() {
		return // abandoned by the watchdog during the sweep
	}
	m.mu.Lock()
	m.expireCaches()
	m.register()
	m.mu.Unlock()
}

// register brings the epoll set in line with the ports' descriptors. A
// descriptor is registered again when the Binds of its ports changed: the
// port re-attached, maybe under its old descriptor number. The caller
// holds mu.
func (m *pmd) register() {
	if !m.portsChanged() {
		return
	}
	byFd := make(map[int32][]*bridgePort, len(m.ports))
	sig := make(map[int32]uint64, len(m.ports))
	for _, bp := range m.ports {
		fd := int32(bp.poller.PollFd())
		if fd < 0 {
			continue // detached: the tick re-attaches it
		}
		byFd[fd] = append(byFd[fd], bp)
		sig[fd] += binds(bp)
	}
	for fd, s := range m.regd {
		if t, ok := sig[fd]; !ok || t != s {
			// Gone or re-bound; the descriptor may already be closed.
			_ = unix.EpollCtl(m.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
			delete(m.regd, fd)
		}
	}
	for fd, s := range sig {
		if _, ok := m.regd[fd]; ok {
			continue
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: fd}
		err := unix.EpollCtl(m.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
		if errors.Is(err, unix.EEXIST) {
			err = unix.EpollCtl(m.epfd, unix.EPOLL_CTL_MOD, int(fd), &ev)
		}
		if err != nil {
			m.b.log.Warn("poll thread: cannot watch a port", zap.Int32("fd", fd), zap.Error(err))
			continue
		}
		m.regd[fd] = s
	}
	m.byFd = byFd
	for _, bp := range m.ports {
		bp.pollFd, bp.pollBinds = int32(bp.poller.PollFd()), binds(bp)
	}
	m.nRegd = len(m.ports)
}

// portsChanged reports whether a port was added, removed or re-bound
// since the last register. The caller holds mu.
func (m *pmd) portsChanged() bool {
	if len(m.ports) != m.nRegd {
		return true
	}
	for _, bp := range m.ports {
		if bp.pollFd != int32(bp.poller.PollFd()) || bp.pollBinds != binds(bp) {
			return true
		}
	}
	return false
}

// binds is the port's port.Base.Binds (0 for a kind without it).
func binds(bp *bridgePort) uint64 {
	if b, ok := bp.p.(interface{ Binds() uint64 }); ok {
		return b.Binds()
	}
	return 0
}
