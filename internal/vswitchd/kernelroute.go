package vswitchd

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/govs-project/govs/datapath/rtnl"
	"golang.org/x/sys/unix"
)

// govs's tunnels send through the kernel's UDP stack, so the kernel's
// routing and neighbour tables are the tunnel's: where ovs-vswitchd keeps
// its own (ovs/route/add, tnl/arp/set, learnt on br-phy), govs writes the
// same entries into the kernel's. These are the two netlink requests it
// needs (rtnetlink(7)).

// AddKernelRoute adds (or replaces) the route to dst through the device
// dev, via gw when it is valid, in the main table.
func AddKernelRoute(dst netip.Prefix, dev string, gw netip.Addr) error {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return err
	}
	family, size := byte(unix.AF_INET), 4
	if dst.Addr().Is6() {
		family, size = unix.AF_INET6, 16
	}
	scope := byte(unix.RT_SCOPE_LINK)
	if gw.IsValid() {
		scope = unix.RT_SCOPE_UNIVERSE
	}
	// struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
	msg := []byte{family, byte(dst.Bits()), 0, 0, unix.RT_TABLE_MAIN, unix.RTPROT_STATIC, scope, unix.RTN_UNICAST, 0, 0, 0, 0}
	msg = rtnl.AppendAttr(msg, unix.RTA_DST, dst.Masked().Addr().AsSlice()[:size])
	msg = rtnl.AppendAttr(msg, unix.RTA_OIF, u32le(uint32(ifi.Index)))
	if gw.IsValid() {
		msg = rtnl.AppendAttr(msg, unix.RTA_GATEWAY, gw.AsSlice())
	}
	return netlinkRequest(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, msg)
}

// SetKernelNeighbour sets a permanent neighbour entry: ip is at mac on dev.
func SetKernelNeighbour(dev string, ip netip.Addr, mac net.HardwareAddr) error {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return err
	}
	family := byte(unix.AF_INET)
	if ip.Is6() {
		family = unix.AF_INET6
	}
	// struct ndmsg: family, pad1, pad2, ifindex, state, flags, type.
	msg := []byte{family, 0, 0, 0}
	msg = append(msg, u32le(uint32(ifi.Index))...)
	msg = binary.LittleEndian.AppendUint16(msg, unix.NUD_PERMANENT)
	msg = append(msg, 0, 0)
	msg = rtnl.AppendAttr(msg, unix.NDA_DST, ip.AsSlice())
	msg = rtnl.AppendAttr(msg, unix.NDA_LLADDR, mac)
	return netlinkRequest(unix.RTM_NEWNEIGH, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, msg)
}

func u32le(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// netlinkRequest sends one rtnetlink request and waits for its ack.
func netlinkRequest(typ, flags uint16, payload []byte) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink bind: %w", err)
	}
	msg := rtnl.NewMessage(typ, flags|unix.NLM_F_REQUEST|unix.NLM_F_ACK, 1, payload)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return fmt.Errorf("netlink receive: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return fmt.Errorf("netlink answer: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR {
			return rtnl.AckError(m.Data)
		}
	}
	return fmt.Errorf("netlink: no acknowledgement")
}
