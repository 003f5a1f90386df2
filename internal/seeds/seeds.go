// Package seeds embeds the seed pipelines: Antrea's worker 1 and worker 2
// flow tables from the seed documents (see testdata/README.md), so that the
// demo and the tests of every package use the same flows.
package seeds

import (
	_ "embed"
	"path/filepath"
	"runtime"
	"strings"
)

// Worker1 is worker 1's pipeline (ovs-ofctl add-flows format).
//
//go:embed testdata/worker1.flows
var Worker1 string

// Worker2 is worker 2's pipeline.
//
//go:embed testdata/worker2.flows
var Worker2 string

// Dir returns the directory holding the seed files and their goldens.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata")
}

// GoldenNames lists the seed flow files that have goldens (every
// testdata/*.flows but rejected.flows), without the .flows suffix, so that
// a new seed file is picked up by every golden test.
func GoldenNames() []string {
	all, _ := filepath.Glob(filepath.Join(Dir(), "*.flows"))
	var names []string
	for _, f := range all {
		if n := strings.TrimSuffix(filepath.Base(f), ".flows"); n != "rejected" {
			names = append(names, n)
		}
	}
	return names
}
