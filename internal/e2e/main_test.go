package e2e

import (
	"os"
	"testing"
)

// TestMain removes the binaries the tests built (binaries), which live in
// a temporary directory of their own.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
