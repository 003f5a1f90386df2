package ofproto

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/govs-project/govs/internal/oftest"
)

// rawPair returns a rawSocket and the plain net.Conn at the other end of
// an AF_UNIX stream socketpair.
func rawPair(t *testing.T) (*rawSocket, net.Conn) {
	t.Helper()
	nc, peer, err := oftest.SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := newRawSocket(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close(); peer.Close() })
	return rs, peer
}

// TestRawSocketCloseEndsBlockedRead: Close from another goroutine ends a
// read blocked in the kernel (the connection must never wedge), and later
// calls fail with net.ErrClosed.
func TestRawSocketCloseEndsBlockedRead(t *testing.T) {
	rs, _ := rawPair(t)
	done := make(chan error)
	go func() {
		_, err := rs.Read(make([]byte, 16))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	rs.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("blocked read ended with %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("read still blocked 5 s after Close")
	}
	if _, err := rs.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after Close: %v, want net.ErrClosed", err)
	}
}

// TestRawSocketEOFAndDeadline: the peer's close is io.EOF; a read
// deadline is os.ErrDeadlineExceeded, and a zero deadline clears it.
func TestRawSocketEOFAndDeadline(t *testing.T) {
	rs, peer := rawPair(t)
	rs.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := rs.Read(make([]byte, 16)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	rs.SetReadDeadline(time.Time{})
	go func() {
		time.Sleep(50 * time.Millisecond) // longer than the cleared deadline
		peer.Write([]byte("hello"))
		peer.Close()
	}()
	got, err := io.ReadAll(rs)
	if err != nil || string(got) != "hello" {
		t.Errorf("read %q, %v; want \"hello\" then EOF", got, err)
	}
}

// TestRawSocketWriteBuffers: more buffers than one sendmsg takes, more
// bytes than the socket buffer holds (the writes block until the peer
// reads), all arrive in order.
func TestRawSocketWriteBuffers(t *testing.T) {
	rs, peer := rawPair(t)
	var bufs [][]byte
	var want []byte
	for i := 0; i < 3000; i++ {
		b := bytes.Repeat([]byte{byte(i)}, 1+i%700)
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	n, err := rs.WriteBuffers(bufs)
	if err != nil || n != int64(len(want)) {
		t.Fatalf("WriteBuffers: %d, %v; want %d bytes", n, err, len(want))
	}
	rs.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Errorf("peer read %d bytes, not the %d written in order", len(b), len(want))
	}
}
