package appctl

import (
	"errors"
	"net"
	"net/netip"
	"strings"

	"github.com/govs-project/govs/internal/vswitchd"
)

// ovs/route/add and tnl/neigh/set (tnl/arp/set): OVS's userspace tunnels
// keep their own route and neighbour tables; govs's tunnels send through
// the kernel's, so the same commands write the kernel's (the route
// through the bridge's LOCAL port device, the neighbour on it). Answers
// and errors are OVS's.

func (a *App) registerTnl() {
	a.Server.Register("ovs/route/add", "ip_addr/prefix_len out_br_name [gw] [pkt_mark=mark]", 2, 4, a.routeAdd)
	a.Server.Register("tnl/arp/set", "BRIDGE IP MAC", 3, 3, a.neighSet)
	a.Server.Register("tnl/neigh/set", "BRIDGE IP MAC", 3, 3, a.neighSet)
}

func (a *App) routeAdd(args []string) (string, error) {
	prefix, err := netip.ParsePrefix(args[0])
	if err != nil {
		if addr, err2 := netip.ParseAddr(args[0]); err2 == nil {
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		} else {
			return "", errors.New("Invalid parameters")
		}
	}
	var gw netip.Addr
	for _, x := range args[2:] {
		if strings.HasPrefix(x, "pkt_mark=") {
			continue // the kernel's table has no marks for govs's tunnels
		}
		if gw, err = netip.ParseAddr(x); err != nil {
			return "", errors.New("Invalid gateway")
		}
	}
	if err := vswitchd.AddKernelRoute(prefix, args[1], gw); err != nil {
		a.D.Log.Sugar().Warnw("ovs/route/add failed", "route", args[0], "device", args[1], "error", err)
		return "", errors.New("Error while inserting route.")
	}
	return "OK\n", nil
}

func (a *App) neighSet(args []string) (string, error) {
	if _, ok := a.bridge(args[0]); !ok {
		return "", errors.New("no such bridge")
	}
	ip, err := netip.ParseAddr(args[1])
	if err != nil {
		return "", errors.New("bad IP address")
	}
	mac, err := net.ParseMAC(args[2])
	if err != nil || len(mac) != 6 {
		return "", errors.New("bad MAC address")
	}
	if err := vswitchd.SetKernelNeighbour(args[0], ip.Unmap(), mac); err != nil {
		return "", err
	}
	return "OK\n", nil
}
