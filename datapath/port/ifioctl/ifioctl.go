// Package ifioctl reads and changes the few interface attributes ports need
// (index, MAC, MTU, flags) with the classic SIOC* ioctls from netdevice(7).
// The ioctls act in the network namespace of the socket passed in, which is
// what a port wants: the namespace its AF_PACKET socket or TAP lives in.
package ifioctl

import (
	"encoding/binary"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ifreq is struct ifreq: a NUL-terminated name and a 24-byte union. The
// union is read and written as bytes because x/sys's Ifreq has no accessor
// for the struct sockaddr that SIOCxIFHWADDR uses.
type ifreq struct {
	name [unix.IFNAMSIZ]byte
	data [24]byte
}

func newIfreq(name string) (*ifreq, error) {
	if name == "" || len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("interface name %q: must be 1 to %d bytes", name, unix.IFNAMSIZ-1)
	}
	var r ifreq
	copy(r.name[:], name)
	return &r, nil
}

func (r *ifreq) ioctl(fd int, req uintptr) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(r)))
	if errno != 0 {
		return errno
	}
	return nil
}

// ControlSocket opens an AF_INET datagram socket, the usual handle for
// interface ioctls when the caller has no socket of its own.
func ControlSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open control socket: %w", err)
	}
	return fd, nil
}

// Index returns the interface index of name (SIOCGIFINDEX).
func Index(fd int, name string) (int, error) {
	r, err := newIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := r.ioctl(fd, unix.SIOCGIFINDEX); err != nil {
		return 0, fmt.Errorf("SIOCGIFINDEX %s: %w", name, err)
	}
	return int(int32(nativeUint32(r.data[:4]))), nil
}

// HardwareAddr returns the interface's 6-byte Ethernet address (SIOCGIFHWADDR).
func HardwareAddr(fd int, name string) (net.HardwareAddr, error) {
	r, err := newIfreq(name)
	if err != nil {
		return nil, err
	}
	if err := r.ioctl(fd, unix.SIOCGIFHWADDR); err != nil {
		return nil, fmt.Errorf("SIOCGIFHWADDR %s: %w", name, err)
	}
	// struct sockaddr: sa_family (2 bytes) then sa_data.
	mac := make(net.HardwareAddr, 6)
	copy(mac, r.data[2:8])
	return mac, nil
}

// SetHardwareAddr sets an Ethernet interface's MAC (SIOCSIFHWADDR).
func SetHardwareAddr(fd int, name string, mac net.HardwareAddr) error {
	if len(mac) != 6 {
		return fmt.Errorf("set MAC of %s: %q is not a 6-byte Ethernet address", name, mac)
	}
	r, err := newIfreq(name)
	if err != nil {
		return err
	}
	nativePutUint16(r.data[0:2], unix.ARPHRD_ETHER)
	copy(r.data[2:8], mac)
	if err := r.ioctl(fd, unix.SIOCSIFHWADDR); err != nil {
		return fmt.Errorf("SIOCSIFHWADDR %s %s: %w", name, mac, err)
	}
	return nil
}

// MTU returns the interface MTU (SIOCGIFMTU).
func MTU(fd int, name string) (int, error) {
	r, err := newIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := r.ioctl(fd, unix.SIOCGIFMTU); err != nil {
		return 0, fmt.Errorf("SIOCGIFMTU %s: %w", name, err)
	}
	return int(int32(nativeUint32(r.data[:4]))), nil
}

// SetMTU sets the interface MTU (SIOCSIFMTU).
func SetMTU(fd int, name string, mtu int) error {
	if mtu <= 0 || mtu > 1<<20 {
		return fmt.Errorf("set MTU of %s: %d out of range", name, mtu)
	}
	r, err := newIfreq(name)
	if err != nil {
		return err
	}
	nativePutUint32(r.data[:4], uint32(mtu))
	if err := r.ioctl(fd, unix.SIOCSIFMTU); err != nil {
		return fmt.Errorf("SIOCSIFMTU %s %d: %w", name, mtu, err)
	}
	return nil
}

// Flags returns the interface flags (IFF_UP, IFF_PROMISC, ...; SIOCGIFFLAGS).
func Flags(fd int, name string) (uint16, error) {
	r, err := newIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := r.ioctl(fd, unix.SIOCGIFFLAGS); err != nil {
		return 0, fmt.Errorf("SIOCGIFFLAGS %s: %w", name, err)
	}
	return nativeUint16(r.data[:2]), nil
}

// SetUp sets or clears IFF_UP, keeping the other flags (SIOCSIFFLAGS).
func SetUp(fd int, name string, up bool) error {
	flags, err := Flags(fd, name)
	if err != nil {
		return err
	}
	if up {
		flags |= unix.IFF_UP
	} else {
		flags &^= unix.IFF_UP
	}
	r, err := newIfreq(name)
	if err != nil {
		return err
	}
	nativePutUint16(r.data[:2], flags)
	if err := r.ioctl(fd, unix.SIOCSIFFLAGS); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS %s up=%v: %w", name, up, err)
	}
	return nil
}

// The ifreq union holds host-order integers.
func nativeUint16(b []byte) uint16       { return binary.NativeEndian.Uint16(b) }
func nativeUint32(b []byte) uint32       { return binary.NativeEndian.Uint32(b) }
func nativePutUint16(b []byte, v uint16) { binary.NativeEndian.PutUint16(b, v) }
func nativePutUint32(b []byte, v uint32) { binary.NativeEndian.PutUint32(b, v) }

// TunSetIff attaches an open /dev/net/tun file to the TUN/TAP interface
// name, creating it if needed (TUNSETIFF). flags are IFF_TAP, IFF_NO_PI,
// IFF_VNET_HDR, ...; an empty name lets the kernel pick one (tap%d). It
// returns the interface name the kernel used.
func TunSetIff(fd int, name string, flags uint16) (string, error) {
	var r ifreq
	if len(name) >= unix.IFNAMSIZ {
		return "", fmt.Errorf("TUNSETIFF: interface name %q longer than %d bytes", name, unix.IFNAMSIZ-1)
	}
	copy(r.name[:], name)
	nativePutUint16(r.data[:2], flags)
	if err := r.ioctl(fd, unix.TUNSETIFF); err != nil {
		return "", fmt.Errorf("TUNSETIFF %q flags %#x: %w", name, flags, err)
	}
	n := 0
	for n < len(r.name) && r.name[n] != 0 {
		n++
	}
	return string(r.name[:n]), nil
}
