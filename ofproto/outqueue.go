package ofproto

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// The output side of a connection, as Open vSwitch's rconn keeps it: every
// message is encoded into a queue and one writer goroutine per connection
// drains it, so the goroutine that reads requests (and the datapath
// goroutines sending packet-ins) never block on a peer that does not read.
//
// Bounds, per connection (OVS counts the same backlogs per ofconn):
//   - packet-ins: at most PacketInQueueLimit queued; more are dropped,
//     counted and logged (OVS rconn_send_with_limit with the controller's
//     controller_queue_size, default 100);
//   - replies and other messages are never dropped; a backlog past
//     MaxBacklogBytes means the peer stopped reading: the connection is
//     closed (reported and counted), which bounds its memory;
//   - a long multipart reply (dump-flows) streams: its producer waits
//     between parts while the backlog is above dumpBacklogBytes, so a dump
//     of any size holds about that much. Only then does reading wait for
//     the peer, as OVS stops reading a connection with 100 replies queued
//     (ofconn_may_recv).

// DefaultPacketInQueueLimit is OVS's default controller_queue_size.
const DefaultPacketInQueueLimit = 100

// DefaultMaxBacklogBytes is the reply backlog at which a connection is
// given up: far above any burst a working controller causes (the 20
// table-features replies are 1.5 MB).
const DefaultMaxBacklogBytes = 32 << 20

// dumpBacklogBytes is the backlog a streaming multipart reply waits under.
const dumpBacklogBytes = 4 << 20

// Counters over all connections of the process (exposed for appctl and tests).
var (
	// PacketInsQueued counts packet-ins queued for a controller.
	PacketInsQueued atomic.Uint64
	// PacketInsDropped counts packet-ins dropped on a full queue.
	PacketInsDropped atomic.Uint64
	// BacklogDisconnects counts connections closed on a reply backlog.
	BacklogDisconnects atomic.Uint64
	// PanicsRecovered counts requests whose decoding or handling panicked.
	PanicsRecovered atomic.Uint64
)

var errConnClosed = errors.New("connection closed")

// message kinds in the output queue.
const (
	kindReply    = iota // replies, errors, echo, port-status, flow-removed
	kindPacketIn        // packet-ins: dropped when over the limit
)

type queuedMsg struct {
	b    []byte
	kind uint8
}

// outQueue is a connection's output queue.
type outQueue struct {
	mu       sync.Mutex
	drained  sync.Cond // signalled when the writer finished a batch
	msgs     []queuedMsg
	bytes    int // queued and being written
	pins     int // packet-ins queued and being written
	free     [][]byte
	wake     chan struct{}
	closed   bool
	lastDrop time.Time
	dropped  uint64 // packet-ins dropped since the last log line
}

func (q *outQueue) init() {
	q.drained.L = &q.mu
	q.wake = make(chan struct{}, 1)
}

// buffer returns a recycled buffer for encoding a message.
func (q *outQueue) buffer() []byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := len(q.free); n > 0 {
		b := q.free[n-1]
		q.free = q.free[:n-1]
		return b[:0]
	}
	return nil
}

// recycle keeps small buffers for reuse; big ones (a 64 KB multipart part)
// go back to the garbage collector so an idle connection holds little.
func (q *outQueue) recycleLocked(b []byte) {
	if cap(b) <= 4096 && len(q.free) < 64 {
		q.free = append(q.free, b)
	}
}

// enqueue appends an encoded message; a packet-in over the limit is
// dropped (and counted) instead.
func (c *Conn) enqueue(b []byte, kind uint8) error {
	q := &c.out
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return errConnClosed
	}
	if kind == kindPacketIn && q.pins >= c.opts.PacketInQueueLimit {
		q.recycleLocked(b)
		q.dropped++
		logNow := time.Since(q.lastDrop) >= time.Second
		n := q.dropped
		if logNow {
			q.lastDrop, q.dropped = time.Now(), 0
		}
		q.mu.Unlock()
		PacketInsDropped.Add(1)
		if logNow {
			c.log.Warn("packet-in queue full, dropping packet-ins (the controller does not keep up)",
				zap.Int("limit", c.opts.PacketInQueueLimit), zap.Uint64("dropped", n))
		}
		return nil
	}
	if kind != kindPacketIn && q.bytes+len(b) > c.opts.MaxBacklogBytes {
		backlog := q.bytes
		q.mu.Unlock()
		BacklogDisconnects.Add(1)
		c.log.Warn("peer does not read its replies, disconnecting", zap.Int("backlog_bytes", backlog))
		c.Close()
		return errConnClosed
	}
	q.msgs = append(q.msgs, queuedMsg{b: b, kind: kind})
	q.bytes += len(b)
	if kind == kindPacketIn {
		q.pins++
		PacketInsQueued.Add(1)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return nil
}

// writer drains the output queue until the connection closes.
func (c *Conn) writer() {
	q := &c.out
	var batch []queuedMsg
	var bufs net.Buffers
	for {
		select {
		case <-c.closed:
			return
		case <-q.wake:
		}
		for {
			q.mu.Lock()
			batch, q.msgs = q.msgs, batch[:0]
			q.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			bufs = bufs[:0]
			for _, m := range batch {
				bufs = append(bufs, m.b)
			}
			var err error
			if rs, ok := c.nc.(*rawSocket); ok {
				_, err = rs.WriteBuffers(bufs)
			} else {
				w := bufs // WriteTo consumes the slice it is given
				_, err = w.WriteTo(c.nc)
			}
			q.mu.Lock()
			for i := range batch {
				q.bytes -= len(batch[i].b)
				if batch[i].kind == kindPacketIn {
					q.pins--
				}
				q.recycleLocked(batch[i].b)
				batch[i] = queuedMsg{}
			}
			q.drained.Broadcast()
			q.mu.Unlock()
			if err != nil {
				c.log.Debug("write failed", zap.Error(err))
				c.Close()
				return
			}
		}
	}
}

// waitBacklog blocks while more than limit bytes are queued. It reports
// errConnClosed once the connection is closed.
func (c *Conn) waitBacklog(limit int) error {
	q := &c.out
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.bytes > limit && !q.closed {
		q.drained.Wait()
	}
	if q.closed {
		return errConnClosed
	}
	return nil
}

// drain waits (at most d) for the queue to empty, so that a final error
// reaches a peer before the connection closes.
func (c *Conn) drain(d time.Duration) {
	t := time.AfterFunc(d, func() {
		c.out.mu.Lock()
		c.out.closed = true
		c.out.drained.Broadcast()
		c.out.mu.Unlock()
	})
	defer t.Stop()
	c.waitBacklog(0)
}

// Backlog reports the bytes and packet-ins queued on the connection.
func (c *Conn) Backlog() (bytes, packetIns int) {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	return c.out.bytes, c.out.pins
}
