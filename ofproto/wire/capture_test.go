package wire

import (
	"bytes"
	"errors"
	"fmt"
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

// readCapture walks an Ethernet/IPv4/TCP pcap and splits each direction's
// payload into OpenFlow messages (in capture order, per direction).
func readCapture(t *testing.T, path string) []capMsg {
	t.Helper()
	ms, err := sharedspec.ReadCapture(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]capMsg, 0, len(ms))
	for _, m := range ms {
		h, err := ParseHeader(m.Raw)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, m.Conn, err)
		}
		out = append(out, capMsg{conn: m.Conn, h: h, raw: m.Raw})
	}
	return out
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
