// Package translate converts between the OpenFlow wire structures of
// ofproto/wire and the flow model of flowtable: matches (NXM/OXM TLVs and
// the OpenFlow 1.0 ofp_match), actions and instructions, flow-mods, flow
// stats and groups.
//
// The encodings chosen per OpenFlow version are the ones Open vSwitch
// chooses (lib/nx-match.c nx_put_raw, lib/ofp-actions.c encode_*), so that a
// flow sent by ovs-ofctl in some version and dumped back in the same
// version prints exactly as it does against a real OVS. When decoding, the
// way an action arrived (load vs set_field vs mod_dl_dst, ...) is kept in
// flowtable.SetField.Raw because OVS prints it back the same way.
//
// Errors are *wire.OFPError values carrying the code OVS sends for the same
// problem in the given version, wrapped with context.
//
// Port numbers: the model uses OVS's 16-bit numbering (flowtable.PortInPort
// = 0xfff8 ...); OpenFlow 1.1+ 32-bit reserved ports (0xffffff00 and up)
// are mapped as ofputil_port_from_ofp11 / ofputil_port_to_ofp11 do.
package translate

import "github.com/govs-project/govs/ofproto/ofpfield"

// PortFromOFP11 converts an OpenFlow 1.1+ port number to the model's 16-bit
// numbering (ofputil_port_from_ofp11).
func PortFromOFP11(p uint32) (uint32, bool) { return ofpfield.PortFromOFP11(p) }

// PortToOFP11 converts a model port number to OpenFlow 1.1+
// (ofputil_port_to_ofp11).
func PortToOFP11(p uint32) uint32 { return ofpfield.PortToOFP11(p) }
