// Package ctadapter plugs the conntrack engine into the flowtable pipeline:
// it turns a pipeline CTRequest into conntrack Args and the result back
// into the packet's ct_* key fields. Neither package knows the other.
package ctadapter

import (
	"encoding/binary"

	"github.com/govs-project/govs/conntrack"
	"github.com/govs-project/govs/flowtable"
)

// Adapter is a flowtable.Conntrack backed by a conntrack.Tracker.
type Adapter struct {
	T *conntrack.Tracker
}

// New returns an adapter over a new tracker with the default configuration.
func New() *Adapter { return &Adapter{T: conntrack.New(conntrack.Config{})} }

// Wrap returns an adapter over an existing tracker.
func Wrap(t *conntrack.Tracker) *Adapter { return &Adapter{T: t} }

// Now implements flowtable.ConntrackClock.
func (a *Adapter) Now() int64 { return a.T.Now() }

// Execute implements flowtable.Conntrack.
func (a *Adapter) Execute(pkt *flowtable.Packet, req *flowtable.CTRequest) {
	k := &pkt.Key
	var md conntrack.Meta
	md.State = uint8(k.CtState())
	md.Zone = k.CtZone()
	md.Mark = k.CtMark()
	md.Label.Hi, md.Label.Lo = k.CtLabel()
	args := conntrack.Args{
		Zone:     req.Zone,
		Commit:   req.Commit,
		Force:    req.Force,
		SetMark:  req.SetMark,
		Mark:     req.Mark,
		MarkMask: req.MarkMask,
		SetLabel: req.SetLabel,
	}
	if req.SetLabel {
		args.Label = conntrack.Label{Hi: binary.BigEndian.Uint64(req.Label[:8]), Lo: binary.BigEndian.Uint64(req.Label[8:])}
		args.LabelMask = conntrack.Label{Hi: binary.BigEndian.Uint64(req.LabelMask[:8]), Lo: binary.BigEndian.Uint64(req.LabelMask[8:])}
	}
	var nat conntrack.NAT
	if req.NAT != nil {
		n := req.NAT
		switch {
		case n.Flags&flowtable.NATSrc != 0:
			nat.Action = conntrack.NATSrc
		case n.Flags&flowtable.NATDst != 0:
			nat.Action = conntrack.NATDst
		default:
			nat.Action = conntrack.NATExisting
		}
		nat.MinAddr, nat.MaxAddr = n.AddrMin, n.AddrMax
		nat.MinPort, nat.MaxPort = n.PortMin, n.PortMax
		nat.Persistent = n.Flags&flowtable.NATPersistent != 0
		nat.Hash = n.Flags&flowtable.NATHash != 0
		nat.Random = n.Flags&flowtable.NATRandom != 0
		args.NAT = &nat
	}
	if o := &pkt.Offload; o.CsumPartial {
		proto := k.NwProto()
		if o.CsumStart == pkt.L4 && (proto == flowtable.IPProtoTCP || proto == flowtable.IPProtoUDP) {
			args.CsumPartial = true
		} else if req.NAT != nil {
			// Only TCP/UDP partial checksums are rewritten as such.
			_ = pkt.CompleteChecksum()
		}
	}
	if pkt.L3 < 0 {
		pkt.L3 = len(pkt.Frame)
	}
	now := pkt.CtNow
	if now == 0 {
		now = a.T.Now()
	}
	if req.NAT != nil {
		pkt.Unshare() // NAT rewrites the frame
	}
	a.T.Execute(pkt.Frame, pkt.L3, k.EthType(), &md, &args, now)
	k.SetCtState(uint32(md.State))
	k.SetCtZone(md.Zone)
	k.SetCtMark(md.Mark)
	k.SetCtLabel(md.Label.Hi, md.Label.Lo)
	o := &md.Orig
	flowtable.FieldCtNwProto.SetUint64(k, uint64(o.Proto))
	flowtable.FieldCtTpSrc.SetUint64(k, uint64(o.SrcPort))
	flowtable.FieldCtTpDst.SetUint64(k, uint64(o.DstPort))
	if o.IPv6 {
		flowtable.FieldCtIPv6Src.SetValue(k, o.Src[:])
		flowtable.FieldCtIPv6Dst.SetValue(k, o.Dst[:])
		flowtable.FieldCtNwSrc.SetUint64(k, 0)
		flowtable.FieldCtNwDst.SetUint64(k, 0)
	} else {
		flowtable.FieldCtNwSrc.SetUint64(k, uint64(o.NwSrc()))
		flowtable.FieldCtNwDst.SetUint64(k, uint64(o.NwDst()))
	}
	if req.NAT != nil {
		pkt.Rebase()
	}
}

// FlushZone forgets the zone's connections (flowtable.ConntrackFlusher).
func (a *Adapter) FlushZone(zone uint16) int { return a.T.FlushZone(zone) }
