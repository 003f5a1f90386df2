package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/ofproto/flowtext"
)

// parseVersion reads -O values as ovs-ofctl takes them.
func parseVersion(s string) (flowtext.Version, error) {
	switch strings.ToLower(s) {
	case "", "openflow13", "of13", "1.3":
		return flowtext.OF13, nil
	case "openflow10", "of10", "1.0":
		return flowtext.OF10, nil
	case "openflow15", "of15", "1.5":
		return flowtext.OF15, nil
	}
	return 0, fmt.Errorf("unknown OpenFlow version %q (OpenFlow10, OpenFlow13, OpenFlow15)", s)
}

// loadFlowsFile loads a flows file ("-": standard input) into a new
// pipeline, with extra TLV mappings installed first.
func loadFlowsFile(path string, extraTLV string) (*flowtable.Pipeline, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	p := flowtable.NewPipeline()
	if extraTLV != "" {
		ms, err := flowtable.ParseTLVMappings(extraTLV)
		if err != nil {
			return nil, err
		}
		if err := p.TLV.Add(ms...); err != nil {
			return nil, err
		}
	}
	text, err := withoutTLVLines(p, string(data), path)
	if err != nil {
		return nil, err
	}
	if err := flowtext.Load(p, text, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

func runParseFlows(args []string) error {
	fs := flag.NewFlagSet("parse-flows", flag.ContinueOnError)
	ver := fs.String("O", "OpenFlow13", "print as `VERSION` dumps (OpenFlow10, OpenFlow13, OpenFlow15)")
	tlv := fs.String("tlv-map", "", "extra Geneve option `MAPPINGS` in add-tlv-map syntax")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: govs parse-flows [-O VERSION] FILE")
	}
	v, err := parseVersion(*ver)
	if err != nil {
		return err
	}
	p, err := loadFlowsFile(fs.Arg(0), *tlv)
	if err != nil {
		return err
	}
	all := flowtable.AllFlows()
	o := &flowtext.PrintOptions{Version: v, TLV: p.TLV}
	for _, r := range p.Flows(&all) {
		fmt.Println(" " + flowtext.FormatFlow(r.Flow(), o))
	}
	return nil
}
