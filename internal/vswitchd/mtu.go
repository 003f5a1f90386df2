package vswitchd

import (
	"net"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/port/ifioctl"
)

// ethPayloadMax is the MTU internal ports get on a bridge without other
// ports (OVS's ETH_PAYLOAD_MAX).
const ethPayloadMax = 1500

// followMinMTU gives the bridge's internal ports without mtu_request the
// smallest MTU of its other ports, as OVS's ofproto does (update_mtu,
// update_mtu_ofproto): when that minimum changes (a port added, removed
// or its MTU changed) every such internal port gets it; otherwise one
// whose MTU was raised above it is brought back down, and one lowered
// below it is left. Tunnel ports have no MTU and do not count.
func (d *Daemon) followMinMTU(b *bridge) {
	links := kernelLinks()
	d.mu.Lock()
	var follow []string
	minMTU := 0
	for name, rp := range b.ports {
		if rp.kind == datapath.KindInternal {
			if rp.cfg.MTURequest == 0 {
				follow = append(follow, name)
			}
			continue
		}
		ifi, ok := links[name]
		if !ok || rp.kind == "geneve" || rp.kind == datapath.KindTunnel || ifi.MTU <= 0 {
			continue
		}
		if minMTU == 0 || ifi.MTU < minMTU {
			minMTU = ifi.MTU
		}
	}
	if minMTU == 0 {
		minMTU = ethPayloadMax
	}
	changed := minMTU != b.minMTU
	b.minMTU = minMTU
	d.mu.Unlock()
	setInternalMTUs(follow, links, minMTU, changed, d.Log)
}

// setInternalMTUs sets the MTU of the named internal ports to mtu: all
// of them when the bridge's minimum changed, else those above it.
func setInternalMTUs(names []string, links map[string]net.Interface, mtu int, changed bool, log *zap.Logger) {
	var fd = -1
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}()
	for _, name := range names {
		ifi, ok := links[name]
		if !ok || ifi.MTU == mtu || (!changed && ifi.MTU < mtu) {
			continue
		}
		if fd < 0 {
			var err error
			if fd, err = ifioctl.ControlSocket(); err != nil {
				log.Warn("internal ports' MTU not set", zap.Error(err))
				return
			}
		}
		if err := ifioctl.SetMTU(fd, name, mtu); err != nil {
			log.Warn("internal port's MTU not set", zap.String("port", name), zap.Int("mtu", mtu), zap.Error(err))
		}
	}
}

// linkChanged follows a link notification on b's ports: the internal
// ports' MTU, and the Interface state columns written back at once
// (OVS's bridge writes them when a netdev's change_seq moves, not on the
// statistics interval).
func (d *Daemon) linkChanged(b *bridge) {
	d.followMinMTU(b)
	select {
	case d.linkEvents <- struct{}{}:
	default: // one write-back pending covers this one
	}
}
