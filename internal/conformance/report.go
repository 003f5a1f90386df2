package conformance

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// Report holds per-case results of several targets over the same files.
type Report struct {
	Targets []string
	// Results[target] lists the results in file order.
	Results map[string][]Result
}

// WriteTSV writes one line per case: file, case, then for each target its
// verdict (OK/ERROR) and the tester's error detail.
func (r *Report) WriteTSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "file\tcase")
	for _, t := range r.Targets {
		fmt.Fprintf(bw, "\t%s\t%s_detail", t, t)
	}
	fmt.Fprintln(bw)
	if len(r.Targets) == 0 {
		return bw.Flush()
	}
	first := r.Results[r.Targets[0]]
	for i, c := range first {
		fmt.Fprintf(bw, "%s\t%s", c.File, c.Case)
		for _, t := range r.Targets {
			rs := r.Results[t]
			if i >= len(rs) {
				fmt.Fprintf(bw, "\t-\t")
				continue
			}
			fmt.Fprintf(bw, "\t%s\t%s", verdict(rs[i].OK), tsvField(rs[i].Detail))
		}
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

func verdict(ok bool) string {
	if ok {
		return "OK"
	}
	return "ERROR"
}

func tsvField(s string) string {
	return strings.NewReplacer("\t", " ", "\n", " ").Replace(s)
}

// WriteSummary writes the pass counts per directory (action/, match/, ...)
// and target, then the totals.
func (r *Report) WriteSummary(w io.Writer) error {
	type key struct{ dir, target string }
	pass := map[key]int{}
	total := map[string]int{}
	dirs := map[string]bool{}
	for _, t := range r.Targets {
		for _, c := range r.Results[t] {
			d := path.Dir(c.File)
			dirs[d] = true
			if c.OK {
				pass[key{d, t}]++
				pass[key{"total", t}]++
			}
			if t == r.Targets[0] {
				total[d]++
				total["total"]++
			}
		}
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	names = append(names, "total")
	fmt.Fprintf(w, "%-20s %6s", "directory", "cases")
	for _, t := range r.Targets {
		fmt.Fprintf(w, " %6s", t)
	}
	fmt.Fprintln(w)
	for _, d := range names {
		fmt.Fprintf(w, "%-20s %6d", d, total[d])
		for _, t := range r.Targets {
			fmt.Fprintf(w, " %6d", pass[key{d, t}])
		}
		fmt.Fprintln(w)
	}
	return nil
}

// ReadBaseline reads the verdicts of one target from a TSV written by
// WriteTSV, keyed by file and case.
func ReadBaseline(file, target string) (map[[2]string]bool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s: empty", file)
	}
	head := strings.Split(lines[0], "\t")
	col := -1
	for i, h := range head {
		if h == target {
			col = i
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("%s: no column %q", file, target)
	}
	m := map[[2]string]bool{}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) <= col {
			return nil, fmt.Errorf("%s: short line %q", file, l)
		}
		m[[2]string{f[0], f[1]}] = f[col] == "OK"
	}
	return m, nil
}

// Regressions lists the cases that pass in the baseline and fail in res.
func Regressions(baseline map[[2]string]bool, res []Result) []Result {
	var out []Result
	for _, c := range res {
		if baseline[[2]string{c.File, c.Case}] && !c.OK {
			out = append(out, c)
		}
	}
	return out
}
