package vswitchd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/govs-project/govs/datapath"
	"github.com/govs-project/govs/datapath/rtnl"
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
		var ch linkChanges
		if err := readLinkNotification(f, buf, time.Time{}, &ch); err != nil {
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
			if readLinkNotification(f, buf, deadline, &ch) != nil {
				break
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		linkLog.record(&ch)
		refreshPorts(dp, ob, &ch)
		changed()
		log.Debug("link notification: ports refreshed", zap.Int("links", len(ch.names)), zap.Bool("all", ch.all))
	}
}

// linkChanges is what a batch of link notifications named: the
// interfaces by name, or all of them when notifications were lost or
// could not be read.
type linkChanges struct {
	names map[string]struct{}
	all   bool
}

func (c *linkChanges) has(name string) bool {
	_, ok := c.names[name]
	return c.all || ok
}

// linkChangeLog remembers, per interface, the last batch of link
// notifications that named it, so the device caches (Interface.status,
// link speed, port features) read again only the devices that changed,
// as netdev-linux drops one netdev's cache on its RTM_NEWLINK: with
// 1,000 pods, a pod's veth coming up costs two ioctls, not 2,000.
type linkChangeLog struct {
	mu     sync.Mutex
	gen    uint64            // batches recorded
	allGen uint64            // the last batch that may have changed any interface
	byName map[string]uint64 // the last batch that named the interface
}

// maxLinkNames bounds byName (pods come and go with new names): past it
// the log forgets the names and counts the batch as changing all.
const maxLinkNames = 4096

var linkLog linkChangeLog

func (l *linkChangeLog) record(c *linkChanges) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	if c.all || len(l.byName)+len(c.names) > maxLinkNames {
		l.allGen, l.byName = l.gen, nil
		return
	}
	if l.byName == nil {
		l.byName = map[string]uint64{}
	}
	for n := range c.names {
		l.byName[n] = l.gen
	}
}

// current is the generation to store with a device fact read now.
func (l *linkChangeLog) current() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen
}

// fresh tells whether a fact about name read at generation gen is still
// good: no batch since then named name or all interfaces.
func (l *linkChangeLog) fresh(name string, gen uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return gen >= l.allGen && gen >= l.byName[name]
}

// linkSettle is how long link notifications are gathered before the
// ports are looked at.
const linkSettle = 50 * time.Millisecond

// readLinkNotification reads one datagram of notifications (until
// deadline, if not zero) and adds the interfaces they name to c. Lost
// notifications (ENOBUFS) are no error: they mark every interface changed.
func readLinkNotification(f *os.File, buf []byte, deadline time.Time, c *linkChanges) error {
	if err := f.SetReadDeadline(deadline); err != nil {
		return fmt.Errorf("link notifications: %w", err)
	}
	n, err := f.Read(buf)
	if errors.Is(err, unix.ENOBUFS) {
		c.all = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("link notifications: %w", err)
	}
	c.add(buf[:n])
	return nil
}

// ifName is the IFLA_IFNAME attribute of an ifinfomsg and its
// attributes.
func ifName(b []byte) (string, bool) {
	if len(b) < unix.SizeofIfInfomsg {
		return "", false
	}
	for _, a := range rtnl.ParseAttrs(b[unix.SizeofIfInfomsg:]) {
		if a.Type == unix.IFLA_IFNAME {
			name := string(bytes.TrimRight(a.Value, "\x00"))
			return name, name != ""
		}
	}
	return "", false
}

// add takes the interface names of RTM_NEWLINK and RTM_DELLINK messages
// (IFLA_IFNAME); a message it cannot read marks every interface changed.
func (c *linkChanges) add(b []byte) {
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		c.all = true
		return
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Type != unix.RTM_NEWLINK && m.Header.Type != unix.RTM_DELLINK {
			continue
		}
		name, ok := ifName(m.Data)
		if !ok {
			c.all = true
			continue
		}
		if c.names == nil {
			c.names = map[string]struct{}{}
		}
		c.names[name] = struct{}{}
	}
}

// refreshPorts announces the device of each port c names as it is now.
func refreshPorts(dp *datapath.Bridge, ob *ofproto.Bridge, c *linkChanges) {
	links := linkFlags()
	for _, p := range dp.Ports() {
		if c.has(p.Name) {
			ob.RefreshPort(portInfo(p, links))
		}
	}
}
