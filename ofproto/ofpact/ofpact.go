// Package ofpact is the one home of every OpenFlow action govs knows, in
// the shape of Open vSwitch's lib/ofp-actions.c: each action (or family of
// closely related actions) has one file here that owns
//
//   - its ovs-actions(7) text syntax: the parser registered under its
//     keywords and the printer of its model type (as `ovs-ofctl dump-flows`
//     prints it per OpenFlow version),
//   - its wire encodings per OpenFlow version (1.0 with NXM, 1.3, 1.5;
//     standard and Nicira): which ofproto/wire action(s) the model action
//     becomes, and the model action each wire action decodes to,
//   - its validation against the flow it sits in (ofpacts_check).
//
// The registry replaces the switches that used to spread an action over
// five packages: text is looked up by keyword, printing, encoding and
// checking by the model type (flowtable.Action), decoding by the wire
// action type. The byte layout of each wire action stays in ofproto/wire
// (its raw action table is looked up by (version, type) and (vendor,
// subtype)); an action that wire only validates by type and length
// (wire.ActionRaw: its raw table lists every Nicira subtype of OVS 3.1) is
// read and written here by (vendor, subtype), as check_pkt_larger.go does.
// So a new Nicira action needs one file here, plus its model struct and
// execution in flowtable, which OVS keeps apart too (struct ofpact_* and
// ofproto-dpif-xlate.c).
//
// Dependencies run one way: ofpact imports flowtable (the model),
// ofproto/wire (wire actions), ofproto/ofptext (the lexical layer of the
// flow syntax) and ofproto/ofpfield (model/wire field mapping); it is
// imported by ofproto/flowtext (flows, groups), ofproto/translate
// (flow-mods, groups) and ofproto (validation of incoming flows).
package ofpact

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

// Rank orders instructions as OpenFlow requires (OVS ofpacts_verify):
// meter, apply-actions (every plain action), clear-actions, write-actions,
// write-metadata, goto-table.
type Rank int8

const (
	RankMeter Rank = iota - 1
	RankApply
	RankClear
	RankWrite
	RankWriteMetadata
	RankGoto
)

var rankNames = map[Rank]string{RankMeter: "meter", RankApply: "apply_actions", RankClear: "clear_actions",
	RankWrite: "write_actions", RankWriteMetadata: "write_metadata", RankGoto: "goto_table"}

// Def is what one model action type A needs besides its text parser and
// wire decoders (registered by keyword and by wire type).
type Def[A flowtable.Action] struct {
	// Format prints a as `ovs-ofctl dump-flows` does in o's version.
	Format func(b *strings.Builder, a A, o *ofptext.PrintOptions)
	// Encode appends the wire action(s) a travels as in t's version.
	Encode func(t Encoder, out []wire.Action, a A) ([]wire.Action, error)
	// Check validates a against its flow (nil: nothing to check).
	Check func(c Checker, a A) error
	// Rank is the instruction a belongs to (RankApply for plain actions).
	Rank Rank
}

// entry is a Def with the type parameter erased.
type entry struct {
	format func(b *strings.Builder, a flowtable.Action, o *ofptext.PrintOptions)
	encode func(t Encoder, out []wire.Action, a flowtable.Action) ([]wire.Action, error)
	check  func(c Checker, a flowtable.Action) error
	rank   Rank
}

// ParseFunc parses one action element of flow text (e.Key is the keyword).
type ParseFunc func(p Parser, e ofptext.KV) (flowtable.Action, error)

// DecodeFunc translates one decoded wire action into the model; a nil
// action with a nil error means the wire action has no model form.
type DecodeFunc func(t Decoder, a wire.Action) (flowtable.Action, error)

// The registries: text by keyword; model and wire types through a
// typeIndex (see typeindex.go) into the entries.
var (
	byKeyword = map[string]ParseFunc{}
	models    typeIndex
	entries   []*entry
	wires     typeIndex
	decoders  []DecodeFunc
	byRawCode = map[uint64]func(t Decoder, a *wire.ActionRaw) (flowtable.Action, error){}
)

// register adds the model action type A.
func register[A flowtable.Action](d Def[A]) {
	var zero A
	var a flowtable.Action = zero
	t := typeKey(a)
	if models.find(t) >= 0 {
		panic(fmt.Sprintf("ofpact: %T registered twice", zero))
	}
	e := &entry{rank: d.Rank}
	if d.Format != nil {
		e.format = func(b *strings.Builder, a flowtable.Action, o *ofptext.PrintOptions) { d.Format(b, a.(A), o) }
	}
	if d.Encode != nil {
		e.encode = func(t Encoder, out []wire.Action, a flowtable.Action) ([]wire.Action, error) {
			return d.Encode(t, out, a.(A))
		}
	}
	if d.Check != nil {
		e.check = func(c Checker, a flowtable.Action) error { return d.Check(c, a.(A)) }
	}
	models.add(t, int32(len(entries)))
	entries = append(entries, e)
}

// keywords registers the text parser of the action(s) spelled names.
func keywords(parse ParseFunc, names ...string) {
	for _, n := range names {
		if _, dup := byKeyword[n]; dup {
			panic("ofpact: keyword " + n + " registered twice")
		}
		byKeyword[n] = parse
	}
}

// fromWire registers the translation of the wire action type W.
func fromWire[W wire.Action](decode func(t Decoder, a W) (flowtable.Action, error)) {
	var zero W
	var a wire.Action = zero
	t := typeKey(a)
	if wires.find(t) >= 0 {
		panic(fmt.Sprintf("ofpact: %T registered twice", zero))
	}
	wires.add(t, int32(len(decoders)))
	decoders = append(decoders, func(d Decoder, a wire.Action) (flowtable.Action, error) { return decode(d, a.(W)) })
}

// fromRaw registers the translation of an action ofproto/wire validates
// but does not decode (wire.ActionRaw), by vendor (0: standard) and type.
func fromRaw(vendor uint32, code uint16, decode func(t Decoder, a *wire.ActionRaw) (flowtable.Action, error)) {
	byRawCode[uint64(vendor)<<16|uint64(code)] = decode
}

func lookup(a flowtable.Action) *entry {
	if i := models.find(typeKey(a)); i >= 0 {
		return entries[i]
	}
	return nil
}

// RankOf is the instruction a belongs to. An OpenFlow 1.5 meter action
// belongs to apply-actions (OVS ovs_instruction_type_from_ofpact_type).
func RankOf(a flowtable.Action) Rank { return rankOf(a, lookup(a)) }

// rankOf is RankOf with a's registry entry already looked up (nil: none).
func rankOf(a flowtable.Action, e *entry) Rank {
	if m, ok := a.(*flowtable.Meter); ok && m.Action {
		return RankApply
	}
	if e != nil {
		return e.rank
	}
	return RankApply
}

// Keywords lists the action keywords the text parser knows (for tests and
// documentation).
func Keywords() []string {
	out := make([]string, 0, len(byKeyword))
	for k := range byKeyword {
		out = append(out, k)
	}
	return out
}

func (r Rank) String() string {
	if n, ok := rankNames[r]; ok {
		return n
	}
	return fmt.Sprintf("rank(%d)", int(r))
}
