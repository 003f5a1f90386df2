// Package ofptext is the lexical layer of the ovs-ofctl flow syntax
// (ovs-fields(7), ovs-actions(7)): the key/value scanner, numbers, ports,
// subfields and field values, their printers, and the positioned Error.
//
// It sits below both users of the syntax so that neither imports the
// other: ofproto/flowtext (flows, matches, groups) and ofproto/ofpact (one
// file per action) build on it, and flowtext reaches actions through
// ofpact.
package ofptext
