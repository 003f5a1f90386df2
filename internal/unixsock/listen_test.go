package unixsock

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestListenPathMeansListening: a client that connects as soon as the
// socket's file appears is never refused (the file used to appear at
// bind(), before listen()), and closing the listener removes the file
// and leaves nothing else in the directory.
func TestListenPathMeansListening(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.ctl")
	for i := range 200 {
		dialed := make(chan error, 1)
		go func() {
			for {
				if _, err := os.Stat(path); err == nil {
					c, err := net.Dial("unix", path)
					if err == nil {
						c.Close()
					}
					dialed <- err
					return
				}
				runtime.Gosched()
			}
		}()
		ln, err := Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-dialed; err != nil {
			t.Fatalf("round %d: connecting once %s appeared: %v", i, path, err)
		}
		ln.Close()
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Fatalf("round %d: after Close the directory holds %v (%v), want nothing", i, ents, err)
		}
	}
}
