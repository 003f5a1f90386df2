package ofpact

// push:SRC[..] and pop:DST[..]: the field stack (NXAST_STACK_PUSH,
// NXAST_STACK_POP).

import (
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(parseStack(func(r flowtable.FieldRange) flowtable.Action { return &flowtable.StackPush{Src: r} }), "push")
	keywords(parseStack(func(r flowtable.FieldRange) flowtable.Action { return &flowtable.StackPop{Dst: r} }), "pop")
	register(Def[*flowtable.StackPush]{
		Format: func(b *strings.Builder, a *flowtable.StackPush, o *ofptext.PrintOptions) {
			b.WriteString("push:" + ofptext.SubfieldString(a.Src))
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.StackPush) ([]wire.Action, error) {
			return t.appendStack(out, a.Src, false)
		},
		Check: func(c Checker, a *flowtable.StackPush) error { return checkSource(c, "push", a.Src) },
	})
	register(Def[*flowtable.StackPop]{
		Format: func(b *strings.Builder, a *flowtable.StackPop, o *ofptext.PrintOptions) {
			b.WriteString("pop:" + ofptext.SubfieldString(a.Dst))
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.StackPop) ([]wire.Action, error) {
			return t.appendStack(out, a.Dst, true)
		},
		Check: func(c Checker, a *flowtable.StackPop) error { return checkDestination(c, "pop", a.Dst) },
	})
	fromWire(func(t Decoder, a *wire.ActionStack) (flowtable.Action, error) {
		r, err := t.fieldRange(a.Field, int(a.Ofs), int(a.NBits))
		if err != nil {
			return nil, err
		}
		if a.Pop {
			return &flowtable.StackPop{Dst: r}, nil
		}
		return &flowtable.StackPush{Src: r}, nil
	})
}

// parseStack parses the subfield of push/pop (nxm_parse_stack_action)
// into the action made by mk.
func parseStack(mk func(flowtable.FieldRange) flowtable.Action) ParseFunc {
	return func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		r, err := ofptext.ParseSubfield(e.Value, p.TLV)
		if err != nil {
			return nil, wrap(e, err)
		}
		return mk(r), nil
	}
}

func (t Encoder) appendStack(out []wire.Action, r flowtable.FieldRange, pop bool) ([]wire.Action, error) {
	ref, err := t.nxRef(r.Field)
	if err != nil {
		return nil, err
	}
	return append(out, &wire.ActionStack{Pop: pop, Field: ref, Ofs: uint16(r.Ofs), NBits: uint16(r.NBits)}), nil
}

// checkSource: a subfield an action reads needs its prerequisites in the
// match (mf_check_src).
func checkSource(c Checker, action string, r flowtable.FieldRange) error {
	if !c.Flow.Match.PrereqOK(r.Field.Prereq) {
		return invalid(flowtable.MatchInconsistent, r.Field.Name, "%s: %s lacks correct prerequisites (needs %s in the match)", action, r.Field.Name, r.Field.Prereq)
	}
	return nil
}

// checkDestination: a subfield an action writes needs its prerequisites
// and must be writable (mf_check_dst).
func checkDestination(c Checker, action string, r flowtable.FieldRange) error {
	if err := checkSource(c, action, r); err != nil {
		return err
	}
	if !r.Field.Writable {
		return invalid(flowtable.ReadOnlyField, r.Field.Name, "%s: destination %s is read-only", action, r.Field.Name)
	}
	return nil
}
