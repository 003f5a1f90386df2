// Package rtnl holds what rtnetlink requests built by hand share: the
// message header, the route attribute (struct rtattr) encoding and
// splitting, and the acknowledgement's error, in host byte order as the kernel reads them.
package rtnl

import (
	"encoding/binary"
	"errors"

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

// Attr is one route attribute of a message from the kernel.
type Attr struct {
	Type  uint16
	Value []byte
}

// ParseAttrs splits b into route attributes; a malformed tail is
// ignored (syscall.ParseNetlinkRouteAttr panics on some).
func ParseAttrs(b []byte) []Attr {
	var attrs []Attr
	for len(b) >= unix.SizeofRtAttr {
		l := int(binary.NativeEndian.Uint16(b))
		if l < unix.SizeofRtAttr || l > len(b) {
			break
		}
		attrs = append(attrs, Attr{Type: binary.NativeEndian.Uint16(b[2:]), Value: b[unix.SizeofRtAttr:l]})
		b = b[min((l+3)&^3, len(b)):]
	}
	return attrs
}

// NewMessage is one netlink request: the header (struct nlmsghdr, port
// 0: to the kernel) then payload.
func NewMessage(typ, flags uint16, seq uint32, payload []byte) []byte {
	msg := binary.NativeEndian.AppendUint32(nil, uint32(unix.NLMSG_HDRLEN+len(payload)))
	msg = binary.NativeEndian.AppendUint16(msg, typ)
	msg = binary.NativeEndian.AppendUint16(msg, flags)
	msg = binary.NativeEndian.AppendUint32(msg, seq)
	msg = binary.NativeEndian.AppendUint32(msg, 0)
	return append(msg, payload...)
}

// AckError is the error an NLMSG_ERROR message's data carries: nil for
// an acknowledgement (code 0), else the errno the kernel refused with.
func AckError(data []byte) error {
	if len(data) < 4 {
		return errors.New("netlink: short error message")
	}
	if code := int32(binary.NativeEndian.Uint32(data)); code != 0 {
		return unix.Errno(-code)
	}
	return nil
}
