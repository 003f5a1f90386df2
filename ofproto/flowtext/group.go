package flowtext

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// ParseGroup parses a group in ovs-ofctl add-group syntax:
// group_id=5,type=select,bucket=bucket_id:0,weight:100,actions=...,bucket=...
func ParseGroup(s string, o *ParseOptions) (*flowtable.GroupEntry, error) {
	if o == nil {
		o = &ParseOptions{}
	}
	g := &flowtable.GroupEntry{Type: flowtable.GroupAll}
	// Split at each "bucket=" (buckets hold commas of their own).
	parts := splitBuckets(s)
	head := parts[0]
	haveID, haveType := false, false
	for e := range ofptext.Elements(head.text, head.pos) {
		switch e.Key {
		case "group_id":
			if e.Value == "all" {
				g.ID = flowtable.GroupAllID
			} else {
				id, err := ofptext.ParseNum(e.Value, 32)
				if err != nil {
					return nil, ofptext.ErrAt(e.ValPos, "group_id", "%v", err)
				}
				g.ID = uint32(id)
			}
			haveID = true
		case "type":
			switch e.Value {
			case "all":
				g.Type = flowtable.GroupAll
			case "select":
				g.Type = flowtable.GroupSelect
			case "indirect":
				g.Type = flowtable.GroupIndirect
			case "ff", "fast_failover":
				g.Type = flowtable.GroupFastFailover
			default:
				return nil, ofptext.ErrAt(e.ValPos, "type", "%q: unknown group type (all, select, indirect, ff)", e.Value)
			}
			haveType = true
		case "selection_method", "selection_method_param", "fields":
			// Accepted for compatibility; govs selects by a 5-tuple hash.
		default:
			return nil, ofptext.ErrAt(e.KeyPos, e.Key, "unknown group keyword %q", e.Key)
		}
	}
	if !haveID {
		return nil, ofptext.ErrAt(0, "group_id", "must specify a group_id")
	}
	if !haveType {
		return nil, ofptext.ErrAt(0, "type", "must specify a group type")
	}
	for i, b := range parts[1:] {
		bk, weighted, err := parseBucket(b.text, b.pos, o, uint32(i))
		if err != nil {
			return nil, err
		}
		// Weights belong to select groups (default 1); other types have
		// weight 0 and refuse one, as ovs-ofctl does.
		if g.Type != flowtable.GroupSelect {
			if weighted && bk.Weight != 0 {
				return nil, ofptext.ErrAt(b.pos, "weight", "only select groups can have bucket weights")
			}
			bk.Weight = 0
		}
		g.Buckets = append(g.Buckets, *bk)
	}
	return g, nil
}

type textPart struct {
	text string
	pos  int
}

func splitBuckets(s string) []textPart {
	var out []textPart
	start := 0
	for {
		i := indexBucket(s[start:])
		if i < 0 {
			out = append(out, textPart{s[start:], start})
			return out
		}
		out = append(out, textPart{s[start : start+i], start})
		start += i + len("bucket=")
	}
}

// indexBucket finds "bucket=" at depth 0 not inside parentheses.
func indexBucket(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		}
		if depth == 0 && strings.HasPrefix(s[i:], "bucket=") && (i == 0 || s[i-1] == ',' || s[i-1] == ' ') {
			return i
		}
	}
	return -1
}

func parseBucket(s string, base int, o *ParseOptions, defaultID uint32) (b *flowtable.Bucket, weighted bool, err error) {
	b = &flowtable.Bucket{ID: defaultID, Weight: 1, WatchPort: flowtable.PortNone, WatchGroup: GroupAny}
	s = strings.TrimRight(s, ", ")
	rest := s
	pos := base
	for rest != "" {
		rest = strings.TrimLeft(rest, ", ")
		k, v, _ := strings.Cut(strings.SplitN(rest, ",", 2)[0], ":")
		var err error
		var x uint64
		switch {
		case strings.HasPrefix(rest, "actions="):
			acts, err := parseActions(rest[len("actions="):], pos+len("actions="), o)
			if err != nil {
				return nil, false, err
			}
			b.Actions = acts
			return b, weighted, nil
		case k == "bucket_id":
			x, err = ofptext.ParseNum(v, 32)
			b.ID = uint32(x)
		case k == "weight":
			x, err = ofptext.ParseNum(v, 16)
			b.Weight, weighted = uint16(x), true
		case k == "watch_port":
			var p uint32
			p, err = ofptext.ParsePortName(v, o.Ports)
			b.WatchPort = p
		case k == "watch_group":
			x, err = ofptext.ParseNum(v, 32)
			b.WatchGroup = uint32(x)
		default:
			// A bucket may list its actions without "actions=".
			acts, err := parseActions(rest, pos, o)
			if err != nil {
				return nil, false, err
			}
			b.Actions = acts
			return b, weighted, nil
		}
		if err != nil {
			return nil, false, ofptext.ErrAt(pos, k, "%v", err)
		}
		n := strings.IndexByte(rest, ',')
		if n < 0 {
			break
		}
		pos += n + 1
		rest = rest[n+1:]
	}
	return b, weighted, nil
}

// FormatGroup prints a group as ovs-ofctl dump-groups does: with bucket
// ids in OpenFlow 1.5 and 1.0 (whose Nicira group messages use the 1.5
// layout), without them in 1.3.
func FormatGroup(g *flowtable.GroupEntry, o *PrintOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "group_id=%d,type=%s", g.ID, g.Type)
	for _, bk := range g.Buckets {
		b.WriteString(",bucket=")
		var parts []string
		if v := o.Ver(); v >= OF15 || v == OF10 {
			parts = append(parts, fmt.Sprintf("bucket_id:%d", bk.ID))
		}
		if g.Type == flowtable.GroupSelect {
			parts = append(parts, fmt.Sprintf("weight:%d", bk.Weight))
		}
		if bk.WatchPort != flowtable.PortNone {
			parts = append(parts, "watch_port:"+ofptext.PortString(bk.WatchPort, o))
		}
		if bk.WatchGroup != GroupAny {
			parts = append(parts, fmt.Sprintf("watch_group:%d", bk.WatchGroup))
		}
		parts = append(parts, "actions="+ActionsString(bk.Actions, o))
		b.WriteString(strings.Join(parts, ","))
	}
	return b.String()
}
