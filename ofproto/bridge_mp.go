package ofproto

import (
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/wire"
)

// Description strings of the switch (ovs-ofctl dump-desc).
var (
	MfrDesc = "govs project"
	HwDesc  = "govs userspace switch"
	SwDesc  = "govs 0.1"
)

func fill(dst []byte, s string) { copy(dst[:len(dst)-1], s) }

// multipart answers OFPT_MULTIPART_REQUEST / OFPT_STATS_REQUEST and the
// Nicira vendor stats (NXST_FLOW, NXST_AGGREGATE, NXST_GROUP_DESC).
func (b *Bridge) multipart(c *Conn, h wire.Header, m *wire.Multipart) error {
	if m.Reply {
		return nil
	}
	if m.Type == wire.OFPMP_EXPERIMENTER {
		if m.Experimenter == wire.NX_VENDOR_ID {
			switch m.ExpType {
			case wire.NXST_FLOW:
				return b.flowStats(c, h, m)
			case wire.NXST_AGGREGATE:
				return b.aggregate(c, h, m)
			case wire.NXST_GROUP_DESC:
				return b.groupDescs(c, h, m)
			case wire.NXST_GROUP:
				return b.groupStats(c, h, m)
			case wire.NXST_FLOW_MONITOR:
				if c.Version() == wire.OFP10 {
					return b.flowMonitorRequest(c, h, m)
				}
			}
		}
		if m.Experimenter == wire.ONF_VENDOR_ID && m.ExpType == wire.ONFST_FLOW_MONITOR && c.Version() == wire.OFP13 {
			return b.flowMonitorRequest(c, h, m)
		}
		return ofpErr(c, wire.OFPBRC_BAD_STAT, "experimenter stats %#x/%d", m.Experimenter, m.ExpType)
	}
	switch m.Type {
	case wire.OFPMP_DESC:
		d := &wire.DescStats{}
		fill(d.MfrDesc[:], MfrDesc)
		fill(d.HwDesc[:], HwDesc)
		fill(d.SwDesc[:], SwDesc)
		fill(d.SerialNum[:], "None")
		fill(d.DpDesc[:], b.dp.Name())
		return c.Send(h.Xid, &wire.Multipart{Reply: true, Type: m.Type, Desc: d})
	case wire.OFPMP_FLOW:
		return b.flowStats(c, h, m)
	case wire.OFPMP_AGGREGATE:
		return b.aggregate(c, h, m)
	case wire.OFPMP_TABLE:
		return b.tableStats(c, h, m)
	case wire.OFPMP_PORT_STATS:
		return b.portStats(c, h, m)
	case wire.OFPMP_PORT_DESC:
		var ps []wire.Port
		for _, p := range b.announcedFeatures(b.dp.Ports()) {
			ps = append(ps, b.portForConn(c, p))
		}
		return sendSplit(c, h, m, len(ps), func(rep *wire.Multipart, lo, hi int) { rep.Ports = ps[lo:hi] })
	case wire.OFPMP_GROUP_DESC:
		return b.groupDescs(c, h, m)
	case wire.OFPMP_GROUP:
		return b.groupStats(c, h, m)
	case wire.OFPMP_GROUP_FEATURES:
		gf := &wire.GroupFeatures{Types: 0xf, Capabilities: 0x1 | 0x2 | 0x4, // SELECT_WEIGHT | SELECT_LIVENESS | CHAINING, as OVS
			MaxGroups: [4]uint32{0xffffff00, 0xffffff00, 0xffffff00, 0xffffff00},
			Actions:   [4]uint32{0x0fffffff, 0x0fffffff, 0x0fffffff, 0x0fffffff}}
		return c.Send(h.Xid, &wire.Multipart{Reply: true, Type: m.Type, GroupFeatures: gf})
	case wire.OFPMP_METER:
		return b.meterStats(c, h, m)
	case wire.OFPMP_METER_CONFIG:
		return b.meterConfigs(c, h, m)
	case wire.OFPMP_METER_FEATURES:
		mf := meterFeatures
		return c.Send(h.Xid, &wire.Multipart{Reply: true, Type: m.Type, MeterFeatures: &mf})
	case wire.OFPMP_TABLE_FEATURES:
		return b.tableFeatures(c, h, m)
	case wire.OFPMP_FLOW_MONITOR:
		if c.Version() >= wire.OFP14 {
			return b.flowMonitorRequest(c, h, m)
		}
	case wire.OFPMP_QUEUE:
		return c.Send(h.Xid, &wire.Multipart{Reply: true, Type: m.Type})
	}
	return ofpErr(c, wire.OFPBRC_BAD_STAT, "multipart type %d", m.Type)
}

func (b *Bridge) portForConn(c *Conn, p PortInfo) wire.Port {
	w := portToWire(p, c.Version())
	w.PortNo = portToWireNo(c, p.No)
	return w
}

func (b *Bridge) tableStats(c *Conn, h wire.Header, m *wire.Multipart) error {
	stats := b.p.TableStats()
	var ts []wire.TableStats
	for id := 0; id < 254; id++ {
		st := &stats[id]
		t := wire.TableStats{TableID: uint8(id), ActiveCount: uint32(st.Active), LookupCount: st.Lookups, MatchedCount: st.Matched,
			MaxEntries: 1000000, Wildcards: 0x3fffff}
		copy(t.Name[:], "table"+itoa(id))
		ts = append(ts, t)
	}
	return sendSplit(c, h, m, len(ts), func(rep *wire.Multipart, lo, hi int) { rep.Tables = ts[lo:hi] })
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [4]byte
	n := len(b)
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	return string(b[n:])
}

func (b *Bridge) portStats(c *Conn, h wire.Header, m *wire.Multipart) error {
	want := uint32(flowtable.PortNone)
	if m.Object != nil {
		want = portFromWire(c, m.Object.ID)
		if c.Version() != wire.OFP10 && m.Object.ID == wire.OFPP_ANY {
			want = flowtable.PortNone
		}
	}
	up := time.Since(b.started)
	var ps []wire.PortStats
	for _, p := range b.dp.Ports() {
		if want != flowtable.PortNone && p.No != want {
			continue
		}
		s := p.Stats
		ps = append(ps, wire.PortStats{PortNo: portToWireNo(c, p.No),
			DurationSec: uint32(up / time.Second), DurationNsec: uint32(up % time.Second),
			RxPackets: s.RxPackets, TxPackets: s.TxPackets, RxBytes: s.RxBytes, TxBytes: s.TxBytes,
			RxDropped: s.RxDropped, TxDropped: s.TxDropped, RxErrors: s.RxErrors, TxErrors: s.TxErrors})
	}
	return sendSplit(c, h, m, len(ps), func(rep *wire.Multipart, lo, hi int) { rep.PortStats = ps[lo:hi] })
}

// tableFeatures answers a table features request. A get is answered
// with the tables' features; a set (Antrea's ofnet sends one, split over
// many requests with OFPMPF_REQ_MORE and one xid) is collected until its
// last part, remembered, and answered with the tables it set: govs tables
// have no per-table restrictions, so the names are what changes.
func (b *Bridge) tableFeatures(c *Conn, h wire.Header, m *wire.Multipart) error {
	if m.TableFeatures != nil {
		c.State.pendingTableFeatures = append(c.State.pendingTableFeatures, m.TableFeatures...)
		if m.Flags&wire.OFPMPF_REQ_MORE != 0 {
			return nil
		}
		set := c.State.pendingTableFeatures
		c.State.pendingTableFeatures = nil
		b.mu.Lock()
		b.tableNames = map[uint8]string{}
		for i := range set {
			b.tableNames[set[i].TableID] = set[i].NameString()
		}
		b.tableFeaturesWire = nil
		b.tableNamesGen++
		b.mu.Unlock()
	}
	msgs, err := b.tableFeaturesReplies(c.Version())
	if err != nil {
		return err
	}
	for _, msg := range msgs {
		if err := c.sendEncoded(h.Xid, msg); err != nil {
			return err
		}
	}
	return c.Flush()
}

// tableFeaturesReplies returns the encoded table features replies for
// version, built once per version and set of table names (outside the
// bridge's lock, which asynchronous messages take).
func (b *Bridge) tableFeaturesReplies(version uint8) ([][]byte, error) {
	b.mu.Lock()
	msgs, names, gen := b.tableFeaturesWire[version], b.tableNames, b.tableNamesGen
	b.mu.Unlock()
	if msgs != nil {
		return msgs, nil
	}
	reps, err := wire.TableFeaturesReplies(version, wire.DefaultTablesFeatures(names, version), 0)
	if err != nil {
		return nil, err
	}
	msgs = make([][]byte, len(reps))
	for i, rep := range reps {
		if msgs[i], err = wire.EncodeMessage(nil, version, 0, rep); err != nil {
			return nil, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tableNamesGen == gen { // else the names changed meanwhile
		if b.tableFeaturesWire == nil {
			b.tableFeaturesWire = map[uint8][][]byte{}
		}
		b.tableFeaturesWire[version] = msgs
	}
	return msgs, nil
}
