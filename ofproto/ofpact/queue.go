package ofpact

// enqueue, set_queue, pop_queue: output queues (OFPAT10_ENQUEUE;
// OFPAT_SET_QUEUE, NXAST_SET_QUEUE in 1.0; NXAST_POP_QUEUE).

import (
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofpfield"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(parseEnqueue, "enqueue")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) {
		id, err := num(e, 32)
		if err != nil {
			return nil, err
		}
		return &flowtable.SetQueue{ID: uint32(id)}, nil
	}, "set_queue")
	keywords(func(p Parser, e ofptext.KV) (flowtable.Action, error) { return &flowtable.PopQueue{}, nil }, "pop_queue")
	register(Def[*flowtable.Enqueue]{
		Format: func(b *strings.Builder, a *flowtable.Enqueue, o *ofptext.PrintOptions) {
			fmt.Fprintf(b, "enqueue:%s:%d", ofptext.PortString(a.Port, o), a.Queue)
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Enqueue) ([]wire.Action, error) {
			if t.version == wire.OFP10 {
				return append(out, &wire.ActionEnqueue{Port: uint16(a.Port), QueueID: a.Queue}), nil
			}
			// encode_ENQUEUE for 1.1+: set_queue, output, pop_queue.
			return append(out, &wire.ActionSetQueue{QueueID: a.Queue},
				&wire.ActionOutput{Port: ofpfield.PortToOFP11(a.Port), MaxLen: 0xffff}, &wire.ActionPopQueue{}), nil
		},
	})
	register(Def[*flowtable.SetQueue]{
		Format: func(b *strings.Builder, a *flowtable.SetQueue, o *ofptext.PrintOptions) {
			fmt.Fprintf(b, "set_queue:%d", a.ID)
		},
		Encode: func(t Encoder, out []wire.Action, a *flowtable.SetQueue) ([]wire.Action, error) {
			return append(out, &wire.ActionSetQueue{QueueID: a.ID}), nil
		},
	})
	register(Def[*flowtable.PopQueue]{
		Format: func(b *strings.Builder, a *flowtable.PopQueue, o *ofptext.PrintOptions) { b.WriteString("pop_queue") },
		Encode: func(t Encoder, out []wire.Action, a *flowtable.PopQueue) ([]wire.Action, error) {
			return append(out, &wire.ActionPopQueue{}), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionEnqueue) (flowtable.Action, error) {
		return &flowtable.Enqueue{Port: uint32(a.Port), Queue: a.QueueID}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionSetQueue) (flowtable.Action, error) {
		return &flowtable.SetQueue{ID: a.QueueID}, nil
	})
	fromWire(func(t Decoder, a *wire.ActionPopQueue) (flowtable.Action, error) { return &flowtable.PopQueue{}, nil })
}

func parseEnqueue(p Parser, e ofptext.KV) (flowtable.Action, error) {
	ps, qs, ok := strings.Cut(e.Value, ":")
	if !ok {
		ps, qs, ok = strings.Cut(e.Value, ",")
	}
	if !ok {
		return nil, bad(e, "syntax is enqueue:PORT:QUEUE")
	}
	port, err := ofptext.ParsePortName(ps, p.Ports)
	if err != nil {
		return nil, wrap(e, err)
	}
	q, err := ofptext.ParseNum(qs, 32)
	if err != nil {
		return nil, wrap(e, err)
	}
	return &flowtable.Enqueue{Port: port, Queue: uint32(q)}, nil
}
