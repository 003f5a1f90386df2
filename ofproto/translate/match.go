package translate

import (
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/wire"
)

// MatchFromWire builds a model match from NXM/OXM fields (as decoded from a
// flow-mod, flow stats request, packet-in ...). Fields the model does not
// know are OFPBMC_BAD_FIELD, an unmapped tun_metadataN is
// NXFMFC_INVALID_TLV_FIELD, and a field whose prerequisites the match does
// not satisfy is OFPBMC_BAD_PREREQ. The NXM_NX_COOKIE pseudo-field is not
// a match field: it is OFPBMC_BAD_FIELD here (FlowModFromWire handles it).
// Errors are encoded for OpenFlow 1.3; see MatchFromWireVersion.
func MatchFromWire(fields []wire.MatchField, tlv *flowtable.TLVMap) (flowtable.Match, error) {
	var m flowtable.Match
	_, _, err := matchFromWire(&m, wire.OFP13, fields, tlv, false)
	return m, err
}

// MatchFromWireVersion is MatchFromWire with errors encoded for version.
func MatchFromWireVersion(version uint8, fields []wire.MatchField, tlv *flowtable.TLVMap) (flowtable.Match, error) {
	var m flowtable.Match
	_, _, err := matchFromWire(&m, version, fields, tlv, false)
	return m, err
}

// matchFromWire fills m and returns the NXM_NX_COOKIE pseudo-field value and
// mask when allowCookie is set.
func matchFromWire(m *flowtable.Match, version uint8, fields []wire.MatchField, tlv *flowtable.TLVMap, allowCookie bool) (cookie, cookieMask uint64, err error) {
	// Fields with prerequisites, checked once the whole match is known
	// (the wire decoder has already checked them in strict TLV order for
	// decoded messages; this also covers hand-built field lists).
	var withPrereq [16]*flowtable.Field
	np := 0
	for i := range fields {
		mf := &fields[i]
		w := mf.Field
		if w != nil && w.Name == "cookie" && w.Index() < 0 {
			if !allowCookie {
				return 0, 0, ofpfield.Err(version, wire.OFPBMC_BAD_FIELD, "NXM_NX_COOKIE is only allowed in NXT_FLOW_MOD and NX stats requests")
			}
			cookie, cookieMask = ofpfield.BytesU64(mf.Value), ^uint64(0)
			if mf.Mask != nil {
				cookieMask = ofpfield.BytesU64(mf.Mask)
			}
			continue
		}
		f, err := setMatchField(m, version, mf, tlv)
		if err != nil {
			return 0, 0, err
		}
		if f.Prereq > flowtable.PrereqEthernet {
			if np == len(withPrereq) {
				// More than the stack array holds: check everything.
				if err := m.CheckPrereqs(); err != nil {
					return 0, 0, ofpfield.Err(version, wire.OFPBMC_BAD_PREREQ, "%v", err)
				}
				np = 0
			}
			withPrereq[np] = f
			np++
		}
	}
	for _, f := range withPrereq[:np] {
		if !m.PrereqOK(f.Prereq) {
			return 0, 0, ofpfield.Err(version, wire.OFPBMC_BAD_PREREQ, "%s: prerequisites not met (needs %s)", f.Name, f.Prereq)
		}
	}
	return cookie, cookieMask, nil
}

// setMatchField adds one TLV to m and returns the model field it set.
func setMatchField(m *flowtable.Match, version uint8, mf *wire.MatchField, tlv *flowtable.TLVMap) (*flowtable.Field, error) {
	w := mf.Field
	switch w {
	case ofpfield.WireInPortOX, ofpfield.WireActset:
		// 32-bit OpenFlow 1.1+ port numbers; the model keeps OVS's 16-bit
		// ones (in_port_oxm and in_port are the same key bits).
		if len(mf.Value) != 4 {
			return nil, ofpfield.Err(version, wire.OFPBMC_BAD_LEN, "%s: %d-byte value", w.Name, len(mf.Value))
		}
		p, ok := ofpfield.PortFromOFP11(uint32(ofpfield.BytesU64(mf.Value)))
		if !ok || (mf.Mask != nil && ofpfield.BytesU64(mf.Mask) != 0xffffffff) {
			return nil, ofpfield.Err(version, wire.OFPBMC_BAD_VALUE, "%s: port %#x out of range", w.Name, ofpfield.BytesU64(mf.Value))
		}
		f := flowtable.FieldInPort
		if w == ofpfield.WireActset {
			f = flowtable.FieldActsetOutput
		}
		m.SetMaskedUint64(f, uint64(p), ofpfield.LowMask(f.Bits))
		return f, nil
	case ofpfield.WireNwTos:
		// NXM_OF_IP_TOS matches the DSCP bits only (MFF_IP_DSCP).
		if len(mf.Value) != 1 {
			return nil, ofpfield.Err(version, wire.OFPBMC_BAD_LEN, "nw_tos: %d-byte value", len(mf.Value))
		}
		m.SetMaskedUint64(flowtable.FieldNwTos, uint64(mf.Value[0]), 0xfc)
		return flowtable.FieldNwTos, nil
	}
	f, err := ofpfield.ModelField(version, w, tlv, false)
	if err != nil {
		return nil, err
	}
	value, mask := mf.Value, mf.Mask
	if mask != nil && len(mask) != len(value) {
		return nil, ofpfield.Err(version, wire.OFPBMC_BAD_LEN, "%s: mask length %d differs from value length %d", f.Name, len(mask), len(value))
	}
	if f.IsTunMetadata() {
		return f, setTunMetadata(m, version, f, value, mask)
	}
	if len(value) != f.Bytes {
		return nil, ofpfield.Err(version, wire.OFPBMC_BAD_LEN, "%s: %d-byte value, want %d", f.Name, len(value), f.Bytes)
	}
	if !f.Wide() {
		mk := ofpfield.LowMask(f.Bits)
		if mask != nil {
			mk &= ofpfield.BytesU64(mask)
		}
		m.SetMaskedUint64(f, ofpfield.BytesU64(value), mk)
		return f, nil
	}
	if mask == nil {
		mask = ofpfield.Ones[:f.Bytes]
	}
	m.Set(f, value, mask)
	return f, nil
}

// setTunMetadata matches a mapped Geneve option. OVS lets the TLV be shorter
// than the mapped option length (ovs-ofctl, which does not know the map,
// sends the minimal length); the value is right-aligned in the option.
func setTunMetadata(m *flowtable.Match, version uint8, f *flowtable.Field, value, mask []byte) error {
	n := len(value)
	if n > f.Bytes {
		for _, c := range value[:n-f.Bytes] {
			if c != 0 {
				return ofpfield.Err(version, wire.OFPBMC_BAD_VALUE, "%s: %d-byte value exceeds the %d-byte option", f.Name, n, f.Bytes)
			}
		}
		value = value[n-f.Bytes:]
		if mask != nil {
			mask = mask[n-f.Bytes:]
		}
		n = f.Bytes
	}
	var vb, mb [flowtable.TunMetadataSize]byte
	copy(vb[f.Bytes-n:f.Bytes], value)
	if mask == nil {
		copy(mb[f.Bytes-n:f.Bytes], ofpfield.Ones[:n])
	} else {
		copy(mb[f.Bytes-n:f.Bytes], mask)
	}
	m.Set(f, vb[:f.Bytes], mb[:f.Bytes])
	return nil
}

// MatchToWire encodes m as NXM/OXM fields the way OVS's nx_put_raw does for
// version: OpenFlow 1.0 (NXM) uses NXM_OF_/NXM_NX_ codes, 1.3 and 1.5 the
// OXM_OF_ code of basic fields and NXM_NX_ for extensions; fields come in
// OVS's order (prerequisites first); in 1.5 registers travel as xregN.
func MatchToWire(m *flowtable.Match, version uint8, tlv *flowtable.TLVMap) ([]wire.MatchField, error) {
	e := matchEncoder{m: m, version: version, oxm: version != wire.OFP10}
	e.out = make([]wire.MatchField, 0, 16)
	e.buf = make([]byte, 0, 256)
	if err := e.encode(tlv); err != nil {
		return nil, err
	}
	return e.out, nil
}

type matchEncoder struct {
	m       *flowtable.Match
	version uint8
	oxm     bool
	out     []wire.MatchField
	buf     []byte
	err     error
}

// bytes returns n bytes of the encoder's buffer (a new chunk when full, so
// earlier slices stay valid).
func (e *matchEncoder) bytes(n int) []byte {
	if len(e.buf)+n > cap(e.buf) {
		e.buf = make([]byte, 0, max(256, n))
	}
	s := e.buf[len(e.buf) : len(e.buf)+n : len(e.buf)+n]
	e.buf = e.buf[:len(e.buf)+n]
	return s
}

// putRaw appends a field with explicit value/mask (nil mask: exact).
func (e *matchEncoder) putRaw(name string, value, mask []byte) {
	w := wire.FieldByName(name)
	if w == nil {
		e.err = ofpfield.Err(e.version, wire.OFPBMC_BAD_FIELD, "no wire field %s", name)
		return
	}
	e.out = append(e.out, wire.MatchField{Field: w, Value: value, Mask: mask})
}

// putUint appends a fixed-width field from integers.
func (e *matchEncoder) putUint(name string, width int, value, mask uint64, exact bool) {
	v := e.bytes(width)
	ofpfield.PutU64(v, value&mask)
	var mk []byte
	if !exact {
		mk = e.bytes(width)
		ofpfield.PutU64(mk, mask)
	}
	e.putRaw(name, v, mk)
}

// put appends model field f if the match constrains it: unmasked when all
// its bits are matched, masked otherwise (nxm_put_*m).
func (e *matchEncoder) put(f *flowtable.Field) {
	if !e.m.Has(f) {
		return
	}
	w, err := ofpfield.WireField(e.version, f)
	if err != nil {
		e.err = err
		return
	}
	if !f.Wide() {
		v, mk := e.m.Uint64(f)
		full := ofpfield.LowMask(f.Bits)
		e.putUintField(w, f.Bytes, v, mk, mk == full)
		return
	}
	v := e.bytes(f.Bytes)
	mk := e.bytes(f.Bytes)
	copy(v, f.Value(&e.m.Value))
	copy(mk, f.Value(&e.m.Mask))
	full := true
	for _, c := range mk {
		if c != 0xff {
			full = false
		}
	}
	if full {
		mk = nil
	}
	e.out = append(e.out, wire.MatchField{Field: w, Value: v, Mask: mk})
}

func (e *matchEncoder) putUintField(w *wire.FieldInfo, width int, value, mask uint64, exact bool) {
	v := e.bytes(width)
	ofpfield.PutU64(v, value&mask)
	var mk []byte
	if !exact {
		mk = e.bytes(width)
		ofpfield.PutU64(mk, mask)
	}
	e.out = append(e.out, wire.MatchField{Field: w, Value: v, Mask: mk})
}

func (e *matchEncoder) encode(tlv *flowtable.TLVMap) error {
	m := e.m
	e.put(flowtable.FieldDpHash)
	e.put(flowtable.FieldRecircID)
	e.put(flowtable.FieldConjID)
	if m.Has(flowtable.FieldInPort) {
		p, _ := m.Uint64(flowtable.FieldInPort)
		if e.oxm {
			e.putUint("in_port_oxm", 4, uint64(ofpfield.PortToOFP11(uint32(p))), 0xffffffff, true)
		} else {
			e.putUint("in_port", 2, p, 0xffff, true)
		}
	}
	if m.Has(flowtable.FieldActsetOutput) {
		p, _ := m.Uint64(flowtable.FieldActsetOutput)
		e.putUint("actset_output", 4, uint64(ofpfield.PortToOFP11(uint32(p))), 0xffffffff, true)
	}
	e.put(flowtable.FieldEthSrc)
	e.put(flowtable.FieldEthDst)
	e.put(flowtable.FieldEthType)

	tci, tciMask := m.Uint64(flowtable.FieldVlanTCI)
	if e.oxm {
		const vidCFI = flowtable.VlanVIDMask | flowtable.VlanCFI
		vid, vmask := tci&vidCFI, tciMask&vidCFI
		if vmask != 0 {
			e.putUint("vlan_vid", 2, vid, vmask, vmask == vidCFI)
		}
		if vid != 0 && tciMask&flowtable.VlanPCPMask != 0 {
			e.putUint("vlan_pcp", 1, tci>>13, 0x7, true)
		}
	} else if tciMask != 0 {
		e.putUint("vlan_tci", 2, tci, tciMask, tciMask == 0xffff)
	}

	dl, dlMask := m.Uint64(flowtable.FieldEthType)
	if dlMask == 0xffff {
		switch dl {
		case flowtable.EthTypeIPv4, flowtable.EthTypeIPv6:
			e.putIP(dl)
		case flowtable.EthTypeMPLS, flowtable.EthTypeMPLSMcast:
			// nx_put_raw's order.
			e.put(flowtable.FieldMPLSTC)
			e.put(flowtable.FieldMPLSBOS)
			e.put(flowtable.FieldMPLSTTL)
			e.put(flowtable.FieldMPLSLabel)
		case flowtable.EthTypeARP, flowtable.EthTypeRARP:
			e.put(flowtable.FieldArpOp)
			e.put(flowtable.FieldArpSpa)
			e.put(flowtable.FieldArpTpa)
			e.put(flowtable.FieldArpSha)
			e.put(flowtable.FieldArpTha)
		}
	}

	e.put(flowtable.FieldTunID)
	e.put(flowtable.FieldTunFlags)
	e.put(flowtable.FieldTunSrc)
	e.put(flowtable.FieldTunDst)
	e.put(flowtable.FieldTunIPv6Src)
	e.put(flowtable.FieldTunIPv6Dst)
	for i := 0; i < 64; i++ {
		if f := tlv.Field(i); f != nil {
			e.put(f)
		}
	}

	if e.version < wire.OFP15 {
		for _, f := range flowtable.FieldReg {
			e.put(f)
		}
	} else {
		for _, f := range flowtable.FieldXReg {
			e.put(f)
		}
	}
	e.put(flowtable.FieldPktMark)
	e.put(flowtable.FieldCtState)
	e.put(flowtable.FieldCtZone)
	e.put(flowtable.FieldCtMark)
	e.put(flowtable.FieldCtLabel)
	e.put(flowtable.FieldCtNwSrc)
	e.put(flowtable.FieldCtIPv6Src)
	e.put(flowtable.FieldCtNwDst)
	e.put(flowtable.FieldCtIPv6Dst)
	if v, _ := m.Uint64(flowtable.FieldCtNwProto); v != 0 {
		e.put(flowtable.FieldCtNwProto)
		e.put(flowtable.FieldCtTpSrc)
		e.put(flowtable.FieldCtTpDst)
	}
	e.put(flowtable.FieldMetadata)
	return e.err
}

// putIP is OVS's nxm_put_ip.
func (e *matchEncoder) putIP(dl uint64) {
	m := e.m
	if dl == flowtable.EthTypeIPv4 {
		e.put(flowtable.FieldIPv4Src)
		e.put(flowtable.FieldIPv4Dst)
	} else {
		e.put(flowtable.FieldIPv6Src)
		e.put(flowtable.FieldIPv6Dst)
	}
	e.put(flowtable.FieldIPFrag)
	tos, tosMask := m.Uint64(flowtable.FieldNwTos)
	if tosMask&0xfc != 0 {
		if e.oxm {
			e.putUint("ip_dscp", 1, tos>>2, 0x3f, true)
		} else {
			e.putUint("nw_tos", 1, tos&0xfc, 0xff, true)
		}
	}
	if tosMask&0x03 != 0 {
		e.putUint("nw_ecn", 1, tos&0x03, 0xff, true)
	}
	e.put(flowtable.FieldIPTTL)
	if dl == flowtable.EthTypeIPv6 {
		e.put(flowtable.FieldIPv6Label)
		e.put(flowtable.FieldIPv6ExtHdr)
	}
	proto, protoMask := m.Uint64(flowtable.FieldIPProto)
	if protoMask == 0 {
		return
	}
	e.putUint("nw_proto", 1, proto, 0xff, true)
	switch {
	case proto == flowtable.IPProtoTCP:
		e.put(flowtable.FieldTCPSrc)
		e.put(flowtable.FieldTCPDst)
		e.put(flowtable.FieldTCPFlags)
	case proto == flowtable.IPProtoUDP:
		e.put(flowtable.FieldUDPSrc)
		e.put(flowtable.FieldUDPDst)
	case proto == flowtable.IPProtoSCTP:
		e.put(flowtable.FieldSCTPSrc)
		e.put(flowtable.FieldSCTPDst)
	case proto == flowtable.IPProtoICMP && dl == flowtable.EthTypeIPv4:
		e.put(flowtable.FieldICMPType)
		e.put(flowtable.FieldICMPCode)
	case proto == flowtable.IPProtoICMPv6 && dl == flowtable.EthTypeIPv6:
		e.put(flowtable.FieldICMPv6Type)
		e.put(flowtable.FieldICMPv6Code)
		t, tm := m.Uint64(flowtable.FieldICMPv6Type)
		if tm == 0xff && (t == 135 || t == 136) {
			e.put(flowtable.FieldNdTarget)
			if t == 135 {
				e.put(flowtable.FieldNdSll)
			} else {
				e.put(flowtable.FieldNdTll)
			}
		}
	}
}

// MatchFromMatch10 converts an OpenFlow 1.0 ofp_match to a model match like
// ofputil_match_from_ofp10_match followed by ofputil_normalize_match:
// fields whose prerequisites the match does not establish are dropped.
func MatchFromMatch10(m10 *wire.Match10) flowtable.Match {
	var m flowtable.Match
	wc := m10.Wildcards
	if wc&wire.OFPFW10_IN_PORT == 0 {
		m.SetUint64(flowtable.FieldInPort, uint64(m10.InPort))
	}
	var tci, tciMask uint64
	if wc&wire.OFPFW10_DL_VLAN == 0 && m10.DlVlan == 0xffff {
		// OFP10_VLAN_NONE: only packets without a VLAN header.
		tciMask = 0xffff
	} else {
		if wc&wire.OFPFW10_DL_VLAN == 0 {
			tci |= uint64(m10.DlVlan&flowtable.VlanVIDMask) | flowtable.VlanCFI
			tciMask |= flowtable.VlanVIDMask | flowtable.VlanCFI
		}
		if wc&wire.OFPFW10_DL_VLAN_PCP == 0 {
			tci |= uint64(m10.DlVlanPCP&7)<<13 | flowtable.VlanCFI
			tciMask |= flowtable.VlanPCPMask | flowtable.VlanCFI
		}
	}
	if tciMask != 0 {
		m.SetMaskedUint64(flowtable.FieldVlanTCI, tci, tciMask)
	}
	if wc&wire.OFPFW10_DL_SRC == 0 {
		m.Set(flowtable.FieldEthSrc, m10.DlSrc[:], ofpfield.Ones[:6])
	}
	if wc&wire.OFPFW10_DL_DST == 0 {
		m.Set(flowtable.FieldEthDst, m10.DlDst[:], ofpfield.Ones[:6])
	}
	if wc&wire.OFPFW10_DL_TYPE == 0 {
		m.SetUint64(flowtable.FieldEthType, uint64(m10.DlType))
	}
	dl := m10.DlType
	isIP := wc&wire.OFPFW10_DL_TYPE == 0 && (dl == flowtable.EthTypeIPv4 || dl == flowtable.EthTypeIPv6)
	isARP := wc&wire.OFPFW10_DL_TYPE == 0 && (dl == flowtable.EthTypeARP || dl == flowtable.EthTypeRARP)
	if wc&wire.OFPFW10_NW_PROTO == 0 {
		if isARP {
			// In OpenFlow 1.0 nw_proto holds the low 8 bits of the ARP opcode.
			m.SetUint64(flowtable.FieldArpOp, uint64(m10.NwProto))
		} else if isIP {
			m.SetUint64(flowtable.FieldIPProto, uint64(m10.NwProto))
		}
	}
	if isIP && wc&wire.OFPFW10_NW_TOS == 0 {
		m.SetMaskedUint64(flowtable.FieldNwTos, uint64(m10.NwTos), 0xfc)
	}
	if isIP || isARP {
		if n := m10.NwSrcPrefix(); n > 0 {
			mk := uint64(0xffffffff) << uint(32-n) & 0xffffffff
			m.SetMaskedUint64(flowtable.FieldIPv4Src, uint64(m10.NwSrc), mk)
		}
		if n := m10.NwDstPrefix(); n > 0 {
			mk := uint64(0xffffffff) << uint(32-n) & 0xffffffff
			m.SetMaskedUint64(flowtable.FieldIPv4Dst, uint64(m10.NwDst), mk)
		}
	}
	proto, protoMask := m.Uint64(flowtable.FieldIPProto)
	if isIP && protoMask == 0xff {
		switch proto {
		case flowtable.IPProtoTCP, flowtable.IPProtoUDP, flowtable.IPProtoSCTP, flowtable.IPProtoICMP, flowtable.IPProtoICMPv6:
			if wc&wire.OFPFW10_TP_SRC == 0 {
				m.SetUint64(flowtable.FieldTCPSrc, uint64(m10.TpSrc))
			}
			if wc&wire.OFPFW10_TP_DST == 0 {
				m.SetUint64(flowtable.FieldTCPDst, uint64(m10.TpDst))
			}
		}
	}
	// nw_src/nw_dst of an IPv6 dl_type are not IPv6 addresses.
	if dl == flowtable.EthTypeIPv6 {
		m.Clear(flowtable.FieldIPv4Src)
		m.Clear(flowtable.FieldIPv4Dst)
	}
	return m
}

// Match10Exact reports whether an ofp10_match wildcards nothing (OpenFlow
// 1.0 gives such flows the highest priority).
func Match10Exact(m10 *wire.Match10) bool { return m10.Wildcards&wire.OFPFW10_ALL == 0 }
