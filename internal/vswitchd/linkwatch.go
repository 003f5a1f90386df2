package vswitchd

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/ofproto"
)

// watchLinks announces the changes of the bridge's port devices (up or
// down, carrier lost or back) to its controllers as OFPT_PORT_STATUS, as
// OVS's netdev-linux does from the kernel's link notifications
// (RTNLGRP_LINK). Every notification makes it look at all the bridge's
// ports again: one dump of the links, and only what changed is announced.
// It returns when ctx is done.
func watchLinks(ctx context.Context, dp *datapath.Bridge, ob *ofproto.Bridge, log *zap.Logger) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("link notifications: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_LINK}); err != nil {
		unix.Close(fd)
		return fmt.Errorf("link notifications: bind: %w", err)
	}
	// Through the runtime's poller, so that closing the file at ctx's end
	// wakes the read.
	f := os.NewFile(uintptr(fd), "rtnetlink-link")
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	buf := make([]byte, 64<<10)
	for {
		_, err := f.Read(buf)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, unix.ENOBUFS):
			// Notifications were lost: looking at every port again
			// covers them.
		case err != nil:
			f.Close()
			return fmt.Errorf("link notifications: %w", err)
		}
		refreshPorts(dp, ob)
		log.Debug("link notification: ports refreshed")
	}
}

// refreshPorts announces each port's device as it is now.
func refreshPorts(dp *datapath.Bridge, ob *ofproto.Bridge) {
	links := linkFlags()
	for _, p := range dp.Ports() {
		ob.RefreshPort(portInfo(p, links))
	}
}
