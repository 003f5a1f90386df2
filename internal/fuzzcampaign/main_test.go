package main

import (
	"path/filepath"
	"testing"
)

// TestCampaignCoversTheParsers: the campaign finds the fuzz target of
// every parser of untrusted input issue 15 names; removing or renaming one
// fails here rather than silently dropping it from CI.
func TestCampaignCoversTheParsers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	targets, err := FindTargets(root)
	if err != nil {
		t.Fatal(err)
	}
	have := map[Target]bool{}
	for _, tg := range targets {
		have[tg] = true
	}
	for _, want := range []Target{
		{"./ofproto/wire", "FuzzDecodeMessage"},   // wire messages
		{"./ofproto/wire", "FuzzDecodeMatch"},     // matches
		{"./ofproto/wire", "FuzzDecodeActions"},   // actions
		{"./ofproto/wire", "FuzzDecodeMultipart"}, // multiparts
		{"./ofproto/translate", "FuzzFlowModFromWire"},
		{"./ofproto/flowtext", "FuzzParseFlow"},   // flow text
		{"./flowtable", "FuzzExtract"},            // frame extraction
		{"./flowtable", "FuzzRecursionBudget"},    // group loops and resubmits
		{"./conntrack", "FuzzExecute"},            // conntrack
		{"./tunnel", "FuzzDecap"},                 // Geneve options
		{"./internal/vswitchd", "FuzzCtlRequest"}, // the ctl protocol
	} {
		if !have[want] {
			t.Errorf("campaign lacks %s %s (found %v)", want.Dir, want.Name, targets)
		}
	}
}
