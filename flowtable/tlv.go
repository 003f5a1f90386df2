package flowtable

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// TLVMapping maps one Geneve option (class, type, length) to tun_metadataN,
// as `ovs-ofctl add-tlv-map` does.
type TLVMapping struct {
	Class uint16
	Type  uint8
	Len   uint8 // option length in bytes, a multiple of 4, 4..124
	Index int   // N of tun_metadataN
}

func (m TLVMapping) String() string {
	return fmt.Sprintf("{class=0x%x,type=0x%x,len=%d}->tun_metadata%d", m.Class, m.Type, m.Len, m.Index)
}

// TLVMap is a bridge's Geneve option table. Each mapped option gets a slot
// in the key's tun_metadata area, like OVS allocates tun_metadata space.
type TLVMap struct {
	mu       sync.RWMutex
	mappings [64]*TLVMapping
	offsets  [64]int
	fields   [64]*Field
}

// NewTLVMap returns an empty map.
func NewTLVMap() *TLVMap { return &TLVMap{} }

// ErrTLVSpaceFull: the mappings would need more option space than the
// tun_metadata fields hold (NXTTMFC_TABLE_FULL).
var ErrTLVSpaceFull = errors.New("tun_metadata option space full")

// Add installs mappings atomically: either all are added or none.
func (t *TLVMap) Add(ms ...TLVMapping) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	used := t.usedLocked()
	seen := map[int]bool{}
	for _, m := range ms {
		if m.Index < 0 || m.Index >= 64 {
			return fmt.Errorf("tun_metadata%d: index out of range 0..63", m.Index)
		}
		if m.Len == 0 || m.Len%4 != 0 || m.Len > 124 {
			return fmt.Errorf("tun_metadata%d: option length %d must be a multiple of 4 from 4 to 124", m.Index, m.Len)
		}
		if t.mappings[m.Index] != nil || seen[m.Index] {
			return fmt.Errorf("tun_metadata%d: already mapped", m.Index)
		}
		for _, o := range t.mappings {
			if o != nil && o.Class == m.Class && o.Type == m.Type {
				return fmt.Errorf("option class=0x%x type=0x%x: already mapped to tun_metadata%d", m.Class, m.Type, o.Index)
			}
		}
		seen[m.Index] = true
		used += int(m.Len)
	}
	if used > TunMetadataSize {
		return fmt.Errorf("tun_metadata: %d bytes of options exceed the %d-byte table: %w", used, TunMetadataSize, ErrTLVSpaceFull)
	}
	for _, m := range ms {
		m := m
		off := t.allocLocked(int(m.Len))
		t.mappings[m.Index] = &m
		t.offsets[m.Index] = off
		base := FieldTunMetadataN[m.Index]
		f := *base
		f.Off = offTunMetadata + off
		f.Size = int(m.Len)
		f.Bytes = int(m.Len)
		f.Bits = int(m.Len) * 8
		t.fields[m.Index] = &f
	}
	return nil
}

func (t *TLVMap) usedLocked() int {
	n := 0
	for _, m := range t.mappings {
		if m != nil {
			n += int(m.Len)
		}
	}
	return n
}

// allocLocked finds the lowest free offset of n bytes in the area. Options
// of up to 8 bytes do not straddle an 8-byte word, so the classifier and
// the pipeline can treat them as one word.
func (t *TLVMap) allocLocked(n int) int {
	type span struct{ off, n int }
	var taken []span
	for i, m := range t.mappings {
		if m != nil {
			taken = append(taken, span{t.offsets[i], int(m.Len)})
		}
	}
	sort.Slice(taken, func(i, j int) bool { return taken[i].off < taken[j].off })
	for off := 0; off+n <= TunMetadataSize; off += 4 {
		if n <= 8 && off/8 != (off+n-1)/8 {
			continue
		}
		free := true
		for _, s := range taken {
			if off < s.off+s.n && s.off < off+n {
				free = false
				break
			}
		}
		if free {
			return off
		}
	}
	// Fragmented: fall back to the first gap (size was checked by the caller).
	for off := 0; off+n <= TunMetadataSize; off += 4 {
		free := true
		for _, s := range taken {
			if off < s.off+s.n && s.off < off+n {
				free = false
				break
			}
		}
		if free {
			return off
		}
	}
	return 0
}

// Delete removes mappings for the given indexes (all when none given).
func (t *TLVMap) Delete(indexes ...int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(indexes) == 0 {
		t.mappings = [64]*TLVMapping{}
		t.fields = [64]*Field{}
		return nil
	}
	for _, i := range indexes {
		if i < 0 || i >= 64 || t.mappings[i] == nil {
			return fmt.Errorf("tun_metadata%d: not mapped", i)
		}
	}
	for _, i := range indexes {
		t.mappings[i], t.fields[i] = nil, nil
	}
	return nil
}

// Mappings returns the current mappings ordered by index.
func (t *TLVMap) Mappings() []TLVMapping {
	if t == nil {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []TLVMapping
	for _, m := range t.mappings {
		if m != nil {
			out = append(out, *m)
		}
	}
	return out
}

// Lookup returns the mapping of tun_metadataN, if any.
func (t *TLVMap) Lookup(index int) (TLVMapping, bool) {
	if t == nil || index < 0 || index >= 64 {
		return TLVMapping{}, false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if m := t.mappings[index]; m != nil {
		return *m, true
	}
	return TLVMapping{}, false
}

// Resolve returns f itself, or for tun_metadataN the field with its
// location in the key.
func (t *TLVMap) Resolve(f *Field) (*Field, error) {
	if !f.IsTunMetadata() {
		return f, nil
	}
	if t != nil {
		t.mu.RLock()
		r := t.fields[f.TunMetadata-1]
		t.mu.RUnlock()
		if r != nil {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%s: no TLV mapping for this field (use add-tlv-map first)", f.Name)
}

// ParseTLVMappings parses the add-tlv-map syntax:
// "{class=0x104,type=0x80,len=4}->tun_metadata0,{...}->tun_metadata1".
func ParseTLVMappings(s string) ([]TLVMapping, error) {
	var out []TLVMapping
	rest := strings.TrimSpace(s)
	for rest != "" {
		if rest[0] != '{' {
			return nil, fmt.Errorf("tlv map %q: expected '{'", s)
		}
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return nil, fmt.Errorf("tlv map %q: missing '}'", s)
		}
		var m TLVMapping
		var cls, typ, ln uint64
		for _, kv := range strings.Split(rest[1:end], ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok {
				return nil, fmt.Errorf("tlv map %q: bad element %q", s, kv)
			}
			n, err := parseUint(v, 64)
			if err != nil {
				return nil, fmt.Errorf("tlv map %q: %s: %w", s, k, err)
			}
			switch k {
			case "class":
				cls = n
			case "type":
				typ = n
			case "len":
				ln = n
			default:
				return nil, fmt.Errorf("tlv map %q: unknown key %q", s, k)
			}
		}
		if cls > 0xffff || typ > 0xff || ln > 124 {
			return nil, fmt.Errorf("tlv map %q: value out of range", s)
		}
		m.Class, m.Type, m.Len = uint16(cls), uint8(typ), uint8(ln)
		rest = strings.TrimSpace(rest[end+1:])
		if !strings.HasPrefix(rest, "->") {
			return nil, fmt.Errorf("tlv map %q: missing '->'", s)
		}
		rest = strings.TrimSpace(rest[2:])
		name := rest
		if i := strings.IndexByte(rest, ','); i >= 0 {
			name, rest = rest[:i], strings.TrimSpace(rest[i+1:])
		} else {
			rest = ""
		}
		f := FieldByName(strings.TrimSpace(name))
		if f == nil || !f.IsTunMetadata() {
			return nil, fmt.Errorf("tlv map %q: %q is not a tun_metadata field", s, name)
		}
		m.Index = f.TunMetadata - 1
		out = append(out, m)
	}
	return out, nil
}

// Field returns tun_metadataN located in the key, or nil when it is not
// mapped (cheaper than Resolve when most are not).
func (t *TLVMap) Field(index int) *Field {
	if t == nil || index < 0 || index >= 64 {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.fields[index]
}
