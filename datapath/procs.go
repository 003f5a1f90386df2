package datapath

import (
	"os"
	"runtime"
	"sync"
)

// A port's reader goroutine sleeps in poll(2), and a goroutine in a system
// call keeps its P (the runtime's right to run Go code). With only as many
// Ps as CPUs, the readers of a couple of ports hold them all; the runtime's
// sysmon thread then wakes every 20 µs to take the Ps back and hand them to
// other threads, and each waking reader must win one back. On the 2-CPU
// bench VM with two pod ports under TCP, sysmon was a fifth of the
// switch's CPU time; with a P per reader it was 7% and the stream ran
// about 1.5 times as fast. The extra Ps cost nothing while their readers
// sleep in the kernel.
//
// Parking the readers on the Go netpoller instead was tried and measured
// worse: the runtime registers a socket for writability too, and a packet
// socket signals writability each time a frame it sent is freed, so every
// transmitted frame woke the netpoller (64-byte UDP: 2.2-2.7 µs of switch
// CPU per packet against 1.6).
//
// maxReaderProcs bounds the extra Ps: the GC sizes its workers on
// GOMAXPROCS. A bridge with more ports is better served by the PMD thread,
// which polls every port from one thread.
const maxReaderProcs = 32

var readerProcs struct {
	sync.Mutex
	base    int  // GOMAXPROCS before the first reader started
	readers int  // reader goroutines running
	fixed   bool // GOMAXPROCS set in the environment: left alone
}

// readerStarted and readerStopped keep GOMAXPROCS at the CPUs' count plus
// one per blocking port reader (at most maxReaderProcs more).
func readerStarted() { adjustReaderProcs(+1) }
func readerStopped() { adjustReaderProcs(-1) }

func adjustReaderProcs(delta int) {
	rp := &readerProcs
	rp.Lock()
	defer rp.Unlock()
	if rp.readers == 0 && delta > 0 {
		rp.base = runtime.GOMAXPROCS(0)
		_, rp.fixed = os.LookupEnv("GOMAXPROCS")
	}
	rp.readers += delta
	if rp.fixed {
		return
	}
	runtime.GOMAXPROCS(rp.base + min(rp.readers, maxReaderProcs))
}
