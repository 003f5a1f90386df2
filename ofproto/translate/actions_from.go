package translate

import (
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpact"
	"github.com/govs-project/govs/ofproto/wire"
)

// ActionsFromWire translates an action list decoded in version into model
// actions (see ofpact.ActionsFromWire).
func ActionsFromWire(version uint8, acts []wire.Action, tlv *flowtable.TLVMap) ([]flowtable.Action, error) {
	return ofpact.ActionsFromWire(version, acts, tlv)
}

// InstructionsFromWire translates OpenFlow 1.1+ instructions into one model
// action list in the canonical instruction order (see
// ofpact.InstructionsFromWire).
func InstructionsFromWire(version uint8, insts []wire.Instruction, tlv *flowtable.TLVMap) ([]flowtable.Action, error) {
	return ofpact.InstructionsFromWire(version, insts, tlv)
}
