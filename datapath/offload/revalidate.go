package offload

import (
	"encoding/binary"
	"errors"
	"net/netip"

	"go.uber.org/zap"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/flowtable"
)

// connOf is the conntrack entry of an offloaded packet's connection, as
// a restarted daemon must adopt it: the zone, mark and label the
// pipeline's ct() gave the packet, its original tuple, and the reply
// tuple (after NAT). nil when the chain went through more than one zone
// (the kernel entry then cannot be adopted).
func connOf(start, final *flowtable.Key, hits []*flowcache.Entry) *conntrack.Entry {
	e, ok := connEntry(start, final, hits)
	if !ok {
		return nil
	}
	return &e
}

// connEntry is connOf without allocating.
func connEntry(start, final *flowtable.Key, hits []*flowcache.Entry) (e conntrack.Entry, ok bool) {
	zone, cts := uint16(0), 0
	for _, h := range hits {
		ops := h.Ops()
		for j := range ops {
			if op := &ops[j]; op.Kind == flowtable.DPCT {
				if cts > 0 && op.CT.Zone != zone {
					return e, false
				}
				zone, cts = op.CT.Zone, cts+1
			}
		}
	}
	if cts == 0 || final.CtZone() != zone {
		return e, false
	}
	in, out := tupleOfKey(start), tupleOfKey(final)
	ctOrig := conntrack.Tuple{
		Src:     addr4(uint32(flowtable.FieldCtNwSrc.Uint64(final))),
		Dst:     addr4(uint32(flowtable.FieldCtNwDst.Uint64(final))),
		Proto:   start.NwProto(),
		SrcPort: uint16(flowtable.FieldCtTpSrc.Uint64(final)),
		DstPort: uint16(flowtable.FieldCtTpDst.Uint64(final)),
	}
	hi, lo := final.CtLabel()
	e = conntrack.Entry{Zone: zone, Mark: final.CtMark(), Label: conntrack.Label{Hi: hi, Lo: lo}}
	if final.CtState()&flowtable.CtStateRpl != 0 {
		// A reply arrives with the reply tuple; the original is conntrack's.
		e.Orig, e.Reply = ctOrig, in
	} else {
		// The packet leaves with the reply's tuple reversed (NAT applied).
		e.Orig, e.Reply = in, reverse(out)
	}
	return e, true
}

func tupleOfKey(k *flowtable.Key) conntrack.Tuple {
	return conntrack.Tuple{Src: addr4(k.NwSrc()), Dst: addr4(k.NwDst()), Proto: k.NwProto(), SrcPort: k.TpSrc(), DstPort: k.TpDst()}
}

func reverse(t conntrack.Tuple) conntrack.Tuple {
	return conntrack.Tuple{Src: t.Dst, Dst: t.Src, Proto: t.Proto, SrcPort: t.DstPort, DstPort: t.SrcPort}
}

func addr4(a uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)})
}

// Replay runs a kernel entry's flow through the current pipeline and
// reports the keys and cache entries its packet went through, as the
// packet loop gives them to Offer (ok false: no port for fk.Ifindex).
type Replay func(fk FlowKey) (start, final flowtable.Key, hits []*flowcache.Entry, ok bool)

// Revalidate ends the adoption of a previous process's entries, once the
// controller has replayed its flows (flow-restore-wait is over): conntrack
// learns each entry's connection (adopt, from the pinned conns map), each
// entry's flow is replayed through the new pipeline, the entries the new
// flows still produce are rewritten with the new decision and the others
// deleted, and the kernel switches to the new generation in one write.
// Returns how many entries were kept and removed.
func (m *Manager) Revalidate(adopt func(conntrack.Entry) error, replay Replay, ifindexOf func(ofport uint32) (int, bool)) (kept, removed int) {
	m.mu.Lock()
	if !m.adopting || m.closed {
		m.mu.Unlock()
		return 0, 0
	}
	type adopted struct {
		key  offloadFlowKey
		fk   FlowKey
		conn *conntrack.Entry
	}
	var todo []adopted
	for key := range m.entries {
		a := adopted{key: key, fk: flowKeyOf(&key)}
		var ci connInfo
		if m.k.conns != nil && m.k.conns.Lookup(&key, &ci) == nil {
			e := ci.entry()
			a.conn = &e
		}
		todo = append(todo, a)
	}
	gen := m.gen
	m.mu.Unlock()

	// Every connection first: an entry's decision may depend on the
	// other direction's (the reply of a connection is +est only once
	// conntrack knows the connection).
	for _, a := range todo {
		if a.conn == nil {
			continue
		}
		if err := adopt(*a.conn); err != nil && !errors.Is(err, conntrack.ErrExists) {
			m.log.Warn("offload: adopting a connection failed", zap.Stringer("orig_src", a.conn.Orig.Src), zap.Error(err))
		}
	}
	// The replay runs the pipeline, which may take m.mu (a learn bumps
	// the generation): decide without it.
	type decided struct {
		d    Decision
		out  int
		conn *conntrack.Entry
		ok   bool
	}
	decisions := make([]decided, len(todo))
	for i, a := range todo {
		if a.key.TunDst != 0 {
			// A Geneve decapsulation: the replay cannot rebuild its
			// tunnel metadata (nor does ifindexOf offer a Geneve port to
			// encapsulate for), so it is removed; its connection is
			// adopted and the next packet through userspace offers it
			// again.
			continue
		}
		start, final, hits, ok := replay(a.fk)
		if !ok {
			continue
		}
		d, ok := Decide(&start, &final, hits)
		var out int
		if ok {
			out, ok = ifindexOf(d.OutPort)
			ok = ok && uint32(out) != a.fk.Ifindex
		}
		if ok {
			d.Action.OutIfindex = uint32(out)
			decisions[i] = decided{d: d, out: out, conn: connOf(&start, &final, hits), ok: true}
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, 0
	}
	m.adopting = false
	if m.gen != gen {
		// The pipeline changed under the replay: none of its decisions
		// can be trusted.
		clear(decisions)
	}
	for i, a := range todo {
		if decisions[i].ok {
			if e := m.entries[a.key]; e != nil {
				m.pushOneLocked(a.key, e) // what it forwarded since the adoption
			}
			m.installLocked(&a.key, decisions[i].d, a.fk.Ifindex, uint32(decisions[i].out), decisions[i].conn)
			kept++
		}
	}
	// One write moves the kernel from the adopted entries' generation to
	// this process's: the kept entries are valid, the others not.
	if err := m.k.SetGeneration(m.base + m.gen); err != nil {
		m.log.Error("offload: switching to the new generation failed", zap.Error(err))
	}
	// Keepalives again: conntrack knows the connections now.
	if err := m.k.Release(); err != nil {
		m.log.Warn("offload: moving the links back to the program with keepalives", zap.Error(err))
	}
	for i, a := range todo {
		if !decisions[i].ok {
			if e := m.entries[a.key]; e != nil {
				m.deleteLocked(a.key, e)
			}
			removed++
		}
	}
	m.log.Info("offload: revalidated the adopted kernel entries", zap.Int("kept", kept), zap.Int("removed", removed))
	return kept, removed
}

// flowKeyOf is the Go form of a kernel key.
func flowKeyOf(k *offloadFlowKey) FlowKey {
	var s, d [4]byte
	binary.LittleEndian.PutUint32(s[:], k.Saddr)
	binary.LittleEndian.PutUint32(d[:], k.Daddr)
	return FlowKey{
		Ifindex: k.Ifindex, EthSrc: k.EthSrc, EthDst: k.EthDst, VlanTCI: k.VlanTci,
		Src: netip.AddrFrom4(s), Dst: netip.AddrFrom4(d), Proto: k.Proto,
		SrcPort: nativeU16(k.Sport), DstPort: nativeU16(k.Dport), TTL: k.Ttl,
	}
}

// Frame is a packet of fk's flow as the program would forward it: for
// TCP an ACK without payload, for UDP an empty datagram, tagged as fk
// says. The replay of a
// kernel entry runs it through the pipeline.
func (fk *FlowKey) Frame() []byte {
	l4 := 8
	if fk.Proto == 6 {
		l4 = 20
	}
	f := make([]byte, 14+20+l4)
	copy(f[0:6], fk.EthDst[:])
	copy(f[6:12], fk.EthSrc[:])
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+l4))
	ip[8], ip[9] = fk.TTL, fk.Proto
	s, d := fk.Src.As4(), fk.Dst.As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], d[:])
	binary.BigEndian.PutUint16(ip[10:], ipChecksum(ip))
	th := f[34:]
	binary.BigEndian.PutUint16(th[0:], fk.SrcPort)
	binary.BigEndian.PutUint16(th[2:], fk.DstPort)
	if fk.Proto == 6 {
		th[12] = 5 << 4
		th[13] = 0x10 // ACK
		binary.BigEndian.PutUint16(th[14:], 0xffff)
	} else {
		binary.BigEndian.PutUint16(th[4:], uint16(l4))
	}
	if fk.VlanTCI != 0 {
		// The key does not say 802.1Q or 802.1ad; govs's key treats both
		// alike.
		tagged := make([]byte, 0, len(f)+vlanLen)
		tagged = append(tagged, f[:12]...)
		tagged = binary.BigEndian.AppendUint16(tagged, flowtable.EthTypeVLAN)
		tagged = binary.BigEndian.AppendUint16(tagged, fk.VlanTCI&^flowtable.VlanCFI)
		f = append(tagged, f[12:]...)
	}
	return f
}

func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// Conns returns the connection records of the kernel entries (pinned
// only; one per entry, so a connection offloaded both ways is there
// twice), as a restarted daemon's conntrack would adopt them.
func (m *Manager) Conns() []conntrack.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.k.conns == nil || m.closed {
		return nil
	}
	var out []conntrack.Entry
	var ci connInfo
	for key := range m.entries {
		if m.k.conns.Lookup(&key, &ci) == nil {
			out = append(out, ci.entry())
		}
	}
	return out
}
