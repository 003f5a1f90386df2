package flowtable

import "time"

// Recording is what a flow cache needs from one slow-path run: for each
// recirculation segment, the key it started from, the bits of the key its
// decisions depended on (the megaflow mask) and the datapath operations it
// produced. Replaying a segment's operations on any packet whose key agrees
// with the start key on the mask gives what the pipeline would do.
type Recording struct {
	Segments []Segment
	// Counters, if set, count the run's table lookups (the recording
	// cache's packet loop owns them); else the pipeline's shared set does.
	Counters *TableCounters
}

// Segment is one recirculation segment of a recorded run.
type Segment struct {
	// Start is the key at the segment's start; its recirc_id is 0 for the
	// packet as received and table+1 after ct(table=table).
	Start Key
	Mask  Key
	Ops   []DPOp
	// Rules are the flows the segment went through, whose counters a
	// cache hit must advance.
	Rules []*Rule
	// Lookups are the table lookups the segment made, which a cache hit
	// must count again in the table statistics.
	Lookups []TableLookup
	// Cacheable is false when the segment did something a cache cannot
	// replay (packet-in, NORMAL learning, learn, groups, MPLS push/pop,
	// actions after a recirculation, too many segments).
	Cacheable bool
	// Why says what made the segment uncacheable.
	Why string

	// NORMAL's dependencies, when the segment ran it (UsesMACs): its
	// decisions hold while the MAC table's generation is MACGen and until
	// Expires (when a destination it found would age out; zero: never);
	// a cache hit must refresh the Learns, as the pipeline would have.
	UsesMACs bool
	MACGen   uint64
	Expires  time.Time
	Learns   []MACLearn
}

// MACLearn is one MAC learning NORMAL did: mac on vlan seen on port.
type MACLearn struct {
	VLAN uint16
	MAC  [6]byte
	Port uint32
}

// DPOpKind is a datapath operation.
type DPOpKind uint8

const (
	// DPOutput applies the recorded field writes and sends the packet.
	DPOutput DPOpKind = iota
	// DPCT applies the recorded writes, runs conntrack and, when Table is
	// not TableNone, recirculates: the packet is looked up again with
	// recirc_id Table+1 and its new ct fields.
	DPCT
	// DPPushVLAN applies the recorded writes and pushes a VLAN header of
	// type VLANType (push_vlan): the frame's layout changes, which a key
	// write cannot say.
	DPPushVLAN
	// DPPopVLAN applies the recorded writes and pops the outer VLAN header.
	DPPopVLAN
)

// DPOp is one datapath operation of a segment.
type DPOp struct {
	Kind DPOpKind
	// Port is the output port; InPort says it was IN_PORT (the packet's
	// own input port, whatever it is).
	Port   uint32
	InPort bool
	// WMask/Write: the key bits the segment had written by then, and their
	// values.
	WMask Key
	Write Key
	CT    CTRequest
	Table uint8
	// VLANType is DPPushVLAN's TPID.
	VLANType uint16

	// words lists the key words WMask touches once Compile ran, so a
	// cache hit does not scan the whole mask.
	words    []uint8
	compiled bool
}

// Compile prepares the op for repeated ApplyWrites (a cache entry's ops).
func (op *DPOp) Compile() {
	op.words = op.words[:0]
	for i := 0; i < KeyWords; i++ {
		if op.WMask.Word(i) != 0 {
			op.words = append(op.words, uint8(i))
		}
	}
	op.compiled = true
}

// RecircID returns the recirc_id a segment recirculated to table gets.
func RecircID(table uint8) uint32 { return uint32(table) + 1 }

// SetRecircID sets the key's recirc_id.
func (k *Key) SetRecircID(v uint32) { k.setU32(offRecircID, v) }

// RecircID returns the key's recirc_id.
func (k *Key) RecircID() uint32 { return k.u32(offRecircID) }

// ApplyWrites sets the op's written bits in k.
func (op *DPOp) ApplyWrites(k *Key) {
	if op.compiled {
		for _, w := range op.words {
			i := int(w)
			m := op.WMask.Word(i)
			k.SetWord(i, k.Word(i)&^m|op.Write.Word(i)&m)
		}
		return
	}
	for i := 0; i < KeyWords; i++ {
		m := op.WMask.Word(i)
		if m != 0 {
			k.SetWord(i, k.Word(i)&^m|op.Write.Word(i)&m)
		}
	}
}

// recorder is the per-run recording state of an xlate.
type recorder struct {
	rec   *Recording
	cur   int   // index of the current segment in rec.Segments
	wmask Key   // bits written in the current segment
	after []int // segments that recirculated and must not do more
}

func (r *recorder) seg() *Segment { return &r.rec.Segments[r.cur] }

func (r *recorder) uncacheable(why string) {
	s := r.seg()
	if s.Cacheable {
		s.Cacheable, s.Why = false, why
	}
}

// usesMACs records that the segment's decisions came from the MAC table
// as of generation gen, valid until expires (zero: no aging bound), and
// that it learned l.
func (r *recorder) usesMACs(gen uint64, expires time.Time, l MACLearn) {
	s := r.seg()
	if !s.UsesMACs {
		s.UsesMACs, s.MACGen = true, gen
	}
	if !expires.IsZero() && (s.Expires.IsZero() || expires.Before(s.Expires)) {
		s.Expires = expires
	}
	s.Learns = append(s.Learns, l)
}

// wrote marks the key bits of mask (in key layout) as written.
func (r *recorder) wrote(mask *Key) { r.wmask.Or(mask) }

// wroteField marks the bits of f under the value-layout mask m as written.
func (r *recorder) wroteField(f *Field, m []byte) {
	var k Key
	f.SetValue(&k, m)
	r.wmask.Or(&k)
}

func (r *recorder) op(op DPOp, k *Key) {
	s := r.seg()
	for _, a := range r.after {
		if a == r.cur {
			r.uncacheable("actions after a recirculation")
		}
	}
	op.WMask = r.wmask
	op.Write = k.Masked(&r.wmask)
	s.Ops = append(s.Ops, op)
}

// RunRecorded is Run starting at table with a recording of the segments
// for a flow cache. pkt.Key's recirc_id says which segment this is.
func (p *Pipeline) RunRecorded(pkt *Packet, table uint8, sink Sink, rec *Recording) Result {
	rec.Segments = append(rec.Segments[:0], Segment{Start: pkt.Key, Cacheable: true})
	return p.run(pkt, table, sink, nil, &recorder{rec: rec})
}
