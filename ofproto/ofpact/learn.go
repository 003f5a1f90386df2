package ofpact

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

// learn(...): add or change a flow from the packet (NXAST_LEARN).

func init() {
	keywords(parseLearn, "learn")
	register(Def[*flowtable.Learn]{
		Format: formatLearn,
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Learn) ([]wire.Action, error) {
			l, err := t.learn(a)
			if err != nil {
				return nil, err
			}
			return append(out, l), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionLearn) (flowtable.Action, error) { return t.learn(a) })
}

// parseLearn parses learn(...) (ovs-actions(7)).
func parseLearn(p Parser, e ofptext.KV) (flowtable.Action, error) {
	l := &flowtable.Learn{Table: 1, Priority: flowtable.DefaultPriority}
	for _, part := range ofptext.SplitTop(e.Value) {
		part = strings.TrimSpace(part)
		pos := e.ValPos + strings.Index(e.Value, part)
		bad := func(format string, args ...any) error { return ofptext.ErrAt(pos, "learn", format, args...) }
		k, v, hasVal := strings.Cut(part, "=")
		num := func(bits int) (uint64, error) {
			x, err := ofptext.ParseNum(v, bits)
			if err != nil {
				return 0, bad("%s: %v", k, err)
			}
			return x, nil
		}
		var err error
		var x uint64
		switch {
		case k == "table" && hasVal:
			x, err = num(8)
			l.Table = uint8(x)
		case k == "priority" && hasVal:
			x, err = num(16)
			l.Priority = uint16(x)
		case k == "idle_timeout" && hasVal:
			x, err = num(16)
			l.IdleTimeout = uint16(x)
		case k == "hard_timeout" && hasVal:
			x, err = num(16)
			l.HardTimeout = uint16(x)
		case k == "fin_idle_timeout" && hasVal:
			x, err = num(16)
			l.FinIdle = uint16(x)
		case k == "fin_hard_timeout" && hasVal:
			x, err = num(16)
			l.FinHard = uint16(x)
		case k == "cookie" && hasVal:
			l.Cookie, err = num(64)
		case k == "limit" && hasVal:
			x, err = num(32)
			l.Limit = uint32(x)
		case k == "send_flow_rem" && !hasVal:
			l.Flags |= flowtable.LearnSendFlowRem
		case k == "delete_learned" && !hasVal:
			l.Flags |= flowtable.LearnDeleteLearned
		case k == "result_dst" && hasVal:
			r, perr := ofptext.ParseSubfield(v, p.TLV)
			if perr != nil {
				return nil, bad("%v", perr)
			}
			l.ResultDst = r
			l.Flags |= flowtable.LearnWriteResult
		default:
			spec, perr := parseLearnSpec(part, p)
			if perr != nil {
				return nil, bad("%v", perr)
			}
			l.Specs = append(l.Specs, spec)
		}
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

func parseLearnSpec(s string, p Parser) (flowtable.LearnSpec, error) {
	var sp flowtable.LearnSpec
	switch {
	case strings.HasPrefix(s, "load:"):
		sp.Kind = flowtable.LearnLoad
		src, dst, ok := strings.Cut(s[5:], "->")
		if !ok {
			return sp, fmt.Errorf("%q: missing `->'", s)
		}
		d, err := ofptext.ParseSubfield(dst, p.TLV)
		if err != nil {
			return sp, err
		}
		sp.Dst, sp.NBits = d, d.NBits
		return sp, learnSource(&sp, s, src, p)
	case strings.HasPrefix(s, "output:"):
		r, err := ofptext.ParseSubfield(s[7:], p.TLV)
		if err != nil {
			return sp, err
		}
		sp.Kind, sp.Src, sp.NBits = flowtable.LearnOutput, r, r.NBits
		return sp, nil
	}
	sp.Kind = flowtable.LearnMatch
	dstStr, srcStr, hasSrc := strings.Cut(s, "=")
	if hasSrc && !strings.Contains(dstStr, "[") {
		// field=value: an immediate match on the whole field.
		f := flowtable.FieldByName(dstStr)
		if f == nil {
			f = flowtable.FieldByNXM(dstStr)
		}
		if f == nil {
			return sp, fmt.Errorf("%s: unknown field", dstStr)
		}
		f, err := p.TLV.Resolve(f)
		if err != nil {
			return sp, err
		}
		if !strings.Contains(srcStr, "[") {
			v, _, err := ofptext.ParseFieldValue(f, srcStr, p.Ports)
			if err != nil {
				return sp, err
			}
			sp.Dst, sp.NBits = flowtable.Whole(f), f.Bits
			sp.Imm = trimImm(v, f.Bits)
			sp.ImmText = true
			return sp, nil
		}
	}
	d, err := ofptext.ParseSubfield(dstStr, p.TLV)
	if err != nil {
		return sp, err
	}
	sp.Dst, sp.NBits = d, d.NBits
	if !hasSrc {
		sp.Src = d
		return sp, nil
	}
	return sp, learnSource(&sp, s, srcStr, p)
}

// learnSource parses the source of a learn spec whose destination is set:
// an immediate number or a subfield as wide as the destination.
func learnSource(sp *flowtable.LearnSpec, spec, src string, p Parser) error {
	if src != "" && src[0] >= '0' && src[0] <= '9' {
		imm, err := ofptext.ParseIntBytes(src, (sp.Dst.NBits+7)/8)
		if err != nil {
			return err
		}
		sp.Imm = imm
		return nil
	}
	r, err := ofptext.ParseSubfield(src, p.TLV)
	if err != nil {
		return err
	}
	if r.NBits != sp.Dst.NBits {
		return fmt.Errorf("%q: source is %d bits, destination %d bits", spec, r.NBits, sp.Dst.NBits)
	}
	sp.Src = r
	return nil
}

// trimImm keeps the (bits+7)/8 low-order bytes of a field value.
func trimImm(v []byte, bits int) []byte {
	n := (bits + 7) / 8
	if n >= len(v) {
		return v
	}
	return v[len(v)-n:]
}

func formatLearn(b *strings.Builder, l *flowtable.Learn, o *ofptext.PrintOptions) {
	fmt.Fprintf(b, "learn(table=%d", l.Table)
	if l.IdleTimeout != 0 {
		fmt.Fprintf(b, ",idle_timeout=%d", l.IdleTimeout)
	}
	if l.HardTimeout != 0 {
		fmt.Fprintf(b, ",hard_timeout=%d", l.HardTimeout)
	}
	if l.FinIdle != 0 {
		fmt.Fprintf(b, ",fin_idle_timeout=%d", l.FinIdle)
	}
	if l.FinHard != 0 {
		fmt.Fprintf(b, ",fin_hard_timeout=%d", l.FinHard)
	}
	if l.Priority != flowtable.DefaultPriority {
		fmt.Fprintf(b, ",priority=%d", l.Priority)
	}
	if l.Flags&flowtable.LearnSendFlowRem != 0 {
		b.WriteString(",send_flow_rem")
	}
	if l.Flags&flowtable.LearnDeleteLearned != 0 {
		b.WriteString(",delete_learned")
	}
	if l.Cookie != 0 {
		fmt.Fprintf(b, ",cookie=%#x", l.Cookie)
	}
	if l.Limit != 0 {
		fmt.Fprintf(b, ",limit=%d", l.Limit)
	}
	if l.Flags&flowtable.LearnWriteResult != 0 {
		b.WriteString(",result_dst=" + ofptext.SubfieldString(l.ResultDst))
	}
	for _, s := range l.Specs {
		b.WriteByte(',')
		switch {
		case s.Kind == flowtable.LearnMatch && s.Imm != nil:
			if s.Dst.IsWhole() {
				val := make([]byte, s.Dst.Field.Bytes)
				copy(val[len(val)-len(s.Imm):], s.Imm)
				b.WriteString(s.Dst.Field.Name + "=" + ofptext.FieldValueString(s.Dst.Field, val, nil))
			} else {
				b.WriteString(ofptext.SubfieldString(s.Dst) + "=")
				ofptext.PutHex(b, s.Imm)
			}
		case s.Kind == flowtable.LearnMatch:
			b.WriteString(ofptext.SubfieldString(s.Dst))
			if s.Src.Field != s.Dst.Field || s.Src.Ofs != s.Dst.Ofs {
				b.WriteString("=" + ofptext.SubfieldString(s.Src))
			}
		case s.Kind == flowtable.LearnLoad && s.Imm != nil:
			b.WriteString("load:")
			ofptext.PutHex(b, s.Imm)
			b.WriteString("->" + ofptext.SubfieldString(s.Dst))
		case s.Kind == flowtable.LearnLoad:
			b.WriteString("load:" + ofptext.SubfieldString(s.Src) + "->" + ofptext.SubfieldString(s.Dst))
		case s.Kind == flowtable.LearnOutput:
			b.WriteString("output:" + ofptext.SubfieldString(s.Src))
		}
	}
	b.WriteByte(')')
}

// learnFlags and learnKinds pair the model's learn flags and spec kinds
// with NXAST_LEARN's (a spec of another kind is an output).
var (
	learnFlags = []struct {
		model flowtable.LearnFlags
		wire  uint16
	}{
		{flowtable.LearnSendFlowRem, wire.NX_LEARN_F_SEND_FLOW_REM},
		{flowtable.LearnDeleteLearned, wire.NX_LEARN_F_DELETE_LEARNED},
	}
	learnKinds = []struct {
		model flowtable.LearnSpecKind
		wire  uint16
	}{
		{flowtable.LearnMatch, wire.NX_LEARN_DST_MATCH},
		{flowtable.LearnLoad, wire.NX_LEARN_DST_LOAD},
	}
)

func (t Encoder) learn(l *flowtable.Learn) (*wire.ActionLearn, error) {
	if l.Limit != 0 || l.Flags&flowtable.LearnWriteResult != 0 {
		return nil, fmt.Errorf("learn with limit or result_dst needs NXAST_LEARN2, which the wire codec does not model")
	}
	a := &wire.ActionLearn{IdleTimeout: l.IdleTimeout, HardTimeout: l.HardTimeout, Priority: l.Priority,
		Cookie: l.Cookie, TableID: l.Table, FinIdleTimeout: l.FinIdle, FinHardTimeout: l.FinHard}
	for _, f := range learnFlags {
		if l.Flags&f.model != 0 {
			a.Flags |= f.wire
		}
	}
	a.Specs = make([]wire.LearnSpec, len(l.Specs))
	for i := range l.Specs {
		s := &l.Specs[i]
		ws := &a.Specs[i]
		ws.NBits = uint16(s.NBits)
		ws.Dst = wire.NX_LEARN_DST_OUTPUT
		for _, k := range learnKinds {
			if k.model == s.Kind {
				ws.Dst = k.wire
			}
		}
		if s.Imm != nil {
			ws.SrcImm = true
			nb := 2 * ((s.NBits + 15) / 16)
			ws.Imm = make([]byte, nb)
			src := s.Imm
			if len(src) > nb {
				src = src[len(src)-nb:]
			}
			copy(ws.Imm[nb-len(src):], src)
		} else {
			ref, err := t.nxRef(s.Src.Field)
			if err != nil {
				return nil, fmt.Errorf("learn spec %d source: %w", i, err)
			}
			ws.Src, ws.SrcOfs = ref, uint16(s.Src.Ofs)
		}
		if s.Kind != flowtable.LearnOutput {
			ref, err := t.nxRef(s.Dst.Field)
			if err != nil {
				return nil, fmt.Errorf("learn spec %d destination: %w", i, err)
			}
			ws.DstRef, ws.DstOfs = ref, uint16(s.Dst.Ofs)
		}
	}
	return a, nil
}

func (t Decoder) learn(a *wire.ActionLearn) (flowtable.Action, error) {
	l := &flowtable.Learn{
		Table: a.TableID, Priority: a.Priority, IdleTimeout: a.IdleTimeout, HardTimeout: a.HardTimeout,
		FinIdle: a.FinIdleTimeout, FinHard: a.FinHardTimeout, Cookie: a.Cookie,
	}
	for _, f := range learnFlags {
		if a.Flags&f.wire != 0 {
			l.Flags |= f.model
		}
	}
	l.Specs = make([]flowtable.LearnSpec, len(a.Specs))
	for i := range a.Specs {
		ws := &a.Specs[i]
		s := &l.Specs[i]
		s.NBits = int(ws.NBits)
		s.Kind = flowtable.LearnOutput
		for _, k := range learnKinds {
			if k.wire == ws.Dst {
				s.Kind = k.model
			}
		}
		if ws.SrcImm {
			// The wire immediate is 2*ceil(n/16) bytes; the model keeps
			// ceil(n/8) low-order bytes.
			nb := (s.NBits + 7) / 8
			if nb > len(ws.Imm) {
				return nil, t.err(wire.OFPBAC_BAD_LEN, "learn spec %d: short immediate", i)
			}
			s.Imm = append([]byte(nil), ws.Imm[len(ws.Imm)-nb:]...)
		} else {
			r, err := t.fieldRange(ws.Src, int(ws.SrcOfs), s.NBits)
			if err != nil {
				return nil, fmt.Errorf("learn spec %d source: %w", i, err)
			}
			s.Src = r
		}
		if s.Kind != flowtable.LearnOutput {
			r, err := t.fieldRange(ws.DstRef, int(ws.DstOfs), s.NBits)
			if err != nil {
				return nil, fmt.Errorf("learn spec %d destination: %w", i, err)
			}
			s.Dst = r
			if s.Kind == flowtable.LearnLoad && !r.Field.Writable {
				return nil, t.err(wire.OFPBAC_BAD_SET_ARGUMENT, "learn spec %d: %s is read-only", i, r.Field.Name)
			}
			s.ImmText = ws.SrcImm && s.Kind == flowtable.LearnMatch && r.IsWhole()
		}
	}
	return l, nil
}
