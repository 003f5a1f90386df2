package ofptext

import (
	"iter"
	"strings"
)

// KV is one key[=|:|(]value element of flow text, with its position.
type KV struct {
	Key, Value string
	KeyPos     int // byte offset of key in the scanned string
	ValPos     int // byte offset of value
	Delim      byte
}

// Scanner splits flow text into key-value pairs the way ovs-ofctl does
// (lib/ofp-parse.c ofputil_parse_key_value): elements are separated by
// commas or white space; a value follows '=' or ':' up to the next
// separator, or follows '(' up to the matching ')'; parentheses nest.
type Scanner struct {
	S    string
	Base int // offset of S in the line, for error columns
	pos  int
}

const sepChars = ", \t\r\n"

// Elements yields the elements of s, which starts at byte base of its
// line, as a Scanner reads them.
func Elements(s string, base int) iter.Seq[KV] {
	return func(yield func(KV) bool) {
		sc := Scanner{S: s, Base: base}
		for e, ok := sc.Next(); ok; e, ok = sc.Next() {
			if !yield(e) {
				return
			}
		}
	}
}

// Next returns the next element, or false at the end.
func (sc *Scanner) Next() (KV, bool) {
	for sc.pos < len(sc.S) && strings.IndexByte(sepChars, sc.S[sc.pos]) >= 0 {
		sc.pos++
	}
	if sc.pos >= len(sc.S) {
		return KV{}, false
	}
	start := sc.pos
	n := strings.IndexAny(sc.S[start:], ":=(, \t\r\n")
	if n < 0 {
		n = len(sc.S) - start
	}
	e := KV{Key: sc.S[start : start+n], KeyPos: sc.Base + start}
	sc.pos = start + n
	if sc.pos >= len(sc.S) {
		e.ValPos = sc.Base + sc.pos
		return e, true
	}
	d := sc.S[sc.pos]
	var delims string
	switch d {
	case ':', '=':
		delims = sepChars
	case '(':
		delims = ")"
	default:
		e.ValPos = sc.Base + sc.pos
		return e, true
	}
	e.Delim = d
	sc.pos++
	vstart := sc.pos
	vlen := parseValueLen(sc.S[vstart:], delims)
	if d == '(' && strings.HasPrefix(sc.S[vstart+vlen:], ")->") {
		// "key(x)->y" (check_pkt_larger): the value is "x)->y", as
		// ofputil_parse_key_value makes it.
		vlen += parseValueLen(sc.S[vstart+vlen:], sepChars)
	}
	e.Value = sc.S[vstart : vstart+vlen]
	e.ValPos = sc.Base + vstart
	sc.pos = vstart + vlen
	if sc.pos < len(sc.S) {
		sc.pos++ // the delimiter that ended the value
	}
	return e, true
}

// parseValueLen returns the length of the value at the start of s that
// ends at one of delims, skipping over balanced parentheses.
func parseValueLen(s, delims string) int {
	n := 0
	for n < len(s) && strings.IndexByte(delims, s[n]) < 0 {
		if s[n] == '(' {
			level := 0
			for {
				if n >= len(s) {
					return n
				}
				switch s[n] {
				case '(':
					level++
				case ')':
					level--
				}
				n++
				if level <= 0 {
					break
				}
			}
		} else {
			n++
		}
	}
	return n
}

// SplitTop splits s at the commas outside parentheses and brackets:
// "ct(commit,zone=1),recirc(0x1),2" has three parts.
func SplitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
