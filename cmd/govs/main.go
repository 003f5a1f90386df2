// Command govs is the govs command-line tool: ovs-ofctl-style flow tools
// (parse-flows), an offline pipeline tracer (trace), and, as the switch
// grows, the ovs-vsctl- and ovs-ofctl-style commands against a running
// govs-vswitchd.
package main

import (
	"fmt"
	"os"
)

type command struct {
	name    string
	summary string
	run     func(args []string) error
}

var commands = []command{
	{"parse-flows", "parse-flows [-O VERSION] FILE: print FILE's flows as ovs-ofctl dump-flows --no-stats prints them", runParseFlows},
	{"trace", "trace --flows FILE [--tlv-map SPEC] PACKET | trace --demo: walk a packet through a pipeline offline", runTrace},
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: govs COMMAND [ARGS]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %s\n", c.summary)
	}
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	for _, c := range commands {
		if c.name == os.Args[1] {
			if err := c.run(os.Args[2:]); err != nil {
				fmt.Fprintf(os.Stderr, "govs %s: %v\n", c.name, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "govs: unknown command %q\n", os.Args[1])
	usage()
	os.Exit(2)
}
