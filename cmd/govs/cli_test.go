package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/internal/vswitchd"
)

// TestCLIHabits: global options before or after the command, --version,
// help COMMAND, and the exit statuses of the OVS tools (1: the command
// failed, 2: it was called wrongly).
func TestCLIHabits(t *testing.T) {
	dir := t.TempDir()
	flows := filepath.Join(dir, "f.flows")
	if err := os.WriteFile(flows, []byte("table=0,priority=1,actions=drop\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args       []string
		status     int
		out, errIn string
	}{
		{[]string{"--version"}, 0, "govs 0.", ""},
		{[]string{"-V"}, 0, "govs ", ""},
		{[]string{"--help"}, 0, "usage: govs [--rundir DIR] COMMAND", ""},
		{[]string{}, 2, "", "usage: govs"},
		{[]string{"help", "dump-flows"}, 0, "usage: govs dump-flows [OPTIONS] TARGET [MATCH]", ""},
		{[]string{"help", "add-br"}, 0, "usage: govs add-br", ""},
		{[]string{"help", "nosuch"}, 2, "", `unknown command "nosuch"`},
		{[]string{"nosuch"}, 2, "", `unknown command "nosuch"`},
		{[]string{"--bogus", "show"}, 2, "", "unknown global option --bogus"},
		{[]string{"--rundir"}, 2, "", "needs a value"},
		{[]string{"dump-flows"}, 2, "", "usage: govs dump-flows"},
		{[]string{"dump-flows", "--frobnicate", "br0"}, 2, "", "unknown option --frobnicate"},
		{[]string{"parse-flows"}, 2, "", "usage: govs parse-flows"},
		{[]string{"parse-flows", flows}, 0, "", ""},
		{[]string{"parse-flows", filepath.Join(dir, "missing")}, 1, "", "missing"},
		// The daemon is not running there: status 1, and the error names
		// the rundir given before the command.
		{[]string{"--rundir", filepath.Join(dir, "nodaemon"), "show"}, 1, "", filepath.Join(dir, "nodaemon")},
		{[]string{"--rundir=" + filepath.Join(dir, "x"), "dump-flows", "br0"}, 1, "", filepath.Join(dir, "x", "br0.mgmt")},
	}
	for _, tc := range tests {
		globalRundir = ""
		var out, errb bytes.Buffer
		st := run(tc.args, &out, &errb)
		if st != tc.status {
			t.Errorf("govs %q: status %d, want %d (stderr %q)", tc.args, st, tc.status, errb.String())
		}
		if !strings.Contains(out.String(), tc.out) {
			t.Errorf("govs %q: stdout %q lacks %q", tc.args, out.String(), tc.out)
		}
		if !strings.Contains(errb.String(), tc.errIn) {
			t.Errorf("govs %q: stderr %q lacks %q", tc.args, errb.String(), tc.errIn)
		}
	}
	globalRundir = ""
}

// TestGlobalRundirAddBr: `govs --rundir DIR add-br br0` reaches the
// daemon serving DIR (the ovs-vsctl --db=... habit), and so does the
// option after the command.
func TestGlobalRundirAddBr(t *testing.T) {
	dir := t.TempDir()
	d := vswitchd.New(dir, nil)
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.ServeCtl(ctx)
	sock := filepath.Join(dir, vswitchd.CtlSocketName)
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i > 200 {
			t.Fatal("control socket never appeared")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Setenv("GOVS_RUNDIR", filepath.Join(dir, "elsewhere"))
	for _, args := range [][]string{
		{"--rundir", dir, "add-br", "br0"},
		{"add-br", "br1", "--rundir", dir},
	} {
		globalRundir = ""
		var out, errb bytes.Buffer
		if st := run(args, &out, &errb); st != 0 {
			t.Fatalf("govs %q: status %d: %s", args, st, errb.String())
		}
	}
	globalRundir = ""
	var out, errb bytes.Buffer
	if st := run([]string{"--rundir=" + dir, "show"}, &out, &errb); st != 0 {
		t.Fatalf("show: status %d: %s", st, errb.String())
	}
	for _, br := range []string{"br0", "br1"} {
		if !strings.Contains(out.String(), br) {
			t.Errorf("show after add-br lacks %s:\n%s", br, out.String())
		}
	}
	globalRundir = ""
}
