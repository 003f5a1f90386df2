package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/appctl"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/internal/unixctl"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// The demo packet: seed 001 §8, the frontend pod (port 49) opening TCP 80
// to the backendsvc service IP through worker 1's pipeline.
const demoPacket = "in_port=49,tcp,dl_src=be:2c:bf:e4:ec:c5,dl_dst=4e:99:08:c1:53:be," +
	"nw_src=10.222.1.48,nw_dst=10.104.65.133,nw_ttl=64,tp_src=56670,tp_dst=80"

// ctNextFlag collects repeated --ct-next STATE options.
type ctNextFlag []string

func (c *ctNextFlag) String() string     { return strings.Join(*c, " ") }
func (c *ctNextFlag) Set(s string) error { *c = append(*c, s); return nil }

// runTrace prints an `ovs-appctl ofproto/trace` walk: offline through a
// flows file (or the embedded seed pipeline), or on a running
// govs-vswitchd's bridge (--rundir), where it is that daemon's
// ofproto/trace.
func runTrace(args []string) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	flows := fs.String("flows", "", "flows `FILE` (ovs-ofctl add-flows format)")
	tlv := fs.String("tlv-map", "", "Geneve option `MAPPINGS` in add-tlv-map syntax (merged with the file's # tlv-map: lines)")
	bridge := fs.String("bridge", "br-int", "the bridge `NAME` an offline trace prints")
	rundir := fs.String("rundir", "", "trace on the govs-vswitchd of run `DIR`: govs trace --rundir DIR BRIDGE PACKET")
	var ctNext ctNextFlag
	fs.Var(&ctNext, "ct-next", "ct_state `FLAGS` each ct(table=N) resumes with, in turn (default trk,new)")
	demo := fs.Bool("demo", false, "trace seed 001 §8 (frontend -> backendsvc:80) through the embedded worker 1 pipeline")
	fs.String("O", "OpenFlow15", "ignored: a trace prints flows as ovs-appctl ofproto/trace does")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rundir != "" {
		return traceLive(*rundir, ctNext, fs.Args())
	}
	var p *flowtable.Pipeline
	var err error
	packet := strings.Join(fs.Args(), " ")
	switch {
	case *demo:
		p = flowtable.NewPipeline()
		if err := flowtext.Load(p, seeds.Worker1, nil); err != nil {
			return fmt.Errorf("embedded worker 1 flows: %w", err)
		}
		if packet == "" {
			packet = demoPacket
		}
		fmt.Fprintln(cmdOut, "govs trace: seed 001 §8, frontend pod -> backendsvc (10.104.65.133:80) on worker 1")
	case *flows != "":
		if p, err = loadFlowsFile(*flows, *tlv); err != nil {
			return err
		}
	default:
		return usagef("usage: govs trace --flows FILE [--bridge NAME] [--ct-next FLAGS] PACKET | govs trace --demo | govs trace --rundir DIR BRIDGE PACKET")
	}
	if packet == "" {
		return fmt.Errorf("missing packet description, e.g. %q", demoPacket)
	}
	r := appctl.TraceRequest{Bridge: *bridge, Flow: packet}
	for _, s := range ctNext {
		st, err := appctl.ParseCtState(s)
		if err != nil {
			return err
		}
		r.CtNext = append(r.CtNext, st)
	}
	var recirc atomic.Uint32
	out, err := appctl.TracePipeline(p, *bridge, nil, r, recirc.Add)
	if err != nil {
		return fmt.Errorf("packet: %w", err)
	}
	fmt.Fprint(cmdOut, out)
	if !strings.HasSuffix(out, "\n") {
		fmt.Fprintln(cmdOut)
	}
	return nil
}

// traceLive asks the daemon of rundir for ofproto/trace.
func traceLive(rundir string, ctNext []string, args []string) error {
	if len(args) != 2 {
		return usagef("usage: govs trace --rundir DIR BRIDGE PACKET")
	}
	path, err := unixctl.Target(rundir, "ovs-vswitchd")
	if err != nil {
		return err
	}
	var params []string
	for _, s := range ctNext {
		params = append(params, "--ct-next", s)
	}
	out, err := unixctl.Call(path, 60*time.Second, "ofproto/trace", append(params, args...)...)
	if err != nil {
		return err
	}
	fmt.Fprint(cmdOut, out)
	return nil
}

// mergeTLV installs Geneve option mappings, skipping those already there
// and refusing one that maps an option or a slot differently.
func mergeTLV(p *flowtable.Pipeline, ms []flowtable.TLVMapping, from string) error {
	have := p.TLV.Mappings()
	var add []flowtable.TLVMapping
	for _, m := range ms {
		dup := false
		for _, h := range have {
			sameOpt := h.Class == m.Class && h.Type == m.Type
			switch {
			case h == m:
				dup = true
			case sameOpt || h.Index == m.Index:
				return fmt.Errorf("%s: tlv-map %s conflicts with %s mapped before", from, m, h)
			}
		}
		if !dup {
			add = append(add, m)
			have = append(have, m)
		}
	}
	return p.TLV.Add(add...)
}

// withoutTLVLines merges a flows file's "# tlv-map:" lines into p and
// returns the text without them (flowtext.Load would add them again).
func withoutTLVLines(p *flowtable.Pipeline, text, name string) (string, error) {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "# tlv-map:")
		if !ok {
			continue
		}
		ms, err := flowtable.ParseTLVMappings(strings.TrimSpace(rest))
		if err != nil {
			return "", fmt.Errorf("%s: line %d: %w", name, i+1, err)
		}
		if err := mergeTLV(p, ms, fmt.Sprintf("%s: line %d", filepath.Base(name), i+1)); err != nil {
			return "", err
		}
		lines[i] = ""
	}
	return strings.Join(lines, "\n"), nil
}
