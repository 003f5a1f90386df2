package appctl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

func (a *App) registerTrace() {
	a.Server.Register("ofproto/trace", "{[dp_name] odp_flow | bridge br_flow} [OPTIONS...] [-generate|packet]", 1, -1, a.ofprotoTrace)
}

// TraceRequest is a parsed ofproto/trace command line.
type TraceRequest struct {
	Bridge string
	Flow   string
	CtNext []uint32
}

// ParseTraceArgs reads ofproto/trace's arguments as OVS does
// (parse_flow_and_packet): options anywhere, then "bridge br_flow".
func ParseTraceArgs(args []string) (TraceRequest, error) {
	var r TraceRequest
	var pos []string
	for i := 0; i < len(args); i++ {
		x := args[i]
		switch {
		case x == "-generate" || x == "--generate":
		case x == "--l7" || x == "--l7-len" || x == "--ct-next":
			if i+1 >= len(args) {
				return r, fmt.Errorf("Missing argument for option %s", x)
			}
			i++
			if x == "--ct-next" {
				st, err := ParseCtState(args[i])
				if err != nil {
					return r, err
				}
				r.CtNext = append(r.CtNext, st)
			}
		case strings.HasPrefix(x, "-"):
			return r, fmt.Errorf("%s: unknown option", x)
		case len(pos) >= 3:
			return r, fmt.Errorf("too many arguments")
		default:
			pos = append(pos, x)
		}
	}
	switch len(pos) {
	case 1:
		return r, fmt.Errorf("%s: datapath flows are not supported by govs (or the bridge name was omitted)", pos[0])
	case 2:
		r.Bridge, r.Flow = pos[0], pos[1]
	default:
		return r, fmt.Errorf("packet arguments are not supported by govs; use -generate")
	}
	return r, nil
}

var ctFlags = map[string]uint32{"new": flowtable.CtStateNew, "est": flowtable.CtStateEst, "rel": 0x04, "rpl": 0x08,
	"inv": 0x10, "trk": flowtable.CtStateTrk, "snat": 0x40, "dnat": 0x80}

// ParseCtState reads a --ct-next state: flag names separated by ',' or
// '|' or given as +flag ("trk,new", "trk|est", "+trk+new").
func ParseCtState(s string) (uint32, error) {
	var st uint32
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '|' || r == '+' }) {
		f, ok := ctFlags[w]
		if !ok {
			if n, err := strconv.ParseUint(w, 0, 32); err == nil {
				st |= uint32(n)
				continue
			}
			return 0, fmt.Errorf("%s: unknown connection tracking state flag", w)
		}
		st |= f
	}
	if st&^flowtable.CtStateTrk != 0 && st&flowtable.CtStateTrk == 0 {
		return 0, fmt.Errorf("ct_state %s: flags need trk", s)
	}
	return st, nil
}

func (a *App) ofprotoTrace(args []string) (string, error) {
	r, err := ParseTraceArgs(args)
	if err != nil {
		return "", err
	}
	dp, ok := a.bridge(r.Bridge)
	if !ok {
		return "", fmt.Errorf("%s: unknown bridge", r.Bridge)
	}
	return Trace(dp, r, a.recirc.Add)
}

// Trace runs a parsed ofproto/trace on a bridge; nextRecirc(1) allocates
// recirc ids.
func Trace(dp *datapath.Bridge, r TraceRequest, nextRecirc func(uint32) uint32) (string, error) {
	names := map[string]uint32{}
	for _, pi := range dp.Ports() {
		names[pi.Name] = pi.OFPort
	}
	return TracePipeline(dp.Pipeline(), dp.Name(), names, r, nextRecirc)
}

// TracePipeline traces on a pipeline whose bridge is named bridge, with
// port names for in_port=NAME: ovs-appctl ofproto/trace on the daemon
// and `govs trace` offline both print this.
func TracePipeline(p *flowtable.Pipeline, bridge string, names map[string]uint32, r TraceRequest, nextRecirc func(uint32) uint32) (string, error) {
	key, err := flowtext.ParsePacket(strings.TrimSuffix(r.Flow, ","), &flowtext.ParseOptions{TLV: p.TLV, Ports: names})
	if err != nil {
		return "", fmt.Errorf("Bad openflow flow syntax: %v", err)
	}
	t := &flowtext.OVSTrace{
		Bridge:       bridge,
		CtNext:       r.CtNext,
		NextRecircID: func() uint32 { return nextRecirc(1) },
		DatapathPort: func(port uint32) string { return strconv.FormatUint(uint64(odpPort(port)), 10) },
		Options:      &flowtext.PrintOptions{Version: flowtext.OF15, TLV: p.TLV},
	}
	return t.Run(p, key)
}
