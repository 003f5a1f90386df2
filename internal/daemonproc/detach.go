package daemonproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The environment tells a re-executed process which role it plays and
// where to report readiness.
const (
	stageEnv = "GOVS_DAEMON_STAGE" // "monitor" or "daemon"
	readyEnv = "GOVS_DAEMON_READY_FD"
)

// Options are the OVS daemon options.
type Options struct {
	Detach  bool // --detach: run in the background, return once the daemon is up
	Monitor bool // --monitor: restart the daemon when it crashes
	NoChdir bool // --no-chdir: keep the working directory (else "/" once detached)
	// Logf reports the monitor's restarts (nil: to stderr).
	Logf func(format string, args ...any)
}

// Notifier tells the process that started a detached daemon whether it
// came up. A nil Notifier does nothing (the daemon runs in the foreground).
type Notifier struct{ f *os.File }

// Ready says the daemon is up: the starting process exits 0.
func (n *Notifier) Ready() { n.send("ok") }

// Fail says the daemon could not start: the starting process prints err
// and exits 1.
func (n *Notifier) Fail(err error) { n.send("error: " + err.Error()) }

func (n *Notifier) send(msg string) {
	if n == nil || n.f == nil {
		return
	}
	fmt.Fprintln(n.f, strings.ReplaceAll(msg, "\n", " "))
	n.f.Close()
	n.f = nil
}

// Start does what --detach and --monitor ask before the daemon runs. It
// returns in the process that is to run the daemon (with the Notifier to
// call once it is up or has failed); the starting process and the monitor
// never return from it (they exit).
func Start(o Options) (*Notifier, error) {
	stage := os.Getenv(stageEnv)
	os.Unsetenv(stageEnv)
	var n *Notifier
	if fd := os.Getenv(readyEnv); fd != "" {
		os.Unsetenv(readyEnv)
		if i, err := strconv.Atoi(fd); err == nil {
			n = &Notifier{f: os.NewFile(uintptr(i), "ready")}
		}
	}
	switch stage {
	case "daemon":
		if o.Detach && !o.NoChdir {
			os.Chdir("/")
		}
		return n, nil
	case "monitor":
		runMonitor(o, n)
	}
	if !o.Detach && !o.Monitor {
		return nil, nil
	}
	exe, err := selfPath()
	if err != nil {
		return nil, err
	}
	if !o.Detach {
		// --monitor in the foreground: this process is the monitor.
		runMonitorAs(exe, o, nil)
	}
	next := "daemon"
	if o.Monitor {
		next = "monitor"
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := child(exe, next, w)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("--detach: %w", err)
	}
	w.Close()
	// Wait for the daemon's word: "ok", an error, or EOF if it died first.
	line, _ := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSpace(line)
	if line == "ok" {
		os.Exit(0)
	}
	if msg, ok := strings.CutPrefix(line, "error: "); ok {
		fmt.Fprintf(os.Stderr, "%s: %s\n", filepath.Base(os.Args[0]), msg)
	} else {
		err := cmd.Wait()
		fmt.Fprintf(os.Stderr, "%s: daemon exited before it was up (%v); see the log file\n", filepath.Base(os.Args[0]), err)
	}
	os.Exit(1)
	return nil, nil
}

// selfPath is the path to exec this program again under the name it was
// started with: /proc/PID/comm comes from that name, and ovs-ctl checks
// it is "ovs-vswitchd" (os.Executable would resolve a symlink to
// govs-vswitchd).
func selfPath() (string, error) {
	p := os.Args[0]
	if !strings.Contains(p, "/") {
		lp, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("finding %s to re-execute: %w", p, err)
		}
		p = lp
	}
	return filepath.Abs(p)
}

// child is this program again with the same arguments in a given stage;
// ready (may be nil) becomes its readiness descriptor.
func child(exe, stage string, ready *os.File) *exec.Cmd {
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = append(os.Environ(), stageEnv+"="+stage)
	if ready != nil {
		cmd.ExtraFiles = []*os.File{ready}
		cmd.Env = append(cmd.Env, readyEnv+"=3")
	}
	// Detached processes keep no terminal: logs go to --log-file.
	if devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	}
	return cmd
}

func runMonitor(o Options, n *Notifier) {
	exe, err := selfPath()
	if err != nil {
		n.Fail(err)
		os.Exit(1)
	}
	if !o.NoChdir {
		os.Chdir("/")
	}
	runMonitorAs(exe, o, n)
}

// crashSignals are the deaths after which OVS's monitor restarts the
// daemon (daemon-unix.c should_restart); a Go panic or fatal error exits
// with status 2, which counts as a crash too.
var crashSignals = map[syscall.Signal]bool{
	syscall.SIGABRT: true, syscall.SIGALRM: true, syscall.SIGBUS: true, syscall.SIGFPE: true,
	syscall.SIGILL: true, syscall.SIGPIPE: true, syscall.SIGSEGV: true, syscall.SIGXCPU: true,
	syscall.SIGXFSZ: true,
}

// Crashed says whether a daemon's exit is one the monitor restarts after.
func Crashed(ws syscall.WaitStatus) bool {
	if ws.Signaled() {
		return crashSignals[ws.Signal()]
	}
	return ws.Exited() && ws.ExitStatus() == 2
}

// runMonitorAs starts the daemon and restarts it after each crash, then
// exits as the daemon did.
func runMonitorAs(exe string, o Options, n *Notifier) {
	logf := o.Logf
	if logf == nil {
		logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	// lastRestart throttles restarts to one every 10 s, as OVS's monitor
	// does; the first restart is immediate.
	var lastRestart time.Time
	for {
		var ready *os.File
		if n != nil {
			ready = n.f
		}
		cmd := child(exe, "daemon", ready)
		if !o.Detach {
			cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		}
		if err := cmd.Start(); err != nil {
			n.Fail(err)
			os.Exit(1)
		}
		if n != nil {
			// The daemon reports readiness itself.
			n.f.Close()
			n = nil
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if err == nil || !errors.As(err, &ee) {
			os.Exit(0)
		}
		ws := ee.Sys().(syscall.WaitStatus)
		if !Crashed(ws) {
			os.Exit(max(ws.ExitStatus(), 1))
		}
		logf("monitor: daemon pid %d died (%v), restarting", cmd.Process.Pid, ee)
		if d := 10*time.Second - time.Since(lastRestart); d > 0 {
			time.Sleep(d)
		}
		lastRestart = time.Now()
	}
}
