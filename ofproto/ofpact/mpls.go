package ofpact

// push_mpls, pop_mpls, set_mpls_ttl, dec_mpls_ttl, set_mpls_label,
// set_mpls_tc (OFPAT_PUSH_MPLS, OFPAT_POP_MPLS, OFPAT_SET_MPLS_TTL,
// OFPAT_DEC_MPLS_TTL, OFPAT11_SET_MPLS_LABEL/TC; NXAST_* in 1.0).

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		v, err := num(e, 16)
		if err != nil {
			return nil, err
		}
		if !flowtable.IsMPLS(uint16(v)) {
			return nil, bad(e, "%s: not a valid MPLS ethertype", e.Value)
		}
		return &flowtable.PushMPLS{EthType: uint16(v)}, nil
	}, "push_mpls")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		v, err := num(e, 16)
		if err != nil {
			return nil, err
		}
		return &flowtable.PopMPLS{EthType: uint16(v)}, nil
	}, "pop_mpls")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		v, err := num(e, 8)
		if err != nil {
			return nil, err
		}
		return &flowtable.SetMPLSTTL{TTL: uint8(v)}, nil
	}, "set_mpls_ttl")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) { return &flowtable.DecMPLSTTL{}, nil }, "dec_mpls_ttl")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		v, err := num(e, 20)
		if err != nil {
			return nil, err
		}
		return &flowtable.SetMPLSLabel{Label: uint32(v)}, nil
	}, "set_mpls_label")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		v, err := num(e, 3)
		if err != nil {
			return nil, err
		}
		return &flowtable.SetMPLSTC{TC: uint8(v)}, nil
	}, "set_mpls_tc")

	register(Def[*flowtable.PushMPLS]{
		Format: func(b *strings.Builder, a *flowtable.PushMPLS, o *ofptext.PrintOptions) {
			fmt.Fprintf(b, "push_mpls:%#x", a.EthType)
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.PushMPLS) ([]wire.Action, error) {
			return append(out, &wire.ActionPushMPLS{EthType: a.EthType}), nil
		},
	})
	register(Def[*flowtable.PopMPLS]{
		Format: func(b *strings.Builder, a *flowtable.PopMPLS, o *ofptext.PrintOptions) {
			fmt.Fprintf(b, "pop_mpls:0x%04x", a.EthType)
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.PopMPLS) ([]wire.Action, error) {
			return append(out, &wire.ActionPopMPLS{EthType: a.EthType}), nil
		},
		Check: func(c Checker, a *flowtable.PopMPLS) error { return c.needMPLS("pop_mpls") },
	})
	register(Def[*flowtable.SetMPLSTTL]{
		Format: func(b *strings.Builder, a *flowtable.SetMPLSTTL, o *ofptext.PrintOptions) {
			fmt.Fprintf(b, "set_mpls_ttl(%d)", a.TTL)
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.SetMPLSTTL) ([]wire.Action, error) {
			return append(out, &wire.ActionSetMplsTTL{TTL: a.TTL}), nil
		},
		Check: func(c Checker, a *flowtable.SetMPLSTTL) error { return c.needMPLS("set_mpls_ttl") },
	})
	register(Def[*flowtable.DecMPLSTTL]{
		Format: func(b *strings.Builder, a *flowtable.DecMPLSTTL, o *ofptext.PrintOptions) {
			b.WriteString("dec_mpls_ttl")
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.DecMPLSTTL) ([]wire.Action, error) {
			return append(out, &wire.ActionDecMplsTTL{}), nil
		},
		Check: func(c Checker, a *flowtable.DecMPLSTTL) error { return c.needMPLS("dec_mpls_ttl") },
	})
	// set_mpls_label and set_mpls_tc exist on the wire in 1.0 (Nicira)
	// and 1.1; from 1.2 on OVS sends them as set_field, and prints them so
	// after the trip.
	register(Def[*flowtable.SetMPLSLabel]{
		Format: func(b *strings.Builder, a *flowtable.SetMPLSLabel, o *ofptext.PrintOptions) {
			formatMPLSSet(b, o, flowtable.FieldMPLSLabel, uint64(a.Label))
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.SetMPLSLabel) ([]wire.Action, error) {
			return t.mplsSet(out, &wire.ActionSetMplsLabel{Label: a.Label}, flowtable.FieldMPLSLabel, uint64(a.Label))
		},
		Check: func(c Checker, a *flowtable.SetMPLSLabel) error { return c.needMPLS("set_mpls_label") },
	})
	register(Def[*flowtable.SetMPLSTC]{
		Format: func(b *strings.Builder, a *flowtable.SetMPLSTC, o *ofptext.PrintOptions) {
			formatMPLSSet(b, o, flowtable.FieldMPLSTC, uint64(a.TC))
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.SetMPLSTC) ([]wire.Action, error) {
			return t.mplsSet(out, &wire.ActionSetMplsTC{TC: a.TC}, flowtable.FieldMPLSTC, uint64(a.TC))
		},
		Check: func(c Checker, a *flowtable.SetMPLSTC) error { return c.needMPLS("set_mpls_tc") },
	})

	fromWire(func(t Decoder, a *wire.ActionPushMPLS) (flowtable.Action, error) {
		if !flowtable.IsMPLS(a.EthType) {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "push_mpls ethertype %#x is not MPLS", a.EthType)
		}
		return &flowtable.PushMPLS{EthType: a.EthType}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionPopMPLS) (flowtable.Action, error) {
		return &flowtable.PopMPLS{EthType: a.EthType}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetMplsTTL) (flowtable.Action, error) {
		return &flowtable.SetMPLSTTL{TTL: a.TTL}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionDecMplsTTL) (flowtable.Action, error) {
		return &flowtable.DecMPLSTTL{}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetMplsLabel) (flowtable.Action, error) {
		if a.Label > 0xfffff {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "set_mpls_label %d does not fit in 20 bits", a.Label)
		}
		return &flowtable.SetMPLSLabel{Label: a.Label}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetMplsTC) (flowtable.Action, error) {
		if a.TC > 7 {
			return nil, t.err(wire.OFPBAC_BAD_ARGUMENT, "set_mpls_tc %d does not fit in 3 bits", a.TC)
		}
		return &flowtable.SetMPLSTC{TC: a.TC}, nil
	})
}

// formatMPLSSet prints set_mpls_label(N) / set_mpls_tc(N) in 1.0 and the
// set_field they become on the 1.2+ wire otherwise.
func formatMPLSSet(b *strings.Builder, o *ofptext.PrintOptions, f *flowtable.Field, v uint64) {
	if o.Ver() == ofptext.OF10 {
		fmt.Fprintf(b, "set_%s(%d)", f.Name, v)
	} else {
		fmt.Fprintf(b, "set_field:%d->%s", v, f.Name)
	}
}

// mplsSet encodes set_mpls_label or set_mpls_tc: the 1.0 (Nicira) action
// legacy, else the set_field of f an OpenFlow 1.2+ switch gets.
func (t Encoder) mplsSet(out []wire.Action, legacy wire.Action, f *flowtable.Field, v uint64) ([]wire.Action, error) {
	if t.version == wire.OFP10 {
		return append(out, legacy), nil
	}
	val, mk := make([]byte, f.Bytes), make([]byte, f.Bytes)
	ofpfield.PutU64(val, v)
	ofpfield.FillFieldMask(f, mk)
	return t.setField(out, &flowtable.SetField{Field: f, Value: val, Mask: mk})
}

// needMPLS: the MPLS actions other than push_mpls need an MPLS packet
// (ofpacts_check: inconsistent_match).
func (c Checker) needMPLS(action string) error {
	if !c.Flow.Match.PrereqOK(flowtable.PrereqMPLS) {
		return invalid(flowtable.MatchInconsistent, action, "%s needs an MPLS packet (dl_type=0x8847 or 0x8848 in the match or after push_mpls)", action)
	}
	return nil
}

// after returns the checker for the actions that follow a: push_mpls and
// pop_mpls change the ethertype the later actions see, as ofpacts_check
// updates its flow.
func (c Checker) after(a flowtable.Action) Checker {
	var t uint16
	switch a := a.(type) {
	case *flowtable.PushMPLS:
		t = a.EthType
	case *flowtable.PopMPLS:
		t = a.EthType
	default:
		return c
	}
	fl := *c.Flow
	fl.Match.SetUint64(flowtable.FieldEthType, uint64(t))
	c.Flow = &fl
	return c
}
