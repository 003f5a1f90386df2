// Package rtnl holds what rtnetlink requests built by hand share: the
// route attribute (struct rtattr) encoding, in host byte order as the
// kernel reads it.
package rtnl

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// AppendAttr appends one route attribute (length, type, data) to b,
// padded to 4 bytes (RTA_ALIGN).
func AppendAttr(b []byte, typ uint16, data []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(unix.SizeofRtAttr+len(data)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
