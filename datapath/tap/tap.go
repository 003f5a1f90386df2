// Package tap creates TAP devices, the kernel side of OVS "internal" ports
// in the userspace datapath (a bridge's LOCAL port, Antrea's antrea-gw0):
// frames the switch writes to the TAP enter the host stack as if received on
// that interface, and frames the host sends out of it are read by the switch.
package tap

import (
	"fmt"
	"net"
	"slices"
	"time"
	"unsafe"

	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/datapath/port/ifioctl"
	"golang.org/x/sys/unix"
)

// Config describes the TAP device to create.
type Config struct {
	// Name is the interface name; empty lets the kernel pick tap%d.
	Name string
	// MAC is set on the device when not nil (the kernel picks a random one
	// otherwise). OVS gives internal ports the bridge's MAC.
	MAC net.HardwareAddr
	// MTU is set when not 0 (the kernel default is 1500).
	MTU int
	// LeaveDown keeps the interface administratively down; by default it
	// is brought up.
	LeaveDown bool
	// ReadTimeout makes ReadBatch return (0, nil) when nothing arrived for
	// that long; 0 blocks until a frame arrives or the port is closed.
	ReadTimeout time.Duration
	// VnetHdr exchanges a virtio_net_hdr with every frame
	// (IFF_VNET_HDR) and tells the kernel the switch takes partial
	// checksums and TCP super-segments (TUNSETOFFLOAD), so the host
	// stack's TCP over this interface is not segmented or checksummed
	// frame by frame: userspace TSO, as with afpacket.Config.VnetHdr.
	VnetHdr bool
}

// TUNSETOFFLOAD flags of <linux/if_tun.h>.
const (
	tunFCsum = 0x01 // TUN_F_CSUM: partial checksums
	tunFTSO4 = 0x02 // TUN_F_TSO4
	tunFTSO6 = 0x04 // TUN_F_TSO6
)

// Port is an open TAP device. It implements port.Port. The device exists
// as long as the Port is open: it is not persistent.
type Port struct {
	port.Base // identity, counters, close; frames are in the batch's buffers

	fd       int // /dev/net/tun file attached to the device
	maxFrame int

	txHdr [port.VnetHdrLen]byte // the header of the frame being written
	txIov [2]unix.Iovec         // header and frame for writev(2)
}

var (
	_ port.Port       = (*Port)(nil)
	_ port.VnetWriter = (*Port)(nil)
)

// Create creates a TAP device in the caller's network namespace (that of
// the OS thread) and configures it.
func Create(cfg Config) (*Port, error) {
	p := &Port{fd: -1}
	p.Init("tap", cfg.Name, cfg.ReadTimeout)
	p.SetTransmitter(p)
	if err := p.create(cfg); err != nil {
		p.Discard(p.release)
		return nil, err
	}
	return p, nil
}

func (p *Port) create(cfg Config) error {
	var err error
	p.fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("tap %s: open /dev/net/tun: %w", cfg.Name, err)
	}
	// IFF_NO_PI: frames are plain Ethernet, without the 4-byte packet
	// information header.
	flags := uint16(unix.IFF_TAP | unix.IFF_NO_PI)
	if cfg.VnetHdr {
		flags |= unix.IFF_VNET_HDR
	}
	name, err := ifioctl.TunSetIff(p.fd, cfg.Name, flags)
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	p.Init("tap", name, cfg.ReadTimeout)
	if cfg.VnetHdr {
		if err := unix.IoctlSetPointerInt(p.fd, unix.TUNSETVNETHDRSZ, port.VnetHdrLen); err != nil {
			return p.Errorf("TUNSETVNETHDRSZ: %w", err)
		}
		if err := unix.IoctlSetInt(p.fd, unix.TUNSETOFFLOAD, tunFCsum|tunFTSO4|tunFTSO6); err != nil {
			return p.Errorf("TUNSETOFFLOAD: %w", err)
		}
		p.Vnet = true
	}
	// A device someone made persistent before would outlive us; make sure
	// it goes away when the file closes.
	if err := unix.IoctlSetInt(p.fd, unix.TUNSETPERSIST, 0); err != nil {
		return p.Errorf("TUNSETPERSIST 0: %w", err)
	}

	ctl, err := ifioctl.ControlSocket()
	if err != nil {
		return p.Errorf("%w", err)
	}
	defer unix.Close(ctl)
	if cfg.MAC != nil {
		if err := ifioctl.SetHardwareAddr(ctl, name, cfg.MAC); err != nil {
			return fmt.Errorf("tap: %w", err)
		}
	}
	if cfg.MTU != 0 {
		if err := ifioctl.SetMTU(ctl, name, cfg.MTU); err != nil {
			return fmt.Errorf("tap: %w", err)
		}
	}
	if !cfg.LeaveDown {
		if err := ifioctl.SetUp(ctl, name, true); err != nil {
			return fmt.Errorf("tap: %w", err)
		}
	}
	ifindex, err := ifioctl.Index(ctl, name)
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	mac, err := ifioctl.HardwareAddr(ctl, name)
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	mtu, err := ifioctl.MTU(ctl, name)
	if err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	p.maxFrame = port.MaxFrameLen(p.SetIdentity(ifindex, mac, mtu))
	return p.OpenWake(p.fd)
}

// ReadBatch implements port.Port. A TAP delivers one frame per read(2), so
// this reads until the device has nothing more or the batch is full,
// sleeping in poll(2) only when the first read finds nothing. Frames are
// copied into b's reusable buffers.
func (p *Port) ReadBatch(b *port.Batch) (int, error) {
	p.RxMu.Lock()
	defer p.RxMu.Unlock()
	if _, err := p.StartRead(b); err != nil {
		return 0, err
	}
	n := 0
	var c port.RxCounts
	defer func() {
		p.Lend(n)
		p.CountRx(&c)
	}()
	hdr, maxRead := 0, p.maxFrame
	if p.Vnet {
		hdr, maxRead = port.VnetHdrLen, port.MaxGSOFrameLen
	}
	for n < len(b.Frames) {
		// One byte more than the longest frame allowed tells an
		// oversized frame (read truncates it) from a maximal one.
		buf := b.Buffer(n, hdr+maxRead+1)
		r, err := port.RawRead(p.fd, buf)
		switch {
		case err == nil:
			m := port.Meta{}
			maxLen := p.maxFrame
			if p.Vnet {
				if r < hdr {
					c.Errors++
					c.LengthErrors++
					continue
				}
				m.Vnet, m.Flags = port.DecodeVnetHdr(buf), port.FlagVnet
				maxLen = m.Vnet.MaxLen(maxLen)
				r -= hdr
			}
			if !port.LengthOK(r, maxLen) {
				c.Errors++
				c.LengthErrors++
				continue
			}
			b.Frames[n] = buf[hdr : hdr+r]
			b.Meta[n] = m
			n++
			c.Packets++
			c.Bytes += uint64(r)
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if n > 0 {
				return n, nil
			}
			ready, err := p.WaitReady()
			if err != nil || !ready {
				return 0, err
			}
		default:
			p.Ctr.RxErrors.Add(1)
			return n, p.Errorf("read: %w", err)
		}
	}
	return n, nil
}

// Transmit implements port.Transmitter (WriteBatch, WriteBatchVnet) with
// one write(2) per frame (the TAP character device has no batched write).
// A frame written to the TAP is received by the host stack on this
// interface. With VnetHdr each frame goes with its virtio_net_hdr (an
// empty one for WriteBatch), so the host stack gets super-segments and
// partial checksums as such.
func (p *Port) Transmit(frames [][]byte, hdrs []port.VnetHdr) (int, error) {
	var pkts, bytes, dropped uint64
	defer func() {
		p.Ctr.TxPackets.Add(pkts)
		p.Ctr.TxBytes.Add(bytes)
		p.Ctr.TxDropped.Add(dropped)
	}()
	for i := 0; i < len(frames); {
		f := frames[i]
		var h port.VnetHdr
		if hdrs != nil {
			h = hdrs[i]
		}
		if !port.LengthOK(len(f), h.MaxLen(p.maxFrame)) {
			dropped++
			i++
			continue
		}
		err := p.writeFrame(f, &h)
		switch err {
		case nil:
			pkts++
			bytes += uint64(len(f))
			i++
		case unix.EINTR:
		case unix.EIO, unix.EINVAL, unix.ENOMEM, unix.ENOBUFS:
			// EIO: the interface is down; EINVAL: the kernel refused
			// this frame; the others: no memory now. Drop this frame,
			// like a link that is down or full.
			dropped++
			i++
		default:
			p.Ctr.TxErrors.Add(uint64(len(frames) - i))
			return i, p.Errorf("write: %w", err)
		}
	}
	return len(frames), nil
}

// writeFrame writes one frame, behind its virtio_net_hdr with VnetHdr
// (one writev(2) of the two pieces, without copying the frame).
func (p *Port) writeFrame(f []byte, h *port.VnetHdr) error {
	if !p.Vnet {
		_, err := port.RawWrite(p.fd, f)
		return err
	}
	h.Encode(p.txHdr[:])
	p.txIov[0].Base, p.txIov[0].Len = &p.txHdr[0], port.VnetHdrLen
	p.txIov[1].Base = &f[0]
	p.txIov[1].SetLen(len(f))
	_, _, errno := unix.RawSyscall(unix.SYS_WRITEV, uintptr(p.fd), uintptr(unsafe.Pointer(&p.txIov[0])), 2)
	p.txIov[1].Base = nil // the frame is the caller's
	if errno != 0 {
		return errno
	}
	return nil
}

// Close implements port.Port. Closing the file deletes the device.
// Stats (port.Base) are the switch's counters: frames the kernel dropped
// because the switch did not read fast enough show up in the device's own
// tx_dropped counter (ip -s link), not here.
func (p *Port) Close() error { return p.Base.Close(p.release, nil) }

func (p *Port) release() error { return p.CloseFd(&p.fd, "device") }

// SetHardwareAddr changes the device's MAC in place (SIOCSIFHWADDR), as
// OVS's netdev_set_etheraddr does for a bridge's LOCAL port: the device
// stays up and keeps its addresses and routes (a TAP allows a live
// address change).
func (p *Port) SetHardwareAddr(mac net.HardwareAddr) error {
	ctl, err := ifioctl.ControlSocket()
	if err != nil {
		return p.Errorf("%w", err)
	}
	defer unix.Close(ctl)
	if err := ifioctl.SetHardwareAddr(ctl, p.Name(), mac); err != nil {
		return fmt.Errorf("tap: %w", err)
	}
	p.RecordHardwareAddr(slices.Clone(mac))
	return nil
}
