package port

import (
	"encoding/binary"
	"fmt"
)

// VnetHdr is Linux's struct virtio_net_hdr (include/uapi/linux/virtio_net.h),
// the offload metadata that AF_PACKET sockets with PACKET_VNET_HDR and TAP
// devices with IFF_VNET_HDR put in front of every frame: whether the L4
// checksum is still partial (and where it is), and whether the frame is a
// TCP/UDP super-segment the kernel segments on transmit (GSO). Exchanging
// frames with it lets a userspace switch forward 64 KiB TCP segments with
// unfinished checksums between veths, as the kernel itself does.
type VnetHdr struct {
	Flags      uint8  // VnetFlag*
	GSOType    uint8  // VnetGSO*, possibly | VnetGSOECN
	HdrLen     uint16 // bytes of headers (a hint)
	GSOSize    uint16 // L4 payload bytes per segment
	CsumStart  uint16 // where the checksummed L4 part starts, from the frame start
	CsumOffset uint16 // where the checksum field is, from CsumStart
}

// VnetHdrLen is sizeof(struct virtio_net_hdr).
const VnetHdrLen = 10

// virtio_net_hdr flags and GSO types.
const (
	VnetFlagNeedsCsum = 1 // VIRTIO_NET_HDR_F_NEEDS_CSUM
	VnetFlagDataValid = 2 // VIRTIO_NET_HDR_F_DATA_VALID

	VnetGSONone  = 0    // VIRTIO_NET_HDR_GSO_NONE
	VnetGSOTCPv4 = 1    // VIRTIO_NET_HDR_GSO_TCPV4
	VnetGSOUDP   = 3    // VIRTIO_NET_HDR_GSO_UDP (UFO, obsolete)
	VnetGSOTCPv6 = 4    // VIRTIO_NET_HDR_GSO_TCPV6
	VnetGSOUDPL4 = 5    // VIRTIO_NET_HDR_GSO_UDP_L4
	VnetGSOECN   = 0x80 // VIRTIO_NET_HDR_GSO_ECN
)

// MaxGSOFrameLen is the longest frame a port with offload metadata
// accepts: a 64 KiB IP super-segment (the legacy GSO limit every kernel
// here uses) plus the Ethernet header and two VLAN tags.
const MaxGSOFrameLen = 65535 + EthHeaderLen + 2*VLANHeaderLen

// DecodeVnetHdr reads a virtio_net_hdr. The kernel writes it in host byte
// order on little-endian hosts and for AF_PACKET (vio_le()).
func DecodeVnetHdr(b []byte) VnetHdr {
	_ = b[VnetHdrLen-1]
	return VnetHdr{
		Flags:      b[0],
		GSOType:    b[1],
		HdrLen:     binary.NativeEndian.Uint16(b[2:]),
		GSOSize:    binary.NativeEndian.Uint16(b[4:]),
		CsumStart:  binary.NativeEndian.Uint16(b[6:]),
		CsumOffset: binary.NativeEndian.Uint16(b[8:]),
	}
}

// Encode writes h into b[:VnetHdrLen].
func (h *VnetHdr) Encode(b []byte) {
	_ = b[VnetHdrLen-1]
	b[0], b[1] = h.Flags, h.GSOType
	binary.NativeEndian.PutUint16(b[2:], h.HdrLen)
	binary.NativeEndian.PutUint16(b[4:], h.GSOSize)
	binary.NativeEndian.PutUint16(b[6:], h.CsumStart)
	binary.NativeEndian.PutUint16(b[8:], h.CsumOffset)
}

// IsGSO reports whether the frame is a super-segment.
func (h *VnetHdr) IsGSO() bool { return h.GSOType&^VnetGSOECN != VnetGSONone }

// MaxLen is the longest frame h may go with on a port that takes frames
// up to maxFrame: a super-segment may be up to MaxGSOFrameLen.
func (h *VnetHdr) MaxLen(maxFrame int) int {
	if h.IsGSO() {
		return MaxGSOFrameLen
	}
	return maxFrame
}

// VnetWriter is a port that can transmit frames with offload metadata.
// VnetEnabled says whether this port was opened with it (an AF_PACKET port
// without Config.VnetHdr cannot); WriteBatchVnet then sends frames[i] with
// hdrs[i], so the kernel segments GSO frames and finishes partial
// checksums. Lengths are checked against MaxGSOFrameLen for GSO frames and
// the MTU otherwise.
type VnetWriter interface {
	VnetEnabled() bool
	WriteBatchVnet(frames [][]byte, hdrs []VnetHdr) (int, error)
}

// CheckVnetBatch is what every WriteBatchVnet checks first: the port was
// opened with offload metadata, and each frame has its header.
func CheckVnetBatch(enabled bool, frames [][]byte, hdrs []VnetHdr) error {
	if !enabled {
		return fmt.Errorf("write with virtio_net_hdr on a port opened without it")
	}
	if len(hdrs) != len(frames) {
		return fmt.Errorf("%d frames with %d virtio_net_hdrs", len(frames), len(hdrs))
	}
	return nil
}
