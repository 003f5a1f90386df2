package port

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// socketPair returns a connected datagram socket pair closed at cleanup.
func socketPair(t *testing.T) (rx, tx int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
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
	// The port's descriptor is non-blocking now: an empty read says EAGAIN.
	var buf [4]byte
	if n, err := unix.Read(rx, buf[:]); n != 1 || err != nil {
		t.Fatalf("read = %d, %v", n, err)
	}
	if _, err := unix.Read(rx, buf[:]); err != unix.EAGAIN {
		t.Fatalf("empty read = %v, want EAGAIN", err)
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
