package vswitchd

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/afpacket"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/tap"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/ofproto"
)

// controllerProbeInterval is the inactivity probe of controller
// connections (OVS's default inactivity_probe, 5 s).
const controllerProbeInterval = 5 * time.Second

// OpenFlowFunc makes the OpenFlow side of a bridge.
type OpenFlowFunc func(b *datapath.Bridge, log *zap.Logger) *ofproto.Bridge

// PortOpener opens a port of a given type (tunnel ports plug in here).
type PortOpener func(cfg PortConfig) (port.Port, error)

// Daemon owns the bridges, their ports and their OpenFlow listeners.
type Daemon struct {
	Rundir string
	Log    *zap.Logger
	// OpenFlow serves the bridges' OpenFlow connections; nil: no OpenFlow.
	OpenFlow OpenFlowFunc
	// Openers open ports by type; "system" (AF_PACKET), "afxdp",
	// "internal" and "geneve" are built in.
	Openers map[string]PortOpener
	// UserspaceTSO opens system ports with PACKET_VNET_HDR unless a
	// port says options:vnet_hdr=false: TCP super-segments and partial
	// checksums from veths with offloads on are forwarded as they are
	// (segmented in software only for ports that need it).
	UserspaceTSO bool
	// UserspaceTSOFlag is --userspace-tso (or the config file's
	// userspace_tso): TSO stays on whatever other_config says, since
	// the database only adds userspace-tso-enable, it cannot veto the
	// command line.
	UserspaceTSOFlag bool
	// PMD serves every bridge's system ports from one poll-mode thread
	// per bridge (datapath.PMDConfig), like OVS's PMD threads.
	PMD datapath.PMDConfig
	// PortThreads: without the PMD, a goroutine per system port rather
	// than one poll thread per bridge (datapath.Bridge.PortThreads).
	PortThreads bool
	// Limits bound flows, groups and connections (SetLimits changes them).
	Limits Limits
	// flowCacheBase is SetLimits's FlowCacheEntries, which
	// other_config:flow-limit overrides while set.
	flowCacheBase int

	offload bool // the kernel fast path is on (SetOffload)
	// offloadMode is the mode SetOffload last applied and offloadFixed
	// tells that the command line chose it (the OVSDB key then does not).
	offloadMode  string
	offloadFixed bool
	// PinRoot is the bpffs directory where the kernel fast path pins its
	// state (offload.DefaultPinRoot in govs-vswitchd; "": nothing pinned,
	// the state dies with the process). retainKernel: Close leaves it
	// (SetRetainKernelState); pinsSwept: the first reconfiguration
	// removed what deleted bridges and ports left.
	PinRoot      string
	retainKernel atomic.Bool
	pinsSwept    bool
	// offloadConfigured is the mode the database last asked for (a change
	// once bridges run is logged once).
	offloadConfigured string
	// offloadAttachLogged: in auto mode only the first port the program
	// cannot attach to is logged at warn level (offload.go).
	offloadAttachLogged atomic.Bool

	ctx       context.Context
	cancel    context.CancelFunc
	tracker   *conntrack.Tracker
	stopSweep func()

	// reconfMu serializes reconfigurations (Reconcile and the commands
	// that edit want); it is held while ports open, which can be slow.
	reconfMu sync.Mutex
	want     State // the desired state last reconciled
	dbMode   bool  // the OVSDB is the source of the configuration
	holding  bool  // flow-restore-wait is in force

	// configured is closed once the first database configuration is
	// applied and written back (cur_cfg), as ovs-vswitchd completes
	// --detach only then.
	configured     chan struct{}
	configuredOnce sync.Once

	// mu guards bridges and each bridge's ports map, for readers that
	// must not wait for a reconfiguration.
	mu      sync.Mutex
	bridges map[string]*bridge

	// linkEvents tells the OVSDB session that a port's link changed.
	linkEvents chan struct{}
}

// bridge is a running bridge.
type bridge struct {
	cfg        BridgeConfig // without ports
	dp         *datapath.Bridge
	of         *ofproto.Bridge // nil without OpenFlow
	log        *zap.Logger
	ports      map[string]*runningPort
	listeners  []*ofproto.Listener           // the management socket's first
	versions   uint32                        // OpenFlow versions (Bridge.protocols)
	vlans      map[uint32]flowtable.PortVLAN // what NORMAL was last given
	ctx        context.Context
	cancel     context.CancelFunc
	connCancel context.CancelFunc // the controllers and extra listeners
	wg         sync.WaitGroup
	minMTU     int // the smallest MTU of the non-internal ports, last seen (followMinMTU)
}

// New returns a daemon with no bridges.
func New(rundir string, log *zap.Logger) *Daemon {
	if log == nil {
		log = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{Rundir: rundir, Log: log, ctx: ctx, cancel: cancel, bridges: map[string]*bridge{},
		Openers: map[string]PortOpener{}, Limits: DefaultLimits(), configured: make(chan struct{}), linkEvents: make(chan struct{}, 1)}
	d.tracker = d.newTracker(false)
	d.Openers["system"] = d.openSystem
	d.Openers[""] = d.openSystem
	d.Openers["afxdp"] = d.openAFXDP
	d.Openers["internal"] = d.openInternal
	d.Openers["geneve"] = openGeneve
	d.OpenFlow = OpenFlowBridge
	d.stopSweep = d.tracker.StartSweeper()
	return d
}

// Configured is closed once the daemon has applied the database's
// configuration for the first time and written it back (cur_cfg).
func (d *Daemon) Configured() <-chan struct{} { return d.configured }

// openSystem opens an AF_PACKET port.
func (d *Daemon) openSystem(cfg PortConfig) (port.Port, error) {
	o, err := d.portOptions("system", cfg, true)
	if err != nil {
		return nil, err
	}
	c := afpacket.Config{VnetHdr: o.vnet, FrameCount: o.rxDesc}
	if cfg.offload != nil && cfg.offload.TCPath(cfg.Name, o.vnet) {
		// The kernel fast path's tc program forwards from this port;
		// its socket gets what the program sends up (else the port
		// gets XDP, and its socket taps the interface).
		c.Upcall = true
	}
	return afpacket.Open(cfg.Name, c)
}

// portOptions are the options system and internal ports take.
type portOptions struct {
	vnet   bool // vnet_hdr=true|false, which overrides UserspaceTSO for the port
	rxDesc int  // n_rxq_desc=N, the receive ring's size in frames (0: the default)
}

// Bounds of options:n_rxq_desc.
const (
	minRxDesc = 16
	maxRxDesc = 65536
)

// portOptions reads the options of a system (ring, so withRing) or
// internal port, rejecting unknown ones with the option named.
func (d *Daemon) portOptions(kind string, cfg PortConfig, withRing bool) (portOptions, error) {
	o := portOptions{vnet: d.UserspaceTSO}
	supported := "vnet_hdr"
	if withRing {
		supported = "n_rxq_desc, vnet_hdr"
	}
	for k, v := range cfg.Options {
		switch {
		case k == "vnet_hdr":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return o, fmt.Errorf("%s port %s: options:vnet_hdr=%q: want true or false", kind, cfg.Name, v)
			}
			o.vnet = b
		case k == "n_rxq_desc" && withRing:
			n, err := parseRxDesc(v, false)
			if err != nil {
				return o, fmt.Errorf("%s port %s: %w", kind, cfg.Name, err)
			}
			o.rxDesc = n
		default:
			return o, fmt.Errorf("%s port %s: option %q not supported (supported: %s)", kind, cfg.Name, k, supported)
		}
	}
	return o, nil
}

// parseRxDesc reads options:n_rxq_desc (as OVS names a DPDK port's
// receive descriptors): the frames of the receive ring, a power of two
// when pow2 (AF_XDP rings).
func parseRxDesc(v string, pow2 bool) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < minRxDesc || n > maxRxDesc || (pow2 && n&(n-1) != 0) {
		what := "a number"
		if pow2 {
			what = "a power of two"
		}
		return 0, fmt.Errorf("options:n_rxq_desc=%q: want %s from %d to %d", v, what, minRxDesc, maxRxDesc)
	}
	return n, nil
}

// openInternal creates a TAP port.
func (d *Daemon) openInternal(cfg PortConfig) (port.Port, error) {
	o, err := d.portOptions("internal", cfg, false)
	if err != nil {
		return nil, err
	}
	// Configured from the OVSDB, internal ports stay down as OVS leaves
	// them (admin_state down): whoever uses one brings it up.
	tc := tap.Config{Name: cfg.Name, MTU: cfg.MTURequest, VnetHdr: o.vnet, LeaveDown: d.dbMode}
	if cfg.MAC != "" {
		mac, err := net.ParseMAC(cfg.MAC)
		if err != nil {
			return nil, err
		}
		tc.MAC = mac
	}
	return tap.Create(tc)
}

// Apply creates every bridge and port of a configuration.
func (d *Daemon) Apply(c *Config) error {
	for _, b := range c.Bridges {
		if err := d.AddBridge(b); err != nil {
			return err
		}
		for _, p := range b.Ports {
			if err := d.AddPort(b.Name, p); err != nil {
				return err
			}
		}
	}
	// No controller replays flows into a YAML configuration: adopted
	// kernel entries are revalidated against it at once.
	d.settlePinnedOffload(State{})
	return nil
}

// MgmtSocket is the path of a bridge's management socket, where
// `ovs-ofctl BRIDGE` and Antrea's ofnet connect.
func (d *Daemon) MgmtSocket(bridge string) string {
	return filepath.Join(d.Rundir, bridge+".mgmt")
}

func defaultDatapathID(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64() & 0x0000ffffffffffff
}

// errDatabaseMode refuses configuration commands while the OVSDB is the
// source of the configuration.
var errDatabaseMode = errors.New("the configuration comes from the OVSDB: use ovs-vsctl")

// edit runs one configuration command (govs add-br, ...): change edits a
// copy of the desired state, the reconciler applies it, and failed says
// whether the command failed, in which case the desired state is as
// before (a command that fails changes nothing). Commands are refused
// while the OVSDB is the source of the configuration.
func (d *Daemon) edit(change func(want *State) error, failed func(Result) error) error {
	d.reconfMu.Lock()
	defer d.reconfMu.Unlock()
	if d.dbMode {
		return errDatabaseMode
	}
	before := d.want
	want := d.want.clone()
	if err := change(&want); err != nil {
		return err
	}
	res := d.reconcile(want)
	if failed != nil {
		if err := failed(res); err != nil {
			d.want = before
			return err
		}
	}
	return nil
}

// AddBridge creates a bridge (ovs-vsctl add-br) with its management socket.
func (d *Daemon) AddBridge(cfg BridgeConfig) error {
	cfg.Ports = nil
	if err := cfg.Validate(); err != nil {
		return err
	}
	return d.edit(func(want *State) error {
		if want.Bridge(cfg.Name) != nil {
			return fmt.Errorf("cannot create a bridge named %s because a bridge named %s already exists", cfg.Name, cfg.Name)
		}
		want.Bridges = append(want.Bridges, cfg)
		return nil
	}, func(res Result) error { return res.Bridges[cfg.Name] })
}

// DelBridge removes a bridge, its ports and its sockets (ovs-vsctl del-br).
func (d *Daemon) DelBridge(name string) error {
	return d.edit(func(want *State) error {
		i := slices.IndexFunc(want.Bridges, func(b BridgeConfig) bool { return b.Name == name })
		if i < 0 {
			return fmt.Errorf("no bridge named %s", name)
		}
		want.Bridges = slices.Delete(want.Bridges, i, i+1)
		return nil
	}, nil)
}

// AddPort adds a port to a bridge (ovs-vsctl add-port).
func (d *Daemon) AddPort(br string, cfg PortConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	return d.edit(func(want *State) error {
		wb := want.Bridge(br)
		if wb == nil {
			return fmt.Errorf("no bridge named %s", br)
		}
		for _, ob := range want.Bridges {
			if ob.Port(cfg.Name) != nil {
				return fmt.Errorf("cannot create a port named %s because a port named %s already exists on bridge %s", cfg.Name, cfg.Name, ob.Name)
			}
		}
		wb.Ports = append(wb.Ports, cfg)
		return nil
	}, func(res Result) error {
		if st := res.Ports[cfg.Name]; st.Err != nil {
			return fmt.Errorf("port %s: %w", cfg.Name, st.Err)
		}
		return nil
	})
}

// DelPort removes a port (ovs-vsctl del-port BRIDGE PORT or del-port PORT).
func (d *Daemon) DelPort(br, name string) error {
	return d.edit(func(want *State) error {
		for i := range want.Bridges {
			wb := &want.Bridges[i]
			if br != "" && wb.Name != br {
				continue
			}
			if j := slices.IndexFunc(wb.Ports, func(p PortConfig) bool { return p.Name == name }); j >= 0 {
				wb.Ports = slices.Delete(wb.Ports, j, j+1)
				return nil
			}
		}
		switch {
		case br == "":
			return fmt.Errorf("no port named %s", name)
		case want.Bridge(br) == nil:
			return fmt.Errorf("no bridge named %s", br)
		}
		return fmt.Errorf("bridge %s does not have a port %s", br, name)
	}, nil)
}

// startBridge creates a running bridge with its management socket and
// OpenFlow connections.
func (d *Daemon) startBridge(cfg BridgeConfig) (*bridge, error) {
	cfg.Ports = nil
	dpid, err := initialDatapathID(cfg)
	if err != nil {
		return nil, err
	}
	p := flowtable.NewPipeline()
	d.mu.Lock()
	p.Limits = d.bridgeLimitsLocked(cfg)
	d.mu.Unlock()
	p.Conntrack = ctadapter.Wrap(d.tracker)
	log := d.Log.With(zap.String("bridge", cfg.Name))
	applyPrefixes(p, nil, cfg.Prefixes, log)
	dp := datapath.NewBridge(cfg.Name, dpid, p, log)
	dp.PMD = d.PMD
	dp.PortThreads = d.PortThreads
	d.mu.Lock()
	dp.SetCacheMaxEntries(d.Limits.FlowCacheEntries)
	d.mu.Unlock()
	dp.SetFlowRestoreWait(d.holding)
	d.enableOffload(dp, log)
	if cfg.FailMode == "standalone" && len(cfg.Controllers) == 0 {
		// Standalone without controllers: a learning switch (OVS adds
		// the same priority-0 NORMAL flow); with controllers, fail-open
		// (bridge.connect) takes over when they are gone.
		f := &flowtable.Flow{Priority: 0, Actions: []flowtable.Action{&flowtable.Output{Port: flowtable.PortNormal}}}
		if err := p.AddFlow(f); err != nil {
			return nil, err
		}
	}
	versions, err := protocolVersions(cfg.Protocols)
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", cfg.Name, err)
	}
	b := &bridge{cfg: cfg, dp: dp, ports: map[string]*runningPort{}, log: log, versions: versions}
	ctx, cancel := context.WithCancel(d.ctx)
	b.ctx, b.cancel = ctx, cancel
	if d.OpenFlow != nil {
		b.of = d.OpenFlow(dp, log)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.of.Run(ctx) // flow expiry
		}()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if err := watchLinks(ctx, dp, b.of, log, func() { d.linkChanged(b) }); err != nil {
				log.Warn("port link changes are not reported", zap.Error(err))
			}
		}()
		t, err := ofproto.ParseTarget("punix:" + d.MgmtSocket(cfg.Name))
		if err == nil {
			err = b.listen(ctx, t)
		}
		if err == nil {
			err = b.connect(ctx, cfg)
		}
		if err != nil {
			cancel()
			b.closeListeners()
			b.wg.Wait()
			return nil, fmt.Errorf("bridge %s: %w", cfg.Name, err)
		}
	}
	d.mu.Lock()
	d.bridges[cfg.Name] = b
	d.mu.Unlock()
	log.Info("bridge added", zap.String("datapath_id", fmt.Sprintf("%016x", dpid)), zap.String("mgmt", d.MgmtSocket(cfg.Name)))
	return b, nil
}

// listen serves OpenFlow on a passive target until ctx ends.
func (b *bridge) listen(ctx context.Context, t ofproto.Target) error {
	ln, err := ofproto.Listen(t)
	if err != nil {
		return err
	}
	b.listeners = append(b.listeners, ln)
	mk := b.of.Handlers()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := ln.Serve(ctx, mk, ofproto.ConnOptions{Logger: b.log, Versions: b.versions}); err != nil {
			b.log.Warn("listener stopped", zap.Error(err))
		}
	}()
	return nil
}

// connect starts the bridge's controller connections and extra listeners
// (Bridge.controller) under their own context, so that a change of them
// restarts them without touching the bridge.
func (b *bridge) connect(parent context.Context, cfg BridgeConfig) error {
	ctx, cancel := context.WithCancel(parent)
	b.connCancel = cancel
	versions := b.versions
	for _, ls := range cfg.Listeners {
		t, err := ofproto.ParseTarget(ls)
		if err == nil && !t.Passive {
			err = fmt.Errorf("listener %q: must be ptcp:PORT[:IP] or punix:PATH", ls)
		}
		if err == nil {
			err = b.listen(ctx, t)
		}
		if err != nil {
			return err
		}
	}
	mk := b.of.Handlers()
	for _, cs := range cfg.Controllers {
		t, err := ofproto.ParseTarget(cs)
		if err != nil || t.Passive {
			return fmt.Errorf("controller %q: must be tcp:IP[:PORT] or unix:PATH", cs)
		}
		ctl := &ofproto.Controller{Target: t}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			ctl.Run(ctx, mk, ofproto.ConnOptions{Logger: b.log, ProbeInterval: controllerProbeInterval, Versions: versions})
		}()
	}
	if cfg.FailMode == "standalone" && len(cfg.Controllers) > 0 {
		// OVS's fail-open: NORMAL above every flow once no controller
		// has been connected for a while.
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.of.RunFailOpen(ctx, controllerProbeInterval)
		}()
	}
	return nil
}

// updateBridge applies a wanted bridge's settings that can change while it
// runs: its controllers, listeners and OpenFlow versions.
func (d *Daemon) updateBridge(b *bridge, cfg BridgeConfig) error {
	cfg.Ports = nil
	if !maps.Equal(b.cfg.FlowLimits, cfg.FlowLimits) {
		d.mu.Lock()
		b.dp.Pipeline().SetLimits(d.bridgeLimitsLocked(cfg))
		d.mu.Unlock()
	}
	applyPrefixes(b.dp.Pipeline(), b.cfg.Prefixes, cfg.Prefixes, d.Log.With(zap.String("bridge", cfg.Name)))
	if slices.Equal(b.cfg.Controllers, cfg.Controllers) && slices.Equal(b.cfg.Listeners, cfg.Listeners) &&
		slices.Equal(b.cfg.Protocols, cfg.Protocols) {
		b.cfg = cfg
		return nil
	}
	if b.of == nil {
		b.cfg = cfg
		return nil
	}
	return b.reconnect(cfg)
}

// reconnect stops the bridge's controller connections and extra
// listeners and starts those of cfg.
func (b *bridge) reconnect(cfg BridgeConfig) error {
	b.connCancel()
	// The management listener is the first; the others belong to the
	// connections just stopped.
	for _, ln := range b.listeners[1:] {
		ln.Close()
	}
	b.listeners = b.listeners[:1]
	versions, err := protocolVersions(cfg.Protocols)
	if err != nil {
		return fmt.Errorf("bridge %s: %w", cfg.Name, err)
	}
	b.cfg, b.versions = cfg, versions
	if err := b.connect(b.ctx, cfg); err != nil {
		return fmt.Errorf("bridge %s: %w", cfg.Name, err)
	}
	return nil
}

func (b *bridge) closeListeners() {
	for _, ln := range b.listeners {
		ln.Close()
	}
}

// stopBridge removes a running bridge, its ports and its sockets.
func (d *Daemon) stopBridge(name string) error {
	d.mu.Lock()
	b, ok := d.bridges[name]
	if ok {
		delete(d.bridges, name)
	}
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("no bridge named %s", name)
	}
	b.cancel()
	b.closeListeners()
	err := b.dp.Close()
	b.wg.Wait()
	return errors.Join(err, closeOffload(b.dp))
}

// Bridge returns a bridge's datapath (tests, benchmarks).
func (d *Daemon) Bridge(name string) (*datapath.Bridge, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.bridges[name]
	if !ok {
		return nil, false
	}
	return b.dp, true
}

// Show prints the configuration like `ovs-vsctl show`.
func (d *Daemon) Show() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var names []string
	for n := range d.bridges {
		names = append(names, n)
	}
	sort.Strings(names)
	var s strings.Builder
	for _, n := range names {
		b := d.bridges[n]
		fmt.Fprintf(&s, "    Bridge %s\n", n)
		fmt.Fprintf(&s, "        datapath_id: %016x\n", b.dp.DatapathID())
		if b.cfg.FailMode != "" {
			fmt.Fprintf(&s, "        fail_mode: %s\n", b.cfg.FailMode)
		}
		for _, ln := range b.listeners {
			fmt.Fprintf(&s, "        Listener \"%s\"\n", ln.Target)
		}
		for _, c := range b.cfg.Controllers {
			fmt.Fprintf(&s, "        Controller \"%s\"\n", c)
		}
		for _, pi := range b.dp.Ports() {
			fmt.Fprintf(&s, "        Port %s\n            Interface %s\n                ofport: %d\n", pi.Name, pi.Name, pi.OFPort)
			if pi.Kind != "system" {
				fmt.Fprintf(&s, "                type: %s\n", pi.Kind)
			}
			if pi.MAC != nil {
				fmt.Fprintf(&s, "                mac: \"%s\"\n", pi.MAC)
			}
		}
	}
	return s.String()
}

// Close removes every bridge.
func (d *Daemon) Close() error {
	d.reconfMu.Lock()
	d.retainOffload()
	var errs []error
	for _, n := range d.bridgeNames() {
		errs = append(errs, d.stopBridge(n))
	}
	d.want = State{}
	d.reconfMu.Unlock()
	d.cancel()
	d.stopSweep()
	return errors.Join(errs...)
}

// DumpCache prints the megaflow cache counters of the named bridges (all
// when none are named).
func (d *Daemon) DumpCache(names []string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(names) == 0 {
		for n := range d.bridges {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	var s strings.Builder
	for _, n := range names {
		b, ok := d.bridges[n]
		if !ok {
			return "", fmt.Errorf("no bridge named %s", n)
		}
		st, entries := b.dp.CacheStats()
		hitRate := 0.0
		if st.Hits+st.Misses > 0 {
			hitRate = 100 * float64(st.Hits) / float64(st.Hits+st.Misses)
		}
		fmt.Fprintf(&s, "%s:\n  entries: %d\n  hits: %d\n  misses: %d (%.1f%% hit rate)\n  upcalls: %d\n  installed: %d\n  evictions: %d\n  flushes: %d\n  uncachable segments: %d\n",
			n, entries, st.Hits, st.Misses, hitRate, st.Upcalls, st.Installed, st.Evictions, st.Flushes, st.Uncachable)
		dumpOffload(&s, b.dp)
	}
	return s.String(), nil
}

// DumpConntrack prints the connections like `ovs-appctl
// dpctl/dump-conntrack [-m] [-s] [dp] [zone=N]` (govs dump-conntrack and
// the ovs-appctl command are this one function).
func (d *Daemon) DumpConntrack(args []string) (string, error) {
	var f conntrack.DumpFilter
	verbose, stats := false, false
	for _, a := range args {
		switch {
		case a == "-m" || a == "--more":
			verbose = true
		case a == "-s" || a == "--statistics":
			stats = true
		case IsDatapathName(a):
		case strings.HasPrefix(a, "zone="):
			n, err := strconv.ParseUint(a[len("zone="):], 10, 16)
			if err != nil {
				return "", fmt.Errorf("failed to parse zone")
			}
			zone := uint16(n)
			f.Zone = &zone
		default:
			return "", fmt.Errorf("%q: usage: dump-conntrack [-m] [-s] [dp] [zone=N]", a)
		}
	}
	var s strings.Builder
	for _, e := range d.tracker.Dump(f) {
		s.WriteString(e.Format(verbose, stats))
		s.WriteByte('\n')
	}
	return s.String(), nil
}

// IsDatapathName says whether a dpctl argument names the datapath: govs
// has one, which answers to OVS's userspace datapath names.
func IsDatapathName(s string) bool {
	return s == "netdev@ovs-netdev" || s == "ovs-netdev"
}

// FlushConntrack removes every connection, or those of one zone
// (`dpctl/flush-conntrack [dp] [zone=N]`).
func (d *Daemon) FlushConntrack(args []string) (string, error) {
	if len(args) > 0 && IsDatapathName(args[0]) {
		args = args[1:]
	}
	switch len(args) {
	case 0:
		d.tracker.Flush()
		d.conntrackFlushed()
		return "", nil
	case 1:
		z, ok := strings.CutPrefix(args[0], "zone=")
		n, err := strconv.ParseUint(z, 10, 16)
		if !ok || err != nil {
			return "", fmt.Errorf("%q: usage: flush-conntrack [dp] [zone=N]", args[0])
		}
		d.tracker.FlushZone(uint16(n))
		d.conntrackFlushed()
		return "", nil
	}
	return "", fmt.Errorf("usage: flush-conntrack [dp] [zone=N]")
}
