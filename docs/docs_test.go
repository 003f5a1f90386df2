// Package docs holds the project's documentation; its test checks that
// every link in README.md and docs/ resolves inside the repository and
// that the `console` examples in docs/ print what they show.
package docs

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's top directory (the test runs in docs/).
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// markdownFiles lists README.md and every .md file under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	r := root(t)
	files := []string{filepath.Join(r, "README.md")}
	err := filepath.WalkDir(filepath.Join(r, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var update = flag.Bool("update", false, "rewrite the console examples' outputs with what the commands print")

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksResolve: every relative link points at a file or directory of
// the repository (not at ../shared or anything outside the checkout).
func TestLinksResolve(t *testing.T) {
	r := root(t)
	for _, f := range markdownFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p := filepath.Clean(filepath.Join(filepath.Dir(f), target))
			rel, err := filepath.Rel(r, p)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s: link %q leaves the repository", f, m[1])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: link %q does not resolve: %v", f, m[1], err)
			}
		}
	}
}

// consoleBlock is a ```console block: `$ govs ...` lines, each followed by
// the output it prints.
type consoleBlock struct {
	file string
	cmds []consoleCmd
}

type consoleCmd struct {
	line string
	want string
}

func consoleBlocks(t *testing.T) []consoleBlock {
	var blocks []consoleBlock
	for _, f := range markdownFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in := false
		var b consoleBlock
		for _, line := range strings.Split(string(data), "\n") {
			switch {
			case !in && strings.TrimSpace(line) == "```console":
				in, b = true, consoleBlock{file: f}
			case in && strings.TrimSpace(line) == "```":
				in = false
				blocks = append(blocks, b)
			case in && strings.HasPrefix(line, "$ "):
				b.cmds = append(b.cmds, consoleCmd{line: strings.TrimPrefix(line, "$ ")})
			case in && len(b.cmds) > 0:
				c := &b.cmds[len(b.cmds)-1]
				c.want += line + "\n"
			}
		}
	}
	return blocks
}

// TestConsoleExamples runs every `$ govs ...` line of the docs' console
// blocks with a freshly built govs and compares what it prints.
func TestConsoleExamples(t *testing.T) {
	blocks := consoleBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("no console examples found in docs/")
	}
	bin := filepath.Join(t.TempDir(), "govs")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/govs").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, b := range blocks {
		for _, c := range b.cmds {
			words := strings.Fields(c.line)
			if words[0] != "govs" {
				t.Errorf("%s: only govs commands run in examples: %q", b.file, c.line)
				continue
			}
			args := make([]string, 0, len(words)-1)
			for _, w := range words[1:] {
				args = append(args, strings.Trim(w, "'"))
			}
			cmd := exec.Command(bin, args...)
			cmd.Dir = root(t)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: %s: %v\n%s", b.file, c.line, err, out)
				continue
			}
			got, want := strings.TrimRight(string(out), "\n"), strings.TrimRight(c.want, "\n")
			if got == want {
				continue
			}
			if *update {
				rewrite(t, b.file, "$ "+c.line+"\n"+c.want, "$ "+c.line+"\n"+got+"\n")
				continue
			}
			t.Errorf("%s: %s prints\n%s\nthe docs show\n%s\n(go test ./docs -update rewrites them)", b.file, c.line, got, want)
		}
	}
}

// rewrite replaces old with new in file (go test ./docs -update).
func rewrite(t *testing.T, file, old, new string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s: cannot find the example to rewrite", file)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}
