// Package ofclient is the controller side of an OpenFlow connection, as
// ovs-ofctl uses one: dial a switch (a bridge's unix management socket or
// a TCP address), negotiate exactly one OpenFlow version, then run
// request/reply transactions: modifications confirmed by a barrier,
// multipart requests whose replies are collected until the last part, and
// OFPT_ERROR replies turned into Go errors that name the error like Open
// vSwitch does ("OFPBAC_BAD_OUT_GROUP").
//
// It works against any OpenFlow switch: govs-vswitchd or Open vSwitch.
package ofclient

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/govs-project/govs/ofproto/wire"
)

// DefaultTimeout bounds every read and write on a connection (ovs-ofctl has
// no timeout by default; a stuck switch should not hang scripts forever).
const DefaultTimeout = 30 * time.Second

// Target is a parsed ovs-ofctl style target.
type Target struct {
	Network string // "unix" or "tcp"
	Address string
}

func (t Target) String() string { return t.Network + ":" + t.Address }

// ParseTarget resolves an ovs-ofctl target: "unix:PATH", "tcp:IP:PORT",
// or a bridge name, which means the bridge's management socket
// <rundir>/<bridge>.mgmt (what `ovs-ofctl br-int` opens under
// /var/run/openvswitch).
func ParseTarget(s, rundir string) (Target, error) {
	switch {
	case s == "":
		return Target{}, errors.New("empty target")
	case strings.HasPrefix(s, "unix:"):
		p := strings.TrimPrefix(s, "unix:")
		if p == "" {
			return Target{}, fmt.Errorf("target %q: empty socket path", s)
		}
		return Target{"unix", p}, nil
	case strings.HasPrefix(s, "tcp:"):
		a := strings.TrimPrefix(s, "tcp:")
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			// ovs-ofctl's default OpenFlow port when none is given.
			if !strings.Contains(a, ":") || strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]") {
				return Target{"tcp", net.JoinHostPort(strings.Trim(a, "[]"), "6653")}, nil
			}
			return Target{}, fmt.Errorf("target %q: %w", s, err)
		}
		if host == "" || port == "" {
			return Target{}, fmt.Errorf("target %q: want tcp:IP:PORT", s)
		}
		return Target{"tcp", a}, nil
	case strings.ContainsAny(s, ":/"):
		return Target{}, fmt.Errorf("target %q: not a bridge name, unix:PATH or tcp:IP:PORT", s)
	}
	return Target{"unix", filepath.Join(rundir, s+".mgmt")}, nil
}

// VersionName is the ovs-ofctl spelling of an OpenFlow version.
func VersionName(v uint8) string {
	switch v {
	case wire.OFP10:
		return "OpenFlow10"
	case wire.OFP13:
		return "OpenFlow13"
	case wire.OFP15:
		return "OpenFlow15"
	}
	return fmt.Sprintf("OpenFlow version %#x", v)
}

// Error is an OFPT_ERROR the switch sent in reply to one of our requests.
type Error struct {
	Version uint8
	Xid     uint32
	Msg     wire.ErrorMsg
	Code    wire.ErrorCode // 0 when the switch sent an error OVS does not know
}

// Name is the OVS name of the error ("OFPBAC_BAD_OUT_GROUP"), or the raw
// type/code when it has none.
func (e *Error) Name() string {
	if e.Code != 0 {
		return e.Code.String()
	}
	if e.Msg.Experimenter != 0 {
		return fmt.Sprintf("vendor %#x error type %d code %d", e.Msg.Experimenter, e.Msg.VendorType, e.Msg.VendorCode)
	}
	return fmt.Sprintf("error type %d code %d", e.Msg.Type, e.Msg.Code)
}

func (e *Error) Error() string {
	s := "switch replied " + e.Name()
	if e.Msg.Type == wire.OFPET_HELLO_FAILED && len(e.Msg.Data) > 0 {
		// Hello failures carry an ASCII explanation.
		s += ": " + strings.TrimRight(string(e.Msg.Data), "\x00")
	}
	return s
}

// Is lets errors.Is(err, wire.NewError(v, wire.OFPBAC_BAD_OUT_GROUP)) work.
func (e *Error) Is(target error) bool {
	t, ok := target.(*wire.OFPError)
	return ok && e.Code != 0 && t.Sym == e.Code
}

func newError(version uint8, xid uint32, m *wire.ErrorMsg) *Error {
	e := &Error{Version: version, Xid: xid, Msg: *m}
	e.Msg.Data = append([]byte(nil), m.Data...)
	var ok bool
	switch {
	case m.Type == wire.NXET_VENDOR && version == wire.OFP10:
		e.Code, ok = wire.LookupError(version, m.Experimenter, m.VendorType, m.VendorCode)
	case m.Type == wire.OFPET_EXPERIMENTER && version != wire.OFP10:
		e.Code, ok = wire.LookupError(version, m.Experimenter, m.Code, 0)
	default:
		e.Code, ok = wire.LookupError(version, 0, m.Type, m.Code)
	}
	if !ok {
		e.Code = 0
	}
	return e
}

// Conn is one OpenFlow connection speaking a single negotiated version.
// It is not safe for concurrent use.
type Conn struct {
	nc      net.Conn
	version uint8
	xid     uint32
	Timeout time.Duration

	rbuf []byte // read buffer, reused for every message
	wbuf []byte
}

// Dial connects to target and negotiates version (wire.OFP10, OFP13 or
// OFP15) like ovs-ofctl -O: our hello offers only that version, and a
// switch that does not allow it fails the connection.
func Dial(t Target, version uint8) (*Conn, error) {
	nc, err := net.DialTimeout(t.Network, t.Address, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", t, err)
	}
	c, err := NewConn(nc, version)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: %w", t, err)
	}
	return c, nil
}

// NewConn runs the hello exchange on an established connection.
func NewConn(nc net.Conn, version uint8) (*Conn, error) {
	switch version {
	case wire.OFP10, wire.OFP13, wire.OFP15:
	default:
		return nil, fmt.Errorf("unsupported OpenFlow version %#x", version)
	}
	c := &Conn{nc: nc, version: version, Timeout: DefaultTimeout, rbuf: make([]byte, wire.MaxMessageLen)}
	ours := wire.VersionBitmap(version)
	if _, err := c.sendVersion(wire.HelloVersion(ours), wire.NewHello(ours)); err != nil {
		return nil, fmt.Errorf("sending hello: %w", err)
	}
	h, body, err := c.read()
	if err != nil {
		return nil, fmt.Errorf("reading hello: %w", err)
	}
	if h.Type == wire.OFPT_ERROR {
		if m, derr := wire.DecodeMessage(h, body); derr == nil {
			if em, ok := m.(*wire.ErrorMsg); ok {
				return nil, newError(h.Version, h.Xid, em)
			}
		}
	}
	if h.Type != wire.OFPT_HELLO {
		return nil, fmt.Errorf("expected hello, got message type %d", h.Type)
	}
	m, err := wire.DecodeMessage(h, body)
	if err != nil {
		return nil, fmt.Errorf("decoding hello: %w", err)
	}
	v, ok := wire.Negotiate(ours, h.Version, m.(*wire.Hello))
	if !ok || v != version {
		return nil, fmt.Errorf("version negotiation failed: we support %s, the switch's hello says version %#x",
			VersionName(version), h.Version)
	}
	return c, nil
}

// Version is the negotiated OpenFlow version.
func (c *Conn) Version() uint8 { return c.version }

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// NextXid allocates a transaction id.
func (c *Conn) NextXid() uint32 {
	c.xid++
	if c.xid == 0 {
		c.xid = 1
	}
	return c.xid
}

// Send sends one message with a fresh xid and returns the xid.
func (c *Conn) Send(m wire.Message) (uint32, error) {
	return c.sendVersion(c.version, m)
}

func (c *Conn) sendVersion(v uint8, m wire.Message) (uint32, error) {
	return c.sendXid(v, c.NextXid(), m)
}

func (c *Conn) sendXid(v uint8, xid uint32, m wire.Message) (uint32, error) {
	var err error
	c.wbuf, err = wire.EncodeMessage(c.wbuf[:0], v, xid, m)
	if err != nil {
		return 0, err
	}
	c.nc.SetWriteDeadline(time.Now().Add(c.Timeout))
	if _, err := c.nc.Write(c.wbuf); err != nil {
		return 0, fmt.Errorf("sending %T: %w", m, err)
	}
	return xid, nil
}

// read reads one raw message; body is only valid until the next read.
func (c *Conn) read() (wire.Header, []byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(c.Timeout))
	return wire.ReadMessage(c.nc, c.rbuf)
}

// Recv reads and decodes the next message that is not housekeeping: echo
// requests are answered, and messages of a version other than ours are
// rejected. The message does not alias the connection's buffers.
func (c *Conn) Recv() (wire.Header, wire.Message, error) {
	for {
		h, body, err := c.read()
		if err != nil {
			return h, nil, fmt.Errorf("reading from the switch: %w", err)
		}
		if h.Version != c.version {
			return h, nil, fmt.Errorf("switch sent OpenFlow version %#x on a %s connection", h.Version, VersionName(c.version))
		}
		// Decoded values alias the body: give them their own copy.
		body = append([]byte(nil), body...)
		if h.Type == wire.OFPT_ECHO_REQUEST {
			if err := c.reply(h.Xid, &wire.EchoReply{Data: body}); err != nil {
				return h, nil, err
			}
			continue
		}
		m, err := wire.DecodeMessage(h, body)
		if err != nil {
			return h, nil, fmt.Errorf("decoding the switch's message: %w", err)
		}
		return h, m, nil
	}
}

// reply sends m with the given xid (answers to the switch's requests).
func (c *Conn) reply(xid uint32, m wire.Message) error {
	var err error
	c.wbuf, err = wire.EncodeMessage(c.wbuf[:0], c.version, xid, m)
	if err != nil {
		return err
	}
	c.nc.SetWriteDeadline(time.Now().Add(c.Timeout))
	_, err = c.nc.Write(c.wbuf)
	return err
}

// Request sends m and returns the reply with the same xid (a switch error
// becomes an *Error). Unrelated messages (port status, packet-ins) are
// skipped.
func (c *Conn) Request(m wire.Message) (wire.Message, error) {
	xid, err := c.Send(m)
	if err != nil {
		return nil, err
	}
	for {
		h, rep, err := c.Recv()
		if err != nil {
			return nil, err
		}
		if h.Xid != xid {
			continue
		}
		if em, ok := rep.(*wire.ErrorMsg); ok {
			return nil, newError(c.version, xid, em)
		}
		return rep, nil
	}
}

// Multipart sends a multipart (stats) request and returns every reply part,
// up to the one without the MORE flag.
func (c *Conn) Multipart(req *wire.Multipart) ([]*wire.Multipart, error) {
	xid, err := c.Send(req)
	if err != nil {
		return nil, err
	}
	var parts []*wire.Multipart
	for {
		h, rep, err := c.Recv()
		if err != nil {
			return nil, err
		}
		if h.Xid != xid {
			continue
		}
		switch r := rep.(type) {
		case *wire.ErrorMsg:
			return nil, newError(c.version, xid, r)
		case *wire.Multipart:
			if !r.Reply || r.Type != req.Type || r.ExpType != req.ExpType {
				return nil, fmt.Errorf("reply to multipart type %d is multipart type %d", req.Type, r.Type)
			}
			parts = append(parts, r)
			if r.Flags&wire.OFPMPF_REPLY_MORE == 0 {
				return parts, nil
			}
		default:
			return nil, fmt.Errorf("reply to a multipart request is %T", rep)
		}
	}
}

// TransactError is a failed message of a Transact batch: Index says which.
type TransactError struct {
	Index int
	Err   error
}

func (e *TransactError) Error() string { return e.Err.Error() }
func (e *TransactError) Unwrap() error { return e.Err }

// Transact sends each message followed by a barrier and waits for the
// barrier reply before sending the next, stopping at the first error, like
// ovs-ofctl's transact_multiple_noreply: what was sent before the failing
// message stays applied. The error is a *TransactError.
func (c *Conn) Transact(msgs ...wire.Message) error {
	for i, m := range msgs {
		if err := c.transactOne(m); err != nil {
			return &TransactError{Index: i, Err: err}
		}
	}
	return nil
}

func (c *Conn) transactOne(m wire.Message) error {
	xid, err := c.Send(m)
	if err != nil {
		return err
	}
	bxid, err := c.Send(&wire.BarrierRequest{})
	if err != nil {
		return err
	}
	for {
		h, rep, err := c.Recv()
		if err != nil {
			return err
		}
		switch {
		case h.Xid == xid:
			if em, ok := rep.(*wire.ErrorMsg); ok {
				// Drain up to the barrier reply so that the connection
				// stays usable.
				e := newError(c.version, xid, em)
				if err := c.waitBarrier(bxid); err != nil {
					return errors.Join(e, err)
				}
				return e
			}
			return fmt.Errorf("unexpected reply %T to a message that has none", rep)
		case h.Xid == bxid:
			if _, ok := rep.(*wire.BarrierReply); ok {
				return nil
			}
			if em, ok := rep.(*wire.ErrorMsg); ok {
				return newError(c.version, bxid, em)
			}
			return fmt.Errorf("reply to a barrier is %T", rep)
		}
	}
}

func (c *Conn) waitBarrier(bxid uint32) error {
	for {
		h, rep, err := c.Recv()
		if err != nil {
			return err
		}
		if h.Xid == bxid {
			if _, ok := rep.(*wire.BarrierReply); !ok {
				return fmt.Errorf("reply to a barrier is %T", rep)
			}
			return nil
		}
	}
}

// Barrier sends a barrier request and waits for its reply.
func (c *Conn) Barrier() error {
	rep, err := c.Request(&wire.BarrierRequest{})
	if err != nil {
		return err
	}
	if _, ok := rep.(*wire.BarrierReply); !ok {
		return fmt.Errorf("reply to a barrier is %T", rep)
	}
	return nil
}

// Bundle applies msgs atomically and in order: bundle open (flags
// ATOMIC|ORDERED), one add-message per message, a barrier, then commit
// (ONF extension 2300/2301 in OpenFlow 1.3, OFPT_BUNDLE_* in 1.5). When
// the switch rejects an added message the bundle is discarded instead of
// committed, so nothing changes, and the error is a *TransactError naming
// the message.
func (c *Conn) Bundle(msgs ...wire.Message) error {
	if c.version == wire.OFP10 {
		return errors.New("bundles need OpenFlow 1.3 or later (use -O OpenFlow13 or OpenFlow15)")
	}
	onf := c.version == wire.OFP13
	const bundleID = 0
	flags := wire.OFPBF_ATOMIC | wire.OFPBF_ORDERED
	control := func(typ, want uint16) error {
		rep, err := c.Request(&wire.BundleControl{ONF: onf, BundleID: bundleID, Type: typ, Flags: flags})
		if err != nil {
			return err
		}
		bc, ok := rep.(*wire.BundleControl)
		if !ok || bc.Type != want {
			return fmt.Errorf("unexpected reply %T to bundle control %d", rep, typ)
		}
		return nil
	}
	if err := control(wire.OFPBCT_OPEN_REQUEST, wire.OFPBCT_OPEN_REPLY); err != nil {
		return fmt.Errorf("opening the bundle: %w", err)
	}
	xids := make(map[uint32]int, len(msgs))
	for i, m := range msgs {
		// The inner message must carry the outer message's xid
		// (otherwise OFPBFC_MSG_BAD_XID).
		xid := c.NextXid()
		inner := wire.Header{Version: c.version, Type: m.MessageType(c.version), Xid: xid}
		if _, err := c.sendXid(c.version, xid, &wire.BundleAdd{ONF: onf, BundleID: bundleID, Flags: flags, InnerHeader: inner, Inner: m}); err != nil {
			return &TransactError{Index: i, Err: err}
		}
		xids[xid] = i
	}
	bxid, err := c.Send(&wire.BarrierRequest{})
	if err != nil {
		return err
	}
	var first *TransactError
	for {
		h, rep, err := c.Recv()
		if err != nil {
			return err
		}
		if em, ok := rep.(*wire.ErrorMsg); ok {
			if i, known := xids[h.Xid]; known && first == nil {
				first = &TransactError{Index: i, Err: newError(c.version, h.Xid, em)}
			} else if !known && h.Xid == bxid {
				return newError(c.version, h.Xid, em)
			}
			continue
		}
		if h.Xid == bxid {
			break
		}
	}
	if first != nil {
		if err := control(wire.OFPBCT_DISCARD_REQUEST, wire.OFPBCT_DISCARD_REPLY); err != nil {
			return errors.Join(first, fmt.Errorf("discarding the bundle: %w", err))
		}
		return first
	}
	// A commit that fails reports the failing message first (with the
	// inner message's xid, as Open vSwitch does), then the commit's own
	// OFPBFC_MSG_FAILED.
	cxid, err := c.Send(&wire.BundleControl{ONF: onf, BundleID: bundleID, Type: wire.OFPBCT_COMMIT_REQUEST, Flags: flags})
	if err != nil {
		return err
	}
	for {
		h, rep, err := c.Recv()
		if err != nil {
			return err
		}
		em, isErr := rep.(*wire.ErrorMsg)
		if i, known := xids[h.Xid]; known && isErr && first == nil {
			first = &TransactError{Index: i, Err: newError(c.version, h.Xid, em)}
			continue
		}
		if h.Xid != cxid {
			continue
		}
		if isErr {
			cerr := newError(c.version, h.Xid, em)
			if first == nil {
				// Some switches (govs) answer the commit itself with the
				// failing message's error; its data echoes that message,
				// whose xid names it.
				if eh, perr := wire.ParseHeader(em.Data); perr == nil {
					if i, known := xids[eh.Xid]; known {
						return &TransactError{Index: i, Err: cerr}
					}
				}
			}
			if first != nil {
				first.Err = fmt.Errorf("%w (bundle commit: %v)", first.Err, cerr)
				return first
			}
			return fmt.Errorf("committing the bundle: %w", cerr)
		}
		if bc, ok := rep.(*wire.BundleControl); !ok || bc.Type != wire.OFPBCT_COMMIT_REPLY {
			return fmt.Errorf("unexpected reply %T to bundle commit", rep)
		}
		return nil
	}
}
