// Package porttest holds checks every port.Port implementation must pass.
package porttest

import (
	"errors"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/port"
)

// CloseWakesReader checks the Close contract of port.Port: a ReadBatch
// blocked with no timeout returns port.ErrClosed when another goroutine
// closes p, and ReadBatch and WriteBatch (of frame) fail with
// port.ErrClosed afterwards. p must be open, idle and without a read
// timeout; the check closes it.
func CloseWakesReader(t testing.TB, p port.Port, frame []byte) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := p.ReadBatch(port.NewBatch(4))
		done <- err
	}()
	// Give the reader time to block in the kernel, so Close has to wake it.
	time.Sleep(50 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, port.ErrClosed) {
			t.Errorf("blocked ReadBatch returned %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the blocked ReadBatch")
	}
	if _, err := p.ReadBatch(port.NewBatch(4)); !errors.Is(err, port.ErrClosed) {
		t.Errorf("ReadBatch after Close = %v, want ErrClosed", err)
	}
	if _, err := p.WriteBatch([][]byte{frame}); !errors.Is(err, port.ErrClosed) {
		t.Errorf("WriteBatch after Close = %v, want ErrClosed", err)
	}
}
