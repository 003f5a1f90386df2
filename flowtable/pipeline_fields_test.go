package flowtable

import "testing"

func TestPipelineOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(m *Match)
		want bool
	}{
		{"empty", func(*Match) {}, true},
		{"in_port, metadata, registers, tunnel", func(m *Match) {
			m.SetUint64(FieldInPort, 1)
			m.SetUint64(FieldMetadata, 3)
			m.SetUint64(FieldReg[14], 2)
			m.SetMaskedUint64(FieldReg[9], 2, 2)
			m.SetUint64(FieldTunID, 5)
			m.SetUint64(FieldTunDst, 0x0a000001)
		}, true},
		{"ip_src", func(m *Match) { m.SetUint64(FieldByName("ip_src"), 0x0a000001) }, false},
		{"ct_state", func(m *Match) { m.SetUint64(FieldByName("ct_state"), 0x21) }, false},
		{"pkt_mark", func(m *Match) { m.SetUint64(FieldByName("pkt_mark"), 1) }, false},
	} {
		var m Match
		tc.set(&m)
		if got := m.PipelineOnly(); got != tc.want {
			t.Errorf("%s: PipelineOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSetFromMatch(t *testing.T) {
	var k Key
	FieldReg[0].SetUint64(&k, 0xffffffff)
	FieldReg[1].SetUint64(&k, 7)
	var m Match
	m.SetMaskedUint64(FieldReg[0], 0x5, 0xf)
	m.SetUint64(FieldMetadata, 3)
	k.SetFromMatch(&m)
	if got := FieldReg[0].Uint64(&k); got != 0xfffffff5 {
		t.Errorf("reg0 = %#x, want 0xfffffff5 (only the masked bits set)", got)
	}
	if got := FieldReg[1].Uint64(&k); got != 7 {
		t.Errorf("reg1 = %d, want 7 (untouched)", got)
	}
	if got := FieldMetadata.Uint64(&k); got != 3 {
		t.Errorf("metadata = %d, want 3", got)
	}
}
