package vswitchd

import (
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/offload"
)

// Offload modes (--offload).
const (
	OffloadNone = "none"
	OffloadEBPF = "ebpf"
)

// SetOffload selects the kernel fast path for the bridges created from
// then on (docs/offload.md): "ebpf" forwards established connections of
// system ports in an XDP program, "none" (or "") keeps every packet in
// userspace. With ebpf, conntrack no longer checks TCP windows: it does
// not see the segments the kernel forwards. Call it before the first
// bridge.
func (d *Daemon) SetOffload(mode string) error {
	switch mode {
	case "", OffloadNone:
		d.offload = false
		return nil
	case OffloadEBPF:
	default:
		return fmt.Errorf("offload %q: want ebpf or none", mode)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.bridges) != 0 {
		return fmt.Errorf("offload: set before the first bridge")
	}
	d.offload = true
	d.stopSweep()
	d.tracker = conntrack.New(conntrack.Config{NoTCPSeqCheck: true})
	d.stopSweep = d.tracker.StartSweeper()
	return nil
}

// enableOffload gives a new bridge its kernel fast path; a kernel without
// BPF leaves the bridge in userspace, with the reason logged.
func (d *Daemon) enableOffload(dp *datapath.Bridge, log *zap.Logger) {
	if !d.offload {
		return
	}
	m, err := offload.NewManager(log)
	if err != nil {
		log.Error("offload=ebpf: the kernel path is off for this bridge", zap.Error(err))
		return
	}
	dp.EnableOffload(m)
}

// closeOffload frees a closed bridge's kernel fast path.
func closeOffload(dp *datapath.Bridge) error {
	if m := dp.Offload(); m != nil {
		return m.Close()
	}
	return nil
}

// conntrackFlushed invalidates the kernel entries of every bridge: their
// decisions assumed connections that are gone.
func (d *Daemon) conntrackFlushed() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range d.bridges {
		if b.dp.Offload() != nil {
			b.dp.Pipeline().BumpGeneration()
		}
	}
}

// dumpOffload adds the kernel fast path's counters to dump-cache.
func dumpOffload(s *strings.Builder, dp *datapath.Bridge) {
	if m := dp.Offload(); m != nil {
		st := m.Stats()
		fmt.Fprintf(s, "  kernel entries: %d\n  kernel hits: %d packets, %d bytes\n", st.Entries, st.Packets, st.Bytes)
	}
}
