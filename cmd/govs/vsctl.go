package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/govs-project/govs/internal/vswitchd"
)

// defaultRundir is where govs looks for govs-vswitchd, like ovs-vsctl's
// OVS_RUNDIR.
func defaultRundir() string {
	if globalRundir != "" {
		return globalRundir
	}
	if d := os.Getenv("GOVS_RUNDIR"); d != "" {
		return d
	}
	return "/var/run/govs"
}

// vsctl returns a command that sends itself to the daemon.
func vsctl(name string) func(args []string) error {
	return func(args []string) error {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		rundir := fs.String("rundir", defaultRundir(), "govs-vswitchd's run `DIR` ($GOVS_RUNDIR)")
		var more, stats bool
		if name == "dump-conntrack" {
			fs.BoolVar(&more, "m", false, "verbose: id, status and each end's TCP state (dpctl/dump-conntrack -m)")
			fs.BoolVar(&stats, "s", false, "with the seconds left before expiry (dpctl/dump-conntrack -s)")
		}
		// Options may come anywhere, as ovs-vsctl's getopt permutes:
		// parse again after each positional argument.
		var words []string
		for {
			if err := fs.Parse(args); err != nil {
				return err
			}
			if fs.NArg() == 0 {
				break
			}
			if args = fs.Args(); args[0] == "--" {
				words = append(words, args[1:]...)
				break
			}
			words, args = append(words, args[0]), args[1:]
		}
		if stats {
			words = append([]string{"-s"}, words...)
		}
		if more {
			words = append([]string{"-m"}, words...)
		}
		rep, err := vswitchd.Call(*rundir, vswitchd.Request{Command: name, Args: words})
		if err != nil {
			return err
		}
		if rep.Error != "" {
			return fmt.Errorf("%s", rep.Error)
		}
		fmt.Fprint(cmdOut, rep.Output)
		return nil
	}
}

func init() {
	for _, n := range []string{"add-br", "del-br", "add-port", "del-port", "show", "dump-cache", "dump-conntrack", "flush-conntrack"} {
		commands = append(commands, command{n, vswitchd.Commands[n] + " (to govs-vswitchd)", vsctl(n)})
	}
}
