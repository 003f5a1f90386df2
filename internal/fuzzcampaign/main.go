// Command fuzzcampaign runs every fuzz target of the module for a fixed
// time each and reports what the fuzzer did: `make fuzz-ci` runs it with a
// few seconds per target (CI), `make fuzz FUZZTIME=10m` for long local runs.
// Targets are found by scanning the *_test.go files for `func FuzzX(`, so
// a new target joins the campaign without being listed. A crasher stays
// in the package's testdata/fuzz/<Target>/ (where `go test` replays it
// from then on) and fails the campaign.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Target is one fuzz function and the package directory holding it.
type Target struct {
	Dir  string // relative to the module root, "./ofproto/wire"
	Name string // "FuzzDecodeMessage"
}

var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)

// FindTargets lists the fuzz targets under root, sorted by package and name.
func FindTargets(root string) ([]Target, error) {
	var out []Target
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && path != root && (strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata") {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllSubmatch(b, -1) {
			out = append(out, Target{Dir: "./" + filepath.ToSlash(rel), Name: string(m[1])})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Dir != out[j].Dir {
			return out[i].Dir < out[j].Dir
		}
		return out[i].Name < out[j].Name
	})
	return out, err
}

// Result is what one run reported in its last status line.
type Result struct {
	Execs, NewInteresting, Corpus string
	Err                           error
	Tail                          string // the end of the output, for a failure
}

// status is go test's progress line, e.g. "fuzz: elapsed: 3s, execs:
// 2305679 (53856/sec), new interesting: 226 (total: 1109)".
var status = regexp.MustCompile(`execs: (\d+) .*new interesting: (\d+) \(total: (\d+)\)`)

// Run fuzzes one target for d with the given parallelism.
func Run(root string, t Target, d time.Duration, parallel int) Result {
	cmd := exec.Command("go", "test", "-run", "^$", "-fuzz", "^"+t.Name+"$", "-fuzztime", d.String(),
		"-parallel", fmt.Sprint(parallel), t.Dir)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	var r Result
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if m := status.FindStringSubmatch(sc.Text()); m != nil {
			r.Execs, r.NewInteresting, r.Corpus = m[1], m[2], m[3]
		}
	}
	if err != nil {
		r.Err = err
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		r.Tail = strings.Join(lines, "\n")
	}
	return r
}

func main() {
	fuzztime := flag.Duration("fuzztime", 5*time.Second, "time per target")
	parallel := flag.Int("parallel", 2, "fuzzing workers per target")
	match := flag.String("run", "", "only targets whose package/name contains this")
	list := flag.Bool("list", false, "list the targets and exit")
	flag.Parse()
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	targets, err := FindTargets(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fuzzcampaign:", err)
		os.Exit(2)
	}
	failed := 0
	start := time.Now()
	for _, t := range targets {
		if *match != "" && !strings.Contains(t.Dir+"/"+t.Name, *match) {
			continue
		}
		if *list {
			fmt.Printf("%s %s\n", t.Dir, t.Name)
			continue
		}
		began := time.Now()
		r := Run(root, t, *fuzztime, *parallel)
		if harnessDeadline(r) {
			// The go command's fuzzer sometimes reports its own -fuzztime
			// deadline as a failure when it ends during an execution; a
			// real finding writes its input to testdata. Run it again.
			fmt.Printf("%-28s %-26s the fuzzer hit its own deadline without a finding; again\n", t.Dir, t.Name)
			r = Run(root, t, *fuzztime, *parallel)
		}
		fmt.Printf("%-28s %-26s execs %10s  new interesting %5s  corpus %6s  %v\n", t.Dir, t.Name, r.Execs, r.NewInteresting, r.Corpus,
			time.Since(began).Round(time.Second))
		if r.Err != nil {
			failed++
			fmt.Printf("FAIL %s %s: %v\n%s\n", t.Dir, t.Name, r.Err, r.Tail)
		}
	}
	if !*list {
		fmt.Printf("fuzz campaign: %d targets failed, %v\n", failed, time.Since(start).Round(time.Second))
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// harnessDeadline tells the go fuzzer's "context deadline exceeded" at the
// end of -fuzztime, with no failing input written, from a real finding.
func harnessDeadline(r Result) bool {
	return r.Err != nil && strings.Contains(r.Tail, "context deadline exceeded") &&
		!strings.Contains(r.Tail, "Failing input written")
}
