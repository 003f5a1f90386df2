package ofpact

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
)

// Parser holds what parsing action text needs besides the text: port
// names (output:"name") and the TLV map (tun_metadataN). It is passed by
// value: parsers run through the keyword table.
type Parser struct {
	Ports map[string]uint32
	TLV   *flowtable.TLVMap
}

// ParseActions parses an ovs-actions(7) list. base is the offset of s in
// the line, for error columns.
func (p Parser) ParseActions(s string, base int) ([]flowtable.Action, error) {
	var acts []flowtable.Action
	sawDrop := false
	for e := range ofptext.Elements(s, base) {
		if e.Key == "drop" && e.Delim == 0 {
			sawDrop = true
			continue
		}
		a, err := p.parseAction(e)
		if err != nil {
			return nil, err
		}
		acts = append(acts, a)
	}
	if sawDrop && len(acts) > 0 {
		return nil, ofptext.ErrAt(base, "drop", "\"drop\" must not be combined with other actions")
	}
	return acts, nil
}

// parseAction looks the keyword up; a bare port number or reserved port
// name is an output (output.go).
func (p Parser) parseAction(e ofptext.KV) (flowtable.Action, error) {
	if e.Delim == 0 {
		if a, ok, err := parseBarePort(p, e); ok {
			return a, err
		}
	}
	if parse := byKeyword[strings.ToLower(e.Key)]; parse != nil {
		return parse(p, e)
	}
	return nil, ofptext.ErrAt(e.KeyPos, e.Key, "unknown action %q", e.Key)
}

// bad is an error about e's value.
func bad(e ofptext.KV, format string, args ...any) error {
	return ofptext.ErrAt(e.ValPos, e.Key, format, args...)
}

// wrap positions err at e's value, without repeating the keyword.
func wrap(e ofptext.KV, err error) error {
	return ofptext.ErrAt(e.ValPos, e.Key, "%s", ofptext.TrimFieldPrefix(err, e.Key))
}

// num parses e's value as a number of at most bits bits.
func num(e ofptext.KV, bits int) (uint64, error) {
	v, err := ofptext.ParseNum(e.Value, bits)
	if err != nil {
		return 0, wrap(e, err)
	}
	return v, nil
}

// table parses a table number (255 is not a table).
func table(e ofptext.KV, s string) (uint8, error) {
	t, err := ofptext.ParseNum(s, 8)
	if err != nil || t == 255 {
		return 0, bad(e, "%q: invalid table", s)
	}
	return uint8(t), nil
}

// FormatActions prints an action list as OVS does (ofpacts_format).
// OVS prints what it would send, so an action that encodes to nothing in
// the version is left out (encodesToNothing).
func FormatActions(b *strings.Builder, acts []flowtable.Action, o *ofptext.PrintOptions) {
	n := 0
	for _, a := range acts {
		if encodesToNothing(a, o) {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		FormatAction(b, a, o)
		n++
	}
	if n == 0 {
		b.WriteString("drop")
	}
}

// ActionsString returns FormatActions as a string.
func ActionsString(acts []flowtable.Action, o *ofptext.PrintOptions) string {
	var b strings.Builder
	FormatActions(&b, acts, o)
	return b.String()
}

// FormatAction prints one action.
func FormatAction(b *strings.Builder, a flowtable.Action, o *ofptext.PrintOptions) {
	if e := lookup(a); e != nil && e.format != nil {
		e.format(b, a, o)
		return
	}
	fmt.Fprintf(b, "<%s>", a.Name())
}
