package tunnel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/tunnel/tunneltest"
)

// Antrea's TLV mapping: {class=0x104,type=0x80,len=4}->tun_metadata0.
// Shared with the Geneve vport's tests.
const antreaTLV = tunneltest.AntreaTLV

var (
	seedFrame   = tunneltest.SeedFrame
	tunMetadata = tunneltest.TunMetadata
)

// geneveBytes builds a Geneve header with gopacket (an encoder independent
// of ours) followed by payload.
func geneveBytes(t testing.TB, g *layers.Geneve, payload []byte) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, g, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func optionMap(t testing.TB, spec string) *OptionMap {
	t.Helper()
	tlv := flowtable.NewTLVMap()
	if spec != "" {
		ms, err := flowtable.ParseTLVMappings(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlv.Add(ms...); err != nil {
			t.Fatal(err)
		}
	}
	om, err := NewOptionMap(tlv)
	if err != nil {
		t.Fatal(err)
	}
	return om
}

func TestTunMetadataArea(t *testing.T) {
	// Every offset the TLV map hands out must lie in the area FillKey
	// clears, whatever the allocation.
	tlv := flowtable.NewTLVMap()
	for i := 0; i < 8; i++ {
		if err := tlv.Add(flowtable.TLVMapping{Class: 0x200, Type: uint8(i), Len: 16, Index: i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 8; i++ {
		f, err := tlv.Resolve(flowtable.FieldTunMetadataN[i])
		if err != nil {
			t.Fatal(err)
		}
		if f.Off < tunMetadataOff || f.Off+f.Size > flowtable.KeySize {
			t.Errorf("tun_metadata%d at %d..%d, outside [%d,%d)", i, f.Off, f.Off+f.Size, tunMetadataOff, flowtable.KeySize)
		}
	}
}

func TestDecap(t *testing.T) {
	inner := seedFrame(t)
	opt := func(class uint16, typ uint8, data ...byte) *layers.GeneveOption {
		return &layers.GeneveOption{Class: class, Type: typ, Length: uint8(len(data)), Data: data}
	}
	// raw builds a header by hand for cases gopacket cannot express.
	raw := func(b0, b1 byte, proto uint16, rest ...byte) []byte {
		b := []byte{b0, b1, byte(proto >> 8), byte(proto), 0, 0, 0, 0}
		return append(b, rest...)
	}
	tests := []struct {
		name    string
		pkt     []byte
		err     error
		vni     uint32
		flags   Flags
		opts    []Option
		innerOK bool
	}{
		{name: "seed 001: vni 0, no options", pkt: geneveBytes(t, &layers.Geneve{Protocol: ProtoTEB}, inner), innerOK: true},
		{name: "vni 24 bits", pkt: geneveBytes(t, &layers.Geneve{Protocol: ProtoTEB, VNI: 0xabcdef}, inner), vni: 0xabcdef, innerOK: true},
		{name: "oam", pkt: geneveBytes(t, &layers.Geneve{Protocol: ProtoTEB, OAMPacket: true, VNI: 7}, inner), vni: 7, flags: FlagOAM, innerOK: true},
		{
			name: "antrea option + another",
			pkt: geneveBytes(t, &layers.Geneve{Protocol: ProtoTEB, CriticalOption: true, Options: []*layers.GeneveOption{
				opt(0x104, 0x80, 0x10, 0, 0, 0), opt(0xffff, 0x01, 1, 2, 3, 4, 5, 6, 7, 8)}}, inner),
			flags:   FlagCritical,
			opts:    []Option{{Class: 0x104, Type: 0x80, Data: []byte{0x10, 0, 0, 0}}, {Class: 0xffff, Type: 1, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}}},
			innerOK: true,
		},
		{name: "empty option body", pkt: raw(1, 0, ProtoTEB, append([]byte{0, 9, 3, 0}, inner...)...), opts: []Option{{Class: 9, Type: 3, Data: []byte{}}}, innerOK: true},
		{name: "truncated header", pkt: raw(0, 0, ProtoTEB)[:7], err: ErrTruncated},
		{name: "empty", pkt: nil, err: ErrTruncated},
		{name: "opt len past end", pkt: raw(2, 0, ProtoTEB, 0, 1, 2, 0), err: ErrOptionsTruncated},
		{name: "option length past area", pkt: raw(1, 0, ProtoTEB, append([]byte{0, 1, 2, 1}, inner...)...), err: ErrOptionTruncated},
		{name: "option header split", pkt: raw(2, 0, ProtoTEB, append([]byte{0, 1, 2, 0, 0, 1, 2, 2}, inner...)...), err: ErrOptionTruncated},
		{name: "version 1", pkt: raw(0x40, 0, ProtoTEB, inner...), err: ErrVersion},
		{name: "IPv4 payload", pkt: raw(0, 0, 0x0800, inner...), err: ErrProtocol},
		{name: "inner runt", pkt: raw(0, 0, ProtoTEB, inner[:13]...), err: ErrInnerTruncated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			md := Metadata{Src: 0x0a4f01c9} // left alone by Decap
			got, err := Decap(tc.pkt, &md)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if tc.innerOK && !bytes.Equal(got, inner) {
				t.Errorf("inner = % x, want % x", got, inner)
			}
			if md.VNI != tc.vni || md.Flags != tc.flags || md.Src != 0x0a4f01c9 {
				t.Errorf("md = %+v, want vni %#x flags %v", md, tc.vni, tc.flags)
			}
			var opts []Option
			for it := md.Iter(); ; {
				o, ok := it.Next()
				if !ok {
					break
				}
				opts = append(opts, o)
			}
			if len(opts) != len(tc.opts) {
				t.Fatalf("options = %+v, want %+v", opts, tc.opts)
			}
			for i := range opts {
				if opts[i].Class != tc.opts[i].Class || opts[i].Type != tc.opts[i].Type || !bytes.Equal(opts[i].Data, tc.opts[i].Data) {
					t.Errorf("option %d = %+v, want %+v", i, opts[i], tc.opts[i])
				}
			}
		})
	}
}

func TestFillKey(t *testing.T) {
	om := optionMap(t, antreaTLV+",{class=0xffff,type=0x01,len=8}->tun_metadata3")
	type option struct {
		class uint16
		typ   uint8
		data  []byte
	}
	tests := []struct {
		name     string
		flags    Flags
		opts     []option
		err      error
		md0, md3 []byte
	}{
		{name: "no options", md0: []byte{0, 0, 0, 0}, md3: make([]byte, 8)},
		{name: "antrea mark", opts: []option{{0x104, 0x80, []byte{0x10, 0, 0, 0}}}, md0: []byte{0x10, 0, 0, 0}, md3: make([]byte, 8)},
		{name: "two mapped", opts: []option{{0xffff, 1, []byte{1, 2, 3, 4, 5, 6, 7, 8}}, {0x104, 0x80, []byte{0xde, 0xad, 0xbe, 0xef}}},
			md0: []byte{0xde, 0xad, 0xbe, 0xef}, md3: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{name: "unknown non-critical ignored", opts: []option{{0x104, 0x01, []byte{9, 9, 9, 9}}, {0x104, 0x80, []byte{0, 0, 0, 1}}},
			md0: []byte{0, 0, 0, 1}, md3: make([]byte, 8)},
		{name: "unknown critical dropped", opts: []option{{0x104, 0x81, []byte{9, 9, 9, 9}}}, err: ErrUnknownCritical},
		{name: "unknown critical class dropped", opts: []option{{0x105, 0x80, []byte{9, 9, 9, 9}}}, err: ErrUnknownCritical},
		{name: "mapped with wrong length", opts: []option{{0x104, 0x80, []byte{1, 2, 3, 4, 5, 6, 7, 8}}}, err: ErrOptionLenMismatch},
		{name: "oam", flags: FlagOAM, md0: []byte{0, 0, 0, 0}, md3: make([]byte, 8)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var area []byte
			for _, o := range tc.opts {
				area = binary.BigEndian.AppendUint16(area, o.class)
				area = append(area, o.typ, byte(len(o.data)/4))
				area = append(area, o.data...)
			}
			md := Metadata{VNI: 0x123456, Flags: tc.flags, Options: area, Src: 0x0a4f01c9, Dst: 0x0a4f01ca}
			var k flowtable.Key
			for i := range k { // stale values must be overwritten or cleared
				k[i] = 0xa5
			}
			err := FillKey(&md, &k, om)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if errCheck := om.Check(&md); !errors.Is(errCheck, tc.err) {
				t.Errorf("Check = %v, want %v", errCheck, tc.err)
			}
			if err != nil {
				return
			}
			if k.TunID() != 0x123456 || k.TunSrc() != 0x0a4f01c9 || k.TunDst() != 0x0a4f01ca {
				t.Errorf("tun_id %#x tun_src %#x tun_dst %#x", k.TunID(), k.TunSrc(), k.TunDst())
			}
			wantFlags := uint64(0)
			if tc.flags&FlagOAM != 0 {
				wantFlags = 1
			}
			if got := flowtable.FieldTunFlags.Uint64(&k); got != wantFlags {
				t.Errorf("tun_flags = %d, want %d", got, wantFlags)
			}
			spec := antreaTLV + ",{class=0xffff,type=0x01,len=8}->tun_metadata3"
			if got := tunMetadata(t, spec, 0, &k); !bytes.Equal(got, tc.md0) {
				t.Errorf("tun_metadata0 = % x, want % x", got, tc.md0)
			}
			if got := tunMetadata(t, spec, 3, &k); !bytes.Equal(got, tc.md3) {
				t.Errorf("tun_metadata3 = % x, want % x", got, tc.md3)
			}
			if k.Reg(0) != 0xa5a5a5a5 {
				t.Errorf("FillKey touched reg0: %#x", k.Reg(0))
			}
		})
	}
}

func TestEncap(t *testing.T) {
	inner := seedFrame(t)
	spec := antreaTLV + ",{class=0xffff,type=0x01,len=8}->tun_metadata3"
	om := optionMap(t, spec)
	tests := []struct {
		name   string
		tunID  uint64
		oam    bool
		md0    []byte
		md3    []byte
		om     *OptionMap
		header []byte // expected Geneve header with options
	}{
		{name: "seed 001: vni 0, no options", om: om, header: []byte{0, 0, 0x65, 0x58, 0, 0, 0, 0}},
		{name: "no TLV map", om: nil, tunID: 5, md0: []byte{1, 1, 1, 1}, header: []byte{0, 0, 0x65, 0x58, 0, 0, 5, 0}},
		{name: "tun_id truncated to 24 bits", om: om, tunID: 0x1_00ab_cdef, header: []byte{0, 0, 0x65, 0x58, 0xab, 0xcd, 0xef, 0}},
		{name: "oam", om: om, oam: true, header: []byte{0, 0x80, 0x65, 0x58, 0, 0, 0, 0}},
		{name: "antrea option is critical", om: om, md0: []byte{0x10, 0, 0, 0},
			header: []byte{1 + 1, 0x40, 0x65, 0x58, 0, 0, 0, 0, 0x01, 0x04, 0x80, 1, 0x10, 0, 0, 0}},
		{name: "non-critical option only", om: om, md3: []byte{0, 0, 0, 0, 0, 0, 0, 9},
			header: []byte{3, 0, 0x65, 0x58, 0, 0, 0, 0, 0xff, 0xff, 0x01, 2, 0, 0, 0, 0, 0, 0, 0, 9}},
		{name: "both, in index order", om: om, tunID: 1, md0: []byte{0, 0, 0, 2}, md3: []byte{1, 0, 0, 0, 0, 0, 0, 0},
			header: []byte{5, 0x40, 0x65, 0x58, 0, 0, 1, 0, 0x01, 0x04, 0x80, 1, 0, 0, 0, 2, 0xff, 0xff, 0x01, 2, 1, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var k flowtable.Key
			flowtable.FieldTunID.SetUint64(&k, tc.tunID)
			if tc.oam {
				flowtable.FieldTunFlags.SetUint64(&k, 1)
			}
			if tc.md0 != nil {
				copy(tunMetadata(t, spec, 0, &k), tc.md0)
			}
			if tc.md3 != nil {
				copy(tunMetadata(t, spec, 3, &k), tc.md3)
			}
			prefix := []byte{0xee, 0xee}
			out, sport, err := Encap(prefix, inner, &k, tc.om)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out[:2], prefix) {
				t.Fatalf("Encap overwrote dst's existing bytes")
			}
			pkt := out[2:]
			if !bytes.Equal(pkt[:len(tc.header)], tc.header) || !bytes.Equal(pkt[len(tc.header):], inner) {
				t.Errorf("packet\n got % x\nwant % x + inner", pkt[:min(len(pkt), len(tc.header)+4)], tc.header)
			}
			if sport < SourcePortMin || sport >= SourcePortMax || sport != SourcePort(inner) {
				t.Errorf("source port %d", sport)
			}

			// Cross-check with gopacket's decoder.
			var g layers.Geneve
			if err := g.DecodeFromBytes(pkt, gopacket.NilDecodeFeedback); err != nil {
				t.Fatalf("gopacket: %v", err)
			}
			if g.Version != 0 || g.Protocol != layers.EthernetTypeTransparentEthernetBridging || g.VNI != uint32(tc.tunID&0xffffff) || g.OAMPacket != tc.oam {
				t.Errorf("gopacket sees %+v", g)
			}
			if !bytes.Equal(g.Payload, inner) {
				t.Errorf("gopacket payload differs from the inner frame")
			}
		})
	}
}

func TestEncapErrors(t *testing.T) {
	inner := seedFrame(t)
	// 3 options of 124 bytes (+4 header each) exceed the 252-byte area.
	tlv := flowtable.NewTLVMap()
	for i := 0; i < 3; i++ {
		if err := tlv.Add(flowtable.TLVMapping{Class: 1, Type: uint8(i), Len: 36, Index: i}); err != nil {
			t.Fatal(err)
		}
	}
	small, err := NewOptionMap(tlv)
	if err != nil {
		t.Fatal(err)
	}
	bigTLV := flowtable.NewTLVMap()
	if err := bigTLV.Add(flowtable.TLVMapping{Class: 1, Type: 1, Len: 124, Index: 0}, flowtable.TLVMapping{Class: 1, Type: 2, Len: 4, Index: 1}); err != nil {
		t.Fatal(err)
	}
	big, err := NewOptionMap(bigTLV)
	if err != nil {
		t.Fatal(err)
	}
	var full flowtable.Key
	for i := tunMetadataOff; i < flowtable.KeySize; i++ {
		full[i] = 1
	}
	tests := []struct {
		name  string
		inner []byte
		om    *OptionMap
		err   error
	}{
		{"inner runt", inner[:13], nil, ErrInnerTruncated},
		{"fits", inner, small, nil},
		{"fits big", inner, big, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Encap(nil, tc.inner, &full, tc.om)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
		})
	}
	// The TLV table is 256 bytes (as OVS's) and a Geneve header carries at
	// most 252 bytes of options (4 of them per option header): 32 options
	// of 4 bytes take 256, two of 124 take 248 + 8.
	for _, lens := range [][]uint8{slices.Repeat([]uint8{4}, 32), {124, 124}} {
		many := flowtable.NewTLVMap()
		for i, l := range lens {
			if err := many.Add(flowtable.TLVMapping{Class: 2, Type: uint8(i), Len: l, Index: i}); err != nil {
				t.Fatal(err)
			}
		}
		mom, err := NewOptionMap(many)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Encap(nil, inner, &full, mom); !errors.Is(err, ErrOptionsTooLong) {
			t.Errorf("options %v: err = %v, want %v", lens, err, ErrOptionsTooLong)
		}
		if n, err := mom.OptionsLen(&full); !errors.Is(err, ErrOptionsTooLong) {
			t.Errorf("options %v: OptionsLen = %d, %v", lens, n, err)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	inner := seedFrame(t)
	spec := antreaTLV + ",{class=0xffff,type=0x01,len=8}->tun_metadata3"
	om := optionMap(t, spec)
	for _, tc := range []struct {
		name  string
		tunID uint64
		oam   bool
		md0   []byte
		md3   []byte
	}{
		{"plain", 0, false, nil, nil},
		{"antrea mark", 0, false, []byte{0x10, 0, 0, 0}, nil},
		{"all", 0xfedcba, true, []byte{0xff, 0xff, 0xff, 0xff}, []byte{1, 2, 3, 4, 5, 6, 7, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k flowtable.Key
			flowtable.FieldTunID.SetUint64(&k, tc.tunID)
			if tc.oam {
				flowtable.FieldTunFlags.SetUint64(&k, 1)
			}
			copy(tunMetadata(t, spec, 0, &k), tc.md0)
			copy(tunMetadata(t, spec, 3, &k), tc.md3)
			pkt, _, err := Encap(make([]byte, 0, 2048), inner, &k, om)
			if err != nil {
				t.Fatal(err)
			}
			var md Metadata
			got, err := Decap(pkt, &md)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, inner) {
				t.Fatal("inner frame changed")
			}
			var k2 flowtable.Key
			if err := FillKey(&md, &k2, om); err != nil {
				t.Fatal(err)
			}
			if k2.TunID() != tc.tunID || flowtable.FieldTunFlags.Uint64(&k2) != flowtable.FieldTunFlags.Uint64(&k) {
				t.Errorf("tun_id %#x tun_flags %d", k2.TunID(), flowtable.FieldTunFlags.Uint64(&k2))
			}
			if !bytes.Equal(k2[tunMetadataOff:], k[tunMetadataOff:]) {
				t.Errorf("tun_metadata area differs after the round trip")
			}
		})
	}
}

func TestSourcePort(t *testing.T) {
	a := seedFrame(t)
	b := append([]byte(nil), a...)
	b[14+20+1] ^= 1 // another TCP source port
	c := append([]byte(nil), a...)
	c[0] ^= 0x02 // another destination MAC: same flow for IP
	if SourcePort(a) != SourcePort(c) {
		t.Errorf("MAC change moved the IP flow to another port")
	}
	if SourcePort(a) == SourcePort(b) {
		t.Errorf("ports %d == %d for two TCP flows", SourcePort(a), SourcePort(b))
	}
	// Fragments of one datagram share the port, with or without ports.
	f := append([]byte(nil), a...)
	f[14+6] |= 0x20 // MF
	g := append([]byte(nil), f...)
	g[14+20] ^= 0xff // ports differ, but they are not ports in a fragment
	if SourcePort(f) != SourcePort(g) {
		t.Errorf("fragment hashing reads ports")
	}
	// Spread over the range: 256 flows should take many distinct ports.
	seen := map[uint16]bool{}
	for i := 0; i < 256; i++ {
		x := append([]byte(nil), a...)
		binary.BigEndian.PutUint16(x[14+20:], uint16(1000+i))
		p := SourcePort(x)
		if p < SourcePortMin || p >= SourcePortMax {
			t.Fatalf("port %d out of range", p)
		}
		seen[p] = true
	}
	if len(seen) < 240 {
		t.Errorf("256 flows took only %d ports", len(seen))
	}
	for _, short := range [][]byte{nil, a[:13], a[:20], a[:40]} {
		_ = SourcePort(short) // must not panic
	}
}

func FuzzDecap(f *testing.F) {
	inner := seedFrame(f)
	f.Add(geneveBytes(f, &layers.Geneve{Protocol: ProtoTEB}, inner))
	f.Add(geneveBytes(f, &layers.Geneve{Protocol: ProtoTEB, CriticalOption: true, OAMPacket: true, VNI: 99, Options: []*layers.GeneveOption{
		{Class: 0x104, Type: 0x80, Length: 4, Data: []byte{0x10, 0, 0, 0}}, {Class: 0x104, Type: 0x81, Length: 4, Data: []byte{1, 2, 3, 4}}}}, inner))
	f.Add([]byte{1, 0, 0x65, 0x58, 0, 0, 0, 0, 0, 1, 2, 3})
	om := optionMap(f, antreaTLV+",{class=0xffff,type=0x01,len=8}->tun_metadata3")
	f.Fuzz(func(t *testing.T, pkt []byte) {
		var md Metadata
		got, err := Decap(pkt, &md)
		if err != nil {
			return
		}
		if len(got) < EthHeaderLen || len(got) > len(pkt)-HeaderLen {
			t.Fatalf("inner length %d from %d bytes", len(got), len(pkt))
		}
		// The options must walk to exactly the area's end.
		n := 0
		for it := md.Iter(); ; {
			o, ok := it.Next()
			if !ok {
				break
			}
			n += OptionHeaderLen + len(o.Data)
		}
		if n != len(md.Options) {
			t.Fatalf("options walk %d of %d bytes", n, len(md.Options))
		}
		var k flowtable.Key
		errFill := FillKey(&md, &k, om)
		if errCheck := om.Check(&md); (errFill == nil) != (errCheck == nil) {
			t.Fatalf("FillKey %v but Check %v", errFill, errCheck)
		}
		if errFill != nil {
			return
		}
		// Re-encoding the key gives a packet that decodes to the same key.
		out, _, err := Encap(nil, got, &k, om)
		if err != nil {
			t.Fatalf("re-encap: %v", err)
		}
		var md2 Metadata
		got2, err := Decap(out, &md2)
		if err != nil || !bytes.Equal(got2, got) {
			t.Fatalf("re-decap: %v", err)
		}
		var k2 flowtable.Key
		if err := FillKey(&md2, &k2, om); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(k2[tunMetadataOff:], k[tunMetadataOff:]) || k2.TunID() != k.TunID() ||
			flowtable.FieldTunFlags.Uint64(&k2) != flowtable.FieldTunFlags.Uint64(&k) {
			t.Fatalf("re-encoded key differs")
		}
		// The same datagram over an IPv6 underlay (addresses from the
		// inner frame): tun_ipv6_src/dst set, tun_src/dst cleared, the
		// rest of the key as over IPv4.
		md2.IPv6, md2.Src, md2.Dst = true, 0x0a000001, 0x0a000002 // stale IPv4 values must not leak
		copy(md2.Src6[:], got)
		copy(md2.Dst6[:], got[min(len(got), 6):])
		var k6 flowtable.Key
		if err := FillKey(&md2, &k6, om); err != nil {
			t.Fatal(err)
		}
		if k6.TunIPv6Src() != md2.Src6 || k6.TunIPv6Dst() != md2.Dst6 || k6.TunSrc() != md2.Src || k6.TunDst() != md2.Dst ||
			!bytes.Equal(k6[tunMetadataOff:], k[tunMetadataOff:]) || k6.TunID() != k.TunID() {
			t.Fatalf("IPv6 underlay key: tun_ipv6_src %x tun_ipv6_dst %x", k6.TunIPv6Src(), k6.TunIPv6Dst())
		}
	})
}
