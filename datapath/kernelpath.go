package datapath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"

	"go.uber.org/zap"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/datapath/flowcache"
	"github.com/govs-project/govs/datapath/geneve"
	"github.com/govs-project/govs/datapath/offload"
	"github.com/govs-project/govs/datapath/port"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/tunnel"
)

// The kernel fast path's hooks (docs/offload.md): an XDP program on each
// system port (a TCX one on veths and ports with offload metadata, whose
// sockets get what it sends up, and one on a Geneve underlay) forwards what the
// megaflow cache decided for established connections; the port loops
// install its entries.

// EnableOffload makes m the bridge's kernel fast path for the system ports
// added from then on, and has every pipeline change invalidate its entries
// before the change returns. Call it before the first AddPort, in the
// network namespace of the ports' interfaces.
func (b *Bridge) EnableOffload(m *offload.Manager) {
	b.offload = m
	b.pipeline.SetGenerationHook(m.Invalidate)
	m.Invalidate(b.pipeline.Generation.Load())
}

// Offload returns the bridge's kernel fast path (nil: off).
func (b *Bridge) Offload() *offload.Manager { return b.offload }

// ifindexer is a port backed by a kernel interface (AF_PACKET).
type ifindexer interface{ Ifindex() int }

// upcallPort is a port whose socket gets the tc program's upcalls
// (afpacket.Config.Upcall) instead of tapping its interface.
type upcallPort interface {
	Upcall() bool
	// Tap makes the socket a tap again, for a port the tc program could
	// not be attached to.
	Tap() error
}

// attachOffload puts the program on a system port's interface (unless
// the port opted out: noOffload); a port it cannot attach to works as
// before, in userspace.
func (b *Bridge) attachOffload(bp *bridgePort, kind string, noOffload bool) {
	if g, ok := bp.p.(*geneve.Port); ok && b.offload != nil && !b.CacheDisabled && !noOffload {
		b.attachTunnelOffload(bp, g)
		return
	}
	up, _ := bp.p.(upcallPort)
	upcall := up != nil && up.Upcall()
	ix, ok := bp.p.(ifindexer)
	if b.offload == nil || kind != KindSystem || !ok || b.CacheDisabled || noOffload {
		if upcall {
			b.tapAgain(bp, up, errors.New("no kernel fast path for the port"))
		}
		return
	}
	// A port whose socket gets upcalls gets the tc path; the daemon gives
	// it to veths and to ports with offload metadata, which XDP would
	// strip (Manager.TCPath). Others get XDP.
	attach := b.offload.Attach
	if upcall {
		attach = b.offload.AttachTC
	} else if bp.vnet != nil {
		b.offloadAttachFailed(bp, errors.New("a port with offload metadata (vnet_hdr) whose socket is a tap"))
		return
	}
	x, err := attach(ix.Ifindex(), bp.p.Name())
	if err != nil {
		if upcall {
			b.tapAgain(bp, up, err)
			return
		}
		b.offloadAttachFailed(bp, err)
		return
	}
	bp.xdp, bp.ifindex, bp.off, bp.offID = x, ix.Ifindex(), b.offload, uint32(ix.Ifindex())
}

// tapAgain makes the socket of a port that gets no tc program a tap
// (nothing would send it frames), the port then in userspace only.
func (b *Bridge) tapAgain(bp *bridgePort, up upcallPort, why error) {
	if err := up.Tap(); err != nil {
		why = fmt.Errorf("%w; and its socket cannot tap the interface: %w", why, err)
	}
	b.offloadAttachFailed(bp, why)
}

func (b *Bridge) offloadAttachFailed(bp *bridgePort, err error) {
	if b.OffloadAttachError != nil {
		b.OffloadAttachError(bp.p.Name(), err)
	} else {
		b.log.Warn("offload: port stays in userspace", zap.String("port", bp.p.Name()), zap.Error(err))
	}
}

// attachTunnelOffload lets the program encapsulate for a Geneve port and
// decapsulate what it receives. The program writes the outer headers the
// port would, so it needs what fixes them: the underlay interface (the
// one holding local_ip or, without local_ip, the one the route to
// remote_ip leaves through, whose preferred source the kernel gives the
// port's datagrams) and the IANA port; with csum=true, the program
// computes the outer UDP checksum (the tc path of a frame, not of a
// super-segment: those stay in userspace).
// Decapsulation needs the program on that interface too (TCX ingress);
// where it cannot go there, received datagrams stay in userspace.
func (b *Bridge) attachTunnelOffload(bp *bridgePort, g *geneve.Port) {
	o := g.Outer()
	var why error
	switch {
	case o.LocalFlow:
		why = errors.New("local_ip=flow: the outer source is the flow's tun_src")
	case o.Local == [4]byte{} && o.Remote == [4]byte{}:
		why = errors.New("no local_ip and remote_ip=flow: no one underlay interface to attach to")
	case o.Csum && o.MTU > offload.CsumMax:
		why = fmt.Errorf("csum=true with MTU %d: the program checksums datagrams up to %d bytes", o.MTU, offload.CsumMax)
	case o.DstPort != offload.GenevePort:
		why = fmt.Errorf("dst_port %d: the program knows %d only", o.DstPort, offload.GenevePort)
	}
	var (
		ifi *net.Interface
		r   *geneve.Resolver
	)
	if why == nil {
		r, why = geneve.NewResolver()
	}
	if why == nil {
		ifi, why = underlayOf(r, o)
		if why != nil {
			r.Close()
		}
	}
	if why != nil {
		b.log.Info("offload: tunnel stays in userspace", zap.String("port", bp.p.Name()), zap.Error(why))
		return
	}
	bp.geneve, bp.resolver, bp.underlay, bp.off, bp.offID = g, r, ifi.Index, b.offload, offload.PortID(bp.ofport)
	copy(bp.underlayMAC[:], ifi.HardwareAddr)
	bp.underlayInHost = offload.KeepsOffloadsInHost(ifi.Index)
	x, err := b.attachUnderlay(ifi)
	if err != nil {
		b.offloadAttachFailed(bp, fmt.Errorf("decapsulation on %s: %w", ifi.Name, err))
		return
	}
	bp.xdp = x
}

// underlayOf is a Geneve port's underlay interface: the one holding its
// local_ip or, without one, the one the route to its remote_ip leaves
// through (the next hop of every encapsulated entry must stay there).
func underlayOf(r *geneve.Resolver, o geneve.Outer) (*net.Interface, error) {
	if o.Local != [4]byte{} {
		return interfaceWithAddr(netip.AddrFrom4(o.Local))
	}
	ifindex, _, err := r.Route([4]byte{}, o.Remote)
	if err != nil {
		return nil, fmt.Errorf("no local_ip: %w", err)
	}
	return net.InterfaceByIndex(ifindex)
}

// underlayLink is the program's link on a Geneve underlay interface. The
// interface owns it (its pin is the interface's name), not the port that
// attached it: every Geneve port with its local_ip there (one per remote
// chassis) holds a reference, and the link is closed (detached and
// unpinned, or only released when the datapath is retained across a
// restart) when the last of them goes.
type underlayLink struct {
	b       *Bridge
	ifindex int
	link    io.Closer
	refs    int
}

// underlayRef is one Geneve port's reference to its underlay's link.
type underlayRef struct {
	u      *underlayLink
	closed bool
}

// attachUnderlay returns a reference to the link on ifi, attaching the
// program when no port holds one.
func (b *Bridge) attachUnderlay(ifi *net.Interface) (io.Closer, error) {
	b.underlaysMu.Lock()
	defer b.underlaysMu.Unlock()
	u := b.underlays[ifi.Index]
	if u == nil {
		x, err := b.offload.AttachUnderlay(ifi.Index, ifi.Name)
		if err != nil {
			return nil, err
		}
		u = &underlayLink{b: b, ifindex: ifi.Index, link: x}
		if b.underlays == nil {
			b.underlays = map[int]*underlayLink{}
		}
		b.underlays[ifi.Index] = u
	}
	u.refs++
	return &underlayRef{u: u}, nil
}

// Close drops the port's reference; the last one closes the link.
func (r *underlayRef) Close() error {
	u := r.u
	u.b.underlaysMu.Lock()
	defer u.b.underlaysMu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if u.refs--; u.refs > 0 {
		return nil
	}
	delete(u.b.underlays, u.ifindex)
	return u.link.Close()
}

// interfaceWithAddr finds the interface that holds addr.
func interfaceWithAddr(addr netip.Addr) (*net.Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	for i := range ifs {
		addrs, err := ifs[i].Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == addr {
					return &ifs[i], nil
				}
			}
		}
	}
	return nil, fmt.Errorf("no interface has local_ip %s in this namespace", addr)
}

// addOffloadStats adds what the kernel forwarded from and to the port.
func (bp *bridgePort) addOffloadStats(st *port.Stats) {
	if bp.off == nil {
		return
	}
	c := bp.off.PortStats(bp.offID)
	st.RxPackets += c.RxPackets
	st.RxBytes += c.RxBytes
	st.TxPackets += c.TxPackets
	st.TxBytes += c.TxBytes
}

// offloadPortChanged drops the kernel entries when a port's config
// changes (down, no-recv, no-fwd): the program does not check it. The
// userspace path reads the config per packet and needs nothing.
func (b *Bridge) offloadPortChanged() {
	if b.offload != nil {
		b.pipeline.BumpGeneration()
	}
}

func (b *Bridge) detachOffload(bp *bridgePort) {
	if bp.resolver != nil {
		bp.resolver.Close()
		bp.resolver = nil
	}
	if bp.xdp != nil {
		if err := bp.xdp.Close(); err != nil {
			b.log.Warn("offload: detach failed", zap.String("port", bp.p.Name()), zap.Error(err))
		}
		bp.xdp = nil
	}
}

// initOffload makes the loop of a port the program runs on (a system
// port, or a tunnel port's underlay) offer what it forwards.
func (l *loop) initOffload() {
	// A tunnel port's socket may be shared with ports attached later:
	// processOffload checks each datagram's port.
	if l.in.xdp == nil && (l.in.tun == nil || l.b.offload == nil) {
		return
	}
	l.offload = true
	l.cache.TraceHits = true
	l.output = l.offloadOutput
}

// offloadIfindex is the interface the program can redirect to for output
// port ofport: a system port with the program attached that forwards (a
// Geneve port's program is on its underlay, which is no output of its
// own).
func (ps *portSet) offloadIfindex(ofport uint32) (int, bool) {
	if bp := ps.byNo[ofport]; bp != nil && bp.xdp != nil && bp.geneve == nil && bp.config.Load()&(PortConfigDown|PortConfigNoFwd) == 0 {
		return bp.ifindex, bp.sameInterface()
	}
	return 0, false
}

// sameInterface tells whether the port is still on the interface its
// program was attached to: one re-created under the same name (the port
// re-attached to it, as a tap) has another ifindex, which no entry may
// redirect to or match on.
func (bp *bridgePort) sameInterface() bool {
	ix, ok := bp.p.(ifindexer)
	return ok && ix.Ifindex() == bp.ifindex
}

// offloadOutput resolves an output port for the program: a system port
// with the program is redirected to; a Geneve port is encapsulated for
// with the outer header the port would send for the final key.
func (l *loop) offloadOutput(ofport uint32, final *flowtable.Key) (int, uint32, *offload.Encap, bool) {
	bp := l.ports.byNo[ofport]
	if bp == nil || bp.off == nil || bp.config.Load()&(PortConfigDown|PortConfigNoFwd) != 0 {
		return 0, 0, nil, false
	}
	if bp.geneve == nil {
		return bp.ifindex, bp.offID, nil, bp.xdp != nil && bp.sameInterface()
	}
	// A frame from a port on the tc path keeps its offload metadata when
	// the program encapsulates it: only an underlay that finishes it
	// before the frame leaves the kernel may take it.
	// (With csum=true the tc program checksums frames and leaves
	// super-segments to userspace, whose each segment needs a checksum
	// the helper that marks the tunnel cannot ask the kernel for.)
	if l.in.vnet != nil && bp.underlayInHost {
		return 0, 0, nil, false
	}
	enc, ok := geneveEncap(bp, final)
	return bp.underlay, bp.offID, enc, ok
}

// geneveEncap is the outer header bp's Geneve port would have the kernel
// send a frame with key k in (see geneve.Port.WriteTunnel): the inner
// flow's hash, and so the UDP source port, depends only on what the exact
// match fixes, so a frame with the final key's addresses, protocol and
// ports stands for all. The next hop must be resolved and on the underlay
// interface (else the kernel would ARP, or route elsewhere: userspace's).
// Called for installs and keepalives only (it allocates and asks netlink).
func geneveEncap(bp *bridgePort, k *flowtable.Key) (*offload.Encap, bool) {
	g := bp.geneve
	o := g.Outer()
	dst := o.Remote
	if dst == [4]byte{} {
		binary.BigEndian.PutUint32(dst[:], k.TunDst())
		if dst == [4]byte{} {
			return nil, false
		}
	}
	var f [tunnel.EthHeaderLen + tunnel.IPv4HeaderLen + 4]byte
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[tunnel.EthHeaderLen:]
	ip[0], ip[9] = 0x45, k.NwProto()
	binary.BigEndian.PutUint32(ip[12:], k.NwSrc())
	binary.BigEndian.PutUint32(ip[16:], k.NwDst())
	binary.BigEndian.PutUint16(ip[20:], k.TpSrc())
	binary.BigEndian.PutUint16(ip[22:], k.TpDst())
	pkt, sport, err := tunnel.Encap(nil, f[:], k, g.OptionMap())
	if err != nil {
		return nil, false
	}
	// Without local_ip the source is the route's, as the kernel writes
	// it into the port's datagrams (sent from 0.0.0.0).
	nh, err := bp.resolver.NextHop(o.Local, dst)
	if err != nil || nh.Ifindex != bp.underlay || nh.Src == [4]byte{} {
		return nil, false
	}
	return &offload.Encap{
		EthSrc: bp.underlayMAC, EthDst: nh.MAC,
		Src: netip.AddrFrom4(nh.Src), Dst: netip.AddrFrom4(dst), SrcPort: sport,
		TTL: o.TTL, MTU: uint16(min(o.MTU, 0xffff)), Header: pkt[:len(pkt)-len(f)], Csum: o.Csum,
	}, true
}

// processOffload runs the packet (frame i of the batch) through the cache
// and offers the decision to the kernel fast path. The generation is read
// before the cache runs: an entry decided under a generation a change has
// since replaced is never accepted by the program.
func (l *loop) processOffload(in *bridgePort, i int) {
	gen := l.b.pipeline.Generation.Load()
	var (
		fk   offload.FlowKey
		kind offload.KeyKind
	)
	if l.in.tun != nil {
		// The datagram came in on the reading port's shared socket: in is
		// the port it is for, whose counters the kernel's packets go to.
		// A port sharing the socket without offload (another remote_ip
		// not on the program's underlay) stays in userspace.
		md := l.in.tun.Metadata(i)
		if in.off != nil && in.geneve != nil && in.underlay != 0 && md.Ifindex == in.underlay {
			fk, kind = offload.TunnelKeyOf(md, in.underlayMAC, &l.pkt.Key)
			fk.CountAs = in.offID
		}
	} else {
		fk, kind = offload.KeyOf(l.in.ifindex, &l.pkt.Key)
	}
	ends := kind == offload.KeyControl && offload.Ends(&l.pkt.Key)
	if kind == offload.KeyOffer || ends {
		l.start = l.pkt.Key
	}
	l.cache.Process(&l.pkt, l)
	switch {
	case kind == offload.KeyOffer:
		l.b.offload.Offer(fk, gen, &l.start, &l.pkt.Key, l.cache.Hits, l.output)
	case ends:
		l.b.offload.End(fk, &l.start, &l.pkt.Key, l.cache.Hits)
	case kind == offload.KeyControl:
		l.b.offload.Forget(fk)
	}
}

// RevalidateOffload ends the adoption of a previous process's kernel
// entries (offload.Manager.Revalidate): adopt enters their connections
// into conntrack, then each entry's flow is replayed through the current
// pipeline (twice, through a private megaflow cache, outputs discarded) and kept only
// if the new flows still offload it. Call it
// once the controller has replayed its flows (flow-restore-wait over) and
// the ports are attached. The replay counts two packets in the flows
// it hits.
func (b *Bridge) RevalidateOffload(adopt func(conntrack.Entry) error) (kept, removed int) {
	m := b.offload
	if m == nil || !m.Adopting() {
		return 0, 0
	}
	c := flowcache.New(b.pipeline)
	defer c.Close()
	c.TraceHits = true
	ports := b.ports.Load()
	var pkt flowtable.Packet
	replay := func(fk offload.FlowKey) (start, final flowtable.Key, hits []*flowcache.Entry, ok bool) {
		var in *bridgePort
		for _, bp := range ports.byNo {
			if bp.xdp != nil && uint32(bp.ifindex) == fk.Ifindex {
				in = bp
			}
		}
		if in == nil {
			return start, final, nil, false
		}
		// The first run fills the cache (an upcall reports no hits, as
		// for the packet loop's first packet), the second is the one a
		// packet of the flow now takes.
		for range 2 {
			pkt = flowtable.Packet{}
			pkt.Key.SetInPort(in.ofport)
			if err := pkt.Extract(fk.Frame()); err != nil {
				return start, final, nil, false
			}
			if clk, ok := b.pipeline.Conntrack.(flowtable.ConntrackClock); ok {
				pkt.CtNow = clk.Now()
			}
			start = pkt.Key
			c.Process(&pkt, discard{})
		}
		return start, pkt.Key, c.Hits, true
	}
	return m.Revalidate(adopt, replay, ports.offloadIfindex)
}

// discard is the sink of a replayed packet: nothing leaves the switch.
type discard struct{}

func (discard) Output(uint32, *flowtable.Packet)                {}
func (discard) PacketIn(*flowtable.Packet, *flowtable.PacketIn) {}
