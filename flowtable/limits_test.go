package flowtable

import (
	"errors"
	"testing"
)

// TestTableFlowLimits: a table's own limit (OVS's Flow_Table flow_limit)
// replaces MaxFlowsPerTable there, 0 refuses every add, and replacing a
// flow with the same match and priority always fits.
func TestTableFlowLimits(t *testing.T) {
	p := NewPipeline()
	p.SetLimits(Limits{MaxFlowsPerTable: 2, TableFlows: map[uint8]int{3: 1, 4: 0, 5: 3}})
	flow := func(table uint8, prio uint16) *Flow { return &Flow{Table: table, Priority: prio} }
	for _, tc := range []struct {
		table uint8
		prio  uint16
		full  bool
	}{
		{0, 1, false}, {0, 2, false}, {0, 3, true}, // MaxFlowsPerTable
		{3, 1, false}, {3, 2, true}, {3, 1, false}, // its own 1; a replacement fits
		{4, 1, true},                                              // 0: nothing
		{5, 1, false}, {5, 2, false}, {5, 3, false}, {5, 4, true}, // 3, above the global 2
	} {
		_, err := p.Apply([]FlowOp{{Kind: OpAdd, Flow: flow(tc.table, tc.prio)}})
		if got := errors.Is(err, ErrTableFull); got != tc.full {
			t.Errorf("table %d priority %d: %v, want full %v", tc.table, tc.prio, err, tc.full)
		}
	}
	if n := p.LimitRefusals.Load(); n != 4 {
		t.Errorf("LimitRefusals %d, want 4", n)
	}
}
