package ofpact

// move: copy a subfield to another (NXAST_REG_MOVE in OpenFlow 1.0/1.3,
// OFPAT_COPY_FIELD in 1.5).

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(parseMove, "move")
	register(Def[*flowtable.Move]{
		Format: func(b *strings.Builder, a *flowtable.Move, o *ofptext.PrintOptions) {
			b.WriteString("move:")
			b.WriteString(ofptext.SubfieldString(a.Src))
			b.WriteString("->")
			b.WriteString(ofptext.SubfieldString(a.Dst))
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Move) ([]wire.Action, error) {
			src, err := t.ref(a.Src.Field, moveRefVersion(t.version))
			if err != nil {
				return nil, err
			}
			dst, err := t.ref(a.Dst.Field, moveRefVersion(t.version))
			if err != nil {
				return nil, err
			}
			return append(out, &wire.ActionMove{Src: src, Dst: dst, NBits: uint16(a.Src.NBits), SrcOfs: uint16(a.Src.Ofs), DstOfs: uint16(a.Dst.Ofs)}), nil
		},
		Check: checkMove,
	})
	fromWire(func(t Decoder, a *wire.ActionMove) (flowtable.Action, error) {
		src, err := t.fieldRange(a.Src, int(a.SrcOfs), int(a.NBits))
		if err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		dst, err := t.fieldRange(a.Dst, int(a.DstOfs), int(a.NBits))
		if err != nil {
			return nil, fmt.Errorf("destination: %w", err)
		}
		return &flowtable.Move{Src: src, Dst: dst}, nil
	})
}

func parseMove(p Parser, e ofptext.KV) (flowtable.Action, error) {
	ss, ds, ok := strings.Cut(e.Value, "->")
	if !ok {
		return nil, bad(e, "%q: missing `->'", e.Value)
	}
	src, err := ofptext.ParseSubfield(ss, p.TLV)
	if err != nil {
		return nil, wrap(e, err)
	}
	dst, err := ofptext.ParseSubfield(ds, p.TLV)
	if err != nil {
		return nil, wrap(e, err)
	}
	if src.NBits != dst.NBits {
		return nil, bad(e, "source field is %d bits wide but destination is %d bits wide", src.NBits, dst.NBits)
	}
	return &flowtable.Move{Src: src, Dst: dst}, nil
}

// checkMove: both fields' prerequisites must be in the match and the
// destination writable (nxm_reg_move_check).
func checkMove(c Checker, a *flowtable.Move) error {
	m := &c.Flow.Match
	if !m.PrereqOK(a.Src.Field.Prereq) {
		return invalid(flowtable.MatchInconsistent, a.Src.Field.Name, "move: source %s lacks correct prerequisites (needs %s in the match)", a.Src.Field.Name, a.Src.Field.Prereq)
	}
	if !m.PrereqOK(a.Dst.Field.Prereq) {
		return invalid(flowtable.MatchInconsistent, a.Dst.Field.Name, "move: destination %s lacks correct prerequisites (needs %s in the match)", a.Dst.Field.Name, a.Dst.Field.Prereq)
	}
	if !a.Dst.Field.Writable {
		return invalid(flowtable.ReadOnlyField, a.Dst.Field.Name, "move: destination %s is read-only", a.Dst.Field.Name)
	}
	return c.checkCTField(a.Dst.Field)
}

// moveRefVersion: NXAST_REG_MOVE carries NXM headers (version 0 = oldest
// code); OFPAT_COPY_FIELD in 1.5 the version's OXM headers.
func moveRefVersion(v uint8) uint8 {
	if v >= wire.OFP15 {
		return v
	}
	return 0
}
