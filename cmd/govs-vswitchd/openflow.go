package main

import "github.com/govs-project/govs/internal/vswitchd"

// setupOpenFlow plugs the OpenFlow channel into the daemon.
func setupOpenFlow(d *vswitchd.Daemon) {}
