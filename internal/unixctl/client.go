package unixctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ServerError is an error reply: the text ovs-appctl prints before
// "server returned an error" (exit status 2).
type ServerError struct{ Text string }

func (e *ServerError) Error() string { return strings.TrimSuffix(e.Text, "\n") }

// Call sends one command over the socket at path and returns the result.
// An error reply is a *ServerError.
func Call(path string, timeout time.Duration, method string, params ...string) (string, error) {
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return "", fmt.Errorf("cannot connect to %s: %w", path, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if params == nil {
		params = []string{}
	}
	req, _ := json.Marshal(map[string]any{"id": 0, "method": method, "params": params})
	if _, err := c.Write(req); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	var rep struct {
		Result *string          `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(c).Decode(&rep); err != nil {
		return "", fmt.Errorf("%s: reading reply: %w", path, err)
	}
	if rep.Error != nil && string(*rep.Error) != "null" {
		var text string
		if err := json.Unmarshal(*rep.Error, &text); err != nil {
			text = string(*rep.Error)
		}
		return "", &ServerError{Text: text}
	}
	if rep.Result == nil {
		return "", fmt.Errorf("%s: reply has neither result nor error", path)
	}
	return *rep.Result, nil
}

// SocketPath is where a daemon serves unixctl: RUNDIR/PROGRAM.PID.ctl.
func SocketPath(rundir, program string, pid int) string {
	return filepath.Join(rundir, program+"."+strconv.Itoa(pid)+".ctl")
}

// Target resolves an ovs-appctl target as ovs-appctl does: a name with a
// '/' is a socket path; otherwise RUNDIR/NAME.pid names the daemon whose
// socket is RUNDIR/NAME.PID.ctl, and the pidfile must be locked by that
// pid (an unlocked pidfile is a dead daemon's).
func Target(rundir, target string) (string, error) {
	if strings.Contains(target, "/") {
		return target, nil
	}
	pidfile := filepath.Join(rundir, target+".pid")
	pid, err := LockedPid(pidfile)
	if err != nil {
		return "", fmt.Errorf("cannot read pidfile \"%s\" (%w)", pidfile, err)
	}
	return SocketPath(rundir, target, pid), nil
}

// LockedPid returns the pid holding the POSIX write lock on a pidfile,
// ESRCH when nobody holds it (OVS's "No such process").
func LockedPid(pidfile string) (int, error) {
	f, err := os.OpenFile(pidfile, os.O_RDWR, 0)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return 0, pe.Err
		}
		return 0, err
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return 0, err
	}
	if lk.Type == syscall.F_UNLCK {
		return 0, syscall.ESRCH
	}
	return int(lk.Pid), nil
}
