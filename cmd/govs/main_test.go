package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govs-project/govs/internal/seeds"
)

// buildGovs compiles the govs binary once for the CLI tests.
func buildGovs(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "govs")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestParseFlowsCLI: `govs parse-flows -O V FILE | sort` is byte-for-byte
// what real Open vSwitch dumped for the same file (the goldens).
func TestParseFlowsCLI(t *testing.T) {
	bin := buildGovs(t)
	for _, name := range []string{"worker1", "worker2", "antrea-reference"} {
		for _, v := range []string{"of10", "of13", "of15"} {
			ver := map[string]string{"of10": "OpenFlow10", "of13": "OpenFlow13", "of15": "OpenFlow15"}[v]
			out, err := exec.Command(bin, "parse-flows", "-O", ver, filepath.Join(seeds.Dir(), name+".flows")).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", name, v, err, out)
			}
			got := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
			sortStrings(got)
			want, err := os.ReadFile(filepath.Join(seeds.Dir(), name+"."+v+".golden"))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := strings.Join(got, "\n")+"\n", string(want); g != w {
				t.Errorf("%s %s: parse-flows differs from Open vSwitch's dump:\n got:\n%s\nwant:\n%s", name, v, g, w)
			}
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestParseFlowsCLIErrors: a bad line is reported with its line, column
// and field, and the command fails.
func TestParseFlowsCLIErrors(t *testing.T) {
	bin := buildGovs(t)
	f := filepath.Join(t.TempDir(), "bad.flows")
	content := "# comment\ntable=0,priority=10,ip actions=drop\ntable=40, priority=200,ip,w_dst=10.96.0.0/12 actions=drop\n"
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "parse-flows", f).CombinedOutput()
	if err == nil {
		t.Fatalf("parse-flows accepted a bad line:\n%s", out)
	}
	for _, want := range []string{"line 3", "column 27", "w_dst"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("error %q does not mention %q", out, want)
		}
	}
}

// TestTraceDemo: `govs trace --demo` (what `make demo` runs) walks seed 001
// §8 through 0 -> 10 -> 30 -> 31 -> 40 -> 105 -> 110 and out to port 2 with
// reg0[0..15]=0x2, reg1=0x2 and reg0[16]=1, printed as ovs-appctl
// ofproto/trace prints it (two ct() recirculations resumed as trk|new).
func TestTraceDemo(t *testing.T) {
	bin := buildGovs(t)
	out, err := exec.Command(bin, "trace", "--demo").CombinedOutput()
	if err != nil {
		t.Fatalf("trace --demo: %v\n%s", err, out)
	}
	s := string(out)
	var tables []string
	for _, line := range strings.Split(s, "\n") {
		l := strings.TrimSpace(line)
		if i := strings.Index(l, ". "); i > 0 && i <= 3 && strings.Contains(l, "priority ") {
			tables = append(tables, l[:i])
		}
	}
	if got, want := strings.Join(tables, " "), "0 10 30 31 40 105 110"; got != want {
		t.Errorf("tables walked: %q, want %q\n%s", got, want, s)
	}
	for _, want := range []string{"Final flow: tcp,reg0=0x2,in_port=49,", ",reg0=0x10002,reg1=0x2,", "\nDatapath actions: 2\n",
		"    ct(commit,table=110,zone=65520)\n", "Datapath actions: ct(commit,zone=65520),recirc(0x2)\n",
		"recirc(0x1) - resume conntrack with default ct_state=trk|new (use --ct-next to customize)\n", "ct_state=new|trk,ct_zone=65520,eth,tcp,"} {
		if !strings.Contains(s, want) {
			t.Errorf("trace lacks %q\n%s", want, s)
		}
	}
}

// TestTraceFlowsFile: trace --flows with an explicit packet.
func TestTraceFlowsFile(t *testing.T) {
	bin := buildGovs(t)
	out, err := exec.Command(bin, "trace", "--flows", filepath.Join(seeds.Dir(), "worker1.flows"),
		"in_port=49,tcp,dl_src=be:2c:bf:e4:ec:c5,dl_dst=4e:99:08:c1:53:be,nw_src=10.222.1.99,nw_dst=10.222.1.47,tp_dst=80").CombinedOutput()
	if err != nil {
		t.Fatalf("trace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Datapath actions: drop") {
		t.Errorf("spoofed source not dropped by table 10:\n%s", out)
	}
	out, err = exec.Command(bin, "trace", "--flows", filepath.Join(seeds.Dir(), "worker1.flows"), "in_port=49,tcp,tp_dst=80,w_src=1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "w_src") {
		t.Errorf("bad packet description accepted or not named: %v\n%s", err, out)
	}
}
