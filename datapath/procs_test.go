package datapath

import (
	"os"
	"runtime"
	"testing"
)

// Each blocking port reader gets a P of its own on top of the CPUs, and
// gives it back when it stops.
func TestReaderProcs(t *testing.T) {
	if _, set := os.LookupEnv("GOMAXPROCS"); set {
		t.Fatal("run without GOMAXPROCS in the environment: it turns the adjustment off")
	}
	base := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(base)
	for i := 1; i <= 3; i++ {
		readerStarted()
		if got := runtime.GOMAXPROCS(0); got != base+i {
			t.Fatalf("after %d readers started GOMAXPROCS = %d, want %d", i, got, base+i)
		}
	}
	for i := 2; i >= 0; i-- {
		readerStopped()
		if got := runtime.GOMAXPROCS(0); got != base+i {
			t.Fatalf("after a reader stopped GOMAXPROCS = %d, want %d", got, base+i)
		}
	}
	for range maxReaderProcs + 5 {
		readerStarted()
	}
	if got := runtime.GOMAXPROCS(0); got != base+maxReaderProcs {
		t.Errorf("with %d readers GOMAXPROCS = %d, want the cap %d", maxReaderProcs+5, got, base+maxReaderProcs)
	}
	for range maxReaderProcs + 5 {
		readerStopped()
	}
	if got := runtime.GOMAXPROCS(0); got != base {
		t.Errorf("with no readers GOMAXPROCS = %d, want %d", got, base)
	}
}
