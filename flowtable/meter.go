package flowtable

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Meters as Open vSwitch's userspace datapath (dpif-netdev) runs them:
// per meter a token bucket per band, filled at the band's rate in
// milliseconds steps and holding at most its burst; a packet that finds
// a band's bucket short is counted on the band with the highest rate it
// exceeds and dropped. Only drop bands exist there (dscp_remark is
// refused), and so here.

// Meter flags (OFPMF_*).
const (
	MeterKbps  = 1 << 0
	MeterPktps = 1 << 1
	MeterBurst = 1 << 2
	MeterStats = 1 << 3
)

// Meter band types (OFPMBT_*).
const (
	MeterBandDrop       = 1
	MeterBandDSCPRemark = 2
)

// Meter limits, as OVS 3.1's userspace datapath announces them.
const (
	MaxMeters     = 262144
	MaxMeterBands = 8
	// MeterMax is OFPM_MAX, the highest id of an ordinary meter.
	MeterMax = 0xffff0000
	// MeterAllID is OFPM_ALL (every meter, in a delete).
	MeterAllID = 0xffffffff
	// The virtual meters of the slow path and the controller connection.
	MeterSlowpathID   = 0xfffffffd
	MeterControllerID = 0xfffffffe
)

// Meter errors; ofproto maps them to OFPMMFC_*.
var (
	ErrMeterExists  = errors.New("meter already exists")
	ErrUnknownMeter = errors.New("no such meter")
)

// MeterBand is one band of a meter.
type MeterBand struct {
	Type      uint16
	Rate      uint32 // kbps or packets per second, by the meter's flags
	Burst     uint32 // kbits or packets; 0: the rate
	PrecLevel uint8  // dscp_remark only
}

// MeterEntry is a meter table entry.
type MeterEntry struct {
	ID      uint32
	Flags   uint16
	Bands   []MeterBand
	Created time.Time
	// Provider is the meter's datapath id, as ofproto-dpif allocates it
	// (the lowest free from 0, id_pool): the trace's meter(N).
	Provider uint32

	// Packets and Bytes count the packets that reached the meter.
	Packets, Bytes atomic.Uint64
	// BandPackets and BandBytes count, per band, the packets it dropped.
	BandPackets, BandBytes [MaxMeterBands]atomic.Uint64

	mu      sync.Mutex
	used    int64 // ms of the last refill
	buckets [MaxMeterBands]uint64
}

// start gives a new meter full buckets, as dpif-netdev does.
func (m *MeterEntry) start(now time.Time) {
	m.used = now.UnixMilli()
	for i, b := range m.Bands {
		m.buckets[i] = uint64(b.burst()) * 1000
	}
}

func (b *MeterBand) burst() uint32 {
	if b.Burst == 0 {
		return b.Rate
	}
	return b.Burst
}

// admit runs one packet of size bytes through the meter at now and
// reports whether it passes (OVS dp_netdev_run_meter for a batch of 1).
func (m *MeterEntry) admit(now int64, size int) bool {
	m.Packets.Add(1)
	m.Bytes.Add(uint64(size))
	// Buckets count thousandths of a packet (pktps) or bits (kbps):
	// a millisecond at the rate adds rate of them.
	volume := uint64(size) * 8
	if m.Flags&MeterPktps != 0 {
		volume = 1000
	}
	m.mu.Lock()
	// Packets racing on two goroutines count as simultaneous; a long
	// idle time only fills the buckets (capped so rate*dt cannot wrap).
	dt := min(max(now-m.used, 0), 1<<20)
	m.used = max(m.used, now)
	hit, hitRate := -1, uint32(0)
	for i := range m.Bands {
		b := &m.Bands[i]
		m.buckets[i] = min(m.buckets[i]+uint64(dt)*uint64(b.Rate), uint64(b.burst())*1000)
		if m.buckets[i] >= volume {
			m.buckets[i] -= volume
		} else if b.Rate > hitRate {
			hit, hitRate = i, b.Rate
		}
	}
	m.mu.Unlock()
	if hit < 0 {
		return true
	}
	m.BandPackets[hit].Add(1)
	m.BandBytes[hit].Add(uint64(size))
	return false
}

// validateMeter checks a meter-mod's meter as OVS does before it asks
// the datapath.
func validateMeter(m *MeterEntry) error {
	switch {
	case m.ID == 0 || m.ID > MeterMax && m.ID != MeterSlowpathID && m.ID != MeterControllerID:
		return &MeterError{Kind: MeterInvalid, Msg: fmt.Sprintf("meter id %#x", m.ID)}
	case m.Flags&^(MeterKbps|MeterPktps|MeterBurst|MeterStats) != 0,
		m.Flags&(MeterKbps|MeterPktps) == 0, m.Flags&(MeterKbps|MeterPktps) == MeterKbps|MeterPktps:
		return &MeterError{Kind: MeterBadFlags, Msg: fmt.Sprintf("meter flags %#x", m.Flags)}
	case len(m.Bands) > MaxMeterBands:
		return &MeterError{Kind: MeterOutOfBands, Msg: fmt.Sprintf("%d bands, at most %d", len(m.Bands), MaxMeterBands)}
	}
	for _, b := range m.Bands {
		switch {
		case b.Type != MeterBandDrop:
			return &MeterError{Kind: MeterBadBand, Msg: fmt.Sprintf("band type %d (the userspace datapath has drop bands only)", b.Type)}
		case b.Rate == 0:
			return &MeterError{Kind: MeterBadRate, Msg: "band rate 0"}
		}
	}
	return nil
}

// MeterErrorKind says which OFPMMFC_* a MeterError is.
type MeterErrorKind uint8

const (
	MeterInvalid MeterErrorKind = iota
	MeterBadFlags
	MeterOutOfBands
	MeterBadBand
	MeterBadRate
	MeterOutOfMeters
)

// MeterError is a meter-mod refused for its content.
type MeterError struct {
	Kind MeterErrorKind
	Msg  string
}

func (e *MeterError) Error() string { return e.Msg }

// AddMeter adds a meter (OFPMC_ADD); ErrMeterExists if its id is taken.
func (p *Pipeline) AddMeter(m *MeterEntry) error {
	if err := validateMeter(m); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.meters[m.ID]; ok {
		return fmt.Errorf("meter %d: %w", m.ID, ErrMeterExists)
	}
	if len(p.meters) >= MaxMeters {
		return &MeterError{Kind: MeterOutOfMeters, Msg: fmt.Sprintf("%d meters", len(p.meters))}
	}
	if p.meters == nil {
		p.meters = map[uint32]*MeterEntry{}
	}
	m.Created = p.Now()
	m.start(m.Created)
	m.Provider = p.meterIDs.alloc()
	p.meters[m.ID] = m
	return nil
}

// providerPool hands out datapath meter ids as OVS's id_pool: the one
// after the last allocated if free, else the lowest free; a freed id
// below the next one becomes the next.
type providerPool struct {
	used map[uint32]bool
	next uint32
}

func (pp *providerPool) alloc() uint32 {
	if pp.used == nil {
		pp.used = map[uint32]bool{}
	}
	id := pp.next
	if pp.used[id] {
		for id = 0; pp.used[id]; id++ {
		}
	}
	pp.used[id] = true
	pp.next = id + 1
	return id
}

func (pp *providerPool) free(id uint32) {
	delete(pp.used, id)
	if id < pp.next {
		pp.next = id
	}
}

// ModifyMeter replaces a meter's flags and bands (OFPMC_MODIFY); its
// counters and age stay. ErrUnknownMeter if there is none.
func (p *Pipeline) ModifyMeter(m *MeterEntry) error {
	if err := validateMeter(m); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old, ok := p.meters[m.ID]
	if !ok {
		return fmt.Errorf("meter %d: %w", m.ID, ErrUnknownMeter)
	}
	m.Created, m.Provider = old.Created, old.Provider
	m.Packets.Store(old.Packets.Load())
	m.Bytes.Store(old.Bytes.Load())
	m.start(p.Now())
	p.meters[m.ID] = m
	return nil
}

// DeleteMeter deletes meter id (MeterAllID: all; a missing one is no
// error, as in OVS) and, as OpenFlow requires, the flows that use it,
// which it returns.
func (p *Pipeline) DeleteMeter(id uint32) []*Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	var gone []uint32
	if id == MeterAllID {
		for id := range p.meters {
			gone = append(gone, id)
		}
	} else if _, ok := p.meters[id]; ok {
		gone = append(gone, id)
	}
	if len(gone) == 0 {
		return nil
	}
	for _, id := range gone {
		p.meterIDs.free(p.meters[id].Provider)
		delete(p.meters, id)
	}
	var removed []*Rule
	ff := AllFlows()
	p.forEachSelected(&ff, func(t *table, r *Rule) {
		if id, ok := ruleMeter(r); ok && slices.Contains(gone, id) {
			t.cls(r).remove(r)
			p.nRules--
			removed = append(removed, r)
		}
	})
	p.BumpGeneration()
	return removed
}

// Meters returns the meters ordered by id; with id other than MeterAllID
// only that one (none if it does not exist).
func (p *Pipeline) Meters(id uint32) []*MeterEntry {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []*MeterEntry
	for _, m := range p.meters {
		if id == MeterAllID || m.ID == id {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *MeterEntry) int { return int(int64(a.ID) - int64(b.ID)) })
	return out
}

// MeterFlowCounts returns how many flows use each meter.
func (p *Pipeline) MeterFlowCounts() map[uint32]int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	counts := map[uint32]int{}
	ff := AllFlows()
	p.forEachSelected(&ff, func(t *table, r *Rule) {
		if id, ok := ruleMeter(r); ok {
			counts[id]++
		}
	})
	return counts
}

// ruleMeter is the meter a flow belongs to, as OVS's ofpacts_get_meter
// sees it: only a meter that comes first (the OpenFlow 1.3 meter
// instruction, or a 1.5 meter action before any other action). A meter
// action later in the list still meters packets but, as in OVS, does not
// count in the meter's flow_count nor take the flow with it when the
// meter is deleted.
func ruleMeter(r *Rule) (uint32, bool) {
	if len(r.Actions) == 0 {
		return 0, false
	}
	mt, ok := r.Actions[0].(*Meter)
	if !ok {
		return 0, false
	}
	return mt.ID, true
}

// validateMetersLocked reports ErrUnknownMeter if acts use a meter that
// does not exist (OVS: OFPMMFC_INVALID_METER). p.mu is held.
//
// It also binds each controller(meter_id=N) to its meter, as OVS's
// ofproto_fix_controller_action does when the flow is added: a meter that
// does not exist then is no error (OVS logs it) and the action's
// packet-ins go through the "controller" meter instead, even once meter N
// is added.
func (p *Pipeline) validateMetersLocked(acts []Action) error {
	for _, a := range acts {
		switch a := a.(type) {
		case *Meter:
			if _, ok := p.meters[a.ID]; !ok {
				return fmt.Errorf("meter %d: %w", a.ID, ErrUnknownMeter)
			}
		case *Controller:
			if a.MeterID != 0 {
				_, a.MeterBound = p.meters[a.MeterID]
			}
		case *Clone:
			if err := p.validateMetersLocked(a.Actions); err != nil {
				return err
			}
		case *WriteActions:
			if err := p.validateMetersLocked(a.Actions); err != nil {
				return err
			}
		}
	}
	return nil
}

// runMeter runs the packet through meter id; false: the meter dropped it
// (or the meter is gone). p.mu is read-held by the run.
func (p *Pipeline) runMeter(id uint32, now int64, size int) bool {
	m := p.meters[id]
	if m == nil {
		return false
	}
	return m.admit(now, size)
}
