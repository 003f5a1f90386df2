// Package ofproto is the OpenFlow channel of govs: connections (passive
// listeners like the bridge's management socket, active controller
// connections), version negotiation, keepalive, and the dispatch of
// decoded messages to a bridge.
package ofproto

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/translate"
	"github.com/govs-project/govs/ofproto/wire"
)

// SupportedVersions is the version bitmap govs offers: OpenFlow 1.0
// (ovs-ofctl without -O), 1.3 (os-ken, conformance suites) and 1.5 (Antrea).
var SupportedVersions = wire.VersionBitmap(wire.OFP10, wire.OFP13, wire.OFP15)

// Handler processes the messages of a negotiated connection. An error that
// is (or wraps) a *wire.OFPError is sent back to the peer as an OFPT_ERROR
// for the request and the connection goes on; any other error closes it.
type Handler interface {
	HandleMessage(c *Conn, h wire.Header, raw []byte, m wire.Message) error
	// Closed is called once when the connection ends.
	Closed(c *Conn)
}

// ConnOptions tune a connection.
type ConnOptions struct {
	// Versions is the allowed version bitmap (default SupportedVersions).
	Versions uint32
	// ProbeInterval is the inactivity probe: after this long without a
	// message an echo request is sent, and after twice this long the
	// connection is dropped. Zero disables it.
	ProbeInterval time.Duration
	Logger        *zap.Logger
	// Service marks a connection accepted on a passive listener
	// (punix:, ptcp:), what OVS calls a service connection: it starts
	// with miss_send_len 0 and gets no asynchronous messages until the
	// client sets a nonzero one (OFPT_SET_CONFIG), so short-lived tools
	// like ovs-ofctl are not sent packet-ins. Listener.Serve sets it.
	Service bool
	// PacketInQueueLimit is how many packet-ins may wait in the output
	// queue; more are dropped (default DefaultPacketInQueueLimit, OVS's
	// controller_queue_size).
	PacketInQueueLimit int
	// MaxBacklogBytes is the reply backlog at which the peer is given up
	// (default DefaultMaxBacklogBytes).
	MaxBacklogBytes int
	// DumpBacklogBytes is the backlog a long multipart reply waits under
	// between its parts (default 4 MB).
	DumpBacklogBytes int
}

// Conn is one OpenFlow connection.
type Conn struct {
	nc      net.Conn
	opts    ConnOptions
	log     *zap.Logger
	version uint8
	handler Handler

	out outQueue
	// monitors are the connection's flow monitors (monitor.go).
	monitors connMonitors
	// reclaim asks for freed memory to go back to the kernel once the
	// current request is done (a big dump or delete; see reclaimMemory).
	reclaim bool
	// spareMods and spareQuoted are the memory of the last bundle, for
	// the next (newBundle, recycle).
	spareMods   []modReq
	spareQuoted []byte
	// flowMod is the scratch a flow-mod add is translated in
	// (newFlowModReq); only the connection's reader uses it.
	flowMod translate.FlowMod
	// addRun counts the bundle adds in a row up to the last message
	// (coalescing).
	addRun  int
	xid     atomic.Uint32
	lastRx  atomic.Int64
	closed  chan struct{}
	closeMu sync.Once

	// Per-connection state the handler keeps (role, formats, async config).
	State ConnState
}

// ConnState is the per-connection protocol state OVS keeps for a
// controller connection.
type ConnState struct {
	// Role is roleEqual, roleMaster or roleSlave. Atomic: datapath
	// goroutines read it to route asynchronous messages, and another
	// connection's role request may demote this one.
	Role           atomic.Uint32
	FlowFormat     uint32 // NXFF_OPENFLOW10 (0) or NXFF_NXM (2), OpenFlow 1.0 only
	FlowModTableID bool   // NXT_FLOW_MOD_TABLE_ID enabled
	PacketInFormat uint32 // NXPIF_STANDARD (0), NXPIF_NXT_PACKET_IN (1), NXPIF_NXT_PACKET_IN2 (2)
	ControllerID   uint16
	// MissSendLen is atomic: packet-ins read it on datapath goroutines.
	MissSendLen     atomic.Uint32
	ConfigFlags     uint16
	GenerationID    uint64
	HasGenerationID bool
	Bundles         map[uint32]*Bundle

	// async is the asynchronous message configuration the connection set
	// (nil: the default). Packet-ins read it from datapath goroutines.
	async atomic.Pointer[AsyncConfig]

	// pendingTableFeatures collects a multi-part table features set.
	pendingTableFeatures []wire.TableFeatures
}

// Controller roles (OFPCR_ROLE_*).
const (
	roleNoChange = 0
	roleEqual    = 1
	roleMaster   = 2
	roleSlave    = 3
)

// Bundle is an open bundle (ONF 1.3 extension or OpenFlow 1.5).
type Bundle struct {
	ID     uint32
	Flags  uint16
	Closed bool

	// mods are the bundled flow-mods and group-mods in order, translated
	// when they were added, so that a commit only applies them.
	mods []modReq
	// portMods are the bundled port-mods.
	portMods []bundledPortMod
	// quoted holds the first bytes of every bundled message (what an error
	// reply quotes), since the connection reuses a message's memory.
	quoted []byte
	// stage builds the tables of the bundle's adds as they come, for the
	// commit to put in place (flowtable.Stage).
	stage *flowtable.Stage
}

// bundledPortMod is a port-mod in a bundle, with its place among the
// bundled flow-mods and group-mods and what an error reply quotes. Port
// configuration is not pipeline state, so a commit checks port-mods
// before it applies the rest and carries them out after.
type bundledPortMod struct {
	after int // bundled flow-mods and group-mods before it
	h     wire.Header
	raw   []byte
	m     wire.PortMod // a copy: the decoded message refers to the connection's buffer
}

// NewConn wraps an established transport connection.
func NewConn(nc net.Conn, h Handler, opts ConnOptions) *Conn {
	if opts.Versions == 0 {
		opts.Versions = SupportedVersions
	}
	if opts.PacketInQueueLimit == 0 {
		opts.PacketInQueueLimit = DefaultPacketInQueueLimit
	}
	if opts.MaxBacklogBytes == 0 {
		opts.MaxBacklogBytes = DefaultMaxBacklogBytes
	}
	if opts.DumpBacklogBytes == 0 {
		opts.DumpBacklogBytes = dumpBacklogBytes
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	switch nc.(type) {
	case *net.UnixConn, *net.TCPConn:
		if rs, err := newRawSocket(nc); err == nil {
			nc = rs
		} else {
			log.Debug("connection stays in the netpoller", zap.Error(err))
		}
	}
	c := &Conn{nc: nc, opts: opts, handler: h,
		closed: make(chan struct{}), log: log.With(zap.String("peer", nc.RemoteAddr().String()))}
	c.out.init()
	c.State.Role.Store(roleEqual)
	if !opts.Service {
		c.State.MissSendLen.Store(128) // OFP_DEFAULT_MISS_SEND_LEN
	}
	c.xid.Store(0x10000)
	return c
}

// Version is the negotiated OpenFlow version (0 before the handshake).
func (c *Conn) Version() uint8 { return c.version }

// Logger returns the connection's logger.
func (c *Conn) Logger() *zap.Logger { return c.log }

// RemoteAddr names the peer.
func (c *Conn) RemoteAddr() string { return c.nc.RemoteAddr().String() }

// asyncXid is the transaction id of asynchronous messages (packet-in,
// flow-removed, port-status): 0, as Open vSwitch sends them; requests
// the switch originates (hello, echo) get NextXid.
const asyncXid = 0

// NextXid returns a transaction id for a request the switch originates.
func (c *Conn) NextXid() uint32 { return c.xid.Add(1) }

// Send queues one message with the given xid for the connection's writer.
// It does not wait for the peer; it fails only once the connection is
// closed (or given up on a backlog the peer does not read).
func (c *Conn) Send(xid uint32, m wire.Message) error {
	return c.sendVersion(c.version, xid, m, kindReply)
}

// SendNoFlush is Send; it remains for multipart replies sent in parts.
func (c *Conn) SendNoFlush(xid uint32, m wire.Message) error {
	return c.sendVersion(c.version, xid, m, kindReply)
}

// Flush remains for callers that sent parts: the writer sends everything
// queued without being asked. It reports a closed connection.
func (c *Conn) Flush() error {
	select {
	case <-c.closed:
		return errConnClosed
	default:
		return nil
	}
}

// sendEncoded queues msg, an encoded message of the connection's version
// (a reply kept encoded), with the given xid. msg itself is not kept.
func (c *Conn) sendEncoded(xid uint32, msg []byte) error {
	b := append(c.out.buffer(), msg...)
	binary.BigEndian.PutUint32(b[4:8], xid)
	if err := c.enqueue(b, kindReply); err != nil {
		return fmt.Errorf("sending to %s: %w", c.RemoteAddr(), err)
	}
	return nil
}

// sendPacketIn queues a packet-in, dropped if the queue holds its limit.
func (c *Conn) sendPacketIn(m wire.Message) error {
	return c.sendVersion(c.version, asyncXid, m, kindPacketIn)
}

func (c *Conn) sendVersion(v uint8, xid uint32, m wire.Message, kind uint8) error {
	b, err := wire.EncodeMessage(c.out.buffer(), v, xid, m)
	if err != nil {
		return err
	}
	if err := c.enqueue(b, kind); err != nil {
		return fmt.Errorf("sending to %s: %w", c.RemoteAddr(), err)
	}
	return nil
}

// SendError replies to a request with an OpenFlow error.
func (c *Conn) SendError(h wire.Header, raw []byte, e *wire.OFPError) error {
	v := c.version
	if v == 0 {
		v = h.Version
	}
	return c.sendVersion(v, h.Xid, wire.ErrorMsgFor(e, raw), kindReply)
}

// Close ends the connection.
func (c *Conn) Close() error {
	var err error
	c.closeMu.Do(func() {
		close(c.closed)
		c.out.mu.Lock()
		c.out.closed = true
		c.out.drained.Broadcast()
		c.out.mu.Unlock()
		err = c.nc.Close()
	})
	return err
}

// Done is closed when the connection ends.
func (c *Conn) Done() <-chan struct{} { return c.closed }

// Serve runs the connection: hello exchange, then messages until the peer
// closes, the context ends or a fatal error happens.
func (c *Conn) Serve(ctx context.Context) error {
	defer c.handler.Closed(c)
	defer func() {
		// A last error (bad hello, bad length) reaches the peer first.
		c.drain(time.Second)
		c.Close()
	}()
	go c.writer()
	go func() {
		select {
		case <-ctx.Done():
			c.Close()
		case <-c.closed:
		}
	}()
	if err := c.handshake(); err != nil {
		return err
	}
	if oc, ok := c.handler.(interface{ Connected(*Conn) }); ok {
		oc.Connected(c)
	}
	if c.opts.ProbeInterval > 0 {
		go c.prober()
	}
	buf := make([]byte, wire.MaxMessageLen)
	r := bufio.NewReaderSize(&coalescingReader{nc: c.nc, hold: c.coalescing}, readBufferSize)
	var dec wire.Decoder
	for {
		h, body, err := wire.ReadMessage(r, buf)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var oe *wire.OFPError
			if errors.As(err, &oe) {
				// A length below 8 cannot be resynchronised: say why and close.
				c.SendError(h, nil, oe)
			}
			return fmt.Errorf("reading from %s: %w", c.RemoteAddr(), err)
		}
		c.lastRx.Store(time.Now().UnixNano())
		raw := buf[:h.Length]
		if err := c.dispatch(&dec, h, raw, body); err != nil {
			return err
		}
	}
}

// readBufferSize is the connection's read buffer: a wakeup takes up to
// this many bytes of messages.
const readBufferSize = 64 * 1024

// coalescing says the last messages were bundle adds, enough of them to
// be a big bundle: they get no reply, and the next are most likely more of
// the same, so reading them a little later costs the peer nothing. A
// small bundle (a few adds, as an agent sends for one pod) is not kept
// waiting.
func (c *Conn) coalescing() bool { return c.addRun >= coalesceAfter }

// coalesceAfter is how many bundle adds in a row start coalescing.
const coalesceAfter = 16

// coalesceWait is how long a connection adding to a bundle lets the
// peer's messages accumulate after a short read, so that one wakeup
// takes many messages (a client writes a bundle one message at a time,
// each write would wake the switch for one message). Bounded, so a peer
// that stops writing waits at most this long for its close or commit.
const coalesceWait = 200 * time.Microsecond

// coalesceFull is a read size that shows the messages already come in
// batches (the peer writes faster than the switch reads, or writes many
// messages at once): then waiting would only delay them.
const coalesceFull = 8 * 1024

// coalescingReader reads a connection; while hold says so, a read that
// follows a short one first sleeps coalesceWait. Outside bundle adds it
// reads at once, so echo, barrier and other requests wait no longer.
type coalescingReader struct {
	nc   net.Conn
	hold func() bool
	last int // bytes the last read returned
}

func (r *coalescingReader) Read(p []byte) (int, error) {
	if r.last < coalesceFull && r.hold() {
		// A plain sleep of the thread: a Go timer this short would
		// round up to a millisecond in the netpoller.
		ts := syscall.NsecToTimespec(int64(coalesceWait))
		syscall.Nanosleep(&ts, nil)
	}
	n, err := r.nc.Read(p)
	r.last = n
	return n, err
}

// panicStackOnce logs the stack of the first recovered panic of the
// process; later ones are a line and a count.
var panicStackOnce sync.Once

// dispatch decodes and handles one message. A panic in either is a bug,
// not the peer's: it is logged and counted, and the request gets an
// OFPT_ERROR (OFPBRC_BAD_LEN while decoding, as most decoder panics are
// unchecked lengths; OFPBRC_EPERM while handling) while the connection
// and the daemon go on.
func (c *Conn) dispatch(dec *wire.Decoder, h wire.Header, raw, body []byte) (err error) {
	decoding := true
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		n := PanicsRecovered.Add(1)
		fields := []zap.Field{zap.Uint8("type", h.Type), zap.Uint32("xid", h.Xid),
			zap.Bool("decoding", decoding), zap.Any("panic", p), zap.Uint64("panics", n)}
		logged := false
		panicStackOnce.Do(func() {
			c.log.Error("request panicked", append(fields, zap.Stack("stack"))...)
			logged = true
		})
		if !logged {
			c.log.Error("request panicked", fields...)
		}
		code := wire.OFPBRC_EPERM
		if decoding {
			code = wire.OFPBRC_BAD_LEN
		}
		err = c.SendError(h, raw, wire.NewError(c.version, code))
	}()
	if h.Version != c.version && h.Type != wire.OFPT_HELLO {
		return c.SendError(h, raw, wire.NewError(c.version, wire.OFPBRC_BAD_VERSION))
	}
	dec.Reset()
	m, err := dec.DecodeMessage(h, body)
	if err != nil {
		var oe *wire.OFPError
		if errors.As(err, &oe) {
			c.log.Debug("bad message", zap.Uint8("type", h.Type), zap.Uint32("xid", h.Xid), zap.Error(err))
			return c.SendError(h, raw, oe)
		}
		return err
	}
	decoding = false
	if _, ok := m.(*wire.BundleAdd); ok {
		c.addRun++
	} else {
		c.addRun = 0
	}
	switch m := m.(type) {
	case *wire.EchoRequest:
		return c.Send(h.Xid, &wire.EchoReply{Data: m.Data})
	case *wire.EchoReply, *wire.Hello:
		return nil
	}
	err = c.handler.HandleMessage(c, h, raw, m)
	if c.reclaim {
		// After the handler returned, so that what it dropped is garbage.
		c.reclaim = false
		reclaimMemory()
	}
	if err != nil {
		var oe *wire.OFPError
		if errors.As(err, &oe) {
			c.log.Debug("request failed", zap.Uint8("type", h.Type), zap.Uint32("xid", h.Xid), zap.Error(err))
			return c.SendError(h, raw, oe)
		}
		return err
	}
	return nil
}

// handshake exchanges hellos and negotiates the version like OVS.
func (c *Conn) handshake() error {
	ours := c.opts.Versions
	hv := wire.HelloVersion(ours)
	if err := c.sendVersion(hv, c.NextXid(), wire.NewHello(ours), kindReply); err != nil {
		return err
	}
	if err := c.nc.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	h, body, err := wire.ReadMessage(c.nc, buf)
	if err != nil {
		return fmt.Errorf("hello from %s: %w", c.RemoteAddr(), err)
	}
	c.nc.SetReadDeadline(time.Time{})
	if h.Type != wire.OFPT_HELLO {
		return fmt.Errorf("%s sent message type %d before hello", c.RemoteAddr(), h.Type)
	}
	m, err := wire.DecodeMessage(h, body)
	if err != nil {
		return fmt.Errorf("hello from %s: %w", c.RemoteAddr(), err)
	}
	hello := m.(*wire.Hello)
	v, ok := wire.Negotiate(ours, h.Version, hello)
	if !ok {
		theirs, _ := hello.PeerVersions(h.Version)
		c.sendVersion(v, h.Xid, wire.IncompatibleHelloError(ours, theirs), kindReply)
		return fmt.Errorf("version negotiation with %s failed: %#x vs %#x", c.RemoteAddr(), ours, theirs)
	}
	c.version = v
	c.lastRx.Store(time.Now().UnixNano())
	c.log.Debug("connected", zap.Uint8("version", v))
	return nil
}

// prober sends echo requests on an idle connection and drops a dead one.
func (c *Conn) prober() {
	iv := c.opts.ProbeInterval
	t := time.NewTicker(iv / 2)
	defer t.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-t.C:
		}
		idle := time.Since(time.Unix(0, c.lastRx.Load()))
		if idle >= 2*iv {
			c.log.Info("inactivity probe: no reply, disconnecting", zap.Duration("idle", idle))
			c.Close()
			return
		}
		if idle >= iv {
			c.Send(c.NextXid(), &wire.EchoRequest{})
		}
	}
}
