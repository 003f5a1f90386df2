package vswitchd

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

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
	// PMD serves every bridge's system ports from one poll-mode thread
	// per bridge (datapath.PMDConfig), like OVS's PMD threads.
	PMD datapath.PMDConfig

	offload   bool // the kernel fast path (SetOffload)
	ctx       context.Context
	cancel    context.CancelFunc
	tracker   *conntrack.Tracker
	stopSweep func()
	mu        sync.Mutex
	bridges   map[string]*bridge
}

type bridge struct {
	cfg       BridgeConfig
	dp        *datapath.Bridge
	ports     map[string]uint32 // name -> ofport
	kinds     map[string]string
	options   map[string]map[string]string // options:* by port name (dpif/show)
	listeners []*ofproto.Listener
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// New returns a daemon with no bridges.
func New(rundir string, log *zap.Logger) *Daemon {
	if log == nil {
		log = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &Daemon{Rundir: rundir, Log: log, ctx: ctx, cancel: cancel,
		tracker: conntrack.New(conntrack.Config{}), bridges: map[string]*bridge{},
		Openers: map[string]PortOpener{}}
	d.Openers["system"] = d.openSystem
	d.Openers[""] = d.openSystem
	d.Openers["afxdp"] = d.openAFXDP
	d.Openers["internal"] = d.openInternal
	d.Openers["geneve"] = openGeneve
	d.OpenFlow = OpenFlowBridge
	d.stopSweep = d.tracker.StartSweeper()
	return d
}

// openSystem opens an AF_PACKET port.
func (d *Daemon) openSystem(cfg PortConfig) (port.Port, error) {
	o, err := d.portOptions("system", cfg, true)
	if err != nil {
		return nil, err
	}
	return afpacket.Open(cfg.Name, afpacket.Config{VnetHdr: o.vnet, FrameCount: o.rxDesc})
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
	tc := tap.Config{Name: cfg.Name, MTU: cfg.MTURequest, VnetHdr: o.vnet}
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

// AddBridge creates a bridge (ovs-vsctl add-br) with its management socket.
func (d *Daemon) AddBridge(cfg BridgeConfig) error {
	cfg.Ports = nil
	if err := cfg.Validate(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.bridges[cfg.Name]; ok {
		return fmt.Errorf("cannot create a bridge named %s because a bridge named %s already exists", cfg.Name, cfg.Name)
	}
	dpid := defaultDatapathID(cfg.Name)
	if cfg.DatapathID != "" {
		dpid, _ = ParseDatapathID(cfg.DatapathID)
	}
	p := flowtable.NewPipeline()
	p.Conntrack = ctadapter.Wrap(d.tracker)
	log := d.Log.With(zap.String("bridge", cfg.Name))
	dp := datapath.NewBridge(cfg.Name, dpid, p, log)
	dp.PMD = d.PMD
	d.enableOffload(dp, log)
	if cfg.FailMode == "standalone" {
		// Standalone: behave as a learning switch until a controller says otherwise.
		f := &flowtable.Flow{Priority: 0, Actions: []flowtable.Action{&flowtable.Output{Port: flowtable.PortNormal}}}
		if err := p.AddFlow(f); err != nil {
			return err
		}
	}
	b := &bridge{cfg: cfg, dp: dp, ports: map[string]uint32{}, kinds: map[string]string{}, options: map[string]map[string]string{}}
	ctx, cancel := context.WithCancel(d.ctx)
	b.cancel = cancel
	if d.OpenFlow != nil {
		ob := d.OpenFlow(dp, log)
		mk := ob.Handlers()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			ob.Run(ctx) // flow expiry
		}()
		targets := append([]string{"punix:" + d.MgmtSocket(cfg.Name)}, cfg.Listeners...)
		for _, ts := range targets {
			t, err := ofproto.ParseTarget(ts)
			if err == nil {
				var ln *ofproto.Listener
				ln, err = ofproto.Listen(t)
				if err == nil {
					b.listeners = append(b.listeners, ln)
					b.wg.Add(1)
					go func() {
						defer b.wg.Done()
						if err := ln.Serve(ctx, mk, ofproto.ConnOptions{Logger: log}); err != nil {
							log.Warn("listener stopped", zap.Error(err))
						}
					}()
				}
			}
			if err != nil {
				cancel()
				b.closeListeners()
				return fmt.Errorf("bridge %s: %w", cfg.Name, err)
			}
		}
		for _, cs := range cfg.Controllers {
			t, err := ofproto.ParseTarget(cs)
			if err != nil || t.Passive {
				cancel()
				b.closeListeners()
				return fmt.Errorf("bridge %s: controller %q: must be tcp:IP[:PORT] or unix:PATH", cfg.Name, cs)
			}
			ctl := &ofproto.Controller{Target: t}
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				ctl.Run(ctx, mk, ofproto.ConnOptions{Logger: log, ProbeInterval: 5e9})
			}()
		}
	}
	d.bridges[cfg.Name] = b
	log.Info("bridge added", zap.String("datapath_id", fmt.Sprintf("%016x", dpid)), zap.String("mgmt", d.MgmtSocket(cfg.Name)))
	return nil
}

func (b *bridge) closeListeners() {
	for _, ln := range b.listeners {
		ln.Close()
	}
}

// DelBridge removes a bridge, its ports and its sockets (ovs-vsctl del-br).
func (d *Daemon) DelBridge(name string) error {
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

// AddPort adds a port to a bridge (ovs-vsctl add-port).
func (d *Daemon) AddPort(br string, cfg PortConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.bridges[br]
	if !ok {
		return fmt.Errorf("no bridge named %s", br)
	}
	for _, ob := range d.bridges {
		if _, dup := ob.ports[cfg.Name]; dup {
			return fmt.Errorf("cannot create a port named %s because a port named %s already exists on bridge %s", cfg.Name, cfg.Name, ob.cfg.Name)
		}
	}
	open := d.Openers[cfg.Type]
	if open == nil {
		return fmt.Errorf("port %s: type %q is not available in this daemon", cfg.Name, cfg.Type)
	}
	p, err := open(cfg)
	if err != nil {
		return fmt.Errorf("port %s: %w", cfg.Name, err)
	}
	kind := cfg.Type
	if kind == "" {
		kind = "system"
	}
	no, err := b.dp.AddPort(cfg.OFPortRequest, p, kind)
	if err != nil {
		p.Close()
		return fmt.Errorf("port %s: %w", cfg.Name, err)
	}
	b.ports[cfg.Name] = no
	b.kinds[cfg.Name] = kind
	b.options[cfg.Name] = cfg.Options
	d.Log.Info("port added", zap.String("bridge", br), zap.String("port", cfg.Name), zap.Uint32("ofport", no), zap.String("type", kind))
	return nil
}

// DelPort removes a port (ovs-vsctl del-port BRIDGE PORT or del-port PORT).
func (d *Daemon) DelPort(br, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for bn, b := range d.bridges {
		if br != "" && bn != br {
			continue
		}
		if no, ok := b.ports[name]; ok {
			delete(b.ports, name)
			delete(b.kinds, name)
			delete(b.options, name)
			return b.dp.DelPort(no)
		}
	}
	if br != "" {
		return fmt.Errorf("bridge %s does not have a port %s", br, name)
	}
	return fmt.Errorf("no port named %s", name)
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
	d.mu.Lock()
	var names []string
	for n := range d.bridges {
		names = append(names, n)
	}
	d.mu.Unlock()
	var errs []error
	for _, n := range names {
		errs = append(errs, d.DelBridge(n))
	}
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
