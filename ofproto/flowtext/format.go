// Package flowtext reads and writes the ovs-ofctl flow syntax
// (ovs-fields(7), ovs-actions(7), ovs-ofctl(8)) for the govs flow model.
//
// Printing follows what `ovs-ofctl dump-flows --no-stats` prints for the
// same flows in a given OpenFlow version, because some actions travel
// differently per version and OVS prints them as they travelled (load: vs
// set_field:, mod_dl_dst: vs set_field:...->eth_dst, goto_table vs resubmit).
package flowtext

import (
	"fmt"
	"sort"
	"strings"

	"github.com/govs-project/govs/flowtable"
)

// FormatFlow prints a flow as `ovs-ofctl dump-flows --no-stats` does
// (without the leading space).
func FormatFlow(f *flowtable.Flow, o *PrintOptions) string {
	var b strings.Builder
	if f.Cookie != 0 {
		fmt.Fprintf(&b, "cookie=%#x, ", f.Cookie)
	}
	if f.Table != 0 {
		fmt.Fprintf(&b, "table=%d, ", f.Table)
	}
	if f.IdleTimeout != 0 {
		fmt.Fprintf(&b, "idle_timeout=%d, ", f.IdleTimeout)
	}
	if f.HardTimeout != 0 {
		fmt.Fprintf(&b, "hard_timeout=%d, ", f.HardTimeout)
	}
	if f.Flags != 0 {
		formatFlowFlags(&b, f.Flags)
	}
	if f.Importance != 0 {
		fmt.Fprintf(&b, "importance=%d, ", f.Importance)
	}
	n := b.Len()
	FormatMatch(&b, &f.Match, int(f.Priority), o)
	if b.Len() != n {
		b.WriteByte(' ')
	}
	b.WriteString("actions=")
	FormatActions(&b, f.Actions, o)
	return b.String()
}

func formatFlowFlags(b *strings.Builder, fl flowtable.FlowFlags) {
	names := []struct {
		f flowtable.FlowFlags
		n string
	}{
		{flowtable.FlagSendFlowRem, "send_flow_rem"},
		{flowtable.FlagCheckOverlap, "check_overlap"},
		{flowtable.FlagResetCounts, "reset_counts"},
		{flowtable.FlagNoPktCounts, "no_packet_counts"},
		{flowtable.FlagNoBytCounts, "no_byte_counts"},
	}
	for _, x := range names {
		if fl&x.f != 0 {
			b.WriteString(x.n)
			b.WriteString(" ")
		}
	}
}

// FormatMatch prints a match in OVS's canonical order (lib/match.c
// match_format): a walk over matchFields. priority is printed unless it is
// the default.
func FormatMatch(b *strings.Builder, m *flowtable.Match, priority int, o *PrintOptions) {
	start := b.Len()
	if priority != flowtable.DefaultPriority {
		fmt.Fprintf(b, "priority=%d,", priority)
	}
	c := matchCtx{b: b, m: m, o: o}
	c.dlType, _ = c.u(flowtable.FieldEthType)
	c.proto, _ = c.u(flowtable.FieldIPProto)
	for i := range matchFields {
		if e := &matchFields[i]; e.when == nil || e.when(&c) {
			e.print(&c, e)
		}
	}
	if b.Len() > start {
		s := b.String()
		if s[len(s)-1] == ',' {
			trimLast(b)
		}
	}
}

func trimLast(b *strings.Builder) {
	s := b.String()
	b.Reset()
	b.WriteString(s[:len(s)-1])
}

// MatchString returns FormatMatch as a string.
func MatchString(m *flowtable.Match, priority int, o *PrintOptions) string {
	var b strings.Builder
	FormatMatch(&b, m, priority, o)
	return b.String()
}

// SortedFlowStrings formats flows and sorts the lines byte-wise, like
// `ovs-ofctl dump-flows ... | sort`.
func SortedFlowStrings(flows []*flowtable.Flow, o *PrintOptions) []string {
	out := make([]string, 0, len(flows))
	for _, f := range flows {
		out = append(out, " "+FormatFlow(f, o))
	}
	sort.Strings(out)
	return out
}
