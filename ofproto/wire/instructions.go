package wire

import (
	"fmt"
)

// Instruction types (OFPIT_*), OpenFlow 1.1+.
const (
	OFPIT_GOTO_TABLE     uint16 = 1
	OFPIT_WRITE_METADATA uint16 = 2
	OFPIT_WRITE_ACTIONS  uint16 = 3
	OFPIT_APPLY_ACTIONS  uint16 = 4
	OFPIT_CLEAR_ACTIONS  uint16 = 5
	OFPIT_METER          uint16 = 6 // 1.3-1.4; an action (OFPAT_METER) in 1.5
	OFPIT_EXPERIMENTER   uint16 = 0xffff
)

// Instruction is one ofp_instruction. Which members are meaningful depends
// on Type: TableID (GOTO_TABLE), Metadata/MetadataMask (WRITE_METADATA),
// Actions (WRITE_ACTIONS, APPLY_ACTIONS), MeterID (METER).
type Instruction struct {
	Type         uint16
	TableID      uint8
	Metadata     uint64
	MetadataMask uint64
	MeterID      uint32
	Actions      []Action
}

// Name returns "OFPIT_GOTO_TABLE" etc.
func (in *Instruction) Name() string {
	switch in.Type {
	case OFPIT_GOTO_TABLE:
		return "OFPIT_GOTO_TABLE"
	case OFPIT_WRITE_METADATA:
		return "OFPIT_WRITE_METADATA"
	case OFPIT_WRITE_ACTIONS:
		return "OFPIT_WRITE_ACTIONS"
	case OFPIT_APPLY_ACTIONS:
		return "OFPIT_APPLY_ACTIONS"
	case OFPIT_CLEAR_ACTIONS:
		return "OFPIT_CLEAR_ACTIONS"
	case OFPIT_METER:
		return "OFPIT_METER"
	}
	return fmt.Sprintf("OFPIT(%d)", in.Type)
}

// AppendInstructions encodes instructions for version (1.1+).
func AppendInstructions(b []byte, version uint8, insts []Instruction) ([]byte, error) {
	for i := range insts {
		in := &insts[i]
		start := len(b)
		b = put16(b, in.Type)
		b = put16(b, 0)
		switch in.Type {
		case OFPIT_GOTO_TABLE:
			b = append(b, in.TableID, 0, 0, 0)
		case OFPIT_WRITE_METADATA:
			b = zeros(b, 4)
			b = put64(put64(b, in.Metadata), in.MetadataMask)
		case OFPIT_WRITE_ACTIONS, OFPIT_APPLY_ACTIONS:
			b = zeros(b, 4)
			var err error
			if b, err = AppendActions(b, version, in.Actions); err != nil {
				return b, fmt.Errorf("%s: %w", in.Name(), err)
			}
		case OFPIT_CLEAR_ACTIONS:
			b = zeros(b, 4)
		case OFPIT_METER:
			if version >= OFP15 {
				return b, fmt.Errorf("OFPIT_METER is an action in OpenFlow 1.5")
			}
			b = put32(b, in.MeterID)
		default:
			return b, fmt.Errorf("cannot encode instruction type %d", in.Type)
		}
		if err := setLen16(b, start+2, start); err != nil {
			return b, err
		}
	}
	return b, nil
}

// DecodeInstructions decodes an instruction list (no pooling).
func DecodeInstructions(version uint8, b []byte) ([]Instruction, error) {
	d := Decoder{version: version}
	return d.DecodeInstructions(b)
}

// DecodeInstructions decodes exactly len(b) bytes of instructions following
// decode_openflow11_instructions(): lengths must be multiples of 8 that fit,
// fixed-size instructions must have their exact size, duplicates are
// OFPBIC_DUP_INST, unknown ones OFPBIC_UNKNOWN_INST.
func (d *Decoder) DecodeInstructions(b []byte) ([]Instruction, error) {
	v := d.version
	if len(b)%8 != 0 {
		return nil, errf(v, OFPBRC_BAD_LEN, "instructions length %d is not a multiple of 8", len(b))
	}
	n := 0
	for q := b; len(q) >= 8; n++ {
		l := int(be16(q[2:]))
		if l < 8 || l%8 != 0 || l > len(q) {
			return nil, errf(v, OFPBIC_BAD_LEN, "bad instruction format at offset %d", len(b)-len(q))
		}
		q = q[l:]
	}
	out := sliceIn(d.instructionArena(), n)
	var seen uint32
	// First pass: validate types and sizes like OVS does before decoding
	// any action.
	for i, q := 0, b; i < n; i++ {
		t, l := be16(q), int(be16(q[2:]))
		var want int // 0 = extensible (at least 8)
		switch t {
		case OFPIT_GOTO_TABLE, OFPIT_CLEAR_ACTIONS, OFPIT_METER:
			want = 8
		case OFPIT_WRITE_METADATA:
			want = 24
		case OFPIT_WRITE_ACTIONS, OFPIT_APPLY_ACTIONS:
		case OFPIT_EXPERIMENTER:
			return nil, errf(v, OFPBIC_BAD_EXPERIMENTER, "experimenter instruction")
		default:
			return nil, errf(v, OFPBIC_UNKNOWN_INST, "unknown instruction type %d", t)
		}
		if want != 0 && l != want {
			return nil, errf(v, OFPBIC_BAD_LEN, "instruction %d length %d, want %d", t, l, want)
		}
		if t == OFPIT_METER && v >= OFP15 {
			return nil, errf(v, OFPBIC_UNKNOWN_INST, "meter is an action, not an instruction, in OpenFlow 1.5")
		}
		if seen&(1<<t) != 0 {
			return nil, errf(v, OFPBIC_DUP_INST, "instruction type %d appears twice", t)
		}
		seen |= 1 << t
		q = q[l:]
	}
	for i := 0; i < n; i++ {
		t, l := be16(b), int(be16(b[2:]))
		in := &out[i]
		in.Type = t
		switch t {
		case OFPIT_GOTO_TABLE:
			in.TableID = b[4]
		case OFPIT_WRITE_METADATA:
			in.Metadata, in.MetadataMask = be64(b[8:]), be64(b[16:])
		case OFPIT_METER:
			in.MeterID = be32(b[4:])
		case OFPIT_WRITE_ACTIONS, OFPIT_APPLY_ACTIONS:
			acts, err := d.DecodeActions(b[8:l])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", in.Name(), err)
			}
			in.Actions = acts
		}
		b = b[l:]
	}
	return out, nil
}
