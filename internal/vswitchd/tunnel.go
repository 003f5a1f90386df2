package vswitchd

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/govs-project/govs/datapath/geneve"
	"github.com/govs-project/govs/datapath/port"
	"golang.org/x/sys/unix"
)

// GeneveOptions documents the Interface options of type=geneve that govs
// understands, with the meaning ovs-vswitchd.conf.db(5) gives them.
var GeneveOptions = map[string]string{
	"remote_ip": "flow (tun_dst or tun_ipv6_dst set by the flows) or the peer's IPv4 or IPv6 address; required",
	"local_ip":  "this node's underlay IPv4 or IPv6 address, which the port sends from and receives on (packets to other addresses go to the ports without local_ip); flow (with remote_ip=flow): send from the flow's tun_src (an address of this node) and receive on every address, after the ports with a local_ip or none; default: receive on every address of both families and send from the address of the kernel's route to each tun_dst or tun_ipv6_dst, as OVS does",
	"key":       "flow (VNI from and to tun_id) or a fixed VNI N (sent on every packet; only packets with VNI N are received); sets in_key and out_key; default 0, as OVS",
	"in_key":    "flow or a fixed VNI N that received packets must carry (default: key)",
	"out_key":   "flow or a fixed VNI N sent on every packet (default: key)",
	"csum":      "true: compute outer UDP checksums over IPv4 (default false, as OVS); over IPv6 they are always computed, as OVS's userspace tunnels do",
	"dst_port":  "UDP port to listen on and send to (default 6081)",
	"ttl":       "TTL of the outer IPv4 header or hop limit of the outer IPv6 header, 1..255 (default 64)",
}

// tlvSyncInterval bounds how long an idle tunnel port's read blocks, so its
// goroutine picks up TLV map changes even when no datagram arrives.
const tlvSyncInterval = 100 * time.Millisecond

// geneveConfig turns a port's options into a tunnel configuration, with a
// precise error for anything missing, malformed or not supported.
func geneveConfig(cfg PortConfig) (geneve.Config, error) {
	tc := geneve.Config{Name: cfg.Name, ReadTimeout: tlvSyncInterval}
	names := make([]string, 0, len(cfg.Options))
	for k := range cfg.Options {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := GeneveOptions[k]; !ok {
			return tc, fmt.Errorf("geneve option %q not supported (supported: %s)", k, supportedGeneveOptions())
		}
	}
	o := cfg.Options
	switch v, ok := o["remote_ip"]; {
	case !ok || v == "":
		return tc, fmt.Errorf("geneve needs options:remote_ip (flow or the peer's IPv4 or IPv6 address)")
	case v == "flow":
	default:
		ip, err := parseUnderlayIP(v)
		if err != nil {
			return tc, fmt.Errorf("options:remote_ip=%s: %w", v, err)
		}
		tc.RemoteIP = ip
	}
	switch v, ok := o["local_ip"]; {
	case !ok || v == "":
	case v == "flow":
		tc.LocalFlow = true
	default:
		ip, err := parseUnderlayIP(v)
		if err != nil {
			return tc, fmt.Errorf("options:local_ip=%s: %w", v, err)
		}
		tc.LocalIP = ip
	}
	if tc.LocalFlow && tc.RemoteIP.IsValid() {
		return tc, wordedError{fmt.Errorf("%s: geneve type requires 'remote_ip=flow' with 'local_ip=flow'", cfg.Name)} // OVS's words
	}
	if tc.LocalIP.IsValid() && tc.RemoteIP.IsValid() && tc.LocalIP.Is4() != tc.RemoteIP.Is4() {
		return tc, wordedError{fmt.Errorf("%s: 'remote_ip' and 'local_ip' has to be of the same address family", cfg.Name)} // OVS's words
	}
	var err error
	if tc.InKey, err = geneveKey(o, "in_key"); err != nil {
		return tc, err
	}
	if tc.OutKey, err = geneveKey(o, "out_key"); err != nil {
		return tc, err
	}
	switch v := o["csum"]; v {
	case "", "false":
	case "true":
		tc.Csum = true
	default:
		return tc, fmt.Errorf("options:csum=%s: must be true or false", v)
	}
	if v, ok := o["dst_port"]; ok {
		n, err := strconv.ParseUint(v, 10, 16)
		if err != nil || n == 0 {
			return tc, fmt.Errorf("options:dst_port=%s: must be a UDP port 1..65535", v)
		}
		tc.Port = uint16(n)
	}
	if v, ok := o["ttl"]; ok {
		n, err := strconv.ParseUint(v, 10, 8)
		if err != nil || n == 0 {
			return tc, fmt.Errorf("options:ttl=%s: must be 1..255", v)
		}
		tc.TTL = uint8(n)
	}
	return tc, nil
}

// parseUnderlayIP parses remote_ip or local_ip: a unicast IPv4 or IPv6
// address (an IPv4-mapped IPv6 address is IPv4, as in OVS).
func parseUnderlayIP(s string) (netip.Addr, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return ip, fmt.Errorf("not an IP address")
	}
	ip = ip.Unmap()
	if ip.IsUnspecified() || ip.IsMulticast() {
		return ip, fmt.Errorf("want a unicast IPv4 or IPv6 address")
	}
	return ip, nil
}

func supportedGeneveOptions() string {
	names := make([]string, 0, len(GeneveOptions))
	for k := range GeneveOptions {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// geneveKey reads options:in_key or options:out_key (name), falling back
// on options:key, as OVS's netdev-vport parse_key: flow, or a VNI (decimal,
// 0x hex or 0 octal, strtoull's base 0); absent, VNI 0.
func geneveKey(o map[string]string, name string) (geneve.KeyOption, error) {
	v, ok := o[name]
	if !ok {
		name = "key"
		v, ok = o[name]
	}
	switch {
	case !ok:
		return geneve.KeyOption{Fixed: true}, nil
	case v == "flow":
		return geneve.KeyOption{}, nil
	}
	n, err := strconv.ParseUint(v, 0, 32)
	if err != nil || n >= 1<<24 {
		return geneve.KeyOption{}, fmt.Errorf("options:%s=%s: want flow or a VNI from 0 to 16777215", name, v)
	}
	return geneve.KeyOption{Fixed: true, VNI: uint32(n)}, nil
}

// openGeneve opens a Geneve vport (ovs-vsctl add-port BR NAME -- set
// Interface NAME type=geneve options:remote_ip=flow options:key=flow
// options:local_ip=IP). The bridge sees it as a datapath.TunnelPort.
func openGeneve(cfg PortConfig) (port.Port, error) {
	tc, err := geneveConfig(cfg)
	if err != nil {
		return nil, err
	}
	p, err := geneve.Open(tc)
	if errors.Is(err, unix.EEXIST) {
		// Another tunnel port has the same match: OVS's tnl_port_add
		// refuses it with EEXIST, which bridge.c words so.
		return nil, refusedError{wordedError{fmt.Errorf("could not add network device %s to ofproto (File exists)", cfg.Name)}, err}
	}
	if err != nil {
		return nil, fmt.Errorf("open geneve vport: %w", err)
	}
	return p, nil
}
