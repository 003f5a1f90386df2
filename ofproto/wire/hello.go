package wire

import (
	"fmt"
	"math/bits"
	"strings"
)

// OFPHET_VERSIONBITMAP is the hello element carrying supported versions.
const OFPHET_VERSIONBITMAP uint16 = 1

// HelloElement is one ofp_hello_elem_header plus its payload (without the
// padding to 8 bytes, which Encode restores).
type HelloElement struct {
	Type uint16
	Data []byte
}

// Hello is OFPT_HELLO. OpenFlow 1.0 peers usually send no elements.
type Hello struct {
	Elements []HelloElement
	// Malformed is set by the decoder when an element is truncated or has
	// a bad length; OVS then still negotiates using the header version.
	Malformed bool
	// Trailing holds undecodable bytes so that re-encoding is exact.
	Trailing []byte
}

// VersionBitmap returns a version bitmap (bit N set = version N supported)
// for a set of versions.
func VersionBitmap(versions ...uint8) uint32 {
	var m uint32
	for _, v := range versions {
		if v < 32 {
			m |= 1 << v
		}
	}
	return m
}

// NewHello returns the hello OVS sends for the allowed version bitmap: header
// version is the highest allowed one (see HelloVersion) and a version bitmap
// element is present unless the bitmap is "1 through N", which the header
// version alone expresses.
func NewHello(allowed uint32) *Hello {
	h := &Hello{}
	if !isContiguousFrom1(allowed) {
		h.Elements = []HelloElement{{Type: OFPHET_VERSIONBITMAP, Data: put32(nil, allowed)}}
	}
	return h
}

// HelloVersion is the header version to put on our hello: the highest bit of
// the allowed bitmap.
func HelloVersion(allowed uint32) uint8 {
	if allowed == 0 {
		return 0
	}
	return uint8(31 - bits.LeadingZeros32(allowed))
}

func isContiguousFrom1(m uint32) bool {
	x := (m >> 1) + 1
	return x&(x-1) == 0
}

// PeerVersions returns the versions the peer's hello allows, following
// ofputil_decode_hello(): without a usable version bitmap element the
// allowed set is every version from 0x01 up to the header version. ok is
// false when the hello had unknown or malformed content (OVS logs and still
// uses what it decoded).
func (m *Hello) PeerVersions(headerVersion uint8) (allowed uint32, ok bool) {
	if headerVersion < 32 {
		allowed = ((uint32(1) << headerVersion) - 1) << 1
	}
	ok = !m.Malformed && len(m.Trailing) == 0
	for _, e := range m.Elements {
		if e.Type != OFPHET_VERSIONBITMAP || len(e.Data) == 0 || len(e.Data)%4 != 0 {
			ok = false
			continue
		}
		v := be32(e.Data) &^ 1 // there is no version 0
		if v == 0 {
			ok = false
			continue
		}
		allowed = v
	}
	return allowed, ok
}

// Negotiate returns the version to use given our allowed bitmap and the
// peer's hello (header version plus body), exactly like OVS's vconn: the
// highest common version. When there is none, ok is false and version is
// the peer's highest version, which is the version to send the
// OFPHFC_INCOMPATIBLE error in (see IncompatibleHelloError).
func Negotiate(ours uint32, peerHeaderVersion uint8, peer *Hello) (version uint8, ok bool) {
	theirs, _ := peer.PeerVersions(peerHeaderVersion)
	common := ours & theirs
	if common == 0 {
		return HelloVersion(theirs), false
	}
	return HelloVersion(common), true
}

// IncompatibleHelloError builds the OFPHFC_INCOMPATIBLE error OVS sends when
// negotiation fails; its data is OVS's ASCII explanation.
func IncompatibleHelloError(ours, theirs uint32) *ErrorMsg {
	s := fmt.Sprintf("We support %s, you support %s, no common versions.", versionBitmapString(ours), versionBitmapString(theirs))
	return &ErrorMsg{Type: OFPET_HELLO_FAILED, Code: 0, Data: []byte(s)}
}

func versionBitmapString(m uint32) string {
	switch {
	case m == 0:
		return "no versions"
	case m&(m-1) == 0:
		return fmt.Sprintf("version 0x%02x", HelloVersion(m))
	case isContiguousFrom1(m):
		return fmt.Sprintf("version 0x%02x and earlier", HelloVersion(m))
	}
	var parts []string
	for v := 0; v < 32; v++ {
		if m&(1<<v) != 0 {
			parts = append(parts, fmt.Sprintf("0x%02x", v))
		}
	}
	return "versions " + strings.Join(parts, ", ")
}

func (m *Hello) MessageType(version uint8) uint8 { return OFPT_HELLO }

func (m *Hello) EncodeBody(version uint8, b []byte) ([]byte, error) {
	for _, e := range m.Elements {
		start := len(b)
		b = put16(b, e.Type)
		b = put16(b, uint16(4+len(e.Data)))
		b = append(b, e.Data...)
		b = pad8(b, start)
	}
	return append(b, m.Trailing...), nil
}

func decodeHello(body []byte) *Hello {
	m := &Hello{}
	for len(body) > 0 {
		if len(body) < 4 {
			m.Malformed, m.Trailing = true, body
			break
		}
		n := int(be16(body[2:]))
		padded := (n + 7) &^ 7
		if n < 4 || padded > len(body) {
			m.Malformed, m.Trailing = true, body
			break
		}
		m.Elements = append(m.Elements, HelloElement{Type: be16(body), Data: body[4:n]})
		body = body[padded:]
	}
	return m
}
