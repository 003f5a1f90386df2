package wire

import "fmt"

// Group-mod commands and group types.
const (
	OFPGC_ADD             uint16 = 0
	OFPGC_MODIFY          uint16 = 1
	OFPGC_DELETE          uint16 = 2
	OFPGC15_INSERT_BUCKET uint16 = 3
	OFPGC15_REMOVE_BUCKET uint16 = 5

	OFPGT_ALL      uint8 = 0
	OFPGT_SELECT   uint8 = 1
	OFPGT_INDIRECT uint8 = 2
	OFPGT_FF       uint8 = 3

	// 1.5 bucket property types.
	OFPGBPT15_WEIGHT      uint16 = 0
	OFPGBPT15_WATCH_PORT  uint16 = 1
	OFPGBPT15_WATCH_GROUP uint16 = 2
)

// Bucket is a group bucket. 1.3 uses Weight/WatchPort/WatchGroup; 1.5
// (and NXT_GROUP_MOD) uses BucketID and Props (weight/watch properties).
type Bucket struct {
	Weight     uint16
	WatchPort  uint32
	WatchGroup uint32
	BucketID   uint32
	Actions    []Action
	Props      []Property
}

// Weight15 returns the OFPGBPT15_WEIGHT property value, if present.
func (bk *Bucket) Weight15() (uint16, bool) {
	for _, p := range bk.Props {
		if p.Type == OFPGBPT15_WEIGHT && len(p.Data) >= 2 {
			return be16(p.Data), true
		}
	}
	return 0, false
}

// GroupMod is OFPT_GROUP_MOD (1.3 or 1.5 layout by version) or, with NX,
// OVS's NXT_GROUP_MOD for OpenFlow 1.0 (1.5 layout, 1.0 actions).
type GroupMod struct {
	NX              bool
	Command         uint16
	Type            uint8
	GroupID         uint32
	CommandBucketID uint32 // 1.5 layout
	Buckets         []Bucket
	Props           []Property // 1.5 layout group properties
}

func (m *GroupMod) MessageType(uint8) uint8 {
	if m.NX {
		return OFPT_EXPERIMENTER
	}
	return OFPT_GROUP_MOD
}

func (m *GroupMod) EncodeBody(v uint8, b []byte) ([]byte, error) {
	if m.NX {
		b = nxHeader(b, NXT_GROUP_MOD)
	}
	b = put16(b, m.Command)
	b = put32(append(b, m.Type, 0), m.GroupID)
	if v == OFP13 && !m.NX {
		return appendBuckets11(b, v, m.Buckets)
	}
	lenAt := len(b)
	b = put32(zeros(b, 4), m.CommandBucketID)
	start := len(b)
	b, err := appendBuckets15(b, v, m.Buckets)
	if err != nil {
		return b, err
	}
	if err := setLen16(b, lenAt, start); err != nil {
		return b, err
	}
	return appendProps(b, m.Props)
}

func appendBuckets11(b []byte, v uint8, buckets []Bucket) ([]byte, error) {
	for i := range buckets {
		bk := &buckets[i]
		start := len(b)
		b = put16(put16(b, 0), bk.Weight)
		b = zeros(put32(put32(b, bk.WatchPort), bk.WatchGroup), 4)
		var err error
		if b, err = AppendActions(b, v, bk.Actions); err != nil {
			return b, err
		}
		if err := setLen16(b, start, start); err != nil {
			return b, err
		}
	}
	return b, nil
}

func appendBuckets15(b []byte, v uint8, buckets []Bucket) ([]byte, error) {
	for i := range buckets {
		bk := &buckets[i]
		start := len(b)
		b = put32(put32(b, 0), bk.BucketID)
		as := len(b)
		var err error
		if b, err = AppendActions(b, v, bk.Actions); err != nil {
			return b, err
		}
		if err := setLen16(b, start+2, as); err != nil {
			return b, err
		}
		if b, err = appendProps(b, bk.Props); err != nil {
			return b, err
		}
		if err := setLen16(b, start, start); err != nil {
			return b, err
		}
	}
	return b, nil
}

func (d *Decoder) decodeBuckets11(b []byte) ([]Bucket, error) {
	v := d.version
	var out []Bucket
	for len(b) > 0 {
		if len(b) < 16 {
			return nil, errf(v, OFPGMFC_BAD_BUCKET, "bucket header truncated")
		}
		n := int(be16(b))
		if n < 16 || n > len(b) {
			return nil, errf(v, OFPGMFC_BAD_BUCKET, "bucket length %d invalid", n)
		}
		acts, err := d.DecodeActions(b[16:n])
		if err != nil {
			return nil, fmt.Errorf("bucket %d: %w", len(out), err)
		}
		out = append(out, Bucket{Weight: be16(b[2:]), WatchPort: be32(b[4:]), WatchGroup: be32(b[8:]), Actions: acts})
		b = b[n:]
	}
	return out, nil
}

func (d *Decoder) decodeBuckets15(b []byte) ([]Bucket, error) {
	v := d.version
	var out []Bucket
	for len(b) > 0 {
		if len(b) < 8 {
			return nil, errf(v, OFPGMFC_BAD_BUCKET, "bucket header truncated")
		}
		n, al := int(be16(b)), int(be16(b[2:]))
		if n < 8 || n > len(b) || 8+al > n {
			return nil, errf(v, OFPGMFC_BAD_BUCKET, "bucket length %d / action length %d invalid", n, al)
		}
		acts, err := d.DecodeActions(b[8 : 8+al])
		if err != nil {
			return nil, fmt.Errorf("bucket %d: %w", len(out), err)
		}
		props, err := decodeProps(v, b[8+al:n])
		if err != nil {
			return nil, fmt.Errorf("bucket %d: %w", len(out), err)
		}
		out = append(out, Bucket{BucketID: be32(b[4:]), Actions: acts, Props: props})
		b = b[n:]
	}
	return out, nil
}

func (d *Decoder) decodeGroupMod(body []byte, nx bool) (*GroupMod, error) {
	v := d.version
	if len(body) < 8 {
		return nil, errf(v, OFPBRC_BAD_LEN, "group_mod truncated")
	}
	m := &GroupMod{NX: nx, Command: be16(body), Type: body[2], GroupID: be32(body[4:])}
	var err error
	if v == OFP13 && !nx {
		m.Buckets, err = d.decodeBuckets11(body[8:])
		return m, err
	}
	if len(body) < 16 {
		return nil, errf(v, OFPBRC_BAD_LEN, "ofp15_group_mod truncated")
	}
	bl := int(be16(body[8:]))
	m.CommandBucketID = be32(body[12:])
	if 16+bl > len(body) {
		return nil, errf(v, OFPGMFC_BAD_BUCKET, "bucket_array_len %d exceeds message", bl)
	}
	if m.Buckets, err = d.decodeBuckets15(body[16 : 16+bl]); err != nil {
		return nil, err
	}
	m.Props, err = decodeProps(v, body[16+bl:])
	return m, err
}

// Meter-mod commands, flags and band types.
const (
	OFPMC_ADD    uint16 = 0
	OFPMC_MODIFY uint16 = 1
	OFPMC_DELETE uint16 = 2

	OFPMF_KBPS  uint16 = 1 << 0
	OFPMF_PKTPS uint16 = 1 << 1
	OFPMF_BURST uint16 = 1 << 2
	OFPMF_STATS uint16 = 1 << 3

	OFPMBT_DROP         uint16 = 1
	OFPMBT_DSCP_REMARK  uint16 = 2
	OFPMBT_EXPERIMENTER uint16 = 0xffff
)

// MeterBand is one ofp_meter_band. Extra is the type-specific tail
// (drop: 4 pad bytes; dscp_remark: prec_level + 3 pad; experimenter: id).
type MeterBand struct {
	Type      uint16
	Rate      uint32
	BurstSize uint32
	Extra     []byte
}

// MeterMod is OFPT_METER_MOD.
type MeterMod struct {
	Command uint16
	Flags   uint16
	MeterID uint32
	Bands   []MeterBand
}

func (m *MeterMod) MessageType(uint8) uint8 { return OFPT_METER_MOD }
func (m *MeterMod) EncodeBody(_ uint8, b []byte) ([]byte, error) {
	b = put32(put16(put16(b, m.Command), m.Flags), m.MeterID)
	return appendBands(b, m.Bands)
}

func appendBands(b []byte, bands []MeterBand) ([]byte, error) {
	for _, bd := range bands {
		start := len(b)
		b = put16(put16(b, bd.Type), 0)
		b = put32(put32(b, bd.Rate), bd.BurstSize)
		b = append(b, bd.Extra...)
		// Every standard band is 16 bytes (drop: pad[4]; dscp_remark:
		// prec_level, pad[3]): a band given without its tail gets zeros.
		for len(b)-start < 16 {
			b = append(b, 0)
		}
		if err := setLen16(b, start+2, start); err != nil {
			return b, err
		}
	}
	return b, nil
}

func decodeBands(v uint8, b []byte) ([]MeterBand, error) {
	var out []MeterBand
	for len(b) > 0 {
		if len(b) < 12 {
			return nil, errf(v, OFPMMFC_BAD_BAND, "meter band truncated")
		}
		n := int(be16(b[2:]))
		if n < 12 || n > len(b) {
			return nil, errf(v, OFPMMFC_BAD_BAND, "meter band length %d invalid", n)
		}
		out = append(out, MeterBand{Type: be16(b), Rate: be32(b[4:]), BurstSize: be32(b[8:]), Extra: b[12:n]})
		b = b[n:]
	}
	return out, nil
}

func (d *Decoder) decodeMeterMod(body []byte) (*MeterMod, error) {
	v := d.version
	if len(body) < 8 {
		return nil, errf(v, OFPBRC_BAD_LEN, "meter_mod truncated")
	}
	bands, err := decodeBands(v, body[8:])
	if err != nil {
		return nil, err
	}
	return &MeterMod{Command: be16(body), Flags: be16(body[2:]), MeterID: be32(body[4:]), Bands: bands}, nil
}
