package flowtable

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// GroupType is the OpenFlow group type.
type GroupType uint8

const (
	GroupAll GroupType = iota
	GroupSelect
	GroupIndirect
	GroupFastFailover
)

func (t GroupType) String() string {
	return [...]string{"all", "select", "indirect", "ff"}[t]
}

// Bucket is one bucket of a group.
type Bucket struct {
	ID         uint32
	Weight     uint16
	WatchPort  uint32
	WatchGroup uint32
	Actions    []Action
}

// GroupEntry is a group table entry.
type GroupEntry struct {
	ID      uint32
	Type    GroupType
	Buckets []Bucket
	Packets atomic.Uint64
	Bytes   atomic.Uint64
}

// GroupAllID is OFPG_ALL (delete every group).
const GroupAllID = 0xfffffffc

// AddGroup adds a group; it fails if the id exists.
func (p *Pipeline) AddGroup(g *GroupEntry) error {
	_, err := p.applyOne(FlowOp{Kind: OpGroupAdd, Group: g})
	return err
}

// ModifyGroup replaces an existing group.
func (p *Pipeline) ModifyGroup(g *GroupEntry) error {
	_, err := p.applyOne(FlowOp{Kind: OpGroupModify, Group: g})
	return err
}

// DeleteGroup deletes a group (GroupAllID: all) and the flows that use it,
// as OpenFlow requires, and returns those flows.
func (p *Pipeline) DeleteGroup(id uint32) []*Rule {
	res, _ := p.applyOne(FlowOp{Kind: OpGroupDelete, GroupID: id}) // cannot fail
	return res.Removed
}

// applyOne applies one operation and returns its result or its bare error.
func (p *Pipeline) applyOne(op FlowOp) (OpResult, error) {
	res, err := p.Apply([]FlowOp{op})
	if err != nil {
		var oe *OpError
		if errors.As(err, &oe) {
			return OpResult{}, oe.Err
		}
		return OpResult{}, err
	}
	return res[0], nil
}

// Groups returns the groups ordered by id.
func (p *Pipeline) Groups() []*GroupEntry {
	p.mu.RLock()
	defer p.mu.RUnlock()
	groups := p.cur().groups
	out := make([]*GroupEntry, 0, len(groups))
	for _, g := range groups {
		out = append(out, g)
	}
	sortGroups(out)
	return out
}

func sortGroups(gs []*GroupEntry) {
	for i := 1; i < len(gs); i++ {
		for j := i; j > 0 && gs[j].ID < gs[j-1].ID; j-- {
			gs[j], gs[j-1] = gs[j-1], gs[j]
		}
	}
}

func validateGroup(g *GroupEntry) error {
	if g.ID > 0xffffff00 {
		return fmt.Errorf("group id %#x is reserved", g.ID)
	}
	if g.Type == GroupIndirect && len(g.Buckets) != 1 {
		return fmt.Errorf("group %d: an indirect group needs exactly one bucket", g.ID)
	}
	return nil
}

// MACTable is NORMAL's learning table: (VLAN, MAC) -> port, with aging.
type MACTable struct {
	mu      sync.Mutex
	entries map[macKey]macEntry
	aging   time.Duration
	// gen changes whenever a lookup could answer differently: a MAC
	// learned for the first time or on another port, an entry aged out
	// or flushed. Flow caches keep NORMAL decisions while it stays.
	gen atomic.Uint64
}

type macKey struct {
	vlan uint16
	mac  [6]byte
}

type macEntry struct {
	port uint32
	seen time.Time
}

// NewMACTable returns a table whose entries expire after aging.
func NewMACTable(aging time.Duration) *MACTable {
	return &MACTable{entries: map[macKey]macEntry{}, aging: aging}
}

// Learn records that mac on vlan was seen on port.
func (t *MACTable) Learn(vlan uint16, mac [6]byte, port uint32, now time.Time) {
	if mac[0]&1 != 0 {
		return // never learn multicast sources
	}
	k := macKey{vlan, mac}
	t.mu.Lock()
	if old, ok := t.entries[k]; !ok || old.port != port {
		t.gen.Add(1)
	}
	t.entries[k] = macEntry{port, now}
	t.mu.Unlock()
}

// Gen is the table's generation (see MACTable.gen).
func (t *MACTable) Gen() uint64 { return t.gen.Load() }

// Aging is how long an entry lives without being learned again.
func (t *MACTable) Aging() time.Duration { return t.aging }

// Lookup returns the port of mac on vlan if known and fresh.
func (t *MACTable) Lookup(vlan uint16, mac [6]byte, now time.Time) (uint32, bool) {
	port, _, ok := t.LookupExpiry(vlan, mac, now)
	return port, ok
}

// LookupExpiry is Lookup that also says when the entry ages out unless
// learned again.
func (t *MACTable) LookupExpiry(vlan uint16, mac [6]byte, now time.Time) (uint32, time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[macKey{vlan, mac}]
	if !ok {
		return 0, time.Time{}, false
	}
	if now.Sub(e.seen) > t.aging {
		delete(t.entries, macKey{vlan, mac})
		t.gen.Add(1)
		return 0, time.Time{}, false
	}
	return e.port, e.seen.Add(t.aging), true
}

// Flush forgets every entry (or those on port, when port != PortNone).
func (t *MACTable) Flush(port uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.entries {
		if port == PortNone || e.port == port {
			delete(t.entries, k)
		}
	}
	t.gen.Add(1)
}
