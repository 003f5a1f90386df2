// Package tunnel is the Geneve (RFC 8926) header codec of govs: it moves
// tunnel metadata between the wire and the flow key (tun_id, tun_src,
// tun_dst, tun_flags, tun_metadataN through the TLV map option mapping),
// the userspace counterpart of OVS's netdev-native-tnl Geneve push/pop. The
// vport that carries the datagrams is a datapath port (datapath/geneve).
//
// The codec does not allocate: Decap returns slices into the datagram it was
// given and Encap appends into the caller's buffer.
package tunnel

import (
	"encoding/binary"
	"errors"
)

// Geneve constants from RFC 8926 §3.
const (
	// DefaultPort is the IANA UDP port of Geneve (OVS dst_port default).
	DefaultPort = 6081
	// HeaderLen is the fixed part of the Geneve header, without options.
	HeaderLen = 8
	// MaxOptionsLen is the largest options area: Opt Len is 6 bits of
	// 4-byte words.
	MaxOptionsLen = 63 * 4
	// OptionHeaderLen is the size of one option's class/type/length.
	OptionHeaderLen = 4
	// MaxOptionDataLen is the largest option body: Length is 5 bits of
	// 4-byte words.
	MaxOptionDataLen = 31 * 4
	// ProtoTEB is the Protocol Type of an Ethernet payload (Transparent
	// Ethernet Bridging), the only one OVS accepts.
	ProtoTEB = 0x6558
	// OptionTypeCritical is the high bit of an option's Type: a receiver
	// that does not understand such an option must drop the packet.
	OptionTypeCritical = 0x80
	// EthHeaderLen is the inner Ethernet header every payload must carry.
	EthHeaderLen = 14

	// OuterOverhead is what the underlay adds to an inner frame without
	// options: outer IPv4 (20) + UDP (8) + Geneve (8).
	OuterOverhead = IPv4HeaderLen + UDPHeaderLen + HeaderLen
	// OuterOverhead6 is OuterOverhead over an IPv6 underlay.
	OuterOverhead6 = IPv6HeaderLen + UDPHeaderLen + HeaderLen
	// IPv4HeaderLen is an outer IPv4 header without IP options.
	IPv4HeaderLen = 20
	// IPv6HeaderLen is an outer IPv6 header without extension headers.
	IPv6HeaderLen = 40
	// UDPHeaderLen is the UDP header.
	UDPHeaderLen = 8
)

// Bits of the second header byte.
const (
	flagOAM      = 0x80
	flagCritical = 0x40
)

// Flags are the header bits a receiver reports in Metadata.
type Flags uint8

const (
	// FlagOAM is the O bit: an OAM (control) packet. It becomes the oam bit
	// of tun_flags.
	FlagOAM Flags = 1 << iota
	// FlagCritical is the C bit: at least one option is critical.
	FlagCritical
)

// TunFlagOAM is the oam bit of the tun_flags field (NX_TUN_FLAG_OAM).
const TunFlagOAM = 1

// Decoding errors. They are fixed values so that the drop path of the
// datapath does not allocate; callers test them with errors.Is.
var (
	ErrTruncated          = errors.New("geneve: datagram shorter than the 8-byte header")
	ErrOptionsTruncated   = errors.New("geneve: options extend past the end of the datagram")
	ErrVersion            = errors.New("geneve: version is not 0")
	ErrProtocol           = errors.New("geneve: protocol type is not Transparent Ethernet Bridging (0x6558)")
	ErrOptionTruncated    = errors.New("geneve: option length runs past the options area")
	ErrInnerTruncated     = errors.New("geneve: inner frame shorter than an Ethernet header")
	ErrUnknownCritical    = errors.New("geneve: unknown critical option (type bit 0x80 set)")
	ErrOptionLenMismatch  = errors.New("geneve: option length differs from its TLV mapping")
	ErrOptionsTooLong     = errors.New("geneve: mapped options exceed the 252-byte options area")
	ErrBufferTooSmall     = errors.New("geneve: destination buffer too small")
	ErrTunDstMissing      = errors.New("geneve: no tunnel destination (tun_dst and tun_ipv6_dst are 0 and remote_ip=flow)")
	ErrFrameTooBigForPath = errors.New("geneve: encapsulated frame exceeds the underlay MTU")
)

// Header is a parsed Geneve header (RFC 8926 §3.4).
type Header struct {
	Version  uint8
	OAM      bool   // O bit
	Critical bool   // C bit
	Protocol uint16 // Protocol Type
	VNI      uint32 // 24 bits
	// Options is the raw options area (Opt Len * 4 bytes), already checked
	// to be a well-formed sequence of options; walk it with Header.Iter.
	Options []byte
}

// Len is the header length on the wire, options included.
func (h *Header) Len() int { return HeaderLen + len(h.Options) }

// Iter walks the options.
func (h *Header) Iter() OptionIter { return OptionIter{b: h.Options} }

// ParseHeader parses the Geneve header at the start of b (a UDP payload)
// into h and checks that the options are a well-formed TLV sequence. It
// checks neither version nor protocol: Decap does, this is the raw parser.
func ParseHeader(b []byte, h *Header) error {
	if len(b) < HeaderLen {
		return ErrTruncated
	}
	optLen := int(b[0]&0x3f) * 4
	if len(b) < HeaderLen+optLen {
		return ErrOptionsTruncated
	}
	h.Version = b[0] >> 6
	h.OAM = b[1]&flagOAM != 0
	h.Critical = b[1]&flagCritical != 0
	h.Protocol = binary.BigEndian.Uint16(b[2:])
	h.VNI = binary.BigEndian.Uint32(b[4:]) >> 8
	h.Options = b[HeaderLen : HeaderLen+optLen]
	return checkOptions(h.Options)
}

// checkOptions verifies that every option's length stays inside opts, so
// OptionIter never has to report an error.
func checkOptions(opts []byte) error {
	for len(opts) > 0 {
		if len(opts) < OptionHeaderLen {
			return ErrOptionTruncated
		}
		n := OptionHeaderLen + int(opts[3]&0x1f)*4
		if n > len(opts) {
			return ErrOptionTruncated
		}
		opts = opts[n:]
	}
	return nil
}

// Option is one Geneve option; Data aliases the datagram.
type Option struct {
	Class uint16
	Type  uint8
	Data  []byte // Length * 4 bytes
}

// Critical reports whether the option's type has the critical bit.
func (o Option) Critical() bool { return o.Type&OptionTypeCritical != 0 }

// OptionIter walks a checked options area (from ParseHeader, Decap or
// Metadata) without allocating.
type OptionIter struct{ b []byte }

// Next returns the next option, or false at the end.
func (it *OptionIter) Next() (Option, bool) {
	if len(it.b) < OptionHeaderLen {
		return Option{}, false
	}
	n := OptionHeaderLen + int(it.b[3]&0x1f)*4
	if n > len(it.b) { // only for areas that were not checked
		it.b = nil
		return Option{}, false
	}
	o := Option{Class: binary.BigEndian.Uint16(it.b), Type: it.b[2], Data: it.b[OptionHeaderLen:n]}
	it.b = it.b[n:]
	return o, true
}

// Metadata is the tunnel metadata of one received frame: what FillKey puts
// into the flow key. Decap fills the Geneve part; the socket layer fills the
// outer addresses and ports.
type Metadata struct {
	VNI   uint32 // tun_id
	Flags Flags
	// Options is the raw, checked options area; it aliases the datagram,
	// so it is valid as long as the frame is.
	Options []byte

	Src, Dst         uint32 // outer IPv4 source/destination (tun_src/tun_dst), host order
	SrcPort, DstPort uint16 // outer UDP ports
	// IPv6 says the frame came over an IPv6 underlay: Src6 and Dst6 are
	// its outer addresses (tun_ipv6_src/tun_ipv6_dst), Src and Dst are 0.
	IPv6       bool
	Src6, Dst6 [16]byte
	// Ifindex is the interface the datagram arrived on (0: unknown); the
	// kernel fast path matches it.
	Ifindex int
}

// Iter walks the options.
func (md *Metadata) Iter() OptionIter { return OptionIter{b: md.Options} }

// Decap parses the Geneve header at the start of a UDP payload, fills the
// Geneve part of md (VNI, Flags, Options; the outer addresses and ports are
// left alone) and returns the inner Ethernet frame, which aliases udpPayload.
// Like OVS's netdev_geneve_pop_header it drops (returns an error for) other
// versions and payloads other than Ethernet. Critical options are judged by
// FillKey, which knows the TLV map.
func Decap(udpPayload []byte, md *Metadata) ([]byte, error) {
	var h Header
	if err := ParseHeader(udpPayload, &h); err != nil {
		return nil, err
	}
	if h.Version != 0 {
		return nil, ErrVersion
	}
	if h.Protocol != ProtoTEB {
		return nil, ErrProtocol
	}
	inner := udpPayload[h.Len():]
	if len(inner) < EthHeaderLen {
		return nil, ErrInnerTruncated
	}
	md.VNI = h.VNI
	md.Flags = 0
	if h.OAM {
		md.Flags |= FlagOAM
	}
	if h.Critical {
		md.Flags |= FlagCritical
	}
	md.Options = h.Options
	return inner, nil
}
