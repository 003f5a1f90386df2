// Command trace is a runnable example: it loads two flows into a govs
// pipeline, sends one packet through it and prints the walk, the way
// `govs trace` does.
//
//	go run ./examples/trace
package main

import (
	"fmt"
	"log"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

const flows = `
# Classify the port, then forward by destination IP.
table=0, priority=100,in_port=1 actions=load:0x1->NXM_NX_REG0[0..15],goto_table:10
table=10, priority=200,ip,nw_dst=10.0.0.2 actions=dec_ttl,mod_dl_dst:02:00:00:00:00:02,output:2
table=10, priority=0 actions=drop
`

type printSink struct{}

func (printSink) Output(port uint32, pkt *flowtable.Packet) {
	fmt.Printf("output to port %d: %d bytes, ttl %d\n", port, len(pkt.Frame), pkt.Key.NwTTL())
}

func (printSink) PacketIn(pkt *flowtable.Packet, pi *flowtable.PacketIn) {
	fmt.Printf("packet-in from table %d\n", pi.Table)
}

func main() {
	p := flowtable.NewPipeline()
	if err := flowtext.Load(p, flows, nil); err != nil {
		log.Fatal(err)
	}
	key, err := flowtext.ParsePacket("in_port=1,udp,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_ttl=64,tp_src=5000,tp_dst=53", nil)
	if err != nil {
		log.Fatal(err)
	}
	var pkt flowtable.Packet
	pkt.Key = key
	if err := pkt.Extract(flowtable.BuildFrame(&key, 0)); err != nil {
		log.Fatal(err)
	}
	var tr flowtable.Trace
	p.Run(&pkt, printSink{}, &tr)
	fmt.Print(flowtext.FormatTrace(&tr, nil))
}
