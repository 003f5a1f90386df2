package vswitchd

import (
	"sort"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath"
)

// Accessors for the inspection commands (ovs-appctl through
// internal/appctl): read-only views of the daemon's state.

// BridgeNames returns the bridges' names, sorted.
func (d *Daemon) BridgeNames() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	names := make([]string, 0, len(d.bridges))
	for n := range d.bridges {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Conntrack returns the connection tracker every bridge shares (OVS's
// userspace datapath has one too).
func (d *Daemon) Conntrack() *conntrack.Tracker { return d.tracker }

// PortOptions returns the options:* a port was configured with (nil for
// an unknown port).
func (d *Daemon) PortOptions(bridge, port string) map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, ok := d.bridges[bridge]
	if !ok {
		return nil
	}
	rp, ok := b.ports[port]
	if !ok {
		return nil
	}
	return rp.cfg.Options
}

// BridgeDatapaths returns every bridge's datapath, by name.
func (d *Daemon) BridgeDatapaths() map[string]*datapath.Bridge {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := make(map[string]*datapath.Bridge, len(d.bridges))
	for n, b := range d.bridges {
		m[n] = b.dp
	}
	return m
}
