package wire

import (
	"fmt"
	"strconv"
)

// OFPMP_TABLE_FEATURES bodies (struct ofp13_table_features and its
// properties, include/openflow/openflow-1.3.h), used unchanged by 1.3 and
// 1.5 except for the 1.5 command byte. A request with no body asks for the
// features; a request with bodies sets them (ofnet does this with all 254
// tables, split over 20 requests with OFPMPF_REQ_MORE and one xid).

// Table feature property types (OFPTFPT_*). The _MISS variants describe
// the table-miss flow entry.
const (
	OFPTFPT_INSTRUCTIONS         uint16 = 0
	OFPTFPT_INSTRUCTIONS_MISS    uint16 = 1
	OFPTFPT_NEXT_TABLES          uint16 = 2
	OFPTFPT_NEXT_TABLES_MISS     uint16 = 3
	OFPTFPT_WRITE_ACTIONS        uint16 = 4
	OFPTFPT_WRITE_ACTIONS_MISS   uint16 = 5
	OFPTFPT_APPLY_ACTIONS        uint16 = 6
	OFPTFPT_APPLY_ACTIONS_MISS   uint16 = 7
	OFPTFPT_MATCH                uint16 = 8
	OFPTFPT_WILDCARDS            uint16 = 10
	OFPTFPT_WRITE_SETFIELD       uint16 = 12
	OFPTFPT_WRITE_SETFIELD_MISS  uint16 = 13
	OFPTFPT_APPLY_SETFIELD       uint16 = 14
	OFPTFPT_APPLY_SETFIELD_MISS  uint16 = 15
	OFPTFPT_TABLE_SYNC_FROM      uint16 = 16 // 1.4+
	OFPTFPT_WRITE_COPYFIELD      uint16 = 18 // 1.5
	OFPTFPT_WRITE_COPYFIELD_MISS uint16 = 19
	OFPTFPT_APPLY_COPYFIELD      uint16 = 20
	OFPTFPT_APPLY_COPYFIELD_MISS uint16 = 21
	OFPTFPT_PACKET_TYPES         uint16 = 22
	OFPTFPT_EXPERIMENTER         uint16 = 0xfffe
	OFPTFPT_EXPERIMENTER_MISS    uint16 = 0xffff
)

// OF1.5 table features commands (ofp13_table_features.command).
const (
	OFPTFC_REPLACE uint8 = 0
	OFPTFC_MODIFY  uint8 = 1
	OFPTFC_ENABLE  uint8 = 2
	OFPTFC_DISABLE uint8 = 3
)

// OFPTC14_* table capabilities (ofp13_table_features.capabilities, 1.4+).
const (
	OFPTC_EVICTION       uint32 = 1 << 2
	OFPTC_VACANCY_EVENTS uint32 = 1 << 3
)

// DefaultNumTables is the number of flow tables OVS exposes (0..253; table
// 254 is internal), hence the 254 table features records of a reply.
const DefaultNumTables = 254

const (
	tableFeaturesLen       = 64 // sizeof(struct ofp13_table_features)
	defaultTableMaxEntries = 1000000
)

// TableFeatureID is one instruction or action id of an
// OFPTFPT_INSTRUCTIONS* / *_ACTIONS* property: ofp_instruction_id or
// ofp_action_id, a type and a length (4, or more for experimenter ids);
// Data is what follows the 4-byte header (e.g. the experimenter id).
type TableFeatureID struct {
	Type uint16
	Data []byte
}

// TableFeatureProp is one table feature property. Which member carries
// the payload depends on Type (see TableFeaturePropKind):
//   - IDs: INSTRUCTIONS(_MISS), WRITE_ACTIONS(_MISS), APPLY_ACTIONS(_MISS);
//   - NextTables: NEXT_TABLES(_MISS), TABLE_SYNC_FROM;
//   - Fields: MATCH, WILDCARDS, *_SETFIELD(_MISS), *_COPYFIELD(_MISS) (OXM
//     headers, HasMask set for maskable match fields);
//   - Data: anything else (experimenter, packet types), raw.
type TableFeatureProp struct {
	Type       uint16
	IDs        []TableFeatureID
	NextTables []uint8
	Fields     []OXMHeader
	Data       []byte
}

// TableFeatures is one struct ofp13_table_features with its properties.
// Command exists only in OF1.5 (OFPTFC_*; encoded as 0 in 1.3). Features
// is the 32-bit word OF1.5 calls "features" and OVS treats as padding; it
// is kept for an exact round trip. Capabilities is OF1.3's "config".
type TableFeatures struct {
	TableID       uint8
	Command       uint8
	Features      uint32
	Name          [32]byte
	MetadataMatch uint64
	MetadataWrite uint64
	Capabilities  uint32
	MaxEntries    uint32
	Props         []TableFeatureProp
}

// NameString returns the table name without trailing NULs.
func (t *TableFeatures) NameString() string { return tableNameString(&t.Name) }

// Prop returns the property of type typ, or nil.
func (t *TableFeatures) Prop(typ uint16) *TableFeatureProp {
	for i := range t.Props {
		if t.Props[i].Type == typ {
			return &t.Props[i]
		}
	}
	return nil
}

// Payload kinds of table feature properties.
const (
	TableFeatureRaw = iota
	TableFeatureIDs
	TableFeatureNextTables
	TableFeatureFields
)

// TableFeaturePropKind says which TableFeatureProp member carries the
// payload of a property of type typ.
func TableFeaturePropKind(typ uint16) int {
	switch typ {
	case OFPTFPT_INSTRUCTIONS, OFPTFPT_INSTRUCTIONS_MISS,
		OFPTFPT_WRITE_ACTIONS, OFPTFPT_WRITE_ACTIONS_MISS,
		OFPTFPT_APPLY_ACTIONS, OFPTFPT_APPLY_ACTIONS_MISS:
		return TableFeatureIDs
	case OFPTFPT_NEXT_TABLES, OFPTFPT_NEXT_TABLES_MISS, OFPTFPT_TABLE_SYNC_FROM:
		return TableFeatureNextTables
	case OFPTFPT_MATCH, OFPTFPT_WILDCARDS,
		OFPTFPT_WRITE_SETFIELD, OFPTFPT_WRITE_SETFIELD_MISS,
		OFPTFPT_APPLY_SETFIELD, OFPTFPT_APPLY_SETFIELD_MISS,
		OFPTFPT_WRITE_COPYFIELD, OFPTFPT_WRITE_COPYFIELD_MISS,
		OFPTFPT_APPLY_COPYFIELD, OFPTFPT_APPLY_COPYFIELD_MISS:
		return TableFeatureFields
	}
	return TableFeatureRaw
}

// AppendTableFeatures appends one ofp13_table_features (padded to 8
// bytes) for version.
func AppendTableFeatures(b []byte, v uint8, t *TableFeatures) ([]byte, error) {
	start := len(b)
	cmd := t.Command
	if v < OFP15 {
		cmd = 0
	}
	b = put32(append(put16(b, 0), t.TableID, cmd), t.Features)
	b = append(b, t.Name[:]...)
	b = put64(put64(b, t.MetadataMatch), t.MetadataWrite)
	b = put32(put32(b, t.Capabilities), t.MaxEntries)
	var err error
	for i := range t.Props {
		if b, err = appendTableFeatureProp(b, &t.Props[i]); err != nil {
			return b, fmt.Errorf("table %d features property type %d: %w", t.TableID, t.Props[i].Type, err)
		}
	}
	return b, setLen16(b, start, start)
}

func appendTableFeatureProp(b []byte, p *TableFeatureProp) ([]byte, error) {
	start := len(b)
	b = put16(put16(b, p.Type), 0)
	switch TableFeaturePropKind(p.Type) {
	case TableFeatureIDs:
		for _, id := range p.IDs {
			if 4+len(id.Data) > 0xffff {
				return b, errTooLong
			}
			b = append(put16(put16(b, id.Type), uint16(4+len(id.Data))), id.Data...)
		}
	case TableFeatureNextTables:
		b = append(b, p.NextTables...)
	case TableFeatureFields:
		for _, h := range p.Fields {
			b = h.Append(b)
		}
	default:
		b = append(b, p.Data...)
	}
	if err := setLen16(b, start+2, start); err != nil {
		return b, err
	}
	return pad8(b, start), nil
}

// DecodeTableFeaturesList decodes the body of an OFPMP_TABLE_FEATURES
// request or reply: zero or more table features. Errors are those of
// OVS's ofputil_decode_table_features (OFPBPC_BAD_LEN for lengths,
// OFPTFFC_BAD_COMMAND, OFPTFFC_BAD_TABLE, OFPBPC_BAD_VALUE for a next
// table of 255, OFPBMC_BAD_LEN for a truncated OXM header). Property
// payloads are sub-slices of p.
func DecodeTableFeaturesList(v uint8, p []byte) ([]TableFeatures, error) {
	out := []TableFeatures{}
	for len(p) > 0 {
		t, n, err := decodeTableFeatures(v, p)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		p = p[n:]
	}
	return out, nil
}

func decodeTableFeatures(v uint8, p []byte) (TableFeatures, int, error) {
	var t TableFeatures
	if len(p) < tableFeaturesLen {
		return t, 0, errf(v, OFPBPC_BAD_LEN, "table features truncated (%d bytes)", len(p))
	}
	n := int(be16(p))
	if n < tableFeaturesLen || n%8 != 0 || n > len(p) {
		return t, 0, errf(v, OFPBPC_BAD_LEN, "table features length %d invalid", n)
	}
	t.TableID, t.Command, t.Features = p[2], p[3], be32(p[4:])
	if v >= OFP15 && t.Command > OFPTFC_DISABLE {
		return t, 0, errf(v, OFPTFFC_BAD_COMMAND, "table features command %d", t.Command)
	}
	if t.TableID == OFPTT_ALL {
		return t, 0, errf(v, OFPTFFC_BAD_TABLE, "table features for table 255")
	}
	copy(t.Name[:], p[8:40])
	t.MetadataMatch, t.MetadataWrite = be64(p[40:]), be64(p[48:])
	t.Capabilities, t.MaxEntries = be32(p[56:]), be32(p[60:])
	q := p[tableFeaturesLen:n]
	if len(q) > 0 {
		t.Props = make([]TableFeatureProp, 0, 16)
	}
	for len(q) > 0 {
		if len(q) < 4 {
			return t, 0, errf(v, OFPBPC_BAD_LEN, "table %d: property header truncated", t.TableID)
		}
		pl := int(be16(q[2:]))
		padded := (pl + 7) &^ 7
		if pl < 4 || padded > len(q) {
			return t, 0, errf(v, OFPBPC_BAD_LEN, "table %d: property type %d length %d does not fit in %d bytes", t.TableID, be16(q), pl, len(q))
		}
		prop, err := decodeTableFeatureProp(v, be16(q), q[4:pl])
		if err != nil {
			return t, 0, fmt.Errorf("table %d features property type %d: %w", t.TableID, be16(q), err)
		}
		t.Props = append(t.Props, prop)
		q = q[padded:]
	}
	return t, n, nil
}

func decodeTableFeatureProp(v uint8, typ uint16, b []byte) (TableFeatureProp, error) {
	p := TableFeatureProp{Type: typ}
	switch TableFeaturePropKind(typ) {
	case TableFeatureIDs:
		// OVS reads ids packed on byte boundaries (no padding between
		// them), each with a length of at least 4.
		p.IDs = make([]TableFeatureID, 0, len(b)/4)
		for len(b) > 0 {
			if len(b) < 4 {
				return p, errf(v, OFPBPC_BAD_LEN, "id truncated")
			}
			n := int(be16(b[2:]))
			if n < 4 || n > len(b) {
				return p, errf(v, OFPBPC_BAD_LEN, "id type %d length %d invalid", be16(b), n)
			}
			p.IDs = append(p.IDs, TableFeatureID{Type: be16(b), Data: b[4:n]})
			b = b[n:]
		}
	case TableFeatureNextTables:
		for _, id := range b {
			if id == OFPTT_ALL {
				return p, errf(v, OFPBPC_BAD_VALUE, "next table 255")
			}
		}
		p.NextTables = b
	case TableFeatureFields:
		p.Fields = make([]OXMHeader, 0, len(b)/4)
		for len(b) > 0 {
			h, ok := parseOXMHeader(b)
			if !ok {
				return p, errf(v, OFPBMC_BAD_LEN, "OXM header truncated")
			}
			p.Fields = append(p.Fields, h)
			b = b[h.HeaderLen():]
		}
	default:
		p.Data = b
	}
	return p, nil
}

// DefaultTableFeatures returns the features govs advertises for one
// table, shaped like the replies of Open vSwitch 3.1 in the captures:
// capabilities 0, max_entries 1000000, all 64 metadata bits matchable and
// writable, goto_table to every later table (up to DefaultNumTables-1;
// the last table has no goto_table instruction),
// instructions goto_table..clear_actions plus meter before OF1.5, actions
// output and 15..25, every field of the field table with a code point
// (the one OVS would use in version, as FieldInfo.CodeFor picks it) as
// match field (maskable ones with HasMask) and wildcard, the writable ones
// as write/apply set-field targets; the table-miss properties repeat the
// regular ones, in OVS's property order. name may be empty (OVS leaves
// unnamed tables' names empty). The returned value shares no memory with
// other calls.
func DefaultTableFeatures(tableID uint8, name string, version uint8) TableFeatures {
	t := TableFeatures{
		TableID:       tableID,
		Name:          TableNameBytes(name),
		MetadataMatch: ^uint64(0),
		MetadataWrite: ^uint64(0),
		MaxEntries:    defaultTableMaxEntries,
	}
	insts := []uint16{OFPIT_GOTO_TABLE, OFPIT_WRITE_METADATA, OFPIT_WRITE_ACTIONS, OFPIT_APPLY_ACTIONS, OFPIT_CLEAR_ACTIONS}
	if version < OFP15 {
		insts = append(insts, OFPIT_METER) // an action in 1.5
	}
	next := []uint8{}
	for id := int(tableID) + 1; id < DefaultNumTables; id++ {
		next = append(next, uint8(id))
	}
	if len(next) == 0 {
		insts = insts[1:] // the last table cannot goto_table (OVS drops it too)
	}
	actions := standardActionIDs()
	var match, wildcards, setFields []OXMHeader
	for i := 0; i < NumFields(); i++ {
		f := FieldAt(i)
		c := tableFeatureCode(f, version)
		if c == nil {
			continue // internal field without a code point (tun_ttl...)
		}
		match = append(match, HeaderFor(f, c, version, f.Maskable, 0))
		wildcards = append(wildcards, HeaderFor(f, c, version, false, 0))
		if f.Writable {
			setFields = append(setFields, HeaderFor(f, c, version, false, 0))
		}
	}
	for miss := uint16(0); miss < 2; miss++ {
		t.Props = append(t.Props,
			TableFeatureProp{Type: OFPTFPT_INSTRUCTIONS + miss, IDs: typeIDs(insts)},
			TableFeatureProp{Type: OFPTFPT_NEXT_TABLES + miss, NextTables: next},
			TableFeatureProp{Type: OFPTFPT_WRITE_ACTIONS + miss, IDs: typeIDs(actions)},
			TableFeatureProp{Type: OFPTFPT_WRITE_SETFIELD + miss, Fields: setFields},
			TableFeatureProp{Type: OFPTFPT_APPLY_ACTIONS + miss, IDs: typeIDs(actions)},
			TableFeatureProp{Type: OFPTFPT_APPLY_SETFIELD + miss, Fields: setFields},
		)
	}
	t.Props = append(t.Props,
		TableFeatureProp{Type: OFPTFPT_MATCH, Fields: match},
		TableFeatureProp{Type: OFPTFPT_WILDCARDS, Fields: wildcards},
	)
	return t
}

// DefaultTablesFeatures returns DefaultTableFeatures of every table (names
// by table id, missing ones empty) for one reply. The tables share their
// ID and field lists, read-only: the features of all 254 tables cost about
// what one table's do, not 254 times that (a table features request used
// to leave megabytes of garbage the daemon's RSS kept).
func DefaultTablesFeatures(names map[uint8]string, version uint8) []TableFeatures {
	tables := make([]TableFeatures, DefaultNumTables)
	first := DefaultTableFeatures(0, "", version)
	var next []uint8 // table 0's next tables: table i's are next[i:]
	for _, p := range first.Props {
		if p.Type == OFPTFPT_NEXT_TABLES {
			next = p.NextTables
		}
	}
	last := DefaultNumTables - 1
	for i := range tables {
		t := first
		t.TableID, t.Name = uint8(i), TableNameBytes(names[uint8(i)])
		t.Props = make([]TableFeatureProp, len(first.Props))
		for j, p := range first.Props {
			switch p.Type {
			case OFPTFPT_NEXT_TABLES, OFPTFPT_NEXT_TABLES_MISS:
				p.NextTables = next[i:]
			case OFPTFPT_INSTRUCTIONS, OFPTFPT_INSTRUCTIONS_MISS:
				if i == last {
					p.IDs = p.IDs[1:] // no goto_table from the last table
				}
			}
			t.Props[j] = p
		}
		tables[i] = t
	}
	return tables
}

// ovs31Later are code points Open vSwitch 3.1 does not have: registers
// 16 to 31 and the xregs and xxregs over them, and the experimenter OXM
// of dp_hash (3.1 has only NXM_NX_DP_HASH), all added after 3.1.
var ovs31Later = func() map[string]bool {
	m := map[string]bool{"NXOXM_ET_DP_HASH": true}
	for i := 16; i < 32; i++ {
		m["NXOXM_ET_REG"+strconv.Itoa(i)] = true
	}
	for i := 8; i < 16; i++ {
		m["OXM_OF_PKT_REG"+strconv.Itoa(i)] = true
	}
	for i := 4; i < 8; i++ {
		m["NXOXM_ET_XXREG"+strconv.Itoa(i)] = true
	}
	return m
}()

// tableFeatureCode is the code point table features list field f under,
// as Open vSwitch 3.1 lists it (nil: not listed): a controller that sizes
// its buffers on OVS's replies (Antrea expects 20 of them) gets the same
// split from govs.
func tableFeatureCode(f *FieldInfo, version uint8) *FieldCode {
	var best *FieldCode
	for i := range f.Codes {
		c := &f.Codes[i]
		if ovs31Later[c.Name] {
			continue
		}
		if c.Version <= version && (best == nil || c.Version >= best.Version) {
			best = c
		}
	}
	if best == nil {
		for i := range f.Codes {
			if !ovs31Later[f.Codes[i].Name] {
				return &f.Codes[i]
			}
		}
	}
	return best
}

// standardActionIDs lists the OFPAT_* action types OVS 3.1 advertises in
// 1.3 and 1.5 alike (captured replies): output and 15..25. Nicira actions
// are not listed (table features have no way to name them).
func standardActionIDs() []uint16 {
	return []uint16{OFPAT_OUTPUT, OFPAT_SET_MPLS_TTL, OFPAT_DEC_MPLS_TTL, OFPAT_PUSH_VLAN, OFPAT_POP_VLAN,
		OFPAT_PUSH_MPLS, OFPAT_POP_MPLS, OFPAT_SET_QUEUE, OFPAT_GROUP, OFPAT_SET_NW_TTL, OFPAT_DEC_NW_TTL, OFPAT_SET_FIELD}
}

func typeIDs(types []uint16) []TableFeatureID {
	out := make([]TableFeatureID, len(types))
	for i, t := range types {
		out[i] = TableFeatureID{Type: t}
	}
	return out
}

// TableFeaturesReplies packs tables into as few OFPMP_TABLE_FEATURES
// replies as fit, each no longer than maxLen bytes on the wire (header
// included; 0 or anything above MaxMessageLen means MaxMessageLen), with
// OFPMPF_REPLY_MORE on all but the last, the way OVS's ofpmp_postappend
// splits its 254 tables into 20 replies. Each table features record goes
// whole into one reply. With no tables it returns one empty reply. The
// replies share the TableFeatures values (and their properties) with
// tables.
func TableFeaturesReplies(version uint8, tables []TableFeatures, maxLen int) ([]*Multipart, error) {
	if maxLen <= 0 || maxLen > MaxMessageLen {
		maxLen = MaxMessageLen
	}
	const hdr = HeaderLen + 8 // ofp_header + ofp_multipart_reply
	newReply := func() *Multipart {
		return &Multipart{Reply: true, Type: OFPMP_TABLE_FEATURES, TableFeatures: []TableFeatures{}}
	}
	out := []*Multipart{newReply()}
	size := hdr
	var scratch []byte
	for i := range tables {
		var err error
		if scratch, err = AppendTableFeatures(scratch[:0], version, &tables[i]); err != nil {
			return nil, err
		}
		n := len(scratch)
		if hdr+n > maxLen {
			return nil, fmt.Errorf("table %d features need %d bytes, more than a %d-byte message: %w", tables[i].TableID, n, maxLen, errTooLong)
		}
		cur := out[len(out)-1]
		if size+n > maxLen {
			cur.Flags |= OFPMPF_REPLY_MORE
			cur = newReply()
			out = append(out, cur)
			size = hdr
		}
		cur.TableFeatures = append(cur.TableFeatures, tables[i])
		size += n
	}
	return out, nil
}
