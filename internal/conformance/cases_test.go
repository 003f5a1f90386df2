package conformance

import (
	"os"
	"path/filepath"
	"testing"
)

// testLog is the shape of a tester.py log: a file's description, then one
// line per case with its verdict and, for errors, an indented detail.
const testLog = `--- Test start ---
waiting for switches connection...
dpid=0000000000000002 : Join tester SW.
a: file
    case one                                                                                             OK
    case two                                                                                             ERROR
        Table-miss error: no change in lookup_count.
b: file
    case three with a description longer than the hundred columns the tester pads descriptions to, and more OK
---  Test end  ---

--- Test report ---
Table-miss error(1)
    a: file                        case two

OK(2) / ERROR(1)
`

func TestParseLog(t *testing.T) {
	files := []CaseFile{
		{Path: "a/1.json", Description: "a: file", Cases: []string{"case one", "case two"}},
		{Path: "b/2.json", Description: "b: file", Cases: []string{
			"case three with a description longer than the hundred columns the tester pads descriptions to, and more",
			"case four"}},
	}
	got := ParseLog(testLog, files)
	want := []Result{
		{File: "a/1.json", Case: "case one", OK: true},
		{File: "a/1.json", Case: "case two", Detail: "Table-miss error: no change in lookup_count."},
		{File: "b/2.json", Case: files[1].Cases[0], OK: true},
		{File: "b/2.json", Case: "case four", Detail: "not run"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestLoadCasesOrderAndDuplicates(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("x/1.json", `["z: last", {"description": "c1"}, {"description": "c2"}]`)
	write("y/2.json", `["a: first", {"description": "d1"}]`)
	files, err := LoadCases(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Path != "y/2.json" || len(files[1].Cases) != 2 {
		t.Fatalf("got %+v", files)
	}
	write("y/3.json", `["z: last", {"description": "e1"}]`)
	if _, err := LoadCases(dir, []string{"x", "y"}); err == nil {
		t.Errorf("two files with one description: no error")
	}
	write("y/4.json", `[{"description": "no title"}]`)
	if _, err := LoadCases(dir, []string{"y/4.json"}); err == nil {
		t.Errorf("a file without a description: no error")
	}
}

// TestSuiteLoads: the shared suite parses, with the expected size.
func TestSuiteLoads(t *testing.T) {
	files, err := LoadCases("../../../shared/conformance/osken-of13", []string{"action", "match", "group"})
	if err != nil {
		t.Skipf("suite not available: %v", err)
	}
	n := 0
	for _, f := range files {
		n += len(f.Cases)
	}
	if n < 900 {
		t.Errorf("%d cases in action, match and group, want about 955", n)
	}
}
