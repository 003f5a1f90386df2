package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// OpenFlow protocol versions (ofp_header.version) handled by this package.
const (
	OFP10 uint8 = 0x01
	OFP11 uint8 = 0x02
	OFP12 uint8 = 0x03
	OFP13 uint8 = 0x04
	OFP14 uint8 = 0x05
	OFP15 uint8 = 0x06
)

// HeaderLen is sizeof(struct ofp_header).
const HeaderLen = 8

// MaxMessageLen is the largest OpenFlow message (ofp_header.length is 16 bits).
const MaxMessageLen = 65535

// Message types of OpenFlow 1.0 (OFPT10_*).
const (
	OFPT10_HELLO                    uint8 = 0
	OFPT10_ERROR                    uint8 = 1
	OFPT10_ECHO_REQUEST             uint8 = 2
	OFPT10_ECHO_REPLY               uint8 = 3
	OFPT10_VENDOR                   uint8 = 4
	OFPT10_FEATURES_REQUEST         uint8 = 5
	OFPT10_FEATURES_REPLY           uint8 = 6
	OFPT10_GET_CONFIG_REQUEST       uint8 = 7
	OFPT10_GET_CONFIG_REPLY         uint8 = 8
	OFPT10_SET_CONFIG               uint8 = 9
	OFPT10_PACKET_IN                uint8 = 10
	OFPT10_FLOW_REMOVED             uint8 = 11
	OFPT10_PORT_STATUS              uint8 = 12
	OFPT10_PACKET_OUT               uint8 = 13
	OFPT10_FLOW_MOD                 uint8 = 14
	OFPT10_PORT_MOD                 uint8 = 15
	OFPT10_STATS_REQUEST            uint8 = 16
	OFPT10_STATS_REPLY              uint8 = 17
	OFPT10_BARRIER_REQUEST          uint8 = 18
	OFPT10_BARRIER_REPLY            uint8 = 19
	OFPT10_QUEUE_GET_CONFIG_REQUEST uint8 = 20
	OFPT10_QUEUE_GET_CONFIG_REPLY   uint8 = 21
)

// Message types of OpenFlow 1.1+ (OFPT_*), as used in 1.3 and 1.5.
const (
	OFPT_HELLO                    uint8 = 0
	OFPT_ERROR                    uint8 = 1
	OFPT_ECHO_REQUEST             uint8 = 2
	OFPT_ECHO_REPLY               uint8 = 3
	OFPT_EXPERIMENTER             uint8 = 4
	OFPT_FEATURES_REQUEST         uint8 = 5
	OFPT_FEATURES_REPLY           uint8 = 6
	OFPT_GET_CONFIG_REQUEST       uint8 = 7
	OFPT_GET_CONFIG_REPLY         uint8 = 8
	OFPT_SET_CONFIG               uint8 = 9
	OFPT_PACKET_IN                uint8 = 10
	OFPT_FLOW_REMOVED             uint8 = 11
	OFPT_PORT_STATUS              uint8 = 12
	OFPT_PACKET_OUT               uint8 = 13
	OFPT_FLOW_MOD                 uint8 = 14
	OFPT_GROUP_MOD                uint8 = 15
	OFPT_PORT_MOD                 uint8 = 16
	OFPT_TABLE_MOD                uint8 = 17
	OFPT_MULTIPART_REQUEST        uint8 = 18
	OFPT_MULTIPART_REPLY          uint8 = 19
	OFPT_BARRIER_REQUEST          uint8 = 20
	OFPT_BARRIER_REPLY            uint8 = 21
	OFPT_QUEUE_GET_CONFIG_REQUEST uint8 = 22
	OFPT_QUEUE_GET_CONFIG_REPLY   uint8 = 23
	OFPT_ROLE_REQUEST             uint8 = 24
	OFPT_ROLE_REPLY               uint8 = 25
	OFPT_GET_ASYNC_REQUEST        uint8 = 26
	OFPT_GET_ASYNC_REPLY          uint8 = 27
	OFPT_SET_ASYNC                uint8 = 28
	OFPT_METER_MOD                uint8 = 29
	OFPT_ROLE_STATUS              uint8 = 30
	OFPT_TABLE_STATUS             uint8 = 31
	OFPT_REQUESTFORWARD           uint8 = 32
	OFPT_BUNDLE_CONTROL           uint8 = 33
	OFPT_BUNDLE_ADD_MESSAGE       uint8 = 34
	OFPT_CONTROLLER_STATUS        uint8 = 35
)

// Experimenter (vendor) ids.
const (
	NX_VENDOR_ID  uint32 = 0x00002320 // Nicira, used by Open vSwitch.
	ONF_VENDOR_ID uint32 = 0x4f4e4600 // Open Networking Foundation ("ONF\0").
)

// Header is struct ofp_header.
type Header struct {
	Version uint8
	Type    uint8
	Length  uint16
	Xid     uint32
}

// Append appends the 8-byte encoding of h to b.
func (h Header) Append(b []byte) []byte {
	return append(b, h.Version, h.Type, byte(h.Length>>8), byte(h.Length), byte(h.Xid>>24), byte(h.Xid>>16), byte(h.Xid>>8), byte(h.Xid))
}

// ErrShortMessage reports fewer bytes than an ofp_header or than the header's
// length field announces.
var ErrShortMessage = errors.New("openflow: truncated message")

// ParseHeader decodes an ofp_header from the first 8 bytes of b and checks
// that its length is at least 8. It does not check that b holds the whole
// message.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, fmt.Errorf("ofp_header needs %d bytes, have %d: %w", HeaderLen, len(b), ErrShortMessage)
	}
	h := Header{Version: b[0], Type: b[1], Length: binary.BigEndian.Uint16(b[2:]), Xid: binary.BigEndian.Uint32(b[4:])}
	if h.Length < HeaderLen {
		return h, fmt.Errorf("ofp_header length %d below %d: %w", h.Length, HeaderLen, newErr(h.Version, OFPBRC_BAD_LEN))
	}
	return h, nil
}

// SplitMessage takes one complete message off the front of data. It returns
// the header, the body (data[8:length]) and the remaining bytes. It fails with
// ErrShortMessage when data does not yet hold a whole message, so it also
// serves stream reassembly.
func SplitMessage(data []byte) (h Header, body, rest []byte, err error) {
	h, err = ParseHeader(data)
	if err != nil {
		return h, nil, data, err
	}
	if int(h.Length) > len(data) {
		return h, nil, data, fmt.Errorf("message length %d beyond the %d bytes available: %w", h.Length, len(data), ErrShortMessage)
	}
	return h, data[HeaderLen:h.Length], data[h.Length:], nil
}

// ReadMessage reads exactly one OpenFlow message from r. The message is read
// into buf when it fits (pass a buffer of MaxMessageLen bytes to never
// allocate); otherwise a new buffer is allocated. The returned body aliases
// that buffer. Lengths below 8 are rejected with OFPBRC_BAD_LEN (there is no
// way to resynchronise a stream after that, the connection must be closed).
// At a clean message boundary the error is io.EOF; a message cut short gives
// io.ErrUnexpectedEOF.
func ReadMessage(r io.Reader, buf []byte) (Header, []byte, error) {
	if cap(buf) < HeaderLen {
		buf = make([]byte, HeaderLen, 512)
	}
	buf = buf[:HeaderLen]
	if _, err := io.ReadFull(r, buf); err != nil {
		return Header{}, nil, err
	}
	h, err := ParseHeader(buf)
	if err != nil {
		return h, nil, err
	}
	n := int(h.Length)
	if cap(buf) < n {
		nb := make([]byte, n)
		copy(nb, buf)
		buf = nb
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf[HeaderLen:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return h, nil, fmt.Errorf("reading %d-byte body of message type %d: %w", n-HeaderLen, h.Type, err)
	}
	return h, buf[HeaderLen:], nil
}

// big-endian helpers; callers check lengths first.
func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
func be64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func put16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
func put32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
func put64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

func zeros(b []byte, n int) []byte {
	for i := 0; i < n; i++ {
		b = append(b, 0)
	}
	return b
}

// pad8 appends zero bytes until (len(b)-start) is a multiple of 8.
func pad8(b []byte, start int) []byte {
	return zeros(b, (8-(len(b)-start)%8)%8)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// setLen16 stores len(b)-start as a big-endian uint16 at b[at:].
func setLen16(b []byte, at, start int) error {
	n := len(b) - start
	if n > 0xffff {
		return fmt.Errorf("encoded length %d exceeds 65535: %w", n, errTooLong)
	}
	binary.BigEndian.PutUint16(b[at:], uint16(n))
	return nil
}

var errTooLong = errors.New("openflow: object too long to encode")
