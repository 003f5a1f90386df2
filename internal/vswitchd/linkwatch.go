package vswitchd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

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
// After each look, changed is called. It returns when ctx is done.
func watchLinks(ctx context.Context, dp *datapath.Bridge, ob *ofproto.Bridge, log *zap.Logger, changed func()) error {
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
		if err := readLinkNotification(f, buf, time.Time{}); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			f.Close()
			return err
		}
		// Take the notifications of the next moments with it (a device
		// brought up is soon followed by its carrier, as linkwatch runs):
		// OVS's main loop reads them all before it looks at the ports. A
		// link that keeps flapping is still looked at every 4 settles.
		for until := time.Now().Add(4 * linkSettle); time.Now().Before(until); {
			deadline := time.Now().Add(linkSettle)
			if deadline.After(until) {
				deadline = until
			}
			if readLinkNotification(f, buf, deadline) != nil {
				break
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		linkNotifications.Add(1)
		refreshPorts(dp, ob)
		changed()
		log.Debug("link notification: ports refreshed")
	}
}

// linkNotifications counts the link notifications looked at: the
// Interface rows read their devices' driver facts again after one, as
// netdev-linux drops its cache on RTM_NEWLINK.
var linkNotifications atomic.Uint64

// linkSettle is how long link notifications are gathered before the
// ports are looked at.
const linkSettle = 50 * time.Millisecond

// readLinkNotification reads one notification (until deadline, if not
// zero). Lost notifications (ENOBUFS) are no error: looking at every port
// again covers them.
func readLinkNotification(f *os.File, buf []byte, deadline time.Time) error {
	if err := f.SetReadDeadline(deadline); err != nil {
		return fmt.Errorf("link notifications: %w", err)
	}
	if _, err := f.Read(buf); err != nil && !errors.Is(err, unix.ENOBUFS) {
		return fmt.Errorf("link notifications: %w", err)
	}
	return nil
}

// refreshPorts announces each port's device as it is now.
func refreshPorts(dp *datapath.Bridge, ob *ofproto.Bridge) {
	links := linkFlags()
	for _, p := range dp.Ports() {
		ob.RefreshPort(portInfo(p, links))
	}
}
