package conntrack

// TCP tracking follows the model OVS took from pf (Guido van Rooij's
// "Real Stateful TCP Packet Filtering"): each end keeps the highest sequence
// number it sent (seqlo), the highest the other end allows it to send
// (seqhi, from the other end's ACK plus window) and the largest window it
// advertised. A segment is valid when it lies inside the window the receiver
// opened, is not more than one window behind, and acknowledges nothing the
// other end has not sent (with a fudge factor). Per-end states use OVS'
// ct_dpif_tcp_state numbering, so the dump prints the same names.

// TCP states (enum ct_dpif_tcp_state).
const (
	tcpsClosed uint8 = iota
	tcpsListen
	tcpsSynSent
	tcpsSynRecv
	tcpsEstablished
	tcpsCloseWait
	tcpsFinWait1
	tcpsClosing
	tcpsLastAck
	tcpsFinWait2
	tcpsTimeWait
)

var tcpStateNames = [...]string{
	"CLOSED", "LISTEN", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "CLOSE_WAIT",
	"FIN_WAIT_1", "CLOSING", "LAST_ACK", "FIN_WAIT_2", "TIME_WAIT",
}

const (
	wsFlag       = 0x80 // window scaling negotiated by this end
	wsUnknown    = 0x40 // picked up mid-stream: scaling unknown, be liberal
	wsMask       = 0x0f
	tcpMaxWscale = 14
	// maxAckWindow is how far an ACK may lag or lead: one maximal unscaled
	// window plus a fudge factor of 1500 bytes.
	maxAckWindow = 0xffff + 1500
)

func seqLT(a, b uint32) bool  { return int32(a-b) < 0 }
func seqLEQ(a, b uint32) bool { return int32(a-b) <= 0 }
func seqGT(a, b uint32) bool  { return int32(a-b) > 0 }
func seqGEQ(a, b uint32) bool { return int32(a-b) >= 0 }

// tcpInvalidFlags rejects flag combinations no TCP sends.
func tcpInvalidFlags(f uint16) bool {
	if f&tcpSYN != 0 {
		if f&(tcpRST|tcpFIN) != 0 {
			return true
		}
	} else if f&(tcpACK|tcpRST) == 0 {
		return true
	}
	if f&tcpACK == 0 && f&(tcpFIN|tcpPSH|tcpURG) != 0 {
		return true
	}
	return false
}

// tcpValidNew: a connection may start with a SYN, or (picked up
// mid-stream) with any valid segment but a SYN+ACK, which would be a
// half-open connection.
func tcpValidNew(f uint16) bool {
	if tcpInvalidFlags(f) {
		return false
	}
	return f&(tcpSYN|tcpACK) != tcpSYN|tcpACK
}

// tcpWscale returns the window scale option of a SYN (with wsFlag) or 0.
func tcpWscale(opts []byte) uint8 {
	ws := uint8(0)
	for len(opts) >= 3 {
		switch opts[0] {
		case 0: // end of options
			return ws
		case 1: // no-op
			opts = opts[1:]
			continue
		case 3: // window scale
			v := opts[2]
			if v > tcpMaxWscale {
				v = tcpMaxWscale
			}
			ws = v | wsFlag
		}
		l := int(opts[1])
		if l < 2 {
			l = 2
		}
		if l > len(opts) {
			return ws
		}
		opts = opts[l:]
	}
	return ws
}

// tcpSeg is the part of a TCP header the state machine reads.
type tcpSeg struct {
	flags    uint16
	seq, ack uint32
	win      uint32
	plen     uint32
}

func readSeg(frame []byte, p *pkt) tcpSeg {
	b := frame[p.l4 : p.l4+20]
	return tcpSeg{
		flags: p.tcpFlags,
		seq:   be32(b[4:8]),
		ack:   be32(b[8:12]),
		win:   uint32(be16(b[14:16])),
		plen:  uint32(p.l4len - p.tcpHLen),
	}
}

// segOpts returns the TCP options of the packet (only SYNs carry the window
// scale option that the state machine reads).
func segOpts(frame []byte, p *pkt) []byte { return frame[p.l4+20 : p.l4+p.tcpHLen] }

func divRoundUp(a uint32, shift uint8) uint32 {
	return (a + 1<<shift - 1) >> shift
}

// tcpNew initializes the peers of a connection from its first segment.
func (t *Tracker) tcpNew(c *conn, frame []byte, p *pkt, now int64) {
	seg := readSeg(frame, p)
	src, dst := &c.tcp[0], &c.tcp[1]
	src.seqlo = seg.seq
	src.seqhi = seg.seq + seg.plen + 1
	if seg.flags&tcpSYN != 0 {
		src.seqhi++
		src.wscale = tcpWscale(segOpts(frame, p))
	} else {
		src.wscale = wsUnknown
		dst.wscale = wsUnknown
	}
	src.maxWin = max(seg.win, 1)
	if sws := src.wscale & wsMask; sws != 0 {
		src.maxWin = divRoundUp(src.maxWin, sws)
	}
	if seg.flags&tcpFIN != 0 {
		src.seqhi++
	}
	dst.seqhi = 1
	dst.maxWin = 1
	src.state = tcpsSynSent
	dst.state = tcpsClosed
	t.setExp(c, tmTCPFirst, now)
}

// noTimeout is tcpStep's timeout class when the segment must not refresh
// the connection's expiration.
const noTimeout = -1

// tcpStep checks a segment against the TCP peers of a connection and
// advances them. It returns the verdict and the timeout class (index into
// Tracker.timeouts) the connection moves to, or noTimeout. It reads and
// writes nothing but peers; the caller (update) holds the connection's lock
// and applies the timeout.
func (t *Tracker) tcpStep(peers *[2]tcpPeer, frame []byte, p *pkt, reply bool) (updateRes, int) {
	seg := readSeg(frame, p)
	si := 0
	if reply {
		si = 1
	}
	src, dst := &peers[si], &peers[1-si]
	f := seg.flags
	if tcpInvalidFlags(f) {
		return updInvalid, noTimeout
	}
	if f&(tcpSYN|tcpACK) == tcpSYN {
		if dst.state >= tcpsFinWait2 && src.state >= tcpsFinWait2 {
			// A new SYN on a closed connection: port reuse.
			src.state, dst.state = tcpsClosed, tcpsClosed
			return updNew, noTimeout
		}
		if src.state <= tcpsSynSent {
			// SYN retransmission.
			src.state = tcpsSynSent
			return updValidNew, tmTCPFirst
		}
	}

	var sws, dws uint8
	switch {
	case src.wscale&wsFlag != 0 && dst.wscale&wsFlag != 0 && f&tcpSYN == 0:
		sws, dws = src.wscale&wsMask, dst.wscale&wsMask
	case src.wscale&wsUnknown != 0 && dst.wscale&wsUnknown != 0 && f&tcpSYN == 0:
		sws, dws = tcpMaxWscale, tcpMaxWscale
	}

	win := seg.win
	seq := seg.seq
	origSeq := seq
	ack := seg.ack
	end := seq + seg.plen
	if f&tcpSYN != 0 {
		end++
	}
	if f&tcpFIN != 0 {
		end++
	}
	checkAckSkew := true
	if src.state < tcpsSynSent {
		// First segment from this end (the SYN+ACK, or a pick-up).
		if f&tcpSYN != 0 && dst.wscale&wsFlag != 0 {
			src.wscale = tcpWscale(segOpts(frame, p))
			if src.wscale&wsFlag != 0 {
				// Both ends scale: the SYN's window is unscaled.
				sws = src.wscale & wsMask
				win = divRoundUp(win, sws)
				dws = dst.wscale & wsMask
			} else {
				// This end does not scale, so neither does the other.
				dst.maxWin <<= dst.wscale & wsMask
				dst.wscale = 0
			}
		}
		src.seqlo = seq
		src.state = tcpsSynSent
		// Slide the window (seqhi may have been guessed when the
		// connection was picked up after establishment).
		if w := end + max(1, dst.maxWin<<dws); src.seqhi == 1 || seqGEQ(w, src.seqhi) {
			src.seqhi = w
			checkAckSkew = false
		}
		if win > src.maxWin {
			src.maxWin = win
		}
	}

	if f&tcpACK == 0 {
		ack = dst.seqlo // no ACK: nothing to check
	} else if ack == 0 && f&(tcpACK|tcpRST) == tcpACK|tcpRST {
		ack = dst.seqlo // some stacks send RST+ACK with ack 0
	}
	if seq == end {
		// No data: be lenient about where it sits.
		seq = src.seqlo
		end = seq
	}
	var ackSkew int64
	if checkAckSkew {
		ackSkew = int64(int32(dst.seqlo - ack))
	}

	inWindow := seqGEQ(src.seqhi, end) && // last octet inside the window the other end opened
		seqGEQ(seq, src.seqlo-(dst.maxWin<<dws)) && // not more than a window back
		ackSkew >= -maxAckWindow && // ACK not too far back
		ackSkew <= int64(maxAckWindow)<<sws && // nor too far forward
		(f&tcpRST == 0 || origSeq == src.seqlo || origSeq == src.seqlo+1 || origSeq+1 == src.seqlo) // RST must be exact
	if inWindow || !t.seqCheck {
		if src.maxWin < win {
			src.maxWin = win
		}
		if seqGT(end, src.seqlo) {
			src.seqlo = end
		}
		if w := win << sws; seqGEQ(ack+w, dst.seqhi) {
			dst.seqhi = ack + max(w, 1)
		}
		if f&tcpSYN != 0 && src.state < tcpsSynSent {
			src.state = tcpsSynSent
		}
		if f&tcpFIN != 0 && src.state < tcpsClosing {
			src.state = tcpsClosing
		}
		if f&tcpACK != 0 {
			switch dst.state {
			case tcpsSynSent:
				dst.state = tcpsEstablished
			case tcpsClosing:
				dst.state = tcpsFinWait2
			}
		}
		if f&tcpRST != 0 {
			src.state, dst.state = tcpsTimeWait, tcpsTimeWait
		}
		switch {
		case src.state >= tcpsFinWait2 && dst.state >= tcpsFinWait2:
			return updValid, tmTCPClosed
		case src.state >= tcpsClosing && dst.state >= tcpsClosing:
			return updValid, tmTCPFinWait
		case src.state < tcpsEstablished || dst.state < tcpsEstablished:
			return updValid, tmTCPOpening
		case src.state >= tcpsClosing || dst.state >= tcpsClosing:
			return updValid, tmTCPClosing
		default:
			return updValid, tmTCPEstablished
		}
	}
	if (dst.state < tcpsSynSent || dst.state >= tcpsFinWait2 || src.state >= tcpsFinWait2) &&
		seqGEQ(src.seqhi+maxAckWindow, end) && seqGEQ(seq, src.seqlo-maxAckWindow) {
		// Loose acceptance, without refreshing the timeout: SYNs shotgunned
		// before the peer answered, a connection picked up after the state
		// was lost, and stray segments right after a close.
		if src.maxWin < win {
			src.maxWin = win
		}
		if seqGT(end, src.seqlo) {
			src.seqlo = end
		}
		if w := win << sws; seqGEQ(ack+w, dst.seqhi) {
			dst.seqhi = ack + max(w, 1)
		}
		if f&tcpFIN != 0 && src.state < tcpsClosing {
			src.state = tcpsClosing
		}
		if f&tcpRST != 0 {
			src.state, dst.state = tcpsTimeWait, tcpsTimeWait
		}
		return updValid, noTimeout
	}
	return updInvalid, noTimeout
}
