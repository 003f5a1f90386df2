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
	"github.com/govs-project/govs/flowtable"
	"github.com/govs-project/govs/tunnel"
)

// GeneveOptions documents the Interface options of type=geneve that govs
// understands, with the meaning ovs-vswitchd.conf.db(5) gives them.
var GeneveOptions = map[string]string{
	"remote_ip": "flow (tun_dst or tun_ipv6_dst set by the flows) or the peer's IPv4 or IPv6 address; required",
	"local_ip":  "this node's underlay IPv4 or IPv6 address, which the port sends from and listens on; default: listen on every address of both families and send from the address of the kernel's route to each tun_dst or tun_ipv6_dst, as OVS does",
	"key":       "flow (VNI from tun_id, the default) or a fixed VNI N (sent on every packet; only packets with VNI N are received, with tun_id N)",
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
	if v, ok := o["local_ip"]; ok && v != "" {
		ip, err := parseUnderlayIP(v)
		if err != nil {
			return tc, fmt.Errorf("options:local_ip=%s: %w", v, err)
		}
		tc.LocalIP = ip
	}
	if tc.LocalIP.IsValid() && tc.RemoteIP.IsValid() && tc.LocalIP.Is4() != tc.RemoteIP.Is4() {
		return tc, fmt.Errorf("%s: 'remote_ip' and 'local_ip' has to be of the same address family", cfg.Name) // OVS's words
	}
	if _, _, err := geneveKey(o); err != nil {
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

// geneveKey reads options:key: flow (or absent) takes the VNI from
// tun_id; a number is a fixed VNI.
func geneveKey(o map[string]string) (vni uint32, fixed bool, err error) {
	switch v := o["key"]; v {
	case "", "flow":
		return 0, false, nil
	default:
		n, err := strconv.ParseUint(v, 0, 32)
		if err != nil || n >= 1<<24 {
			return 0, false, fmt.Errorf("options:key=%s: want flow or a VNI from 0 to 16777215", v)
		}
		return uint32(n), true, nil
	}
}

// fixedKeyPort is a Geneve vport with options:key=N: every packet leaves
// with VNI N whatever its tun_id, and only packets with VNI N come in
// (tun_id N), as OVS's in_key/out_key.
type fixedKeyPort struct {
	*geneve.Port
	vni uint32
}

// FillKey drops packets with another VNI.
func (p fixedKeyPort) FillKey(md *tunnel.Metadata, k *flowtable.Key) error {
	if md.VNI != p.vni {
		return errOtherVNI
	}
	return p.Port.FillKey(md, k)
}

// WriteTunnel sends with the fixed VNI; the keys are the caller's copies.
func (p fixedKeyPort) WriteTunnel(frames [][]byte, keys []*flowtable.Key) (int, error) {
	for _, k := range keys {
		flowtable.FieldTunID.SetUint64(k, uint64(p.vni))
	}
	return p.Port.WriteTunnel(frames, keys)
}

var errOtherVNI = errors.New("geneve packet for another VNI")

// openGeneve opens a Geneve vport (ovs-vsctl add-port BR NAME -- set
// Interface NAME type=geneve options:remote_ip=flow options:key=flow
// options:local_ip=IP). The bridge sees it as a datapath.TunnelPort.
func openGeneve(cfg PortConfig) (port.Port, error) {
	tc, err := geneveConfig(cfg)
	if err != nil {
		return nil, err
	}
	p, err := geneve.Open(tc)
	if err != nil {
		return nil, fmt.Errorf("open geneve vport: %w", err)
	}
	if vni, fixed, _ := geneveKey(cfg.Options); fixed {
		return fixedKeyPort{Port: p, vni: vni}, nil
	}
	return p, nil
}
