package wire

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"testing"
)

// seedMessages returns a few hundred real messages from the captures.
func seedMessages(t testing.TB) [][]byte {
	files, _ := filepath.Glob(filepath.Join(capturesDir, "*.pcap.gz"))
	var out [][]byte
	tt, ok := t.(*testing.T)
	if !ok {
		return nil
	}
	for _, f := range files {
		for i, m := range readCapture(tt, f) {
			// Small inputs only: the fuzzer minimizes every new
			// interesting input, which is very slow for 60 KB messages.
			if len(m.raw) <= 1024 && (i%5 == 0 || m.h.Type == OFPT_FLOW_MOD || m.h.Type == OFPT_EXPERIMENTER) {
				out = append(out, m.raw)
			}
		}
	}
	return out
}

// seedFlowModParts returns the match and action lists of the captures'
// flow-mods, re-encoded on their own, to seed the match and action fuzzers.
func seedFlowModParts() (matches, actions []seedPart) {
	seen := map[string]bool{}
	for _, raw := range seedMessages(&testing.T{}) {
		h, body, _, err := SplitMessage(raw)
		if err != nil {
			continue
		}
		m, err := DecodeMessage(h, body)
		fm, ok := m.(*FlowMod)
		if err != nil || !ok {
			continue
		}
		if b, err := AppendMatchTLVs(nil, h.Version, fm.Match); err == nil && len(fm.Match) > 0 && !seen["m"+string(b)] {
			seen["m"+string(b)] = true
			matches = append(matches, seedPart{h.Version, b})
		}
		acts := fm.Actions
		for _, in := range fm.Instructions {
			acts = append(acts, in.Actions...)
		}
		if b, err := AppendActions(nil, h.Version, acts); err == nil && len(acts) > 0 && !seen["a"+string(b)] {
			seen["a"+string(b)] = true
			actions = append(actions, seedPart{h.Version, b})
		}
	}
	return matches, actions
}

type seedPart struct {
	version uint8
	data    []byte
}

func FuzzDecodeMessage(f *testing.F) {
	for _, m := range seedMessages(&testing.T{}) {
		f.Add(m)
	}
	// Messages the captures lack: conntrack flushes, meter-mods in 1.3,
	// port status as OVS sends it on a link change (10GB-FD COPPER, LINK_DOWN
	// or LIVE) and the async config that filters it.
	for _, v := range []uint8{OFP10, OFP13, OFP15} {
		curr := uint32(0x840)
		if v == OFP10 {
			curr = 0xc0
		}
		for _, m := range []Message{
			&NXCTFlushZone{Zone: 7},
			&PortStatus{Reason: 2, Port: Port{PortNo: 5, HWAddr: [6]byte{2, 0, 0, 0, 0, 5}, Name: [16]byte{'p', 's', 'v'}, State: 1, Curr: curr, CurrSpeed: 10000000}},
			&PortStatus{Reason: 0, Port: Port{PortNo: 6, Config: 1, State: 4, Curr: curr, CurrSpeed: 10000000}},
			&AsyncConfig{PortStatusMask: [2]uint32{3, 0}, Props: []Property{{Type: 3, Data: []byte{0, 0, 0, 4}}}},
			&MeterMod{Command: OFPMC_ADD, Flags: OFPMF_PKTPS | OFPMF_BURST, MeterID: 1,
				Bands: []MeterBand{{Type: OFPMBT_DROP, Rate: 100, BurstSize: 10, Extra: make([]byte, 4)}}},
		} {
			if b, err := EncodeMessage(nil, v, 1, m); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, body, _, err := SplitMessage(data)
		if err != nil {
			return
		}
		var d Decoder
		d.Reset()
		m, err := d.DecodeMessage(h, body)
		if err != nil {
			return
		}
		enc, err := EncodeMessage(nil, h.Version, h.Xid, m)
		if err != nil {
			return // e.g. a value the encoder refuses to emit
		}
		h2, body2, _, err := SplitMessage(enc)
		if err != nil {
			t.Fatalf("re-encoded message does not split: %v", err)
		}
		m2, err := DecodeMessage(h2, body2)
		if err != nil {
			t.Fatalf("re-encoded message does not decode: %v\n%x", err, enc)
		}
		enc2, err := EncodeMessage(nil, h.Version, h.Xid, m2)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding not stable: %v\n%x\n%x", err, enc, enc2)
		}
	})
}

func FuzzDecodeMatch(f *testing.F) {
	f.Add(uint8(OFP13), cat(tlv(1, 0, true, 0, 0, 0, 1, 0, 0, 0, 0xff), tlv(0x8000, 5, false, 8, 0)))
	f.Add(uint8(OFP15), tlv(0x8000, 0, false, 0, 0, 0, 1))
	f.Add(uint8(OFP10), cat(OXMHeader{Class: 0xffff, Field: 33, Length: 20, Experimenter: NX_VENDOR_ID}.Append(nil), make([]byte, 16)))
	// tun_ipv6_src exact and tun_ipv6_dst masked (NXM_NX_TUN_IPV6_SRC/DST, 109/110).
	ip6 := []byte{0xfd, 0, 0, 0x4f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xca}
	m6 := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}
	for _, v := range []uint8{OFP10, OFP13, OFP15} {
		f.Add(v, cat(OXMHeader{Class: 1, Field: 109, Length: 16}.Append(nil), ip6,
			OXMHeader{Class: 1, Field: 110, HasMask: true, Length: 32}.Append(nil), ip6[:8], make([]byte, 8), m6))
	}
	matches, _ := seedFlowModParts()
	for _, m := range matches {
		f.Add(m.version, m.data)
	}
	f.Fuzz(func(t *testing.T, version uint8, data []byte) {
		fields, err := DecodeMatch(version, data)
		if err != nil {
			return
		}
		enc, err := AppendMatchTLVs(nil, version, fields)
		if err != nil {
			t.Fatalf("encode of decoded match failed: %v", err)
		}
		if !bytes.Equal(enc, data) {
			t.Fatalf("match round trip differs:\n%x\n%x", enc, data)
		}
	})
}

func FuzzDecodeActions(f *testing.F) {
	for _, s := range sampleActions(f) {
		for _, v := range s.versions {
			if b, err := AppendActions(nil, v, []Action{s.a}); err == nil {
				f.Add(v, b)
			}
		}
	}
	_, actions := seedFlowModParts()
	for _, a := range actions {
		f.Add(a.version, a.data)
	}
	// clone() around MPLS and TTL actions (the body, nested actions, is
	// its owner's to decode: here it must survive as it came).
	for _, v := range []uint8{OFP10, OFP13, OFP15} {
		nested := []Action{&ActionPushMPLS{EthType: 0x8847}, &ActionSetMplsTTL{TTL: 9}, &ActionDecMplsTTL{}, &ActionOutput{Port: 1}, &ActionPopMPLS{EthType: 0x0800}}
		if v != OFP10 {
			nested = append(nested, &ActionCopyTTL{}, &ActionCopyTTL{In: true})
		}
		body, err := AppendActions(nil, v, nested)
		if err != nil {
			f.Fatal(err)
		}
		clone := binary.BigEndian.AppendUint16(nil, OFPAT_EXPERIMENTER)
		clone = binary.BigEndian.AppendUint16(clone, uint16(16+len(body)))
		clone = binary.BigEndian.AppendUint32(clone, NX_VENDOR_ID)
		clone = binary.BigEndian.AppendUint16(clone, NXAST_CLONE)
		clone = append(append(clone, make([]byte, 6)...), body...)
		if _, err := DecodeActions(v, clone); err != nil {
			f.Fatalf("clone seed for %#x: %v", v, err)
		}
		f.Add(v, clone)
	}
	f.Fuzz(func(t *testing.T, version uint8, data []byte) {
		if version != OFP10 && version != OFP13 && version != OFP15 {
			version = OFP13
		}
		acts, err := DecodeActions(version, data)
		if err != nil {
			return
		}
		enc, err := AppendActions(nil, version, acts)
		if err != nil {
			t.Fatalf("encode of decoded actions failed: %v", err)
		}
		again, err := DecodeActions(version, enc)
		if err != nil {
			t.Fatalf("re-encoded actions do not decode: %v\n%x", err, enc)
		}
		enc2, _ := AppendActions(nil, version, again)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("action encoding not stable:\n%x\n%x", enc, enc2)
		}
	})
}
