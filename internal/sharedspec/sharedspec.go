// Package sharedspec locates the project's shared specifications (the
// protocol captures and goldens) that live next to the checkout, in
// ../shared from the module root, so tests work from any clone.
package sharedspec

import (
	"os"
	"path/filepath"
)

// ModuleRoot returns the nearest directory at or above the working
// directory that holds go.mod (a test runs in its package directory).
func ModuleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return dir
		}
		d = up
	}
}

// Dir returns ../shared relative to the module root.
func Dir() string { return filepath.Join(ModuleRoot(), "..", "shared") }

// Captures returns the directory of the protocol captures (*.pcap.gz).
func Captures() string { return filepath.Join(Dir(), "protocol", "captures") }
