package vswitchd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/datapath/port"
)

// startCtl serves the control socket of a daemon without OpenFlow and
// with an "internal" port type that panics, in a fresh rundir.
func startCtl(t *testing.T) *Daemon {
	t.Helper()
	d := New(t.TempDir(), nil)
	d.OpenFlow = nil
	d.Openers["internal"] = func(cfg PortConfig) (port.Port, error) { panic("opener bug: " + cfg.Name) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.ServeCtl(ctx) }()
	t.Cleanup(func() { cancel(); <-done; d.Close() })
	sock := filepath.Join(d.Rundir, CtlSocketName)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return d
		}
		if time.Now().After(deadline) {
			t.Fatal("control socket did not come up")
		}
	}
}

// rawCtl sends raw lines on one connection and returns one reply each
// (an empty Reply when the daemon closed the connection instead).
func rawCtl(t *testing.T, d *Daemon, lines ...string) []Reply {
	t.Helper()
	c, err := net.Dial("unix", filepath.Join(d.Rundir, CtlSocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	var out []Reply
	for _, l := range lines {
		if _, err := c.Write([]byte(l + "\n")); err != nil {
			out = append(out, Reply{})
			continue
		}
		line, err := r.ReadBytes('\n')
		var rep Reply
		if err == nil {
			if err := json.Unmarshal(line, &rep); err != nil {
				t.Fatalf("reply %q: %v", line, err)
			}
		}
		out = append(out, rep)
	}
	return out
}

// TestCtlRejectsBadInput: every malformed request gets an error that says
// what is wrong, and the same connection goes on serving.
func TestCtlRejectsBadInput(t *testing.T) {
	d := startCtl(t)
	many := `{"command":"show","args":[` + strings.TrimSuffix(strings.Repeat(`"x",`, MaxArgs+1), ",") + `]}`
	cases := []struct{ line, want string }{
		{`not json`, "bad request: invalid character"},
		{`{"command":"show","argz":[]}`, `unknown field "argz"`},
		{`{"args":["br0"]}`, `no "command"`},
		{`{"command":"show"} {"command":"show"}`, "more than one JSON value"},
		{`{"command":"add-br","args":"br0"}`, "cannot unmarshal string"},
		{many, "257 arguments, at most 256"},
		{`{"command":"add-br","args":["` + strings.Repeat("b", MaxArgLen+1) + `"]}`, "word 1 is 4097 bytes long"},
		{`{"command":"add-br","args":["br\nx"]}`, "word 1 has a control character"},
		{`{"command":"frobnicate"}`, `unknown command "frobnicate"`},
		{`{"command":"add-br"}`, "usage: add-br BRIDGE"},
	}
	var lines []string
	for _, c := range cases {
		lines = append(lines, c.line)
	}
	reps := rawCtl(t, d, append(lines, `{"command":"show"}`)...)
	for i, c := range cases {
		if !strings.Contains(reps[i].Error, c.want) {
			t.Errorf("%.60s: error %q, want it to contain %q", c.line, reps[i].Error, c.want)
		}
	}
	if last := reps[len(cases)]; last.Error != "" {
		t.Errorf("show after the bad requests: %q", last.Error)
	}
	// A line over the limit is answered and the connection closed; the
	// daemon serves the next one.
	long := rawCtl(t, d, `{"command":"show","args":["`+strings.Repeat("a", MaxRequestLen)+`"]}`)
	if !strings.Contains(long[0].Error, "longer than 1048576 bytes") {
		t.Errorf("over-long line: %+v", long[0])
	}
	if rep, err := Call(d.Rundir, Request{Command: "show"}); err != nil || rep.Error != "" {
		t.Errorf("show after an over-long line: %v %q", err, rep.Error)
	}
}

// TestCtlRecoversFromPanic: a command that panics is answered with an
// error, counted, and the daemon keeps serving (issue 15).
func TestCtlRecoversFromPanic(t *testing.T) {
	d := startCtl(t)
	before := CtlPanics()
	if rep, err := Call(d.Rundir, Request{Command: "add-br", Args: []string{"br0"}}); err != nil || rep.Error != "" {
		t.Fatalf("add-br: %v %q", err, rep.Error)
	}
	rep, err := Call(d.Rundir, Request{Command: "add-port", Args: []string{"br0", "p0", "type=internal"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Error, "internal error in add-port: opener bug: p0") {
		t.Errorf("panicking command answered %+v", rep)
	}
	if n := CtlPanics() - before; n != 1 {
		t.Errorf("CtlPanics went up by %d, want 1", n)
	}
	// The daemon's lock was released by the panic: commands still work.
	rep, err = Call(d.Rundir, Request{Command: "show"})
	if err != nil || rep.Error != "" || !strings.Contains(rep.Output, "br0") {
		t.Errorf("show after the panic: %v %+v", err, rep)
	}
}

// FuzzCtlRequest: any line decodes to a request or a "bad request" error,
// and a decoded request runs without a panic (against a daemon without
// ports or OpenFlow: the opener of every port type is a stub).
func FuzzCtlRequest(f *testing.F) {
	for _, s := range []string{
		`{"command":"show"}`, `{"command":"add-br","args":["br0","fail_mode=standalone","datapath_id=0000000000000042"]}`,
		`{"command":"add-port","args":["br0","p1","type=geneve","options:remote_ip=flow","ofport_request=7"]}`,
		`{"command":"add-port","args":["br0","p2","mtu_request=1500","mac=00:00:00:00:00:01"]}`,
		`{"command":"del-port","args":["p1"]}`, `{"command":"dump-conntrack","args":["zone=5"]}`,
		`{"command":"flush-conntrack"}`, `{"command":"dump-cache","args":["br0"]}`, `{"command":"del-br","args":["br0"]}`,
	} {
		f.Add([]byte(s))
	}
	d := New(f.TempDir(), nil)
	d.OpenFlow = nil
	for typ := range d.Openers {
		d.Openers[typ] = func(cfg PortConfig) (port.Port, error) { return nil, errStubPort }
	}
	f.Cleanup(func() { d.Close() })
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := DecodeRequest(line)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "bad request: ") {
				t.Fatalf("error %q does not say bad request", err)
			}
			return
		}
		if len(req.Args) > MaxArgs || req.Command == "" {
			t.Fatalf("accepted %+v", req)
		}
		before := CtlPanics()
		d.safeExecute(req)
		if CtlPanics() != before {
			t.Fatalf("request %+v panicked", req)
		}
	})
}

var errStubPort = errors.New("stub port opener")
