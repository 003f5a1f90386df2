package daemonproc

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/govs-project/govs/internal/unixctl"
)

// A helper process holds a pidfile while the test looks at it (POSIX
// locks never conflict within one process).
func TestMain(m *testing.M) {
	if path := os.Getenv("DAEMONPROC_TEST_HOLD"); path != "" {
		pf, err := CreatePidfile(path)
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		bufio.NewReader(os.Stdin).ReadString('\n')
		pf.Remove()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func holdPidfile(t *testing.T, path string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DAEMONPROC_TEST_HOLD="+path)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("helper: %q", line)
	}
	return cmd, func() { in.Write([]byte("\n")); cmd.Wait() }
}

// TestPidfileLock: the pidfile holds "PID\n" under a POSIX write lock that
// F_GETLK (what ovs-appctl does) reports with the holder's pid; a second
// daemon gets OVS's "already running" error; after the holder exits,
// the file is gone and can be taken.
func TestPidfileLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ovs-vswitchd.pid")
	cmd, release := holdPidfile(t, path)
	data, _ := os.ReadFile(path)
	if string(data) != strconv.Itoa(cmd.Process.Pid)+"\n" {
		t.Errorf("pidfile %q, want %d", data, cmd.Process.Pid)
	}
	if pid, err := unixctl.LockedPid(path); err != nil || pid != cmd.Process.Pid {
		t.Errorf("LockedPid = %d %v, want %d", pid, err, cmd.Process.Pid)
	}
	_, err := CreatePidfile(path)
	var ar *AlreadyRunningError
	if !errors.As(err, &ar) || ar.Pid != cmd.Process.Pid ||
		err.Error() != path+": already running as pid "+strconv.Itoa(cmd.Process.Pid)+", aborting" {
		t.Errorf("second CreatePidfile: %v", err)
	}
	release()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("pidfile left after Remove: %v", err)
	}
	pf, err := CreatePidfile(path)
	if err != nil {
		t.Fatal(err)
	}
	pf.Remove()
}

// TestStalePidfile: an unlocked pidfile (a killed daemon's) reads as "No
// such process" for ovs-appctl and is taken over.
func TestStalePidfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ovs-vswitchd.pid")
	os.WriteFile(path, []byte("999999\n"), 0o644)
	if _, err := unixctl.LockedPid(path); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("unlocked pidfile: %v, want ESRCH", err)
	}
	pf, err := CreatePidfile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Remove()
	data, _ := os.ReadFile(path)
	if strings.TrimSpace(string(data)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pidfile %q", data)
	}
}

// TestRemoveStaleSockets: sockets of other pids and the named ones go;
// this process's socket, other files and other programs' sockets stay.
func TestRemoveStaleSockets(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string) {
		ln, err := net.Listen("unix", filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close()
	}
	self := "ovs-vswitchd." + strconv.Itoa(os.Getpid()) + ".ctl"
	for _, n := range []string{"ovs-vswitchd.123.ctl", self, "br-int.mgmt", "govs-vswitchd.ctl", "ovsdb-server.77.ctl", "db.sock"} {
		mk(n)
	}
	os.WriteFile(filepath.Join(dir, "ovs-vswitchd.pid"), []byte("1\n"), 0o644)
	got := RemoveStaleSockets(dir, "ovs-vswitchd", []string{"*.mgmt", "govs-vswitchd.ctl"})
	if strings.Join(got, " ") != "br-int.mgmt govs-vswitchd.ctl ovs-vswitchd.123.ctl" {
		t.Errorf("removed %v", got)
	}
	for _, n := range []string{self, "ovsdb-server.77.ctl", "db.sock", "ovs-vswitchd.pid"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s removed: %v", n, err)
		}
	}
}

// TestCrashed: the monitor restarts after crash signals and Go's exit
// status 2, not after TERM, KILL or a clean exit.
func TestCrashed(t *testing.T) {
	for _, tc := range []struct {
		ws   syscall.WaitStatus
		want bool
	}{
		{syscall.WaitStatus(int(syscall.SIGSEGV)), true},
		{syscall.WaitStatus(int(syscall.SIGABRT)), true},
		{syscall.WaitStatus(int(syscall.SIGTERM)), false},
		{syscall.WaitStatus(int(syscall.SIGKILL)), false},
		{syscall.WaitStatus(2 << 8), true},
		{syscall.WaitStatus(1 << 8), false},
		{syscall.WaitStatus(0), false},
	} {
		if got := Crashed(tc.ws); got != tc.want {
			t.Errorf("Crashed(%#x) = %v", int(tc.ws), got)
		}
	}
}
