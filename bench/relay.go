package bench

import (
	"fmt"
	"net"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// relay is the floor the userspace switches are measured against: one OS
// thread moving frames between two interfaces with plain AF_PACKET sockets
// (sleep in ppoll(2), then recvmmsg(2) whatever is queued, up to a batch,
// and sendmmsg(2) it to the other side), with no pipeline, no ring and no
// Go scheduler in the way (its system calls are raw: the thread blocks
// holding its P, which is fine with GOMAXPROCS=1 and nothing else to run).
// What it costs over a direct veth pair is what a userspace hop costs on
// this machine: the wake-ups, the system calls, the copies and the
// receivers' stacks run in its sends; a switch's cost above the relay is
// its own.
func relay(ifaces []string) error {
	if len(ifaces) != 2 {
		return fmt.Errorf("relay: want two interfaces, got %q", ifaces)
	}
	runtime.LockOSThread()
	var fds [2]int
	for i, name := range ifaces {
		fd, err := relaySocket(name)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		fds[i] = fd
	}
	const batch, frameSize = 64, 64 << 10
	bufs := make([]byte, batch*frameSize)
	iovs := make([]unix.Iovec, batch)
	msgs := make([]mmsghdr, batch)
	for i := range msgs {
		iovs[i].Base = &bufs[i*frameSize]
		msgs[i].hdr.Iov = &iovs[i]
		msgs[i].hdr.SetIovlen(1)
	}
	pfds := [2]unix.PollFd{{Fd: int32(fds[0]), Events: unix.POLLIN}, {Fd: int32(fds[1]), Events: unix.POLLIN}}
	for {
		pfds[0].Revents, pfds[1].Revents = 0, 0
		_, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfds[0])), 2, 0, 0, 0, 0)
		if e != 0 && e != unix.EINTR {
			return fmt.Errorf("relay: ppoll: %w", e)
		}
		for i := range pfds {
			if pfds[i].Revents&(unix.POLLERR|unix.POLLNVAL) != 0 {
				return fmt.Errorf("relay: %s: poll events %#x", ifaces[i], pfds[i].Revents)
			}
			if pfds[i].Revents&unix.POLLIN == 0 {
				continue
			}
			// Drain the socket: every frame queued now goes out.
			for {
				for j := range msgs {
					iovs[j].SetLen(frameSize)
				}
				n, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(fds[i]), uintptr(unsafe.Pointer(&msgs[0])), batch, unix.MSG_DONTWAIT, 0, 0)
				if e == unix.EAGAIN || e == unix.EINTR {
					break
				}
				if e != 0 {
					return fmt.Errorf("relay: recvmmsg %s: %w", ifaces[i], e)
				}
				for j := range int(n) {
					iovs[j].SetLen(int(msgs[j].len))
				}
				// Frames the other side's queue has no room for are
				// dropped, as a switch would.
				unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(fds[1-i]), uintptr(unsafe.Pointer(&msgs[0])), n, unix.MSG_DONTWAIT, 0, 0)
				if n < batch {
					break
				}
			}
		}
	}
}

// mmsghdr is struct mmsghdr for recvmmsg(2) and sendmmsg(2).
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// relaySocket opens a promiscuous AF_PACKET socket bound to the interface
// that does not see its own transmissions.
func relaySocket(name string) (int, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return -1, fmt.Errorf("relay: %w", err)
	}
	proto := int(uint16(unix.ETH_P_ALL)<<8 | uint16(unix.ETH_P_ALL)>>8)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return -1, fmt.Errorf("relay: %s: socket: %w", name, err)
	}
	fail := func(what string, err error) (int, error) {
		unix.Close(fd)
		return -1, fmt.Errorf("relay: %s: %s: %w", name, what, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
		return fail("PACKET_IGNORE_OUTGOING", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	mr := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mr); err != nil {
		return fail("promiscuous mode", err)
	}
	return fd, nil
}
