package flowtext

import "strings"

// kv is one key[=|:|(]value element of flow text, with its position.
type kv struct {
	key, value string
	keyPos     int // byte offset of key in the scanned string
	valPos     int // byte offset of value
	delim      byte
}

// scanner splits flow text into key-value pairs the way ovs-ofctl does
// (lib/ofp-parse.c ofputil_parse_key_value): elements are separated by
// commas or white space; a value follows '=' or ':' up to the next
// separator, or follows '(' up to the matching ')'; parentheses nest.
type scanner struct {
	s    string
	pos  int
	base int // offset of s in the line, for error columns
}

const sepChars = ", \t\r\n"

func (sc *scanner) next() (kv, bool) {
	for sc.pos < len(sc.s) && strings.IndexByte(sepChars, sc.s[sc.pos]) >= 0 {
		sc.pos++
	}
	if sc.pos >= len(sc.s) {
		return kv{}, false
	}
	start := sc.pos
	n := strings.IndexAny(sc.s[start:], ":=(, \t\r\n")
	if n < 0 {
		n = len(sc.s) - start
	}
	e := kv{key: sc.s[start : start+n], keyPos: sc.base + start}
	sc.pos = start + n
	if sc.pos >= len(sc.s) {
		e.valPos = sc.base + sc.pos
		return e, true
	}
	d := sc.s[sc.pos]
	var delims string
	switch d {
	case ':', '=':
		delims = sepChars
	case '(':
		delims = ")"
	default:
		e.valPos = sc.base + sc.pos
		return e, true
	}
	e.delim = d
	sc.pos++
	vstart := sc.pos
	vlen := parseValueLen(sc.s[vstart:], delims)
	e.value = sc.s[vstart : vstart+vlen]
	e.valPos = sc.base + vstart
	sc.pos = vstart + vlen
	if sc.pos < len(sc.s) {
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
