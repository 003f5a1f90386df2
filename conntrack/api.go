package conntrack

import (
	"net/netip"
	"time"
)

// ct_state bits, with the values of ovs-fields(7).
const (
	StateNew     uint8 = 0x01 // +new: the packet starts a connection (or no reply was seen yet)
	StateEst     uint8 = 0x02 // +est: part of an established connection
	StateRel     uint8 = 0x04 // +rel: related to a connection (ICMP error)
	StateRpl     uint8 = 0x08 // +rpl: reply direction
	StateInv     uint8 = 0x10 // +inv: not trackable or not valid for its connection
	StateTracked uint8 = 0x20 // +trk: went through ct()
	StateSNAT    uint8 = 0x40 // +snat: source address/port translated
	StateDNAT    uint8 = 0x80 // +dnat: destination address/port translated
)

// Label is the 128-bit ct_label. Hi holds bits 127..64, Lo bits 63..0, so
// `ct_label=0x1/0x1` is Label{Lo: 1}.
type Label struct{ Hi, Lo uint64 }

// IsZero reports whether all 128 bits are zero.
func (l Label) IsZero() bool { return l.Hi == 0 && l.Lo == 0 }

// Orig is the original-direction tuple of the packet's connection
// (ct_nw_src/ct_nw_dst or ct_ipv6_src/ct_ipv6_dst, ct_nw_proto, ct_tp_src,
// ct_tp_dst). Proto == 0 means the fields are not set: ovs-fields(7) says they
// exist for every tracked packet that conntrack did not reject as invalid.
// For a packet that is not (yet) part of a committed connection they are the
// packet's own tuple, as in OVS. For ICMP, SrcPort is the type and DstPort the
// code of the original-direction message.
type Orig struct {
	Src, Dst         [16]byte // IPv4 addresses are in the first 4 bytes
	IPv6             bool
	Proto            uint8
	SrcPort, DstPort uint16
}

// NwSrc returns ct_nw_src (IPv4 only).
func (o *Orig) NwSrc() uint32 { return be32(o.Src[:4]) }

// NwDst returns ct_nw_dst (IPv4 only).
func (o *Orig) NwDst() uint32 { return be32(o.Dst[:4]) }

// SrcAddr returns the source address as a netip.Addr.
func (o *Orig) SrcAddr() netip.Addr { return addrOf(o.Src, o.IPv6) }

// DstAddr returns the destination address as a netip.Addr.
func (o *Orig) DstAddr() netip.Addr { return addrOf(o.Dst, o.IPv6) }

func addrOf(a [16]byte, v6 bool) netip.Addr {
	if v6 {
		return netip.AddrFrom16(a)
	}
	return netip.AddrFrom4([4]byte(a[:4]))
}

// Meta is the conntrack metadata of one packet: the ct_* match fields. The
// pipeline keeps one per packet (zero when the packet enters the switch) and
// passes it to every Execute, which reads it (OVS resets ct_state when a
// packet enters a different zone, and uses the +snat/+dnat bits to recognize
// an already translated packet) and overwrites it with the result.
type Meta struct {
	State uint8
	Zone  uint16
	Mark  uint32
	Label Label
	Orig  Orig
}

// Clear implements the ct_clear action: all ct fields back to zero.
func (m *Meta) Clear() { *m = Meta{} }

// NATAction selects the kind of translation of a nat() clause.
type NATAction uint8

const (
	// NATExisting is `nat` without src/dst: apply the translation the
	// connection already has (none for a new connection).
	NATExisting NATAction = iota
	NATSrc                // nat(src=...)
	NATDst                // nat(dst=...)
)

// NAT is the nat() clause of a ct action. Build it once per flow action; the
// tracker reads it only when it creates a connection.
type NAT struct {
	Action NATAction
	// MinAddr..MaxAddr is the address range; invalid (zero) addresses mean
	// "keep the address" (port-only translation). MaxAddr may be left zero
	// for a single address.
	MinAddr, MaxAddr netip.Addr
	// MinPort..MaxPort is the port range; 0 means no port range (SNAT then
	// keeps the source port when it is free, else picks another one of the
	// same class, like OVS).
	MinPort, MaxPort uint16
	// Persistent: the address is chosen from the source address alone, so a
	// client keeps its address across connections. Hash: hash-based port
	// choice (the default). Random: random port offset.
	Persistent, Hash, Random bool
}

// Args are the arguments of one ct() action.
type Args struct {
	Zone   uint16
	Commit bool
	// Force: if the packet matches a connection in the reply direction, end
	// that connection and (with Commit) start a new one in this direction.
	Force bool

	// exec(set_field/load ... ct_mark / ct_label), applied on commit:
	// new = (value & mask) | (old &^ mask).
	SetMark          bool
	Mark, MarkMask   uint32
	SetLabel         bool
	Label, LabelMask Label

	// NAT is the nat() clause, nil when the action has none.
	NAT *NAT

	// CsumPartial: the packet's TCP/UDP checksum is partial
	// (CHECKSUM_PARTIAL from a port with offload metadata): the field
	// holds only the pseudo-header sum. NAT then updates it for address
	// changes the uncomplemented way and leaves it alone for port changes,
	// and checksum verification skips it.
	CsumPartial bool
}

// Clock returns the current time in nanoseconds (any epoch, monotonic).
type Clock func() int64

// MonotonicClock is the default Clock.
func MonotonicClock() int64 { return int64(time.Since(clockBase)) + int64(time.Hour) }

var clockBase = time.Now()

// Timeouts are the per-state idle timeouts. The defaults are those of OVS'
// userspace conntrack default timeout policy.
type Timeouts struct {
	TCPSynSent     time.Duration // first packet seen (tcp_syn_sent)
	TCPSynRecv     time.Duration // opening (tcp_syn_recv)
	TCPEstablished time.Duration
	TCPFinWait     time.Duration // one side closed (tcp_fin_wait)
	TCPTimeWait    time.Duration // both sides closing (tcp_time_wait)
	TCPClose       time.Duration // both sides closed or reset (tcp_close)
	UDPFirst       time.Duration // one packet, one direction (also other IP protocols)
	UDPSingle      time.Duration // several packets, one direction
	UDPMultiple    time.Duration // both directions seen
	ICMPFirst      time.Duration
	ICMPReply      time.Duration
}

// DefaultTimeouts returns OVS' defaults.
func DefaultTimeouts() Timeouts {
	return Timeouts{
		TCPSynSent:     30 * time.Second,
		TCPSynRecv:     30 * time.Second,
		TCPEstablished: 24 * time.Hour,
		TCPFinWait:     15 * time.Minute,
		TCPTimeWait:    45 * time.Second,
		TCPClose:       30 * time.Second,
		UDPFirst:       60 * time.Second,
		UDPSingle:      60 * time.Second,
		UDPMultiple:    30 * time.Second,
		ICMPFirst:      60 * time.Second,
		ICMPReply:      30 * time.Second,
	}
}

// Config configures a Tracker. The zero value is usable.
type Config struct {
	// MaxConns is the global connection limit (0: DefaultMaxConns).
	MaxConns int
	// Timeouts overrides the defaults; zero fields keep the default.
	Timeouts Timeouts
	// Clock is used by Now, Dump and the background sweeper (default
	// MonotonicClock). Execute and Sweep take the time as an argument.
	Clock Clock
	// SweepTick is the granularity of the expiry wheel (default 250ms).
	SweepTick time.Duration
	// NoTCPSeqCheck disables TCP window checks (like OVS
	// `dpctl/ct-disable-tcp-seq-chk`): every well-formed segment is valid.
	NoTCPSeqCheck bool
	// VerifyChecksums makes packets with a bad IPv4 header or L4 checksum
	// invalid. Off by default because frames from veths with checksum
	// offload carry partial checksums.
	VerifyChecksums bool
	// Seed for the tuple hash (0: random).
	Seed uint64
	// OnFull, if set, hears that a commit was refused because the table
	// (zoneLimit false) or the zone's limit was full; at most once a
	// second, for a log line. Stats().Full counts every refusal.
	OnFull func(zone uint16, zoneLimit bool)
}

// DefaultMaxConns is OVS' default global limit.
const DefaultMaxConns = 3000000
