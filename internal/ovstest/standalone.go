package ovstest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// Launch is Start for programs that are not tests (the bench harness): it
// starts the same private, namespaced Open vSwitch, logs through logf (nil
// discards) and reports failures as errors instead of failing a test.
//
// On success the caller owns the instance and must call stop, which tears
// everything down (daemons, namespace, run directory) and returns the
// teardown's errors. On failure everything already created is torn down
// before Launch returns.
func Launch(opts Options, logf func(format string, args ...any)) (o *OVS, stop func() error, err error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	h := &harnessTB{logf: logf}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		f, ok := r.(harnessFatal)
		if !ok {
			panic(r) // a real bug: do not hide it
		}
		h.failed = true // so teardown copies the daemon logs into logf
		cleanupErr := h.runCleanups()
		o, stop = nil, nil
		err = errors.New(f.msg) // Start's messages already begin with "ovstest: "
		if cleanupErr != nil {
			err = fmt.Errorf("%w (and teardown: %v)", err, cleanupErr)
		}
	}()
	o = Start(h, opts)
	return o, h.runCleanups, nil
}

// harnessFatal carries a Fatalf message from Start back to Launch.
type harnessFatal struct{ msg string }

// harnessTB is the part of testing.TB that Start and the teardown use, for
// a caller that is not a test. Fatalf unwinds with a panic that Launch
// recovers, the way testing's Fatalf unwinds with runtime.Goexit. Methods
// Start never calls are left to the embedded nil interface, so a future use
// of one fails loudly instead of silently doing nothing.
type harnessTB struct {
	testing.TB

	logf func(format string, args ...any)

	mu       sync.Mutex
	failed   bool
	errs     []string
	cleanups []func()
	cleaned  bool
}

func (h *harnessTB) Helper() {}

func (h *harnessTB) Logf(format string, args ...any) { h.logf(format, args...) }

func (h *harnessTB) Errorf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	h.logf("%s", msg)
	h.mu.Lock()
	h.failed = true
	h.errs = append(h.errs, msg)
	h.mu.Unlock()
}

func (h *harnessTB) Fatalf(format string, args ...any) {
	h.mu.Lock()
	h.failed = true
	h.mu.Unlock()
	panic(harnessFatal{msg: fmt.Sprintf(format, args...)})
}

func (h *harnessTB) Failed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed
}

func (h *harnessTB) Cleanup(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cleanups = append(h.cleanups, f)
}

// runCleanups runs the registered cleanups once, newest first, and returns
// the errors they reported through Errorf.
func (h *harnessTB) runCleanups() error {
	h.mu.Lock()
	if h.cleaned {
		h.mu.Unlock()
		return nil
	}
	h.cleaned = true
	fs := h.cleanups
	h.cleanups = nil
	before := len(h.errs)
	h.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.errs) > before {
		return fmt.Errorf("%v", h.errs[before:])
	}
	return nil
}
