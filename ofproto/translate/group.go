package translate

import (
	"encoding/binary"
	"fmt"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/wire"
)

// GroupMod is a decoded group-mod.
type GroupMod struct {
	Command uint16 // wire.OFPGC_*
	// Group is the group to add or modify (for delete only Group.ID counts;
	// flowtable.GroupAllID deletes every group).
	Group *flowtable.GroupEntry
	// CommandBucketID is the 1.5 command_bucket_id (insert/remove bucket).
	CommandBucketID uint32
}

// GroupModFromWire translates OFPT_GROUP_MOD (1.3 or 1.5 layout) or OVS's
// NXT_GROUP_MOD (OpenFlow 1.0: 1.5 layout with 1.0 actions). In the 1.3
// layout buckets get ids 0, 1, ... in order as OVS assigns them.
func GroupModFromWire(gm *wire.GroupMod, version uint8, tlv *flowtable.TLVMap) (*GroupMod, error) {
	if gm.Type > wire.OFPGT_FF {
		return nil, ofpfield.Err(version, wire.OFPGMFC_BAD_TYPE, "group type %d", gm.Type)
	}
	switch gm.Command {
	case wire.OFPGC_ADD, wire.OFPGC_MODIFY, wire.OFPGC_DELETE:
	case wire.OFPGC15_INSERT_BUCKET, wire.OFPGC15_REMOVE_BUCKET:
		if version == wire.OFP13 && !gm.NX {
			return nil, ofpfield.Err(version, wire.OFPGMFC_BAD_COMMAND, "group command %d needs OpenFlow 1.5", gm.Command)
		}
	default:
		return nil, ofpfield.Err(version, wire.OFPGMFC_BAD_COMMAND, "group command %d", gm.Command)
	}
	g := &flowtable.GroupEntry{ID: gm.GroupID, Type: flowtable.GroupType(gm.Type)}
	var err error
	if g.Buckets, err = bucketsFromWire(gm.Buckets, version, tlv, version == wire.OFP13 && !gm.NX); err != nil {
		return nil, fmt.Errorf("group %d: %w", gm.GroupID, err)
	}
	if gm.Command != wire.OFPGC15_INSERT_BUCKET {
		if err := checkBuckets(g, version); err != nil {
			return nil, err
		}
	}
	return &GroupMod{Command: gm.Command, Group: g, CommandBucketID: gm.CommandBucketID}, nil
}

// checkBuckets refuses buckets that do not fit their group's type, as
// OVS's ofputil_decode_group_mod does: a weight outside a select group, a
// watch port or group in an all or indirect group, a fast failover bucket
// without one.
func checkBuckets(g *flowtable.GroupEntry, version uint8) error {
	for i := range g.Buckets {
		b := &g.Buckets[i]
		live := b.WatchPort != flowtable.PortNone || b.WatchGroup != GroupAny
		switch {
		case b.Weight != 0 && g.Type != flowtable.GroupSelect:
			return ofpfield.Err(version, wire.OFPGMFC_INVALID_GROUP, "group %d bucket %d: weight %d in a group of type %d", g.ID, i, b.Weight, g.Type)
		case live && (g.Type == flowtable.GroupAll || g.Type == flowtable.GroupIndirect):
			return ofpfield.Err(version, wire.OFPGMFC_WATCH_UNSUPPORTED, "group %d bucket %d: watch in a group of type %d", g.ID, i, g.Type)
		case !live && g.Type == flowtable.GroupFastFailover:
			return ofpfield.Err(version, wire.OFPGMFC_INVALID_GROUP, "group %d bucket %d: fast failover bucket without watch port or group", g.ID, i)
		}
	}
	return nil
}

func bucketsFromWire(bs []wire.Bucket, version uint8, tlv *flowtable.TLVMap, layout13 bool) ([]flowtable.Bucket, error) {
	out := make([]flowtable.Bucket, len(bs))
	for i := range bs {
		wb := &bs[i]
		b := &out[i]
		acts, err := ActionsFromWire(version, wb.Actions, tlv)
		if err != nil {
			return nil, fmt.Errorf("bucket %d: %w", i, err)
		}
		b.Actions = acts
		b.WatchPort, b.WatchGroup = flowtable.PortNone, GroupAny
		watchPort := wire.OFPP_ANY
		if layout13 {
			b.ID = uint32(i)
			b.Weight = wb.Weight
			watchPort, b.WatchGroup = wb.WatchPort, wb.WatchGroup
		} else {
			b.ID = wb.BucketID
			for _, p := range wb.Props {
				switch p.Type {
				case wire.OFPGBPT15_WEIGHT:
					if len(p.Data) < 2 {
						return nil, ofpfield.Err(version, wire.OFPBPC_BAD_LEN, "bucket %d: weight property", i)
					}
					b.Weight = binary.BigEndian.Uint16(p.Data)
				case wire.OFPGBPT15_WATCH_PORT:
					if len(p.Data) < 4 {
						return nil, ofpfield.Err(version, wire.OFPBPC_BAD_LEN, "bucket %d: watch_port property", i)
					}
					watchPort = binary.BigEndian.Uint32(p.Data)
				case wire.OFPGBPT15_WATCH_GROUP:
					if len(p.Data) < 4 {
						return nil, ofpfield.Err(version, wire.OFPBPC_BAD_LEN, "bucket %d: watch_group property", i)
					}
					b.WatchGroup = binary.BigEndian.Uint32(p.Data)
				}
			}
		}
		if watchPort != wire.OFPP_ANY {
			p, ok := ofpfield.PortFromOFP11(watchPort)
			if !ok {
				return nil, ofpfield.Err(version, wire.OFPGMFC_BAD_WATCH, "bucket %d: watch_port %#x", i, watchPort)
			}
			b.WatchPort = p
		}
	}
	return out, nil
}

// GroupDescToWire encodes a group for a group description reply
// (dump-groups) in version: the 1.3 layout, or the 1.5 layout (bucket ids,
// weight/watch properties) for 1.5 and for NXST_GROUP_DESC in 1.0.
func GroupDescToWire(g *flowtable.GroupEntry, version uint8, tlv *flowtable.TLVMap) (wire.GroupDesc, error) {
	out := wire.GroupDesc{Type: uint8(g.Type), GroupID: g.ID}
	var err error
	out.Buckets, err = bucketsToWire(g, version, tlv)
	return out, err
}

// GroupModToWire encodes a group-mod as ovs-ofctl sends it in version
// (NXT_GROUP_MOD in 1.0).
func GroupModToWire(gm *GroupMod, version uint8, tlv *flowtable.TLVMap) (*wire.GroupMod, error) {
	out := &wire.GroupMod{NX: version == wire.OFP10, Command: gm.Command, Type: uint8(gm.Group.Type),
		GroupID: gm.Group.ID, CommandBucketID: gm.CommandBucketID}
	var err error
	out.Buckets, err = bucketsToWire(gm.Group, version, tlv)
	return out, err
}

func bucketsToWire(g *flowtable.GroupEntry, version uint8, tlv *flowtable.TLVMap) ([]wire.Bucket, error) {
	out := make([]wire.Bucket, len(g.Buckets))
	for i := range g.Buckets {
		b := &g.Buckets[i]
		wb := &out[i]
		acts, err := ActionsToWire(version, b.Actions, tlv)
		if err != nil {
			return nil, fmt.Errorf("group %d bucket %d: %w", g.ID, i, err)
		}
		wb.Actions = acts
		watchPort := wire.OFPP_ANY
		if b.WatchPort != flowtable.PortNone {
			watchPort = ofpfield.PortToOFP11(b.WatchPort)
		}
		if version == wire.OFP13 {
			wb.Weight, wb.WatchPort, wb.WatchGroup = b.Weight, watchPort, b.WatchGroup
			continue
		}
		// ofputil_put_ofp15_bucket: weight for select groups, watch
		// port/group when set.
		wb.BucketID = b.ID
		if g.Type == flowtable.GroupSelect {
			wb.Props = append(wb.Props, wire.Property{Type: wire.OFPGBPT15_WEIGHT, Data: binary.BigEndian.AppendUint16(nil, b.Weight)})
		}
		if watchPort != wire.OFPP_ANY {
			wb.Props = append(wb.Props, wire.Property{Type: wire.OFPGBPT15_WATCH_PORT, Data: binary.BigEndian.AppendUint32(nil, watchPort)})
		}
		if b.WatchGroup != GroupAny {
			wb.Props = append(wb.Props, wire.Property{Type: wire.OFPGBPT15_WATCH_GROUP, Data: binary.BigEndian.AppendUint32(nil, b.WatchGroup)})
		}
	}
	return out, nil
}
