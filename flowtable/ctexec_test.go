package flowtable_test

import (
	"strconv"
	"testing"

	"github.com/govs-project/govs/flowtable"
)

// ctExecFlows copy a register into ct_mark and ct_label inside
// ct(commit,exec(...)) (the form Antrea uses), then branch on the mark
// after the recirculation.
const ctExecFlows = `
table=0,priority=10,ip,in_port=1,actions=load:0x7->NXM_NX_REG0[0..3],goto_table:1
table=0,priority=10,ip,in_port=3,actions=load:0x2->NXM_NX_REG0[0..3],goto_table:1
table=1,ip,actions=ct(commit,table=2,exec(set_field:0x10/0x10->ct_mark,move:NXM_NX_REG0[0..3]->NXM_NX_CT_MARK[0..3],move:NXM_NX_REG0[0..3]->NXM_NX_CT_LABEL[64..67]))
table=2,priority=10,ct_mark=0x17,actions=output:2
table=2,priority=10,ct_mark=0x12,actions=output:4
`

func TestCTExecMove(t *testing.T) {
	for _, c := range []struct {
		inPort, out uint32
		mark        uint32
		labelHi     uint64
	}{
		{1, 2, 0x17, 0x7},
		{3, 4, 0x12, 0x2},
	} {
		p := loadSeed(t, ctExecFlows)
		spec := "in_port=" + strconv.Itoa(int(c.inPort)) + ",tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1000,tp_dst=80"
		_, final, out := walk(t, p, spec, nil)
		if got := final.CtMark(); got != c.mark {
			t.Errorf("in_port %d: ct_mark %#x, want %#x (0x10 set, low bits moved from reg0)", c.inPort, got, c.mark)
		}
		if hi, lo := final.CtLabel(); hi != c.labelHi || lo != 0 {
			t.Errorf("in_port %d: ct_label %#x%016x, want reg0[0..3] at bit 64", c.inPort, hi, lo)
		}
		if len(out) != 1 || out[0].port != c.out {
			t.Errorf("in_port %d: output %v, want port %d", c.inPort, out, c.out)
		}
	}
}

// TestCTExecMoveRecorded: the moved register is read when ct() runs, so
// it is part of the megaflow and the cached ct operation carries the mark
// computed from it.
func TestCTExecMoveRecorded(t *testing.T) {
	rec := record(t, ctExecFlows, "in_port=1,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1000,tp_dst=80", 0)
	if len(rec.Segments[0].Ops) == 0 {
		t.Fatalf("no recorded ops: %+v", rec)
	}
	seg := rec.Segments[0]
	var ct *flowtable.DPOp
	for i := range seg.Ops {
		if seg.Ops[i].Kind == flowtable.DPCT {
			ct = &seg.Ops[i]
		}
	}
	if ct == nil {
		t.Fatalf("no ct op in %+v", seg.Ops)
	}
	if ct.CT.Mark != 0x17 || ct.CT.MarkMask != 0x1f || !ct.CT.SetMark {
		t.Errorf("cached ct op sets mark %#x/%#x (set %v), want 0x17/0x1f", ct.CT.Mark, ct.CT.MarkMask, ct.CT.SetMark)
	}
	if !ct.CT.SetLabel || ct.CT.LabelMask[7] != 0x0f || ct.CT.Label[7] != 0x07 {
		t.Errorf("cached ct op sets label %x/%x, want 0x7 at bits 64..67", ct.CT.Label, ct.CT.LabelMask)
	}
	// reg0[0..3] was written by table 0, before ct(): the written value
	// is what ct reads, so the segment depends on in_port (the match
	// that chose it), which the mask must hold.
	if flowtable.FieldInPort.Uint64(&seg.Mask) == 0 {
		t.Errorf("megaflow mask lacks in_port")
	}
}
