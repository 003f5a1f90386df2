package ofproto

import (
	"errors"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/wire"
)

// Meter-mod commands (OFPMC_*).
const (
	meterAdd    = 0
	meterModify = 1
	meterDelete = 2
)

// flowRemovedMeterDelete is OFPRR_METER_DELETE (OpenFlow 1.4+).
const flowRemovedMeterDelete = 4

// meterMod applies OFPT_METER_MOD as OVS's handle_meter_mod does.
func (b *Bridge) meterMod(c *Conn, m *wire.MeterMod) error {
	if err := b.slaveCheck(c); err != nil {
		return err
	}
	if m.Command == meterDelete {
		var changes []flowChange
		for _, r := range b.p.DeleteMeter(m.MeterID) {
			if r.Flags&flowtable.FlagSendFlowRem != 0 {
				b.flowRemoved(r, flowRemovedMeterDelete)
			}
			changes = append(changes, flowChange{event: wire.FlowUpdateDeleted, reason: flowRemovedMeterDelete, rule: r})
		}
		b.notifyMonitors(c, 0, changes)
		return nil
	}
	me := &flowtable.MeterEntry{ID: m.MeterID, Flags: m.Flags}
	for _, bd := range m.Bands {
		band := flowtable.MeterBand{Type: bd.Type, Rate: bd.Rate, Burst: bd.BurstSize}
		if bd.Type == flowtable.MeterBandDSCPRemark && len(bd.Extra) > 0 {
			band.PrecLevel = bd.Extra[0]
		}
		me.Bands = append(me.Bands, band)
	}
	var err error
	switch m.Command {
	case meterAdd:
		err = b.p.AddMeter(me)
	case meterModify:
		err = b.p.ModifyMeter(me)
	default:
		return ofpErr(c, wire.OFPMMFC_BAD_COMMAND, "meter command %d", m.Command)
	}
	return meterError(c, err)
}

// meterError maps the flow model's meter errors to OFPMMFC_*.
func meterError(c *Conn, err error) error {
	var me *flowtable.MeterError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flowtable.ErrMeterExists):
		return ofpErr(c, wire.OFPMMFC_METER_EXISTS, "%v", err)
	case errors.Is(err, flowtable.ErrUnknownMeter):
		return ofpErr(c, wire.OFPMMFC_UNKNOWN_METER, "%v", err)
	case errors.As(err, &me):
		code := map[flowtable.MeterErrorKind]wire.ErrorCode{
			flowtable.MeterInvalid:     wire.OFPMMFC_INVALID_METER,
			flowtable.MeterBadFlags:    wire.OFPMMFC_BAD_FLAGS,
			flowtable.MeterOutOfBands:  wire.OFPMMFC_OUT_OF_BANDS,
			flowtable.MeterBadBand:     wire.OFPMMFC_BAD_BAND,
			flowtable.MeterBadRate:     wire.OFPMMFC_BAD_RATE,
			flowtable.MeterOutOfMeters: wire.OFPMMFC_OUT_OF_METERS,
		}[me.Kind]
		return ofpErr(c, code, "%v", err)
	}
	return ofpErr(c, wire.OFPMMFC_UNKNOWN, "%v", err)
}

// requestedMeter is the meter id a meter stats or config request names
// (OFPM_ALL: all).
func requestedMeter(m *wire.Multipart) uint32 {
	if m.Object == nil {
		return flowtable.MeterAllID
	}
	return m.Object.ID
}

// meterConfigs answers OFPMP_METER_CONFIG (dump-meters).
func (b *Bridge) meterConfigs(c *Conn, h wire.Header, m *wire.Multipart) error {
	var cs []wire.MeterConfig
	for _, me := range b.p.Meters(requestedMeter(m)) {
		mc := wire.MeterConfig{Flags: me.Flags, MeterID: me.ID}
		for _, bd := range me.Bands {
			wb := wire.MeterBand{Type: bd.Type, Rate: bd.Rate, BurstSize: bd.Burst}
			if bd.Type == flowtable.MeterBandDSCPRemark {
				wb.Extra = []byte{bd.PrecLevel, 0, 0, 0}
			}
			mc.Bands = append(mc.Bands, wb)
		}
		cs = append(cs, mc)
	}
	return sendSplit(c, h, m, len(cs), func(rep *wire.Multipart, lo, hi int) { rep.MeterConfigs = cs[lo:hi] })
}

// meterStats answers OFPMP_METER (meter-stats).
func (b *Bridge) meterStats(c *Conn, h wire.Header, m *wire.Multipart) error {
	meters := b.p.Meters(requestedMeter(m))
	flows := b.p.MeterFlowCounts()
	now := time.Now()
	var ss []wire.MeterStats
	for _, me := range meters {
		d := now.Sub(me.Created)
		s := wire.MeterStats{MeterID: me.ID, FlowCount: uint32(flows[me.ID]),
			PacketInCount: me.Packets.Load(), ByteInCount: me.Bytes.Load(),
			DurationSec: uint32(d / time.Second), DurationNsec: msNsec(d)}
		for i := range me.Bands {
			s.Bands = append(s.Bands, wire.MeterBandStats{PacketBandCount: me.BandPackets[i].Load(), ByteBandCount: me.BandBytes[i].Load()})
		}
		ss = append(ss, s)
	}
	return sendSplit(c, h, m, len(ss), func(rep *wire.Multipart, lo, hi int) { rep.Meters = ss[lo:hi] })
}

// meterFeatures is what OVS 3.1's userspace datapath announces: 262,144
// meters of up to 8 drop bands, kbps, pktps, burst and stats.
var meterFeatures = wire.MeterFeatures{MaxMeter: flowtable.MaxMeters, BandTypes: 1 << flowtable.MeterBandDrop,
	Capabilities: flowtable.MeterKbps | flowtable.MeterPktps | flowtable.MeterBurst | flowtable.MeterStats,
	MaxBands:     flowtable.MaxMeterBands}

// msNsec is the nanoseconds part of a duration at millisecond precision,
// as OVS reports flow and meter durations (ovs-ofctl prints 0.046s, not
// 0.04612345s).
func msNsec(d time.Duration) uint32 {
	return uint32(d % time.Second / time.Millisecond * time.Millisecond)
}
