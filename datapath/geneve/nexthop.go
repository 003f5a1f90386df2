package geneve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"syscall"

	"github.com/govs-project/govs/datapath/rtnl"
	"golang.org/x/sys/unix"
)

// NextHop is where the kernel would send the port's datagrams to one
// destination: the output interface, the link-layer address of the
// neighbour (the destination itself or its route's gateway) and the
// source address.
type NextHop struct {
	Ifindex int
	MAC     [6]byte
	// Src is the datagrams' source: the one asked for, or without one
	// (a port without local_ip) the route's preferred source, which the
	// kernel writes into a raw datagram sent from 0.0.0.0.
	Src [4]byte
}

// errNoNeighbour: the neighbour is not resolved (the kernel would ARP).
var errNoNeighbour = errors.New("neighbour not resolved")

// Resolver asks the kernel's routing and neighbour tables (rtnetlink(7))
// for the next hop of the port's datagrams, as sending them through the
// raw socket would use it; the kernel fast path records it in the entries
// it encapsulates for (it cannot ask the FIB from XDP without IP
// forwarding on the underlay interface). Its netlink socket is opened in
// the caller's network namespace, like the port's sockets.
type Resolver struct {
	mu  sync.Mutex
	fd  int
	seq uint32
	buf []byte
}

// NewResolver opens the netlink socket.
func NewResolver() (*Resolver, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	// A stuck kernel answer must not hang a packet loop.
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink timeout: %w", err)
	}
	return &Resolver{fd: fd, buf: make([]byte, 8192)}, nil
}

// Close closes the netlink socket.
func (r *Resolver) Close() error { return unix.Close(r.fd) }

// NextHop returns the next hop of a datagram from src (zero: the
// kernel's choice) to dst: the route's output interface and source, and
// the resolved MAC of its gateway or of dst.
func (r *Resolver) NextHop(src, dst [4]byte) (NextHop, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	nh, via, err := r.route(src, dst)
	if err != nil {
		return NextHop{}, err
	}
	// struct ndmsg: family, pad1, pad2 (2), ifindex (4), state (2), flags, type.
	msg := []byte{unix.AF_INET, 0, 0, 0}
	msg = binary.NativeEndian.AppendUint32(msg, uint32(nh.Ifindex))
	msg = append(msg, 0, 0, 0, 0)
	msg = rtnl.AppendAttr(msg, unix.NDA_DST, via[:])
	attrs, hdr, err := r.request(unix.RTM_GETNEIGH, unix.RTM_NEWNEIGH, msg, 12)
	if err != nil {
		return NextHop{}, fmt.Errorf("neighbour %s: %w", netip.AddrFrom4(via), err)
	}
	const valid = unix.NUD_PERMANENT | unix.NUD_NOARP | unix.NUD_REACHABLE | unix.NUD_STALE | unix.NUD_DELAY | unix.NUD_PROBE
	if state := binary.NativeEndian.Uint16(hdr[8:]); state&valid == 0 {
		return NextHop{}, fmt.Errorf("neighbour %s: %w", netip.AddrFrom4(via), errNoNeighbour)
	}
	for _, a := range attrs {
		if a.Type == unix.NDA_LLADDR && len(a.Value) == 6 {
			nh.MAC = [6]byte(a.Value)
			return nh, nil
		}
	}
	return NextHop{}, fmt.Errorf("neighbour %s: %w", netip.AddrFrom4(via), errNoNeighbour)
}

// Route returns the output interface and the source address of the
// kernel's route from src (zero: its choice) to dst, neighbour or not.
func (r *Resolver) Route(src, dst [4]byte) (ifindex int, from [4]byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	nh, _, err := r.route(src, dst)
	return nh.Ifindex, nh.Src, err
}

// route asks for the route from src to dst: the next hop without its
// MAC, and the address whose neighbour that is (the gateway or dst).
func (r *Resolver) route(src, dst [4]byte) (nh NextHop, via [4]byte, err error) {
	// struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
	msg := []byte{unix.AF_INET, 32, 32, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	msg = rtnl.AppendAttr(msg, unix.RTA_DST, dst[:])
	msg = rtnl.AppendAttr(msg, unix.RTA_SRC, src[:])
	attrs, _, err := r.request(unix.RTM_GETROUTE, unix.RTM_NEWROUTE, msg, 12)
	if err != nil {
		return nh, via, fmt.Errorf("route to %s: %w", netip.AddrFrom4(dst), err)
	}
	via, nh.Src = dst, src
	for _, a := range attrs {
		switch {
		case a.Type == unix.RTA_OIF && len(a.Value) >= 4:
			nh.Ifindex = int(binary.NativeEndian.Uint32(a.Value))
		case a.Type == unix.RTA_GATEWAY && len(a.Value) == 4:
			via = [4]byte(a.Value)
		case a.Type == unix.RTA_PREFSRC && len(a.Value) == 4 && src == [4]byte{}:
			nh.Src = [4]byte(a.Value)
		}
	}
	if nh.Ifindex == 0 {
		return nh, via, fmt.Errorf("route to %s: no output interface", netip.AddrFrom4(dst))
	}
	return nh, via, nil
}

// IsLocal reports whether a (IPv4 or IPv6) is an address of this host:
// the kernel's route to it is a local one (RTN_LOCAL), as OVS's route
// table marks the addresses a tunnel may send from (ovs_router_lookup).
func (r *Resolver) IsLocal(a netip.Addr) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	family, bits := byte(unix.AF_INET), byte(32)
	if a.Is6() {
		family, bits = unix.AF_INET6, 128
	}
	msg := []byte{family, bits, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	msg = rtnl.AppendAttr(msg, unix.RTA_DST, a.AsSlice())
	_, hdr, err := r.request(unix.RTM_GETROUTE, unix.RTM_NEWROUTE, msg, 12)
	if err != nil {
		return false, fmt.Errorf("route to %s: %w", a, err)
	}
	return hdr[7] == unix.RTN_LOCAL, nil
}

// request sends one rtnetlink get request and returns the attributes and
// the fixed header (hdrLen bytes) of the answer of type answer.
func (r *Resolver) request(typ, answer uint16, payload []byte, hdrLen int) ([]rtnl.Attr, []byte, error) {
	r.seq++
	msg := rtnl.NewMessage(typ, unix.NLM_F_REQUEST, r.seq, payload)
	if err := unix.Sendto(r.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, nil, err
	}
	for {
		n, _, err := unix.Recvfrom(r.fd, r.buf, 0)
		if err != nil {
			return nil, nil, err
		}
		msgs, err := syscall.ParseNetlinkMessage(r.buf[:n])
		if err != nil {
			return nil, nil, err
		}
		for i := range msgs {
			m := &msgs[i]
			if m.Header.Seq != r.seq {
				continue // the answer to an earlier request that timed out
			}
			switch {
			case m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4:
				if err := rtnl.AckError(m.Data); err != nil {
					return nil, nil, err
				}
				return nil, nil, errors.New("no answer")
			case m.Header.Type == answer && len(m.Data) >= hdrLen:
				return rtnl.ParseAttrs(m.Data[hdrLen:]), m.Data[:hdrLen], nil
			}
		}
	}
}
