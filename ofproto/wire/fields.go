package wire

// The field table (fields_table.go) is extracted mechanically from the
// structured comments of Open vSwitch's include/openvswitch/meta-flow.h
// ("Type", "Maskable", "Access", "Prerequisites", "NXM" and "OXM" lines),
// mapping name prefixes to classes as OVS does:
//   NXM_OF_ -> 0x0000, NXM_NX_ -> 0x0001, OXM_OF_ -> 0x8000,
//   OXM_OF_PKT_REG -> 0x8001, ERICOXM_OF_ -> 0x1000,
//   ONFOXM_ET_ -> 0xffff/ONF, NXOXM_ET_ -> 0xffff/NX, NXOXM_NSH_ -> 0xffff/0x005ad650.

// OXM classes.
const (
	OFPXMC_NXM_0          uint16 = 0x0000
	OFPXMC_NXM_1          uint16 = 0x0001
	OFPXMC_ERICSSON       uint16 = 0x1000
	OFPXMC_OPENFLOW_BASIC uint16 = 0x8000
	OFPXMC_PACKET_REGS    uint16 = 0x8001
	OFPXMC_EXPERIMENTER   uint16 = 0xffff
)

// FieldCode is one NXM or OXM code point of a field.
type FieldCode struct {
	Name         string // e.g. "NXM_NX_REG0", "OXM_OF_ETH_SRC"
	Class        uint16
	Field        uint8
	Experimenter uint32 // only for OFPXMC_EXPERIMENTER
	Version      uint8  // first OpenFlow version in which OVS uses this code
}

// FieldInfo describes one field of ovs-fields(7) as far as the wire needs.
type FieldInfo struct {
	Name     string // OVS field name: "reg0", "eth_src", "in_port_oxm", "tun_metadata0"
	AltName  string // older alias ("dl_src"), may be empty
	Bytes    int    // value length; for Variable fields the maximum (124)
	Variable bool   // tun_metadata<N>: any length 1..Bytes
	Maskable bool   // arbitrary bitwise masks allowed
	Writable bool   // may be the target of set_field/load/move
	Prereq   string // OVS prerequisite class ("none", "IPv4", "TCP", "CT", ...)
	Codes    []FieldCode
	index    int
}

// Field returns the field's FieldInfo index in the table (dense, stable
// within one build; useful for bitmaps).
func (f *FieldInfo) Index() int { return f.index }

// CodeFor returns the code point OVS uses to encode the field in version:
// the code with the highest Version not above version, else the first code.
func (f *FieldInfo) CodeFor(version uint8) *FieldCode {
	var best *FieldCode
	for i := range f.Codes {
		c := &f.Codes[i]
		if c.Version <= version && (best == nil || c.Version >= best.Version) {
			best = c
		}
	}
	if best == nil && len(f.Codes) > 0 {
		best = &f.Codes[0]
	}
	return best
}

// NXMCode returns the field's NXM (class 0/1) code, or nil.
func (f *FieldInfo) NXMCode() *FieldCode {
	for i := range f.Codes {
		if f.Codes[i].Class <= OFPXMC_NXM_1 {
			return &f.Codes[i]
		}
	}
	return nil
}

// cookieField is the NXM_NX_COOKIE pseudo-field accepted only inside
// NXT_FLOW_MOD and NXST_FLOW/AGGREGATE requests.
var cookieField = FieldInfo{Name: "cookie", Bytes: 8, Maskable: true, Prereq: "none",
	Codes: []FieldCode{{Name: "NXM_NX_COOKIE", Class: OFPXMC_NXM_1, Field: 30, Version: OFP10}}, index: -1}

var (
	fieldsByName  = map[string]*FieldInfo{}
	fieldsByClass [4][128]*FieldInfo // NXM_0, NXM_1, OPENFLOW_BASIC, PACKET_REGS
	fieldsByExp   = map[uint64]*FieldInfo{}
	codesByName   = map[string]*FieldCode{}
)

func classSlot(class uint16) int {
	switch class {
	case OFPXMC_NXM_0:
		return 0
	case OFPXMC_NXM_1:
		return 1
	case OFPXMC_OPENFLOW_BASIC:
		return 2
	case OFPXMC_PACKET_REGS:
		return 3
	}
	return -1
}

func expKey(class uint16, field uint8, exp uint32) uint64 {
	return uint64(class)<<48 | uint64(field)<<32 | uint64(exp)
}

// allFields is the generated table plus the fields govs has beyond OVS.
var allFields = append(fieldTable[:len(fieldTable):len(fieldTable)], extraFields...)

// extraFields are OpenFlow fields Open vSwitch does not implement (so they
// are not in its meta-flow.h and the generated table).
var extraFields = []FieldInfo{
	// OpenFlow 1.3 OXM_OF_IPV6_EXTHDR: the IPv6 extension header pseudo-field.
	{Name: "ipv6_exthdr", Bytes: 2, Maskable: true, Prereq: "IPv6", Codes: []FieldCode{{"OXM_OF_IPV6_EXTHDR", 0x8000, 39, 0x00000000, 4}}},
}

func init() {
	for i := range allFields {
		f := &allFields[i]
		f.index = i
		fieldsByName[f.Name] = f
		if f.AltName != "" {
			if _, dup := fieldsByName[f.AltName]; !dup {
				fieldsByName[f.AltName] = f
			}
		}
		for j := range f.Codes {
			c := &f.Codes[j]
			codesByName[c.Name] = c
			if s := classSlot(c.Class); s >= 0 {
				fieldsByClass[s][c.Field] = f
			} else {
				fieldsByExp[expKey(c.Class, c.Field, c.Experimenter)] = f
			}
		}
	}
}

// NumFields is the number of entries in the field table.
func NumFields() int { return len(allFields) }

// FieldAt returns the i-th field of the table (0 <= i < NumFields()).
func FieldAt(i int) *FieldInfo { return &allFields[i] }

// FieldByName returns the field with OVS name (or alias) name, or nil.
func FieldByName(name string) *FieldInfo { return fieldsByName[name] }

// FieldCodeByName returns the code point named e.g. "NXM_NX_REG0", or nil.
func FieldCodeByName(name string) *FieldCode { return codesByName[name] }

// FieldByHeader returns the field for a non-experimenter class/field pair
// (hasmask does not change the field; it is accepted for symmetry with the
// OXM header and ignored). Experimenter fields need FieldByExperimenter.
func FieldByHeader(class uint16, field uint8, hasmask bool) *FieldInfo {
	_ = hasmask
	if field > 127 {
		return nil
	}
	if s := classSlot(class); s >= 0 {
		return fieldsByClass[s][field]
	}
	return nil
}

// FieldByExperimenter returns the field of an experimenter OXM.
func FieldByExperimenter(experimenter uint32, field uint8) *FieldInfo {
	return fieldsByExp[expKey(OFPXMC_EXPERIMENTER, field, experimenter)]
}

// lookupCode finds the field and the exact code of a header.
func lookupCode(class uint16, field uint8, exp uint32) (*FieldInfo, *FieldCode) {
	var f *FieldInfo
	if s := classSlot(class); s >= 0 {
		f = fieldsByClass[s][field&0x7f]
	} else if class == OFPXMC_EXPERIMENTER {
		f = fieldsByExp[expKey(class, field, exp)]
	} else {
		f = nil
	}
	if f == nil {
		return nil, nil
	}
	for i := range f.Codes {
		c := &f.Codes[i]
		if c.Class == class && c.Field == field && c.Experimenter == exp {
			return f, c
		}
	}
	return nil, nil
}

// OXMHeader is a decoded NXM/OXM TLV header. Length is the oxm_length byte
// as on the wire (it includes the 4-byte experimenter id for experimenter
// OXMs).
type OXMHeader struct {
	Class        uint16
	Field        uint8
	HasMask      bool
	Length       uint8
	Experimenter uint32
}

// HeaderLen is 4, or 8 for experimenter OXMs.
func (h OXMHeader) HeaderLen() int {
	if h.Class == OFPXMC_EXPERIMENTER {
		return 8
	}
	return 4
}

// PayloadLen is the number of bytes after the header (value + mask).
func (h OXMHeader) PayloadLen() int {
	if h.Class == OFPXMC_EXPERIMENTER {
		return int(h.Length) - 4
	}
	return int(h.Length)
}

// ValueLen is the width of the value (half the payload when masked).
func (h OXMHeader) ValueLen() int {
	if h.HasMask {
		return h.PayloadLen() / 2
	}
	return h.PayloadLen()
}

// Append appends the 4- or 8-byte header.
func (h OXMHeader) Append(b []byte) []byte {
	b = put16(b, h.Class)
	fm := h.Field << 1
	if h.HasMask {
		fm |= 1
	}
	b = append(b, fm, h.Length)
	if h.Class == OFPXMC_EXPERIMENTER {
		b = put32(b, h.Experimenter)
	}
	return b
}

// Uint32 returns the first 32 bits as used by NXM headers in NX actions.
func (h OXMHeader) Uint32() uint32 {
	v := uint32(h.Class)<<16 | uint32(h.Field)<<9 | uint32(h.Length)
	if h.HasMask {
		v |= 1 << 8
	}
	return v
}

// parseOXMHeader reads a header from b. It returns ok=false when b is too
// short (OVS: OFPBMC_BAD_LEN), including a too-small experimenter length.
func parseOXMHeader(b []byte) (OXMHeader, bool) {
	if len(b) < 4 {
		return OXMHeader{}, false
	}
	h := OXMHeader{Class: be16(b), Field: b[2] >> 1, HasMask: b[2]&1 != 0, Length: b[3]}
	if h.Class == OFPXMC_EXPERIMENTER {
		if len(b) < 8 || h.Length < 4 {
			return h, false
		}
		h.Experimenter = be32(b[4:])
	}
	return h, true
}

// HeaderFor builds the header for field f encoded with code c (nil = the
// version's default code), masked or not, with a value width n (only
// meaningful for variable-length fields; 0 = f.Bytes).
func HeaderFor(f *FieldInfo, c *FieldCode, version uint8, masked bool, n int) OXMHeader {
	if c == nil {
		c = f.CodeFor(version)
	}
	if n == 0 {
		n = f.Bytes
	}
	if masked {
		n *= 2
	}
	if c.Class == OFPXMC_EXPERIMENTER {
		n += 4
	}
	return OXMHeader{Class: c.Class, Field: c.Field, HasMask: masked, Length: uint8(n), Experimenter: c.Experimenter}
}

// resolveHeader maps a header to its field, checking the value width the way
// OVS's nxm_field_by_header does: the width must equal the field's, except
// for variable-length fields (1..max). It returns nil for unknown fields
// and wrong widths alike (OVS reports both as OFPBMC_BAD_FIELD in matches).
func resolveHeader(h OXMHeader, allowCookie bool) (*FieldInfo, *FieldCode) {
	// NXM_NX_COOKIE(_W) shares class 1 field 30 with NXM_NX_MPLS_TTL; it is
	// recognized by its exact header (length 8, or 16 when masked).
	if allowCookie && h.Class == OFPXMC_NXM_1 && h.Field == 30 &&
		((!h.HasMask && h.Length == 8) || (h.HasMask && h.Length == 16)) {
		return &cookieField, &cookieField.Codes[0]
	}
	f, c := lookupCode(h.Class, h.Field, h.Experimenter)
	if f == nil {
		return nil, nil
	}
	plen := h.PayloadLen()
	if h.HasMask {
		if plen%2 != 0 {
			return nil, nil
		}
		plen /= 2
	}
	if plen == f.Bytes || (f.Variable && plen > 0 && plen <= f.Bytes) {
		return f, c
	}
	return nil, nil
}
