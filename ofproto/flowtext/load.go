package flowtext

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
)

// Load installs a flows file into p the way `ovs-ofctl add-tlv-map`,
// `add-groups` and `add-flows` would: header comment lines
// "# tlv-map: MAPPINGS" and "# group: GROUP" first, then every flow (later
// flows with the same table, match and priority replace earlier ones).
// Errors name the line.
func Load(p *flowtable.Pipeline, text string, o *ParseOptions) error {
	opts := ParseOptions{TLV: p.TLV}
	if o != nil {
		opts = *o
		opts.TLV = p.TLV
	}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "# tlv-map:"); ok {
			ms, err := flowtable.ParseTLVMappings(strings.TrimSpace(rest))
			if err == nil {
				err = p.TLV.Add(ms...)
			}
			if err != nil {
				return fmt.Errorf("line %d: %w", i+1, err)
			}
		}
	}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "# group:"); ok {
			g, err := ParseGroup(strings.TrimSpace(rest), &opts)
			if err == nil {
				err = p.AddGroup(g)
			}
			if err != nil {
				return fmt.Errorf("line %d: %w", i+1, err)
			}
		}
	}
	fms, err := ParseFlows(strings.NewReader(text), &opts)
	if err != nil {
		return err
	}
	flows := make([]*flowtable.Flow, len(fms))
	for i, fm := range fms {
		flows[i] = &fm.Flow
		if err := p.CheckGroups(&fm.Flow); err != nil {
			return fmt.Errorf("line %d: %w", fm.Line, err)
		}
	}
	return p.AddFlows(flows)
}

// DumpFlows prints every flow of p as `ovs-ofctl dump-flows --no-stats`
// does, one per line with the leading space, sorted byte-wise like
// `dump-flows | sort`.
func DumpFlows(p *flowtable.Pipeline, o *PrintOptions) []string {
	all := flowtable.AllFlows()
	var flows []*flowtable.Flow
	for _, r := range p.Flows(&all) {
		flows = append(flows, r.Flow())
	}
	return SortedFlowStrings(flows, o)
}
