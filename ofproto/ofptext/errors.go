package ofptext

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
)

// Error is a flow text error with its position.
type Error struct {
	Line  int    // 1-based line number in the file (0 for a single flow)
	Col   int    // 1-based byte column in the line
	Field string // the keyword or field at fault
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d, ", e.Line)
	}
	fmt.Fprintf(&b, "column %d: ", e.Col)
	if e.Field != "" && !strings.HasPrefix(e.Msg, e.Field+":") {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func ErrAt(pos int, field string, format string, args ...any) *Error {
	return &Error{Col: pos + 1, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func TrimFieldPrefix(err error, name string) string {
	return strings.TrimPrefix(err.Error(), name+": ")
}

// ParseNum parses a decimal or 0x-hex number of at most bits bits.
func ParseNum(s string, bits int) (uint64, error) {
	return flowtable.ParseUint(s, bits)
}
