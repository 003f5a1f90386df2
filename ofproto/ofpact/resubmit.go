package ofpact

// resubmit: re-run the lookup in a table (NXAST_RESUBMIT,
// NXAST_RESUBMIT_TABLE, NXAST_RESUBMIT_TABLE_CT).

import (
	"strconv"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/ofptext"
	"github.com/govs-project/govs/ofproto/wire"
)

func init() {
	keywords(parseResubmit, "resubmit")
	register(Def[*flowtable.Resubmit]{
		Format: formatResubmit,
		Encode: func(t Encoder, out []wire.Action, a *flowtable.Resubmit) ([]wire.Action, error) {
			return append(out, &wire.ActionResubmit{InPort: uint16(a.InPort), Table: a.Table, WithCT: a.CT}), nil
		},
	})
	fromWire(func(t Decoder, a *wire.ActionResubmit) (flowtable.Action, error) {
		return &flowtable.Resubmit{InPort: uint32(a.InPort), Table: a.Table, CT: a.WithCT}, nil
	})
}

func parseResubmit(p Parser, e ofptext.KV) (flowtable.Action, error) {
	r := &flowtable.Resubmit{InPort: flowtable.PortInPort, Table: flowtable.TableNone}
	if e.Delim == ':' {
		port, err := ofptext.ParsePortName(e.Value, p.Ports)
		if err != nil {
			return nil, wrap(e, err)
		}
		r.InPort = port
		return r, nil
	}
	parts := strings.Split(e.Value, ",")
	if len(parts) > 3 {
		return nil, bad(e, "syntax is resubmit([PORT][,TABLE][,ct])")
	}
	if parts[0] != "" {
		port, err := ofptext.ParsePortName(parts[0], p.Ports)
		if err != nil {
			return nil, wrap(e, err)
		}
		r.InPort = port
	}
	if len(parts) > 1 && parts[1] != "" {
		t, err := table(e, parts[1])
		if err != nil {
			return nil, err
		}
		r.Table = t
	}
	if len(parts) > 2 {
		if parts[2] != "ct" {
			return nil, bad(e, "%q: unknown resubmit option (only \"ct\")", parts[2])
		}
		r.CT = true
	}
	if r.InPort == flowtable.PortInPort && r.Table == flowtable.TableNone {
		return nil, bad(e, "at least one of port and table must be specified")
	}
	return r, nil
}

func formatResubmit(b *strings.Builder, a *flowtable.Resubmit, o *ofptext.PrintOptions) {
	if a.InPort != flowtable.PortInPort && a.Table == flowtable.TableNone && !a.CT {
		b.WriteString("resubmit:")
		b.WriteString(ofptext.PortString(a.InPort, o))
		return
	}
	b.WriteString("resubmit(")
	if a.InPort != flowtable.PortInPort {
		b.WriteString(ofptext.PortString(a.InPort, o))
	}
	b.WriteByte(',')
	if a.Table != flowtable.TableNone {
		b.WriteString(strconv.Itoa(int(a.Table)))
	}
	if a.CT {
		b.WriteString(",ct")
	}
	b.WriteByte(')')
}
