// Package daemonproc is what makes govs-vswitchd a daemon the way OVS's
// daemons are (lib/daemon-unix.c): a pidfile held under a POSIX fcntl
// write lock for the daemon's life, --detach that returns once the
// daemon is up, and --monitor that restarts it after a crash.
package daemonproc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Pidfile is a pidfile this process holds locked.
type Pidfile struct {
	Path string
	f    *os.File
}

// AlreadyRunningError says another live daemon holds the pidfile.
type AlreadyRunningError struct {
	Path string
	Pid  int
}

func (e *AlreadyRunningError) Error() string {
	// OVS's own words (daemon-unix.c make_pidfile).
	return fmt.Sprintf("%s: already running as pid %d, aborting", e.Path, e.Pid)
}

// CreatePidfile takes the pidfile at path: it locks the whole file with a
// classic POSIX write lock (F_SETLK, so F_GETLK reports our pid to
// ovs-appctl; OFD locks would report -1) and writes "PID\n". A pidfile
// locked by another process is an *AlreadyRunningError; an unlocked one is
// a dead daemon's and is taken over.
func CreatePidfile(path string) (*Pidfile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("pidfile directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: open: %w", path, err)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) {
			q := syscall.Flock_t{Type: syscall.F_WRLCK}
			if syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &q) == nil && q.Type != syscall.F_UNLCK {
				return nil, &AlreadyRunningError{Path: path, Pid: int(q.Pid)}
			}
			return nil, &AlreadyRunningError{Path: path, Pid: readPid(path)}
		}
		return nil, fmt.Errorf("%s: fcntl(F_SETLK) failed (%w)", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Pidfile{Path: path, f: f}, nil
}

func readPid(path string) int {
	b, _ := os.ReadFile(path)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// Remove deletes the pidfile and then drops the lock (in that order, so
// nobody sees an unlocked pidfile of a daemon still running).
func (p *Pidfile) Remove() {
	if p == nil || p.f == nil {
		return
	}
	os.Remove(p.Path)
	p.f.Close()
	p.f = nil
}

// RemoveStaleSockets deletes what a daemon killed with SIGKILL left in
// rundir: unixctl sockets PROGRAM.PID.ctl of processes other than this
// one, and the given names (management sockets, the govs control socket)
// when they are sockets. Call it only while holding the pidfile: then no
// other daemon of this rundir is alive.
func RemoveStaleSockets(rundir, program string, names []string) []string {
	var removed []string
	ents, err := os.ReadDir(rundir)
	if err != nil {
		return nil
	}
	self := program + "." + strconv.Itoa(os.Getpid()) + ".ctl"
	for _, e := range ents {
		n := e.Name()
		stale := false
		if mid, ok := strings.CutPrefix(n, program+"."); ok && n != self {
			if pid, ok := strings.CutSuffix(mid, ".ctl"); ok {
				_, err := strconv.Atoi(pid)
				stale = err == nil
			}
		}
		for _, want := range names {
			if matched, _ := filepath.Match(want, n); matched {
				stale = true
			}
		}
		if !stale || e.Type()&os.ModeSocket == 0 {
			continue
		}
		if os.Remove(filepath.Join(rundir, n)) == nil {
			removed = append(removed, n)
		}
	}
	return removed
}
