package port

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// socketPair returns two non-blocking UDP sockets on loopback connected to
// each other, closed at cleanup. UDP, like AF_PACKET, wakes a socket's
// writability watchers as the datagrams it sent are freed.
func socketPair(t *testing.T) (rx, tx int) {
	t.Helper()
	var fds [2]int
	var addrs [2]*unix.SockaddrInet4
	for i := range fds {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			t.Fatal(err)
		}
		fds[i], addrs[i] = fd, sa.(*unix.SockaddrInet4)
	}
	for i := range fds {
		if err := unix.Connect(fds[i], addrs[1-i]); err != nil {
			t.Fatal(err)
		}
	}
	return fds[0], fds[1]
}

func TestRxWaiter(t *testing.T) {
	rx, tx := socketPair(t)
	w, err := NewRxWaiter("test", rx, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	// Nothing arrives: a timeout, after about the timeout.
	start := time.Now()
	if ok, err := w.Wait(nil); ok || err != nil {
		t.Fatalf("idle Wait = %v, %v; want false, nil", ok, err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("idle Wait returned after %v, want about 30ms", d)
	}

	// ready() true: no sleep at all.
	calls := 0
	if ok, err := w.Wait(func() bool { calls++; return true }); !ok || err != nil || calls != 1 {
		t.Fatalf("Wait(ready) = %v, %v after %d calls; want true, nil after 1", ok, err, calls)
	}

	// A datagram sent while parked wakes it.
	go func() {
		time.Sleep(5 * time.Millisecond)
		unix.Write(tx, []byte{1})
	}()
	if ok, err := w.Wait(func() bool { return false }); !ok || err != nil {
		t.Fatalf("Wait with a datagram arriving = %v, %v; want true, nil", ok, err)
	}
	var buf [4]byte
	if n, err := unix.Read(rx, buf[:]); n != 1 || err != nil {
		t.Fatalf("read = %d, %v", n, err)
	}

	// Frames the port sends (its socket becoming writable again as they
	// are freed) do not wake a parked reader: only readability does.
	go func() {
		time.Sleep(5 * time.Millisecond)
		for range 100 {
			unix.Write(rx, []byte{3})
		}
	}()
	if ok, err := w.Wait(func() bool { return false }); ok || err != nil {
		t.Fatalf("Wait while the port sends = %v, %v; want a timeout (false, nil)", ok, err)
	}

	// Parking does not allocate (it happens whenever a port goes idle).
	short, err := NewRxWaiter("test", rx, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	never := func() bool { return false }
	if a := testing.AllocsPerRun(50, func() { short.Wait(never) }); a != 0 {
		t.Errorf("Wait allocates %v times", a)
	}
}

func TestRxWaiterCloseWakes(t *testing.T) {
	rx, _ := socketPair(t)
	w, err := NewRxWaiter("test", rx, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := w.Wait(nil)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Wait after Close = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake Wait")
	}
	if _, err := w.Wait(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait on a closed waiter = %v, want ErrClosed", err)
	}
	// The port's own descriptor stays open.
	if _, err := unix.FcntlInt(uintptr(rx), unix.F_GETFD, 0); err != nil {
		t.Fatalf("port descriptor closed with the waiter: %v", err)
	}
}
