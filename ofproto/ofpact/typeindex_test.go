package ofpact

import "testing"

// TestTypeIndex: every key added is found through growth and collisions,
// others are not.
func TestTypeIndex(t *testing.T) {
	var ti typeIndex
	if ti.find(8) != -1 {
		t.Fatal("empty index found a key")
	}
	for i := 1; i <= 500; i++ {
		ti.add(uintptr(i*48), int32(i))
	}
	for i := 1; i <= 500; i++ {
		if got := ti.find(uintptr(i * 48)); got != int32(i) {
			t.Fatalf("key %d: %d", i*48, got)
		}
		if got := ti.find(uintptr(i*48 + 8)); got != -1 {
			t.Fatalf("absent key %d: %d", i*48+8, got)
		}
	}
}
