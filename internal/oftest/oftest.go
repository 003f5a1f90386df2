// Package oftest is a minimal raw OpenFlow client for tests: it sends
// hand-built (possibly malformed) messages and reads what the switch
// answers, so the same bytes can be sent to govs and to Open vSwitch.
package oftest

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/govs-project/govs/ofproto/wire"
)

// Client is the controller side of one OpenFlow connection.
type Client struct {
	NC      net.Conn
	Version uint8
	buf     []byte
}

// Handshake reads the switch's hello and sends ours for version (the
// switch speaks first, which also suits an unbuffered net.Pipe).
func Handshake(nc net.Conn, version uint8) (*Client, error) {
	c := &Client{NC: nc, Version: version, buf: make([]byte, 65536)}
	h, _, err := c.Recv()
	if err != nil {
		return nil, fmt.Errorf("reading hello: %w", err)
	}
	if h.Type != wire.OFPT_HELLO {
		return nil, fmt.Errorf("expected hello, got type %d", h.Type)
	}
	bitmap := wire.VersionBitmap(version)
	body, err := wire.NewHello(bitmap).EncodeBody(version, nil)
	if err != nil {
		return nil, err
	}
	return c, c.Send(wire.OFPT_HELLO, 1, body)
}

// Dial connects to a unix socket and shakes hands.
func Dial(path string, version uint8) (*Client, error) {
	nc, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c, err := Handshake(nc, version)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// Send writes one message with the client's version.
func (c *Client) Send(typ uint8, xid uint32, body []byte) error {
	h := wire.Header{Version: c.Version, Type: typ, Xid: xid, Length: uint16(8 + len(body))}
	c.NC.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.NC.Write(append(h.Append(nil), body...))
	return err
}

// Recv reads one message (its body is a copy).
func (c *Client) Recv() (wire.Header, []byte, error) {
	c.NC.SetReadDeadline(time.Now().Add(5 * time.Second))
	h, body, err := wire.ReadMessage(c.NC, c.buf)
	if err != nil {
		return h, nil, err
	}
	return h, append([]byte(nil), body...), nil
}

// Error reads the next message and returns the error type and code it
// carries for xid (skipping unrelated asynchronous messages).
func (c *Client) Error(xid uint32) (typ, code uint16, err error) {
	body, err := c.ErrorBody(xid)
	if err != nil {
		return 0, 0, err
	}
	return binary.BigEndian.Uint16(body), binary.BigEndian.Uint16(body[2:]), nil
}

// ErrorBody is Error's whole OFPT_ERROR body: type, code, and the data
// (the quoted request).
func (c *Client) ErrorBody(xid uint32) ([]byte, error) {
	for i := 0; i < 16; i++ {
		h, body, err := c.Recv()
		if err != nil {
			return nil, err
		}
		if h.Xid != xid {
			continue
		}
		if h.Type != wire.OFPT_ERROR || len(body) < 4 {
			return nil, fmt.Errorf("got message type %d for xid %#x, want an error", h.Type, xid)
		}
		return body, nil
	}
	return nil, fmt.Errorf("no reply for xid %#x", xid)
}

// Alive sends an echo request and waits for its reply.
func (c *Client) Alive() error {
	if err := c.Send(wire.OFPT_ECHO_REQUEST, 0x77, []byte("ping")); err != nil {
		return err
	}
	for i := 0; i < 16; i++ {
		h, body, err := c.Recv()
		if err != nil {
			return err
		}
		if h.Type == wire.OFPT_ECHO_REPLY && h.Xid == 0x77 && string(body) == "ping" {
			return nil
		}
	}
	return fmt.Errorf("no echo reply")
}

// FlowMod13 builds an OpenFlow 1.3 flow-mod body (after the header): add,
// priority 100, the OXM TLVs given, and one apply-actions instruction.
func FlowMod13(oxms, actions []byte) []byte {
	b := make([]byte, 40)
	binary.BigEndian.PutUint16(b[18:], 100)        // priority
	binary.BigEndian.PutUint32(b[20:], 0xffffffff) // buffer_id
	binary.BigEndian.PutUint32(b[24:], 0xffffffff) // out_port
	binary.BigEndian.PutUint32(b[28:], 0xffffffff) // out_group
	m := binary.BigEndian.AppendUint16(nil, 1)     // OFPMT_OXM
	m = binary.BigEndian.AppendUint16(m, uint16(4+len(oxms)))
	m = append(m, oxms...)
	for len(m)%8 != 0 {
		m = append(m, 0)
	}
	b = append(b, m...)
	inst := binary.BigEndian.AppendUint16(nil, 4) // OFPIT_APPLY_ACTIONS
	inst = binary.BigEndian.AppendUint16(inst, uint16(8+len(actions)))
	inst = append(inst, 0, 0, 0, 0)
	return append(append(b, inst...), actions...)
}

// Output13 is OFPAT_OUTPUT to port.
func Output13(port uint32) []byte {
	a := binary.BigEndian.AppendUint16(nil, 0)
	a = binary.BigEndian.AppendUint16(a, 16)
	a = binary.BigEndian.AppendUint32(a, port)
	a = binary.BigEndian.AppendUint16(a, 0xffff)
	return append(a, 0, 0, 0, 0, 0, 0)
}

// NXAction is a Nicira action of subtype with the payload after the
// subtype, zero-padded to length.
func NXAction(subtype uint16, length int, payload []byte) []byte {
	a := binary.BigEndian.AppendUint16(nil, 0xffff)
	a = binary.BigEndian.AppendUint16(a, uint16(length))
	a = binary.BigEndian.AppendUint32(a, 0x2320)
	a = binary.BigEndian.AppendUint16(a, subtype)
	a = append(a, payload...)
	for len(a) < length {
		a = append(a, 0)
	}
	return a
}

// OsKenNATBug is os-ken 2.5's ct(commit,nat(dst=...)) action list: its
// NXActionNAT has 28 bytes of content but says 32 (PROTOCOL.md §4).
func OsKenNATBug() []byte {
	nat := []byte{0xff, 0xff, 0, 32, 0, 0, 0x23, 0x20, 0, 36, 0, 0, 0, 2, 0, 0x33, 10, 0, 0, 1, 10, 0, 0, 2, 0, 80, 0, 90}
	ct := append([]byte{0xff, 0xff, 0, byte(24 + len(nat)), 0, 0, 0x23, 0x20, 0, 35, 0, 1, 0, 0, 0, 0, 0xff, 0xf0, 45, 0, 0, 0, 0, 0}, nat...)
	return append(ct, 0, 0, 0, 0) // the instruction is padded, the ct length is not
}

// Malformed is one bad request and what a switch must answer.
type Malformed struct {
	Name string
	Type uint8 // message type
	Body []byte
}

// MalformedRequests are bad OpenFlow 1.3 requests that real clients send
// or could send.
func MalformedRequests() []Malformed {
	return []Malformed{
		{"unknown OXM field", wire.OFPT_FLOW_MOD, FlowMod13([]byte{0x80, 0x00, 0x7e << 1, 4, 1, 2, 3, 4}, Output13(1))},
		{"OXM longer than the match", wire.OFPT_FLOW_MOD, FlowMod13([]byte{0x80, 0x00, 0x0a << 1, 8, 0, 0}, Output13(1))},
		{"NXAST_DEC_TTL in OpenFlow 1.3", wire.OFPT_FLOW_MOD, FlowMod13(nil, NXAction(18, 16, nil))},
		{"NXAST_NAT with a bad length (os-ken 2.5)", wire.OFPT_FLOW_MOD, FlowMod13(nil, OsKenNATBug())},
		{"action shorter than its header says", wire.OFPT_FLOW_MOD, FlowMod13(nil, Output13(1)[:12])},
		{"ipv4_src without eth_type", wire.OFPT_FLOW_MOD, FlowMod13([]byte{0x80, 0x00, 0x0b << 1, 4, 10, 0, 0, 1}, Output13(1))},
		{"goto_table backwards", wire.OFPT_FLOW_MOD, append(FlowMod13(nil, nil)[:56], 0, 1, 0, 8, 0, 0, 0, 0)},
		{"output to a reserved port number", wire.OFPT_FLOW_MOD, FlowMod13(nil, Output13(0xffffff00))},
		{"unknown message type", 99, nil},
		{"unknown multipart type", wire.OFPT_MULTIPART_REQUEST, []byte{0, 200, 0, 0, 0, 0, 0, 0}},
		{"group-mod with a bad type", wire.OFPT_GROUP_MOD, []byte{0, 0, 9, 0, 0, 0, 0, 1}},
		{"group-mod modify of a missing group", wire.OFPT_GROUP_MOD, GroupMod13(1, 0, 77, Bucket13(0, Output13(1)))},
		{"group-mod add above OFPG_MAX", wire.OFPT_GROUP_MOD, GroupMod13(0, 0, 0xffffff01, Bucket13(0, Output13(1)))},
		{"group-mod add of OFPG_ALL", wire.OFPT_GROUP_MOD, GroupMod13(0, 0, 0xfffffffc, Bucket13(0, Output13(1)))},
		{"indirect group with two buckets", wire.OFPT_GROUP_MOD, GroupMod13(0, 2, 78, Bucket13(0, Output13(1)), Bucket13(0, Output13(2)))},
		{"indirect group without buckets", wire.OFPT_GROUP_MOD, GroupMod13(0, 2, 79)},
		{"bucket weight in an all group", wire.OFPT_GROUP_MOD, GroupMod13(0, 0, 80, Bucket13(5, Output13(1)))},
		{"bucket output to a reserved port number", wire.OFPT_GROUP_MOD, GroupMod13(0, 0, 81, Bucket13(0, Output13(0xffffff00)))},
		{"fast failover bucket without watch", wire.OFPT_GROUP_MOD, GroupMod13(0, 3, 82, Bucket13(0, Output13(1)))},
		{"watch port in an all group", wire.OFPT_GROUP_MOD, GroupMod13(0, 0, 83, WatchPort13(Bucket13(0, Output13(1)), 2))},
		{"group-mod bad command", wire.OFPT_GROUP_MOD, GroupMod13(9, 0, 84, Bucket13(0, Output13(1)))},
		{"learn spec of 0 bits (FuzzDecodeActions)", wire.OFPT_FLOW_MOD, FlowMod13(nil, LearnZeroBits())},
	}
}

// GroupMod13 is an OpenFlow 1.3 group-mod body.
func GroupMod13(command uint16, typ uint8, id uint32, buckets ...[]byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, command)
	b = append(b, typ, 0)
	b = binary.BigEndian.AppendUint32(b, id)
	for _, bk := range buckets {
		b = append(b, bk...)
	}
	return b
}

// Bucket13 is an OpenFlow 1.3 bucket with weight, no watch port or
// group, and actions.
func Bucket13(weight uint16, actions ...[]byte) []byte {
	var acts []byte
	for _, a := range actions {
		acts = append(acts, a...)
	}
	b := binary.BigEndian.AppendUint16(nil, uint16(16+len(acts)))
	b = binary.BigEndian.AppendUint16(b, weight)
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // watch_port ANY
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // watch_group ANY
	return append(append(b, 0, 0, 0, 0), acts...)
}

// WatchPort13 sets the watch_port of an OpenFlow 1.3 bucket.
func WatchPort13(bucket []byte, port uint32) []byte {
	binary.BigEndian.PutUint32(bucket[4:], port)
	return bucket
}

// LearnZeroBits is an NXAST_LEARN whose one spec (an immediate loaded
// into in_port) has n_bits 0: a nonzero spec header, so not the end of
// the specs, but no bits to learn.
func LearnZeroBits() []byte {
	learn := []byte{0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0} // timeouts, priority, cookie, flags, table 1, fin timeouts
	spec := []byte{0x28, 0x00, 0x00, 0x00, 0x00, 0x02, 0, 0}                             // immediate -> load, 0 bits; dst NXM_OF_IN_PORT[0]
	return NXAction(16, 40, append(learn, spec...))
}

// SocketPair returns the two ends of a connected AF_UNIX stream socket
// pair, as *net.UnixConn: kernel-buffered like the management socket real
// clients use (net.Pipe hands every write over synchronously).
func SocketPair() (net.Conn, net.Conn, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), fmt.Sprintf("socketpair-%d", i))
		conns[i], err = net.FileConn(f) // duplicates the descriptor
		f.Close()
		if err != nil {
			if i == 1 {
				conns[0].Close()
			} else {
				syscall.Close(fds[1])
			}
			return nil, nil, err
		}
	}
	return conns[0], conns[1], nil
}
