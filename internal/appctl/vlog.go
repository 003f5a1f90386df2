package appctl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/govs-project/govs/internal/unixctl"
)

// VLog is the daemon's logging as OVS's vlog presents it: a level per
// destination (console, syslog, file) set by -v/--verbose words and
// vlog/set, a log file reopened by vlog/reopen. govs logs with zap and has
// one level per destination, not per module: a module word applies to
// all modules (vlog/list shows them all alike).
type VLog struct {
	Console, Syslog, File zap.AtomicLevel
	LogFile               string // "" without --log-file

	mu   sync.Mutex
	file *os.File
}

// Modules are govs's parts as vlog/list names them.
var Modules = []string{"bridge", "conntrack", "daemon", "datapath", "flowcache", "ofproto", "ovsdb", "tunnel", "unixctl", "vswitchd"}

// Off is above every zap level: the destination logs nothing.
const Off = zapcore.InvalidLevel

var levelNames = []struct {
	ovs string
	zap zapcore.Level
}{{"off", Off}, {"emer", zapcore.FatalLevel}, {"err", zapcore.ErrorLevel}, {"warn", zapcore.WarnLevel}, {"info", zapcore.InfoLevel}, {"dbg", zapcore.DebugLevel}}

// NewVLog returns OVS's defaults: every destination at info.
func NewVLog() *VLog {
	return &VLog{Console: zap.NewAtomicLevelAt(zapcore.InfoLevel), Syslog: zap.NewAtomicLevelAt(zapcore.InfoLevel), File: zap.NewAtomicLevelAt(zapcore.InfoLevel)}
}

func levelName(l zapcore.Level) string {
	for _, n := range levelNames {
		if n.zap == l {
			return strings.ToUpper(n.ovs)
		}
	}
	if l < zapcore.DebugLevel {
		return "DBG"
	}
	return "EMER"
}

// Set applies a vlog spec as OVS reads it (vlog_set_levels_from_string):
// words separated by ':', ',' or spaces, each a module ("any" or a
// module name), a destination ("any", console, syslog, file) or a level
// (off, emer, err, warn, info, dbg; "dbg" when none is given).
// "PATTERN:DEST:..." and "FACILITY:..." settings are accepted and do not
// change govs's log format.
func (v *VLog) Set(spec string) error {
	words := strings.FieldsFunc(spec, func(r rune) bool { return r == ':' || r == ',' || r == ' ' })
	if len(words) > 0 && (strings.EqualFold(words[0], "pattern") || strings.EqualFold(words[0], "facility")) {
		return nil
	}
	level, haveLevel := zapcore.DebugLevel, false
	var dests []*zap.AtomicLevel
	haveDest, haveModule := false, false
	for _, w := range words {
		lw := strings.ToLower(w)
		switch {
		case lw == "any":
			continue
		case lw == "console" || lw == "syslog" || lw == "file":
			if haveDest {
				return fmt.Errorf("cannot specify multiple destinations")
			}
			haveDest = true
			dests = append(dests, v.dest(lw))
		case isLevel(lw):
			if haveLevel {
				return fmt.Errorf("cannot specify multiple levels")
			}
			haveLevel = true
			for _, n := range levelNames {
				if n.ovs == lw {
					level = n.zap
				}
			}
		case isModule(lw):
			if haveModule {
				return fmt.Errorf("cannot specify multiple modules")
			}
			haveModule = true
		default:
			return fmt.Errorf("unknown module \"%s\"", w)
		}
	}
	if len(dests) == 0 {
		dests = []*zap.AtomicLevel{&v.Console, &v.Syslog, &v.File}
	}
	for _, d := range dests {
		d.SetLevel(level)
	}
	return nil
}

func (v *VLog) dest(name string) *zap.AtomicLevel {
	switch name {
	case "console":
		return &v.Console
	case "syslog":
		return &v.Syslog
	}
	return &v.File
}

func isLevel(w string) bool {
	for _, n := range levelNames {
		if n.ovs == w {
			return true
		}
	}
	return false
}

func isModule(w string) bool {
	for _, m := range Modules {
		if m == w {
			return true
		}
	}
	return false
}

// List prints the levels as vlog/list does.
func (v *VLog) List() string {
	var b strings.Builder
	b.WriteString("                 console    syslog    file\n")
	b.WriteString("                 -------    ------    ------\n")
	for _, m := range Modules {
		fmt.Fprintf(&b, "%-16s  %4s       %4s       %4s\n", m, levelName(v.Console.Level()), levelName(v.Syslog.Level()), levelName(v.File.Level()))
	}
	return b.String()
}

// Write writes to the log file (a zapcore.WriteSyncer reopened by Reopen).
func (v *VLog) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.file == nil {
		return len(p), nil
	}
	return v.file.Write(p)
}

// Sync flushes the log file.
func (v *VLog) Sync() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.file == nil {
		return nil
	}
	return v.file.Sync()
}

// Reopen (re)opens the log file, as vlog/reopen after logrotate.
func (v *VLog) Reopen() error {
	if v.LogFile == "" {
		return fmt.Errorf("Logging to file not configured")
	}
	if err := os.MkdirAll(filepath.Dir(v.LogFile), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(v.LogFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("%s: %w", v.LogFile, err)
	}
	v.mu.Lock()
	old := v.file
	v.file = f
	v.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Close closes the log file (vlog/close).
func (v *VLog) Close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.file != nil {
		v.file.Close()
		v.file = nil
	}
}

// Logger builds the zap logger writing to stderr (console) and to the log
// file, each at its destination's level.
func (v *VLog) Logger() (*zap.Logger, error) {
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	cores := []zapcore.Core{zapcore.NewCore(zapcore.NewConsoleEncoder(ec), zapcore.Lock(os.Stderr), v.Console)}
	if v.LogFile != "" {
		if err := v.Reopen(); err != nil {
			return nil, err
		}
		cores = append(cores, zapcore.NewCore(zapcore.NewConsoleEncoder(ec), v, v.File))
	}
	return zap.New(zapcore.NewTee(cores...), zap.ErrorOutput(zapcore.Lock(os.Stderr))), nil
}

// register adds the vlog/* commands.
func (v *VLog) register(s *unixctl.Server) {
	s.Register("vlog/set", "{spec | PATTERN:destination:pattern}", 0, -1, func(args []string) (string, error) {
		if len(args) == 0 {
			args = []string{""}
		}
		for _, a := range args {
			if err := v.Set(a); err != nil {
				return "", err
			}
		}
		return "", nil
	})
	s.Register("vlog/list", "", 0, 0, func([]string) (string, error) { return v.List(), nil })
	s.Register("vlog/list-pattern", "", 0, 0, func([]string) (string, error) {
		return "console: govs (zap console format)\nsyslog: govs (zap console format)\nfile: govs (zap console format)\n", nil
	})
	s.Register("vlog/reopen", "", 0, 0, func([]string) (string, error) { return "", v.Reopen() })
	s.Register("vlog/close", "", 0, 0, func([]string) (string, error) { v.Close(); return "", nil })
}
