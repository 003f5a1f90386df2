// Package wire is the OpenFlow wire codec of govs: framing, version
// negotiation, errors, OXM/NXM matches, actions, instructions and the
// messages that ovs-ofctl, Antrea's ofnet and os-ken put on the wire, for
// OpenFlow 1.0 (0x01), 1.3 (0x04) and 1.5 (0x06) plus the Nicira (NX) and
// ONF extensions Open vSwitch implements.
//
// Everything here is wire level: decoded structures mirror the bytes (field
// code points, offsets, raw action subtypes) so that Encode(Decode(b)) == b.
// Translating to and from the flow model is done elsewhere.
//
// Conventions:
//   - Encoders append to a caller-supplied slice and take the OpenFlow
//     version as a parameter; they never allocate beyond growing that slice.
//   - Decoders never trust a length field; every failure is an *OFPError
//     carrying the exact OFPET/code Open vSwitch sends for that problem in the
//     given version, wrapped with context.
//   - Decoded values (match values/masks, packet data, notes, userdata, ...)
//     are sub-slices of the input buffer: they stay valid only as long as the
//     caller keeps that buffer unchanged.
//   - A Decoder reuses its memory between messages (see Decoder.Reset), so a
//     connection can decode flow-mods without allocating.
package wire
