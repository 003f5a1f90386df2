package wire

import "fmt"

// Bundle control types and flags.
const (
	OFPBCT_OPEN_REQUEST    uint16 = 0
	OFPBCT_OPEN_REPLY      uint16 = 1
	OFPBCT_CLOSE_REQUEST   uint16 = 2
	OFPBCT_CLOSE_REPLY     uint16 = 3
	OFPBCT_COMMIT_REQUEST  uint16 = 4
	OFPBCT_COMMIT_REPLY    uint16 = 5
	OFPBCT_DISCARD_REQUEST uint16 = 6
	OFPBCT_DISCARD_REPLY   uint16 = 7

	OFPBF_ATOMIC  uint16 = 1 << 0
	OFPBF_ORDERED uint16 = 1 << 1
)

// BundleControl is OFPT_BUNDLE_CONTROL (1.5) or, with ONF set,
// ONFT_BUNDLE_CONTROL (experimenter 2300 in 1.3).
type BundleControl struct {
	ONF      bool
	BundleID uint32
	Type     uint16
	Flags    uint16
	Props    []Property
}

func (m *BundleControl) MessageType(uint8) uint8 {
	if m.ONF {
		return OFPT_EXPERIMENTER
	}
	return OFPT_BUNDLE_CONTROL
}

func (m *BundleControl) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	if m.ONF {
		b = put32(put32(b, ONF_VENDOR_ID), ONFT_BUNDLE_CONTROL)
	}
	b = put16(put16(put32(b, m.BundleID), m.Type), m.Flags)
	return appendProps(b, m.Props)
}

func decodeBundleControl(v uint8, body []byte, onf bool) (*BundleControl, error) {
	if len(body) < 8 {
		return nil, errf(v, OFPBRC_BAD_LEN, "bundle control truncated")
	}
	props, err := decodeProps(v, body[8:])
	if err != nil {
		return nil, err
	}
	return &BundleControl{ONF: onf, BundleID: be32(body), Type: be16(body[4:]), Flags: be16(body[6:]), Props: props}, nil
}

// BundleAdd is OFPT_BUNDLE_ADD_MESSAGE (1.5) or ONFT_BUNDLE_ADD_MESSAGE
// (2301, 1.3). Inner is the wrapped message decoded in the outer version
// (its header is InnerHeader); Trailing keeps the bytes after the inner
// message (padding and properties) for exact re-encoding.
type BundleAdd struct {
	ONF         bool
	BundleID    uint32
	Flags       uint16
	InnerHeader Header
	Inner       Message
	Trailing    []byte
}

func (m *BundleAdd) MessageType(uint8) uint8 {
	if m.ONF {
		return OFPT_EXPERIMENTER
	}
	return OFPT_BUNDLE_ADD_MESSAGE
}

func (m *BundleAdd) EncodeBody(v uint8, b []byte) ([]byte, error) {
	if m.ONF {
		b = put32(put32(b, ONF_VENDOR_ID), ONFT_BUNDLE_ADD_MESSAGE)
	}
	b = put16(zeros(put32(b, m.BundleID), 2), m.Flags)
	b, err := EncodeMessage(b, v, m.InnerHeader.Xid, m.Inner)
	if err != nil {
		return b, err
	}
	return append(b, m.Trailing...), nil
}

func (d *Decoder) decodeBundleAdd(body []byte, onf bool) (*BundleAdd, error) {
	v := d.version
	if len(body) < 8+HeaderLen {
		return nil, errf(v, OFPBFC_MSG_BAD_LEN, "bundle add truncated")
	}
	h, inner, rest, err := SplitMessage(body[8:])
	if err != nil {
		return nil, errf(v, OFPBFC_MSG_BAD_LEN, "inner message: %v", err)
	}
	if h.Version != v {
		return nil, errf(v, OFPBFC_BAD_VERSION, "inner version %#x differs from outer %#x", h.Version, v)
	}
	im, err := d.DecodeMessage(h, inner)
	if err != nil {
		return nil, fmt.Errorf("bundled message: %w", err)
	}
	// Bundles are the way to send many flow-mods: keep their wrappers in
	// the decoder's memory too.
	m := newIn(d.bundleAddArena())
	*m = BundleAdd{ONF: onf, BundleID: be32(body), Flags: be16(body[6:]), InnerHeader: h, Inner: im, Trailing: rest}
	return m, nil
}

func (d *Decoder) bundleAddArena() *arena[BundleAdd] {
	if d.pooled {
		return &d.bundleAdds
	}
	return nil
}
