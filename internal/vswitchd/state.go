package vswitchd

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/port/ifioctl"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto"
)

// State is the switch's desired configuration: the bridges with their
// ports and the switch-wide options (Open_vSwitch other_config). Both
// configuration sources produce one: the YAML file and the govs commands
// (Apply, AddBridge, AddPort, ...), or the OVSDB (ServeDatabase). One
// reconciler, Reconcile, makes the running bridges match it.
type State struct {
	Bridges []BridgeConfig
	// FlowRestoreWait is other_config:flow-restore-wait=true: while set
	// the bridges neither forward nor flush (SetFlowRestoreWait).
	FlowRestoreWait bool
}

// Bridge returns the wanted bridge called name, or nil.
func (s *State) Bridge(name string) *BridgeConfig {
	for i := range s.Bridges {
		if s.Bridges[i].Name == name {
			return &s.Bridges[i]
		}
	}
	return nil
}

// clone copies s deeply enough that editing the copy's bridge and port
// lists leaves s alone.
func (s State) clone() State {
	c := s
	c.Bridges = slices.Clone(s.Bridges)
	for i := range c.Bridges {
		c.Bridges[i].Ports = slices.Clone(c.Bridges[i].Ports)
	}
	return c
}

// Port returns the wanted port called name, or nil.
func (b *BridgeConfig) Port(name string) *PortConfig {
	for i := range b.Ports {
		if b.Ports[i].Name == name {
			return &b.Ports[i]
		}
	}
	return nil
}

// PortStatus is what became of one wanted port: the values ovs-vswitchd
// writes back to the port's Interface row (ofport, error).
type PortStatus struct {
	Bridge string
	// OFPort is the OpenFlow port number, -1 when the port could not be
	// opened (as OVS writes Interface.ofport=-1).
	OFPort int
	// Err is why the port is not open (nil when it is); ErrorText words
	// it for Interface.error.
	Err error
}

// ErrorText is the port's Interface.error as OVS words it ("could not
// open network device NAME (...)"), "" when the port is open.
func (s PortStatus) ErrorText(name string) string {
	if s.Err == nil {
		return ""
	}
	var we wordedError
	if errors.As(s.Err, &we) {
		return s.Err.Error()
	}
	return openError(name, s.Err).Error()
}

// Result is what one reconciliation did.
type Result struct {
	// Ports has every wanted port's status, by port name.
	Ports map[string]PortStatus
	// Bridges has the wanted bridges that could not be created or
	// updated, with why.
	Bridges map[string]error
}

// Reconcile makes the running bridges and ports match want, in the order
// of OVS's bridge_reconfigure: first everything that is no longer wanted
// (or wanted differently) goes, then what is missing is created. A port
// that cannot be opened does not stop the others: its status carries the
// error, and the next Reconcile tries it again.
func (d *Daemon) Reconcile(want State) Result {
	d.reconfMu.Lock()
	defer d.reconfMu.Unlock()
	return d.reconcile(want)
}

func (d *Daemon) reconcile(want State) Result {
	d.want = want.clone()
	status := map[string]PortStatus{}
	res := Result{Ports: status, Bridges: map[string]error{}}

	// Bridges that go (a new datapath id is applied in place, below).
	for _, name := range d.bridgeNames() {
		if want.Bridge(name) == nil {
			if err := d.stopBridge(name); err != nil {
				d.Log.Warn("bridge stopped with an error", zap.String("bridge", name), zap.Error(err))
			}
		}
	}
	// Ports that go or change: deleted everywhere before any is added, so
	// that a port can move between bridges and a number be reused.
	for _, name := range d.bridgeNames() {
		b := d.runningBridge(name)
		wb := want.Bridge(name)
		for _, pn := range slices.Sorted(maps.Keys(b.ports)) {
			rp := b.ports[pn]
			if wp := wb.Port(pn); wp == nil || !samePort(rp.cfg, *wp) {
				if err := d.stopPort(b, pn); err != nil {
					d.Log.Warn("port stopped with an error", zap.String("port", pn), zap.Error(err))
				}
			} else {
				d.setInterfaceMAC(b, rp, wp.MAC)
				d.mu.Lock()
				rp.cfg.Tag, rp.cfg.Trunks, rp.cfg.VLANMode, rp.cfg.PortMAC = wp.Tag, wp.Trunks, wp.VLANMode, wp.PortMAC
				rp.cfg.MAC = wp.MAC
				d.mu.Unlock()
			}
		}
	}
	// Before any port opens, so that nothing is forwarded meanwhile.
	d.setFlowRestoreWait(want.FlowRestoreWait)
	seen := map[string]string{} // port name -> bridge
	for i := range want.Bridges {
		wb := &want.Bridges[i]
		b := d.runningBridge(wb.Name)
		var err error
		if b == nil {
			b, err = d.startBridge(*wb)
		} else {
			err = d.updateBridge(b, *wb)
		}
		if err != nil {
			d.Log.Warn("bridge not configured", zap.String("bridge", wb.Name), zap.Error(err))
			res.Bridges[wb.Name] = err
			for _, p := range wb.Ports {
				status[p.Name] = PortStatus{Bridge: wb.Name, OFPort: -1, Err: err}
			}
			continue
		}
		// Ports that ask for a number first, then those that had one, so
		// that ports numbered automatically do not take theirs.
		ports := slices.Clone(wb.Ports)
		rank := func(p *PortConfig) int {
			switch {
			case p.Name == wb.Name || p.OFPortRequest != 0:
				return 2
			case p.PrevOFPort != 0:
				return 1
			}
			return 0
		}
		sort.SliceStable(ports, func(i, j int) bool { return rank(&ports[i]) > rank(&ports[j]) })
		// A port whose number is taken gets the lowest free one, as in
		// OVS, once the others have theirs.
		var busy []PortConfig
		start := func(p PortConfig, no uint32) {
			got, err := d.startPort(b, p, no)
			if err != nil {
				fields := []zap.Field{zap.String("bridge", wb.Name), zap.String("port", p.Name), zap.Error(err)}
				if re := (refusedError{}); errors.As(err, &re) {
					fields = append(fields, zap.NamedError("cause", re.Cause))
				}
				d.Log.Warn("port not opened", fields...)
				status[p.Name] = PortStatus{Bridge: wb.Name, OFPort: -1, Err: err}
				return
			}
			status[p.Name] = PortStatus{Bridge: wb.Name, OFPort: int(got)}
		}
		// One cache invalidation for all the ports this pass adds.
		b.dp.PortBatch(func() {
			for _, p := range ports {
				if other, dup := seen[p.Name]; dup {
					err := fmt.Errorf("port %s is already on bridge %s", p.Name, other)
					status[p.Name] = PortStatus{Bridge: wb.Name, OFPort: -1, Err: err}
					continue
				}
				seen[p.Name] = wb.Name
				if rp, ok := b.ports[p.Name]; ok {
					status[p.Name] = PortStatus{Bridge: wb.Name, OFPort: int(rp.ofport)}
					continue
				}
				no := p.wantedOFPort(wb.Name)
				if _, used := b.dp.Port(no); used && no != 0 && no != flowtable.PortLocal {
					busy = append(busy, p)
					continue
				}
				start(p, no)
			}
			for _, p := range busy {
				d.Log.Warn("requested OpenFlow port number in use, picking another",
					zap.String("port", p.Name), zap.Uint32("ofport", p.wantedOFPort(wb.Name)))
				start(p, 0)
			}
		})
		d.applyVLANs(b)
		d.followMinMTU(b)
		d.configureDatapathID(b, wb)
	}
	d.settlePinnedOffload(want)
	return res
}

// samePort tells whether a running port opened with have still is the
// port want describes; VLAN settings are applied in place.
func samePort(have, want PortConfig) bool {
	norm := func(p PortConfig) PortConfig {
		if p.Type == "system" {
			p.Type = ""
		}
		if len(p.Options) == 0 {
			p.Options = nil
		}
		p.Tag, p.Trunks, p.VLANMode, p.PrevOFPort, p.PortMAC = 0, nil, "", 0, ""
		if p.Type == datapath.KindInternal {
			p.MAC = "" // set in place (setInterfaceMAC)
		}
		return p
	}
	h, w := norm(have), norm(want)
	return h.Name == w.Name && h.Type == w.Type && h.OFPortRequest == w.OFPortRequest &&
		h.MAC == w.MAC && h.MTURequest == w.MTURequest && maps.Equal(h.Options, w.Options) &&
		h.NoOffload == w.NoOffload
}

// wantedOFPort is the number a port should get: LOCAL for the port named
// after its bridge, else ofport_request, else the number it had before
// (Interface.ofport, so a restarted daemon keeps every port's number, as
// OVS does), else 0 (the lowest free one).
func (p *PortConfig) wantedOFPort(bridge string) uint32 {
	switch {
	case p.Name == bridge:
		return flowtable.PortLocal
	case p.OFPortRequest != 0:
		return p.OFPortRequest
	}
	return p.PrevOFPort
}

// runningPort is a port the reconciler opened, with the configuration it
// was opened with.
type runningPort struct {
	cfg    PortConfig
	ofport uint32
	kind   string
	p      port.Port
}

func (d *Daemon) bridgeNames() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.bridges))
}

func (d *Daemon) runningBridge(name string) *bridge {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bridges[name]
}

// startPort opens a wanted port and attaches it to b as number no (0:
// the lowest free one).
func (d *Daemon) startPort(b *bridge, cfg PortConfig, no uint32) (uint32, error) {
	kind := cfg.Type
	if kind == "" {
		kind = datapath.KindSystem
	}
	if no == flowtable.PortLocal {
		// The LOCAL port is always the bridge's internal port.
		kind, cfg.Type = datapath.KindInternal, datapath.KindInternal
	}
	open := d.Openers[cfg.Type]
	if open == nil {
		return 0, openError(cfg.Name, errAFNoSupport)
	}
	if kind == datapath.KindSystem || kind == datapath.KindAFXDP {
		if err := requireDevice(cfg.Name, cfg.MTURequest); err != nil {
			return 0, err
		}
	}
	if m := b.dp.Offload(); m != nil && kind == datapath.KindSystem && !cfg.NoOffload {
		cfg.offload = m
	}
	p, err := open(cfg)
	if err != nil {
		return 0, err
	}
	opts := datapath.PortOptions{NoOffload: cfg.NoOffload}
	if kind == datapath.KindSystem {
		// The watchdog may replace a stalled port's socket.
		opts.Reopen = func() (port.Port, error) { return open(cfg) }
	}
	got, err := b.dp.AddPortWith(no, p, kind, opts)
	if err != nil {
		p.Close()
		return 0, fmt.Errorf("port %s: %w", cfg.Name, err)
	}
	d.mu.Lock()
	b.ports[cfg.Name] = &runningPort{cfg: cfg, ofport: got, kind: kind, p: p}
	d.mu.Unlock()
	d.Log.Info("port added", zap.String("bridge", b.cfg.Name), zap.String("port", cfg.Name), zap.Uint32("ofport", got), zap.String("type", kind))
	return got, nil
}

// stopPort detaches and closes a running port.
func (d *Daemon) stopPort(b *bridge, name string) error {
	d.mu.Lock()
	rp, ok := b.ports[name]
	delete(b.ports, name)
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("bridge %s does not have a port %s", b.cfg.Name, name)
	}
	return b.dp.DelPort(rp.ofport)
}

// errAFNoSupport is the errno OVS reports for an Interface type it has no
// netdev class for ("could not open network device X (Address family not
// supported by protocol)").
var errAFNoSupport = errors.New("Address family not supported by protocol")

// errNoDevice is ENODEV as OVS prints it for a missing system interface.
var errNoDevice = errors.New("No such device")

// wordedError is an error already worded as OVS writes Interface.error.
type wordedError struct{ error }

func (e wordedError) Unwrap() error { return e.error }

// refusedError is an error worded as OVS writes Interface.error, with
// govs's own account of it (Cause) for the log.
type refusedError struct {
	worded wordedError
	Cause  error
}

func (e refusedError) Error() string { return e.worded.Error() }
func (e refusedError) Unwrap() error { return e.worded }

// openError words a port that could not be opened as OVS writes it into
// Interface.error.
func openError(name string, err error) error {
	return wordedError{fmt.Errorf("could not open network device %s (%w)", name, err)}
}

// requireDevice checks that a system interface exists, so that a missing
// one gets OVS's error text, and sets its MTU to mtu_request (0: leave
// it), as OVS does for every interface type.
func requireDevice(name string, mtu int) error {
	fd, err := ifioctl.ControlSocket()
	if err != nil {
		return openError(name, err)
	}
	defer unix.Close(fd)
	if _, err := ifioctl.Index(fd, name); err != nil {
		return openError(name, errNoDevice)
	}
	if mtu != 0 {
		if err := ifioctl.SetMTU(fd, name, mtu); err != nil {
			return wordedError{fmt.Errorf("could not set MTU %d on network device %s (%w)", mtu, name, err)}
		}
	}
	return nil
}

// protocolVersions turns Bridge.protocols (OpenFlow10, OpenFlow13, ...)
// into the version bitmap the bridge's connections allow; none listed
// means every version govs speaks, as in OVS. Versions govs does not
// speak are left out; a list of only those is an error.
func protocolVersions(protocols []string) (uint32, error) {
	if len(protocols) == 0 {
		return 0, nil
	}
	var bm uint32
	for _, p := range protocols {
		v, ok := openFlowVersions[p]
		if !ok {
			return 0, fmt.Errorf("protocols: %q is not an OpenFlow version name (OpenFlow10 ... OpenFlow15)", p)
		}
		bm |= 1 << v & ofproto.SupportedVersions
	}
	if bm == 0 {
		return 0, fmt.Errorf("protocols %v: govs speaks OpenFlow10, OpenFlow13 and OpenFlow15", protocols)
	}
	return bm, nil
}

// openFlowVersions are the Bridge.protocols names and their wire versions.
var openFlowVersions = map[string]uint8{
	"OpenFlow10": 1, "OpenFlow11": 2, "OpenFlow12": 3, "OpenFlow13": 4, "OpenFlow14": 5, "OpenFlow15": 6,
}

// setFlowRestoreWait applies other_config:flow-restore-wait to every
// bridge (new bridges start with it too).
func (d *Daemon) setFlowRestoreWait(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if on != d.holding {
		d.Log.Info("flow-restore-wait", zap.Bool("on", on))
	}
	d.holding = on
	for _, b := range d.bridges {
		b.dp.SetFlowRestoreWait(on)
	}
}

// applyVLANs gives NORMAL the VLAN roles of the bridge's ports (Port tag,
// trunks, vlan_mode): with a tag and no mode an access port, else a
// trunk, as in OVS.
func (d *Daemon) applyVLANs(b *bridge) {
	d.mu.Lock()
	m := map[uint32]flowtable.PortVLAN{}
	for _, rp := range b.ports {
		c := rp.cfg
		switch {
		case c.VLANMode == "access" || (c.VLANMode == "" && c.Tag != 0):
			m[rp.ofport] = flowtable.PortVLAN{Access: true, Tag: c.Tag}
		case len(c.Trunks) > 0:
			m[rp.ofport] = flowtable.PortVLAN{Trunks: slices.Clone(c.Trunks)}
		}
	}
	d.mu.Unlock()
	if !maps.EqualFunc(m, b.vlans, func(a, c flowtable.PortVLAN) bool {
		return a.Access == c.Access && a.Tag == c.Tag && slices.Equal(a.Trunks, c.Trunks)
	}) {
		b.dp.Pipeline().SetPortVLANs(m)
		b.vlans = m
	}
}
