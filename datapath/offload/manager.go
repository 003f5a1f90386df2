package offload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"go.uber.org/zap"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/tunnel"
)

// Decision is what the kernel does with the packets of an offloaded flow:
// the megaflow chain's single output and its frame rewrites.
type Decision struct {
	OutPort uint32
	Action  Action // OutIfindex filled by the caller
	Rules   []*flowtable.Rule
}

// tcpSynFinRst are the TCP flags the program never forwards.
const tcpSynFinRst = 0x02 | 0x01 | 0x04

// KeyKind says what the kernel path makes of a packet.
type KeyKind uint8

const (
	// KeyNone: not IPv4 TCP/UDP (behind at most one VLAN tag) without
	// fragmentation; the program never matches such packets.
	KeyNone KeyKind = iota
	// KeyOffer: a packet whose flow the kernel may forward.
	KeyOffer
	// KeyControl: a TCP SYN, FIN or RST, always for userspace; a FIN or
	// RST ends the connection's kernel entries (End), a SYN the flow's
	// stale one (Forget).
	KeyControl
)

// Ends tells whether a TCP segment (a KeyControl packet's key) ends its
// connection: a FIN or an RST (End), not a SYN (Forget).
func Ends(k *flowtable.Key) bool { return k.TCPFlags()&(0x01|0x04) != 0 }

// KeyOf returns the exact kernel match of a packet received on ifindex,
// from its key as extracted (before the pipeline ran), and its kind.
func KeyOf(ifindex int, k *flowtable.Key) (fk FlowKey, kind KeyKind) {
	if k.EthType() != 0x0800 || k.NwFrag() != 0 {
		return fk, KeyNone
	}
	kind = KeyOffer
	switch k.NwProto() {
	case 6:
		if k.TCPFlags()&tcpSynFinRst != 0 {
			kind = KeyControl
		}
	case 17:
	default:
		return fk, KeyNone
	}
	s, d := k.NwSrc(), k.NwDst()
	return FlowKey{
		Ifindex: uint32(ifindex), EthSrc: k.EthSrc(), EthDst: k.EthDst(), VlanTCI: k.VlanTCI(),
		Src:   netip.AddrFrom4([4]byte{byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}),
		Dst:   netip.AddrFrom4([4]byte{byte(d >> 24), byte(d >> 16), byte(d >> 8), byte(d)}),
		Proto: k.NwProto(), SrcPort: k.TpSrc(), DstPort: k.TpDst(), TTL: k.NwTTL(),
	}, kind
}

// TunnelKeyOf is KeyOf for a frame a Geneve tunnel port decapsulated
// from a datagram with metadata md, received on the underlay interface
// md.Ifindex whose MAC is outerDst: its kernel match is the inner frame's
// plus the outer addresses and the Geneve header, as the datagram had
// them. Datagrams with more options than the program matches are KeyNone.
func TunnelKeyOf(md *tunnel.Metadata, outerDst [6]byte, k *flowtable.Key) (fk FlowKey, kind KeyKind) {
	if len(md.Options) > TunOptionsMax || md.DstPort != GenevePort || md.Ifindex == 0 {
		return fk, KeyNone
	}
	fk, kind = KeyOf(md.Ifindex, k)
	if kind == KeyNone {
		return fk, kind
	}
	t := &fk.Tun
	binary.BigEndian.PutUint32(t.Src[:], md.Src)
	binary.BigEndian.PutUint32(t.Dst[:], md.Dst)
	t.VNI = md.VNI
	if md.Flags&tunnel.FlagOAM != 0 {
		t.Flags |= 0x80
	}
	if md.Flags&tunnel.FlagCritical != 0 {
		t.Flags |= 0x40
	}
	t.OptLen = uint8(copy(t.Options[:], md.Options))
	t.OuterDst = outerDst
	return fk, kind
}

// wordMask is a key mask with the list of its non-zero words, so a test
// against it reads only those (a key is 52 words, a header mask 2 to 13).
type wordMask struct {
	m     flowtable.Key
	words []int
}

func newWordMask(m flowtable.Key) *wordMask {
	w := &wordMask{m: m}
	for i := 0; i < flowtable.KeyWords; i++ {
		if m.Word(i) != 0 {
			w.words = append(w.words, i)
		}
	}
	return w
}

// masked reports whether k has a bit under w.
func (w *wordMask) masked(k *flowtable.Key) bool {
	for _, i := range w.words {
		if k.Word(i)&w.m.Word(i) != 0 {
			return true
		}
	}
	return false
}

var (
	perPacket   = newWordMask(flowtable.PerPacketMask)
	frameFields = newWordMask(flowtable.FrameFieldsMask)
	ethAddrs    = newWordMask(flowtable.EthAddrsMask)
	nwTTL       = newWordMask(flowtable.NwTTLMask)
	vlanTCI     = newWordMask(flowtable.VlanTCIMask)
)

func and(a, b *flowtable.Key) (k flowtable.Key) {
	for i := 0; i < flowtable.KeyWords; i++ {
		k.SetWord(i, a.Word(i)&b.Word(i))
	}
	return k
}

func outside(k, m *flowtable.Key) bool {
	for i := 0; i < flowtable.KeyWords; i++ {
		if k.Word(i)&^m.Word(i) != 0 {
			return true
		}
	}
	return false
}

// outputWrites are the frame fields an offloaded output may have written.
var outputWrites = func() flowtable.Key {
	k := flowtable.EthAddrsMask
	k.Or(&flowtable.NwTTLMask)
	k.Or(&flowtable.VlanTCIMask)
	return k
}()

// Decide reports whether the chain of megaflows a packet went through
// (hits, from its start key start to its final key final) is exactly what
// the program can do: ct() without commit recirculating, on an
// established connection, then one output with at most Ethernet address
// rewrites, dec_ttl and VLAN changes (push_vlan, pop_vlan, the tag's
// TCI; one tag at most), every mask over fields the exact match fixes.
// With ct(nat), the 5-tuple the packet leaves with (final's) is recorded:
// conntrack's NAT of an established connection is a function of the
// tuple and zone the exact match fixes, and a conntrack flush
// invalidates every entry.
func Decide(start, final *flowtable.Key, hits []*flowcache.Entry) (d Decision, ok bool) {
	if len(hits) < 2 {
		return d, false // no ct() recirculation: not a connection
	}
	// The cheapest test first: most refused packets are not established.
	if !established(final) {
		return d, false
	}
	outputs, nat := 0, false
	// The frame's tag as the ops change it: its presence, and the TPID
	// of one pushed (replaced: the tag is not the one the frame came with).
	tagged := start.VlanTCI()&flowtable.VlanCFI != 0
	inTagged, replaced, tpid := tagged, false, uint16(0)
	for i, e := range hits {
		if e.UsesMACs() || perPacket.masked(e.Mask()) {
			return d, false
		}
		ops := e.Ops()
		for j := range ops {
			op := &ops[j]
			switch op.Kind {
			case flowtable.DPCT:
				// ct() ends a segment that recirculates; its writes must not
				// touch the frame (they would change the tuple).
				if op.CT.Commit || op.CT.Alg != 0 || op.Table == flowtable.TableNone ||
					i == len(hits)-1 || frameFields.masked(&op.WMask) {
					return d, false
				}
				nat = nat || op.CT.NAT != nil
			case flowtable.DPPushVLAN, flowtable.DPPopVLAN:
				// In the output's segment, before it; no second tag; 802.1Q
				// only (userspace's packet socket refuses full-size frames
				// with an 802.1ad tag: the kernel would forward them).
				if i != len(hits)-1 || outputs > 0 || tagged == (op.Kind == flowtable.DPPushVLAN) ||
					op.Kind == flowtable.DPPushVLAN && op.VLANType != flowtable.EthTypeVLAN {
					return d, false
				}
				tagged = !tagged
				replaced = replaced || inTagged
				tpid = op.VLANType
			case flowtable.DPOutput:
				outputs++
				if op.InPort || i != len(hits)-1 {
					return d, false
				}
				w := and(&op.WMask, &flowtable.FrameFieldsMask)
				if outside(&w, &outputWrites) {
					return d, false
				}
				if !vlanAction(&d.Action, inTagged, tagged, replaced, tpid, start, final) {
					return d, false
				}
				d.OutPort = op.Port
				if ethAddrs.masked(&w) {
					d.Action.Flags |= ActSetEth
					// Both addresses from the key as written (unwritten
					// bits are the packet's own).
					wk := *start
					op.ApplyWrites(&wk)
					d.Action.EthSrc, d.Action.EthDst = wk.EthSrc(), wk.EthDst()
				}
				if nwTTL.masked(&w) {
					if op.Write.NwTTL() != start.NwTTL()-1 {
						return d, false // set_field to a fixed TTL
					}
					d.Action.Flags |= ActDecTTL
				}
			}
		}
	}
	if outputs != 1 {
		return d, false
	}
	if tupleChanged(start, final) {
		if !nat {
			return d, false // nothing the program knows rewrote it
		}
		s, dst := final.NwSrc(), final.NwDst()
		d.Action.Flags |= ActNAT
		d.Action.NatSrc = netip.AddrFrom4([4]byte{byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)})
		d.Action.NatDst = netip.AddrFrom4([4]byte{byte(dst >> 24), byte(dst >> 16), byte(dst >> 8), byte(dst)})
		d.Action.NatSrcPort, d.Action.NatDstPort = final.TpSrc(), final.TpDst()
	}
	// Only now (an install is rare): a refused packet allocates nothing.
	for _, e := range hits {
		d.Rules = append(d.Rules, e.Rules()...)
	}
	return d, true
}

// vlanAction records in a the change from the frame's tag as it came
// (inTagged; start's vlan_tci) to the one it leaves with (tagged, with
// final's vlan_tci, as Packet.Commit writes it): pushed on an untagged
// frame, popped, replaced (replaced: popped and pushed again, with TPID
// tpid) or its TCI rewritten. false: the key and the frame disagree (a
// tagged frame whose key says untagged).
func vlanAction(a *Action, inTagged, tagged, replaced bool, tpid uint16, start, final *flowtable.Key) bool {
	tci := final.VlanTCI()
	switch {
	case tagged && tci&flowtable.VlanCFI == 0:
		return false
	case !inTagged && tagged:
		a.Flags |= ActPushVLAN
	case inTagged && !tagged:
		a.Flags |= ActPopVLAN
	case tagged && replaced:
		a.Flags |= ActPopVLAN | ActPushVLAN
	case tagged && tci != start.VlanTCI():
		a.Flags |= ActSetVLAN
	}
	if a.Flags&(ActPushVLAN|ActSetVLAN) != 0 {
		a.VlanTPID, a.VlanTCI = tpid, tci&^flowtable.VlanCFI
	}
	return true
}

// established tells whether the packet with final key k was tracked on a
// connection established in both directions (and not new, invalid or
// related).
func established(k *flowtable.Key) bool {
	st := k.CtState()
	return st&flowtable.CtStateTrk != 0 && st&flowtable.CtStateEst != 0 &&
		st&(flowtable.CtStateNew|flowtable.CtStateInv|flowtable.CtStateRel) == 0
}

// tupleChanged tells whether the pipeline rewrote the packet's 5-tuple.
func tupleChanged(start, final *flowtable.Key) bool {
	return start.NwSrc() != final.NwSrc() || start.NwDst() != final.NwDst() ||
		start.TpSrc() != final.TpSrc() || start.TpDst() != final.TpDst()
}

// installed is the Go side of a kernel entry: the rules whose counters
// it advances and the kernel counters already pushed into them.
type installed struct {
	conn           connID // zero: none known
	rules          []*flowtable.Rule
	in, out        uint32 // the ports' keys in the port counters (ifindex or PortID)
	txDelta        int64  // bytes a frame gains on the way (VLAN push +4, pop -4)
	since          int64  // CLOCK_MONOTONIC_COARSE ns of the install (monotonicNow)
	packets, bytes uint64
}

// connID names the connection an entry belongs to: its zone and
// original tuple, as conntrack has them.
type connID struct {
	zone uint16
	orig conntrack.Tuple
}

// connState is what the Manager knows of a connection with entries:
// the flows (directions) it installed, deleted since or not, and
// whether one of them sent a FIN.
type connState struct {
	keys []offloadFlowKey
	fin  bool
}

// PortCounters are what the kernel forwarded from (Rx) and to (Tx) one
// interface, for the port counters (dump-ports).
type PortCounters struct {
	RxPackets, RxBytes, TxPackets, TxBytes uint64
}

// Manager is one switch's kernel fast path: the loaded program, the
// entries the packet loops installed, and the push of their counters into
// the OpenFlow rules.
type Manager struct {
	k   *Kernel
	log *zap.Logger
	tcx bool // the kernel has TCX: veths go on the tc path (TCPath)

	mu     sync.Mutex
	closed bool
	gen    uint64 // the pipeline generation the entries are valid in
	// base+gen is the generation written in the kernel: a process that
	// adopted pinned entries starts above the generation they carry.
	base uint64
	// adopting: the entries are a previous process's, forwarding as they
	// were until Revalidate; pipeline changes (the controller replaying
	// its flows) do not touch them and nothing new is installed.
	adopting bool
	entries  map[offloadFlowKey]*installed
	// pending counts the established packets of flows not installed yet
	// (InstallAfter); pendingOld holds the previous second's counts, so a
	// count lives one to two seconds without a packet.
	pending, pendingOld map[offloadFlowKey]uint8
	// byConn pairs the directions of the connections with entries, so
	// an RST or the second FIN, seen in one direction, ends them all.
	byConn map[connID]*connState
	// forwarded counts what the kernel forwarded, as pushed to the rules,
	// in all and by interface.
	packets, bytes uint64
	ports          map[uint32]*PortCounters
	// installs and deletes count the entries written and deleted one by
	// one (the system calls of the packet path).
	installs, deletes uint64

	stop chan struct{}
	done chan struct{}
}

// NewManager loads the program and starts pushing kernel counters to the
// rules every second (as Open vSwitch's revalidators do). With a pin
// directory (PinDir) the state is pinned there; entries a previous
// process left are adopted and keep forwarding until Revalidate.
func NewManager(log *zap.Logger, pinDir string) (*Manager, error) {
	if log == nil {
		log = zap.NewNop()
	}
	k, err := Load(pinDir)
	if err != nil {
		return nil, err
	}
	m := &Manager{k: k, log: log, gen: k.gen, entries: map[offloadFlowKey]*installed{},
		pending: map[offloadFlowKey]uint8{}, pendingOld: map[offloadFlowKey]uint8{}, byConn: map[connID]*connState{},
		ports: map[uint32]*PortCounters{}, stop: make(chan struct{}), done: make(chan struct{}), tcx: k.HaveTCX()}
	if k.Adopted() {
		m.adoptPinned()
		// No keepalives until Revalidate: nothing in userspace could
		// take them (flow-restore-wait drops them, conntrack does not
		// know the connections yet).
		if err := k.Hold(); err != nil {
			log.Warn("offload: keepalives stay on while adopting", zap.Error(err))
		}
	}
	if pinDir != "" && !k.PinsOutliveProcess() {
		log.Warn("offload: bpffs mounted in this process's own mount namespace; the kernel state will not survive a restart (mount bpffs at /sys/fs/bpf on the host, or pass --bpffs)", zap.String("pin_dir", pinDir))
	}
	go m.run()
	return m, nil
}

// adoptPinned takes the pinned entries over (before the Manager is
// shared): their kernel counters so far are the previous process's, and
// new kernel generations start above theirs.
func (m *Manager) adoptPinned() {
	m.adopting = true
	m.base, m.gen = m.k.gen+1, 0
	now := int64(monotonicNow())
	var key offloadFlowKey
	var v offloadFlowAction
	it := m.k.objs.Flows.Iterate()
	for it.Next(&key, &v) {
		m.entries[key] = &installed{in: key.Ifindex, out: v.OutIfindex, since: now, packets: v.Packets, bytes: v.Bytes}
	}
	if err := it.Err(); err != nil {
		m.log.Warn("offload: listing adopted entries", zap.Error(err))
	}
	m.log.Info("offload: adopted the pinned kernel entries", zap.Int("entries", len(m.entries)))
}

// Adopting tells whether the entries are still a previous process's,
// not yet revalidated.
func (m *Manager) Adopting() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.adopting
}

func (m *Manager) run() {
	defer close(m.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.PushStats()
			m.expire(IdleTimeout)
			m.agePending()
		}
	}
}

// Close stops the stats push, pushes the last counters and frees the
// program and maps (the ports' links keep the program until closed);
// after Retain the pinned state stays for the next process.
func (m *Manager) Close() error {
	close(m.stop)
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pushLocked()
	m.closed = true
	return m.k.Close()
}

// Attach attaches the program to a port's interface (port name, the
// pin of its link); closing the result detaches it unless retained.
func (m *Manager) Attach(ifindex int, name string) (io.Closer, error) {
	return m.k.Attach(ifindex, name)
}

// AttachTC is Attach for a port on the tc path (Kernel.AttachTC), whose
// socket is bound to port.UpcallEthertype.
func (m *Manager) AttachTC(ifindex int, name string) (io.Closer, error) {
	return m.k.AttachTC(ifindex, name)
}

// AttachUnderlay attaches the program to a Geneve underlay interface
// (Kernel.AttachUnderlay).
func (m *Manager) AttachUnderlay(ifindex int, name string) (io.Closer, error) {
	return m.k.AttachUnderlay(ifindex, name)
}

// TCPath tells whether a system port on the interface name goes on the
// tc path (its socket then gets the program's upcalls, not a tap's copy):
// ports with offload metadata (vnet), which XDP would strip, and veths,
// for which the tc path costs less per packet than generic XDP
// (docs/offload.md, "XDP and TCX"), where the kernel has TCX.
func (m *Manager) TCPath(name string, vnet bool) bool {
	return m.tcx && (vnet || IsVeth(name))
}

// Retain makes the pinned state outlive this process: closing the ports
// and the manager then leaves the program attached and the entries
// forwarding (a clean stop without --cleanup, as ovs-vswitchd leaves its
// kernel datapath).
func (m *Manager) Retain() {
	m.k.Retain()
	// Keepalives would be lost while no process runs: the links move to
	// the program without them.
	if err := m.k.Hold(); err != nil {
		m.log.Warn("offload: keepalives stay on across the stop", zap.Error(err))
	}
}

// SweepLinks detaches the pinned links no port claimed (ports deleted
// while govs-vswitchd was down) and returns their names.
func (m *Manager) SweepLinks() []string { return m.k.SweepLinks() }

// Invalidate makes the program ignore every entry at once (the pipeline
// moved to generation gen) and then deletes them, pushing their last
// counters. Called from Pipeline.BumpGeneration, before the change that
// bumped it is visible to the caller.
func (m *Manager) Invalidate(gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen <= m.gen || m.closed || m.k.retained() {
		// A later change got here first, or the bridge is gone or going
		// with its entries left for the next process.
		return
	}
	if m.adopting {
		m.gen = gen // the adopted entries wait for Revalidate
		return
	}
	if err := m.k.SetGeneration(m.base + gen); err != nil {
		m.log.Error("offload: invalidating kernel entries failed", zap.Error(err))
		return
	}
	m.gen = gen
	m.pushLocked()
	if err := m.k.Clear(); err != nil {
		m.log.Warn("offload: deleting stale kernel entries failed", zap.Error(err))
	}
	clear(m.entries)
	clear(m.byConn)
}

// OutputFunc resolves a decision's output port for the program: the
// interface to redirect to, the counters' key for the port (PortStats: its
// ifindex, or PortID for a tunnel port) and, for a tunnel port, the
// outer header for a frame sent with the final key; ok false when the
// program cannot send there.
type OutputFunc func(ofport uint32, final *flowtable.Key) (ifindex int, countAs uint32, enc *Encap, ok bool)

// Offer installs the kernel entry for a packet that went through the
// megaflow cache, decided at pipeline generation gen, or deletes the
// entry of its flow when its decision can no longer be offloaded.
// output resolves the output port.
func (m *Manager) Offer(fk FlowKey, gen uint64, start, final *flowtable.Key, hits []*flowcache.Entry, output OutputFunc) {
	if len(hits) == 0 {
		// A cache miss (the cache only decides after the upcall): nothing
		// new about the flow. A pipeline change has already removed its
		// entry; a mere cache expiry leaves the kernel's decision valid.
		return
	}
	key, err := fk.kernel()
	if err != nil {
		return
	}
	if established(final) {
		// A flow without an entry is only counted until it is due: the
		// decision is taken then (its rules gathered, its output
		// resolved), not for each of its first packets.
		m.mu.Lock()
		wait := m.entries[key] == nil && !m.closed && !m.adopting && !m.due(key)
		m.mu.Unlock()
		if wait {
			return
		}
	}
	d, ok := Decide(start, final, hits)
	var (
		out     int
		countAs uint32
		enc     *Encap
	)
	if ok {
		out, countAs, enc, ok = output(d.OutPort, final)
		// Back out of the interface it came in on, or from one tunnel
		// into another: userspace's. So are tunnels with VLAN tags, on
		// the inner frame or changed (the program keeps tunnels and
		// tags apart).
		tunnel := enc != nil || fk.Tun.Dst != [4]byte{}
		ok = ok && uint32(out) != fk.Ifindex && !(enc != nil && fk.Tun.Dst != [4]byte{}) &&
			!(tunnel && (fk.VlanTCI != 0 || d.Action.Flags&actVLAN != 0))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.adopting {
		return
	}
	old := m.entries[key]
	if !ok {
		if old != nil {
			m.deleteLocked(key, old)
		}
		return
	}
	if gen != m.gen {
		return // decided before the last invalidation: stale already
	}
	if old != nil {
		m.pushOneLocked(key, old) // the replaced entry's counters restart
	}
	d.Action.OutIfindex = uint32(out)
	if enc != nil {
		d.Action.Flags |= ActEncap
		d.Action.Encap = enc
	}
	if fk.Tun.Dst != [4]byte{} {
		d.Action.Flags |= ActDecap
	}
	in := fk.CountAs
	if in == 0 {
		in = fk.Ifindex
	}
	// A Geneve entry's connection is recorded too: Revalidate removes
	// the entry, but conntrack adopts the connection, so its next packet
	// through userspace is still +est.
	// A copy for the install, which hands it to the kernel (it escapes):
	// key itself stays on the stack of every packet that installs nothing.
	ik := key
	m.installLocked(&ik, d, in, countAs, connOf(start, final, hits))
}

// InstallAfter is the number of established packets of a flow (one
// direction) userspace forwards before the kernel takes the flow over.
// An entry costs system calls on the poll thread, before the batch that
// got it installed is sent: two to write (entry and, pinned, connection
// record) and two to delete, 2-3 µs each on the bench VM, more than the
// packets of a flow that ends right after its handshake save. A short TCP
// connection (the handshake's ACK, a request and its answer, then FIN or
// RST: at most 3 established packets from the client, 1-2 from the
// server) or a DNS answer never reaches the count, and costs no system
// call at all; a stream or a long request/response connection is
// offloaded from its fifth packet on. Measured with the bench's crr
// (docs/offload.md "Short connections"): with TCP entries at the first
// established packet, 7.7 bpf system calls per connection took 26% of the
// switch's CPU for 1-2 packets the kernel forwarded. nftables's flowtable
// documents the same choice: offload a connection once it has counted
// enough packets.
const InstallAfter = 4

// closing marks, in pending, a flow whose connection sent a FIN or RST:
// it gets no new entry (its last packets would not pay one back) until
// a SYN on the same tuple or two idle seconds.
const closing = 0xff

// due counts an established packet of a flow without an entry and
// reports whether the flow has had InstallAfter of them (its count is
// then dropped).
func (m *Manager) due(key offloadFlowKey) bool {
	n, ok := m.pending[key]
	if !ok {
		n = m.pendingOld[key]
	}
	if n == closing {
		m.pending[key] = n
		return false
	}
	if n++; n < InstallAfter {
		m.pending[key] = n
		return false
	}
	delete(m.pending, key)
	delete(m.pendingOld, key)
	return true
}

// agePending forgets the counts of flows idle for a second or more.
func (m *Manager) agePending() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.pendingOld)
	m.pending, m.pendingOld = m.pendingOld, m.pending
}

// installLocked writes an entry valid in the current generation; in and
// out are the ports its packets count on (ifindex or PortID).
func (m *Manager) installLocked(key *offloadFlowKey, d Decision, in, out uint32, conn *conntrack.Entry) {
	m.installs++
	if err := m.k.install(key, d.Action, m.base+m.gen, conn); err != nil {
		m.log.Warn("offload: installing entry failed", zap.Error(err))
		if e := m.entries[*key]; e != nil {
			m.dropLocked(*key, e)
		}
		return
	}
	if e := m.entries[*key]; e != nil {
		m.dropLocked(*key, e) // replaced
	}
	e := &installed{rules: d.Rules, in: in, out: out, txDelta: txDelta(d.Action.Flags), since: int64(monotonicNow())}
	m.entries[*key] = e
	if conn != nil {
		e.conn = connID{zone: conn.Zone, orig: conn.Orig}
		cs := m.byConn[e.conn]
		if cs == nil {
			cs = &connState{}
			m.byConn[e.conn] = cs
		}
		if !slices.Contains(cs.keys, *key) {
			cs.keys = append(cs.keys, *key)
		}
	}
}

// dropLocked removes an entry from the Go side's books (not from the
// kernel's map); its connection's state goes with its last entry.
func (m *Manager) dropLocked(key offloadFlowKey, e *installed) {
	delete(m.entries, key)
	cs := m.byConn[e.conn]
	if cs == nil {
		return
	}
	for _, k := range cs.keys {
		if m.entries[k] != nil {
			return
		}
	}
	delete(m.byConn, e.conn)
}

// IdleTimeout is how long an entry the kernel has not used stays (a flow
// that ended without a FIN or RST: UDP, or a lost FIN).
const IdleTimeout = 10 * time.Second

// expire deletes the entries idle for longer than idle.
func (m *Manager) expire(idle time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	now := int64(monotonicNow())
	var v offloadFlowAction
	for key, e := range m.entries {
		if m.k.objs.Flows.Lookup(&key, &v) != nil {
			m.dropLocked(key, e)
			continue
		}
		if now-max(int64(v.LastUsed), e.since) > int64(idle) {
			m.deleteLocked(key, e)
		}
	}
}

// Forget deletes fk's entry, if any, and its count: a SYN on its tuple
// went through userspace (a new connection, whose packets no old entry
// may take).
func (m *Manager) Forget(fk FlowKey) {
	key, err := fk.kernel()
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pending, key)
	delete(m.pendingOld, key)
	if e := m.entries[key]; e != nil && !m.closed {
		m.deleteLocked(key, e)
	}
}

// End handles a FIN or RST of fk (start and final keys, the megaflows
// hit) that went through userspace. An RST, or a FIN after the other
// direction's, ends the connection: the entries of both directions are
// deleted and not installed again while it closes (its last ACKs would
// not pay an entry back). A first FIN deletes only its own direction's
// entry, as before: the other direction may stream on for long (a
// half-close), and this one's ACKs with it.
func (m *Manager) End(fk FlowKey, start, final *flowtable.Key, hits []*flowcache.Entry) {
	key, err := fk.kernel()
	if err != nil {
		return
	}
	ce, known := connEntry(start, final, hits)
	rst := final.TCPFlags()&0x04 != 0
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	delete(m.pendingOld, key)
	var cs *connState
	if known {
		cs = m.byConn[connID{zone: ce.Zone, orig: ce.Orig}]
	}
	if cs == nil || (!rst && !cs.fin) {
		if cs != nil {
			cs.fin = true
		}
		if rst || cs == nil && known {
			// Nothing installed for the connection (a short one), or an
			// RST: this direction stays in userspace while it closes.
			m.pending[key] = closing
		} else {
			delete(m.pending, key)
		}
		if e := m.entries[key]; e != nil {
			m.deleteLocked(key, e)
		}
		return
	}
	m.pending[key] = closing
	for _, k := range slices.Clone(cs.keys) {
		if e := m.entries[k]; e != nil {
			m.deleteLocked(k, e)
		}
		m.pending[k] = closing
	}
}

// deleteLocked pushes an entry's last counters and deletes it, in one
// system call where the kernel can (a connection's end deletes two).
func (m *Manager) deleteLocked(key offloadFlowKey, e *installed) {
	m.deletes++
	var v offloadFlowAction
	switch err := m.k.lookupAndDelete(&key, &v); {
	case err == nil:
		m.pushValueLocked(e, &v)
	case errors.Is(err, ebpf.ErrKeyNotExist):
	default:
		m.pushOneLocked(key, e)
		if err := m.k.delete(&key); err != nil {
			m.log.Warn("offload: deleting entry failed", zap.Error(err))
		}
	}
	m.dropLocked(key, e)
}

// PushStats adds what the kernel forwarded since the last push to the
// counters of the rules of each entry.
func (m *Manager) PushStats() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.pushLocked()
	}
}

func (m *Manager) pushLocked() {
	for key, e := range m.entries {
		m.pushOneLocked(key, e)
	}
}

func (m *Manager) pushOneLocked(key offloadFlowKey, e *installed) {
	var v offloadFlowAction
	if err := m.k.objs.Flows.Lookup(&key, &v); err != nil {
		return
	}
	m.pushValueLocked(e, &v)
}

// pushValueLocked pushes the counters of e's kernel entry, as read in v.
func (m *Manager) pushValueLocked(e *installed, v *offloadFlowAction) {
	dp, db := v.Packets-e.packets, v.Bytes-e.bytes
	if dp == 0 {
		return
	}
	e.packets, e.bytes = v.Packets, v.Bytes
	m.packets += dp
	m.bytes += db
	in, out := m.port(e.in), m.port(e.out)
	in.RxPackets += dp
	in.RxBytes += db
	out.TxPackets += dp
	out.TxBytes += uint64(int64(db) + int64(dp)*e.txDelta)
	for _, r := range e.rules {
		r.Stats.Packets.Add(dp)
		r.Stats.Bytes.Add(db)
	}
}

func (m *Manager) port(ifindex uint32) *PortCounters {
	c := m.ports[ifindex]
	if c == nil {
		c = &PortCounters{}
		m.ports[ifindex] = c
	}
	return c
}

// PortStats returns what the kernel forwarded from and to a port (its
// ifindex, or PortID for a tunnel port), as of the last push (at most a
// second old).
func (m *Manager) PortStats(id uint32) PortCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.ports[id]; c != nil {
		return *c
	}
	return PortCounters{}
}

// Stats are the fast path's counters.
type Stats struct {
	Entries        int
	Packets, Bytes uint64 // forwarded by the kernel
	// Installs and Deletes count the entries written and deleted one by
	// one since the start (not the invalidations' whole-map clears).
	Installs, Deletes uint64
	// Upcalls counts the frames the tc program sent up to the ports'
	// sockets and UpcallsLost those lost on the way, since the maps were
	// created (pinned, they count across restarts).
	Upcalls, UpcallsLost uint64
}

// Stats pushes the kernel counters and returns the totals.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.pushLocked()
	}
	st := Stats{Entries: len(m.entries), Packets: m.packets, Bytes: m.bytes, Installs: m.installs, Deletes: m.deletes}
	if !m.closed {
		var err error
		if st.Upcalls, st.UpcallsLost, err = m.k.Upcalls(); err != nil {
			m.log.Warn("offload: upcall counters", zap.Error(err))
		}
	}
	return st
}

// String names the manager in logs.
func (m *Manager) String() string { return fmt.Sprintf("offload(gen %d)", m.gen) }

// Probe tells whether this kernel can load the program (BPF, the map and
// program types, the verifier's acceptance), without attaching it.
func Probe() error {
	k, err := Load("")
	if err != nil {
		return err
	}
	return k.Close()
}
