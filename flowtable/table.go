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

func newTable(batch *changeBatch, pf *prefixFields) *table {
	t := &table{hard: newClassifier(), soft: newClassifier()}
	t.hard.prefix, t.soft.prefix = pf, pf
	t.hard.batch, t.soft.batch = batch, batch
	t.soft.soft = true
	return t
}

func (t *table) cls(r *Rule) *classifier {
	if r.IsConjunctive() {
		return t.soft
	}
	return t.hard
}

// Pipeline is the OpenFlow state of one bridge: flow tables, groups and
// the TLV map, plus what the interpreter needs (conntrack, MAC learning).
// It is safe for concurrent use: flow-mods change the tables under the
// write lock, dumps read them under the read lock, and packet walks take
// no lock at all (leftright.go).
type Pipeline struct {
	mu    sync.RWMutex
	locks lockStats // lockstats.go
	// sides are the two copies of the tables, groups and meters; walks
	// read sides[active], writers change the other (leftright.go).
	sides   [2]side
	active  atomic.Uint32
	readers [2]readerCount
	w       writeState
	batch   changeBatch // Apply's, for the classifiers
	spares  spareTables // for bundles' stages (stage.go)
	// meterIDs are the datapath ids the meters hold (meter.go).
	meterIDs providerPool
	// FailOpen is OVS's fail-open mode (ofproto/fail-open.c): a standalone
	// bridge whose controllers have been gone for a while switches every
	// packet as NORMAL, above all flows, until one comes back. Whoever
	// changes it bumps Generation (SetFailOpen).
	FailOpen atomic.Bool
	seq      uint64
	nRules   int
	// timed holds the flows with an idle or hard timeout.
	timed map[*Rule]*timedState

	// Generation is bumped by every change that can alter a lookup; a
	// flow cache compares it to drop stale entries.
	Generation atomic.Uint64
	genHook    atomic.Pointer[func(gen uint64)] // see SetGenerationHook

	TLV       *TLVMap
	Conntrack Conntrack  // nil: ct() marks packets +trk+inv
	MACs      *MACTable  // for NORMAL
	Ports     PortLister // for NORMAL/FLOOD/ALL; nil: outputs name the reserved port
	// vlans are the ports' VLAN roles for NORMAL (SetPortVLANs); nil:
	// every port a trunk of every VLAN.
	vlans atomic.Pointer[map[uint32]PortVLAN]
	// MaxResubmitDepth bounds the nesting of resubmit, goto_table, groups
	// and ct(table=) recirculation of one packet (OVS MAX_DEPTH: 64).
	MaxResubmitDepth int
	// Limits bound what flow-mods (and learn) may install.
	Limits Limits
	// LimitRefusals counts flows and groups refused by Limits.
	LimitRefusals atomic.Uint64
	// XlateErrors counts packets whose translation ran out of budget.
	XlateErrors atomic.Uint64
	// OnXlateError, if set, hears of such packets, at most once a second
	// (for a log line; the packet path stays quiet under a loop).
	OnXlateError    func(e XlateError, key *Key)
	lastXlateReport atomic.Int64 // unix nanoseconds of the last OnXlateError
	// Now returns the time (tests use a fake clock).
	Now func() time.Time

	trimmer trimmer // memory given back after bulk changes
	// Table lookup and match counts: one set per packet loop, and a
	// shared one for runs outside a loop (see TableCounters).
	countersMu     sync.Mutex
	counters       []*TableCounters
	sharedCounters TableCounters
	// prefixes are the tables' tracked fields (nil: the default), as
	// Flow_Table prefixes (prefix.go).
	prefixes [NumTables]atomic.Pointer[prefixFields]
}

// PortLister lists the bridge's ports, for flooding.
type PortLister interface {
	PortNumbers() []uint32
}

// NewPipeline returns an empty pipeline.
func NewPipeline() *Pipeline {
	p := &Pipeline{TLV: NewTLVMap(), timed: map[*Rule]*timedState{}, MACs: NewMACTable(300 * time.Second),
		MaxResubmitDepth: 64, Limits: DefaultLimits, Now: time.Now}
	p.sharedCounters.shared = true
	groups := map[uint32]*GroupEntry{}
	p.sides[0].groups, p.sides[1].groups = groups, groups
	p.sides[0].batch, p.sides[1].batch = &p.batch, &p.batch
	p.sides[0].p, p.sides[1].p = p, p
	return p
}

// table returns table id of the writer's side, created if need be.
func (p *Pipeline) table(id uint8) *table { return p.cur().table(id) }

// Errors of flow-mods, matching the OpenFlow errors OVS sends.
var (
	ErrOverlap      = errors.New("flow overlaps an existing flow (check_overlap)")
	ErrBadTable     = errors.New("bad table id")
	ErrUnknownGroup = errors.New("group does not exist")
	// ErrTableFull: the table, or all tables together, hold as many flows
	// as Limits allow (OFPFMFC_TABLE_FULL; OFPFMFC_ALL_TABLES_FULL in 1.0).
	ErrTableFull = errors.New("flow table full")
	// ErrOutOfGroups: Limits.MaxGroups groups exist (OFPGMFC_OUT_OF_GROUPS).
	ErrOutOfGroups = errors.New("out of groups")
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
	defer p.unlockWrite(p.lockWrite())
	p.addLocked(newRule(f), p.Now())
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
	defer p.unlockWrite(p.lockWrite())
	for _, f := range fs {
		if f.Flags&FlagCheckOverlap != 0 && p.overlapsLocked(f) {
			return ErrOverlap
		}
	}
	now := p.Now()
	for _, f := range fs {
		p.addLocked(newRule(f), now)
	}
	p.noteBulk(len(fs))
	return nil
}

// CheckGroups reports an error if f uses a group that does not exist
// (OpenFlow: OFPBAC_BAD_OUT_GROUP).
func (p *Pipeline) CheckGroups(f *Flow) error { return p.validateGroups(f) }

func (p *Pipeline) validateGroups(f *Flow) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.validateGroupsLocked(f.Actions); err != nil {
		return err
	}
	return p.validateMetersLocked(f.Actions)
}

// validateGroupsLocked is validateGroups with p.mu held (read or write).
func (p *Pipeline) validateGroupsLocked(acts []Action) error {
	for _, a := range acts {
		if g, ok := a.(*Group); ok {
			if _, ok := p.cur().groups[g.ID]; !ok {
				return fmt.Errorf("group %d: %w", g.ID, ErrUnknownGroup)
			}
		}
	}
	return nil
}

// addLocked installs r (a new rule: newRule), created at now, and returns
// it and the rule it replaced (nil if none).
func (p *Pipeline) addLocked(r *Rule, now time.Time) (*Rule, *Rule) {
	t := p.table(r.Table)
	old := t.hard.findSame(r)
	if old == nil {
		old = t.soft.findSame(r)
	}
	r.Stats.Created = now // before the old flow's counters may take over
	if old != nil {
		p.removeRule(t, old)
		p.nRules--
		if r.Flags&FlagResetCounts == 0 {
			// The counters go on in the old flow's: walks still on the
			// other side count there until the change is published.
			r.Stats = old.Stats
		}
	}
	r.Stats.LastUsed.Store(now.UnixNano())
	p.seq++
	r.seq = p.seq
	p.insertRule(t, r)
	p.nRules++
	p.noteTimeoutsLocked(r, now)
	p.bumpLocked()
	return r, old
}

// noteTimeoutsLocked tracks r, just installed, if it has a timeout.
func (p *Pipeline) noteTimeoutsLocked(r *Rule, now time.Time) {
	if r.IdleTimeout != 0 || r.HardTimeout != 0 {
		p.timed[r] = &timedState{lastPackets: r.Stats.Packets.Load(), lastActive: now}
	}
}

func (p *Pipeline) overlapsLocked(f *Flow) bool {
	t := p.cur().tables[f.Table]
	if t == nil {
		return false
	}
	over := false
	check := func(r *Rule) bool {
		if r.Priority == f.Priority && matchesOverlap(r.match, &f.Match) && !r.match.equal(&f.Match) {
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
func matchesOverlap(a sparseMatch, b *Match) bool {
	for i := 0; i < KeyWords; i++ {
		av, am := a.word(i)
		common := am & b.Mask.Word(i)
		if av&common != b.Value.Word(i)&common {
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

// selectsAll reports whether the filter selects every flow of the
// tables it names (a non-strict delete of everything).
func (ff *FlowFilter) selectsAll() bool {
	return !ff.Strict && ff.CookieMask == 0 && ff.OutPort == PortNone && ff.OutGroup == 0xffffffff &&
		ff.Match.Mask == (Key{})
}

// Selects reports whether the filter selects r (flow monitors use it on
// each changed flow).
func (ff *FlowFilter) Selects(r *Rule) bool { return ff.selects(r) }

func (ff *FlowFilter) selects(r *Rule) bool {
	if ff.Cookie&ff.CookieMask != r.Cookie&ff.CookieMask {
		return false
	}
	if ff.Strict {
		if r.Priority != ff.Priority || !r.match.equal(&ff.Match) {
			return false
		}
	} else if !isLooseMatch(r.match, &ff.Match) {
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
func isLooseMatch(r sparseMatch, c *Match) bool {
	for i := 0; i < KeyWords; i++ {
		cm := c.Mask.Word(i)
		if cm == 0 {
			continue
		}
		rv, rm := r.word(i)
		if rm&cm != cm || rv&cm != c.Value.Word(i) {
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
		t := p.cur().tables[id]
		if t == nil {
			continue
		}
		if ff.Strict {
			// One match and priority: the classifier finds the flow
			// without a scan (agents delete and modify strictly, flow by
			// flow, and a scan per flow-mod stalls packets at scale).
			for _, c := range []*classifier{t.hard, t.soft} {
				if r := c.find(&ff.Match, ff.Priority); r != nil && ff.selects(r) {
					sel = append(sel, r)
					tabs = append(tabs, t)
				}
			}
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
	p.noteBulk(len(out)) // a dump: its reply is garbage soon
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

// TableFlowCounts returns the number of flows in each non-empty table.
func (p *Pipeline) TableFlowCounts() map[uint8]int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := map[uint8]int{}
	for id, t := range p.cur().tables {
		if t != nil && t.hard.n+t.soft.n > 0 {
			out[uint8(id)] = t.hard.n + t.soft.n
		}
	}
	return out
}

// countXlateError counts a translation stopped by the recursion budget and
// reports it to OnXlateError when the last report is a second old.
func (p *Pipeline) countXlateError(e XlateError, key *Key) {
	p.XlateErrors.Add(1)
	if p.OnXlateError == nil {
		return
	}
	now := p.Now().UnixNano()
	last := p.lastXlateReport.Load()
	if now-last < int64(time.Second) || !p.lastXlateReport.CompareAndSwap(last, now) {
		return
	}
	p.OnXlateError(e, key)
}

// Limits bound the flows and groups a pipeline holds, so that a controller
// (or a learn action fed by packets) cannot grow it without bound. Zero
// fields are unlimited.
type Limits struct {
	// MaxFlowsPerTable is the most flows one table holds (OVS advertises
	// max_entries 1,000,000 per table; its Flow_Table flow_limit).
	MaxFlowsPerTable int
	// MaxFlows is the most flows of all tables together.
	MaxFlows int
	// MaxGroups is the most groups.
	MaxGroups int
	// TableFlows are limits of single tables that replace
	// MaxFlowsPerTable there (OVS's Flow_Table flow_limit: 0 refuses
	// every add to that table).
	TableFlows map[uint8]int
}

// DefaultLimits are the limits of a new pipeline: the 1,000,000 flows per
// table OVS advertises in its table stats, 2,000,000 flows in all (about
// 1.5 GB of flows in OVS) and 65,536 groups.
var DefaultLimits = Limits{MaxFlowsPerTable: 1_000_000, MaxFlows: 2_000_000, MaxGroups: 65536}

// SetLimits changes the limits; flows and groups already held stay.
func (p *Pipeline) SetLimits(l Limits) {
	p.mu.Lock()
	p.Limits = l
	p.mu.Unlock()
}

// roomForLocked checks that adding r stays within Limits; replacing a flow
// with the same match and priority always fits. The counts come first so
// that an add below the limits costs no extra lookup.
func (p *Pipeline) roomForLocked(r *Rule) error {
	l := &p.Limits
	t := p.cur().tables[r.Table]
	n := 0
	if t != nil {
		n = t.hard.n + t.soft.n
	}
	tableMax, set := l.TableFlows[r.Table]
	if !set {
		tableMax, set = l.MaxFlowsPerTable, l.MaxFlowsPerTable > 0
	}
	tableFull := set && n >= tableMax
	allFull := l.MaxFlows > 0 && p.nRules >= l.MaxFlows
	if !tableFull && !allFull {
		return nil
	}
	if t != nil && (t.hard.findSame(r) != nil || t.soft.findSame(r) != nil) {
		return nil
	}
	p.LimitRefusals.Add(1)
	if tableFull {
		return fmt.Errorf("table %d holds %d flows, the limit: %w", r.Table, n, ErrTableFull)
	}
	return fmt.Errorf("the tables hold %d flows, the limit: %w", p.nRules, ErrTableFull)
}
