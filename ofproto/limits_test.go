package ofproto_test

import (
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/wire"
)

// TestFlowAndGroupLimits: past the pipeline's limits a flow-mod gets
// OFPFMFC_TABLE_FULL (OFPFMFC_ALL_TABLES_FULL in OpenFlow 1.0) and a
// group-mod OFPGMFC_OUT_OF_GROUPS, as from OVS; replacing a flow still
// works, each refusal is counted and the connection goes on.
func TestFlowAndGroupLimits(t *testing.T) {
	for _, v := range []uint8{wire.OFP10, wire.OFP13} {
		s := newAsyncSwitch(t)
		s.p.SetLimits(flowtable.Limits{MaxFlowsPerTable: 2, MaxFlows: 3, MaxGroups: 1})
		c := s.connect(v)
		add := func(flow string) wire.Message { return s.flowMod(c, flow, uint8(wire.OFPFC_ADD)) }
		s.send(c, add("priority=1,ip actions=drop"))
		s.send(c, add("priority=2,ip actions=drop"))
		s.send(c, add("priority=2,ip actions=output:1")) // replaces: fits
		wantFull := [2]uint16{5, 1}                      // OFPET_FLOW_MOD_FAILED, OFPFMFC_TABLE_FULL
		if v == wire.OFP10 {
			wantFull = [2]uint16{3, 0} // OFPET_FLOW_MOD_FAILED, OFPFMFC_ALL_TABLES_FULL
		}
		expectError := func(what string, xid uint32, m wire.Message, want [2]uint16) {
			t.Helper()
			s.write(c, xid, m)
			typ, code, err := c.Error(xid)
			if err != nil || [2]uint16{typ, code} != want {
				t.Errorf("v%d %s: got type %d code %d (%v), want %v", v, what, typ, code, err, want)
			}
		}
		expectError("third flow of table 0", 0x71, add("priority=3,ip actions=drop"), wantFull)
		if v == wire.OFP13 {
			s.send(c, add("table=1,priority=3,ip actions=drop"))
			expectError("fourth flow in all", 0x72, add("table=2,priority=3,ip actions=drop"), wantFull)
			g := func(id uint32) wire.Message {
				return &wire.GroupMod{Command: wire.OFPGC_ADD, Type: 0, GroupID: id, Buckets: []wire.Bucket{{WatchPort: wire.OFPP_ANY, WatchGroup: 0xffffffff}}}
			}
			s.send(c, g(1))
			expectError("second group", 0x73, g(2), [2]uint16{6, 3})
		}
		if err := c.Alive(); err != nil {
			t.Errorf("v%d: connection dead after the refusals: %v", v, err)
		}
		want := uint64(1)
		if v == wire.OFP13 {
			want = 3
		}
		if n := s.p.LimitRefusals.Load(); n != want {
			t.Errorf("v%d: LimitRefusals %d, want %d", v, n, want)
		}
	}
}
