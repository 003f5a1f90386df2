package bench

import (
	"fmt"
	"net"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// relay is the floor the userspace switches are measured against: one OS
// thread moving frames between two interfaces with the plainest AF_PACKET
// I/O there is (sleep in ppoll(2), then one read(2) and one write(2) per
// frame), with no pipeline, no ring, no batching and no Go scheduler in the
// way (its system calls are raw: the thread blocks holding its P, which is
// fine with GOMAXPROCS=1 and nothing else to run). What it costs over a
// direct veth pair is what any userspace hop costs on this machine: the
// wake-ups, the system calls and the copies; a switch's cost above the
// relay is its own.
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
	pfds := [2]unix.PollFd{{Fd: int32(fds[0]), Events: unix.POLLIN}, {Fd: int32(fds[1]), Events: unix.POLLIN}}
	buf := make([]byte, 64<<10)
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
				n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fds[i]), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), unix.MSG_DONTWAIT, 0, 0)
				if e == unix.EAGAIN || e == unix.EINTR {
					break
				}
				if e != 0 {
					return fmt.Errorf("relay: read %s: %w", ifaces[i], e)
				}
				// A send error (the peer's queue full) drops the frame, as a
				// switch would.
				unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fds[1-i]), uintptr(unsafe.Pointer(&buf[0])), n, 0, 0, 0)
			}
		}
	}
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
