package antreagen

import (
	"strings"
	"testing"
)

// TestGenerateDeterministic: one seed gives one pipeline; another seed
// gives another of the same shape.
func TestGenerateDeterministic(t *testing.T) {
	a, b := Generate(Small()), Generate(Small())
	if a.Flows != b.Flows || a.Groups != b.Groups {
		t.Fatal("two runs with the same seed differ")
	}
	cfg := Small()
	cfg.Seed++
	if c := Generate(cfg); c.Flows == a.Flows {
		t.Error("another seed gives the same flows")
	}
}

// TestGenerateDefaultSize: the default node has issue 23's size: ~119k
// flows, one select group per Service with its endpoints as buckets,
// policy clauses merged into shared flows as Antrea does.
func TestGenerateDefaultSize(t *testing.T) {
	p := Generate(Default())
	if p.NumFlows < 110000 || p.NumFlows > 130000 {
		t.Errorf("%d flows, want ~119k", p.NumFlows)
	}
	if got := strings.Count(p.Flows, "\n"); got != p.NumFlows {
		t.Errorf("%d lines for %d flows", got, p.NumFlows)
	}
	groups := strings.Split(strings.TrimSpace(p.Groups), "\n")
	if len(groups) != 500 || len(p.Services) != 500 {
		t.Fatalf("%d groups, %d Services, want 500", len(groups), len(p.Services))
	}
	for _, g := range groups {
		if n := strings.Count(g, "bucket="); n != 3 || !strings.Contains(g, "type=select") {
			t.Fatalf("group %q: want a select group with 3 buckets", g)
		}
	}
	if len(p.Pods) != 1000 || len(p.Nodes) != 100 || len(p.Rules) < 2000 {
		t.Errorf("%d pods, %d nodes, %d rules", len(p.Pods), len(p.Nodes), len(p.Rules))
	}
	merged := 0
	for _, l := range strings.Split(p.Flows, "\n") {
		if strings.Count(l, "conjunction(") > 1 {
			merged++
		}
	}
	if merged < 1000 {
		t.Errorf("only %d flows carry several conjunction clauses", merged)
	}
}
