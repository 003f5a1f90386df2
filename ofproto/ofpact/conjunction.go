package ofpact

// conjunction(id,k/n): a clause of a conjunctive match
// (NXAST_CONJUNCTION; the clause is 0-based on the wire).

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(parseConjunction, "conjunction")
	register(Def[*flowtable.Conjunction]{
		Format: func(b *strings.Builder, a *flowtable.Conjunction, o *ofptext.PrintOptions) {
			fmt.Fprintf(b, "conjunction(%d,%d/%d)", a.ID, a.Clause, a.NClauses)
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Conjunction) ([]wire.Action, error) {
			if a.Clause == 0 {
				return nil, fmt.Errorf("conjunction clause is 1-based")
			}
			return append(out, &wire.ActionConjunction{Clause: a.Clause - 1, NClauses: a.NClauses, ID: a.ID}), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionConjunction) (flowtable.Action, error) {
		return &flowtable.Conjunction{ID: a.ID, Clause: a.Clause + 1, NClauses: a.NClauses}, nil
	})
}

func parseConjunction(p Parser, e ofptext.KV) (flowtable.Action, error) {
	var id, k, n uint64
	is, rest, ok1 := strings.Cut(e.Value, ",")
	ks, ns, ok2 := strings.Cut(rest, "/")
	var err1, err2, err3 error
	id, err1 = ofptext.ParseNum(strings.TrimSpace(is), 32)
	k, err2 = ofptext.ParseNum(strings.TrimSpace(ks), 8)
	n, err3 = ofptext.ParseNum(strings.TrimSpace(ns), 8)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || err3 != nil {
		return nil, bad(e, "\"conjunction\" syntax is \"conjunction(id,i/n)\"")
	}
	if n < 2 || n > 64 {
		return nil, bad(e, "number of clauses %d out of range 2..64", n)
	}
	if k < 1 || k > n {
		return nil, bad(e, "clause index %d out of range 1..%d", k, n)
	}
	return &flowtable.Conjunction{ID: uint32(id), Clause: uint8(k), NClauses: uint8(n)}, nil
}

// checkConjunctionAlone: a flow with conjunction actions may only add
// notes (OVS ofpacts_verify).
func checkConjunctionAlone(fl *flowtable.Flow) error {
	conj := false
	for _, a := range fl.Actions {
		if _, ok := a.(*flowtable.Conjunction); ok {
			conj = true
			break
		}
	}
	if !conj {
		return nil
	}
	for _, a := range fl.Actions {
		switch a.(type) {
		case *flowtable.Conjunction, *flowtable.Note:
		default:
			return invalid(flowtable.ConjunctionMixed, "conjunction", "\"conjunction\" actions may be used along with \"note\" but not any other kind of action (such as the \"%s\" action used here)", a.Name())
		}
	}
	return nil
}
