package vswitchd

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
)

// The bridge's Ethernet address and datapath id, chosen as ovs-vswitchd
// chooses them (vswitchd/bridge.c: bridge_configure_datapath_id,
// bridge_pick_local_hw_addr, find_local_hw_addr, bridge_pick_datapath_id;
// lib/packets.c: dpid_from_string, eth_addr_is_reserved). OVS picks them
// again on every reconfiguration, so adding or removing a port can change
// both; the LOCAL port's MAC then changes in place.

// macCandidate is one port of a bridge as find_local_hw_addr sees it.
type macCandidate struct {
	local   bool             // the LOCAL port: never a candidate
	portMAC string           // Port.mac, which stands for the port when it parses
	devMAC  net.HardwareAddr // the device's MAC (netdev_get_etheraddr)
}

// pickLocalMAC is bridge_pick_local_hw_addr: other_config:hwaddr when it
// is a usable address, else the lowest MAC of the bridge's ports that is
// unicast, globally administered, not reserved and not zero, else
// defaultMAC (made from the Bridge row's UUID). fromPort says the MAC is a
// port's (OVS's hw_addr_iface != NULL).
func pickLocalMAC(hwaddr string, defaultMAC net.HardwareAddr, ports []macCandidate) (mac net.HardwareAddr, fromPort bool) {
	if m, ok := parseEthAddr(hwaddr); ok && m[0]&1 == 0 && !isZeroMAC(m) {
		return m, false
	}
	for _, p := range ports {
		var m net.HardwareAddr
		if pm, ok := parseEthAddr(p.portMAC); ok {
			// A Port.mac counts even on the LOCAL port, as in OVS.
			m = pm
		} else {
			if p.local || len(p.devMAC) != 6 {
				continue
			}
			m = p.devMAC
		}
		if m[0]&1 != 0 || m[0]&2 != 0 || isReservedMAC(m) || isZeroMAC(m) {
			continue
		}
		if mac == nil || bytes.Compare(m, mac) < 0 {
			mac = m
		}
	}
	if mac != nil {
		return mac, true
	}
	return defaultMAC, false
}

// pickDatapathID is bridge_pick_datapath_id off XenServer:
// other_config:datapath-id when it parses, else the bridge's MAC.
func pickDatapathID(configured string, mac net.HardwareAddr) uint64 {
	if v, ok := dpidFromString(configured); ok {
		return v
	}
	var b [8]byte
	copy(b[2:], mac)
	return binary.BigEndian.Uint64(b[:])
}

// dpidFromString is OVS's dpid_from_string: 16 hex digits, or 0x and up to
// 16; zero is no datapath id.
func dpidFromString(s string) (uint64, bool) {
	digits := s
	switch {
	case len(s) == 16:
	case len(s) > 2 && len(s) <= 18 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'):
		digits = s[2:]
	default:
		return 0, false
	}
	v, err := strconv.ParseUint(digits, 16, 64)
	return v, err == nil && v != 0
}

// defaultBridgeMAC is a bridge's default_ea: the first six bytes of its
// Bridge row's UUID as OVS holds it in memory (struct uuid is four
// host-order 32-bit words; little-endian here), marked random (unicast,
// locally administered). Stable across restarts, as in OVS.
func defaultBridgeMAC(uuid string) net.HardwareAddr {
	raw, err := hex.DecodeString(strings.ReplaceAll(uuid, "-", ""))
	if err != nil || len(raw) != 16 {
		return nil
	}
	var mem [8]byte
	binary.LittleEndian.PutUint32(mem[0:4], binary.BigEndian.Uint32(raw[0:4]))
	binary.LittleEndian.PutUint32(mem[4:8], binary.BigEndian.Uint32(raw[4:8]))
	mac := net.HardwareAddr(mem[:6])
	mac[0] = mac[0]&^1 | 2
	return mac
}

// parseEthAddr reads an address as OVS's eth_addr_from_string does
// (xx:xx:xx:xx:xx:xx).
func parseEthAddr(s string) (net.HardwareAddr, bool) {
	if s == "" {
		return nil, false
	}
	m, err := net.ParseMAC(s)
	return m, err == nil && len(m) == 6
}

func isZeroMAC(m net.HardwareAddr) bool { return bytes.Equal(m, make([]byte, 6)) }

// isReservedMAC is OVS's eth_addr_is_reserved: the 802.1D group addresses
// and a few vendors' protocol addresses a bridge never forwards. Only the
// Extreme ones are unicast; the others fail the multicast test as well.
func isReservedMAC(m net.HardwareAddr) bool {
	v := binary.BigEndian.Uint64(append([]byte{0, 0}, m...))
	switch {
	case v&^0xf == 0x0180c2000000: // STP, pause, LACP, LLDP, 802.1X, ...
		return true
	case v&^0x7 == 0x01000cccccc0: // Cisco CFM
		return true
	}
	switch v {
	case 0x00e02b000000, 0x00e02b000004, 0x00e02b000006, // Extreme EDP, EAPS
		0x01000c000000, 0x01000ccccccc, 0x01000ccccccd, 0x01000ccdcdcd: // Cisco ISL, CDP, PVST+, UplinkFast
		return true
	}
	return false
}

// initialDatapathID is a new bridge's datapath id before it has ports:
// from the OVSDB as OVS would pick it with no ports yet (so that a bridge
// whose ports all have local MACs keeps it), outside it DatapathID or one
// derived from the name.
func initialDatapathID(cfg BridgeConfig) (uint64, error) {
	if cfg.DefaultMAC != nil {
		mac, _ := pickLocalMAC(cfg.HWAddr, cfg.DefaultMAC, nil)
		return pickDatapathID(cfg.DatapathID, mac), nil
	}
	if cfg.DatapathID == "" {
		return defaultDatapathID(cfg.Name), nil
	}
	v, err := ParseDatapathID(cfg.DatapathID)
	if err != nil {
		return 0, fmt.Errorf("bridge %s: %w", cfg.Name, err)
	}
	return v, nil
}

// configureDatapathID is OVS's bridge_configure_datapath_id, run once the
// bridge's ports are in place: pick the MAC, set it on the LOCAL port in
// place, pick the datapath id and, when it changed, set it and reconnect
// the controllers (ofproto_set_datapath_id: a controller cannot be told).
// Outside the OVSDB only a configured datapath id applies.
func (d *Daemon) configureDatapathID(b *bridge, wb *BridgeConfig) {
	var dpid uint64
	if wb.DefaultMAC == nil {
		v, err := initialDatapathID(*wb)
		if err != nil {
			return // refused by the configuration's validation already
		}
		dpid = v
	} else {
		var cands []macCandidate
		var local *runningPort
		d.mu.Lock()
		for _, rp := range b.ports {
			c := macCandidate{local: rp.ofport == flowtable.PortLocal, portMAC: rp.cfg.PortMAC, devMAC: rp.p.HardwareAddr()}
			if c.local {
				local = rp
			}
			cands = append(cands, c)
		}
		d.mu.Unlock()
		mac, _ := pickLocalMAC(wb.HWAddr, wb.DefaultMAC, cands)
		if local != nil && !bytes.Equal(local.p.HardwareAddr(), mac) {
			if err := setHardwareAddr(local.p, mac); err != nil {
				b.log.Error("failed to set bridge Ethernet address", zap.Stringer("mac", mac), zap.Error(err))
			} else if b.of != nil {
				// OVS sees the netdev change at once (update_port): the
				// LOCAL port is announced with its new address now, not
				// at the next link notification of some other port.
				if info, ok := b.dp.Port(flowtable.PortLocal); ok {
					b.of.RefreshPort(portInfo(info, linkFlagsOf(info.Name)))
				}
			}
		}
		dpid = pickDatapathID(wb.DatapathID, mac)
	}
	if dpid == b.dp.DatapathID() {
		return
	}
	b.log.Info("using datapath ID", zap.String("datapath_id", fmt.Sprintf("%016x", dpid)))
	b.dp.SetDatapathID(dpid)
	if b.of != nil && len(b.cfg.Controllers) > 0 {
		if err := b.reconnect(b.cfg); err != nil {
			b.log.Warn("controllers not reconnected", zap.Error(err))
		}
	}
}

// setHardwareAddr changes a port's MAC in place (a TAP: the LOCAL port).
func setHardwareAddr(p port.Port, mac net.HardwareAddr) error {
	s, ok := p.(interface{ SetHardwareAddr(net.HardwareAddr) error })
	if !ok {
		return fmt.Errorf("port %s cannot change its MAC", p.Name())
	}
	return s.SetHardwareAddr(mac)
}

// setInterfaceMAC applies a changed Interface.mac to a running internal
// port in place, as OVS's iface_set_mac does (a multicast address is
// refused; an empty one leaves the device's MAC as it is).
func (d *Daemon) setInterfaceMAC(b *bridge, rp *runningPort, want string) {
	if rp.cfg.Type != datapath.KindInternal || want == "" || want == rp.cfg.MAC {
		return
	}
	mac, ok := parseEthAddr(want)
	switch {
	case !ok:
		b.log.Error("interface mac not an Ethernet address", zap.String("interface", rp.cfg.Name), zap.String("mac", want))
	case mac[0]&1 != 0:
		b.log.Error("cannot set MAC to multicast address", zap.String("interface", rp.cfg.Name), zap.String("mac", want))
	default:
		if err := setHardwareAddr(rp.p, mac); err != nil {
			b.log.Error("setting MAC failed", zap.String("interface", rp.cfg.Name), zap.Error(err))
		}
	}
}
