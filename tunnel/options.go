package tunnel

import (
	"encoding/binary"
	"fmt"

	"github.com/govs-project/govs/flowtable"
)

// tunMetadataOff is where the 256-byte tun_metadata area starts in a Key:
// it is the last part of the key (checked by TestTunMetadataArea against the
// offsets the TLV map hands out).
const tunMetadataOff = flowtable.KeySize - flowtable.TunMetadataSize

// optionSlot is one TLV mapping compiled for the packet path.
type optionSlot struct {
	class uint16
	typ   uint8
	len   uint8 // bytes, a multiple of 4
	off   int   // byte offset of tun_metadataN in the Key
	index int   // N
}

// OptionMap is a read-only snapshot of a bridge's TLV map (add-tlv-map)
// compiled for the packet path: FillKey and Encap look options up here
// without locks or allocation. Build a new one with NewOptionMap whenever the
// TLV map changes (Port.SetTLVMap does this for a port). A nil *OptionMap
// has no mappings.
type OptionMap struct {
	slots []optionSlot // ordered by tun_metadata index, the order OVS encodes options in
}

// NewOptionMap compiles the current mappings of tlv (nil: none).
func NewOptionMap(tlv *flowtable.TLVMap) (*OptionMap, error) {
	m := &OptionMap{}
	for _, tm := range tlv.Mappings() {
		f, err := tlv.Resolve(flowtable.FieldTunMetadataN[tm.Index])
		if err != nil {
			return nil, fmt.Errorf("tunnel: compile TLV map: %w", err)
		}
		if f.Off < tunMetadataOff || f.Off+f.Size > flowtable.KeySize || f.Size != int(tm.Len) {
			return nil, fmt.Errorf("tunnel: compile TLV map: %s at key bytes %d..%d is outside the tun_metadata area", f.Name, f.Off, f.Off+f.Size)
		}
		m.slots = append(m.slots, optionSlot{class: tm.Class, typ: tm.Type, len: tm.Len, off: f.Off, index: tm.Index})
	}
	return m, nil
}

// lookup returns the mapping of an option class/type, or nil.
func (m *OptionMap) lookup(class uint16, typ uint8) *optionSlot {
	if m == nil {
		return nil
	}
	for i := range m.slots {
		if s := &m.slots[i]; s.class == class && s.typ == typ {
			return s
		}
	}
	return nil
}

// FillKey writes the tunnel metadata of a received frame into the flow key,
// as OVS does on tunnel receive: tun_id (the VNI), tun_src and tun_dst or,
// over an IPv6 underlay, tun_ipv6_src and tun_ipv6_dst (the other pair 0),
// tun_flags (the oam bit) and, for every option the TLV map knows, its body
// into tun_metadataN. The whole tun_metadata area is cleared first, so a
// mapped option that was not received reads as 0.
//
// Like OVS's tun_metadata_from_geneve_udpif, a mapped option whose length
// differs from its mapping is an error, and so is an unknown option whose
// type has the critical bit (RFC 8926 §3.5.1: the packet must be dropped);
// unknown non-critical options are ignored. On error the key's tunnel
// fields are partly written; the caller drops the packet.
func FillKey(md *Metadata, k *flowtable.Key, om *OptionMap) error {
	binary.BigEndian.PutUint64(k[flowtable.FieldTunID.Off:], uint64(md.VNI))
	binary.BigEndian.PutUint32(k[flowtable.FieldTunSrc.Off:], md.Src)
	binary.BigEndian.PutUint32(k[flowtable.FieldTunDst.Off:], md.Dst)
	if md.IPv6 {
		copy(k[flowtable.FieldTunIPv6Src.Off:], md.Src6[:])
		copy(k[flowtable.FieldTunIPv6Dst.Off:], md.Dst6[:])
	} else {
		clear(k[flowtable.FieldTunIPv6Src.Off : flowtable.FieldTunIPv6Src.Off+16])
		clear(k[flowtable.FieldTunIPv6Dst.Off : flowtable.FieldTunIPv6Dst.Off+16])
	}
	var tf uint64
	if md.Flags&FlagOAM != 0 {
		tf = TunFlagOAM
	}
	flowtable.FieldTunFlags.SetUint64(k, tf)
	clear(k[tunMetadataOff:])
	it := md.Iter()
	for {
		o, ok := it.Next()
		if !ok {
			return nil
		}
		s := om.lookup(o.Class, o.Type)
		if s == nil {
			if o.Critical() {
				return ErrUnknownCritical
			}
			continue
		}
		if len(o.Data) != int(s.len) {
			return ErrOptionLenMismatch
		}
		copy(k[s.off:s.off+int(s.len)], o.Data)
	}
}

// Encap appends to dst the UDP payload of the Geneve packet that carries
// inner (an Ethernet frame) for flow key k, and returns it together with
// the UDP source port to send it from.
//
// The header carries VNI = the low 24 bits of tun_id, the O bit from the
// oam bit of tun_flags, protocol TEB, and one option per TLV mapping whose
// tun_metadataN value is not all zero, in tun_metadata index order; the C
// bit is set when one of them has a critical type.
//
// Presence: OVS keeps a bitmap of the tun_metadataN fields that were
// received or set by an action, so it can send an all-zero option. The
// govs key has no such bitmap, so "present" means "nonzero": a flow that
// loads 0 into tun_metadataN sends no option, and a received all-zero option
// is not forwarded by a tunnel-to-tunnel flow. Antrea only sends nonzero
// values (tun_metadata0[28..31] carries the traffic-control mark).
//
// Encap does not allocate when dst has room for the result.
func Encap(dst, inner []byte, k *flowtable.Key, om *OptionMap) ([]byte, uint16, error) {
	if len(inner) < EthHeaderLen {
		return dst, 0, ErrInnerTruncated
	}
	optLen, crit, err := om.encodedLen(k)
	if err != nil {
		return dst, 0, err
	}
	start := len(dst)
	dst = grow(dst, HeaderLen+optLen+len(inner))
	b := dst[start:]
	b[0] = byte(optLen / 4) // version 0
	b[1] = 0
	if binary.BigEndian.Uint16(k[flowtable.FieldTunFlags.Off:])&TunFlagOAM != 0 {
		b[1] |= flagOAM
	}
	if crit {
		b[1] |= flagCritical
	}
	binary.BigEndian.PutUint16(b[2:], ProtoTEB)
	binary.BigEndian.PutUint32(b[4:], uint32(k.TunID())<<8) // reserved byte 7 = 0
	p := HeaderLen
	if om != nil {
		for i := range om.slots {
			s := &om.slots[i]
			v := k[s.off : s.off+int(s.len)]
			if allZero(v) {
				continue
			}
			binary.BigEndian.PutUint16(b[p:], s.class)
			b[p+2] = s.typ
			b[p+3] = s.len / 4 // reserved bits 0
			copy(b[p+OptionHeaderLen:], v)
			p += OptionHeaderLen + int(s.len)
		}
	}
	copy(b[p:], inner)
	return dst, SourcePort(inner), nil
}

// encodedLen returns the size of the options Encap writes for k and
// whether one of them is critical.
func (m *OptionMap) encodedLen(k *flowtable.Key) (n int, crit bool, err error) {
	if m == nil {
		return 0, false, nil
	}
	for i := range m.slots {
		s := &m.slots[i]
		if allZero(k[s.off : s.off+int(s.len)]) {
			continue
		}
		n += OptionHeaderLen + int(s.len)
		crit = crit || s.typ&OptionTypeCritical != 0
	}
	if n > MaxOptionsLen {
		return 0, false, ErrOptionsTooLong
	}
	return n, crit, nil
}

// OptionsLen returns the size of the options Encap would write for k (for
// MTU checks before encapsulating).
func (m *OptionMap) OptionsLen(k *flowtable.Key) (int, error) {
	n, _, err := m.encodedLen(k)
	return n, err
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.NativeEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// grow extends b by n bytes, reallocating only when its capacity is short.
func grow(b []byte, n int) []byte {
	if l := len(b) + n; l <= cap(b) {
		return b[:l]
	}
	return append(b, make([]byte, n)...)
}

// Check applies FillKey's option rules to md without a key: it fails for a
// mapped option of the wrong length and for an unknown critical option.
// Ports use it to drop such packets (and count them) on receive.
func (m *OptionMap) Check(md *Metadata) error {
	it := md.Iter()
	for {
		o, ok := it.Next()
		if !ok {
			return nil
		}
		s := m.lookup(o.Class, o.Type)
		switch {
		case s == nil && o.Critical():
			return ErrUnknownCritical
		case s != nil && len(o.Data) != int(s.len):
			return ErrOptionLenMismatch
		}
	}
}
