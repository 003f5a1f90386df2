// Package unixsock opens the daemon's listening Unix sockets (the unixctl
// control socket, the bridges' OpenFlow .mgmt sockets, punix: targets)
// so that a socket's file appears only once it accepts connections.
package unixsock

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
)

// Listen creates the Unix socket at path (an old file there is removed:
// the caller holds the pidfile lock, so it is stale). The path appears
// only once the socket listens: a socket's file appears at bind(), before
// listen(), and a client that waits for the file and connects in between
// (ovs-appctl, ovs-ofctl, ovn-controller, Antrea's agent, the bench) is
// refused, so the socket is bound under a temporary name in the same
// directory and renamed. Closing the listener removes path.
func Listen(path string) (net.Listener, error) {
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%d.%d.tmp", os.Getpid(), listenSeq.Add(1)))
	os.Remove(tmp)
	os.Remove(path)
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("unix socket %s: %w", path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("unix socket %s: %w", path, err)
	}
	return &renamedListener{ln, path}, nil
}

// listenSeq tells apart the temporary names of one process's sockets.
var listenSeq atomic.Uint64

// renamedListener removes its socket's file, renamed after bind(), when
// closed.
type renamedListener struct {
	net.Listener
	path string
}

func (l *renamedListener) Close() error {
	err := l.Listener.Close()
	os.Remove(l.path)
	return err
}
