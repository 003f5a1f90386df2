package offload

import (
	"testing"

	"github.com/govs-project/govs/flowtable"
)

// TestOfferInstallsAfter: a flow gets its kernel entry at its
// InstallAfter-th established packet through userspace, not before; a
// FIN or RST (Forget) drops its count, and a count not advanced for two
// seconds (two agings) is forgotten, while one a second keeps it.
func TestOfferInstallsAfter(t *testing.T) {
	m, err := NewManager(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pkt, start, c := establish(t, "", "output:2", "")
	fk, kind := KeyOf(5, start)
	if kind != KeyOffer {
		t.Fatalf("key kind %d, want KeyOffer", kind)
	}
	output := func(uint32, *flowtable.Key) (int, uint32, *Encap, bool) { return 6, 6, nil, true }
	m.mu.Lock()
	gen := m.gen
	m.mu.Unlock()
	offer := func(n int) {
		for range n {
			m.Offer(fk, gen, start, &pkt.Key, c.Hits, output)
		}
	}
	entries := func(step string, want int) {
		t.Helper()
		if n := m.Stats().Entries; n != want {
			t.Errorf("%s: %d kernel entries, want %d", step, n, want)
		}
	}
	offer(InstallAfter - 1)
	entries("before the InstallAfter-th packet", 0)
	offer(1)
	entries("at the InstallAfter-th packet", 1)
	m.Forget(fk)
	entries("after Forget", 0)

	offer(InstallAfter - 1)
	m.Forget(fk)
	offer(1)
	entries("Forget dropped the count; one packet", 0)
	m.Forget(fk)

	offer(InstallAfter - 1)
	m.agePending()
	offer(1)
	entries("one packet a second", 1)
	m.Forget(fk)

	offer(InstallAfter - 1)
	m.agePending()
	m.agePending()
	offer(1)
	entries("idle for two agings", 0)
}
