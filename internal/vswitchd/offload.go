package vswitchd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/offload"
)

// Offload modes (--offload, Open_vSwitch other_config:govs-offload).
const (
	OffloadNone = "none"
	OffloadEBPF = "ebpf"
	// OffloadAuto is ebpf where the kernel can load and attach the
	// program, none otherwise, with the reason logged once.
	OffloadAuto = "auto"
)

// SetOffload selects the kernel fast path for the bridges created from
// then on (docs/offload.md): "ebpf" forwards established connections of
// system ports in an XDP program and fails if the kernel cannot load it,
// "auto" does the same where the kernel can (else it logs why, once, and
// keeps every packet in userspace), "none" (or "") keeps every packet in
// userspace. With the kernel path on, conntrack no longer checks TCP
// windows: it does not see the segments the kernel forwards. Call it
// before the first bridge.
func (d *Daemon) SetOffload(mode string) error {
	switch mode {
	case "":
		mode = OffloadNone
	case OffloadNone, OffloadEBPF, OffloadAuto:
	default:
		return fmt.Errorf("offload %q: want auto, ebpf or none", mode)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.bridges) != 0 {
		return fmt.Errorf("offload: set before the first bridge")
	}
	on := mode != OffloadNone
	if on {
		if err := offload.Probe(); err != nil {
			if mode == OffloadEBPF {
				return fmt.Errorf("offload=ebpf: %w", err)
			}
			d.Log.Warn("offload=auto: the kernel cannot run the fast path; every packet stays in userspace", zap.Error(err))
			on = false
		}
	}
	d.offloadMode = mode
	if on != d.offload {
		d.offload = on
		d.stopSweep()
		d.tracker = d.newTracker(on)
		d.applyTrackerLimitsLocked()
		d.stopSweep = d.tracker.StartSweeper()
	}
	return nil
}

// SetOffloadFlag is --offload: it fixes the mode, so that the OVSDB key
// no longer changes it.
func (d *Daemon) SetOffloadFlag(mode string) error {
	if err := d.SetOffload(mode); err != nil {
		return err
	}
	d.offloadFixed = true
	return nil
}

// offloadFromOtherConfig is the mode the Open_vSwitch other_config asks
// for: govs-offload, else hw-offload=true as auto (OVS's hw-offload also
// offloads what the hardware can take and keeps the rest in software),
// else none.
func offloadFromOtherConfig(oc map[string]string) string {
	if m := oc["govs-offload"]; m != "" {
		return m
	}
	if oc["hw-offload"] == "true" {
		return OffloadAuto
	}
	return OffloadNone
}

// applyOffloadConfig is other_config:govs-offload (and hw-offload). Like
// OVS's hw-offload it is read before the first bridge: a change later
// takes effect at the next start, which the log says.
func (d *Daemon) applyOffloadConfig(oc map[string]string) {
	mode := offloadFromOtherConfig(oc)
	d.mu.Lock()
	seen := d.offloadConfigured
	d.offloadConfigured = mode
	running, started := d.offloadMode, len(d.bridges) != 0
	d.mu.Unlock()
	if d.offloadFixed || mode == seen || mode == running || (running == "" && mode == OffloadNone) {
		return
	}
	if started {
		d.Log.Warn("other_config:govs-offload changed; it takes effect when govs-vswitchd restarts",
			zap.String("running", running), zap.String("configured", mode))
		return
	}
	if err := d.SetOffload(mode); err != nil {
		d.Log.Warn("other_config:govs-offload ignored", zap.Error(err))
	}
}

// newTracker is the daemon's connection tracker; with the kernel path on
// it does not check TCP windows.
func (d *Daemon) newTracker(noSeqCheck bool) *conntrack.Tracker {
	return conntrack.New(conntrack.Config{MaxConns: d.Limits.ConntrackMax, NoTCPSeqCheck: noSeqCheck,
		OnFull: conntrackFullLogger(d.Log, func() *conntrack.Tracker { return d.tracker })})
}

// enableOffload gives a new bridge its kernel fast path; a kernel that
// cannot load the program leaves the bridge in userspace, with the
// reason logged.
func (d *Daemon) enableOffload(dp *datapath.Bridge, log *zap.Logger) {
	if !d.offload {
		return
	}
	dir := ""
	if d.PinRoot != "" {
		dir = offload.PinDir(d.PinRoot, d.Rundir, dp.Name())
	}
	m, err := offload.NewManager(log, dir)
	if err != nil {
		log.Error("offload: the kernel path is off for this bridge", zap.String("offload", d.offloadMode), zap.Error(err))
		return
	}
	if d.offloadMode == OffloadAuto {
		dp.OffloadAttachError = d.logAttachOnce(log)
	}
	dp.EnableOffload(m)
}

// logAttachOnce reports, in auto mode, the first port the program cannot
// attach to at warn level and the others at debug level: a kernel or
// interface kind without (generic) XDP would otherwise log every port.
func (d *Daemon) logAttachOnce(log *zap.Logger) func(string, error) {
	return func(port string, err error) {
		if d.offloadAttachLogged.CompareAndSwap(false, true) {
			log.Warn("offload=auto: a port stays in userspace (further ones are logged at debug level)", zap.String("port", port), zap.Error(err))
			return
		}
		log.Debug("offload=auto: port stays in userspace", zap.String("port", port), zap.Error(err))
	}
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
		fmt.Fprintf(s, "  kernel entries: %d\n  kernel hits: %d packets, %d bytes\n  kernel installs: %d, deletes: %d\n  kernel upcalls: %d, lost: %d\n",
			st.Entries, st.Packets, st.Bytes, st.Installs, st.Deletes, st.Upcalls, st.UpcallsLost)
	}
}

// SetRetainKernelState chooses what stopping the daemon (Close) does with
// the kernel fast path's pinned state (PinRoot): retained, the programs
// stay attached and the entries keep forwarding established connections
// for the next govs-vswitchd to adopt, as ovs-vswitchd's plain exit
// leaves the kernel datapath; not retained (`ovs-appctl exit --cleanup`,
// and the default), everything is detached and unpinned.
func (d *Daemon) SetRetainKernelState(on bool) { d.retainKernel.Store(on) }

// retainOffload marks every bridge's pinned state to outlive the daemon.
func (d *Daemon) retainOffload() {
	if !d.retainKernel.Load() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range d.bridges {
		if m := b.dp.Offload(); m != nil {
			m.Retain()
		}
	}
}

// settlePinnedOffload finishes a restart's adoption of pinned kernel
// state after a reconfiguration: the first one removes what no wanted
// bridge or port owns any more (deleted while govs-vswitchd was down),
// and once flow-restore-wait is off each bridge's adopted entries are
// revalidated against the flows the controller replayed, their
// connections entered into conntrack.
func (d *Daemon) settlePinnedOffload(want State) {
	d.mu.Lock()
	if d.PinRoot == "" {
		d.mu.Unlock()
		return
	}
	// The bridges with a kernel path; with the kernel path off (or not
	// loadable) none, and a previous run's pins all go.
	bridges := map[string]*datapath.Bridge{}
	for n, b := range d.bridges {
		if b.dp.Offload() != nil {
			bridges[n] = b.dp
		}
	}
	first := !d.pinsSwept
	d.pinsSwept = true
	tracker := d.tracker
	d.mu.Unlock()
	if first {
		root := offload.RundirPinDir(d.PinRoot, d.Rundir)
		es, _ := os.ReadDir(root)
		for _, e := range es {
			if _, ok := bridges[e.Name()]; !ok {
				d.Log.Info("offload: removing the pinned state of a bridge deleted or without kernel path", zap.String("bridge", e.Name()))
				if err := offload.RemovePins(filepath.Join(root, e.Name())); err != nil {
					d.Log.Warn("offload: removing pinned state", zap.Error(err))
				}
			}
		}
		os.Remove(root) // if no bridge pins anything any more
		for n, dp := range bridges {
			if m := dp.Offload(); m != nil {
				if gone := m.SweepLinks(); len(gone) > 0 {
					d.Log.Info("offload: detached the programs of ports deleted while down", zap.String("bridge", n), zap.Strings("ports", gone))
				}
			}
		}
	}
	if want.FlowRestoreWait || tracker == nil {
		return
	}
	for _, dp := range bridges {
		dp.RevalidateOffload(tracker.Adopt)
	}
}
