package flowtable

import (
	"sort"
	"time"
)

// MACEntry is one learned MAC as `ovs-appctl fdb/show` lists it.
type MACEntry struct {
	Port uint32
	VLAN uint16
	MAC  [6]byte
	Age  time.Duration // since last learned
}

// Entries returns the fresh entries, ordered as OVS's fdb/show prints
// them when it has no hash order to keep: by port, VLAN, then MAC.
func (t *MACTable) Entries(now time.Time) []MACEntry {
	t.mu.Lock()
	out := make([]MACEntry, 0, len(t.entries))
	for k, e := range t.entries {
		if age := now.Sub(e.seen); age <= t.aging {
			out = append(out, MACEntry{Port: e.port, VLAN: k.vlan, MAC: k.mac, Age: max(age, 0)})
		}
	}
	t.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		if a.VLAN != b.VLAN {
			return a.VLAN < b.VLAN
		}
		return string(a.MAC[:]) < string(b.MAC[:])
	})
	return out
}
