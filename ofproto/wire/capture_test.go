package wire

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/govs-project/govs/internal/sharedspec"
)

// capturesDir is ../shared/protocol/captures from the module root.
var capturesDir = sharedspec.Captures()

// capMsg is one OpenFlow message found in a capture.
type capMsg struct {
	conn string // "srcport>dstport" of the direction
	h    Header
	raw  []byte // whole message
}

// tcpStream accumulates one direction of a TCP connection.
type tcpStream struct {
	next    uint32
	started bool
	data    []byte
}

// readCapture walks an Ethernet/IPv4/TCP pcap and splits each direction's
// payload into OpenFlow messages (in capture order, per direction).
func readCapture(t *testing.T, path string) []capMsg {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 24 || binary.LittleEndian.Uint32(all) != 0xa1b2c3d4 || binary.LittleEndian.Uint32(all[20:]) != 1 {
		t.Fatalf("%s: not a little-endian Ethernet pcap", path)
	}
	streams := map[string]*tcpStream{}
	var msgs []capMsg
	p := all[24:]
	for len(p) >= 16 {
		incl := int(binary.LittleEndian.Uint32(p[8:]))
		if 16+incl > len(p) {
			t.Fatalf("%s: truncated pcap record", path)
		}
		pkt := p[16 : 16+incl]
		p = p[16+incl:]
		if len(pkt) < 14+20 || binary.BigEndian.Uint16(pkt[12:]) != 0x0800 {
			continue
		}
		ip := pkt[14:]
		ihl := int(ip[0]&0xf) * 4
		if ip[9] != 6 || len(ip) < ihl+20 {
			continue
		}
		totLen := int(binary.BigEndian.Uint16(ip[2:]))
		if totLen < len(ip) {
			ip = ip[:totLen]
		}
		tcp := ip[ihl:]
		sport, dport := binary.BigEndian.Uint16(tcp), binary.BigEndian.Uint16(tcp[2:])
		seq := binary.BigEndian.Uint32(tcp[4:])
		flags := tcp[13]
		off := int(tcp[12]>>4) * 4
		payload := tcp[off:]
		key := fmt.Sprintf("%d>%d", sport, dport)
		s := streams[key]
		if s == nil {
			s = &tcpStream{}
			streams[key] = s
		}
		if flags&0x02 != 0 {
			s.next, s.started = seq+1, true
			continue
		}
		if len(payload) == 0 {
			continue
		}
		if !s.started {
			s.next, s.started = seq, true
		}
		if int32(seq-s.next) < 0 { // retransmission (possibly partial)
			skip := int(s.next - seq)
			if skip >= len(payload) {
				continue
			}
			payload, seq = payload[skip:], s.next
		}
		if seq != s.next {
			t.Fatalf("%s: gap in stream %s", path, key)
		}
		s.next += uint32(len(payload))
		s.data = append(s.data, payload...)
		for {
			h, _, rest, err := SplitMessage(s.data)
			if errors.Is(err, ErrShortMessage) && len(s.data) >= 8 && h.Length >= 8 {
				break
			}
			if err != nil {
				if len(s.data) < 8 {
					break
				}
				t.Fatalf("%s: stream %s: %v", path, key, err)
			}
			raw := append([]byte(nil), s.data[:h.Length]...)
			msgs = append(msgs, capMsg{conn: key, h: h, raw: raw})
			s.data = rest
		}
	}
	return msgs
}

// reverse turns "a>b" into "b>a".
func reverse(dir string) string {
	var a, b int
	fmt.Sscanf(dir, "%d>%d", &a, &b)
	return fmt.Sprintf("%d>%d", b, a)
}

// TestCaptures decodes every OpenFlow message of every capture and checks
// that re-encoding gives the identical bytes. A client message the real
// switch rejected (an OFPT_ERROR with the same xid on the same connection)
// must fail to decode with exactly that error type and code.
func TestCaptures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(capturesDir, "*.pcap.gz"))
	if len(files) == 0 {
		t.Fatalf("no captures in %s", capturesDir)
	}
	sort.Strings(files)
	total := 0
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			msgs := readCapture(t, file)
			if len(msgs) == 0 {
				t.Fatal("no OpenFlow messages found")
			}
			// Errors the switch sent, by connection and xid.
			type rej struct{ typ, code uint16 }
			rejected := map[string]rej{}
			// An error sent on direction a>b rejects the message with
			// the same xid sent on b>a.
			for _, m := range msgs {
				if m.h.Type == OFPT_ERROR {
					body := m.raw[8:]
					if len(body) >= 4 && be16(body) != OFPET_HELLO_FAILED {
						rejected[fmt.Sprintf("%s/%d", reverse(m.conn), m.h.Xid)] = rej{be16(body), be16(body[2:])}
					}
				}
			}
			var d Decoder
			rejectedChecked := 0
			defer func() {
				if len(rejected) > 0 && rejectedChecked == 0 {
					t.Errorf("capture has %d switch errors but no rejected request was found", len(rejected))
				}
			}()
			for i, m := range msgs {
				total++
				d.Reset()
				msg, err := d.DecodeMessage(m.h, m.raw[8:])
				key := fmt.Sprintf("%s/%d", m.conn, m.h.Xid)
				if r, ok := rejected[key]; ok {
					rejectedChecked++
					var oe *OFPError
					if !errors.As(err, &oe) {
						t.Errorf("msg %d (type %d xid %#x): switch rejected it with %d/%d but we decoded it: %v", i, m.h.Type, m.h.Xid, r.typ, r.code, err)
						continue
					}
					if oe.Type != r.typ || oe.Code != r.code {
						t.Errorf("msg %d: switch said %d/%d, we say %v", i, r.typ, r.code, oe)
					}
					continue
				}
				if err != nil {
					t.Errorf("msg %d (%s v%d type %d len %d): %v", i, m.conn, m.h.Version, m.h.Type, m.h.Length, err)
					continue
				}
				out, err := EncodeMessage(nil, m.h.Version, m.h.Xid, msg)
				if err != nil {
					t.Errorf("msg %d (type %d): re-encode: %v", i, m.h.Type, err)
					continue
				}
				if !bytes.Equal(out, m.raw) {
					t.Errorf("msg %d (v%d type %d %T): re-encoding differs\n got %x\nwant %x", i, m.h.Version, m.h.Type, msg, out, m.raw)
				}
			}
		})
	}
	t.Logf("%d messages checked", total)
}
