package flowtable

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// maskTemplate makes one kind of match: it fixes a set of fields under a
// fixed mask and draws their values from r. Every template of the list
// below yields a distinct mask, so n templates give n classifier subtables.
type maskTemplate struct {
	name string
	set  func(m *Match, r *rand.Rand)
}

// exact sets f to a random value (the template's entropy).
func exact(m *Match, f *Field, r *rand.Rand) {
	m.SetUint64(f, r.Uint64())
}

func prefix32(bits int) uint64 { return uint64(0xffffffff) << (32 - bits) & 0xffffffff }

func ipv4(m *Match) { m.SetUint64(FieldEthType, EthTypeIPv4) }

func ipDstPrefix(bits int) maskTemplate {
	return maskTemplate{fmt.Sprintf("ip,nw_dst/%d", bits), func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetMaskedUint64(FieldIPv4Dst, r.Uint64(), prefix32(bits))
	}}
}

func ipSrcPrefix(bits int) maskTemplate {
	return maskTemplate{fmt.Sprintf("ip,nw_src/%d", bits), func(m *Match, r *rand.Rand) {
		ipv4(m)
		m.SetMaskedUint64(FieldIPv4Src, r.Uint64(), prefix32(bits))
	}}
}

// benchTemplates are the masks an Antrea-like pipeline uses (in_port,
// spoof guard, L2/L3 forwarding, conntrack state, registers with partial
// masks, conjunction ids, L4 ports), padded with more prefix lengths. The
// first 10 are a mix of all kinds; 50 are the whole list.
var benchTemplates = func() []maskTemplate {
	ts := []maskTemplate{
		{"in_port", func(m *Match, r *rand.Rand) { exact(m, FieldInPort, r) }},
		ipDstPrefix(24),
		ipDstPrefix(32),
		{"tcp,tp_dst", func(m *Match, r *rand.Rand) {
			ipv4(m)
			m.SetUint64(FieldIPProto, IPProtoTCP)
			exact(m, FieldTCPDst, r)
		}},
		{"reg0/0xffff", func(m *Match, r *rand.Rand) { m.SetMaskedUint64(FieldReg[0], r.Uint64(), 0xffff) }},
		{"ip,reg0=0x10000/0x10000,reg1", func(m *Match, r *rand.Rand) {
			ipv4(m)
			m.SetMaskedUint64(FieldReg[0], 0x10000, 0x10000)
			exact(m, FieldReg[1], r)
		}},
		{"ct_state=-new+trk,ct_mark,ip", func(m *Match, r *rand.Rand) {
			ipv4(m)
			m.SetMaskedUint64(FieldCtState, CtStateTrk, CtStateTrk|CtStateNew)
			exact(m, FieldCtMark, r)
		}},
		{"ip,in_port,dl_src,nw_src", func(m *Match, r *rand.Rand) {
			ipv4(m)
			exact(m, FieldInPort, r)
			exact(m, FieldEthSrc, r)
			exact(m, FieldIPv4Src, r)
		}},
		{"dl_dst", func(m *Match, r *rand.Rand) { exact(m, FieldEthDst, r) }},
		{"conj_id,ip", func(m *Match, r *rand.Rand) {
			ipv4(m)
			exact(m, FieldConjID, r)
		}},

		ipSrcPrefix(24),
		ipSrcPrefix(32),
		{"in_port,dl_src", func(m *Match, r *rand.Rand) {
			exact(m, FieldInPort, r)
			exact(m, FieldEthSrc, r)
		}},
		{"udp,tp_src", func(m *Match, r *rand.Rand) {
			ipv4(m)
			m.SetUint64(FieldIPProto, IPProtoUDP)
			exact(m, FieldUDPSrc, r)
		}},
		{"tcp,nw_dst/24,tp_dst", func(m *Match, r *rand.Rand) {
			ipv4(m)
			m.SetUint64(FieldIPProto, IPProtoTCP)
			m.SetMaskedUint64(FieldIPv4Dst, r.Uint64(), prefix32(24))
			exact(m, FieldTCPDst, r)
		}},
		{"tcp,tp_dst/0xfff0", func(m *Match, r *rand.Rand) {
			ipv4(m)
			m.SetUint64(FieldIPProto, IPProtoTCP)
			m.SetMaskedUint64(FieldTCPDst, r.Uint64(), 0xfff0)
		}},
		{"ip,nw_src/16,nw_dst/16", func(m *Match, r *rand.Rand) {
			ipv4(m)
			m.SetMaskedUint64(FieldIPv4Src, r.Uint64(), prefix32(16))
			m.SetMaskedUint64(FieldIPv4Dst, r.Uint64(), prefix32(16))
		}},
		{"reg1", func(m *Match, r *rand.Rand) { exact(m, FieldReg[1], r) }},
		{"reg0/0xffff,reg1", func(m *Match, r *rand.Rand) {
			m.SetMaskedUint64(FieldReg[0], r.Uint64(), 0xffff)
			exact(m, FieldReg[1], r)
		}},
		{"ip,reg5", func(m *Match, r *rand.Rand) { ipv4(m); exact(m, FieldReg[5], r) }},
		{"reg6/0xfffff0", func(m *Match, r *rand.Rand) { m.SetMaskedUint64(FieldReg[6], r.Uint64(), 0xfffff0) }},
		{"ct_state=+inv+trk,ip,nw_src", func(m *Match, r *rand.Rand) {
			ipv4(m)
			m.SetMaskedUint64(FieldCtState, CtStateTrk|CtStateInv, CtStateTrk|CtStateInv)
			exact(m, FieldIPv4Src, r)
		}},
		{"ct_state=-new+est,ip,reg0/0xffff", func(m *Match, r *rand.Rand) {
			ipv4(m)
			m.SetMaskedUint64(FieldCtState, CtStateEst, CtStateEst|CtStateNew)
			m.SetMaskedUint64(FieldReg[0], r.Uint64(), 0xffff)
		}},
		{"ct_state=+new+trk,ct_zone,ip,nw_dst/24", func(m *Match, r *rand.Rand) {
			ipv4(m)
			m.SetMaskedUint64(FieldCtState, CtStateTrk|CtStateNew, CtStateTrk|CtStateNew)
			exact(m, FieldCtZone, r)
			m.SetMaskedUint64(FieldIPv4Dst, r.Uint64(), prefix32(24))
		}},
		{"ip,dl_dst,nw_dst", func(m *Match, r *rand.Rand) {
			ipv4(m)
			exact(m, FieldEthDst, r)
			exact(m, FieldIPv4Dst, r)
		}},
		{"tun_id", func(m *Match, r *rand.Rand) { exact(m, FieldTunID, r) }},
		{"tun_dst,reg1", func(m *Match, r *rand.Rand) {
			exact(m, FieldTunDst, r)
			exact(m, FieldReg[1], r)
		}},
		{"metadata/0xffff0000", func(m *Match, r *rand.Rand) {
			m.SetMaskedUint64(FieldMetadata, r.Uint64(), 0xffff0000)
		}},
		{"arp,arp_tpa,arp_op", func(m *Match, r *rand.Rand) {
			m.SetUint64(FieldEthType, EthTypeARP)
			exact(m, FieldArpTpa, r)
			m.SetUint64(FieldArpOp, 1)
		}},
		{"ipv6,ipv6_dst/64", func(m *Match, r *rand.Rand) {
			m.SetUint64(FieldEthType, EthTypeIPv6)
			var v, mk [16]byte
			for i := 0; i < 8; i++ {
				v[i], mk[i] = byte(r.Uint32()), 0xff
			}
			m.Set(FieldIPv6Dst, v[:], mk[:])
		}},
		{"in_port,pkt_mark/0xff00", func(m *Match, r *rand.Rand) {
			exact(m, FieldInPort, r)
			m.SetMaskedUint64(FieldPktMark, r.Uint64(), 0xff00)
		}},
		{"ip,reg1,nw_src/24", func(m *Match, r *rand.Rand) {
			ipv4(m)
			exact(m, FieldReg[1], r)
			m.SetMaskedUint64(FieldIPv4Src, r.Uint64(), prefix32(24))
		}},
	}
	for _, bits := range []int{16, 20, 28, 17, 18, 19, 21, 22, 23, 25, 26, 27, 29, 30, 31} {
		ts = append(ts, ipDstPrefix(bits))
	}
	for _, bits := range []int{16, 20, 28} {
		ts = append(ts, ipSrcPrefix(bits))
	}
	return ts
}()

// randomPacketKey returns the key of a plausible packet: IPv4 TCP or UDP,
// tracked, with random addresses, ports, in_port and registers.
func randomPacketKey(r *rand.Rand) Key {
	var k Key
	k.SetInPort(uint32(r.IntN(0xff00)))
	for i := 0; i < 8; i++ {
		k.SetReg(i, r.Uint32())
	}
	k.SetEthType(EthTypeIPv4)
	if r.IntN(2) == 0 {
		k.SetNwProto(IPProtoTCP)
	} else {
		k.SetNwProto(IPProtoUDP)
	}
	FieldEthSrc.SetUint64(&k, r.Uint64())
	FieldEthDst.SetUint64(&k, r.Uint64())
	FieldIPv4Src.SetUint64(&k, r.Uint64())
	FieldIPv4Dst.SetUint64(&k, r.Uint64())
	FieldTCPSrc.SetUint64(&k, r.Uint64())
	FieldTCPDst.SetUint64(&k, r.Uint64())
	k.SetCtState(uint32(CtStateTrk | []uint32{CtStateNew, CtStateEst, CtStateInv}[r.IntN(3)]))
	k.SetCtMark(r.Uint32())
	k.SetCtZone(uint16(r.Uint32()))
	k.setU8(offNwTTL, 64)
	return k
}

// benchClassifier fills a classifier with nRules rules spread round-robin
// over the first nMasks templates, with random priorities.
func benchClassifier(nRules, nMasks int, r *rand.Rand) (*classifier, []*Rule) {
	c := newClassifier()
	rules := make([]*Rule, 0, nRules)
	for i := 0; i < nRules; i++ {
		f := &Flow{Priority: uint16(r.IntN(0x10000))}
		benchTemplates[i%nMasks].set(&f.Match, r)
		rl := testRule(f, uint64(i+1))
		c.insert(rl)
		rules = append(rules, rl)
	}
	return c, rules
}

const benchKeys = 1024 // keys per benchmark, cycled through

// hitKeys returns packet keys that each match a random installed rule (the
// bits outside the rule's mask are those of a random packet).
func hitKeys(c *classifier, rules []*Rule, r *rand.Rand) []Key {
	keys := make([]Key, benchKeys)
	for i := range keys {
		k := randomPacketKey(r)
		rl := rules[r.IntN(len(rules))]
		rm := rl.Match()
		for w := 0; w < KeyWords; w++ {
			k.SetWord(w, k.Word(w)&^rm.Mask.Word(w)|rm.Value.Word(w))
		}
		if c.lookup(&k, nil) == nil {
			panic("hit key matches nothing")
		}
		keys[i] = k
	}
	return keys
}

// missKeys returns random packet keys that match no rule.
func missKeys(c *classifier, r *rand.Rand) []Key {
	keys := make([]Key, 0, benchKeys)
	for tries := 0; len(keys) < benchKeys; tries++ {
		if tries > 100*benchKeys {
			panic("cannot find keys that miss")
		}
		k := randomPacketKey(r)
		if c.lookup(&k, nil) == nil {
			keys = append(keys, k)
		}
	}
	return keys
}

// BenchmarkClassifierLookup measures one lookup, for hits and misses, with
// and without collecting the megaflow wildcards. It must not allocate.
func BenchmarkClassifierLookup(b *testing.B) {
	for _, nRules := range []int{1000, 10000, 100000} {
		for _, nMasks := range []int{10, 50} {
			r := rand.New(rand.NewPCG(uint64(nRules), uint64(nMasks)))
			c, rules := benchClassifier(nRules, nMasks, r)
			if got := len(c.subtables); got != nMasks {
				b.Fatalf("%d subtables, want %d", got, nMasks)
			}
			sets := []struct {
				name string
				keys []Key
			}{{"hit", hitKeys(c, rules, r)}, {"miss", missKeys(c, r)}}
			for _, s := range sets {
				for _, withWC := range []bool{false, true} {
					name := fmt.Sprintf("rules=%d/masks=%d/%s", nRules, nMasks, s.name)
					if withWC {
						name += "/wc"
					}
					keys := s.keys
					b.Run(name, func(b *testing.B) {
						b.ReportAllocs()
						var wc Key
						var wcp *Key
						if withWC {
							wcp = &wc
						}
						found := 0
						i := 0
						for b.Loop() {
							if c.lookup(&keys[i&(benchKeys-1)], wcp) != nil {
								found++
							}
							i++
						}
						// Keep the result alive and check the key set.
						if s.name == "hit" && found != i || s.name == "miss" && found != 0 {
							b.Fatalf("%s: %d of %d lookups found a rule", s.name, found, i)
						}
					})
				}
			}
		}
	}
}
