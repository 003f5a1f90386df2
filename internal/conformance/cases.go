// Package conformance runs the os-ken OpenFlow 1.3 switch test suite
// (../shared/conformance/osken-of13, run by os-ken's tests/switch/tester.py)
// against govs-vswitchd or Open vSwitch as the switch under test, with a
// private Open vSwitch as the tester switch, and reports per-case results.
package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// CaseFile is one JSON case file of the suite.
type CaseFile struct {
	// Path relative to the suite directory, e.g. "match/00_IN_PORT.json".
	Path string
	// Description is the file's title (its first JSON string); the tester
	// runs files in the order of their descriptions.
	Description string
	// Cases are the descriptions of the file's test cases, in order.
	Cases []string
}

// LoadCases reads the named case files (paths relative to dir; a directory
// name selects every .json file under it; none selects the whole suite) in
// the order the tester runs them.
func LoadCases(dir string, names []string) ([]CaseFile, error) {
	if len(names) == 0 {
		names = []string{"."}
	}
	seen := map[string]bool{}
	var files []CaseFile
	for _, name := range names {
		root := filepath.Join(dir, name)
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || filepath.Ext(p) != ".json" {
				return nil
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			if seen[rel] {
				return nil
			}
			seen[rel] = true
			cf, err := readCaseFile(p)
			if err != nil {
				return err
			}
			cf.Path = rel
			files = append(files, cf)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("case files %s: %w", name, err)
		}
	}
	descs := map[string]string{}
	for _, f := range files {
		if other, dup := descs[f.Description]; dup {
			return nil, fmt.Errorf("case files %s and %s have the same description %q (the tester would run only one)", other, f.Path, f.Description)
		}
		descs[f.Description] = f.Path
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Description < files[j].Description })
	return files, nil
}

func readCaseFile(path string) (CaseFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return CaseFile{}, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return CaseFile{}, fmt.Errorf("%s: %w", path, err)
	}
	var cf CaseFile
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			cf.Description = s
			continue
		}
		var c struct {
			Description string `json:"description"`
		}
		if err := json.Unmarshal(it, &c); err != nil {
			return CaseFile{}, fmt.Errorf("%s: case %d: %w", path, len(cf.Cases)+1, err)
		}
		cf.Cases = append(cf.Cases, c.Description)
	}
	if cf.Description == "" {
		return CaseFile{}, fmt.Errorf("%s: no description", path)
	}
	return cf, nil
}

// Result is the outcome of one case on one target.
type Result struct {
	File   string // CaseFile.Path
	Case   string // the case's description
	OK     bool
	Detail string // the tester's error message when not OK
}

// ParseLog assigns the per-case lines of a tester log ("    DESC   OK" or
// "    DESC   ERROR" followed by an indented detail line) to the files in
// run order. Cases the log does not reach are reported as not OK with the
// detail "not run".
func ParseLog(log string, files []CaseFile) []Result {
	type line struct {
		desc, verdict, detail string
	}
	var got []line
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if strings.Contains(l, "---  Test end  ---") {
			break
		}
		if !strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "     ") {
			continue
		}
		body := strings.TrimRight(l[4:], " ")
		var verdict string
		switch {
		case strings.HasSuffix(body, " OK"):
			verdict = "OK"
		case strings.HasSuffix(body, " ERROR"):
			verdict = "ERROR"
		default:
			continue
		}
		desc := strings.TrimRight(strings.TrimSuffix(body, verdict), " ")
		ln := line{desc: desc, verdict: verdict}
		if verdict == "ERROR" && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "        ") {
			ln.detail = strings.TrimSpace(lines[i+1])
		}
		got = append(got, ln)
	}
	var res []Result
	k := 0
	for _, f := range files {
		for _, c := range f.Cases {
			r := Result{File: f.Path, Case: c, Detail: "not run"}
			if k < len(got) && got[k].desc == strings.TrimRight(c, " ") {
				r.OK = got[k].verdict == "OK"
				r.Detail = got[k].detail
				k++
			}
			res = append(res, r)
		}
	}
	return res
}
