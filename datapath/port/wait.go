package port

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// RxWaiter parks a port's reader goroutine until the port's descriptor is
// readable, through the Go runtime's netpoller (epoll) rather than a
// poll(2) system call. A goroutine blocked in poll(2) keeps its P (the
// runtime's right to run Go code), so with one such reader per port every P
// can be stuck in a system call: the runtime's sysmon thread then wakes every
// 20 µs to take the Ps back and hand them to other threads, and each waking
// reader must win a P back. On a VM, where a context switch costs several
// microseconds, that churn was a fifth of the switch's CPU time under TCP
// load. A goroutine parked on the netpoller holds nothing; the thread that
// waits in epoll_wait runs it directly when frames arrive.
type RxWaiter struct {
	name    string
	f       *os.File // a duplicate of the port's descriptor, registered with the netpoller
	rc      syscall.RawConn
	timeout time.Duration
	closed  atomic.Bool

	// The callback rc.Read calls, made once so Wait does not allocate:
	// it reports ready() on the first call, and true after any wake-up.
	ready func() bool
	woke  bool
	ok    bool
	check func(uintptr) bool
}

// NewRxWaiter registers a duplicate of fd with the netpoller. The
// duplicate shares fd's open file description, so fd becomes non-blocking
// too: the port must treat EAGAIN as "nothing yet" on every call (or pass
// MSG_DONTWAIT anyway). A timeout > 0 makes Wait return false after that
// long without a wake-up. name prefixes errors.
func NewRxWaiter(name string, fd int, timeout time.Duration) (*RxWaiter, error) {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: dup for netpoller: %w", name, err)
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, fmt.Errorf("%s: non-blocking: %w", name, err)
	}
	f := os.NewFile(uintptr(dup), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: netpoller: %w", name, err)
	}
	w := &RxWaiter{name: name, f: f, rc: rc, timeout: timeout}
	w.check = func(uintptr) bool {
		if w.closed.Load() {
			return true
		}
		if !w.woke {
			w.woke = true
			w.ok = w.ready != nil && w.ready()
			return w.ok
		}
		w.ok = true
		return true
	}
	return w, nil
}

// ErrPollError is returned (wrapped) by Wait when the kernel reported an
// error condition on the descriptor (EPOLLERR alone): the port should read
// and clear SO_ERROR, and sleep in poll(2) once, since the runtime reports
// the condition again until the next event on the descriptor.
var ErrPollError = errors.New("error condition on descriptor")

// Wait returns true at once if ready (which may be nil) reports frames,
// else parks until the descriptor becomes readable and returns true, or
// returns false when the timeout passed. The caller then reads without
// blocking and waits again if nothing was there. Only one goroutine may
// Wait at a time. After Close it returns an error wrapping ErrClosed.
func (w *RxWaiter) Wait(ready func() bool) (bool, error) {
	if w.closed.Load() {
		return false, fmt.Errorf("%s: read: %w", w.name, ErrClosed)
	}
	if w.timeout > 0 {
		if err := w.f.SetReadDeadline(time.Now().Add(w.timeout)); err != nil {
			return false, fmt.Errorf("%s: read deadline: %w", w.name, err)
		}
	}
	w.ready, w.woke, w.ok = ready, false, false
	err := w.rc.Read(w.check)
	w.ready = nil
	switch {
	case w.closed.Load() || errors.Is(err, os.ErrClosed):
		return false, fmt.Errorf("%s: read: %w", w.name, ErrClosed)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return false, nil
	case err != nil:
		// Typically "not pollable": an error-only event, which the
		// runtime keeps reporting until the next event clears it.
		return false, fmt.Errorf("%s: %w: %v", w.name, ErrPollError, err)
	}
	return w.ok, nil
}

// Close wakes a parked Wait (it returns ErrClosed) and unregisters the
// duplicate descriptor; the port's own descriptor stays open.
func (w *RxWaiter) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("%s: close netpoller descriptor: %w", w.name, err)
	}
	return nil
}
