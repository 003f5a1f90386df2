// Package conntrack is govs' connection tracker and NAT engine: the ct()
// action of the OpenFlow pipeline. It follows Open vSwitch's userspace
// conntrack (lib/conntrack*.c) and the ct_* fields of ovs-fields(7), so that
// flows written for OVS (Antrea's in particular) behave the same. It has no
// dependency on sockets, OpenFlow or the rest of govs.
//
// # Use
//
// One Tracker serves the whole switch. For every ct() action the pipeline
// calls
//
//	t.Execute(frame, l3Offset, ethType, &md, &args, now)
//
// where md is the packet's Meta (its ct_* fields, zero when the packet enters
// the switch, carried across recirculations) and args the ct() arguments
// (zone, commit, force, exec(ct_mark/ct_label), nat). Execute rewrites the
// frame in place when NAT applies and replaces md with the result. It does
// not allocate. ct_clear is md.Clear(). A datapath that runs one ct action
// over a batch of packets can call ExecuteBatch instead: same results, but
// the cache misses of the batch overlap, which matters with large tables.
//
// Management: Dump (Entry.String prints the `ovs-appctl
// dpctl/dump-conntrack` format), Flush, FlushZone, FlushTuple, Count,
// ZoneCount, ZoneLimitCount, SetGlobalLimit, SetZoneLimit,
// SetDefaultZoneLimit, Stats.
// Memory is given back by Sweep, which StartSweeper runs periodically.
//
// # Semantics
//
//   - Zones 0-65535 are separate tables. A connection is keyed by its zone
//     and 5-tuple (the query id and types for ICMP echo, timestamp and info
//     messages); both directions find the same entry.
//   - ct_state: +trk always; +inv when the packet cannot be parsed, is not a
//     valid start of a connection (TCP SYN+ACK, an ICMP echo reply, ND...), is
//     outside the TCP window, or when a commit is refused (limit reached, or
//     no free NAT tuple: the kernel drops such packets, OVS leaves them +new;
//     govs marks them +inv so the pipeline drops them); +new for a packet of
//     a connection that is not committed or has not seen a valid reply yet
//     (UDP and ICMP until the first reply, TCP until the SYN+ACK); +est after
//     that; +rpl in the reply direction; +rel for ICMP errors whose embedded
//     header belongs to a connection; +snat/+dnat name the translation
//     applied to this packet (so the reply of a DNAT connection, whose
//     source is rewritten back, is +snat, as in OVS and the kernel).
//   - ct_mark (32 bits) and ct_label (128 bits) belong to the connection and
//     change only through a committing action's exec(); every later packet
//     of the connection sees them.
//   - The original-direction tuple (ct_nw_src, ct_nw_dst, ct_ipv6_src,
//     ct_ipv6_dst, ct_nw_proto, ct_tp_src, ct_tp_dst) is set for every tracked
//     packet that is not +inv: the connection's original tuple, or the
//     packet's own tuple while it is not committed (as OVS and the kernel do).
//   - Without commit nothing is created. commit creates the connection; the
//     packet keeps its pre-commit state (+new). force ends a connection whose
//     original direction is the reverse of the packet's, then commits anew.
//   - Entering a different zone resets ct_state (OVS does the same). A packet
//     translated by ct(nat) and sent through ct() again in the same zone is
//     recognized by its +snat/+dnat bits and not translated twice.
//   - TCP is tracked with sequence-window checks (the pf algorithm OVS uses),
//     per-end states and per-state timeouts; UDP and other protocols have
//     first / single-direction / both-direction timeouts; ICMP queries
//     first / reply.
//   - NAT: nat(src=...) and nat(dst=...) with address and port ranges and the
//     persistent, hash and random flags; a tuple already used by another
//     connection is never reused (another port is searched); replies are
//     translated back, ICMP errors too (outer header and embedded packet);
//     IPv4 header, TCP/UDP/ICMPv6 pseudo-header and ICMP checksums are
//     adjusted, SCTP's CRC32c recomputed.
//   - Limits: a global maximum (3,000,000 by default, like OVS) and per-zone
//     limits with a default. A full table refuses new connections; existing
//     ones keep working. As in OVS, a zone limit counts the connections
//     committed while it applies. Commits running at the same moment on
//     different cores may overshoot a limit by at most their number.
//   - Not implemented: ALG helpers (ct(alg=ftp|tftp)), timeout policies
//     per zone (Config.Timeouts is global), an SCTP state machine (SCTP,
//     DCCP and UDP-Lite are tracked like UDP), and OVS' lookup of a
//     translated packet by its ct_orig tuple after its headers were changed
//     (check_orig_tuple).
//
// # IP fragments
//
// govs does not buffer or reassemble; it does "virtual reassembly" (see
// frag.go). The first fragment of a datagram carries the L4 header, so it is
// tracked and translated like a whole packet, and its verdict is remembered
// for 30 s under (zone, addresses, protocol, IP id). Later fragments get the
// same connection, ct_state, mark, label and original tuple, and the same
// address translation (the L4 checksum, in the first fragment, was already
// adjusted for the whole datagram). What cannot be tracked safely is +inv
// and changes nothing: a later fragment that arrives before its first
// fragment (OVS' and the kernel's reassembly would wait for it), fragments of
// TCP (window tracking needs the whole segment), SCTP (CRC over the whole
// packet), DCCP and UDP-Lite, and ICMP errors that are fragmented. An IPv6
// atomic fragment (RFC 8021) is a whole packet. Stats().Fragments counts
// fragments.
//
// # Concurrency and memory
//
// The table is split into 64 shards, each with its own index (open
// addressing, atomic slots) and a write lock; connections are stored in
// pointer-free chunks, so the garbage collector does not scan them (about
// 210 bytes per connection at 1M). Lookups take no shard lock, only the
// connection's own mutex; commits lock the one or two shards that hold the
// new connection's keys. Expiry is exact at lookup time and memory is given
// back incrementally by a per-shard timing wheel (see Sweep and
// StartSweeper), never by a pass over every connection.
//
// NAT adjusts checksums incrementally, so it assumes complete checksums;
// frames carrying partial (offloaded) checksums must be completed first.
package conntrack
