package ofproto

import (
	"bytes"

	"go.uber.org/zap"

	"github.com/govs-project/govs/ofproto/wire"
)

// OFPT_PORT_STATUS as Open vSwitch sends it (ofproto.c ofport_install,
// update_port, ofproto_port_set_enable, update_port_config and connmgr.c
// connmgr_send_port_status). The bridge keeps each port as it last
// announced it; a change is announced as OVS's main loop sees it: first
// the carrier (port_run's may_enable, which gives or takes LIVE), then
// the device (PORT_DOWN while it is down, LINK_DOWN without a carrier).

// Port status reasons (ofp_port_reason).
const (
	portAdd    uint8 = 0
	portDelete uint8 = 1
	portModify uint8 = 2
)

// Port config and state bits the device decides.
const (
	ofppcPortDown = 1 << 0 // OFPPC_PORT_DOWN
	ofppsLinkDown = 1 << 0 // OFPPS_LINK_DOWN
	ofppsLive     = 1 << 2 // OFPPS_LIVE
)

// announcedPort is a port as the controllers were last told.
type announcedPort struct {
	pp PortInfo
	// mayEnable is OVS's may_enable: the port had a carrier when last
	// looked at. A port is added without it, so it is LIVE only in the
	// MODIFY that follows the ADD.
	mayEnable bool
}

// normalizeState is OVS's normalize_state: a port is LIVE unless it is
// down, has no link or may not be enabled.
func normalizeState(config, state uint32, mayEnable bool) uint32 {
	if config&ofppcPortDown != 0 || state&ofppsLinkDown != 0 || !mayEnable {
		return state &^ ofppsLive
	}
	return state | ofppsLive
}

// seedPorts takes the ports a bridge already has as announced (the
// OpenFlow side came after them).
func (b *Bridge) seedPorts(ports []PortInfo) {
	b.portMu.Lock()
	defer b.portMu.Unlock()
	b.ports = make(map[uint32]*announcedPort, len(ports))
	for _, p := range ports {
		carrier := p.State&ofppsLinkDown == 0
		p.State = normalizeState(p.Config, p.State, carrier)
		b.ports[p.No] = &announcedPort{pp: p, mayEnable: carrier}
	}
}

// PortStatus tells the controllers that a port was added (OFPPR_ADD),
// deleted (OFPPR_DELETE) or changed (OFPPR_MODIFY). p is the port as its
// device shows it now: PORT_DOWN while the device is down, LINK_DOWN
// without a carrier; its LIVE bit is not looked at.
func (b *Bridge) PortStatus(reason uint8, p PortInfo) {
	b.portMu.Lock()
	defer b.portMu.Unlock()
	switch reason {
	case portAdd:
		carrier := p.State&ofppsLinkDown == 0
		p.State = normalizeState(p.Config, p.State, false)
		ap := &announcedPort{pp: p}
		b.ports[p.No] = ap
		b.sendPortStatus(nil, portAdd, nil, &ap.pp)
		b.setEnable(ap, carrier)
	case portDelete:
		if ap := b.ports[p.No]; ap != nil {
			p = ap.pp
		}
		delete(b.ports, p.No)
		b.sendPortStatus(nil, portDelete, nil, &p)
	default:
		ap := b.ports[p.No]
		if ap == nil {
			ap = &announcedPort{pp: p, mayEnable: p.State&ofppsLinkDown == 0}
			ap.pp.State = normalizeState(p.Config, p.State, ap.mayEnable)
			b.ports[p.No] = ap
			b.sendPortStatus(nil, portModify, nil, &ap.pp)
			return
		}
		b.updatePort(ap, p)
	}
}

// RefreshPort announces what changed in a port's device since it was
// last announced (a link notification); a port not announced yet (being
// added) is left to its OFPPR_ADD.
func (b *Bridge) RefreshPort(p PortInfo) {
	b.portMu.Lock()
	defer b.portMu.Unlock()
	if ap := b.ports[p.No]; ap != nil {
		b.updatePort(ap, p)
	}
}

// updatePort is OVS's port_run then update_port for one port: the
// carrier may take LIVE away (one MODIFY), then the device's PORT_DOWN,
// LINK_DOWN and features replace the announced ones (another MODIFY if
// anything differs, as ofport_equal); the other config bits are the port-mods'.
func (b *Bridge) updatePort(ap *announcedPort, p PortInfo) {
	b.setEnable(ap, p.State&ofppsLinkDown == 0)
	np := p
	np.Config = p.Config&ofppcPortDown | ap.pp.Config&^ofppcPortDown
	np.State = normalizeState(np.Config, p.State&ofppsLinkDown|ap.pp.State&^ofppsLinkDown, ap.mayEnable)
	if np.HWAddr != ap.pp.HWAddr || np.Config != ap.pp.Config || np.State != ap.pp.State || np.NoDevice != ap.pp.NoDevice || np.Features != ap.pp.Features {
		old := ap.pp
		ap.pp = np
		b.sendPortStatus(nil, portModify, &old, &ap.pp)
	}
}

// setEnable is ofproto_port_set_enable: a carrier change gives or takes
// LIVE.
func (b *Bridge) setEnable(ap *announcedPort, enable bool) {
	if ap.mayEnable == enable {
		return
	}
	ap.mayEnable = enable
	if st := normalizeState(ap.pp.Config, ap.pp.State, enable); st != ap.pp.State {
		old := ap.pp
		ap.pp.State = st
		b.sendPortStatus(nil, portModify, &old, &ap.pp)
	}
}

// announcedFeatures gives each port the features last announced for it:
// OVS describes a port by its ofport's copy, read again from the device
// only when the device changes (a link notification), so a speed set
// with ethtool shows at the next one.
func (b *Bridge) announcedFeatures(ps []PortInfo) []PortInfo {
	b.portMu.Lock()
	defer b.portMu.Unlock()
	for i := range ps {
		if ap := b.ports[ps[i].No]; ap != nil {
			ps[i].Features = ap.pp.Features
		}
	}
	return ps
}

// portModified is update_port_config for a port-mod from c: the config
// bits under mask that change are announced (LIVE follows) and the mask
// the datapath is to apply is returned. A port without a device cannot go
// down (OVS cannot turn a vport's NETDEV_UP off), so PORT_DOWN is left out.
func (b *Bridge) portModified(c *Conn, no, config, mask uint32) uint32 {
	b.portMu.Lock()
	defer b.portMu.Unlock()
	ap := b.ports[no]
	if ap == nil {
		return mask
	}
	if ap.pp.NoDevice {
		mask &^= ofppcPortDown
	}
	bits := uint32(0x7f) // OFPPC10_ALL
	if c.Version() != wire.OFP10 {
		bits = 0x65 // OFPPC11_ALL
	}
	toggle := (config ^ ap.pp.Config) & mask & bits
	if toggle == 0 {
		return mask
	}
	old := ap.pp
	ap.pp.Config ^= toggle
	ap.pp.State = normalizeState(ap.pp.Config, ap.pp.State, ap.mayEnable)
	b.sendPortStatus(c, portModify, &old, &ap.pp)
	return mask
}

// sendPortStatus is connmgr_send_port_status: every connection that asks
// for the reason gets the port in its version, except the one whose
// port-mod caused it before 1.5 (OpenFlow said a port-mod gives no port
// status to its sender) and those for which a MODIFY encodes the same as
// the port before (a change of LIVE says nothing in 1.0).
func (b *Bridge) sendPortStatus(source *Conn, reason uint8, old, p *PortInfo) {
	for _, c := range b.connections() {
		if !c.receivesAsync(AsyncPortStatus, reason) || c == source && c.Version() < wire.OFP15 {
			continue
		}
		w := b.portForConn(c, *p)
		if old != nil {
			ow := b.portForConn(c, *old)
			a, _ := w.Append(c.Version(), nil)
			o, _ := ow.Append(c.Version(), nil)
			if bytes.Equal(a, o) {
				continue
			}
		}
		if err := c.Send(asyncXid, &wire.PortStatus{Reason: reason, Port: w}); err != nil {
			b.log.Debug("port-status not sent", zap.Error(err))
		}
	}
}
