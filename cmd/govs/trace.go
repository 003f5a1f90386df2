package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/internal/ctadapter"
	"github.com/govs-project/govs/internal/seeds"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// The demo packet: seed 001 §8, the frontend pod (port 49) opening TCP 80
// to the backendsvc service IP through worker 1's pipeline.
const demoPacket = "in_port=49,tcp,dl_src=be:2c:bf:e4:ec:c5,dl_dst=4e:99:08:c1:53:be," +
	"nw_src=10.222.1.48,nw_dst=10.104.65.133,nw_ttl=64,tp_src=56670,tp_dst=80"

func runTrace(args []string) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	flows := fs.String("flows", "", "flows `FILE` (ovs-ofctl add-flows format)")
	tlv := fs.String("tlv-map", "", "Geneve option `MAPPINGS` in add-tlv-map syntax")
	ver := fs.String("O", "OpenFlow13", "print flows as `VERSION` dumps them")
	demo := fs.Bool("demo", false, "trace seed 001 §8 (frontend -> backendsvc:80) through the embedded worker 1 pipeline")
	if err := fs.Parse(args); err != nil {
		return err
	}
	v, err := parseVersion(*ver)
	if err != nil {
		return err
	}
	var p *flowtable.Pipeline
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
		fmt.Println("govs trace: seed 001 §8, frontend pod -> backendsvc (10.104.65.133:80) on worker 1")
	case *flows != "":
		if p, err = loadFlowsFile(*flows, *tlv); err != nil {
			return err
		}
	default:
		return usagef("usage: govs trace --flows FILE PACKET | govs trace --demo")
	}
	if packet == "" {
		return fmt.Errorf("missing packet description, e.g. %q", demoPacket)
	}
	p.Conntrack = ctadapter.New()
	key, err := flowtext.ParsePacket(packet, &flowtext.ParseOptions{TLV: p.TLV})
	if err != nil {
		return fmt.Errorf("packet: %w", err)
	}
	out, err := Trace(p, key, &flowtext.PrintOptions{Version: v, TLV: p.TLV})
	fmt.Print(out)
	return err
}

// recordSink remembers the outputs of a traced packet.
type recordSink struct{ outputs []string }

func (s *recordSink) Output(port uint32, pkt *flowtable.Packet) {
	s.outputs = append(s.outputs, fmt.Sprintf("output:%s", flowtable.PortName(port)))
}

func (s *recordSink) PacketIn(pkt *flowtable.Packet, pi *flowtable.PacketIn) {
	s.outputs = append(s.outputs, fmt.Sprintf("controller(reason=%d,table=%d)", pi.Reason, pi.Table))
}

// Trace runs key's packet through p and returns the printed walk.
func Trace(p *flowtable.Pipeline, key flowtable.Key, o *flowtext.PrintOptions) (string, error) {
	var pkt flowtable.Packet
	frame := flowtable.BuildFrame(&key, 0)
	in := key.InPort()
	pkt.Key = key
	if err := pkt.Extract(frame); err != nil {
		return "", err
	}
	pkt.Key.SetInPort(in)
	var b strings.Builder
	fmt.Fprintf(&b, "Flow: %s\n\nbridge(\"br-int\")\n----------------\n", flowtext.KeyString(&pkt.Key, o))
	var tr flowtable.Trace
	sink := &recordSink{}
	res := p.Run(&pkt, sink, &tr)
	b.WriteString(flowtext.FormatTrace(&tr, o))
	fmt.Fprintf(&b, "\nFinal flow: %s\n", flowtext.KeyString(&tr.Final, o))
	var mask flowtable.Match
	mask.Mask = *res.Mask()
	mask.Value = key.Masked(&mask.Mask)
	fmt.Fprintf(&b, "Megaflow: %s\n", flowtext.MatchString(&mask, flowtable.DefaultPriority, o))
	if res.Segments > 1 {
		fmt.Fprintf(&b, "Recirculations: %d (ct(table=N) segments, each cached on its own)\n", res.Segments-1)
	}
	if len(sink.outputs) == 0 {
		b.WriteString("Datapath actions: drop\n")
	} else {
		fmt.Fprintf(&b, "Datapath actions: %s\n", strings.Join(sink.outputs, ","))
	}
	return b.String(), nil
}
