package flowtable

// ipv6_exthdr (OpenFlow 1.3 OXM_OF_IPV6_EXTHDR): which IPv6 extension
// headers a packet has, and whether they repeat or break the order RFC
// 8200 §4.1 recommends. Open vSwitch does not implement it.

// ipv6_exthdr flags (OFPIEH_*).
const (
	ExtHdrNoNext = 1 << 0 // no next header
	ExtHdrESP    = 1 << 1
	ExtHdrAuth   = 1 << 2
	ExtHdrDest   = 1 << 3
	ExtHdrFrag   = 1 << 4
	ExtHdrRouter = 1 << 5
	ExtHdrHop    = 1 << 6
	ExtHdrUnrep  = 1 << 7 // unexpected repeats
	ExtHdrUnseq  = 1 << 8 // out of the preferred order
)

// extHdrs accumulates the extension headers of one packet.
type extHdrs struct {
	seen  uint16
	n     int // headers seen
	rank  int // the preferred-order rank of the last header
	dests int
}

// see records next header value nh (a non-extension header ends the walk
// and records nothing, except 59, no next header).
func (e *extHdrs) see(nh uint8) {
	var bit uint16
	var rank int
	switch nh {
	case 0:
		bit, rank = ExtHdrHop, 1
		if e.n > 0 {
			e.seen |= ExtHdrUnseq // hop-by-hop must come first
		}
	case 60:
		bit, rank = ExtHdrDest, 2
		e.dests++
		if e.seen&(ExtHdrRouter|ExtHdrFrag|ExtHdrAuth|ExtHdrESP) != 0 {
			rank = 7 // the destination options for the final destination
		}
	case 43:
		bit, rank = ExtHdrRouter, 3
	case 44:
		bit, rank = ExtHdrFrag, 4
	case 51:
		bit, rank = ExtHdrAuth, 5
	case 50:
		bit, rank = ExtHdrESP, 6
	case 59:
		e.seen |= ExtHdrNoNext
		return
	default:
		return
	}
	if e.seen&bit != 0 && !(bit == ExtHdrDest && e.dests <= 2) {
		e.seen |= ExtHdrUnrep
	}
	if rank < e.rank {
		e.seen |= ExtHdrUnseq
	}
	e.rank = rank
	e.seen |= bit
	e.n++
}

// flags returns the ipv6_exthdr value.
func (e *extHdrs) flags() uint16 { return e.seen }
