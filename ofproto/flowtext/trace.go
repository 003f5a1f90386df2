package flowtext

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// ParsePacket parses a packet description in match syntax
// ('in_port=49,tcp,dl_src=...,nw_src=...,tp_dst=80') into a key with
// in_port and metadata set, as ofproto/trace takes it. Unset fields are
// zero; masks are not allowed.
func ParsePacket(s string, o *ParseOptions) (flowtable.Key, error) {
	fm := &FlowMod{}
	if o == nil {
		o = &ParseOptions{}
	}
	if err := parseMatchPart(fm, s, o); err != nil {
		return flowtable.Key{}, err
	}
	for i, m := range fm.Match.Mask {
		_ = i
		if m != 0 && m != 0xff {
			// Sub-byte fields (dscp, vlan pcp, ...) have partial byte masks;
			// value bits outside them are zero anyway.
			continue
		}
	}
	return fm.Match.Value, nil
}

// FormatTrace prints a pipeline walk in the spirit of
// `ovs-appctl ofproto/trace`: each table with the flow it matched, the
// actions executed and the fields they changed, then the outputs.
func FormatTrace(tr *flowtable.Trace, o *PrintOptions) string {
	var b strings.Builder
	for _, e := range tr.Events {
		ind := strings.Repeat("    ", max(e.Depth-1, 0))
		switch e.Kind {
		case flowtable.TraceLookup:
			if e.Rule == nil {
				fmt.Fprintf(&b, "%s%d. No match.\n", ind, e.Table)
				continue
			}
			rm := e.Rule.Match()
			m := MatchString(&rm, flowtable.DefaultPriority, o)
			if m == "" {
				m = "(catch-all)"
			}
			fmt.Fprintf(&b, "%s%d. %s, priority %d", ind, e.Table, m, e.Rule.Priority)
			if e.Rule.Cookie != 0 {
				fmt.Fprintf(&b, ", cookie %#x", e.Rule.Cookie)
			}
			b.WriteByte('\n')
		case flowtable.TraceAction:
			fmt.Fprintf(&b, "%s    %s\n", ind, ActionsString([]flowtable.Action{e.Action}, o))
			for _, c := range KeyChanges(&e.Before, &e.After, o) {
				fmt.Fprintf(&b, "%s     -> %s\n", ind, c)
			}
		case flowtable.TraceNote:
			fmt.Fprintf(&b, "%s     >> %s\n", ind, e.Msg)
		case flowtable.TraceOutput:
			if e.Msg != "" {
				fmt.Fprintf(&b, "%s     => %s\n", ind, e.Msg)
			} else {
				fmt.Fprintf(&b, "%s     => output to port %s\n", ind, ofptext.PortString(e.Port, o))
			}
		}
	}
	return b.String()
}

// traceFields are the fields KeyChanges reports, in print order.
var traceFields = func() []*flowtable.Field {
	var fs []*flowtable.Field
	fs = append(fs, flowtable.FieldReg[:]...)
	fs = append(fs, flowtable.FieldMetadata, flowtable.FieldPktMark, flowtable.FieldInPort,
		flowtable.FieldTunID, flowtable.FieldTunSrc, flowtable.FieldTunDst,
		flowtable.FieldTunIPv6Src, flowtable.FieldTunIPv6Dst, flowtable.FieldCtState, flowtable.FieldCtZone, flowtable.FieldCtMark, flowtable.FieldCtLabel,
		flowtable.FieldEthSrc, flowtable.FieldEthDst, flowtable.FieldVlanTCI,
		flowtable.FieldIPv4Src, flowtable.FieldIPv4Dst, flowtable.FieldIPTTL, flowtable.FieldNwTos,
		flowtable.FieldTCPSrc, flowtable.FieldTCPDst,
		flowtable.FieldArpOp, flowtable.FieldArpSha, flowtable.FieldArpTha)
	return fs
}()

// KeyChanges lists "field=value" for every traced field that differs.
func KeyChanges(before, after *flowtable.Key, o *PrintOptions) []string {
	var out []string
	for _, f := range traceFields {
		a, b := f.Value(before), f.Value(after)
		if string(a) == string(b) {
			continue
		}
		out = append(out, f.Name+"="+FieldValueString(f, b, nil))
	}
	if o != nil && o.TLV != nil {
		for _, m := range o.TLV.Mappings() {
			f, err := o.TLV.Resolve(flowtable.FieldTunMetadataN[m.Index])
			if err != nil {
				continue
			}
			a, b := f.Value(before), f.Value(after)
			if string(a) != string(b) {
				out = append(out, f.Name+"="+FieldValueString(f, b, nil))
			}
		}
	}
	return out
}

// KeyString prints the packet fields of a key as a match (all set fields
// exact), for "Flow:" and "Final flow:" lines.
func KeyString(k *flowtable.Key, o *PrintOptions) string {
	var m flowtable.Match
	m.Value = *k
	// Show only fields with a nonzero value, plus the protocol fields.
	for _, f := range flowtable.Fields {
		if !f.Resolved() || f.IsTunMetadata() || strings.HasPrefix(f.Name, "xreg") ||
			strings.HasPrefix(f.Name, "xxreg") || f == flowtable.FieldInPortOXM {
			continue
		}
		if f.Wide() {
			v := f.Value(k)
			if !ofptext.AllZero(v) {
				f.SetValue(&m.Mask, ofptext.OnesOf(f.Bytes))
			}
			continue
		}
		if f.Uint64(k) != 0 {
			f.SetUint64(&m.Mask, ^uint64(0))
		}
	}
	m.Value = k.Masked(&m.Mask)
	return MatchString(&m, flowtable.DefaultPriority, o)
}
