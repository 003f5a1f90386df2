package flowtable

import (
	"fmt"
	"strconv"
	"strings"
)

// parseUint parses a decimal or 0x-prefixed hexadecimal number of at most
// bits bits, the way ovs-ofctl reads integers.
func parseUint(s string, bits int) (uint64, error) {
	s = strings.TrimSpace(s)
	var v uint64
	var err error
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		v, err = strconv.ParseUint(s[2:], 16, bits)
	} else {
		v, err = strconv.ParseUint(s, 10, bits)
	}
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("%q: value too large for %d bits", s, bits)
		}
		return 0, fmt.Errorf("%q: not a number", s)
	}
	return v, nil
}

// ParseUint is parseUint for other packages.
func ParseUint(s string, bits int) (uint64, error) { return parseUint(s, bits) }
