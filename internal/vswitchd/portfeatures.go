package vswitchd

import (
	"sync"

	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath/port/ifioctl"
	"github.com/govs-project/govs/ofproto"
)

// Port features as Open vSwitch 3.1 reports them (netdev-linux.c
// netdev_linux_read_features, netdev.c netdev_features_to_bps, ofproto.c
// ofport_open): the driver's ETHTOOL_GSET settings as NETDEV_F_* bits,
// which are OpenFlow 1.1's OFPPF_* bits. A device whose driver has no link
// settings (dummy) and a tunnel have none; the peer is never known.

// NETDEV_F_* (= OFPPF11_*) bits.
const (
	featTenMBHD    = 1 << 0
	featTenMBFD    = 1 << 1
	featHundredHD  = 1 << 2
	featHundredFD  = 1 << 3
	featOneGBHD    = 1 << 4
	featOneGBFD    = 1 << 5
	featTenGBFD    = 1 << 6
	featFortyGBFD  = 1 << 7
	featHundredGB  = 1 << 8
	featOneTBFD    = 1 << 9
	featCopper     = 1 << 11
	featFiber      = 1 << 12
	featAutoneg    = 1 << 13
	featPause      = 1 << 14
	featPauseAsym  = 1 << 15
	featFullDuplex = featTenMBFD | featHundredFD | featOneGBFD | featTenGBFD | featFortyGBFD | featHundredGB | featOneTBFD
)

// ethtoolModes maps SUPPORTED_* / ADVERTISED_* link modes (the same bits)
// to NETDEV_F_* bits, as netdev_linux_read_features does for both masks.
var ethtoolModes = []struct{ modes, feat uint32 }{
	{unix.ETHTOOL_LINK_MODE_10baseT_Half_BIT, featTenMBHD},
	{unix.ETHTOOL_LINK_MODE_10baseT_Full_BIT, featTenMBFD},
	{unix.ETHTOOL_LINK_MODE_100baseT_Half_BIT, featHundredHD},
	{unix.ETHTOOL_LINK_MODE_100baseT_Full_BIT, featHundredFD},
	{unix.ETHTOOL_LINK_MODE_1000baseT_Half_BIT, featOneGBHD},
	{unix.ETHTOOL_LINK_MODE_1000baseT_Full_BIT, featOneGBFD},
	{unix.ETHTOOL_LINK_MODE_1000baseKX_Full_BIT, featOneGBFD},
	{unix.ETHTOOL_LINK_MODE_10000baseT_Full_BIT, featTenGBFD},
	{unix.ETHTOOL_LINK_MODE_10000baseKX4_Full_BIT, featTenGBFD},
	{unix.ETHTOOL_LINK_MODE_10000baseKR_Full_BIT, featTenGBFD},
	{unix.ETHTOOL_LINK_MODE_10000baseR_FEC_BIT, featTenGBFD},
	{unix.ETHTOOL_LINK_MODE_40000baseKR4_Full_BIT, featFortyGBFD},
	{unix.ETHTOOL_LINK_MODE_40000baseCR4_Full_BIT, featFortyGBFD},
	{unix.ETHTOOL_LINK_MODE_40000baseSR4_Full_BIT, featFortyGBFD},
	{unix.ETHTOOL_LINK_MODE_40000baseLR4_Full_BIT, featFortyGBFD},
	{unix.ETHTOOL_LINK_MODE_TP_BIT, featCopper},
	{unix.ETHTOOL_LINK_MODE_FIBRE_BIT, featFiber},
	{unix.ETHTOOL_LINK_MODE_Autoneg_BIT, featAutoneg},
	{unix.ETHTOOL_LINK_MODE_Pause_BIT, featPause},
	{unix.ETHTOOL_LINK_MODE_Asym_Pause_BIT, featPauseAsym},
}

func modesToFeatures(modes uint32) uint32 {
	var f uint32
	for _, m := range ethtoolModes {
		if modes&(1<<m.modes) != 0 {
			f |= m.feat
		}
	}
	return f
}

// Values of struct ethtool_cmd's duplex and port.
const (
	duplexFull = 1 // DUPLEX_FULL
	portTP     = 0 // PORT_TP
	portFibre  = 3 // PORT_FIBRE
)

// currentFeatures is the current link as netdev_linux_read_features says
// it: one speed bit (only for the speeds OpenFlow names; none for an
// unknown speed), the medium, autonegotiation.
func currentFeatures(s ifioctl.LinkSettings) uint32 {
	full := s.Duplex == duplexFull
	pick := func(fd, hd uint32) uint32 {
		if full {
			return fd
		}
		return hd
	}
	var f uint32
	switch s.Speed {
	case 10:
		f = pick(featTenMBFD, featTenMBHD)
	case 100:
		f = pick(featHundredFD, featHundredHD)
	case 1000:
		f = pick(featOneGBFD, featOneGBHD)
	case 10000:
		f = featTenGBFD
	case 40000:
		f = featFortyGBFD
	case 100000:
		f = featHundredGB
	case 1000000:
		f = featOneTBFD
	}
	switch s.Port {
	case portTP:
		f |= featCopper
	case portFibre:
		f |= featFiber
	}
	if s.Autoneg != 0 {
		f |= featAutoneg
	}
	return f
}

// featuresToBps is netdev_features_to_bps with no default: the fastest
// speed among the bits, 0 if none.
func featuresToBps(f uint32) uint64 {
	switch {
	case f&featOneTBFD != 0:
		return 1_000_000_000_000
	case f&featHundredGB != 0:
		return 100_000_000_000
	case f&featFortyGBFD != 0:
		return 40_000_000_000
	case f&featTenGBFD != 0:
		return 10_000_000_000
	case f&(featOneGBHD|featOneGBFD) != 0:
		return 1_000_000_000
	case f&(featHundredHD|featHundredFD) != 0:
		return 100_000_000
	case f&(featTenMBHD|featTenMBFD) != 0:
		return 10_000_000
	}
	return 0
}

// portFeatures is the features of a port from its driver's settings, as
// ofport_open fills them: speeds in kb/s from the current and supported
// bits.
func portFeatures(s ifioctl.LinkSettings) ofproto.PortFeatures {
	f := ofproto.PortFeatures{
		Curr:       currentFeatures(s),
		Advertised: modesToFeatures(s.Advertising),
		Supported:  modesToFeatures(s.Supported),
	}
	f.CurrSpeed = uint32(featuresToBps(f.Curr) / 1000)
	f.MaxSpeed = uint32(featuresToBps(f.Supported) / 1000)
	return f
}

// readPortFeatures asks name's driver (in this network namespace, where
// the port's device is); a driver without link settings gives none, as
// netdev_get_features's error does.
func readPortFeatures(fd int, name string) ofproto.PortFeatures {
	s, err := ifioctl.GetLinkSettings(fd, name)
	if err != nil {
		return ofproto.PortFeatures{}
	}
	return portFeatures(s)
}

// featureCache is netdev-linux's VALID_FEATURES: a device's features are
// read once and again only after a link notification (RTM_NEWLINK), so
// describing ports (port stats, dump-ports-desc) costs no ioctl, and a
// speed set with ethtool shows when OVS would show it.
type featureCache struct {
	mu sync.Mutex
	m  map[string]cachedFeatures
}

type cachedFeatures struct {
	f   ofproto.PortFeatures
	gen uint64 // linkLog's generation when read
}

var deviceFeatures featureCache

func (c *featureCache) get(name string) ofproto.PortFeatures {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[name]; ok && linkLog.fresh(name, e.gen) {
		return e.f
	}
	e := cachedFeatures{gen: linkLog.current()}
	if fd, err := ifioctl.ControlSocket(); err == nil {
		e.f = readPortFeatures(fd, name)
		unix.Close(fd)
	}
	if c.m == nil {
		c.m = map[string]cachedFeatures{}
	}
	c.m[name] = e
	return e.f
}

// forget drops name's features (a port opened on it anew).
func (c *featureCache) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, name)
}
