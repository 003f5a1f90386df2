package offload

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate regenerates the program with the //go:generate
// command of gen.go into a temporary directory and compares it with the
// committed objects. It needs clang (CI does not install it: the objects
// are committed so that building govs does not).
func TestGeneratedUpToDate(t *testing.T) {
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("clang not installed: the committed objects cannot be rebuilt here")
	}
	src, err := os.ReadFile("gen.go")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//go:generate "); ok {
			args = strings.Fields(rest)
		}
	}
	if len(args) < 3 || args[2] != "github.com/cilium/ebpf/cmd/bpf2go" {
		t.Fatalf("gen.go: no bpf2go generate line (%q)", args)
	}
	dir := t.TempDir()
	// The source path stays relative (it is recorded in the BTF line info).
	args = append(args[:3:3], append([]string{"-output-dir", dir, "-go-package", "offload"}, args[3:]...)...)
	cmd := exec.Command(args[0], args[1:]...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, f := range []string{"offload_bpfel.o", "offload_bpfel.go"} {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: regenerated output differs from the committed one: run go generate ./datapath/offload (clang version?)", f)
		}
	}
}
