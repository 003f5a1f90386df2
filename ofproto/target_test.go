package ofproto

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestListenUnix: a punix: target replaces a stale socket, refuses to
// replace anything else, accepts as soon as its file exists, and Close
// removes the file.
func TestListenUnix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "br-int.mgmt")
	tgt := Target{Passive: true, Network: "unix", Address: path}

	stale, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close() // the file stays, as after a crash
	ln, err := Listen(tgt)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("connecting once %s exists: %v", path, err)
	}
	c.Close()
	ln.Close()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("after Close the directory holds %v, want nothing", ents)
	}

	if err := os.WriteFile(path, []byte("not a socket"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(tgt); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Fatalf("over a regular file: err %v, want one saying it is not a socket", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "not a socket" {
		t.Fatalf("the regular file was changed: %q", b)
	}
}
