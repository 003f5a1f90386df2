package vswitchd

import (
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/govs-project/govs/flowtable"
)

// applyPrefixes gives the bridge's tables the prefix tracking of their
// Flow_Table prefixes (cur) where it changed from prev, warning about
// names Open vSwitch would skip, as its bridge_configure_tables does.
func applyPrefixes(p *flowtable.Pipeline, prev, cur map[uint8][]string, log *zap.Logger) {
	for table := range 256 {
		id := uint8(table)
		if table >= flowtable.NumTables || slices.Equal(prev[id], cur[id]) {
			continue
		}
		fields, warnings := flowtable.ParsePrefixFields(cur[id])
		for _, w := range warnings {
			log.Warn(w, zap.Int("table", table))
		}
		if err := p.SetPrefixFields(id, fields); err != nil {
			log.Warn("prefix lookup not changed", zap.Int("table", table), zap.Error(err))
			continue
		}
		names := make([]string, 0, len(fields))
		for _, f := range p.PrefixFields(id) {
			names = append(names, f.Name)
		}
		if len(names) == 0 {
			names = append(names, "none")
		}
		log.Info("prefix lookup for: "+strings.Join(names, ","), zap.Int("table", table))
	}
}
