package port

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// RawRead is read(2) on a non-blocking descriptor as a raw system call.
// It never sleeps, so the Go runtime need not hear of it: an announced
// call (unix.Read) lets sysmon retake the goroutine's P if it runs long
// and, on its return, wakes sysmon from its deep sleep into polling every
// 20 µs. With a system call per frame on the packet path, that churn was
// a measurable part of the switch's CPU time.
func RawRead(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// RawWrite is write(2) on a non-blocking descriptor as a raw system call
// (see RawRead).
func RawWrite(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// SignalEventfd adds one to the eventfd fd, so a poll(2) on it returns: how
// a port's Close wakes its blocked reader.
func SignalEventfd(fd int) error {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1) // an eventfd adds this host-order counter
	_, err := unix.Write(fd, one[:])
	return err
}

// PollRx sleeps in poll(2) on a port's receive descriptor (fds[0], for
// POLLIN) and its wake eventfd (fds[1]) for up to timeoutMs (-1: no limit),
// retrying after signals. It returns the receive descriptor's events (0 on
// timeout), or an error wrapping ErrClosed once the eventfd fired or closed
// is set.
func PollRx(fds *[2]unix.PollFd, timeoutMs int, closed *atomic.Bool) (int16, error) {
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		_, err := unix.Poll(fds[:], timeoutMs)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("poll: %w", err)
		}
		if fds[1].Revents != 0 || closed.Load() {
			return 0, fmt.Errorf("read: %w", ErrClosed)
		}
		return fds[0].Revents, nil
	}
}
