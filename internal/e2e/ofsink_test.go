package e2e

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
)

// OpenFlow 1.5 message types the sink answers.
const (
	sinkHello          = 0
	sinkEchoRequest    = 2
	sinkEchoReply      = 3
	sinkFeaturesReq    = 5
	sinkFeaturesReply  = 6
	sinkMultipartReq   = 18
	sinkMultipartReply = 19
	sinkTableFeatures  = 12 // multipart type
	sinkBarrierRequest = 20
	sinkBarrierReply   = 21
	sinkBundleControl  = 33
)

// startOFSink listens on the unix socket path as an OpenFlow 1.5 switch
// that costs (almost) nothing: it reads every message and answers only
// hello, echo, features, multipart requests (table features as
// 254 tables, anything else empty), barrier and bundle
// control (each bundle request
// with its reply type), installing nothing. What `ovs-ofctl --bundle
// add-flows` takes against it is the client's own floor: the wall time no
// switch can go under. The listener closes with the test.
func startOFSink(tb testing.TB, path string) {
	tb.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serveOFSink(c)
		}
	}()
}

func serveOFSink(c net.Conn) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 256<<10)
	w := bufio.NewWriter(c)
	var h [8]byte
	var body []byte
	send := func(typ uint8, xid []byte, payload []byte) error {
		var out [8]byte
		out[0], out[1] = 6, typ
		binary.BigEndian.PutUint16(out[2:], uint16(8+len(payload)))
		copy(out[4:], xid)
		w.Write(out[:])
		w.Write(payload)
		return w.Flush()
	}
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(h[2:])) - 8
		if n < 0 {
			return
		}
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		var err error
		switch h[1] {
		case sinkHello:
			err = send(sinkHello, h[4:], nil)
		case sinkEchoRequest:
			err = send(sinkEchoReply, h[4:], body)
		case sinkFeaturesReq:
			features := make([]byte, 24) // datapath id, buffers, tables, ...
			features[7], features[12] = 1, 254
			err = send(sinkFeaturesReply, h[4:], features)
		case sinkMultipartReq: // table features: 254 bare tables; others empty (no ports)
			switch {
			case len(body) < 2:
			case binary.BigEndian.Uint16(body) == sinkTableFeatures:
				err = send(sinkMultipartReply, h[4:], sinkTables(body[:2]))
			default:
				err = send(sinkMultipartReply, h[4:], []byte{body[0], body[1], 0, 0, 0, 0, 0, 0})
			}
		case sinkBarrierRequest:
			err = send(sinkBarrierReply, h[4:], nil)
		case sinkBundleControl:
			if len(body) >= 8 { // bundle id, type (the reply is type+1), flags
				binary.BigEndian.PutUint16(body[4:], binary.BigEndian.Uint16(body[4:])+1)
				binary.BigEndian.PutUint16(body[6:], 0)
				err = send(sinkBundleControl, h[4:], body[:8])
			}
		}
		if err != nil {
			return
		}
	}
}

// sinkTables is a multipart reply of type mpType: 254 tables' features
// without properties (ofp_table_features: length, table id, command,
// metadata match and write, capabilities, max entries, name).
func sinkTables(mpType []byte) []byte {
	b := append([]byte{}, mpType...)
	b = append(b, 0, 0, 0, 0, 0, 0) // flags, pad
	for id := range 254 {
		t := make([]byte, 64)
		binary.BigEndian.PutUint16(t, 64)
		t[2] = byte(id)
		binary.BigEndian.PutUint32(t[28:], 1000000)
		copy(t[32:], fmt.Sprintf("table%d", id))
		b = append(b, t...)
	}
	return b
}
