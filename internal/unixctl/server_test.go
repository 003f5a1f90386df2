package unixctl

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govs-project/govs/internal/unixsock"
)

func testServer(t *testing.T) (*Server, string) {
	t.Helper()
	s := NewServer(nil)
	s.Register("echo", "[ARG...]", 0, -1, func(args []string) (string, error) { return strings.Join(args, " ") + "\n", nil })
	s.Register("fail", "", 0, 0, func([]string) (string, error) { return "", errors.New("nosuchbr: unknown bridge") })
	s.Register("boom", "", 0, 0, func([]string) (string, error) { panic("kaboom") })
	s.Register("two", "A B", 2, 2, func(args []string) (string, error) { return "ok", nil })
	path := filepath.Join(t.TempDir(), "t.ctl")
	ln, err := unixsock.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Serve(ctx, ln)
	return s, path
}

// exchange sends raw bytes and reads one reply object.
func exchange(t *testing.T, path, req string) string {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

// TestWireFormat: the bytes on the socket are OVS's (golden 16): a result
// with "error":null, an error without "result", the id echoed, no
// framing, and OVS's texts for unknown commands and argument counts.
func TestWireFormat(t *testing.T) {
	_, path := testServer(t)
	for _, tc := range []struct{ req, want string }{
		{`{"id":0,"method":"echo","params":["a","b"]}`, `{"id":0,"result":"a b\n","error":null}`},
		{`{"id":0,"method":"nosuch/cmd","params":[]}`, `{"id":0,"error":"\"nosuch/cmd\" is not a valid command (use \"list-commands\" to see a list of valid commands)\n"}`},
		{`{"id":0,"method":"fail","params":[]}`, `{"id":0,"error":"nosuchbr: unknown bridge\n"}`},
		{`{"id":7,"method":"two","params":["x"]}`, `{"id":7,"error":"\"two\" command requires at least 2 arguments\n"}`},
		{`{"id":"s","method":"two","params":["x","y","z"]}`, `{"id":"s","error":"\"two\" command takes at most 2 arguments\n"}`},
		{`{"id":0,"method":"two","params":["x","y"]}`, `{"id":0,"result":"ok\n","error":null}`},
		{`{"id":0,"method":"echo","params":["<&>"]}`, `{"id":0,"result":"<&>\n","error":null}`},
	} {
		if got := exchange(t, path, tc.req); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.req, got, tc.want)
		}
	}
}

// TestPanicBecomesError: a handler panic is an error reply, counted, and
// the server goes on answering.
func TestPanicBecomesError(t *testing.T) {
	s, path := testServer(t)
	got := exchange(t, path, `{"id":0,"method":"boom","params":[]}`)
	if !strings.Contains(got, `"error":"boom: internal error: kaboom\n"`) {
		t.Errorf("panic reply %s", got)
	}
	if s.Panics.Load() != 1 {
		t.Errorf("panics counted %d", s.Panics.Load())
	}
	if got := exchange(t, path, `{"id":0,"method":"echo","params":["still"]}`); !strings.Contains(got, "still") {
		t.Errorf("after a panic: %s", got)
	}
}

// TestBadRequestsClose: a message that is not a request closes the
// connection, not the server.
func TestBadRequestsClose(t *testing.T) {
	_, path := testServer(t)
	for _, req := range []string{`[1,2]`, `{"id":0,"method":5,"params":[]}`, `{"id":0,"method":"echo","params":[1]}`,
		`{"method":"echo","params":[]}`, `{"id":0,"method":"echo","params":"x"}`, `}`} {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte(req))
		buf := make([]byte, 100)
		if n, err := c.Read(buf); err == nil {
			t.Errorf("%s: answered %q", req, buf[:n])
		}
		c.Close()
	}
	if got := exchange(t, path, `{"id":0,"method":"echo","params":["ok"]}`); !strings.Contains(got, "ok") {
		t.Errorf("server stopped answering: %s", got)
	}
}

// TestClient: Call returns results and *ServerError texts; Target finds
// a socket path as given.
func TestClient(t *testing.T) {
	_, path := testServer(t)
	out, err := Call(path, 5*time.Second, "echo", "x")
	if err != nil || out != "x\n" {
		t.Errorf("Call echo: %q %v", out, err)
	}
	_, err = Call(path, 5*time.Second, "fail")
	var se *ServerError
	if !errors.As(err, &se) || se.Text != "nosuchbr: unknown bridge\n" {
		t.Errorf("Call fail: %v", err)
	}
	if p, err := Target("/nonexistent", path); err != nil || p != path {
		t.Errorf("Target(path) = %q %v", p, err)
	}
	if _, err := Target(t.TempDir(), "ovs-vswitchd"); err == nil || !strings.Contains(err.Error(), "cannot read pidfile") || !strings.Contains(err.Error(), "no such file or directory") {
		t.Errorf("Target without pidfile: %v", err)
	}
}

// TestRealOVSAppctl: the real ovs-appctl talks to the server unchanged:
// results on stdout with status 0, errors with "server returned an
// error" and status 2.
func TestRealOVSAppctl(t *testing.T) {
	appctl, err := exec.LookPath("ovs-appctl")
	if err != nil {
		t.Skip("ovs-appctl not installed (make deps installs openvswitch-switch)")
	}
	_, path := testServer(t)
	out, err := exec.Command(appctl, "-t", path, "echo", "hello", "world").CombinedOutput()
	if err != nil || string(out) != "hello world\n" {
		t.Errorf("echo: %v %q", err, out)
	}
	out, err = exec.Command(appctl, "-t", path, "nosuch/cmd").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), `"nosuch/cmd" is not a valid command`) ||
		!strings.Contains(string(out), "server returned an error") {
		t.Errorf("nosuch/cmd: %v %q", err, out)
	}
	out, err = exec.Command(appctl, "-t", path, "list-commands").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "The available commands are:\n") || !strings.Contains(string(out), "\n  two                     A B\n") {
		t.Errorf("list-commands: %v %q", err, out)
	}
}
