package ofpact

// check_pkt_larger(N)->DST[bit]: set a 1-bit destination to whether the
// packet is longer than N bytes (NXAST_CHECK_PKT_LARGER). ofproto/wire
// only checks its type and length (wire.ActionRaw); its body is read and
// written here:
//
//	type, len=24, vendor, subtype=49 (10 bytes), pkt_len (2), offset (2),
//	dst as an NXM/OXM header (4 or 8), zero padding to 24.

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

const checkPktLargerLen = 24

func init() {
	keywords(parseCheckPktLarger, "check_pkt_larger")
	register(Def[*flowtable.CheckPktLarger]{
		Format: func(b *strings.Builder, a *flowtable.CheckPktLarger, o *ofptext.PrintOptions) {
			fmt.Fprintf(b, "check_pkt_larger(%d)->%s", a.Len, ofptext.SubfieldString(a.Dst))
		},
		Encode: encodeCheckPktLarger,
		Check: func(c Checker, a *flowtable.CheckPktLarger) error {
			return checkDestination(c, "check_pkt_larger", a.Dst)
		},
	})
	fromRaw(wire.NX_VENDOR_ID, wire.NXAST_CHECK_PKT_LARGER, decodeCheckPktLarger)
}

// parseCheckPktLarger reads "N)->DST" (the scanner keeps ")->DST" in the
// value, as OVS's key-value parser does).
func parseCheckPktLarger(p Parser, e ofptext.KV) (flowtable.Action, error) {
	ns, ds, ok := strings.Cut(e.Value, "->")
	if !ok {
		return nil, bad(e, "%q: missing `->'", e.Value)
	}
	dst, err := ofptext.ParseSubfield(ds, p.TLV)
	if err != nil {
		return nil, wrap(e, err)
	}
	if dst.NBits != 1 {
		return nil, bad(e, "Only 1-bit destination field is allowed")
	}
	n, err := ofptext.ParseNum(strings.TrimSuffix(ns, ")"), 16)
	if err != nil {
		return nil, wrap(e, err)
	}
	return &flowtable.CheckPktLarger{Len: uint16(n), Dst: dst}, nil
}

func encodeCheckPktLarger(t Encoder, out []wire.Action, a *flowtable.CheckPktLarger) ([]wire.Action, error) {
	ref, err := t.nxRef(a.Dst.Field)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, checkPktLargerLen)
	b = wire.AppendNXHeader(b, wire.NXAST_CHECK_PKT_LARGER, checkPktLargerLen)
	b = binary.BigEndian.AppendUint16(b, a.Len)
	b = binary.BigEndian.AppendUint16(b, uint16(a.Dst.Ofs))
	b = ref.HeaderIn(t.version).Append(b)
	b = append(b, make([]byte, checkPktLargerLen-len(b))...)
	return append(out, &wire.ActionRaw{Vendor: wire.NX_VENDOR_ID, Code: wire.NXAST_CHECK_PKT_LARGER, Data: b}), nil
}

// decodeCheckPktLarger follows decode_NXAST_RAW_CHECK_PKT_LARGER: the
// header must name a known field, the rest be zero, and the destination
// bit be writable.
func decodeCheckPktLarger(t Decoder, a *wire.ActionRaw) (flowtable.Action, error) {
	d := a.Data
	if len(d) < 14 {
		return nil, t.err(wire.OFPBAC_BAD_LEN, "check_pkt_larger: %d bytes", len(d))
	}
	n, ofs := binary.BigEndian.Uint16(d[10:]), binary.BigEndian.Uint16(d[12:])
	ref, hl, err := wire.PullFieldRef(t.version, d[14:])
	if err != nil {
		return nil, err
	}
	for _, c := range d[14+hl:] {
		if c != 0 {
			return nil, t.err(wire.NXBRC_MUST_BE_ZERO, "check_pkt_larger: nonzero padding")
		}
	}
	if err := wire.CheckSubfield(t.version, ref, int(ofs), 1, true); err != nil {
		return nil, err
	}
	dst, err := t.fieldRange(ref, int(ofs), 1)
	if err != nil {
		return nil, err
	}
	if !dst.Field.Writable {
		return nil, ofpfield.Err(t.version, wire.OFPBAC_BAD_SET_ARGUMENT, "check_pkt_larger: %s is read-only", dst.Field.Name)
	}
	return &flowtable.CheckPktLarger{Len: n, Dst: dst}, nil
}
