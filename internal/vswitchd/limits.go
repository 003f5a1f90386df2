package vswitchd

import (
	"fmt"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/flowtable"
)

// Limits bound what controllers and traffic can make the daemon hold, so
// that memory stays bounded under attack. Each refusal is counted and
// logged (at most once a second): flow-mods and group-mods get the
// OpenFlow error OVS sends (OFPFMFC_TABLE_FULL, OFPGMFC_OUT_OF_GROUPS), a
// connection over a conntrack limit is not committed (the packet is
// +trk+inv) while established ones keep working. The TLV (tun_metadata)
// option space is fixed (flowtable.TunMetadataSize, NXTTMFC_TABLE_FULL).
type Limits struct {
	Flows flowtable.Limits
	// ConntrackMax is the global connection limit, like OVS's
	// `dpctl/ct-set-maxconns` (OVS default 3,000,000).
	ConntrackMax int
	// ConntrackZoneDefault limits each zone without a limit of its own,
	// like `dpctl/ct-set-limits default=N` (OVS default 0: none).
	ConntrackZoneDefault uint32
	// ConntrackZones are per-zone limits (`dpctl/ct-set-limits zone=Z,limit=N`).
	ConntrackZones map[uint16]uint32
	// FlowCacheEntries bounds each packet loop's megaflow cache, like
	// OVS's other_config:flow-limit bounds its datapath flows (0:
	// flowcache.DefaultMaxEntries). Loops started from then on use it.
	FlowCacheEntries int
}

// DefaultLimits are OVS's defaults where OVS has one (conntrack), and
// flowtable.DefaultLimits for flows and groups.
func DefaultLimits() Limits {
	return Limits{Flows: flowtable.DefaultLimits, ConntrackMax: conntrack.DefaultMaxConns}
}

// SetLimits puts l in force for the connection tracker and every bridge,
// present and future.
func (d *Daemon) SetLimits(l Limits) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Limits = l
	d.flowCacheBase = l.FlowCacheEntries
	d.applyTrackerLimitsLocked()
	for _, b := range d.bridges {
		b.dp.Pipeline().SetLimits(d.bridgeLimitsLocked(b.cfg))
		b.dp.SetCacheMaxEntries(l.FlowCacheEntries)
	}
}

// applyTrackerLimitsLocked puts d.Limits in force for the connection
// tracker.
func (d *Daemon) applyTrackerLimitsLocked() {
	l := d.Limits
	d.tracker.SetGlobalLimit(l.ConntrackMax)
	d.tracker.SetDefaultZoneLimit(l.ConntrackZoneDefault)
	for z, n := range l.ConntrackZones {
		d.tracker.SetZoneLimit(z, n)
	}
}

// setFlowCacheLimit is other_config:flow-limit: "" or a bad value leaves
// the limit SetLimits gave (the command line's).
func (d *Daemon) setFlowCacheLimit(value string) {
	d.mu.Lock()
	n := d.flowCacheBase
	d.mu.Unlock()
	if value != "" {
		v, err := strconv.ParseUint(value, 10, 31)
		if err != nil || v == 0 {
			d.Log.Warn("other_config:flow-limit is not a positive number; ignored", zap.String("flow-limit", value))
		} else {
			n = int(v)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.Limits.FlowCacheEntries = n
	for _, b := range d.bridges {
		b.dp.SetCacheMaxEntries(n)
	}
}

// bridgeLimitsLocked are the flow limits of a bridge: the daemon's, with
// the bridge's own table limits (Flow_Table flow_limit) in place of the
// per-table one. d.mu is held.
func (d *Daemon) bridgeLimitsLocked(cfg BridgeConfig) flowtable.Limits {
	l := d.Limits.Flows
	if len(cfg.FlowLimits) > 0 {
		l.TableFlows = cfg.FlowLimits
	}
	return l
}

// ParseZoneLimit reads one conntrack zone limit as `ovs-appctl
// dpctl/ct-set-limits` takes it: "default=N" (zone -1) or "zone=Z,limit=N".
func ParseZoneLimit(s string) (zone int, limit uint32, err error) {
	if v, ok := strings.CutPrefix(s, "default="); ok {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return 0, 0, fmt.Errorf("%q: the default limit is not a number up to 4294967295", s)
		}
		return -1, uint32(n), nil
	}
	zs, ls, ok := strings.Cut(s, ",limit=")
	zv, zok := strings.CutPrefix(zs, "zone=")
	if !ok || !zok {
		return 0, 0, fmt.Errorf("%q: want default=N or zone=Z,limit=N", s)
	}
	z, err := strconv.ParseUint(zv, 10, 16)
	if err != nil {
		return 0, 0, fmt.Errorf("%q: the zone is not a number up to 65535", s)
	}
	n, err := strconv.ParseUint(ls, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("%q: the limit is not a number up to 4294967295", s)
	}
	return int(z), uint32(n), nil
}

// SetZoneLimit records a limit ParseZoneLimit read (zone -1: the default).
func (l *Limits) SetZoneLimit(zone int, limit uint32) {
	if zone < 0 {
		l.ConntrackZoneDefault = limit
		return
	}
	if l.ConntrackZones == nil {
		l.ConntrackZones = map[uint16]uint32{}
	}
	l.ConntrackZones[uint16(zone)] = limit
}

// conntrackFullLogger is the tracker's OnFull: one line a second at most
// while a limit refuses connections (a SYN flood refuses millions).
func conntrackFullLogger(log *zap.Logger, tracker func() *conntrack.Tracker) func(zone uint16, zoneLimit bool) {
	return func(zone uint16, zoneLimit bool) {
		t := tracker()
		if t == nil {
			return
		}
		if zoneLimit {
			log.Warn("conntrack zone full: new connections are not committed", zap.Uint16("zone", zone),
				zap.Uint32("limit", t.ZoneLimit(zone)), zap.Uint64("refused_total", t.Stats().Full))
			return
		}
		log.Warn("conntrack table full: new connections are not committed", zap.Int("limit", t.GlobalLimit()),
			zap.Int("connections", t.Count()), zap.Uint64("refused_total", t.Stats().Full))
	}
}
