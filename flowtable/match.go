package flowtable

import (
	"bytes"
	"fmt"
)

// Match is value+mask over the flow key: a packet matches when
// (key & Mask) == Value. Value is always stored already masked.
type Match struct {
	Value Key
	Mask  Key
}

// Set makes the match require field f to equal value under mask (nil mask:
// exact). value and mask are big-endian of width f.Bytes.
func (m *Match) Set(f *Field, value, mask []byte) {
	if mask == nil {
		mask = onesBytes(f)
	}
	var mk, vk Key
	f.SetValue(&mk, mask)
	f.SetValue(&vk, value)
	for i := f.Off; i < f.Off+f.Size; i++ {
		m.Mask[i] = m.Mask[i]&^f.slotByteMask(i) | mk[i]
		m.Value[i] = (m.Value[i]&^f.slotByteMask(i) | vk[i]) & m.Mask[i]
	}
}

// slotByteMask returns which bits of key byte i belong to f.
func (f *Field) slotByteMask(i int) byte {
	if f.Wide() {
		return 0xff
	}
	m := f.lowMask() << f.Shift
	return byte(m >> (8 * uint(f.Size-1-(i-f.Off))))
}

// SetUint64 makes the match require f == v exactly (fields up to 64 bits).
func (m *Match) SetUint64(f *Field, v uint64) {
	m.SetMaskedUint64(f, v, f.lowMask())
}

// SetMaskedUint64 makes the match require f&mask == v&mask.
func (m *Match) SetMaskedUint64(f *Field, v, mask uint64) {
	f.SetUint64(&m.Mask, mask)
	f.SetUint64(&m.Value, v&mask)
}

// Clear makes the match wildcard field f entirely.
func (m *Match) Clear(f *Field) {
	for i := f.Off; i < f.Off+f.Size; i++ {
		bm := f.slotByteMask(i)
		m.Mask[i] &^= bm
		m.Value[i] &^= bm
	}
}

// FieldValue returns the value and mask the match has for f.
func (m *Match) FieldValue(f *Field) (value, mask []byte) {
	return f.Value(&m.Value), f.Value(&m.Mask)
}

// Uint64 returns the value and mask of f (fields up to 64 bits).
func (m *Match) Uint64(f *Field) (value, mask uint64) {
	return f.Uint64(&m.Value), f.Uint64(&m.Mask)
}

// Has reports whether the match constrains any bit of f.
func (m *Match) Has(f *Field) bool {
	for i := f.Off; i < f.Off+f.Size; i++ {
		if m.Mask[i]&f.slotByteMask(i) != 0 {
			return true
		}
	}
	return false
}

// Matches reports whether key k matches.
func (m *Match) Matches(k *Key) bool {
	for i := 0; i < KeyWords; i++ {
		if k.Word(i)&m.Mask.Word(i) != m.Value.Word(i) {
			return false
		}
	}
	return true
}

// Equal reports whether two matches are identical.
func (m *Match) Equal(o *Match) bool {
	return m.Value == o.Value && m.Mask == o.Mask
}

// IsCatchAll reports whether the match wildcards everything.
func (m *Match) IsCatchAll() bool { return m.Mask.IsZero() }

// dlType returns the matched Ethernet type (0 when not matched exactly).
func (m *Match) dlType() uint16 {
	if m.Mask.EthType() != 0xffff {
		return 0
	}
	return m.Value.EthType()
}

func (m *Match) nwProto() (uint8, bool) {
	if m.Mask.NwProto() != 0xff {
		return 0, false
	}
	return m.Value.NwProto(), true
}

// PrereqOK reports whether the match satisfies prerequisite p.
func (m *Match) PrereqOK(p Prereq) bool {
	dl := m.dlType()
	isIP := dl == EthTypeIPv4 || dl == EthTypeIPv6
	proto, hasProto := m.nwProto()
	switch p {
	case PrereqNone, PrereqEthernet:
		return true
	case PrereqVLANVID:
		return m.Value.VlanTCI()&VlanCFI != 0
	case PrereqIPv4:
		return dl == EthTypeIPv4
	case PrereqIPv6:
		return dl == EthTypeIPv6
	case PrereqIPAny:
		return isIP
	case PrereqARP:
		return dl == EthTypeARP || dl == EthTypeRARP
	case PrereqMPLS:
		return dl == EthTypeMPLS || dl == 0x8848
	case PrereqTCP:
		return isIP && hasProto && proto == IPProtoTCP
	case PrereqUDP:
		return isIP && hasProto && proto == IPProtoUDP
	case PrereqSCTP:
		return isIP && hasProto && proto == IPProtoSCTP
	case PrereqL4:
		return isIP && hasProto && (proto == IPProtoTCP || proto == IPProtoUDP || proto == IPProtoSCTP)
	case PrereqICMPv4:
		return dl == EthTypeIPv4 && hasProto && proto == IPProtoICMP
	case PrereqICMPv6:
		return dl == EthTypeIPv6 && hasProto && proto == IPProtoICMPv6
	case PrereqND, PrereqNDSolicit, PrereqNDAdvert:
		if !(dl == EthTypeIPv6 && hasProto && proto == IPProtoICMPv6) {
			return false
		}
		t, tm := m.Uint64(FieldICMPv6Type)
		if tm != 0xff {
			return false
		}
		switch p {
		case PrereqNDSolicit:
			return t == 135
		case PrereqNDAdvert:
			return t == 136
		}
		return t == 135 || t == 136
	case PrereqCT:
		st := m.Value.CtState()
		mk := m.Mask.CtState()
		return st&(CtStateNew|CtStateEst|CtStateRel|CtStateRpl|CtStateSNAT|CtStateDNAT) != 0 ||
			(st&CtStateTrk != 0 && mk&CtStateInv != 0 && st&CtStateInv == 0)
	}
	return false
}

// matchFields are the fields checked for prerequisites, most specific
// aliases last so that the message names the field the user most likely
// wrote.
var prereqFields []*Field

func init() {
	for _, f := range Fields {
		if f.Prereq != PrereqNone && f.Prereq != PrereqEthernet && !f.IsTunMetadata() {
			prereqFields = append(prereqFields, f)
		}
	}
}

// CheckPrereqs returns an error naming the first matched field whose
// prerequisites the match does not satisfy (OVS: OFPBMC_BAD_PREREQ).
func (m *Match) CheckPrereqs() error {
	for _, f := range prereqFields {
		if !m.Has(f) {
			continue
		}
		// Aliases share storage (tp_src/udp_src/icmp_type, nw_src/arp_spa):
		// the match is fine if any field over the same bits is satisfied.
		if m.PrereqOK(f.Prereq) || m.aliasOK(f) {
			continue
		}
		return &PrereqError{Field: f}
	}
	return nil
}

func (m *Match) aliasOK(f *Field) bool {
	for _, g := range prereqFields {
		if g != f && g.Off == f.Off && m.PrereqOK(g.Prereq) {
			return true
		}
	}
	return false
}

// PrereqError says that a field was matched without its prerequisites.
type PrereqError struct{ Field *Field }

func (e *PrereqError) Error() string {
	return fmt.Sprintf("%s: prerequisites not met (needs %s)", e.Field.Name, e.Field.Prereq)
}

// Compare orders matches for a stable dump (by mask then value bytes).
func (m *Match) Compare(o *Match) int {
	if c := bytes.Compare(m.Mask[:], o.Mask[:]); c != 0 {
		return c
	}
	return bytes.Compare(m.Value[:], o.Value[:])
}
