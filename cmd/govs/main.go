// Command govs is the govs command-line tool: ovs-ofctl-style flow tools
// (parse-flows), an offline pipeline tracer (trace), and the ovs-vsctl-
// and ovs-ofctl-style commands against a running govs-vswitchd.
//
// Like the Open vSwitch tools, it prints errors on stderr and exits with
// status 1 when a command fails, 2 when it was called wrongly; global
// options (--rundir, --version, --help) may come before the command
// (`govs --rundir DIR show`, as `ovs-vsctl --db=... show`) or after it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/govs-project/govs/internal/version"
)

type command struct {
	name    string
	summary string
	run     func(args []string) error
}

var commands = []command{
	{"parse-flows", "parse-flows [-O VERSION] FILE: print FILE's flows as ovs-ofctl dump-flows --no-stats prints them", runParseFlows},
	{"trace", "trace --flows FILE [--bridge NAME] [--tlv-map SPEC] [--ct-next FLAGS] PACKET | trace --rundir DIR BRIDGE PACKET | trace --demo: walk a packet through a pipeline as ovs-appctl ofproto/trace prints it", runTrace},
}

// usageError is a command called wrongly: exit status 2, as the OVS tools.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

const globalOptionsHelp = "global options (before or after the command): --rundir DIR (govs-vswitchd's run directory, $GOVS_RUNDIR, default /var/run/govs), -V/--version, -h/--help"

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: govs [--rundir DIR] COMMAND [ARGS]\n       govs help COMMAND\n\n%s\n\ncommands:\n", globalOptionsHelp)
	for _, c := range commands {
		fmt.Fprintf(w, "  %s\n", c.summary)
	}
}

// globalRundir is --rundir given before the command; it replaces
// $GOVS_RUNDIR as the default of every command's own --rundir.
var globalRundir string

// cmdOut is where commands that go through run print (os.Stdout, or a
// test's buffer).
var cmdOut io.Writer = os.Stdout

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is main without the exit, for tests: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cmdOut = stdout
	args, err := takeGlobalOptions(args)
	if err != nil {
		fmt.Fprintf(stderr, "govs: %v\n", err)
		return 2
	}
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help":
		usage(stdout)
		return 0
	case "-V", "--version", "version":
		fmt.Fprintf(stdout, "govs %s\n", version.String())
		return 0
	case "help":
		return help(args[1:], stdout, stderr)
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "govs: unknown command %q; use --help for help\n", args[0])
		return 2
	}
	if err := c.run(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // the flag package printed the command's options
		}
		fmt.Fprintf(stderr, "govs %s: %v\n", c.name, err)
		var ue usageError
		if errors.As(err, &ue) || isFlagError(err) {
			return 2
		}
		return 1
	}
	return 0
}

// takeGlobalOptions removes the global options that come before the
// command word and returns the rest. --version and --help stay in place:
// run answers them.
func takeGlobalOptions(args []string) ([]string, error) {
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--rundir" || a == "-rundir":
			if len(args) < 2 {
				return nil, fmt.Errorf("option %s needs a value", a)
			}
			globalRundir, args = args[1], args[2:]
		case strings.HasPrefix(a, "--rundir=") || strings.HasPrefix(a, "-rundir="):
			_, globalRundir, _ = strings.Cut(a, "=")
			args = args[1:]
		case a == "--":
			return args[1:], nil
		case strings.HasPrefix(a, "-") && a != "-h" && a != "--help" && a != "-V" && a != "--version":
			return nil, fmt.Errorf("unknown global option %s (%s)", a, globalOptionsHelp)
		default:
			return args, nil
		}
	}
	return args, nil
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// help prints one command's usage (govs help COMMAND), or all of them.
func help(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stdout)
		return 0
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprintf(stderr, "govs help: unknown command %q\n", args[0])
		return 2
	}
	fmt.Fprintf(stdout, "usage: govs %s\n", c.summary)
	if _, isOfctl := ofctlCommandNamed(c.name); isOfctl {
		fmt.Fprintln(stdout, ofctlOptionsHelp)
	}
	fmt.Fprintln(stdout, globalOptionsHelp)
	return 0
}

// isFlagError tells the flag package's parse errors (an unknown or
// malformed option) from a command's own failures.
func isFlagError(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "flag provided but not defined") ||
		strings.HasPrefix(s, "invalid value ") || strings.HasPrefix(s, "flag needs an argument") ||
		strings.HasPrefix(s, "bad flag syntax")
}
