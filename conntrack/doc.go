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
// not allocate. ct_clear is md.Clear().
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
//     header belongs to a connection; +snat/+dnat when nat() translated it.
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
//     ones keep working.
//
// # IP fragments
//
// govs does not reassemble. Every IPv4 fragment (MF set or a non-zero
// offset, the first fragment included) and every IPv6 packet with a Fragment
// header is +trk+inv: it creates nothing, changes no connection and is never
// translated, so fragments can be dropped by the pipeline but can never be
// tracked against the wrong connection or half-translated. (OVS reassembles
// in lib/ipf.c before conntrack; the kernel does too. Reassembly, or
// "virtual reassembly" keyed by the IP id, is the planned follow-up; until
// then fragmented UDP, e.g. large DNS answers, needs the path MTU to avoid
// fragmentation.) Stats().Fragments counts them.
//
// # Concurrency and memory
//
// The table is split into 64 shards, each with its own lock-protected index;
// connections are stored in pointer-free chunks, so the garbage collector
// does not scan them. Lookups of established connections take one shard
// read lock and the connection's own mutex. Expiry is exact at lookup time
// and memory is given back incrementally by a per-shard timing wheel (see
// Sweep and StartSweeper), never by a pass over every connection.
package conntrack
