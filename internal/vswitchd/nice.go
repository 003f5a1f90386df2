package vswitchd

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// DefaultNiceness is the niceness govs-vswitchd gives itself unless told
// otherwise: the one ovs-ctl starts ovs-vswitchd with
// (--ovs-vswitchd-priority, default -10).
const DefaultNiceness = -10

// SetNiceness gives every thread of the process the niceness n. A switch
// at the default niceness shares the CPUs equally with the pods' busy
// senders, and while a port's reader waits for a CPU the senders overflow
// its receive ring: with 4 TCP streams on 2 CPUs a govs at niceness 0
// dropped 5% of the frames, and TCP spent its time retransmitting them.
// Linux keeps a niceness per thread, and a new thread inherits its
// creator's, so after this pass the Go runtime's later threads get n too.
// Threads created while it runs are caught by repeating it until no new
// one shows up.
func SetNiceness(n int) error {
	done := map[int]bool{}
	for pass := 0; pass < 10; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("niceness: %w", err)
		}
		added := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, n); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("niceness %d for thread %d: %w", n, tid, err)
			}
			done[tid] = true
			added = true
		}
		if !added {
			return nil
		}
	}
	return nil
}
