package vswitchd

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/govs-project/govs/datapath/afxdp"
	"github.com/govs-project/govs/datapath/port"
)

// AFXDPOptions documents the Interface options of type=afxdp that govs
// understands, named and meant as in OVS's "Using AF_XDP" guide.
var AFXDPOptions = map[string]string{
	"xdp-mode":        "best-effort (default: native, else generic), native, native-with-zerocopy or generic",
	"use-need-wakeup": "true (default) or false: with false every send makes a system call",
	"n_rxq":           "1: one AF_XDP socket serves rx queue 0 (other queues pass to the kernel)",
	"n_rxq_desc":      "frames of the receive ring, a power of two from 16 to 65536 (default 8192)",
}

// afxdpConfig turns a port's options into an AF_XDP port configuration,
// rejecting unknown options and values with the option named.
func afxdpConfig(cfg PortConfig) (afxdp.Config, error) {
	var c afxdp.Config
	names := make([]string, 0, len(cfg.Options))
	for k := range cfg.Options {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := cfg.Options[k]
		switch k {
		case "xdp-mode":
			m, err := afxdp.ParseMode(v)
			if err != nil || v == "" {
				return c, fmt.Errorf("options:xdp-mode=%q: want best-effort, native, native-with-zerocopy or generic", v)
			}
			c.Mode = m
		case "use-need-wakeup":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return c, fmt.Errorf("options:use-need-wakeup=%q: want true or false", v)
			}
			c.NoNeedWakeup = !b
		case "n_rxq":
			if v != "1" {
				return c, fmt.Errorf("options:n_rxq=%q: govs serves one rx queue per afxdp port (want 1)", v)
			}
		case "n_rxq_desc":
			n, err := parseRxDesc(v, true)
			if err != nil {
				return c, err
			}
			c.RxFrames = n
		default:
			return c, fmt.Errorf("afxdp option %q not supported (supported: %s)", k, supportedAFXDPOptions())
		}
	}
	return c, nil
}

func supportedAFXDPOptions() string {
	names := make([]string, 0, len(AFXDPOptions))
	for k := range AFXDPOptions {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// openAFXDP opens an AF_XDP port on an existing interface and logs the
// XDP mode that bound (best-effort ends up native or generic).
func (d *Daemon) openAFXDP(cfg PortConfig) (port.Port, error) {
	c, err := afxdpConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("afxdp port %s: %w", cfg.Name, err)
	}
	p, err := afxdp.Open(cfg.Name, c)
	if err != nil {
		return nil, err
	}
	d.Log.Info("afxdp port bound", zap.String("port", cfg.Name),
		zap.String("xdp-mode", string(c.Mode)), zap.String("xdp-mode-in-use", string(p.Mode())),
		zap.Bool("zero-copy", p.ZeroCopy()), zap.Bool("use-need-wakeup", !c.NoNeedWakeup))
	return p, nil
}
