package ifioctl

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// LinkSettings are the fields of struct ethtool_cmd that Open vSwitch's
// netdev-linux reads (ETHTOOL_GSET): the SUPPORTED_* and ADVERTISED_* masks,
// the speed in Mb/s (SpeedUnknown when the driver does not know it, as a
// NIC without a link says), DUPLEX_*, PORT_* and whether autonegotiation is
// on.
type LinkSettings struct {
	Supported, Advertising uint32
	Speed                  uint32
	Duplex, Port, Autoneg  uint8
}

// SpeedUnknown is the kernel's SPEED_UNKNOWN.
const SpeedUnknown = 0xffffffff

const ethtoolGSet = 0x1 // ETHTOOL_GSET

// GetLinkSettings asks name's driver for its link settings (SIOCETHTOOL,
// ETHTOOL_GSET). It answers for a device that is down too; a driver without
// link settings (dummy, bond without slaves...) gives EOPNOTSUPP.
func GetLinkSettings(fd int, name string) (LinkSettings, error) {
	r, err := newIfreq(name)
	if err != nil {
		return LinkSettings{}, err
	}
	// struct ethtool_cmd, 44 bytes: cmd, supported, advertising (u32),
	// speed (u16), duplex, port, phy_address, transceiver, autoneg (u8)...,
	// speed_hi (u16) at 28. On the heap: the ifreq holds its address.
	cmd := new([44]byte)
	nativePutUint32(cmd[0:], ethtoolGSet)
	*(*uintptr)(unsafe.Pointer(&r.data[0])) = uintptr(unsafe.Pointer(cmd))
	err = r.ioctl(fd, unix.SIOCETHTOOL)
	runtime.KeepAlive(cmd)
	if err != nil {
		return LinkSettings{}, fmt.Errorf("ETHTOOL_GSET %s: %w", name, err)
	}
	return LinkSettings{
		Supported:   nativeUint32(cmd[4:]),
		Advertising: nativeUint32(cmd[8:]),
		Speed:       uint32(nativeUint16(cmd[12:])) | uint32(nativeUint16(cmd[28:]))<<16,
		Duplex:      cmd[14],
		Port:        cmd[15],
		Autoneg:     cmd[18],
	}, nil
}
