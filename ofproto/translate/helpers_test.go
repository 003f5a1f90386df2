package translate_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/internal/sharedspec"
	"github.com/govs-project/govs/ofproto/flowtext"
	"github.com/govs-project/govs/ofproto/wire"
)

// capturesDir is ../shared/protocol/captures from the module root.
var capturesDir = sharedspec.Captures()

var versions = []struct {
	name string
	wire uint8
	text flowtext.Version
}{{"of10", wire.OFP10, flowtext.OF10}, {"of13", wire.OFP13, flowtext.OF13}, {"of15", wire.OFP15, flowtext.OF15}}

// seedFile reads a seed flows file and installs its "# tlv-map:" header in
// a fresh TLV map, as flowtext.Load does.
func seedFile(t testing.TB, name string) (string, *flowtable.TLVMap) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(seeds.Dir(), name))
	if err != nil {
		t.Fatal(err)
	}
	tlv := flowtable.NewTLVMap()
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "# tlv-map:"); ok {
			ms, err := flowtable.ParseTLVMappings(strings.TrimSpace(rest))
			if err != nil {
				t.Fatal(err)
			}
			if err := tlv.Add(ms...); err != nil {
				t.Fatal(err)
			}
		}
	}
	return string(b), tlv
}

// goldenLines reads a golden dump (one flow per line, leading space).
func goldenLines(t testing.TB, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(seeds.Dir(), name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		out = append(out, strings.TrimPrefix(l, " "))
	}
	return out
}

// flowKey identifies a flow the way a flow table does (a later add with
// the same key replaces the earlier flow).
type flowKey struct {
	table    uint8
	priority uint16
	match    flowtable.Match
}

// capMsg is one OpenFlow message of a capture.
type capMsg struct {
	fromClient bool
	h          wire.Header
	raw        []byte
}

// readCapture splits the TCP payloads of an Ethernet/IPv4 pcap.gz into
// OpenFlow messages, per direction, in capture order. The switch side is
// the one that answered the SYN.
func readCapture(t testing.TB, path string) []capMsg {
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
	if len(all) < 24 || binary.LittleEndian.Uint32(all) != 0xa1b2c3d4 {
		t.Fatalf("%s: not a little-endian pcap", path)
	}
	type stream struct {
		next    uint32
		started bool
		data    []byte
		client  bool
	}
	streams := map[string]*stream{}
	servers := map[uint16]bool{}
	var msgs []capMsg
	for p := all[24:]; len(p) >= 16; {
		n := int(binary.LittleEndian.Uint32(p[8:]))
		if 16+n > len(p) {
			t.Fatalf("%s: truncated record", path)
		}
		pkt := p[16 : 16+n]
		p = p[16+n:]
		if len(pkt) < 34 || binary.BigEndian.Uint16(pkt[12:]) != 0x0800 {
			continue
		}
		ip := pkt[14:]
		ihl := int(ip[0]&0xf) * 4
		if ip[9] != 6 || len(ip) < ihl+20 {
			continue
		}
		if tot := int(binary.BigEndian.Uint16(ip[2:])); tot < len(ip) {
			ip = ip[:tot]
		}
		tcp := ip[ihl:]
		sport, dport := binary.BigEndian.Uint16(tcp), binary.BigEndian.Uint16(tcp[2:])
		seq, flags := binary.BigEndian.Uint32(tcp[4:]), tcp[13]
		payload := tcp[int(tcp[12]>>4)*4:]
		if flags&0x12 == 0x12 {
			servers[sport] = true
		}
		key := fmt.Sprintf("%d>%d", sport, dport)
		s := streams[key]
		if s == nil {
			s = &stream{}
			streams[key] = s
		}
		s.client = servers[dport]
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
		if d := int32(seq - s.next); d < 0 {
			if int(-d) >= len(payload) {
				continue
			}
			payload, seq = payload[-d:], s.next
		}
		if seq != s.next {
			t.Fatalf("%s: gap in %s", path, key)
		}
		s.next += uint32(len(payload))
		s.data = append(s.data, payload...)
		for len(s.data) >= 8 {
			h, _, rest, err := wire.SplitMessage(s.data)
			if errors.Is(err, wire.ErrShortMessage) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %s: %v", path, key, err)
			}
			msgs = append(msgs, capMsg{fromClient: s.client, h: h, raw: bytes.Clone(s.data[:h.Length])})
			s.data = rest
		}
	}
	return msgs
}
