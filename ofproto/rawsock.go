package ofproto

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// rawSocket is a connected stream socket (unix or TCP) that a connection
// reads and writes with blocking system calls on its own goroutines,
// outside Go's netpoller. The netpoller keeps every socket in one
// edge-triggered epoll set, so each message a client writes wakes a
// runtime thread, also while the connection's reader lets a bundle's
// messages accumulate (coalescingReader): with ovs-ofctl or ofnet writing
// a bundle one message per write, those wakeups cost the switch more
// than the messages. A reader blocked in read(2) is woken by the kernel
// directly, one that sleeps between reads is not woken at all. Open
// vSwitch reads its connections the same way, from its own poll loop.
type rawSocket struct {
	fd            int
	local, remote net.Addr

	mu      sync.Mutex
	calls   int  // system calls on fd in progress
	closing bool // shut down: no new calls, the last one out closes fd
	closed  bool
}

// newRawSocket takes nc's socket out of the netpoller: it keeps a
// duplicate of the descriptor, in blocking mode, and closes nc.
func newRawSocket(nc net.Conn) (*rawSocket, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%T has no descriptor", nc)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd, dupErr := -1, error(nil)
	if err := rc.Control(func(f uintptr) { fd, dupErr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, fmt.Errorf("dup: %w", dupErr)
	}
	s := &rawSocket{fd: fd, local: nc.LocalAddr(), remote: nc.RemoteAddr()}
	// Closing nc removes the descriptor from the epoll set; the socket
	// stays open through the duplicate. O_NONBLOCK belongs to the open
	// socket, which only the duplicate refers to now.
	nc.Close()
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("blocking mode: %w", err)
	}
	return s, nil
}

// enter starts a system call on fd; false once the socket is closed.
func (s *rawSocket) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.calls++
	return true
}

// exit ends a system call; the last one after Close closes fd, so that
// no call ever uses a descriptor number the process reused.
func (s *rawSocket) exit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls--
	s.closeIfIdleLocked()
}

func (s *rawSocket) closeIfIdleLocked() {
	if s.closing && s.calls == 0 && !s.closed {
		s.closed = true
		unix.Close(s.fd)
	}
}

// Read reads what the socket holds, blocking until there is something.
// A receive timeout (SetReadDeadline) gives os.ErrDeadlineExceeded.
func (s *rawSocket) Read(p []byte) (int, error) {
	if !s.enter() {
		return 0, net.ErrClosed
	}
	defer s.exit()
	for {
		n, err := unix.Read(s.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, os.ErrDeadlineExceeded
		case err != nil:
			return 0, s.opError("read", err)
		case n == 0 && len(p) > 0:
			if s.isClosing() {
				return 0, net.ErrClosed
			}
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes all of p.
func (s *rawSocket) Write(p []byte) (int, error) {
	n, err := s.WriteBuffers([][]byte{p})
	return int(n), err
}

// maxIovecs is how many buffers one sendmsg(2) takes (IOV_MAX).
const maxIovecs = 1024

// WriteBuffers writes the buffers in order, several per system call (as
// net.Buffers does on a netpoller socket). MSG_NOSIGNAL: a peer gone
// is an EPIPE error, not a signal.
func (s *rawSocket) WriteBuffers(bufs [][]byte) (int64, error) {
	if !s.enter() {
		return 0, net.ErrClosed
	}
	defer s.exit()
	var total int64
	for len(bufs) > 0 {
		if len(bufs[0]) == 0 {
			bufs = bufs[1:]
			continue
		}
		n, err := unix.SendmsgBuffers(s.fd, bufs[:min(len(bufs), maxIovecs)], nil, nil, unix.MSG_NOSIGNAL)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return total, os.ErrDeadlineExceeded
		}
		if err != nil {
			return total, s.opError("write", err)
		}
		total += int64(n)
		for n > 0 {
			if n < len(bufs[0]) {
				bufs[0] = bufs[0][n:]
				break
			}
			n -= len(bufs[0])
			bufs = bufs[1:]
		}
	}
	return total, nil
}

func (s *rawSocket) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

func (s *rawSocket) opError(op string, err error) error {
	if s.isClosing() {
		return net.ErrClosed
	}
	return os.NewSyscallError(op, err)
}

// Close shuts the socket down, which ends a read or write blocked in the
// kernel; the descriptor is closed when the last of them returned.
func (s *rawSocket) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return net.ErrClosed
	}
	s.closing = true
	unix.Shutdown(s.fd, unix.SHUT_RDWR)
	s.closeIfIdleLocked()
	return nil
}

func (s *rawSocket) LocalAddr() net.Addr  { return s.local }
func (s *rawSocket) RemoteAddr() net.Addr { return s.remote }

// SetDeadline sets both timeouts.
func (s *rawSocket) SetDeadline(t time.Time) error {
	return errors.Join(s.SetReadDeadline(t), s.SetWriteDeadline(t))
}

// SetReadDeadline is a receive timeout (SO_RCVTIMEO) measured from now.
func (s *rawSocket) SetReadDeadline(t time.Time) error { return s.setTimeout(unix.SO_RCVTIMEO, t) }

// SetWriteDeadline is a send timeout (SO_SNDTIMEO) measured from now.
func (s *rawSocket) SetWriteDeadline(t time.Time) error { return s.setTimeout(unix.SO_SNDTIMEO, t) }

func (s *rawSocket) setTimeout(opt int, t time.Time) error {
	var tv unix.Timeval // zero: no timeout
	if !t.IsZero() {
		tv = unix.NsecToTimeval(max(time.Until(t), time.Microsecond).Nanoseconds())
	}
	if !s.enter() {
		return net.ErrClosed
	}
	defer s.exit()
	return unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, opt, &tv)
}
