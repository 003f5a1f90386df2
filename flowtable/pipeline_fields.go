package flowtable

import "sync"

// pipelineMask covers Open vSwitch's pipeline fields (meta-flow's
// mf_is_pipeline_field): in_port, metadata, the registers, the tunnel
// fields and tun_metadataN. They are what an OpenFlow 1.5 packet-out may
// say about its packet besides the packet itself. Computed on first use:
// the register fields are made in an init function.
var pipelineMask = sync.OnceValue(func() Key {
	var m Match
	fields := []*Field{FieldInPort, FieldMetadata, FieldTunID, FieldTunSrc, FieldTunDst, FieldTunIPv6Src, FieldTunIPv6Dst, FieldTunFlags}
	for _, name := range []string{"tun_gbp_id", "tun_gbp_flags", "packet_type"} {
		if f := FieldByName(name); f != nil {
			fields = append(fields, f)
		}
	}
	fields = append(fields, FieldReg[:]...)
	for _, f := range fields {
		m.Set(f, make([]byte, f.Bytes), nil)
	}
	for i := offTunMetadata; i < offTunMetadata+TunMetadataSize; i++ {
		m.Mask[i] = 0xff
	}
	return m.Mask
})

// PipelineOnly reports whether m constrains pipeline fields only (see
// pipelineMask); Open vSwitch refuses a packet-out whose match has others
// (OFPBRC_PIPELINE_FIELDS_ONLY).
func (m *Match) PipelineOnly() bool {
	pm := pipelineMask()
	for i := 0; i < KeyWords; i++ {
		if m.Mask.Word(i)&^pm.Word(i) != 0 {
			return false
		}
	}
	return true
}

// SetFromMatch gives k the values m has for the bits m constrains and
// keeps k's other bits: a packet-out's pipeline fields on the key
// extracted from its packet.
func (k *Key) SetFromMatch(m *Match) {
	for i := 0; i < KeyWords; i++ {
		mask := m.Mask.Word(i)
		k.SetWord(i, k.Word(i)&^mask|m.Value.Word(i)&mask)
	}
}
