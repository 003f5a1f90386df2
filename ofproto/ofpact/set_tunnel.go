package ofpact

// set_tunnel and set_tunnel64 (NXAST_SET_TUNNEL, NXAST_SET_TUNNEL64) set
// tun_id; the model has no separate action for them.

import (
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	fromWire(func(t Decoder, a *wire.ActionSetTunnel) (flowtable.Action, error) {
		return t.setFieldUint(flowtable.FieldTunID, a.TunID, flowtable.RawSetField), nil
	})
}
