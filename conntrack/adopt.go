package conntrack

import (
	"errors"
	"fmt"
)

// ErrExists is returned by Adopt when the connection is already tracked.
var ErrExists = errors.New("conntrack: connection already tracked")

// Adopt enters an established TCP or UDP connection the tracker never saw
// open: e.Orig and e.Reply (the reply tuple as conntrack's NAT made it,
// the reverse of Orig without NAT), e.Zone, e.Mark and e.Label. A
// restarted govs-vswitchd uses it for the connections the kernel fast
// path kept forwarding while it was down (docs/offload.md), so that their
// packets are +est, not +new, and their FIN, RST and timeouts are handled
// as before. TCP window tracking starts liberal (as for a connection
// picked up mid-stream).
func (t *Tracker) Adopt(e Entry) error {
	if e.Orig.Proto != protoTCP && e.Orig.Proto != protoUDP || e.Reply.Proto != e.Orig.Proto {
		return fmt.Errorf("adopt connection: protocol %d: only TCP and UDP", e.Orig.Proto)
	}
	k0, err := keyOfTuple(e.Zone, &e.Orig)
	if err != nil {
		return fmt.Errorf("adopt connection: %w", err)
	}
	k1, err := keyOfTuple(e.Zone, &e.Reply)
	if err != nil {
		return fmt.Errorf("adopt connection: %w", err)
	}
	if k0.v6 != k1.v6 {
		return errors.New("adopt connection: original and reply tuples of different families")
	}
	// One NAT action per connection, as commit makes them.
	nat := uint8(0)
	rev := k0.reverse()
	if !k1.eq(&rev) {
		switch {
		case k1.src == rev.src && k1.sport == rev.sport:
			nat = natSrc // the reply goes to the translated source
		case k1.dst == rev.dst && k1.dport == rev.dport:
			nat = natDst
		default:
			return errors.New("adopt connection: reply tuple rewrites both ends")
		}
	}
	now := t.clock()
	h0, h1 := k0.hash(t.seed), k1.hash(t.seed)
	a0, a1 := int(h0>>(64-shardBits)), int(h1>>(64-shardBits))
	t.lockPair(a0, a1)
	defer t.unlockPair(a0, a1)
	for _, f := range []struct {
		s int
		k *key
		h uint64
	}{{a0, &k0, h0}, {a1, &k1, h1}} {
		if c, _, _ := t.find(&t.shards[f.s], f.k, f.h, now); c != nil {
			c.unlock()
			return ErrExists
		}
	}
	if !t.hasRoom() {
		return errors.New("adopt connection: conntrack is full")
	}
	s0 := &t.shards[a0]
	ref, c := s0.alloc(a0)
	if c == nil {
		return errors.New("adopt connection: conntrack is full")
	}
	c.lock()
	c.key0, c.key1 = k0, k1
	c.mark.Store(e.Mark)
	c.label = e.Label
	c.nat = nat
	c.rshard = uint8(a1)
	c.live = true
	c.zcount = false
	c.state = 0
	c.tcp = [2]tcpPeer{}
	if k0.proto == protoTCP {
		for i := range c.tcp {
			c.tcp[i] = tcpPeer{seqhi: 1, maxWin: 1, wscale: wsUnknown, state: tcpsEstablished}
		}
		t.setExp(c, tmTCPEstablished, now)
	} else {
		c.state = 2 // seen both ways
		t.setExp(c, tmOtherBidir, now)
	}
	c.unlock()
	t.publishConn(a0, a1, ref, c, h0, h1, nat)
	return nil
}

// keyOfTuple is the lookup key of a dumped tuple in zone.
func keyOfTuple(zone uint16, tup *Tuple) (key, error) {
	if !tup.Src.IsValid() || !tup.Dst.IsValid() || tup.Src.Is4() != tup.Dst.Is4() {
		return key{}, fmt.Errorf("source %v and destination %v must be addresses of one family", tup.Src, tup.Dst)
	}
	k := key{zone: zone, proto: tup.Proto}
	if tup.Src.Is4() {
		s, d := tup.Src.As4(), tup.Dst.As4()
		copy(k.src[:4], s[:])
		copy(k.dst[:4], d[:])
	} else {
		k.v6 = 1
		k.src, k.dst = tup.Src.As16(), tup.Dst.As16()
	}
	if k.isICMP() {
		k.sport, k.dport = tup.ICMPID, tup.ICMPID
		k.styp = tup.ICMPType
		if k.v6 == 1 {
			k.dtyp = reverseICMP6(tup.ICMPType)
		} else {
			k.dtyp = reverseICMP4(tup.ICMPType)
		}
	} else {
		k.sport, k.dport = tup.SrcPort, tup.DstPort
	}
	return k, nil
}
