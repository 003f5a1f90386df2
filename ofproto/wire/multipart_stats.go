package wire

import "fmt"

// Typed statistics multipart bodies: table, port, queue, aggregate, group,
// group features and meter stats/config/features, in the layouts
// include/openflow/openflow-1.{0,1,3,4}.h give for OF1.0, 1.3 and 1.5 (and
// the Nicira NXST_* forms OVS uses for groups and aggregates in OF1.0).

// Nicira stats subtypes beyond those declared in multipart.go.
const NXST_GROUP_FEATURES uint32 = 9

// OFPQ_ALL selects every queue in a queue stats request.
const OFPQ_ALL uint32 = 0xffffffff

// OFPPSPT_ETHERNET is the OF1.4+ port stats property carrying the
// Ethernet error counters.
const OFPPSPT_ETHERNET uint16 = 0

// OXS headers (class<<16 | field<<9 | length) of the OpenFlow-basic stats
// fields OVS writes in OF1.5 ofp_stats blocks (lib/ox-stat.c).
const (
	OXS_OF_DURATION     uint32 = 0x8002<<16 | 0<<9 | 8
	OXS_OF_IDLE_TIME    uint32 = 0x8002<<16 | 1<<9 | 8
	OXS_OF_FLOW_COUNT   uint32 = 0x8002<<16 | 3<<9 | 4
	OXS_OF_PACKET_COUNT uint32 = 0x8002<<16 | 4<<9 | 8
	OXS_OF_BYTE_COUNT   uint32 = 0x8002<<16 | 5<<9 | 8
)

// Wire sizes of the fixed-size stats records.
const (
	tableStats10Len    = 64  // ofp10_table_stats
	tableStats13Len    = 24  // ofp13_table_stats (1.3+)
	portStats10Len     = 104 // ofp10_port_stats
	portStats13Len     = 112 // ofp13_port_stats
	portStats14Len     = 80  // ofp14_port_stats without properties
	portStatsEthLen    = 36  // ofp14_port_stats_prop_ethernet minus its 4-byte header
	queueStats10Len    = 32  // ofp10_queue_stats
	queueStats13Len    = 40  // ofp13_queue_stats
	queueStats14Len    = 48  // ofp14_queue_stats without properties
	aggregateReplyLen  = 24  // ofp_aggregate_stats_reply
	groupStatsLen      = 40  // ofp13_group_stats (also NXST_GROUP and 1.5)
	bucketCounterLen   = 16  // ofp11_bucket_counter
	groupFeaturesLen   = 40  // ofp12_group_features_stats
	meterStatsLen      = 40  // ofp13_meter_stats
	meterBandStatsLen  = 16  // ofp13_meter_band_stats
	meterConfigLen     = 8   // ofp13_meter_config
	meterFeaturesLen   = 16  // ofp13_meter_features
	objectRequestLen   = 8   // every one-object request below
	oxsStatHeaderLen   = 4   // ofp_oxs_stat
	oxsExperimenterLen = 4
)

// ObjectRequest is the body of the multipart requests that select one
// object or all of them:
//   - port stats: ofp10_port_stats_request (16-bit port, OFPP10_NONE = all)
//     or ofp11_port_stats_request (OFPP_ANY = all); ID is the port;
//   - queue stats: ID is the port, QueueID the queue (OFPQ_ALL);
//   - group stats (OFPMP_GROUP, NXST_GROUP): ID is the group (OFPG_ALL);
//   - group desc in OF1.5 and NXST_GROUP_DESC: ID is the group (OFPG_ALL);
//   - port desc in OF1.5: ID is the port (OFPP_ANY);
//   - meter stats and meter config: ID is the meter (OFPM_ALL).
type ObjectRequest struct {
	ID      uint32
	QueueID uint32
}

// TableStats is one ofp10_table_stats (OF1.0) or ofp13_table_stats (1.3+)
// record. Name, Wildcards and MaxEntries exist only in OF1.0.
type TableStats struct {
	TableID      uint8
	Name         [32]byte // OF1.0
	Wildcards    uint32   // OF1.0 OFPFW10_* supported
	MaxEntries   uint32   // OF1.0
	ActiveCount  uint32
	LookupCount  uint64
	MatchedCount uint64
}

// PortStats is one port stats record: ofp10_port_stats (OF1.0, 16-bit
// port), ofp13_port_stats (1.3) or ofp14_port_stats (1.5). In 1.5 the
// Ethernet counters (RxFrameErr..Collisions) travel in the
// OFPPSPT_ETHERNET property: Props holds the properties as on the wire and
// is what gets encoded (the Ethernet one is also decoded into the
// members); if Props is nil the encoder synthesizes the Ethernet property
// from the members, as OVS sends it.
type PortStats struct {
	PortNo       uint32
	DurationSec  uint32 // 1.3+
	DurationNsec uint32 // 1.3+
	RxPackets    uint64
	TxPackets    uint64
	RxBytes      uint64
	TxBytes      uint64
	RxDropped    uint64
	TxDropped    uint64
	RxErrors     uint64
	TxErrors     uint64
	RxFrameErr   uint64
	RxOverErr    uint64
	RxCRCErr     uint64
	Collisions   uint64
	Props        []Property // 1.5
}

// QueueStats is one ofp10_queue_stats (OF1.0, 16-bit port),
// ofp13_queue_stats (1.3) or ofp14_queue_stats (1.5, with properties).
type QueueStats struct {
	PortNo       uint32
	QueueID      uint32
	TxBytes      uint64
	TxPackets    uint64
	TxErrors     uint64
	DurationSec  uint32     // 1.3+
	DurationNsec uint32     // 1.3+
	Props        []Property // 1.5
}

// OXSStat is one OXS TLV of an OF1.5 ofp_stats block. Header is the first
// 32 bits (class<<16 | field<<9 | length, e.g. OXS_OF_PACKET_COUNT); for
// the experimenter class 0xffff the length counts Experimenter too.
type OXSStat struct {
	Header       uint32
	Experimenter uint32
	Value        []byte
}

// AggregateStats is the aggregate reply: ofp_aggregate_stats_reply (OF1.0,
// NXST_AGGREGATE, 1.3) or, in OF1.5, an ofp_stats block of OXS fields.
// For 1.5, Stats when non-nil is encoded as is (it is what decoding
// fills, next to the counters, so that re-encoding is exact); leave it nil
// to encode PacketCount, ByteCount and FlowCount as OVS does.
type AggregateStats struct {
	PacketCount uint64
	ByteCount   uint64
	FlowCount   uint32
	Stats       []OXSStat // 1.5
}

// BucketCounter is ofp11_bucket_counter.
type BucketCounter struct {
	PacketCount uint64
	ByteCount   uint64
}

// GroupStats is one ofp13_group_stats record (the layout OVS uses for
// 1.3, 1.5 and NXST_GROUP in 1.0) with its bucket counters.
type GroupStats struct {
	GroupID      uint32
	RefCount     uint32
	PacketCount  uint64
	ByteCount    uint64
	DurationSec  uint32
	DurationNsec uint32
	Buckets      []BucketCounter
}

// GroupFeatures is ofp12_group_features_stats (OFPMP_GROUP_FEATURES and
// NXST_GROUP_FEATURES). MaxGroups and Actions are indexed by group type
// (OFPGT_ALL, SELECT, INDIRECT, FF); Actions are OFPAT_* bitmaps.
type GroupFeatures struct {
	Types        uint32
	Capabilities uint32
	MaxGroups    [4]uint32
	Actions      [4]uint32
}

// MeterBandStats is ofp13_meter_band_stats.
type MeterBandStats struct {
	PacketBandCount uint64
	ByteBandCount   uint64
}

// MeterStats is one ofp13_meter_stats record (1.3 and 1.5).
type MeterStats struct {
	MeterID       uint32
	FlowCount     uint32
	PacketInCount uint64
	ByteInCount   uint64
	DurationSec   uint32
	DurationNsec  uint32
	Bands         []MeterBandStats
}

// MeterConfig is one ofp13_meter_config record (1.3 and 1.5).
type MeterConfig struct {
	Flags   uint16
	MeterID uint32
	Bands   []MeterBand
}

// MeterFeatures is ofp13_meter_features.
type MeterFeatures struct {
	MaxMeter     uint32
	BandTypes    uint32 // bitmap of 1<<OFPMBT_*
	Capabilities uint32 // bitmap of OFPMF_*
	MaxBands     uint8
	MaxColor     uint8
}

// TableNameBytes returns name as the NUL-padded 32-byte array of table
// stats and table features (longer names are cut at 31 bytes, as OVS's
// strlcpy does).
func TableNameBytes(name string) [32]byte {
	var b [32]byte
	copy(b[:31], name)
	return b
}

// tableNameString returns the name up to the first NUL.
func tableNameString(b *[32]byte) string {
	n := 0
	for n < len(b) && b[n] != 0 {
		n++
	}
	return string(b[:n])
}

// NameString returns the OF1.0 table name without trailing NULs.
func (t *TableStats) NameString() string { return tableNameString(&t.Name) }

// statsKind says which typed body a multipart message carries; kindNone
// keeps the body raw.
type statsKind uint8

const (
	kindNone statsKind = iota
	kindObject
	kindTables
	kindPortStats
	kindQueues
	kindAggregate
	kindGroups
	kindGroupFeatures
	kindMeters
	kindMeterConfigs
	kindMeterFeatures
	kindTableFeatures
)

// statsKindOf maps (version, type, vendor subtype, direction) to the typed
// body, following the OFPRAW_* table of include/openvswitch/ofp-msgs.h.
func (m *Multipart) statsKindOf(v uint8) statsKind {
	if m.Type == OFPMP_EXPERIMENTER {
		if !m.isNX() || v != OFP10 {
			return kindNone
		}
		switch {
		case m.Reply && m.ExpType == NXST_AGGREGATE:
			return kindAggregate
		case m.ExpType == NXST_GROUP && m.Reply:
			return kindGroups
		case m.ExpType == NXST_GROUP, m.ExpType == NXST_GROUP_DESC && !m.Reply:
			return kindObject
		case m.ExpType == NXST_GROUP_FEATURES && m.Reply:
			return kindGroupFeatures
		}
		return kindNone
	}
	switch m.Type {
	case OFPMP_AGGREGATE:
		if m.Reply {
			return kindAggregate
		}
	case OFPMP_TABLE:
		if m.Reply {
			return kindTables
		}
	case OFPMP_PORT_STATS:
		if m.Reply {
			return kindPortStats
		}
		return kindObject
	case OFPMP_QUEUE:
		if m.Reply {
			return kindQueues
		}
		return kindObject
	}
	if v == OFP10 {
		return kindNone // OF1.0 has no other standard stats.
	}
	switch m.Type {
	case OFPMP_GROUP:
		if m.Reply {
			return kindGroups
		}
		return kindObject
	case OFPMP_GROUP_DESC, OFPMP_PORT_DESC:
		if !m.Reply && v >= OFP15 {
			return kindObject
		}
	case OFPMP_GROUP_FEATURES:
		if m.Reply {
			return kindGroupFeatures
		}
	case OFPMP_METER:
		if m.Reply {
			return kindMeters
		}
		return kindObject
	case OFPMP_METER_CONFIG:
		if m.Reply {
			return kindMeterConfigs
		}
		return kindObject
	case OFPMP_METER_FEATURES:
		if m.Reply {
			return kindMeterFeatures
		}
	case OFPMP_TABLE_FEATURES:
		return kindTableFeatures
	}
	return kindNone
}

// hasStatsBody reports whether one of the typed stats members is set.
func (m *Multipart) hasStatsBody() bool {
	return m.Object != nil || m.Tables != nil || m.PortStats != nil || m.Queues != nil ||
		m.Aggregate != nil || m.Groups != nil || m.GroupFeatures != nil || m.Meters != nil ||
		m.MeterConfigs != nil || m.MeterFeatures != nil || m.TableFeatures != nil
}

// encodeStatsBody appends whichever typed stats member is set.
func (m *Multipart) encodeStatsBody(v uint8, b []byte) ([]byte, error) {
	var err error
	switch {
	case m.Object != nil:
		return appendObjectRequest(b, v, m), nil
	case m.Tables != nil:
		for i := range m.Tables {
			b = appendTableStats(b, v, &m.Tables[i])
		}
	case m.PortStats != nil:
		for i := range m.PortStats {
			if b, err = appendPortStats(b, v, &m.PortStats[i]); err != nil {
				return b, err
			}
		}
	case m.Queues != nil:
		for i := range m.Queues {
			if b, err = appendQueueStats(b, v, &m.Queues[i]); err != nil {
				return b, err
			}
		}
	case m.Aggregate != nil:
		return appendAggregate(b, v, m.Aggregate)
	case m.Groups != nil:
		for i := range m.Groups {
			if b, err = appendGroupStats(b, &m.Groups[i]); err != nil {
				return b, err
			}
		}
	case m.GroupFeatures != nil:
		g := m.GroupFeatures
		b = put32(put32(b, g.Types), g.Capabilities)
		for _, x := range g.MaxGroups {
			b = put32(b, x)
		}
		for _, x := range g.Actions {
			b = put32(b, x)
		}
	case m.Meters != nil:
		for i := range m.Meters {
			if b, err = appendMeterStats(b, &m.Meters[i]); err != nil {
				return b, err
			}
		}
	case m.MeterConfigs != nil:
		for i := range m.MeterConfigs {
			if b, err = appendMeterConfig(b, &m.MeterConfigs[i]); err != nil {
				return b, err
			}
		}
	case m.MeterFeatures != nil:
		f := m.MeterFeatures
		b = put32(put32(put32(b, f.MaxMeter), f.BandTypes), f.Capabilities)
		b = zeros(append(b, f.MaxBands, f.MaxColor), 2)
	case m.TableFeatures != nil:
		for i := range m.TableFeatures {
			if b, err = AppendTableFeatures(b, v, &m.TableFeatures[i]); err != nil {
				return b, err
			}
		}
	}
	return b, nil
}

// decodeStatsBody fills the typed member for m's kind from p. It returns
// false (and leaves m alone) for bodies this file does not type.
func (d *Decoder) decodeStatsBody(m *Multipart, p []byte) (bool, error) {
	v := d.version
	var err error
	switch m.statsKindOf(v) {
	case kindObject:
		m.Object, err = decodeObjectRequest(v, m, p)
	case kindTables:
		m.Tables, err = decodeTableStats(v, p)
	case kindPortStats:
		m.PortStats, err = decodePortStats(v, p)
	case kindQueues:
		m.Queues, err = decodeQueueStats(v, p)
	case kindAggregate:
		m.Aggregate, err = decodeAggregate(v, p)
	case kindGroups:
		m.Groups, err = decodeGroupStats(v, p)
	case kindGroupFeatures:
		if len(p) != groupFeaturesLen {
			return true, errf(v, OFPBRC_BAD_LEN, "group features reply %d bytes, want %d", len(p), groupFeaturesLen)
		}
		g := &GroupFeatures{Types: be32(p), Capabilities: be32(p[4:])}
		for i := range g.MaxGroups {
			g.MaxGroups[i], g.Actions[i] = be32(p[8+4*i:]), be32(p[24+4*i:])
		}
		m.GroupFeatures = g
	case kindMeters:
		m.Meters, err = decodeMeterStats(v, p)
	case kindMeterConfigs:
		m.MeterConfigs, err = decodeMeterConfigs(v, p)
	case kindMeterFeatures:
		if len(p) != meterFeaturesLen {
			return true, errf(v, OFPBRC_BAD_LEN, "meter features reply %d bytes, want %d", len(p), meterFeaturesLen)
		}
		m.MeterFeatures = &MeterFeatures{MaxMeter: be32(p), BandTypes: be32(p[4:]), Capabilities: be32(p[8:]), MaxBands: p[12], MaxColor: p[13]}
	case kindTableFeatures:
		if len(p) == 0 && !m.Reply {
			return false, nil // "get" request: no body, kept as an empty Body.
		}
		m.TableFeatures, err = DecodeTableFeaturesList(v, p)
	default:
		return false, nil
	}
	return true, err
}

// objectRequest16 reports whether the request carries a 16-bit port
// (ofp10_port_stats_request, ofp10_queue_stats_request).
func objectRequest16(v uint8, m *Multipart) bool {
	return v == OFP10 && (m.Type == OFPMP_PORT_STATS || m.Type == OFPMP_QUEUE)
}

func appendObjectRequest(b []byte, v uint8, m *Multipart) []byte {
	o := m.Object
	switch {
	case objectRequest16(v, m) && m.Type == OFPMP_QUEUE:
		return put32(zeros(put16(b, uint16(o.ID)), 2), o.QueueID)
	case objectRequest16(v, m):
		return zeros(put16(b, uint16(o.ID)), 6)
	case m.Type == OFPMP_QUEUE:
		return put32(put32(b, o.ID), o.QueueID)
	}
	return zeros(put32(b, o.ID), 4)
}

func decodeObjectRequest(v uint8, m *Multipart, p []byte) (*ObjectRequest, error) {
	if len(p) != objectRequestLen {
		return nil, errf(v, OFPBRC_BAD_LEN, "stats request body %d bytes, want %d", len(p), objectRequestLen)
	}
	o := &ObjectRequest{}
	switch {
	case objectRequest16(v, m) && m.Type == OFPMP_QUEUE:
		o.ID, o.QueueID = uint32(be16(p)), be32(p[4:])
	case objectRequest16(v, m):
		o.ID = uint32(be16(p))
	case m.Type == OFPMP_QUEUE:
		o.ID, o.QueueID = be32(p), be32(p[4:])
	default:
		o.ID = be32(p)
	}
	return o, nil
}

// fixedRecords checks that p is a whole number of size-byte records.
func fixedRecords(v uint8, p []byte, size int, what string) (int, error) {
	if len(p)%size != 0 {
		return 0, errf(v, OFPBRC_BAD_LEN, "%s: %d bytes is not a multiple of %d", what, len(p), size)
	}
	return len(p) / size, nil
}

func appendTableStats(b []byte, v uint8, t *TableStats) []byte {
	b = zeros(append(b, t.TableID), 3)
	if v == OFP10 {
		b = append(b, t.Name[:]...)
		b = put32(put32(put32(b, t.Wildcards), t.MaxEntries), t.ActiveCount)
	} else {
		b = put32(b, t.ActiveCount)
	}
	return put64(put64(b, t.LookupCount), t.MatchedCount)
}

func decodeTableStats(v uint8, p []byte) ([]TableStats, error) {
	size := tableStats13Len
	if v == OFP10 {
		size = tableStats10Len
	}
	n, err := fixedRecords(v, p, size, "table stats reply")
	if err != nil {
		return nil, err
	}
	out := make([]TableStats, n)
	for i := range out {
		e, t := p[i*size:], &out[i]
		t.TableID = e[0]
		if v == OFP10 {
			copy(t.Name[:], e[4:36])
			t.Wildcards, t.MaxEntries, t.ActiveCount = be32(e[36:]), be32(e[40:]), be32(e[44:])
			t.LookupCount, t.MatchedCount = be64(e[48:]), be64(e[56:])
		} else {
			t.ActiveCount, t.LookupCount, t.MatchedCount = be32(e[4:]), be64(e[8:]), be64(e[16:])
		}
	}
	return out, nil
}

func appendPortStats(b []byte, v uint8, s *PortStats) ([]byte, error) {
	start := len(b)
	switch v {
	case OFP10:
		b = zeros(put16(b, uint16(s.PortNo)), 6)
	case OFP13:
		b = zeros(put32(b, s.PortNo), 4)
	default:
		b = zeros(b, 4) // length, pad
		b = put32(put32(put32(b, s.PortNo), s.DurationSec), s.DurationNsec)
	}
	for _, x := range [...]uint64{s.RxPackets, s.TxPackets, s.RxBytes, s.TxBytes, s.RxDropped, s.TxDropped, s.RxErrors, s.TxErrors} {
		b = put64(b, x)
	}
	if v == OFP10 || v == OFP13 {
		for _, x := range [...]uint64{s.RxFrameErr, s.RxOverErr, s.RxCRCErr, s.Collisions} {
			b = put64(b, x)
		}
		if v == OFP13 {
			b = put32(put32(b, s.DurationSec), s.DurationNsec)
		}
		return b, nil
	}
	props := s.Props
	if props == nil {
		eth := zeros(make([]byte, 0, portStatsEthLen), 4)
		for _, x := range [...]uint64{s.RxFrameErr, s.RxOverErr, s.RxCRCErr, s.Collisions} {
			eth = put64(eth, x)
		}
		props = []Property{{Type: OFPPSPT_ETHERNET, Data: eth}}
	}
	b, err := appendProps(b, props)
	if err != nil {
		return b, err
	}
	return b, setLen16(b, start, start)
}

func decodePortStats(v uint8, p []byte) ([]PortStats, error) {
	if v == OFP10 || v == OFP13 {
		size := portStats13Len
		if v == OFP10 {
			size = portStats10Len
		}
		n, err := fixedRecords(v, p, size, "port stats reply")
		if err != nil {
			return nil, err
		}
		out := make([]PortStats, n)
		for i := range out {
			e, s := p[i*size:(i+1)*size], &out[i]
			if v == OFP10 {
				s.PortNo = uint32(be16(e))
			} else {
				s.PortNo = be32(e)
				s.DurationSec, s.DurationNsec = be32(e[104:]), be32(e[108:])
			}
			c := e[8:]
			for j, x := range [...]*uint64{&s.RxPackets, &s.TxPackets, &s.RxBytes, &s.TxBytes, &s.RxDropped, &s.TxDropped,
				&s.RxErrors, &s.TxErrors, &s.RxFrameErr, &s.RxOverErr, &s.RxCRCErr, &s.Collisions} {
				*x = be64(c[8*j:])
			}
		}
		return out, nil
	}
	out := []PortStats{}
	for len(p) > 0 {
		if len(p) < portStats14Len {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp14_port_stats truncated (%d bytes)", len(p))
		}
		n := int(be16(p))
		if n < portStats14Len || n > len(p) {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp14_port_stats length %d invalid", n)
		}
		s := PortStats{PortNo: be32(p[4:]), DurationSec: be32(p[8:]), DurationNsec: be32(p[12:])}
		c := p[16:]
		for j, x := range [...]*uint64{&s.RxPackets, &s.TxPackets, &s.RxBytes, &s.TxBytes, &s.RxDropped, &s.TxDropped, &s.RxErrors, &s.TxErrors} {
			*x = be64(c[8*j:])
		}
		props, err := decodeProps(v, p[portStats14Len:n])
		if err != nil {
			return nil, fmt.Errorf("port %d stats properties: %w", s.PortNo, err)
		}
		s.Props = props
		for _, pr := range props {
			if pr.Type != OFPPSPT_ETHERNET {
				continue
			}
			if len(pr.Data) != portStatsEthLen {
				return nil, errf(v, OFPBPC_BAD_LEN, "port %d stats Ethernet property %d bytes, want %d", s.PortNo, len(pr.Data)+4, portStatsEthLen+4)
			}
			q := pr.Data[4:]
			s.RxFrameErr, s.RxOverErr, s.RxCRCErr, s.Collisions = be64(q), be64(q[8:]), be64(q[16:]), be64(q[24:])
		}
		out = append(out, s)
		p = p[n:]
	}
	return out, nil
}

func appendQueueStats(b []byte, v uint8, q *QueueStats) ([]byte, error) {
	start := len(b)
	switch v {
	case OFP10:
		b = put32(zeros(put16(b, uint16(q.PortNo)), 2), q.QueueID)
		return put64(put64(put64(b, q.TxBytes), q.TxPackets), q.TxErrors), nil
	case OFP15:
		b = zeros(b, 8) // length, pad
	}
	b = put32(put32(b, q.PortNo), q.QueueID)
	b = put64(put64(put64(b, q.TxBytes), q.TxPackets), q.TxErrors)
	b = put32(put32(b, q.DurationSec), q.DurationNsec)
	if v != OFP15 {
		return b, nil
	}
	b, err := appendProps(b, q.Props)
	if err != nil {
		return b, err
	}
	return b, setLen16(b, start, start)
}

func decodeQueueStats(v uint8, p []byte) ([]QueueStats, error) {
	if v == OFP10 || v == OFP13 {
		size := queueStats13Len
		if v == OFP10 {
			size = queueStats10Len
		}
		n, err := fixedRecords(v, p, size, "queue stats reply")
		if err != nil {
			return nil, err
		}
		out := make([]QueueStats, n)
		for i := range out {
			e, q := p[i*size:], &out[i]
			if v == OFP10 {
				q.PortNo, q.QueueID = uint32(be16(e)), be32(e[4:])
			} else {
				q.PortNo, q.QueueID = be32(e), be32(e[4:])
				q.DurationSec, q.DurationNsec = be32(e[32:]), be32(e[36:])
			}
			q.TxBytes, q.TxPackets, q.TxErrors = be64(e[8:]), be64(e[16:]), be64(e[24:])
		}
		return out, nil
	}
	out := []QueueStats{}
	for len(p) > 0 {
		if len(p) < queueStats14Len {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp14_queue_stats truncated (%d bytes)", len(p))
		}
		n := int(be16(p))
		if n < queueStats14Len || n > len(p) {
			return nil, errf(v, OFPBRC_BAD_LEN, "ofp14_queue_stats length %d invalid", n)
		}
		e := p[8:]
		q := QueueStats{PortNo: be32(e), QueueID: be32(e[4:]), TxBytes: be64(e[8:]), TxPackets: be64(e[16:]),
			TxErrors: be64(e[24:]), DurationSec: be32(e[32:]), DurationNsec: be32(e[36:])}
		props, err := decodeProps(v, p[queueStats14Len:n])
		if err != nil {
			return nil, fmt.Errorf("queue %d stats properties: %w", q.QueueID, err)
		}
		q.Props = props
		out = append(out, q)
		p = p[n:]
	}
	return out, nil
}

// AggregateOXS returns the OXS fields OVS puts in an OF1.5 aggregate
// reply (ofputil_encode_aggregate_stats_reply): packet count, byte count
// and flow count, in that order.
func AggregateOXS(packets, bytes uint64, flows uint32) []OXSStat {
	return []OXSStat{
		{Header: OXS_OF_PACKET_COUNT, Value: put64(nil, packets)},
		{Header: OXS_OF_BYTE_COUNT, Value: put64(nil, bytes)},
		{Header: OXS_OF_FLOW_COUNT, Value: put32(nil, flows)},
	}
}

func appendAggregate(b []byte, v uint8, a *AggregateStats) ([]byte, error) {
	if v != OFP15 {
		b = put32(put64(put64(b, a.PacketCount), a.ByteCount), a.FlowCount)
		return zeros(b, 4), nil
	}
	stats := a.Stats
	if stats == nil {
		stats = AggregateOXS(a.PacketCount, a.ByteCount, a.FlowCount)
	}
	return AppendOXSStats(b, stats)
}

func decodeAggregate(v uint8, p []byte) (*AggregateStats, error) {
	if v != OFP15 {
		if len(p) != aggregateReplyLen {
			return nil, errf(v, OFPBRC_BAD_LEN, "aggregate reply %d bytes, want %d", len(p), aggregateReplyLen)
		}
		return &AggregateStats{PacketCount: be64(p), ByteCount: be64(p[8:]), FlowCount: be32(p[16:])}, nil
	}
	stats, n, err := DecodeOXSStats(v, p)
	if err != nil {
		return nil, err
	}
	if n != len(p) {
		return nil, errf(v, OFPBRC_BAD_LEN, "%d bytes after the aggregate ofp_stats", len(p)-n)
	}
	a := &AggregateStats{Stats: stats}
	for _, s := range stats {
		switch s.Header {
		case OXS_OF_PACKET_COUNT:
			a.PacketCount = be64(s.Value)
		case OXS_OF_BYTE_COUNT:
			a.ByteCount = be64(s.Value)
		case OXS_OF_FLOW_COUNT:
			a.FlowCount = be32(s.Value)
		}
	}
	return a, nil
}

// AppendOXSStats appends an OF1.5 ofp_stats block (reserved, length, the
// OXS TLVs, zero padding to 8 bytes).
func AppendOXSStats(b []byte, stats []OXSStat) ([]byte, error) {
	start := len(b)
	b = zeros(b, oxsStatHeaderLen)
	for _, s := range stats {
		b = put32(b, s.Header)
		if s.Header>>16 == uint32(OFPXMC_EXPERIMENTER) {
			b = put32(b, s.Experimenter)
		}
		b = append(b, s.Value...)
	}
	if err := setLen16(b, start+2, start); err != nil {
		return b, err
	}
	return pad8(b, start), nil
}

// DecodeOXSStats decodes the ofp_stats block at the start of b (as in OF1.5
// flow desc, flow removed and aggregate replies) and returns its fields and
// the bytes it used including padding. Errors follow lib/ox-stat.c
// (OFPBMC_BAD_LEN). Values are sub-slices of b.
func DecodeOXSStats(v uint8, b []byte) ([]OXSStat, int, error) {
	if len(b) < oxsStatHeaderLen {
		return nil, 0, errf(v, OFPBMC_BAD_LEN, "ofp_stats truncated")
	}
	n := int(be16(b[2:]))
	padded := (n + 7) &^ 7
	if n < oxsStatHeaderLen || padded > len(b) {
		return nil, 0, errf(v, OFPBMC_BAD_LEN, "ofp_stats length %d does not fit in %d bytes", n, len(b))
	}
	p := b[oxsStatHeaderLen:n]
	out := []OXSStat{}
	for len(p) > 0 {
		if len(p) < 4 {
			return nil, 0, errf(v, OFPBMC_BAD_LEN, "OXS header truncated")
		}
		s := OXSStat{Header: be32(p)}
		hl, plen := 4, int(s.Header&0xff)
		if s.Header>>16 == uint32(OFPXMC_EXPERIMENTER) {
			if len(p) < 8 || plen < oxsExperimenterLen {
				return nil, 0, errf(v, OFPBMC_BAD_LEN, "experimenter OXS header truncated")
			}
			s.Experimenter = be32(p[4:])
			hl, plen = 8, plen-oxsExperimenterLen
		}
		if hl+plen > len(p) {
			return nil, 0, errf(v, OFPBMC_BAD_LEN, "OXS %#x value overruns ofp_stats", s.Header)
		}
		if known := oxsWidth(s.Header); known != 0 && known != plen {
			return nil, 0, errf(v, OFPBMC_BAD_LEN, "OXS %#x has %d value bytes, want %d", s.Header, plen, known)
		}
		s.Value = p[hl : hl+plen]
		out = append(out, s)
		p = p[hl+plen:]
	}
	return out, padded, nil
}

// oxsWidth is the value width of the OXS headers OVS knows, else 0.
func oxsWidth(h uint32) int {
	switch h {
	case OXS_OF_DURATION, OXS_OF_IDLE_TIME, OXS_OF_PACKET_COUNT, OXS_OF_BYTE_COUNT:
		return 8
	case OXS_OF_FLOW_COUNT:
		return 4
	}
	return 0
}

func appendGroupStats(b []byte, g *GroupStats) ([]byte, error) {
	start := len(b)
	b = zeros(b, 4) // length, pad
	b = zeros(put32(put32(b, g.GroupID), g.RefCount), 4)
	b = put64(put64(b, g.PacketCount), g.ByteCount)
	b = put32(put32(b, g.DurationSec), g.DurationNsec)
	for _, c := range g.Buckets {
		b = put64(put64(b, c.PacketCount), c.ByteCount)
	}
	return b, setLen16(b, start, start)
}

func decodeGroupStats(v uint8, p []byte) ([]GroupStats, error) {
	out := []GroupStats{}
	for len(p) > 0 {
		if len(p) < groupStatsLen {
			return nil, errf(v, OFPBRC_BAD_LEN, "group stats truncated (%d bytes)", len(p))
		}
		n := int(be16(p))
		if n < groupStatsLen || n > len(p) || (n-groupStatsLen)%bucketCounterLen != 0 {
			return nil, errf(v, OFPBRC_BAD_LEN, "group stats length %d invalid", n)
		}
		g := GroupStats{GroupID: be32(p[4:]), RefCount: be32(p[8:]), PacketCount: be64(p[16:]), ByteCount: be64(p[24:]),
			DurationSec: be32(p[32:]), DurationNsec: be32(p[36:])}
		g.Buckets = make([]BucketCounter, (n-groupStatsLen)/bucketCounterLen)
		for i := range g.Buckets {
			c := p[groupStatsLen+i*bucketCounterLen:]
			g.Buckets[i] = BucketCounter{PacketCount: be64(c), ByteCount: be64(c[8:])}
		}
		out = append(out, g)
		p = p[n:]
	}
	return out, nil
}

func appendMeterStats(b []byte, s *MeterStats) ([]byte, error) {
	start := len(b)
	b = zeros(put16(put32(b, s.MeterID), 0), 6)
	b = put64(put64(put32(b, s.FlowCount), s.PacketInCount), s.ByteInCount)
	b = put32(put32(b, s.DurationSec), s.DurationNsec)
	for _, c := range s.Bands {
		b = put64(put64(b, c.PacketBandCount), c.ByteBandCount)
	}
	return b, setLen16(b, start+4, start)
}

func decodeMeterStats(v uint8, p []byte) ([]MeterStats, error) {
	out := []MeterStats{}
	for len(p) > 0 {
		if len(p) < meterStatsLen {
			return nil, errf(v, OFPBRC_BAD_LEN, "meter stats truncated (%d bytes)", len(p))
		}
		n := int(be16(p[4:]))
		if n < meterStatsLen || n > len(p) || (n-meterStatsLen)%meterBandStatsLen != 0 {
			return nil, errf(v, OFPBRC_BAD_LEN, "meter stats length %d invalid", n)
		}
		s := MeterStats{MeterID: be32(p), FlowCount: be32(p[12:]), PacketInCount: be64(p[16:]), ByteInCount: be64(p[24:]),
			DurationSec: be32(p[32:]), DurationNsec: be32(p[36:])}
		s.Bands = make([]MeterBandStats, (n-meterStatsLen)/meterBandStatsLen)
		for i := range s.Bands {
			c := p[meterStatsLen+i*meterBandStatsLen:]
			s.Bands[i] = MeterBandStats{PacketBandCount: be64(c), ByteBandCount: be64(c[8:])}
		}
		out = append(out, s)
		p = p[n:]
	}
	return out, nil
}

func appendMeterConfig(b []byte, c *MeterConfig) ([]byte, error) {
	start := len(b)
	b = put32(put16(put16(b, 0), c.Flags), c.MeterID)
	b, err := appendBands(b, c.Bands)
	if err != nil {
		return b, err
	}
	return b, setLen16(b, start, start)
}

func decodeMeterConfigs(v uint8, p []byte) ([]MeterConfig, error) {
	out := []MeterConfig{}
	for len(p) > 0 {
		if len(p) < meterConfigLen {
			return nil, errf(v, OFPBRC_BAD_LEN, "meter config truncated (%d bytes)", len(p))
		}
		n := int(be16(p))
		if n < meterConfigLen || n > len(p) {
			return nil, errf(v, OFPBRC_BAD_LEN, "meter config length %d invalid", n)
		}
		c := MeterConfig{Flags: be16(p[2:]), MeterID: be32(p[4:])}
		bands, err := decodeBands(v, p[meterConfigLen:n])
		if err != nil {
			return nil, fmt.Errorf("meter %d config: %w", c.MeterID, err)
		}
		c.Bands = bands
		out = append(out, c)
		p = p[n:]
	}
	return out, nil
}

// flowStats10Len is sizeof(struct ofp10_flow_stats) without actions.
const flowStats10Len = 88

// appendFlowStats10 appends the fixed part of ofp10_flow_stats (the
// caller appends the actions and sets the length).
func appendFlowStats10(b []byte, f *FlowStats) []byte {
	b = zeros(append(put16(b, 0), f.TableID), 1)
	b = f.Match10.Append(b)
	b = put32(put32(b, f.DurationSec), f.DurationNsec)
	b = zeros(put16(put16(put16(b, f.Priority), f.IdleTimeout), f.HardTimeout), 6)
	return put64(put64(put64(b, f.Cookie), f.PacketCount), f.ByteCount)
}

// decodeFlowStats10 decodes the fixed part of an ofp10_flow_stats entry e
// (at least flowStats10Len bytes).
func decodeFlowStats10(e []byte, f *FlowStats) {
	f.TableID = e[2]
	f.Match10, _ = DecodeMatch10(e[4:44])
	f.DurationSec, f.DurationNsec = be32(e[44:]), be32(e[48:])
	f.Priority, f.IdleTimeout, f.HardTimeout = be16(e[52:]), be16(e[54:]), be16(e[56:])
	f.Cookie, f.PacketCount, f.ByteCount = be64(e[64:]), be64(e[72:]), be64(e[80:])
}
