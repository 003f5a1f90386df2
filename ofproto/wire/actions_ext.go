package wire

// Helpers for actions whose model translation lives outside this package
// (ofproto/ofpact) and that this package only validates by type and
// length (ActionRaw): their owner reads and writes the body itself.

// PullFieldRef reads the 4- or 8-byte field header at the start of b, as
// inside an action (nx_pull_header: truncated OFPBMC_BAD_LEN, unknown
// OFPBMC_BAD_FIELD, masked OFPBMC_BAD_MASK), and its length.
func PullFieldRef(version uint8, b []byte) (FieldRef, int, error) { return pullRef(version, b) }

// CheckSubfield checks bits ofs..ofs+nBits-1 of r as an action source or
// (dst) destination (mf_check_src / mf_check_dst).
func CheckSubfield(version uint8, r FieldRef, ofs, nBits int, dst bool) error {
	return checkSubfield(version, r, ofs, nBits, dst)
}

// HeaderIn is the header r travels with in version (its own when set).
func (r FieldRef) HeaderIn(version uint8) OXMHeader { return r.header(version) }

// AppendNXHeader starts a Nicira vendor action of total length n (a
// multiple of 8): type, length, vendor and subtype.
func AppendNXHeader(b []byte, subtype uint16, n int) []byte {
	b = put16(put16(b, OFPAT_EXPERIMENTER), uint16(n))
	return put16(put32(b, NX_VENDOR_ID), subtype)
}
