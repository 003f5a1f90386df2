package translate

import (
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpact"
	"github.com/govs-project/govs/ofproto/wire"
)

// ActionsToWire encodes model actions as an OpenFlow action list for
// version (see ofpact.ActionsToWire; each action's encodings live in its
// file there).
func ActionsToWire(version uint8, acts []flowtable.Action, tlv *flowtable.TLVMap) ([]wire.Action, error) {
	return ofpact.ActionsToWire(version, acts, tlv)
}

// InstructionsToWire encodes a model action list as OpenFlow 1.1+
// instructions (see ofpact.InstructionsToWire).
func InstructionsToWire(version uint8, acts []flowtable.Action, tlv *flowtable.TLVMap) ([]wire.Instruction, error) {
	return ofpact.InstructionsToWire(version, acts, tlv)
}
