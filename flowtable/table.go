package flowtable

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// RuleStats are a rule's counters (updated by the packet path without the
// pipeline lock).
type RuleStats struct {
	Packets  atomic.Uint64
	Bytes    atomic.Uint64
	Created  time.Time
	LastUsed atomic.Int64 // unix nanoseconds
}

// NumTables is the number of flow tables (0..254).
const NumTables = 255

// table is one OpenFlow table: hard rules (ordinary flows) and soft rules
// (flows whose actions are conjunction clauses) in separate classifiers.
type table struct {
	hard, soft *classifier
}

func newTable() *table { return &table{hard: newClassifier(), soft: newClassifier()} }

func (t *table) cls(r *Rule) *classifier {
	if r.IsConjunctive() {
		return t.soft
	}
	return t.hard
}

// Pipeline is the OpenFlow state of one bridge: flow tables, groups and
// the TLV map, plus what the interpreter needs (conntrack, MAC learning).
// It is safe for concurrent use: packets look up under a read lock while
// flow-mods change the tables under the write lock.
type Pipeline struct {
	mu     sync.RWMutex
	tables [NumTables]*table
	groups map[uint32]*GroupEntry
	seq    uint64
	nRules int
	// timed holds the flows with an idle or hard timeout.
	timed map[*Rule]*timedState

	// Generation is bumped by every change that can alter a lookup; a
	// flow cache compares it to drop stale entries.
	Generation atomic.Uint64

	TLV       *TLVMap
	Conntrack Conntrack  // nil: ct() marks packets +trk+inv
	MACs      *MACTable  // for NORMAL
	Ports     PortLister // for NORMAL/FLOOD/ALL; nil: outputs name the reserved port
	// MaxResubmitDepth bounds resubmit/goto nesting (OVS: 64).
	MaxResubmitDepth int
	// Now returns the time (tests use a fake clock).
	Now func() time.Time

	// Table lookup and match counts: one set per packet loop, and a
	// shared one for runs outside a loop (see TableCounters).
	countersMu     sync.Mutex
	counters       []*TableCounters
	sharedCounters TableCounters
}

// PortLister lists the bridge's ports, for flooding.
type PortLister interface {
	PortNumbers() []uint32
}

// NewPipeline returns an empty pipeline.
func NewPipeline() *Pipeline {
	p := &Pipeline{groups: map[uint32]*GroupEntry{}, TLV: NewTLVMap(), timed: map[*Rule]*timedState{}, MACs: NewMACTable(300 * time.Second),
		MaxResubmitDepth: 64, Now: time.Now}
	p.sharedCounters.shared = true
	return p
}

func (p *Pipeline) table(id uint8) *table {
	t := p.tables[id]
	if t == nil {
		t = newTable()
		p.tables[id] = t
	}
	return t
}

// Errors of flow-mods, matching the OpenFlow errors OVS sends.
var (
	ErrOverlap      = errors.New("flow overlaps an existing flow (check_overlap)")
	ErrBadTable     = errors.New("bad table id")
	ErrUnknownGroup = errors.New("group does not exist")
)

// AddFlow adds f, replacing a flow with the same table, match and
// priority (OpenFlow OFPFC_ADD). With check_overlap it fails if a flow of
// the same priority could match the same packets.
func (p *Pipeline) AddFlow(f *Flow) error {
	if f.Table >= NumTables {
		return ErrBadTable
	}
	if err := p.validateGroups(f); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.addLocked(f, p.Now())
	return nil
}

// AddFlows adds many flows under one lock, atomically: if any fails
// validation none is added.
func (p *Pipeline) AddFlows(fs []*Flow) error {
	for _, f := range fs {
		if f.Table >= NumTables {
			return ErrBadTable
		}
		if err := p.validateGroups(f); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range fs {
		if f.Flags&FlagCheckOverlap != 0 && p.overlapsLocked(f) {
			return ErrOverlap
		}
	}
	now := p.Now()
	for _, f := range fs {
		p.addLocked(f, now)
	}
	return nil
}

// CheckGroups reports an error if f uses a group that does not exist
// (OpenFlow: OFPBAC_BAD_OUT_GROUP).
func (p *Pipeline) CheckGroups(f *Flow) error { return p.validateGroups(f) }

func (p *Pipeline) validateGroups(f *Flow) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.validateGroupsLocked(f)
}

// validateGroupsLocked is validateGroups with p.mu held (read or write).
func (p *Pipeline) validateGroupsLocked(f *Flow) error {
	for _, a := range f.Actions {
		if g, ok := a.(*Group); ok {
			if _, ok := p.groups[g.ID]; !ok {
				return fmt.Errorf("group %d: %w", g.ID, ErrUnknownGroup)
			}
		}
	}
	return nil
}

// addLocked installs f, created at now, and returns its rule and the rule
// it replaced (nil if none).
func (p *Pipeline) addLocked(f *Flow, now time.Time) (r, old *Rule) {
	t := p.table(f.Table)
	if o := t.hard.find(&f.Match, f.Priority); o != nil {
		old = o
	} else if o := t.soft.find(&f.Match, f.Priority); o != nil {
		old = o
	}
	r = &Rule{Flow: f}
	r.Stats.Created = now
	r.Stats.LastUsed.Store(now.UnixNano())
	if old != nil {
		t.cls(old).remove(old)
		p.nRules--
		if f.Flags&FlagResetCounts == 0 {
			r.Stats.Packets.Store(old.Stats.Packets.Load())
			r.Stats.Bytes.Store(old.Stats.Bytes.Load())
			r.Stats.Created = old.Stats.Created
		}
	}
	p.seq++
	r.seq = p.seq
	t.cls(r).insert(r)
	p.nRules++
	if f.IdleTimeout != 0 || f.HardTimeout != 0 {
		p.timed[r] = &timedState{lastPackets: r.Stats.Packets.Load(), lastActive: now}
	}
	p.Generation.Add(1)
	return r, old
}

func (p *Pipeline) overlapsLocked(f *Flow) bool {
	t := p.tables[f.Table]
	if t == nil {
		return false
	}
	over := false
	check := func(r *Rule) bool {
		if r.Priority == f.Priority && matchesOverlap(&r.Match, &f.Match) && !r.Match.Equal(&f.Match) {
			over = true
			return false
		}
		return true
	}
	t.hard.each(check)
	if !over {
		t.soft.each(check)
	}
	return over
}

// matchesOverlap reports whether some packet could match both.
func matchesOverlap(a, b *Match) bool {
	for i := 0; i < KeyWords; i++ {
		common := a.Mask.Word(i) & b.Mask.Word(i)
		if a.Value.Word(i)&common != b.Value.Word(i)&common {
			return false
		}
	}
	return true
}

// FlowFilter selects flows for modify, delete and dump (ovs-ofctl
// semantics: non-strict selects every flow at least as specific as Match;
// strict needs the same match and priority).
type FlowFilter struct {
	Table      uint8 // 255: all tables
	Match      Match
	Priority   uint16 // strict only
	Strict     bool
	Cookie     uint64
	CookieMask uint64
	OutPort    uint32 // PortNone: any
	OutGroup   uint32 // 0xffffffff: any
}

// AllFlows is a filter that selects every flow.
func AllFlows() FlowFilter {
	return FlowFilter{Table: 255, OutPort: PortNone, OutGroup: 0xffffffff}
}

func (ff *FlowFilter) selects(r *Rule) bool {
	if ff.Cookie&ff.CookieMask != r.Cookie&ff.CookieMask {
		return false
	}
	if ff.Strict {
		if r.Priority != ff.Priority || !r.Match.Equal(&ff.Match) {
			return false
		}
	} else if !isLooseMatch(&r.Match, &ff.Match) {
		return false
	}
	if ff.OutPort != PortNone && !outputsTo(r.Actions, ff.OutPort) {
		return false
	}
	if ff.OutGroup != 0xffffffff && !usesGroup(r.Actions, ff.OutGroup) {
		return false
	}
	return true
}

// isLooseMatch reports whether rule match r is at least as specific as
// criteria c (OVS cls_rule_is_loose_match).
func isLooseMatch(r, c *Match) bool {
	for i := 0; i < KeyWords; i++ {
		cm := c.Mask.Word(i)
		if r.Mask.Word(i)&cm != cm || r.Value.Word(i)&cm != c.Value.Word(i) {
			return false
		}
	}
	return true
}

func outputsTo(acts []Action, port uint32) bool {
	for _, a := range acts {
		switch a := a.(type) {
		case *Output:
			if a.Port == port {
				return true
			}
		case *Enqueue:
			if a.Port == port {
				return true
			}
		case *Controller:
			if port == PortController {
				return true
			}
		case *WriteActions:
			if outputsTo(a.Actions, port) {
				return true
			}
		}
	}
	return false
}

func usesGroup(acts []Action, id uint32) bool {
	for _, a := range acts {
		switch a := a.(type) {
		case *Group:
			if a.ID == id {
				return true
			}
		case *WriteActions:
			if usesGroup(a.Actions, id) {
				return true
			}
		}
	}
	return false
}

func (p *Pipeline) forEachSelected(ff *FlowFilter, fn func(t *table, r *Rule)) {
	var sel []*Rule
	var tabs []*table
	for id := 0; id < NumTables; id++ {
		if ff.Table != 255 && id != int(ff.Table) {
			continue
		}
		t := p.tables[id]
		if t == nil {
			continue
		}
		collect := func(r *Rule) bool {
			if ff.selects(r) {
				sel = append(sel, r)
				tabs = append(tabs, t)
			}
			return true
		}
		t.hard.each(collect)
		t.soft.each(collect)
	}
	for i, r := range sel {
		fn(tabs[i], r)
	}
}

// ModifyFlows replaces the actions of the selected flows and returns how
// many changed (OFPFC_MODIFY / MODIFY_STRICT per ff.Strict).
func (p *Pipeline) ModifyFlows(ff *FlowFilter, actions []Action, resetCounts bool) int {
	kind := OpModify
	if ff.Strict {
		kind = OpModifyStrict
	}
	res, _ := p.Apply([]FlowOp{{Kind: kind, Flow: &Flow{Actions: actions}, Filter: ff, ResetCounts: resetCounts}})
	return res[0].Modified
}

// DeleteFlows removes the selected flows and returns them.
func (p *Pipeline) DeleteFlows(ff *FlowFilter) []*Rule {
	kind := OpDelete
	if ff.Strict {
		kind = OpDeleteStrict
	}
	res, _ := p.Apply([]FlowOp{{Kind: kind, Filter: ff}})
	return res[0].Removed
}

// Flows returns the selected flows, ordered by table, then priority
// (descending), then insertion.
func (p *Pipeline) Flows(ff *FlowFilter) []*Rule {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []*Rule
	p.forEachSelected(ff, func(t *table, r *Rule) { out = append(out, r) })
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		return a.seq < b.seq
	})
	return out
}

// NumFlows returns the number of installed flows.
func (p *Pipeline) NumFlows() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.nRules
}
